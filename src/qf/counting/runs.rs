//! Runs of the rank-and-select quotient filter (paper 004 §III-B, paper 000 §2.2): where the run
//! of a quotient starts and ends, the spills, and the first empty slot after a slot. The lookup
//! of an entry in a run is in [`lookup`](super::lookup), the changes of a count in
//! [`update`](super::update).
//!
//! A run is found without walking to its cluster start: in the block `b` of quotient `Q`, the
//! runs of quotients below `64 b` use the first `spill(b)` slots from `64 b` on, and the runs of
//! the occupied quotients `64 b ..= Q` end at the next runend bits in order. So with
//! `d = rank(occupieds[b], Q % 64)`, `Q`'s run ends at the `d`-th runend at or after
//! `64 b + spill(b)`, and starts after the one before (or at `Q`, whichever is later). When the
//! spill is exact and that runend lies in the block, the block's words alone tell
//! ([`run_in_block`]), and a lookup reads nothing else
//! ([`count_in_block`](super::lookup::count_in_block)).
//!
//! Functions that read a table another thread may be changing (outside the caller's locks) never
//! panic and never loop forever: an inconsistent read gives `None` (a [`Fault`]).

use super::blocks::{BlockSource, View, BLOCK_SLOTS, SPILL_SATURATED};
use super::empty_slot::first_empty_in_block;
use crate::hash::{low_mask_below_64, low_mask_nonzero};
use crate::qf::rank_select::{popcount, rank, select};

/// The table read as inconsistent (a concurrent writer), or full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The slots read are not a valid table: read again under more locks.
    Inconsistent,
    /// No empty slot is left for the shift (the overflow tail is used up).
    Full,
}

/// The position of the runend bit with `k` runend bits between `from` and it (`k` from 0).
#[inline]
fn select_from<S: BlockSource>(view: &View<'_, S>, from: usize, k: usize) -> Option<usize> {
    let mut block = from / BLOCK_SLOTS;
    if block >= view.table().blocks() {
        return None;
    }
    let mut word = view.runends(block) & !((1u64 << (from % BLOCK_SLOTS)) - 1);
    let mut k = k as u32;
    loop {
        let ones = popcount(word);
        if k < ones {
            return Some(block * BLOCK_SLOTS + select(word, k) as usize);
        }
        k -= ones;
        block += 1;
        if block >= view.table().blocks() {
            return None;
        }
        word = view.runends(block);
    }
}

/// The last runend bit in slots `floor..slot`, if any.
#[inline]
fn last_runend_before<S: BlockSource>(
    view: &View<'_, S>,
    floor: usize,
    slot: usize,
) -> Option<usize> {
    if slot <= floor {
        return None;
    }
    let floor_block = floor / BLOCK_SLOTS;
    let mut block = (slot - 1) / BLOCK_SLOTS;
    let mut word = view.runends(block) & low_mask_nonzero(((slot - 1) % BLOCK_SLOTS) as u32 + 1);
    loop {
        if block == floor_block {
            word &= !low_mask_below_64((floor % BLOCK_SLOTS) as u32);
        }
        if word != 0 {
            return Some(block * BLOCK_SLOTS + 63 - word.leading_zeros() as usize);
        }
        if block == floor_block {
            return None;
        }
        block -= 1;
        word = view.runends(block);
    }
}

/// The block of `slot` and how many occupied quotients of that block are `<= slot`.
#[inline(always)]
fn block_rank<S: BlockSource>(view: &View<'_, S>, slot: usize) -> (usize, u32) {
    let block = slot / BLOCK_SLOTS;
    (
        block,
        rank(view.occupieds(block), (slot % BLOCK_SLOTS) as u32),
    )
}

/// The slot after the run of the last occupied quotient `<= slot` (or, if that run ends before
/// `slot` or there is none, some position `<= slot`). So `slot` is in use iff the result is
/// larger than `slot`.
#[inline(always)]
pub(crate) fn end_after<S: BlockSource>(view: &View<'_, S>, slot: usize) -> Option<usize> {
    let (block, d) = block_rank(view, slot);
    let base = block * BLOCK_SLOTS;
    // The common case, as in `run_of`: an exact spill and the run ending in the block.
    let stored = view.stored_spill(block);
    if stored < BLOCK_SLOTS as u64 {
        let after = end_after_in_block(d, view.runends(block), stored as u32);
        if after <= BLOCK_SLOTS as u32 {
            return Some(base + after as usize);
        }
    }
    end_after_across_blocks(view, block, d as usize)
}

