//! Writing a bulk build's layout into an empty table (the scatter step of paper 004 §IV-C): each
//! element goes to its slot with its continuation and shifted bits, and each run's canonical slot
//! gets its occupied bit. Chunks of runs (or segments) are written in parallel through
//! [`GroupWriter`], which writes each group once, ORing it in where neighbouring chunks share it.

use std::ops::Range;

use crate::hash::low_mask;
use crate::qf::slot::{Slot, OCCUPIED};
use crate::storage::{GroupWriter, SlotArray};

use super::keys::KeyWord;
use super::layout::Layout;
use super::par;
use super::Dedupe;

/// Writes `layout` of the sorted `keys` into `array`, which must be all zero and long enough
/// (the caller checked that the last run ends before the last slot).
pub(crate) fn scatter(array: &SlotArray, keys: &[u64], remainder_bits: u32, layout: &Layout) {
    let runs = layout.first.len();
    let remainder_mask = low_mask(remainder_bits);
    par::map_chunks(runs, par::MIN_PARALLEL / 4, |range| {
        // Neighbouring chunks may share any group: no exclusive ones.
        let mut elements = GroupWriter::new(array, 0..0);
        let mut occupied = GroupWriter::new(array, 0..0);
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
        elements.finish();
        occupied.finish();
    });
}

/// Lays out and writes sorted `keys` in one sweep per chunk: segmented layouts (paper 004
/// §IV-C3) with segments of `segment` keys of the input (one per thread's chunk) instead of `q`
/// slots, as a CPU has a few threads rather than thousands (see [`plan_segments`]); each chunk
/// then lays itself out again from its carry, writing every element as it goes. No per-run
/// arrays, two reads of the keys and one write of the table. With [`Dedupe::On`] a key equal to
/// the one before it is skipped, so the keys need not be deduplicated first (a separate serial
/// pass). Returns how many keys it wrote, or `None` (writing nothing) if the last element would
/// land on the table's last slot or beyond.
pub(crate) fn segmented_scatter<K: KeyWord>(
    array: &SlotArray,
    keys: &[K],
    remainder_bits: u32,
    segment: usize,
    dedupe: Dedupe,
) -> Option<usize> {
    let plan = plan_segments(keys, remainder_bits, segment, dedupe);
    if plan.last_slot >= array.len() as i64 - 1 {
        return None;
    }
    par::for_each(plan.segments, |segment| {
        write_segment(array, keys, remainder_bits, segment, dedupe);
    });
    Some(plan.stored)
}

/// Lays `segment` out again from its carry and writes every element and occupied bit of it.
pub(crate) fn write_segment<K: KeyWord>(
    array: &SlotArray,
    keys: &[K],
    remainder_bits: u32,
    Segment { keys: range, carry }: Segment,
    dedupe: Dedupe,
) {
    let quotient = |i: usize| (keys[i].widen() >> remainder_bits) as i64;
    let remainder_mask = low_mask(remainder_bits);
    let next_quotient = (range.end < keys.len()).then(|| quotient(range.end));
    let exclusive = exclusive_groups(array, carry, next_quotient);
    let mut position = carry;
    let mut elements = GroupWriter::new(array, exclusive.clone());
    let mut occupied = GroupWriter::new(array, exclusive);
    for i in range {
        if dedupe.skips(keys, i) {
            continue;
        }
        let q = quotient(i);
        position = (position + 1).max(q);
        // A skipped repeat has its original's quotient, so `i - 1` still tells the run.
        let continuation = i > 0 && quotient(i - 1) == q;
        // Branch-free: whether a run starts here is a coin toss the CPU cannot predict (the
        // branch cost a quarter of this loop).
        occupied.or(q as usize, OCCUPIED * u64::from(!continuation));
        let element = Slot::element(
            keys[i].widen() & remainder_mask,
            continuation,
            position != q,
        );
        elements.or(position as usize, element.raw());
    }
    elements.finish();
    occupied.finish();
}

/// Before any element: far enough left that `max(carry + 1, quotient)` is the quotient.
const NONE: i64 = i64::MIN / 2;

/// A run of the input keys laid out as one segment, and `carry`, the last slot the segments
/// before it fill (`NONE` if they are empty).
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    keys: Range<usize>,
    carry: i64,
}

/// The segments of a segmented layout, and what laying them all out gives.
pub(crate) struct SegmentPlan {
    pub(crate) segments: Vec<Segment>,
    /// How many keys the layout stores (the distinct ones with [`Dedupe::On`]).
    pub(crate) stored: usize,
    /// The slot of the last element (`NONE` without keys).
    pub(crate) last_slot: i64,
}

