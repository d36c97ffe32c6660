//! [`SlotLayout`]: where the slots of one width sit in a 64-bit group, and the word-level
//! operations on them (locating a slot without a hardware division, reading and writing lanes).

use crate::hash::low_mask;

/// Where slots of a given width live inside groups, and the word-level operations on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotLayout {
    /// Width of one slot in bits, `1..=64`.
    pub(super) bits: u32,
    /// Slots per 64-bit group: `floor(64 / bits)`.
    pub(super) per_group: u32,
    /// `ceil(2^64 / per_group)`: `i / per_group == (i * magic) >> 64` for `i < 2^58`. 0 when
    /// `per_group` is a power of two, which [`locate`](Self::locate) divides by a shift.
    magic: u64,
    /// `log2(per_group)` when `per_group` is a power of two (1, 2, 4, 8, 16, 32 or 64 slots: every
    /// width from 13 to 16 bits, the 3-status-bit filter's with 10 to 13 remainder bits), else
    /// unused.
    group_shift: u32,
    /// Bit 0 of every lane: precomputed, since every walk starts from it and [`lanes`](Self::lanes)
    /// multiplies by it.
    pub(super) lane_lsb: u64,
    /// `ceil(2^16 / bits)`: the lane holding bit `b < 64` of a word is `(b * lane_magic) >> 16`
    /// (exact: the rounding error, `b * (bits - 1) / 2^16 / bits`, stays below the `1 / bits`
    /// gap to the next multiple). Precomputed, so no cursor divides.
    lane_magic: u32,
}

/// The largest slot index [`SlotLayout::locate`] divides exactly (see `magic`).
pub(crate) const MAX_SLOTS: usize = 1 << 58;

impl SlotLayout {
    /// The layout for slots of `bits` bits. Panics (a bug, not user input) outside `1..=64`.
    pub(crate) const fn new(bits: u32) -> Self {
        assert!(bits >= 1 && bits <= 64, "slot width out of range");
        let per_group = 64 / bits;
        // ceil(2^64 / d) for d >= 2 is floor((2^64 - 1) / d) + 1. Powers of two (d == 1 among
        // them, whose reciprocal would be 2^64) are divided by a shift instead.
        let magic = if per_group.is_power_of_two() {
            0
        } else {
            u64::MAX / per_group as u64 + 1
        };
        let mut lane_lsb = 0;
        let mut lane = 0;
        while lane < per_group {
            lane_lsb |= 1 << (lane * bits);
            lane += 1;
        }
        SlotLayout {
            bits,
            per_group,
            magic,
            group_shift: per_group.trailing_zeros(),
            lane_lsb,
            lane_magic: (1u32 << 16).div_ceil(bits),
        }
    }

    /// Width of one slot in bits.
    #[inline]
    pub(crate) const fn bits(&self) -> u32 {
        self.bits
    }

    /// Slots per group.
    #[inline]
    pub(crate) const fn per_group(&self) -> u32 {
        self.per_group
    }

    /// The mask of one slot's bits, right-aligned.
    #[inline]
    pub(crate) const fn slot_mask(&self) -> u64 {
        low_mask(self.bits)
    }

    /// The group holding slot `index` and the slot's position inside it.
    ///
    /// `index / per_group` is computed as the high half of `index * ceil(2^64 / per_group)`:
    /// writing `magic = (2^64 + e) / d` with `0 < e <= d`, the product is
    /// `index / d + e * index / (d * 2^64)`, and the error term stays below the distance to the
    /// next integer (`1 / d`) as long as `e * index < 2^64`, which `index < 2^58` and `d <= 64`
    /// guarantee.
    #[inline]
    pub(crate) fn locate(&self, index: usize) -> (usize, u32) {
        debug_assert!(index < MAX_SLOTS);
        if self.magic == 0 {
            // A power of two: one shift and one mask, shorter than the multiply on the path from
            // the hash to the first load of every operation.
            let offset = index as u32 & (self.per_group - 1);
            return (index >> self.group_shift, offset);
        }
        let group = ((index as u128 * self.magic as u128) >> 64) as usize;
        let offset = (index - group * self.per_group as usize) as u32;
        (group, offset)
    }

    /// How many groups hold `slots` slots.
    #[inline]
    pub(crate) const fn groups_for(&self, slots: usize) -> usize {
        slots.div_ceil(self.per_group as usize)
    }

    /// The groups of an array of `len` slots all of whose slots lie in `slots` (the array's
    /// end closes the last group): the groups a writer of exactly those slots owns alone, for
    /// [`GroupWriter`](super::GroupWriter). Divides; not for hot paths.
    pub(crate) fn groups_inside(
        &self,
        slots: std::ops::Range<usize>,
        len: usize,
    ) -> std::ops::Range<usize> {
        let per_group = self.per_group as usize;
        let first = slots.start.div_ceil(per_group);
        let end = if slots.end >= len {
            self.groups_for(len)
        } else {
            slots.end / per_group
        };
        first..end.max(first)
    }

    /// The slot at `offset` inside `word`.
    #[inline]
    pub(crate) fn get(&self, word: u64, offset: u32) -> u64 {
        debug_assert!(offset < self.per_group);
        (word >> (offset * self.bits)) & self.slot_mask()
    }

    /// `word` with the slot at `offset` replaced by `value` (which must fit the slot).
    #[inline]
    pub(crate) fn set(&self, word: u64, offset: u32, value: u64) -> u64 {
        (word & !self.place(offset, self.slot_mask())) | self.place(offset, value)
    }

    /// A word holding `value` (which must fit a slot) in the slot at `offset` and zeros
    /// elsewhere: what [`set`](Self::set) writes, and what a writer that gathers a group's
    /// slots before storing it ([`GroupWriter`](super::GroupWriter)) ORs together.
    #[inline]
    pub(crate) fn place(&self, offset: u32, value: u64) -> u64 {
        debug_assert!(offset < self.per_group);
        debug_assert!(value & !self.slot_mask() == 0, "value wider than a slot");
        value << (offset * self.bits)
    }

    /// `pattern` (one slot's worth of bits) copied into every slot lane of a word: a
    /// multiplication by `lane_lsb`, without carries between lanes since the pattern fits one.
    ///
    /// With the lane mask of a status bit, a word operation touches that bit in all slots at once.
    #[inline]
    pub(crate) const fn lanes(&self, pattern: u64) -> u64 {
        debug_assert!(
            pattern & !self.slot_mask() == 0,
            "the pattern must fit one slot"
        );
        pattern.wrapping_mul(self.lane_lsb)
    }

    /// The lane holding bit `bit < 64` of a group, from `lane_magic`: a multiply and a shift
    /// instead of `bit / bits`. The cursors and the cuckoo table's search use it.
    #[inline(always)]
    pub(crate) const fn lane_of_bit(&self, bit: u32) -> u32 {
        (bit * self.lane_magic) >> 16
    }

    /// The mask of the slots at offsets `from..to` inside a group (`to <= per_group`).
    #[cfg(test)]
    pub(crate) fn range_mask(&self, from: u32, to: u32) -> u64 {
        debug_assert!(from <= to && to <= self.per_group);
        low_mask(to * self.bits) & !low_mask(from * self.bits)
    }
}
