//! Writing a bulk build's layout into an empty table (the scatter step of paper 004 §IV-C): each
//! element goes to its slot with its continuation and shifted bits, and each run's canonical slot
//! gets its occupied bit. Chunks of runs are written in parallel; a chunk gathers the bits of one
//! group and ORs them in with one atomic operation, since neighbouring chunks may share a group.

use crate::hash::low_mask;
use crate::qf::slot::{Slot, OCCUPIED};
use crate::storage::SlotArray;
use crate::sync::Ordering;

use super::layout::Layout;
use super::par;

/// Writes `layout` of the sorted `keys` into `array`, which must be all zero and long enough
/// (the caller checked that the last run ends before the last slot).
pub(crate) fn scatter(array: &SlotArray, keys: &[u64], remainder_bits: u32, layout: &Layout) {
    let runs = layout.first.len();
    let remainder_mask = low_mask(remainder_bits);
    par::map_chunks(runs, par::MIN_PARALLEL / 4, |range| {
        let mut elements = GroupOr::new(array);
        let mut occupied = GroupOr::new(array);
        for run in range {
            let (head, end) = (layout.heads[run], layout.heads[run + 1]);
            let quotient = (keys[head] >> remainder_bits) as usize;
            occupied.or(quotient, OCCUPIED);
            for (offset, &key) in keys[head..end].iter().enumerate() {
                let position = layout.first[run] + offset;
                let element = Slot::element(key & remainder_mask, offset > 0, position != quotient);
                elements.or(position, element.raw());
            }
        }
        elements.flush();
        occupied.flush();
    });
}

/// Gathers slot bits for one group at a time (slots in increasing order) and ORs each group's
/// bits into the array once.
struct GroupOr<'a> {
    array: &'a SlotArray,
    group: usize,
    bits: u64,
}

impl<'a> GroupOr<'a> {
    fn new(array: &'a SlotArray) -> Self {
        GroupOr {
            array,
            group: 0,
            bits: 0,
        }
    }

    #[inline]
    fn or(&mut self, index: usize, value: u64) {
        let layout = self.array.layout();
        let (group, offset) = layout.locate(index);
        if group != self.group {
            self.flush();
            self.group = group;
        }
        self.bits |= value << (offset * layout.bits());
    }

    fn flush(&mut self) {
        if self.bits != 0 {
            // Relaxed: the build's fork and join order these writes before anyone reads the
            // table; the OR itself cannot lose a neighbour's bits.
            self.array
                .or_group(self.group, self.bits, Ordering::Relaxed);
            self.bits = 0;
        }
    }
}
