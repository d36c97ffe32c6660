//! The first empty slot of one block of the rank-and-select quotient filter, from the block's
//! `occupieds` and `runends` words and its exact spill: the search for the next empty slot that
//! every insert making room starts with (paper 004 §III-B; paper 000 §2.2).
//!
//! Pandey et al. jump from a slot to the end of the run of the last occupied quotient at or
//! before it, a rank and a select per jump, until a jump lands where it started. At 90% fill a
//! search makes several such jumps per block. This module reads the same two words as a walk:
//! a slot `t` at or past the spill is unused exactly when the quotients at or before `t` are as
//! many as the runs that end before `t`, that is when
//!
//! ```text
//! level(t) = #occupieds[..=t] - #runends[spill..t]
//! ```
//!
//! is 0. Walking from slot to slot the level goes up by one at an occupied quotient and down by
//! one right after a runend (both at once cancel), and stays put elsewhere. So only the steps
//! matter: BMI2's `pext` packs them into one word, a bit per step (set for up), which is read
//! eight steps at a time from a table of each byte's net fall and where it first falls how far;
//! `pdep` then turns the step where the level reaches 0 back into its slot. A CPU without BMI2
//! walks the slots instead, four at a time, from a table of each nibble's net step and lowest
//! point. The packed walk reads a block in at most eight bytes, fewer when some slots hold no
//! step, where the slot walk reads sixteen nibbles.

use crate::hash::low_mask_below_64;
use crate::qf::rank_select::{popcount, Bmi2};

use super::blocks::BLOCK_SLOTS;

/// For each nibble of up-steps (bits 0-3 of the index) and down-steps (bits 4-7; never on the
/// same slot as an up-step): the level change over the four slots and the lowest level reached
/// after one of them, both relative to the level before the nibble.
const NIBBLE_WALK: [(i8, i8); 256] = nibble_walk();

const fn nibble_walk() -> [(i8, i8); 256] {
    let mut table = [(0i8, 0i8); 256];
    let mut index = 0;
    while index < 256 {
        let (ups, downs) = (index & 15, index >> 4);
        let (mut level, mut lowest) = (0i8, i8::MAX);
        let mut bit = 0;
        while bit < 4 {
            level += ((ups >> bit) & 1) as i8 - ((downs >> bit) & 1) as i8;
            if level < lowest {
                lowest = level;
            }
            bit += 1;
        }
        table[index] = (level, lowest);
        index += 1;
    }
    table
}

/// For each byte of steps read as a bit per step (set: up, clear: down), the net fall over its
/// eight steps (downs minus ups).
const BYTE_FALL: [i8; 256] = byte_fall();

/// For each byte of steps as in [`BYTE_FALL`] and each depth `k` in 1..=8 (at index `k - 1`):
/// after which of its steps the fall first reaches `k`, or 8 if it never does.
const BYTE_FIRST_AT_DEPTH: [[u8; 8]; 256] = byte_first_at_depth();

const fn byte_fall() -> [i8; 256] {
    let mut table = [0i8; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = 8 - 2 * (byte as u8).count_ones() as i8;
        byte += 1;
    }
    table
}

