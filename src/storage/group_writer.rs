//! [`GroupWriter`]: several threads filling a zeroed array at once, each in increasing slot
//! order (the bulk build's scatter, a growing filter's migration).

use super::SlotArray;
use crate::sync::Ordering;

/// Fills a zeroed array from several threads at once, each writing its slots in increasing
/// order (the bulk build's scatter, the migration of a growing filter): the bits of one group
/// are gathered and written once, with a plain load and store in the groups the writer owns
/// alone, and with an atomic OR in the groups it shares with a neighbouring writer (whose bits
/// are in other lanes). Slots are only ever OR-ed in, so a writer may pass over a group twice.
/// Nothing here publishes the writes: the caller's join or release does.
pub(crate) struct GroupWriter<'a> {
    array: &'a SlotArray,
    group: usize,
    bits: u64,
    exclusive: std::ops::Range<usize>,
}

impl<'a> GroupWriter<'a> {
    /// A writer that owns the groups in `exclusive` alone: no other thread writes them until
    /// the caller publishes the array.
    pub(crate) fn new(array: &'a SlotArray, exclusive: std::ops::Range<usize>) -> Self {
        GroupWriter {
            array,
            group: 0,
            bits: 0,
            exclusive,
        }
    }

    /// ORs `value` (which must fit a slot) into slot `index`, which is at or after the slots
    /// written before.
    #[inline]
    pub(crate) fn or(&mut self, index: usize, value: u64) {
        let (group, offset) = self.array.layout.locate(index);
        if group != self.group {
            self.flush();
            self.group = group;
        }
        self.bits |= self.array.layout.place(offset, value);
    }

    /// Writes the last group gathered.
    pub(crate) fn finish(mut self) {
        self.flush();
    }

    fn flush(&mut self) {
        if self.bits == 0 {
            return;
        }
        if self.exclusive.contains(&self.group) {
            // Relaxed: no other thread writes this group before the caller publishes the
            // array, which orders these writes before any read. In the segmented bulk build a
            // locked OR here cost about a tenth of the write sweep.
            let word = self.array.load_group(self.group, Ordering::Relaxed);
            self.array
                .store_group(self.group, word | self.bits, Ordering::Relaxed);
        } else {
            // Relaxed: published by the caller as above; the OR cannot lose a neighbour's bits.
            self.array
                .or_group(self.group, self.bits, Ordering::Relaxed);
        }
        self.bits = 0;
    }
}
