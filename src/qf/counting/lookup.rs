//! Looking up an entry in a run of the rank-and-select quotient filter (paper 004 §III-B): the
//! count stored for a fingerprint, read from the quotient's block alone when it can tell
//! ([`count_in_block`], nearly every lookup), and the walk over a run's entries and their
//! counters ([`find_entry`]) that the updates share.
//!
//! Functions that read a table another thread may be changing (outside the caller's locks) never
//! panic and never loop forever: an inconsistent read gives `None`.

use super::blocks::{BlockReader, BlockSource, View, BLOCK_SLOTS};
use super::counter_code;
use super::runs::{run_in_block, run_of};
use crate::hash::low_mask_below_64;
use crate::qf::rank_select::{popcount, rank, select};

/// The count stored for `(quotient, remainder)` (0 if absent).
#[inline(always)]
pub(crate) fn count<S: BlockSource>(
    view: &View<'_, S>,
    quotient: usize,
    remainder: u64,
) -> Option<u64> {
    let Some((start, end)) = run_of(view, quotient)? else {
        return Some(0);
    };
    let r = view.table().remainder_bits();
    let (_, count, _) = find_entry(start, end, r, remainder, |i| view.remainder(i))?;
    Some(count)
}

/// [`count`] when the quotient's block has an exact spill and the run ends in that block or,
/// if `may_read_next()` allows it, in the next one (nearly every lookup): reads only those
/// blocks (and the first one's spill), through [`BlockReader`]s that record no reach. `None` if
/// they cannot tell; then [`count`] answers.
#[inline(always)]
pub(crate) fn count_in_block<S: BlockSource>(
    table: &S,
    quotient: usize,
    remainder: u64,
    may_read_next: impl FnOnce() -> bool,
) -> Option<u64> {
    let block = BlockReader::new(table, quotient / BLOCK_SLOTS);
    let occupieds = block.occupieds();
    let q = (quotient % BLOCK_SLOTS) as u32;
    if occupieds >> q & 1 == 0 {
        return Some(0);
    }
    let runends = block.runends();
    let stored_spill = block.stored_spill();
    let r = table.remainder_bits();
    let Some((start, end)) = run_in_block(occupieds, runends, stored_spill, q) else {
        if stored_spill >= BLOCK_SLOTS as u64 || !may_read_next() {
            return None;
        }
        return count_in_two_blocks(table, quotient, remainder, occupieds, runends, stored_spill);
    };
    let lanes = block.remainders_from(start as usize);
    // `move`: see `find_entry`.
    let (_, count, _) = find_entry_in_block((start, end), r, remainder, lanes, move |i| {
        block.remainder(i)
    })?;
    Some(count)
}

/// [`find_entry`] in a run `start..=end` that lies in one block, given the block's remainder
/// bits from `start` on (`lanes`, as `remainders_from` reads them): a short run without a
/// counter from `lanes` alone ([`find_in_short_run`]), any other by the entry walk over `slot`.
#[inline(always)]
pub(super) fn find_entry_in_block(
    (start, end): (u32, u32),
    r: u32,
    remainder: u64,
    lanes: u64,
    slot: impl Fn(usize) -> u64 + Copy,
) -> Option<(usize, u64, usize)> {
    match find_in_short_run(lanes, end - start + 1, r, remainder) {
        // An entry found there takes as many slots as its count.
        Some((offset, count)) => Some(((start + offset) as usize, count, count as usize)),
        None => find_entry(start as usize, end as usize, r, remainder, slot),
    }
}

/// The most slots of a run [`find_in_short_run`] reads at once.
const SHORT_RUN: u32 = 4;

/// The widest remainders [`find_in_short_run`] reads: its loop shifts `lanes` by up to
/// `(SHORT_RUN - 1) r` bits, which must stay below 64 (three lanes of 21 bits fit a word).
const SHORT_RUN_MAX_BITS: u32 = 63 / (SHORT_RUN - 1);