const fn byte_first_at_depth() -> [[u8; 8]; 256] {
    let mut table = [[8u8; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut fall = 0i32;
        let mut step = 0;
        while step < 8 {
            fall += if byte >> step & 1 == 1 { -1 } else { 1 };
            // The fall moves by one per step, so the first time it reaches a new depth is
            // the first time it reaches that depth.
            if fall >= 1 && table[byte][fall as usize - 1] == 8 {
                table[byte][fall as usize - 1] = step as u8;
            }
            step += 1;
        }
        byte += 1;
    }
    table
}

/// The first unused slot of a block at or after slot `from` (indices in the block; `from` may
/// be 64 or more), given the block's `occupieds`, its `runends` and its exact spill (`< 64`):
/// `None` if the runs use every slot from `from` to the block's end (or the words are
/// inconsistent; it never panics and always ends).
#[inline]
pub(crate) fn first_empty_in_block(
    occupieds: u64,
    runends: u64,
    spill: u32,
    from: u32,
) -> Option<u32> {
    first_empty_in_block_by(occupieds, runends, spill, from, Walk::Steps)
}

/// How [`first_empty_in_block_by`] walks the level past the first slot.
#[derive(Clone, Copy)]
enum Walk {
    /// Over the steps alone, eight at a time ([`fall_to`]), where the CPU packs them with one
    /// instruction; over the slots otherwise.
    Steps,
    /// Over the slots, four at a time ([`fall_to_by_nibbles`]).
    #[cfg_attr(not(test), allow(dead_code))]
    Nibbles,
}

/// [`first_empty_in_block`], walking as `walk` says (the tests run both walks).
#[inline(always)]
fn first_empty_in_block_by(
    occupieds: u64,
    runends: u64,
    spill: u32,
    from: u32,
    walk: Walk,
) -> Option<u32> {
    let slots = BLOCK_SLOTS as u32;
    let mut start = from.max(spill);
    if start >= slots {
        return None;
    }
    let bits = Bmi2::detect();
    let count = |word: u64| bits.map_or_else(|| popcount(word), |bits| bits.popcount(word)) as i32;
    // The runs of this block's quotients end at the runends from the spill on; slot `t + 1` is
    // the first after a run ending at `t` (a run ending at slot 63 frees no slot of the block).
    let freed = (runends & !low_mask_below_64(spill)) << 1;
    let (ups, downs) = (occupieds & !freed, freed & !occupieds);
    let before = low_mask_below_64(start);
    let mut level = count(ups & before) - count(downs & before);
    if level == 0 {
        // Every run before `start` ended before it: it is unused unless a run starts there.
        if occupieds >> start & 1 == 0 {
            return Some(start);
        }
        level = 1;
        start += 1;
        if start == slots {
            return None;
        }
    }
    let from_start = !low_mask_below_64(start);
    let (ups, downs) = (ups & from_start, downs & from_start);
    if level < 1 || level > count(downs) {
        // Too few runs end in the block for the level to come down to 0 (or the words are
        // inconsistent: a level below 0).
        return None;
    }
    match (walk, bits) {
        (Walk::Steps, Some(bits)) => fall_to(bits, ups, downs, level),
        _ => fall_to_by_nibbles(ups, downs, start, level),
    }
}

/// The slot where the level, `level >= 1` before the first of the up- and down-steps given,
/// first comes down to 0: the walk over the steps alone (packed, a bit per step, set for up),
/// a byte at a time.
#[inline(always)]
fn fall_to(bits: Bmi2, ups: u64, downs: u64, level: i32) -> Option<u32> {
    let steps = ups | downs;
    let rises = bits.compress(ups, steps);
    let count = bits.popcount(steps);
    // How far the level has come down before the byte (it moves by one per step, and stays
    // above 0 until the answer: `level - fall >= 1`).
    let mut fall = 0i32;
    let mut byte = 0u32;
    while 8 * byte < count {
        let eight = (rises >> (8 * byte)) as u8 as usize;
        let depth = level - fall;
        if depth <= 8 {
            let step = BYTE_FIRST_AT_DEPTH[eight][(depth - 1) as usize];
            if step < 8 {
                // The bits past the last step read as downs: a fall there is not a slot.
                let index = 8 * byte + u32::from(step);
                return (index < count).then(|| bits.select(steps, index));
            }
        }
        fall += i32::from(BYTE_FALL[eight]);
        byte += 1;
    }
    None
}

/// The slot at or after `start` (a multiple of 4 or not) where the level, `level >= 1` before
/// it, first comes down to 0, given the up- and down-steps from `start` on: the walk over the
/// slots, four at a time. Out of line: only CPUs without `pext` take it.
#[inline(never)]
fn fall_to_by_nibbles(ups: u64, downs: u64, start: u32, mut level: i32) -> Option<u32> {
    let slots = BLOCK_SLOTS as u32;
    let mut nibble = start & !3;
    while nibble < slots {
        let index = ((ups >> nibble) & 15) | (((downs >> nibble) & 15) << 4);
        let (step, lowest) = NIBBLE_WALK[index as usize];
        if level + i32::from(lowest) <= 0 {
            // The level reaches 0 in this nibble (it moves by one slot at a time).
            for slot in nibble..nibble + 4 {
                level += (ups >> slot & 1) as i32 - (downs >> slot & 1) as i32;
                if level == 0 {
                    return Some(slot);
                }
            }
            return None; // inconsistent words: the level skipped 0
        }
        level += i32::from(step);
        nibble += 4;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A block's words laid out as the filter lays them out: the first `spill` slots used by
    /// earlier blocks' runs, then a run for each of `quotients` (sorted, distinct) of `lengths`
    /// slots, each starting at its quotient or right after the run before. Returns the words
    /// and which slots are used (the last run may go past the block; its runend is then not
    /// in the block, and neither are any later runs).
    fn block(spill: u32, quotients: &[u32], lengths: &[u32]) -> (u64, u64, [bool; 64]) {
        let (mut occupieds, mut runends, mut used) = (0u64, 0u64, [false; 64]);
        used[..spill as usize].fill(true);
        let mut next_free = spill;
        for (&quotient, &length) in quotients.iter().zip(lengths) {
            occupieds |= 1 << quotient;
            let start = quotient.max(next_free);
            let end = start + length - 1;
            for slot in start..=end.min(63) {
                used[slot as usize] = true;
            }
            if end >= 64 {
                break;
            }
            runends |= 1 << end;
            next_free = end + 1;
        }
        (occupieds, runends, used)
    }

    fn layouts() -> impl Strategy<Value = (u32, Vec<u32>, Vec<u32>, u32)> {
        (
            0u32..64,
            proptest::collection::btree_set(0u32..64, 0..48),
            proptest::collection::vec(1u32..5, 48),
            0u32..70,
        )
            .prop_map(|(spill, quotients, lengths, from)| {
                (spill, quotients.into_iter().collect(), lengths, from)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Both walks (over the packed steps where the CPU has BMI2, and over the nibbles) find
        /// the first unused slot a slot-by-slot scan of the layout finds, from any start, at
        /// every spill, for runs of one to four slots (dense blocks and runs that leave the
        /// block included).
        #[test]
        fn the_walk_finds_the_first_unused_slot((spill, quotients, lengths, from) in layouts()) {
            let (occupieds, runends, used) = block(spill, &quotients, &lengths);
            let want = (from..64).find(|&slot| !used[slot as usize]);
            prop_assert_eq!(first_empty_in_block(occupieds, runends, spill, from), want);
            let by_nibbles =
                first_empty_in_block_by(occupieds, runends, spill, from, Walk::Nibbles);
            prop_assert_eq!(by_nibbles, want);
        }
    }

    /// The byte tables against a step-by-step walk of every byte.
    #[test]
    fn the_byte_tables_have_each_bytes_fall_and_first_depths() {
        for byte in 0..256usize {
            let mut fall = 0i32;
            let mut first = [8u8; 8];
            for step in 0..8 {
                fall += if byte >> step & 1 == 1 { -1 } else { 1 };
                if (1..=8).contains(&fall) && first[fall as usize - 1] == 8 {
                    first[fall as usize - 1] = step as u8;
                }
            }
            assert_eq!(i32::from(BYTE_FALL[byte]), fall, "{byte:#010b}");
            assert_eq!(BYTE_FIRST_AT_DEPTH[byte], first, "{byte:#010b}");
        }
        // Eight downs reach every depth, one per step; eight ups reach none.
        assert_eq!(BYTE_FIRST_AT_DEPTH[0], [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(BYTE_FIRST_AT_DEPTH[0xFF], [8; 8]);
        // Down, up, down, down: depths 1, 0, 1, 2, then ups.
        assert_eq!(BYTE_FIRST_AT_DEPTH[0b1111_0010][..3], [0, 3, 8]);
    }

    /// The table against its definition for a few nibbles.
    #[test]
    fn the_nibble_table_has_each_nibbles_step_and_lowest_level() {
        // Up, up, down, down: levels 1, 2, 1, 0.
        assert_eq!(NIBBLE_WALK[0b1100_0011], (0, 0));
        // Down first: the lowest level is -1, the net step 0 after an up.
        assert_eq!(NIBBLE_WALK[0b0001_0010], (0, -1));
        // No steps.
        assert_eq!(NIBBLE_WALK[0], (0, 0));
        // Four downs.
        assert_eq!(NIBBLE_WALK[0b1111_0000], (-4, -4));
    }
}
