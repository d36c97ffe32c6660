//! [`LaneFields`]: broadword (SWAR) comparison of one value with a field of every slot lane of
//! a group at once.

use super::SlotLayout;
use crate::hash::low_mask;

/// Word constants that compare a value with the same field of every slot lane of a group at
/// once (broadword, or SWAR: "SIMD within a register"). The field is a slot's bits from
/// `field_shift` up to its top; the slot's top bit is the lane's *flag*, where answers come
/// back. The cuckoo table finds its fingerprints with it, and a quotient filter lookup its
/// remainder in a run.
///
/// ```text
///  one lane of `bits` bits (here field_shift = 3)
///  +------+--------------------------+-----------+
///  | flag |  rest of the field       |  low bits |
///  +------+--------------------------+-----------+
///   bits-1  bits-2 ... field_shift     field_shift-1 ... 0
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaneFields {
    /// `1` in the lowest bit of every lane.
    ones: u64,
    /// The field of every lane.
    fields: u64,
    /// The field of every lane without its flag.
    rests: u64,
    /// The flag of every lane.
    flags: u64,
}

impl LaneFields {
    /// The constants for the field from bit `field_shift` of every slot of `layout` up to the
    /// slot's top bit (`field_shift < bits`).
    #[inline]
    pub(crate) fn new(layout: &SlotLayout, field_shift: u32) -> Self {
        debug_assert!(field_shift < layout.bits);
        let field = layout.slot_mask() & !low_mask(field_shift);
        let flag = 1u64 << (layout.bits - 1);
        LaneFields {
            ones: layout.lane_lsb,
            fields: layout.lanes(field),
            rests: layout.lanes(field & !flag),
            flags: layout.lanes(flag),
        }
    }

    /// `value` (which must fit the field) in the field of every lane.
    #[inline]
    pub(crate) fn pattern(&self, value: u64, field_shift: u32) -> u64 {
        debug_assert!((value << field_shift) >> field_shift == value);
        // `SlotLayout::lanes`, with the layout's `lane_lsb` kept here.
        (value << field_shift).wrapping_mul(self.ones)
    }

    /// The flag of every lane.
    #[inline]
    pub(crate) fn flags(&self) -> u64 {
        self.flags
    }

    /// The flags of the lanes of `word` whose field equals `pattern`'s, exactly: `x` is zero in
    /// the field of an equal lane; adding `rests` to the field's lower bits carries into the
    /// flag exactly when one of them is set, and the carry never leaves the lane (each addend
    /// is at most `rests`), so `t`'s flag is clear only in lanes where all of `x`'s field is
    /// zero.
    #[inline]
    pub(crate) fn equal(&self, word: u64, pattern: u64) -> u64 {
        let x = (word ^ pattern) & self.fields;
        let t = ((x & self.rests) + self.rests) | x;
        !t & self.flags
    }
}