/// Where the entry of `remainder` is in a run of `len` slots whose remainders are the `r`-bit
/// lanes of `lanes`, lowest first: `(its first slot's offset in the run, its count)`, or where it
/// would go with count 0; read with no branch that depends on the slots (where a walk over the
/// entries stops varies from lookup to lookup, a branch the CPU often mispredicts; see the
/// performance history, "Short runs without branches"). An entry found here takes as many
/// slots as its count. `None` when it cannot tell: a run longer than [`SHORT_RUN`] slots or
/// than fit one word (three lanes for 17 to 21 bits), remainders wider than
/// [`SHORT_RUN_MAX_BITS`], or a run that holds a counter.
///
/// Without counters, a run's slots do not decrease (entries are in increasing order, and an
/// entry of count 2 is its remainder twice), while nearly every counter makes them decrease (a
/// digit below `x` follows `x`, or, for `x = 0`, a digit above 0 is followed by the closing 0).
/// The one exception, `0 0 0 0` (count 3 of remainder 0), holds one value four times, which no
/// run without counters does (at most twice). So in a run that does not decrease and holds
/// `remainder` at most twice, every slot is a remainder: the entry's count is how many slots
/// hold it, and the slots below it are those of the smaller entries.
#[inline(always)]
fn find_in_short_run(lanes: u64, len: u32, r: u32, remainder: u64) -> Option<(u32, u64)> {
    if len > SHORT_RUN || r > SHORT_RUN_MAX_BITS || len * r > 64 {
        return None;
    }
    let mask = low_mask_below_64(r);
    let (mut below, mut equal, mut decreases, mut previous) = (0u32, 0u64, false, 0u64);
    for i in 0..SHORT_RUN {
        let slot = lanes >> (i * r) & mask;
        let live = i < len;
        below += u32::from(live && slot < remainder);
        equal += u64::from(live && slot == remainder);
        decreases |= live && slot < previous;
        previous = slot;
    }
    (!decreases && equal <= 2).then_some((below, equal))
}

/// [`count_in_block`] for a run that ends in the block after the quotient's (about one lookup
/// in fifteen at 90% fill), given the quotient's block's `occupieds`, `runends` and exact spill:
/// the two blocks' runend bits read as one 128-bit word, found as [`run_in_block`] finds a run
/// in one. `None` if the run ends later still, or the words are inconsistent. Not inlined, so
/// the common lookup stays short.
#[inline(never)]
fn count_in_two_blocks<S: BlockSource>(
    table: &S,
    quotient: usize,
    remainder: u64,
    occupieds: u64,
    runends: u64,
    spill: u64,
) -> Option<u64> {
    let first = quotient / BLOCK_SLOTS;
    let (block, next) = (
        BlockReader::new(table, first),
        BlockReader::new(table, first + 1),
    );
    let q = (quotient % BLOCK_SLOTS) as u32;
    let spill = spill as u32;
    let low = runends & !low_mask_below_64(spill);
    let high = next.runends();
    // The run of the `d`-th occupied quotient of the block ends at the `d`-th runend from the
    // spill on; those of its block's quotients that end in the next block come before that
    // block's own runs, so the count goes on from the next block's slot 0.
    let d = rank(occupieds, q);
    let in_low = popcount(low);
    let end = match (d - 1).checked_sub(in_low) {
        None => select(low, d - 1),
        Some(k) => BLOCK_SLOTS as u32 + select(high, k),
    };
    if end >= 2 * BLOCK_SLOTS as u32 {
        return None;
    }
    let ends = u128::from(high) << BLOCK_SLOTS | u128::from(low);
    let after_previous = 128 - (ends & ((1u128 << end) - 1)).leading_zeros();
    let start = after_previous.max(spill).max(q);
    if start > end {
        return None;
    }
    let r = table.remainder_bits();
    let (_, count, _) = find_entry(start as usize, end as usize, r, remainder, |i| {
        block.remainder_or_next(i)
    })?;
    Some(count)
}

