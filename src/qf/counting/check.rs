//! The invariant checker of `CountingQf` (for tests, debugging, and validating untrusted bytes in
//! `persist`): rebuilds the run structure from a plain scan of the occupied and runend bits and
//! compares everything derived from it — the rank-and-select run lookup, the offsets, the
//! entries — with what the table stores.
//!
//! It reads any [`BlockSource`], allocates nothing, never panics and takes time linear in the
//! table (offsets and runs are checked with the scan's exact offsets, never by walking back
//! through saturated ones), so a hostile serialised table costs one pass.

use super::blocks::{BlockSource, View, BLOCK_SLOTS, SPILL_SATURATED};
use super::counter_code;
use super::runs;

/// The positions of the set bits of every block's `occupieds` (or `runends`) word, in order.
fn set_bits<'v, S: BlockSource>(
    view: &'v View<'_, S>,
    runends: bool,
) -> impl Iterator<Item = usize> + 'v {
    (0..view.table().blocks()).flat_map(move |block| {
        let mut word = if runends {
            view.runends(block)
        } else {
            view.occupieds(block)
        };
        std::iter::from_fn(move || {
            (word != 0).then(|| {
                let bit = word.trailing_zeros() as usize;
                word &= word - 1;
                block * BLOCK_SLOTS + bit
            })
        })
    })
}

/// The runs the scan finds, `(quotient, start, end)` in order: the `j`-th occupied quotient
/// owns the `j`-th runend, and its run starts at the quotient or after the previous run.
/// Unchecked (the caller checks each).
fn scanned_runs<'v, S: BlockSource>(
    view: &'v View<'_, S>,
) -> impl Iterator<Item = (usize, usize, usize)> + 'v {
    let mut previous_end: Option<usize> = None;
    set_bits(view, false)
        .zip(set_bits(view, true))
        .map(move |(quotient, end)| {
            let start = previous_end.map_or(quotient, |e| quotient.max(e + 1));
            previous_end = Some(end);
            (quotient, start, end)
        })
}

/// What [`check_table`] counted in a valid table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    /// The sum of the counts (in 128 bits, like the filter's count of copies: a table of
    /// fewer than `2^64` entries cannot pass it).
    pub(crate) copies: u128,
    /// Entries: distinct fingerprints.
    pub(crate) entries: usize,
    /// Slots the runs take (what the load cap counts).
    pub(crate) slots: usize,
}

/// Checks a table with `quotients` canonical slots and counts what it stores. Only meaningful
/// while no thread writes.
pub(crate) fn check_table<S: BlockSource>(table: &S, quotients: usize) -> Result<Stored, String> {
    let view = View::new(table);
    let occupied = set_bits(&view, false).count();
    let runends = set_bits(&view, true).count();
    if occupied != runends {
        return Err(format!(
            "{occupied} occupied quotients but {runends} run ends"
        ));
    }
    let r = table.remainder_bits();
    let (mut copies, mut entries, mut slots) = (0u128, 0usize, 0usize);
    // The first slot after the last run checked: slots from here to the next run are empty.
    let mut free_from = 0;
    let mut offsets = Offsets::default();
    for (quotient, start, end) in scanned_runs(&view) {
        if quotient >= quotients {
            return Err(format!(
                "quotient {quotient} is beyond the {quotients} canonical slots"
            ));
        }
        if start > end {
            return Err(format!(
                "run of {quotient} would start at {start} after its end {end}"
            ));
        }
        // Every run of a quotient below this block's is checked: its offset is known.
        let block = quotient / BLOCK_SLOTS;
        let spill = offsets.check_through(&view, block)?;
        let found = runs::run_given(&view, quotient, spill);
        if found != Some(Some((start, end))) {
            return Err(format!(
                "rank/select finds {found:?} for quotient {quotient}, the scan {start}..={end}"
            ));
        }
        if let Some(slot) = (free_from..start).find(|&slot| view.remainder(slot) != 0) {
            return Err(format!("empty slot {slot} holds a remainder"));
        }
        let mut at = start;
        let mut last_remainder: Option<u64> = None;
        while at <= end {
            let (x, count, len) = counter_code::decode(at, end, r, |i| view.remainder(i))
                .ok_or_else(|| format!("undecodable entry at slot {at} in run of {quotient}"))?;
            if last_remainder.is_some_and(|last| last >= x) {
                return Err(format!("remainders not increasing at slot {at}"));
            }
            if count == 0 {
                return Err(format!("zero count at slot {at}"));
            }
            // Each count has one encoding: a table holds only what `encode` writes.
            let canonical = counter_code::encode(x, count, r);
            if canonical.len() != len
                || (0..len).any(|i| view.remainder(at + i) != canonical.slots()[i])
            {
                return Err(format!("entry at slot {at} is not encoded canonically"));
            }
            last_remainder = Some(x);
            copies += u128::from(count);
            entries += 1;
            at += len;
        }
        if at != end + 1 {
            return Err(format!(
                "the last entry of run {quotient} overruns its end {end}"
            ));
        }
        slots += end + 1 - start;
        free_from = end + 1;
        offsets.end_below = Some(end);
    }
    if let Some(slot) = (free_from..table.slots()).find(|&slot| view.remainder(slot) != 0) {
        return Err(format!("empty slot {slot} holds a remainder"));
    }
    offsets.check_through(&view, table.blocks() - 1)?;
    Ok(Stored {
        copies,
        entries,
        slots,
    })
}

/// The offset check, block by block, as the runs are checked in order: a block's spill is how
/// far the last run of a quotient below `64 b` reaches past `64 b`.
#[derive(Default)]
struct Offsets {
    /// The next block to check.
    next: usize,
    /// The end of the last run checked.
    end_below: Option<usize>,
    /// The exact spill of the block before `next`.
    previous: usize,
}

impl Offsets {
    /// Checks the stored offsets of the blocks up to `last` (every run of a quotient below
    /// `64 last` has been checked) and returns the exact spill of `last`. A saturated offset is
    /// recomputed from the previous block's exact spill, so the whole check stays linear.
    fn check_through<S: BlockSource>(
        &mut self,
        view: &View<'_, S>,
        last: usize,
    ) -> Result<usize, String> {
        while self.next <= last {
            let block = self.next;
            let first = block * BLOCK_SLOTS;
            let spill = self
                .end_below
                .map_or(0, |end| (end + 1).saturating_sub(first));
            let stored = view.stored_spill(block);
            if stored != (spill as u64).min(SPILL_SATURATED) {
                return Err(format!(
                    "block {block} stores offset {stored}, the scan says {spill}"
                ));
            }
            let recomputed = if stored < SPILL_SATURATED {
                Some(stored as usize)
            } else if block == 0 {
                None
            } else {
                runs::next_spill(view, block, self.previous)
            };
            if recomputed != Some(spill) {
                return Err(format!(
                    "block {block}: offset recomputed as {recomputed:?}, the scan says {spill}"
                ));
            }
            self.previous = spill;
            self.next += 1;
        }
        Ok(self.previous)
    }
}