/// The common case of [`end_after`], from one block's words: given `d`, how many occupied
/// quotients of the block are at most the slot, the block's `runends` and its exact spill
/// (`< 64`), the slot after the run of the `d`-th one (the spill if `d` is 0), as an index in
/// the block; above 64 if that run ends in a later block.
#[inline(always)]
pub(super) fn end_after_in_block(d: u32, runends: u64, spill: u32) -> u32 {
    match d {
        0 => spill,
        // `select` gives 64 when the block has fewer runend bits.
        d => select(runends & !low_mask_below_64(spill), d - 1) + 1,
    }
}

/// [`end_after`] for a slot of `block` with `d` occupied quotients up to it in the block, when
/// the block's spill is 64 or more or the run ends in a later block.
#[inline(never)]
fn end_after_across_blocks<S: BlockSource>(
    view: &View<'_, S>,
    block: usize,
    d: usize,
) -> Option<usize> {
    end_after_from(view, block, d, spill(view, block)?)
}

/// [`end_after`], given the exact spill of `slot`'s block.
#[inline]
pub(crate) fn end_after_given<S: BlockSource>(
    view: &View<'_, S>,
    slot: usize,
    block_spill: usize,
) -> Option<usize> {
    let (block, d) = block_rank(view, slot);
    end_after_from(view, block, d as usize, block_spill)
}

/// The slot after the run of the `d`-th occupied quotient of `block` (its first used slot if
/// `d` is 0), given the block's exact spill: the `d`-th runend from the block's first used slot.
#[inline]
fn end_after_from<S: BlockSource>(
    view: &View<'_, S>,
    block: usize,
    d: usize,
    block_spill: usize,
) -> Option<usize> {
    let first = block * BLOCK_SLOTS + block_spill;
    if d == 0 {
        Some(first)
    } else {
        Some(select_from(view, first, d - 1)? + 1)
    }
}

/// The exact spill of `block` (at least 1), given the exact spill of the block before it: how
/// far the runs ending after that block's last slot reach into this one.
#[inline]
pub(crate) fn next_spill<S: BlockSource>(
    view: &View<'_, S>,
    block: usize,
    previous_spill: usize,
) -> Option<usize> {
    let first = block * BLOCK_SLOTS;
    Some(end_after_given(view, first - 1, previous_spill)?.saturating_sub(first))
}

/// The exact spill of `block`: slots from `64 b` on used by runs of quotients below `64 b`.
#[inline]
pub(crate) fn spill<S: BlockSource>(view: &View<'_, S>, block: usize) -> Option<usize> {
    let stored = view.stored_spill(block);
    if stored < SPILL_SATURATED {
        return Some(stored as usize);
    }
    // Saturated: recompute forward from the nearest block below with an exact stored spill
    // (a loop, not a recursion, so a long cluster cannot exhaust the stack).
    let mut base = block;
    let mut exact = loop {
        if base == 0 {
            return None;
        }
        base -= 1;
        let stored = view.stored_spill(base);
        if stored < SPILL_SATURATED {
            break stored as usize;
        }
    };
    for next in base + 1..=block {
        exact = next_spill(view, next, exact)?;
    }
    Some(exact)
}

/// The first and last slot of `quotient`'s run, if it is occupied.
#[inline(always)]
pub(crate) fn run_of<S: BlockSource>(
    view: &View<'_, S>,
    quotient: usize,
) -> Option<Option<(usize, usize)>> {
    let block = quotient / BLOCK_SLOTS;
    let occupieds = view.occupieds(block);
    let q = (quotient % BLOCK_SLOTS) as u32;
    if occupieds >> q & 1 == 0 {
        return Some(None);
    }
    let stored = view.stored_spill(block);
    let base = block * BLOCK_SLOTS;
    match run_in_block(occupieds, view.runends(block), stored, q) {
        Some((start, end)) => Some(Some((base + start as usize, base + end as usize))),
        None => run_across_blocks(view, quotient, rank(occupieds, q) as usize),
    }
}

