//! [`Cursor`]: the slot-by-slot and lane-by-lane walk across groups under every quotient filter
//! operation.

use super::{GroupSource, SlotArray, SlotLayout};
use crate::sync::Ordering;

/// Walks slots left or right across groups, loading each group once.
///
/// The cursor keeps the word it loaded: slots of the current group are read from that snapshot,
/// and the next group is loaded (with the cursor's ordering) only when the walk enters it. It
/// tracks the slot index and the slot's bit position incrementally, so a step costs a shift, a
/// mask and a compare: this is the inner loop of every quotient filter walk. The layout (slot
/// width, lane masks) is not copied into the cursor but asked of the source at each use: through
/// a [`FixedWidth`](super::FixedWidth) source it is a constant, even in a walk compiled out of line
/// that takes the cursor by reference, and the cursor stays small to build and to clone.
pub(crate) struct Cursor<'a, S: GroupSource = SlotArray> {
    array: &'a S,
    /// Number of slots of `array`.
    slots: usize,
    word: u64,
    index: usize,
    group: usize,
    /// Bit position of the current slot in `word`.
    shift: u32,
    order: Ordering,
    /// Whether the cursor stays inside its group (see [`SlotArray::cursor_in_group`]).
    bounded: bool,
}

// Manual, not derived: a derive would require `S: Clone`, and a cursor only borrows `S`.
impl<S: GroupSource> Clone for Cursor<'_, S> {
    #[inline]
    fn clone(&self) -> Self {
        Cursor { ..*self }
    }
}

impl<'a, S: GroupSource> Cursor<'a, S> {
    /// A cursor on slot `index` of `array`, holding a snapshot of its group.
    #[inline]
    pub(crate) fn over(array: &'a S, index: usize, order: Ordering) -> Self {
        let located = array.layout().locate(index);
        let word = array.load_group(located.0, order);
        Cursor::located(array, index, located, word, order, false)
    }

    /// [`over`](Self::over) after asking the source to prefetch the cache lines around the
    /// slot's group ([`SlotArray::prefetch_neighbour_lines`]), locating the slot once for both:
    /// how a walk from a canonical slot starts.
    #[inline]
    pub(crate) fn over_prefetching(array: &'a S, index: usize, order: Ordering) -> Self {
        let located = array.layout().locate(index);
        array.prefetch_lines_around(located.0);
        let word = array.load_group(located.0, order);
        Cursor::located(array, index, located, word, order, false)
    }

    /// A cursor on slot `index` that reads only the snapshot `word` of the slot's group and
    /// refuses to leave it (see [`SlotArray::cursor_in_group`]).
    #[inline]
    pub(crate) fn in_group(array: &'a S, index: usize, word: u64) -> Self {
        let located = array.layout().locate(index);
        // The ordering is never used: a bounded cursor loads nothing.
        Cursor::located(array, index, located, word, Ordering::Relaxed, true)
    }

    /// A cursor on slot `index`, which is at `offset` in `group`, whose snapshot is `word`.
    #[inline]
    fn located(
        array: &'a S,
        index: usize,
        (group, offset): (usize, u32),
        word: u64,
        order: Ordering,
        bounded: bool,
    ) -> Self {
        Cursor {
            array,
            slots: array.slot_count(),
            word,
            index,
            group,
            shift: offset * array.layout().bits,
            order,
            bounded,
        }
    }
}

impl<S: GroupSource> Cursor<'_, S> {
    /// The slot index under the cursor.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The group under the cursor.
    #[inline]
    pub(crate) fn group(&self) -> usize {
        self.group
    }

    /// The slot under the cursor, from the group snapshot.
    #[inline]
    pub(crate) fn slot(&self) -> u64 {
        (self.word >> self.shift) & self.array.layout().slot_mask()
    }

    /// Moves one slot right. Returns `false` (and stays) at the last slot.
    #[inline]
    pub(crate) fn advance(&mut self) -> bool {
        if self.index + 1 >= self.slots {
            return false;
        }
        if self.shift == self.last_shift() {
            if self.bounded {
                return false;
            }
            self.shift = 0;
            self.group += 1;
            self.word = self.array.load_group(self.group, self.order);
        } else {
            self.shift += self.slot_bits();
        }
        self.index += 1;
        true
    }

    /// Reloads the current group (after the caller changed it or waited for another thread).
    #[inline]
    pub(crate) fn reload(&mut self) {
        self.word = self.array.load_group(self.group, self.order);
    }

    // ----- Word-level stepping: a walk that tests many lanes with one mask operation --------

    /// The snapshot of the current group.
    #[inline]
    pub(crate) fn word(&self) -> u64 {
        self.word
    }

    /// Bit position of the current slot in [`word`](Cursor::word).
    #[inline]
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// Bit 0 of every slot lane of a group.
    #[inline]
    pub(crate) fn lane_lsb(&self) -> u64 {
        self.array.layout().lane_lsb
    }

    /// The layout of the array the cursor walks.
    #[inline]
    pub(crate) fn layout(&self) -> &SlotLayout {
        self.array.layout()
    }

    /// Width of a slot in bits.
    #[inline]
    pub(crate) fn slot_bits(&self) -> u32 {
        self.array.layout().bits
    }

    /// Bit position of the last slot of a group.
    #[inline]
    fn last_shift(&self) -> u32 {
        let layout = self.array.layout();
        (layout.per_group - 1) * layout.bits
    }

    /// The lane holding bit `bit < 64` of the current group.
    #[inline]
    fn lane_of_bit(&self, bit: u32) -> u32 {
        self.array.layout().lane_of_bit(bit)
    }

    /// Moves to the slot whose lane holds bit `bit` of the current group.
    #[inline]
    pub(crate) fn jump_to_bit(&mut self, bit: u32) {
        let lane = self.lane_of_bit(bit);
        debug_assert!(lane < self.layout().per_group && lane == bit / self.slot_bits());
        let shift = lane * self.slot_bits();
        let current = self.lane_of_bit(self.shift);
        self.index = self.index - current as usize + lane as usize;
        self.shift = shift;
    }

    /// Moves to the lane of the `n`-th lowest set bit of `bits` (`n` counts from 1), a mask of
    /// the current group with at least `n` bits set.
    #[inline]
    pub(crate) fn jump_to_nth_bit(&mut self, mut bits: u64, n: u32) {
        debug_assert!(n >= 1 && bits.count_ones() >= n);
        for _ in 1..n {
            bits &= bits - 1;
        }
        self.jump_to_bit(bits.trailing_zeros());
    }

    /// Moves to the last slot of the previous group. Returns `false` (and stays) in group 0 or
    /// for a bounded cursor.
    #[inline]
    pub(crate) fn enter_previous_group(&mut self) -> bool {
        if self.group == 0 || self.bounded {
            return false;
        }
        let lane = self.lane_of_bit(self.shift);
        self.index -= lane as usize + 1;
        self.group -= 1;
        self.shift = self.last_shift();
        self.word = self.array.load_group(self.group, self.order);
        true
    }

    /// Moves to the first slot of the next group. Returns `false` (and stays) if that slot is
    /// past the end of the array or the cursor is bounded.
    #[inline]
    pub(crate) fn enter_next_group(&mut self) -> bool {
        let lane = self.lane_of_bit(self.shift);
        let next = self.index - lane as usize + self.layout().per_group as usize;
        if self.bounded || next >= self.slots {
            return false;
        }
        self.index = next;
        self.group += 1;
        self.shift = 0;
        self.word = self.array.load_group(self.group, self.order);
        true
    }
}
