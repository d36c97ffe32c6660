//! The invariant checker of `CountingQf` (for tests and debugging): rebuilds the run structure
//! from a plain scan of the occupied and runend bits and compares everything derived from it —
//! the rank-and-select run lookup, the offsets, the entries — with what the table stores.

use super::blocks::{Blocks, View, BLOCK_SLOTS, SPILL_SATURATED};
use super::counter_code;
use super::runs;

/// Checks a table with `quotients` canonical slots; returns its total count (wrapping, like
/// the `len` counter) and number of entries. Only meaningful while no thread writes.
pub(crate) fn check_table(table: &Blocks, quotients: usize) -> Result<(u64, usize), String> {
    let view = View::new(table);
    let bits = |runends: bool| -> Vec<usize> {
        (0..table.blocks())
            .flat_map(|block| {
                let w = if runends {
                    view.runends(block)
                } else {
                    view.occupieds(block)
                };
                (0..BLOCK_SLOTS)
                    .filter(move |i| w >> i & 1 == 1)
                    .map(move |i| block * BLOCK_SLOTS + i)
            })
            .collect()
    };
    let occupied = bits(false);
    let runends = bits(true);
    if occupied.len() != runends.len() {
        return Err(format!(
            "{} occupied quotients but {} run ends",
            occupied.len(),
            runends.len()
        ));
    }
    if let Some(&q) = occupied.last() {
        if q >= quotients {
            return Err(format!(
                "quotient {q} is beyond the {quotients} canonical slots"
            ));
        }
    }
    let r = table.remainder_bits();
    let mut in_run = vec![false; table.slots()];
    let mut runs_by_quotient = Vec::with_capacity(occupied.len());
    let mut previous_end: Option<usize> = None;
    let (mut copies, mut entries) = (0u64, 0usize);
    for (&quotient, &end) in occupied.iter().zip(&runends) {
        let start = previous_end.map_or(quotient, |e| quotient.max(e + 1));
        if start > end {
            return Err(format!(
                "run of {quotient} would start at {start} after its end {end}"
            ));
        }
        if runs::run_of(&view, quotient) != Some(Some((start, end))) {
            return Err(format!(
                "rank/select finds {:?} for quotient {quotient}, the scan {start}..={end}",
                runs::run_of(&view, quotient)
            ));
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
            last_remainder = Some(x);
            copies = copies.wrapping_add(count);
            entries += 1;
            at += len;
        }
        if at != end + 1 {
            return Err(format!(
                "the last entry of run {quotient} overruns its end {end}"
            ));
        }
        in_run[start..=end].iter_mut().for_each(|used| *used = true);
        runs_by_quotient.push((quotient, end));
        previous_end = Some(end);
    }
    for (slot, used) in in_run.iter().enumerate() {
        if !used && view.remainder(slot) != 0 {
            return Err(format!("empty slot {slot} holds a remainder"));
        }
    }
    let mut last_run = 0;
    let mut end_below: Option<usize> = None;
    for block in 0..table.blocks() {
        let first = block * BLOCK_SLOTS;
        while last_run < runs_by_quotient.len() && runs_by_quotient[last_run].0 < first {
            end_below = Some(runs_by_quotient[last_run].1);
            last_run += 1;
        }
        let spill = end_below.map_or(0, |end| (end + 1).saturating_sub(first));
        let stored = view.stored_spill(block);
        if stored != (spill as u64).min(SPILL_SATURATED) {
            return Err(format!(
                "block {block} stores offset {stored}, the scan says {spill}"
            ));
        }
        if runs::spill(&view, block) != Some(spill) {
            return Err(format!(
                "block {block}: saturated offset recomputed wrongly"
            ));
        }
    }
    Ok((copies, entries))
}
