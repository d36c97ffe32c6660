//! [`SlotArray`]: the fixed-size array of packed slots in atomic groups that every filter
//! stores its table in (paper 000 §3, "Concurrent Slot Storage").

use super::{
    prefetch_index, prefetch_word, try_boxed, try_zeroed_words, Cursor, SlotLayout, MAX_SLOTS,
    WORDS_PER_LINE,
};
use crate::filter::Error;
use crate::sync::{AtomicU64, Ordering};

/// A fixed-size array of packed slots in atomic groups, zeroed at creation.
pub(crate) struct SlotArray {
    pub(super) layout: SlotLayout,
    pub(super) slots: usize,
    groups: Box<[AtomicU64]>,
}

impl SlotArray {
    /// An array of `slots` zeroed slots of `bits` bits each.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if the width is not in `1..=64` or the count exceeds
    /// [`MAX_SLOTS`]; [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub(crate) fn new(bits: u32, slots: usize) -> Result<Self, Error> {
        if !(1..=64).contains(&bits) {
            return Err(Error::InvalidParameters(format!(
                "slot width {bits} is not between 1 and 64 bits"
            )));
        }
        if slots == 0 || slots > MAX_SLOTS {
            return Err(Error::InvalidParameters(format!(
                "{slots} slots is outside 1..=2^58"
            )));
        }
        let layout = SlotLayout::new(bits);
        let group_count = layout.groups_for(slots);
        Ok(SlotArray {
            layout,
            slots,
            groups: try_zeroed_words(group_count)?,
        })
    }

    /// A copy of the array, group by group: exact for an array no thread writes meanwhile
    /// (the caller has `&mut` access to its filter, or is its only user).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub(crate) fn copy_at_rest(&self) -> Result<Self, Error> {
        let mut groups = self.groups_at_rest();
        Ok(SlotArray {
            layout: self.layout,
            slots: self.slots,
            groups: try_boxed(self.groups.len(), || {
                AtomicU64::new(groups.next().unwrap_or(0))
            })?,
        })
    }

    /// Copies every group of `from`, an array of the same layout and length, into this one,
    /// which no other thread uses yet, loading `from`'s groups with `ordering`. The caller
    /// keeps `from`'s slots where they are meanwhile (holds its locks, or pauses what moves
    /// them); allocating this array first keeps the copy, and so the wait of `from`'s writers,
    /// to one pass.
    pub(crate) fn copy_groups_from(&self, from: &SlotArray, ordering: Ordering) {
        debug_assert_eq!((self.layout, self.slots), (from.layout, from.slots));
        for (to, group) in self.groups.iter().zip(&*from.groups) {
            let word = crate::sync::load_word(group, ordering);
            // Relaxed: this array is not shared yet; handing it to other threads orders this.
            crate::sync::store_word(to, word, Ordering::Relaxed);
        }
    }

    /// The groups of an array no thread writes during the read (the caller holds `&mut` to its
    /// filter, every lock of the filter, or a filter that is not shared): what a copy or the
    /// bytes of a quiescent table read.
    pub(crate) fn groups_at_rest(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        // Relaxed: no thread writes the array while it is read (see above); whatever handed
        // the caller its access ordered the writes before these loads. Read as `load_group`
        // reads (a read-modify-write in loom's RMW mode).
        self.groups
            .iter()
            .map(|group| crate::sync::load_word(group, Ordering::Relaxed))
    }

    /// The slot layout.
    #[inline]
    pub(crate) fn layout(&self) -> &SlotLayout {
        &self.layout
    }

    /// Empties every slot, as [`new`](Self::new) made them.
    pub(crate) fn clear(&mut self) {
        for group in 0..self.groups.len() {
            // Relaxed: `&mut self`, no other thread; sharing the array again orders this.
            self.store_group(group, 0, Ordering::Relaxed);
        }
    }

    /// Number of slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slots
    }

    /// Bytes of memory the groups take.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.groups.len() * std::mem::size_of::<u64>()
    }

    /// Loads group `group`.
    #[inline]
    pub(crate) fn load_group(&self, group: usize, order: Ordering) -> u64 {
        // A read-modify-write in loom's RMW mode, which CI runs beside the plain one: see
        // `crate::sync::load_word`.
        crate::sync::load_word(&self.groups[group], order)
    }

    /// Stores group `group` (callers that share the array use [`compare_exchange_group`]).
    ///
    /// [`compare_exchange_group`]: SlotArray::compare_exchange_group
    #[inline]
    pub(crate) fn store_group(&self, group: usize, word: u64, order: Ordering) {
        // A swap in loom's RMW mode: see `crate::sync::store_word`.
        crate::sync::store_word(&self.groups[group], word, order)
    }

    /// Compare-and-exchange of a whole group.
    #[inline]
    pub(crate) fn compare_exchange_group(
        &self,
        group: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.groups[group].compare_exchange(current, new, success, failure)
    }

    /// Changes slot `index` with `change` (old slot -> new slot, or `None` to give up) in one
    /// CAS of its group, retrying while other slots of the group change. Returns whether it
    /// changed. This is how the status-bit locks of the concurrent filters are taken and
    /// released.
    pub(crate) fn update_slot(&self, index: usize, change: impl Fn(u64) -> Option<u64>) -> bool {
        let (group, offset) = self.layout.locate(index);
        self.update_group(group, |word| {
            let slot = change(self.layout.get(word, offset))?;
            Some((self.layout.set(word, offset, slot), ()))
        })
        .is_some()
    }

    /// Changes group `group` with `change` (old word -> new word and a result, or `None` to give
    /// up) in one CAS, retrying with the fresh word while the CAS fails. Returns the result of
    /// the `change` that was written, or `None` if it gave up. For several slots of one group at
    /// once, e.g. migration-locking a run of empty slots.
    #[inline]
    pub(crate) fn update_group<T>(
        &self,
        group: usize,
        change: impl Fn(u64) -> Option<(u64, T)>,
    ) -> Option<T> {
        // Acquire: the decision is based on the group's current value.
        let mut word = self.load_group(group, Ordering::Acquire);
        loop {
            let (new, result) = change(word)?;
            // AcqRel: callers both take locks (Acquire: see everything the previous holder
            // wrote before releasing) and release them (Release: publish their writes).
            // Acquire on failure: the next attempt decides on the fresh word.
            match self.compare_exchange_group(group, word, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(result),
                Err(now) => word = now,
            }
        }
    }

    /// ORs `bits` into group `group`: how the bulk build and the migration of
    /// [`growing`](crate::qf::growing) write a zeroed array from several threads, each owning
    /// some lanes of a group its neighbours share.
    #[inline]
    pub(crate) fn or_group(&self, group: usize, bits: u64, order: Ordering) {
        self.groups[group].fetch_or(bits, order);
    }

    /// Asks the CPU to start loading the group of slot `index` into the cache, so a lookup
    /// issued a little later finds it there (batch lookups, paper 004 §IV-A). A hint only:
    /// a no-op where there is no prefetch instruction (and under loom).
    #[inline]
    pub(crate) fn prefetch(&self, index: usize) {
        let (group, _) = self.layout.locate(index.min(self.slots - 1));
        prefetch_word(&self.groups[group]);
    }

    /// Asks the CPU to start loading the two cache lines before and the two after the one of
    /// slot `index`'s group (a hint, as [`prefetch`](Self::prefetch)). A quotient-filter walk
    /// from a canonical slot goes left to its cluster start and right through the runs (and an
    /// insert shifts on to the next empty slot), so at high fill it often leaves the canonical
    /// line; loading the neighbours alongside the canonical line overlaps those misses instead
    /// of chaining them (measured in `docs/performance-history.md`, "after prefetching the
    /// neighbouring cache lines" for one line on each side, "Two lines on each side" for two).
    #[inline]
    pub(crate) fn prefetch_neighbour_lines(&self, index: usize) {
        let (group, _) = self.layout.locate(index.min(self.slots - 1));
        self.prefetch_lines_around(group);
    }

    /// Asks the CPU to start loading the cache line after the one of slot `index`'s group (a
    /// hint): for a walk that only goes right, such as linear probing.
    #[inline]
    pub(crate) fn prefetch_next_line(&self, index: usize) {
        let (group, _) = self.layout.locate(index);
        prefetch_index(&self.groups, group + WORDS_PER_LINE);
    }

    /// [`prefetch_neighbour_lines`](Self::prefetch_neighbour_lines) of a located group.
    #[inline]
    pub(super) fn prefetch_lines_around(&self, group: usize) {
        // No bounds checks: near either end of the array these name other addresses (a group
        // "before" 0 wraps to a huge index, whose pointer wraps to just before the array),
        // and a prefetch of any address is harmless.
        for lines in 1..=2 {
            let distance = lines * WORDS_PER_LINE;
            prefetch_index(&self.groups, group.wrapping_sub(distance));
            prefetch_index(&self.groups, group + distance);
        }
    }

    /// Reads slot `index` with the given ordering.
    #[inline]
    pub(crate) fn get(&self, index: usize, order: Ordering) -> u64 {
        let (group, offset) = self.layout.locate(index);
        self.layout.get(self.load_group(group, order), offset)
    }

    /// Writes slot `index` when no other thread can touch the array (`&mut self`).
    pub(crate) fn set_exclusive(&mut self, index: usize, value: u64) {
        let (group, offset) = self.layout.locate(index);
        // Relaxed: `&mut self` means no other thread can observe the array right now; the
        // synchronisation that later hands the array to other threads orders this store.
        let word = self.groups[group].load(Ordering::Relaxed);
        self.groups[group].store(self.layout.set(word, offset, value), Ordering::Relaxed);
    }

    /// A cursor on slot `index`, holding a snapshot of its group.
    #[inline]
    pub(crate) fn cursor(&self, index: usize, order: Ordering) -> Cursor<'_> {
        Cursor::over(self, index, order)
    }

    /// A cursor on slot `index` that reads only the given snapshot `word` of the slot's group
    /// and refuses to leave that group: the lock-elision fast paths of paper 000 §3.2 answer from
    /// one atomically loaded group or not at all.
    #[inline]
    pub(crate) fn cursor_in_group(&self, index: usize, word: u64) -> Cursor<'_> {
        Cursor::in_group(self, index, word)
    }
}