/// The common case of [`run_of`], from the words of the quotient's block alone: the first and
/// last slot (in the block) of the run of occupied quotient `64 b + q`, given the block's
/// `occupieds`, `runends` and stored spill. `None` when the block cannot tell (a spill of 64 or
/// more, or a run that ends in a later block), or when the words are inconsistent.
///
/// With `d = rank(occupieds, q)`, the run ends at the `d`-th runend at or after the spill and
/// starts after the runend before that one, or at the spill, or at `q`, whichever is last.
/// Branch-free but for the two exits, as lookups meet runs of every length.
#[inline(always)]
pub(crate) fn run_in_block(
    occupieds: u64,
    runends: u64,
    stored_spill: u64,
    q: u32,
) -> Option<(u32, u32)> {
    if stored_spill >= BLOCK_SLOTS as u64 {
        return None;
    }
    let ends = runends & !low_mask_below_64(stored_spill as u32);
    let d = rank(occupieds, q);
    // `d >= 1`: the caller saw the bit of `q` set in `occupieds`.
    let end = select(ends, d - 1);
    // Only the ends of the run's `d - 1` predecessors lie below `end`; 0 if there are none.
    // (`end` is 64 when the run ends in a later block: the answer is then `None` below, so the
    // wrapped mask's value does not matter.)
    let after_previous =
        BLOCK_SLOTS as u32 - (ends & low_mask_below_64(end % BLOCK_SLOTS as u32)).leading_zeros();
    let start = after_previous.max(stored_spill as u32).max(q);
    (end < BLOCK_SLOTS as u32 && start <= end).then_some((start, end))
}

/// [`run_of`] for an occupied quotient, the `d`-th occupied one of its block, whose run ends in
/// a later block or whose block's spill is 64 or more.
#[inline(never)]
fn run_across_blocks<S: BlockSource>(
    view: &View<'_, S>,
    quotient: usize,
    d: usize,
) -> Option<Option<(usize, usize)>> {
    run_from(view, quotient, d, spill(view, quotient / BLOCK_SLOTS)?)
}

/// [`run_of`] for an occupied `quotient`, given its block's exact spill (how the table checker,
/// which knows every spill from its scan, finds runs without walking back through saturated
/// ones).
#[inline]
pub(crate) fn run_given<S: BlockSource>(
    view: &View<'_, S>,
    quotient: usize,
    block_spill: usize,
) -> Option<Option<(usize, usize)>> {
    let (_, d) = block_rank(view, quotient);
    run_from(view, quotient, d as usize, block_spill)
}

/// The run of the `d`-th occupied quotient of its block (`d >= 1`), given the block's exact
/// spill.
#[inline]
fn run_from<S: BlockSource>(
    view: &View<'_, S>,
    quotient: usize,
    d: usize,
    block_spill: usize,
) -> Option<Option<(usize, usize)>> {
    let first = quotient / BLOCK_SLOTS * BLOCK_SLOTS + block_spill;
    // The run ends at the `d`-th runend from `first` and starts after the one before it, found
    // by a backward scan (usually in the same word) rather than a second select.
    let end = select_from(view, first, d.checked_sub(1)?)?;
    let after_previous = if d == 1 {
        first
    } else {
        last_runend_before(view, first, end)? + 1
    };
    let start = after_previous.max(quotient);
    if start > end {
        return None;
    }
    Some(Some((start, end)))
}

/// The first empty slot at or after `slot`; `Err(Full)` if there is none.
///
/// A block at a time: in a block with an exact spill, from the block's words
/// (`empty_slot::first_empty_in_block`); if the block has none from `slot` on, the search goes
/// on in the next block, whose spill covers the runs that reach into it. Only a saturated spill
/// makes it jump from run end to run end with [`end_after`].
#[inline(always)]
pub(crate) fn first_empty<S: BlockSource>(
    view: &View<'_, S>,
    mut slot: usize,
) -> Result<usize, Fault> {
    loop {
        if slot >= view.table().slots() {
            return Err(Fault::Full);
        }
        let block = slot / BLOCK_SLOTS;
        let stored = view.stored_spill(block);
        if stored < BLOCK_SLOTS as u64 {
            let from = (slot % BLOCK_SLOTS) as u32;
            let (occupieds, runends) = (view.occupieds(block), view.runends(block));
            if let Some(empty) = first_empty_in_block(occupieds, runends, stored as u32, from) {
                return Ok(block * BLOCK_SLOTS + empty as usize);
            }
            slot = (block + 1) * BLOCK_SLOTS;
            continue;
        }
        let end = end_after(view, slot).ok_or(Fault::Inconsistent)?;
        if end <= slot {
            return Ok(slot);
        }
        slot = end;
    }
}

/// The first occupied quotient at or after `from`, looking no further than the table's end.
pub(crate) fn next_occupied_from<S: BlockSource>(view: &View<'_, S>, from: usize) -> Option<usize> {
    BitScan::new(view.table().blocks(), |block| view.occupieds(block)).next(from, usize::MAX)
}