/// The entry of `remainder` in the run in slots `start..=end`, whose remainders `slot` reads:
/// `(its first slot, its count, its slots)`, or where it would go if absent, with count and slots
/// 0 (slot `end + 1` if every entry is below it). Entries are in increasing order, so the scan
/// stops at the first one not below `remainder`. `None` if the slots are not a valid run.
///
/// `slot` is `Copy` and handed to each decode by value: a reader copied into it (`move`) then
/// never has its address passed to the out-of-line counter decode, so the walk keeps it in
/// registers (LLVM takes a relaxed atomic load for a possible write to any memory whose address
/// escaped, and reloads such values after every table read: about 10 instructions a lookup).
#[inline(always)]
pub(super) fn find_entry(
    start: usize,
    end: usize,
    remainder_bits: u32,
    remainder: u64,
    slot: impl Fn(usize) -> u64 + Copy,
) -> Option<(usize, u64, usize)> {
    let mut at = start;
    while at <= end {
        let (x, count, len) = counter_code::decode(at, end, remainder_bits, slot)?;
        if x >= remainder {
            return Some(if x == remainder {
                (at, count, len)
            } else {
                (at, 0, 0)
            });
        }
        at += len;
    }
    Some((end + 1, 0, 0))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::runs::tests::filled_with_counters;
    use super::*;

    /// The in-block lookup agrees with the general walk wherever it answers, and answers for
    /// more than a quarter of the queries, on filters filled to 50-95% (or full) with a quarter
    /// of the keys repeated up to 13 times (counters) and remainders down to 2 bits (long runs,
    /// spills of 64 and more), asked for low remainders of every quotient and for every stored
    /// fingerprint. Allowed to read the next block, it answers strictly more of them at every
    /// fill of 90% and more (runs that end in the next block), and still agrees.
    #[test]
    fn count_in_block_agrees_with_the_general_walk() {
        let mut seed = 7u64;
        for (r, fill) in [(2, 0.95), (4, 0.9), (8, 0.5), (11, 0.9), (11, 0.95)] {
            let filter = filled_with_counters(r, fill, &mut seed);
            let slots = 1usize << 10;
            let view = View::new(&filter.table);
            let blocks = filter.table.blocks();
            let (mut answered, mut answered_with_next, mut asked) = (0, 0, 0);
            let mut check = |quotient: usize, remainder: u64| {
                let general = count(&view, quotient, remainder).expect("a consistent table");
                asked += 1;
                if let Some(fast) = count_in_block(&filter.table, quotient, remainder, || false) {
                    answered += 1;
                    assert_eq!(fast, general, "r = {r}, ({quotient}, {remainder})");
                }
                let has_next = quotient / BLOCK_SLOTS + 1 < blocks;
                if let Some(fast) = count_in_block(&filter.table, quotient, remainder, || has_next)
                {
                    answered_with_next += 1;
                    assert_eq!(
                        fast, general,
                        "r = {r}, ({quotient}, {remainder}), 2 blocks"
                    );
                }
                general
            };
            // Every quotient with the low remainders (mostly absent at larger `r`), then every
            // stored fingerprint, so present entries and counters are asked at every `r` too.
            for quotient in 0..slots {
                for remainder in 0..(1u64 << r).min(64) {
                    check(quotient, remainder);
                }
            }
            for (fingerprint, stored) in filter.counts() {
                let found = check(fingerprint.quotient as usize, fingerprint.remainder);
                assert_eq!(found, stored, "r = {r}, {fingerprint:?}");
            }
            assert!(
                answered * 4 > asked,
                "r = {r}: answered only {answered} of {asked}"
            );
            if fill >= 0.9 {
                assert!(
                    answered_with_next > answered,
                    "r = {r}: the next block answered no more ({answered} of {asked})"
                );
            }
        }
    }

    /// The branch-free search of a short run agrees with the entries it was encoded from on
    /// random runs of up to six entries, counters among them (from `0 0 0 0`, count 3 of 0, to
    /// counts in the millions), with random bits in the lanes past the run; and it answers
    /// whenever it should: every run without a counter whose slots fit one word (four of up to
    /// 16 bits, three of 17 to 21), asked for any remainder; wider remainders it declines.
    #[test]
    fn a_short_run_is_searched_as_its_entries_say() {
        let mut seed = 11u64;
        let mut next = || {
            seed = crate::hash::remix(seed);
            seed
        };
        let (mut answered, mut must_answer) = (0, 0);
        for r in [2, 3, 5, 8, 11, 16, 17, 19, 21, 22, 30] {
            let top = 1u64 << r;
            for _ in 0..3000 {
                // Distinct remainders in increasing order, the low ones (0 among them) often.
                let mut entries: Vec<(u64, u64)> = Vec::new();
                let mut x = next() % 3;
                for _ in 0..1 + next() % 6 {
                    if x >= top {
                        break;
                    }
                    let count = match next() % 8 {
                        0..=3 => 1,
                        4 | 5 => 2,
                        6 => 3 + next() % 9,
                        _ => next() % 5_000_000,
                    }
                    .max(1);
                    entries.push((x, count));
                    x += 1 + next() % (top / 4).max(1);
                }
                let run: Vec<u64> = entries
                    .iter()
                    .flat_map(|&(x, c)| counter_code::encode(x, c, r).slots().to_vec())
                    .collect();
                let len = run.len() as u32;
                // The run's slots in the low lanes, random bits above (other runs' slots).
                let used = (run.len().min(64 / r as usize) * r as usize) as u32;
                let mut lanes = if used >= 64 { 0 } else { next() << used };
                for (i, &slot) in run.iter().enumerate().take(64 / r as usize) {
                    lanes |= slot << (i as u32 * r);
                }
                let counter_free = entries.iter().all(|&(_, c)| c <= 2);
                let mut asked: Vec<u64> = entries.iter().map(|&(x, _)| x).collect();
                asked.extend((0..4).map(|_| next() % top));
                for remainder in asked {
                    let count = entries
                        .iter()
                        .find(|&&(x, _)| x == remainder)
                        .map_or(0, |&(_, c)| c);
                    let offset: usize = entries
                        .iter()
                        .filter(|&&(x, _)| x < remainder)
                        .map(|&(x, c)| counter_code::entry_len(x, c, r))
                        .sum();
                    let fast = find_in_short_run(lanes, len, r, remainder);
                    if let Some(found) = fast {
                        let truth = (offset as u32, count);
                        assert_eq!(found, truth, "r = {r}, run {run:?}, asked {remainder}");
                        answered += 1;
                    }
                    if counter_free && len <= SHORT_RUN && len * r <= 64 && r <= SHORT_RUN_MAX_BITS
                    {
                        must_answer += 1;
                        assert!(fast.is_some(), "r = {r}, run {run:?}, asked {remainder}");
                    }
                }
            }
        }
        assert!(
            must_answer > 10_000,
            "only {must_answer} runs it must answer"
        );
        assert!(answered >= must_answer);
    }

    /// A run of one slot that lies in the block after its quotient's (quotient 1, pushed to
    /// slot 64 by the 64 entries of quotient 0) is a whole run, not an inconsistent read: the
    /// in-block lookup declines it while it may not read the next block, and answers it from
    /// the two blocks when it may, present or absent.
    #[test]
    fn a_one_slot_run_in_the_next_block_is_counted_from_both_blocks() {
        use crate::{Count, CountingQf};
        let (q, r) = (10, 8);
        let filter = CountingQf::with_bits(q, r).unwrap();
        let hash = |quotient: u64, remainder: u64| ((quotient << r) | remainder) << (64 - q - r);
        for remainder in 0..64 {
            filter.insert_count_hash(hash(0, remainder), 1).unwrap();
        }
        filter.insert_count_hash(hash(1, 5), 1).unwrap();
        let view = View::new(&filter.table);
        assert_eq!(run_of(&view, 1), Some(Some((64, 64))));
        assert_eq!(count_in_block(&filter.table, 1, 5, || false), None);
        assert_eq!(count_in_block(&filter.table, 1, 5, || true), Some(1));
        assert_eq!(count_in_block(&filter.table, 1, 6, || true), Some(0));
    }
}
