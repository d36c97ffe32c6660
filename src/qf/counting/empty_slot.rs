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
//! one right after a runend (both at once cancel), so the walk is read four slots at a time
//! from a table of each nibble's net step and lowest point, and only the nibble where the level
//! reaches 0 is read slot by slot.

use crate::hash::low_mask_below_64;
use crate::qf::rank_select::popcount;

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
    let slots = BLOCK_SLOTS as u32;
    let mut start = from.max(spill);
    if start >= slots {
        return None;
    }
    // The runs of this block's quotients end at the runends from the spill on; slot `t + 1` is
    // the first after a run ending at `t` (a run ending at slot 63 frees no slot of the block).
    let freed = (runends & !low_mask_below_64(spill)) << 1;
    let (ups, downs) = (occupieds & !freed, freed & !occupieds);
    let before = low_mask_below_64(start);
    let mut level = popcount(ups & before) as i32 - popcount(downs & before) as i32;
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
    if level > popcount(downs) as i32 {
        // Too few runs end in the block for the level to come down to 0.
        return None;
    }
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

        /// The nibble walk finds the first unused slot a slot-by-slot scan of the layout finds,
        /// from any start, at every spill, for runs of one to four slots (dense blocks and runs
        /// that leave the block included).
        #[test]
        fn the_walk_finds_the_first_unused_slot((spill, quotients, lengths, from) in layouts()) {
            let (occupieds, runends, used) = block(spill, &quotients, &lengths);
            let want = (from..64).find(|&slot| !used[slot as usize]);
            prop_assert_eq!(first_empty_in_block(occupieds, runends, spill, from), want);
        }
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