/// The set bits of one of the per-block bitmaps (`occupieds` or `runends`) in increasing
/// order, each block's word loaded once: for walks that step from bit to bit.
pub(super) struct BitScan<F: Fn(usize) -> u64> {
    /// The bitmap's word of a block.
    word_of: F,
    blocks: usize,
    /// The block whose word `word` is (`usize::MAX` before the first).
    block: usize,
    word: u64,
}

impl<F: Fn(usize) -> u64> BitScan<F> {
    pub(super) fn new(blocks: usize, word_of: F) -> Self {
        BitScan {
            word_of,
            blocks,
            block: usize::MAX,
            word: 0,
        }
    }

    /// The first set bit at or after `from` if it is at most `limit`, looking no further than
    /// the table's end.
    #[inline(always)]
    pub(super) fn next(&mut self, from: usize, limit: usize) -> Option<usize> {
        let mut block = from / BLOCK_SLOTS;
        if block >= self.blocks {
            return None;
        }
        if block != self.block {
            self.block = block;
            self.word = (self.word_of)(block);
        }
        let mut bits = self.word & !low_mask_below_64((from % BLOCK_SLOTS) as u32);
        loop {
            if bits != 0 {
                let bit = block * BLOCK_SLOTS + bits.trailing_zeros() as usize;
                return (bit <= limit).then_some(bit);
            }
            block += 1;
            if block >= self.blocks || block * BLOCK_SLOTS > limit {
                return None;
            }
            self.block = block;
            self.word = (self.word_of)(block);
            bits = self.word;
        }
    }
}

#[cfg(all(test, not(loom)))]
pub(super) mod tests {
    use super::*;

    /// A 1024-slot filter of `r`-bit remainders filled to `fill` (or until full) with random
    /// fingerprints, a quarter of them with 2 to 13 copies (counters); `seed` moves on.
    pub(in crate::qf::counting) fn filled_with_counters(
        r: u32,
        fill: f64,
        seed: &mut u64,
    ) -> crate::CountingQf {
        use crate::{Count, CountingQf};
        let filter = CountingQf::with_bits(10, r).expect("a 1024-slot filter");
        while filter.distinct() < (1024.0 * fill) as usize {
            *seed = crate::hash::remix(*seed);
            if filter
                .insert_count_hash(*seed, 1 + *seed % 40 / 30 * (*seed % 13))
                .is_err()
            {
                break; // full: the counters took the slots
            }
        }
        filter
    }

    /// `first_empty`, which searches a block at a time and skips to the next block's spill,
    /// finds the slot the run-end-to-run-end definition gives (the first slot `s` at or after
    /// the start with `end_after(s) <= s`) from every slot, on tables filled to 50-98% with
    /// counters and remainders down to 2 bits (spills of 64 and more), and on one whose runs of
    /// block 0 spill hundreds of slots on (saturated spills).
    #[test]
    fn first_empty_finds_the_first_unused_slot() {
        use crate::{Count, CountingQf};
        let mut seed = 3u64;
        let mut filters = Vec::new();
        for (r, fill) in [
            (2, 0.9),
            (2, 0.98),
            (4, 0.95),
            (8, 0.5),
            (11, 0.9),
            (11, 0.98),
        ] {
            let filter = filled_with_counters(r, fill, &mut seed);
            filters.push((r, fill, filter));
        }
        // Every 2-bit fingerprint of block 0's quotients, three copies each: their runs fill
        // block 0 and spill hundreds of slots on, saturating the next blocks' spills.
        let crowded = CountingQf::with_bits(10, 2).expect("a 1024-slot filter");
        for fingerprint in 0..64u64 << 2 {
            crowded
                .insert_count_hash(fingerprint << (64 - 12), 3)
                .expect("room for them");
        }
        filters.push((2, 0.0, crowded));
        let mut saturated = 0;
        for (r, fill, filter) in filters {
            let view = View::new(&filter.table);
            saturated += (0..filter.table.blocks())
                .filter(|&block| view.stored_spill(block) == SPILL_SATURATED)
                .count();
            let unused = |slot: usize| end_after(&view, slot).expect("a consistent table") <= slot;
            let mut want = Err(Fault::Full);
            for slot in (0..filter.table.slots()).rev() {
                if unused(slot) {
                    want = Ok(slot);
                }
                let found = first_empty(&view, slot);
                assert!(
                    matches!((found, want), (Ok(a), Ok(b)) if a == b)
                        || matches!((found, want), (Err(Fault::Full), Err(Fault::Full))),
                    "r = {r}, fill {fill}, from slot {slot}"
                );
            }
        }
        assert!(saturated > 0, "no saturated spill was searched across");
    }
}