/// Where each segment starts: the keys are cut into segments of `segment` keys, each is laid
/// out serially on its own (in parallel) to find its end, and the overflows then pass from
/// segment to segment in one serial sweep over the few segments, since a segment of `n`
/// stored keys ending at `e` on its own ends at `max(e, carry + n)` after a carry `carry`.
pub(crate) fn plan_segments<K: KeyWord>(
    keys: &[K],
    remainder_bits: u32,
    segment: usize,
    dedupe: Dedupe,
) -> SegmentPlan {
    let segment = segment.max(1);
    let ranges: Vec<_> = (0..keys.len().div_ceil(segment))
        .map(|s| s * segment..((s + 1) * segment).min(keys.len()))
        .collect();
    // Each segment's last slot and number of stored keys, laid out alone.
    let alone = par::map(&ranges, |range| {
        let (mut end, mut stored) = (NONE, 0);
        for i in range.clone() {
            if !dedupe.skips(keys, i) {
                end = (end + 1).max((keys[i].widen() >> remainder_bits) as i64);
                stored += 1;
            }
        }
        (end, stored)
    });
    let mut segments = Vec::with_capacity(ranges.len());
    let (mut carry, mut total) = (NONE, 0);
    for (range, (end, stored)) in ranges.into_iter().zip(alone) {
        segments.push(Segment { keys: range, carry });
        carry = end.max(carry + stored as i64);
        total += stored;
    }
    SegmentPlan {
        segments,
        stored: total,
        last_slot: carry,
    }
}

/// The groups a segment writes alone: the segments before it write no slot after its `carry`,
/// and the ones after it none before `next_quotient`, the quotient of the first key after it
/// (every element sits at or after its quotient, and the keys are sorted).
fn exclusive_groups(array: &SlotArray, carry: i64, next_quotient: Option<i64>) -> Range<usize> {
    let first = (carry + 1).max(0) as usize;
    let end = next_quotient.map_or(usize::MAX, |q| q as usize);
    array.layout().groups_inside(first..end, array.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qf::table::QfTable;
    use crate::sync::Ordering;
    use proptest::prelude::{prop_oneof, Just};

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
            repeated in 0usize..=4,
            segment in 1usize..64,
            dedupe in prop_oneof![Just(Dedupe::On), Just(Dedupe::Off)],
        ) {
            // 8 quotient bits, 6 remainder bits; `skew` crowds the keys into the low quotients,
            // so that carries run through whole segments, and up to all keys come twice.
            let mut keys: Vec<u64> = keys.into_iter().map(|key| key >> skew).collect();
            keys.extend_from_within(..keys.len() * repeated / 4);
            keys.sort_unstable();
            let expected = QfTable::with_bits(8, 6).unwrap();
            let stored = crate::batch::build(&expected, keys.clone(), crate::BuildMethod::ParallelMerging, dedupe);
            let table = QfTable::with_bits(8, 6).unwrap();
            proptest::prop_assert_eq!(
                segmented_scatter(&table.slots, &keys, 6, segment, dedupe),
                stored.clone().ok()
            );
            // The same keys as 32-bit words.
            let narrow: Vec<u32> = keys.iter().map(|&key| key as u32).collect();
            let narrow_table = QfTable::with_bits(8, 6).unwrap();
            proptest::prop_assert_eq!(
                segmented_scatter(&narrow_table.slots, &narrow, 6, segment, dedupe),
                stored.clone().ok()
            );
            if stored.is_ok() {
                proptest::prop_assert_eq!(raw(&table), raw(&expected));
                proptest::prop_assert_eq!(raw(&narrow_table), raw(&expected));
            }
        }

        /// The groups a segment writes with plain stores are written by no other segment: each
        /// segment is written alone into a zeroed array here (every slot it touches gets a set
        /// bit), and each slot of its exclusive groups must have been set by it alone (a race
        /// would lose bits only now and then, so the ranges are checked directly; the loom model
        /// `segments_sharing_a_group_lose_no_bit` races two segments).
        #[test]
        fn exclusive_groups_are_written_by_their_segment_alone(
            keys in proptest::collection::vec(0u64..(1 << 12), 1..300),
            skew in 0u32..4,
            segment in 1usize..40,
            slot_bits in prop_oneof![Just(9u32), Just(16), Just(21)],
            dedupe in prop_oneof![Just(Dedupe::On), Just(Dedupe::Off)],
        ) {
            let remainder_bits = 4;
            let mut keys: Vec<u64> = keys.into_iter().map(|key| key >> skew).collect();
            keys.sort_unstable();
            let plan = plan_segments(&keys, remainder_bits, segment, dedupe);
            let slots = (plan.last_slot.max(0) as usize + 1).max(1 << 8);
            // writers[slot]: the segments that set a bit in the slot.
            let mut writers = vec![Vec::new(); slots];
            for (index, s) in plan.segments.iter().enumerate() {
                let array = SlotArray::new(slot_bits, slots).unwrap();
                write_segment(&array, &keys, remainder_bits, s.clone(), dedupe);
                for (slot, slot_writers) in writers.iter_mut().enumerate() {
                    // Relaxed: single-threaded test.
                    if array.get(slot, Ordering::Relaxed) != 0 {
                        slot_writers.push(index);
                    }
                }
            }
            let array = SlotArray::new(slot_bits, slots).unwrap();
            let layout = array.layout();
            for (index, s) in plan.segments.iter().enumerate() {
                let next = plan.segments.get(index + 1).map(|n| (keys[n.keys.start] >> remainder_bits) as i64);
                let groups = exclusive_groups(&array, s.carry, next);
                for (slot, slot_writers) in writers.iter().enumerate() {
                    if groups.contains(&layout.locate(slot).0) {
                        proptest::prop_assert!(
                            slot_writers.iter().all(|&w| w == index),
                            "slot {} of segment {}'s groups {:?} written by {:?}",
                            slot, index, groups, slot_writers
                        );
                    }
                }
            }
        }
    }
}
