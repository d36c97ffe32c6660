//! Arrays for the tests of the code that rewrites them (the shifts of both quotient-filter walks).

use super::SlotArray;
use crate::hash::low_mask;
use crate::sync::Ordering;
use proptest::prelude::*;

/// An array of `slots` slots of `bits` bits, every slot holding `seed`-derived bits (any
/// pattern, locks and impossible status bits included).
pub(crate) fn noisy(bits: u32, slots: usize, seed: u64) -> SlotArray {
    let mut array = SlotArray::new(bits, slots).unwrap();
    let mut state = seed | 1;
    for index in 0..slots {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        array.set_exclusive(index, state & low_mask(bits));
    }
    array
}

/// One insert shift to test: an array of 300 slots of `bits` bits filled by [`noisy`] from
/// `seed`, the new element's `position`, the `end` the shift stops at, the canonical slot
/// (`quotient`, with its raw bits when it is not the position), the new `element`, and
/// whether it displaces a run head.
#[derive(Debug, Clone)]
pub(crate) struct ShiftCase {
    pub(crate) bits: u32,
    pub(crate) seed: u64,
    pub(crate) quotient: usize,
    pub(crate) canonical: u64,
    pub(crate) position: usize,
    pub(crate) end: usize,
    pub(crate) element: u64,
    pub(crate) old_head_continues: bool,
}

/// Shift cases over every slot width from 3 to 64 bits, stretches inside one group or
/// across many, canonical slots with and without their occupied bit (`occupied`: the
/// status bit to set or clear), elements without it.
pub(crate) fn shift_cases(occupied: u64) -> impl Strategy<Value = ShiftCase> {
    (
        3u32..=64,
        any::<u64>(),
        0usize..SHIFT_SLOTS - 1,
        0usize..SHIFT_SLOTS,
        0usize..4,
        any::<u64>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            move |(bits, seed, position, length, back, element, occupied_canonical, continues)| {
                let end = position + length % (SHIFT_SLOTS - position);
                let canonical = seed.rotate_left(17) & low_mask(bits);
                ShiftCase {
                    bits,
                    seed,
                    quotient: position.saturating_sub(back),
                    canonical: if occupied_canonical {
                        canonical | occupied
                    } else {
                        canonical & !occupied
                    },
                    position,
                    end,
                    element: element & low_mask(bits) & !occupied,
                    old_head_continues: continues,
                }
            },
        )
}

/// Slots in the array of a [`ShiftCase`].
pub(crate) const SHIFT_SLOTS: usize = 300;

impl ShiftCase {
    /// The case's array, filled by [`noisy`].
    pub(crate) fn array(&self) -> SlotArray {
        noisy(self.bits, SHIFT_SLOTS, self.seed)
    }
}

/// Every group word of `array`, to compare two arrays bit for bit.
pub(crate) fn group_words(array: &SlotArray) -> Vec<u64> {
    let groups = array.layout().groups_for(array.len());
    (0..groups)
        .map(|group| array.load_group(group, Ordering::Relaxed))
        .collect()
}
