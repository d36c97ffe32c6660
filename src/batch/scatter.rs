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

/// Lays out and writes sorted, distinct `keys` in one sweep per chunk: segmented layouts
/// (paper 004 §IV-C3) with segments of `segment` keys of the input (one per thread's chunk)
/// instead of `q` slots, as a CPU has a few threads rather than thousands. Each chunk is
/// first laid out serially on its own to find its end; the overflows then pass from segment to
/// segment in one serial sweep over the few segments, since a segment of `n` keys ending at `e`
/// on its own ends at `max(e, carry + n)` after a carry `carry` (the last slot before it); and
/// each chunk lays itself out again from its carry, writing every element as it goes. No
/// per-run arrays, two reads of the keys and one write of the table. Returns `false` (and
/// writes nothing) if the last element would land on the table's last slot or beyond.
pub(crate) fn segmented_scatter(
    array: &SlotArray,
    keys: &[u64],
    remainder_bits: u32,
    segment: usize,
) -> bool {
    let quotient = |i: usize| (keys[i] >> remainder_bits) as i64;
    // Before any element: far enough left that `max(carry + 1, quotient)` is the quotient.
    const NONE: i64 = i64::MIN / 2;
    let segment = segment.max(1);
    let ranges: Vec<_> = (0..keys.len().div_ceil(segment))
        .map(|s| s * segment..((s + 1) * segment).min(keys.len()))
        .collect();
    let ends = par::filter_map(&ranges, |range| {
        let mut end = NONE;
        for i in range.clone() {
            end = (end + 1).max(quotient(i));
        }
        Some(end)
    });
    let mut carries = Vec::with_capacity(ends.len());
    let mut carry = NONE;
    for (range, &end) in ranges.iter().zip(&ends) {
        carries.push(carry);
        carry = end.max(carry + range.len() as i64);
    }
    if carry >= array.len() as i64 - 1 {
        return false;
    }
    let remainder_mask = low_mask(remainder_bits);
    let segments: Vec<_> = ranges.into_iter().zip(carries).collect();
    par::for_each(segments, |(range, carry)| {
        let mut position = carry;
        let mut elements = GroupOr::new(array);
        let mut occupied = GroupOr::new(array);
        for i in range {
            let q = quotient(i);
            position = (position + 1).max(q);
            let continuation = i > 0 && quotient(i - 1) == q;
            if !continuation {
                occupied.or(q as usize, OCCUPIED);
            }
            let element = Slot::element(keys[i] & remainder_mask, continuation, position != q);
            elements.or(position as usize, element.raw());
        }
        elements.flush();
        occupied.flush();
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qf::table::QfTable;
    use crate::sync::Ordering;

    fn raw(table: &QfTable) -> Vec<u64> {
        let slots = &table.slots;
        let groups = slots.layout().groups_for(slots.len());
        // Relaxed: single-threaded test.
        (0..groups)
            .map(|g| slots.load_group(g, Ordering::Relaxed))
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn segments_of_any_length_write_the_layout_scatter_writes(
            keys in proptest::collection::vec(0u64..(1 << 14), 1..250),
            skew in 0u32..3,
            segment in 1usize..64,
        ) {
            // 8 quotient bits, 6 remainder bits; `skew` crowds the keys into the low quotients,
            // so that carries run through whole segments.
            let mut keys: Vec<u64> = keys.into_iter().map(|key| key >> skew).collect();
            keys.sort_unstable();
            keys.dedup();
            let expected = QfTable::with_bits(8, 6).unwrap();
            let fits = crate::batch::build(&expected, &keys, crate::BuildMethod::ParallelMerging);
            let table = QfTable::with_bits(8, 6).unwrap();
            proptest::prop_assert_eq!(
                segmented_scatter(&table.slots, &keys, 6, segment),
                fits.is_ok()
            );
            if fits.is_ok() {
                proptest::prop_assert_eq!(raw(&table), raw(&expected));
            }
        }
    }
}
