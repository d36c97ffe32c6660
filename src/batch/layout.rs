//! Where every element of a bulk build goes: the saturating scan of paper 004 §IV-C, by its three
//! methods.
//!
//! The input is sorted fingerprints, distinct unless the build keeps repeats
//! ([`Dedupe::Off`](super::Dedupe::Off): a copy is one more element of its run). Element `i` of the
//! sorted order lands in slot `pos[i] = max(pos[i - 1] + 1, quotient[i])` (the paper's
//! non-associative operator), which is exactly where inserting the same set one by one puts it.
//! Within a run the slots are consecutive, so only run heads need the scan: for run `k` starting at
//! element `head[k]` with quotient `quot[k]`, write `w[k] = quot[k] - head[k]`; then the run starts
//! at `head[k] + max(w[0..=k])`. The three methods differ in how they compute that prefix maximum
//! and where they stop early ("saturation": a run that already starts after the previous one ends
//! takes nothing from the left):
//!
//! * [`BuildMethod::ParallelMerging`] (§IV-C1, Algorithm 4): segments start as single runs and
//!   neighbouring segments merge pairwise, `log2(runs)` rounds; the left segment's carry moves
//!   into the right one only up to its first saturated run.
//! * [`BuildMethod::SequentialShifting`] (§IV-C2, Algorithm 5): every round, every run that
//!   overlaps its predecessor shifts right to just after it; repeat until no run moves (as many
//!   rounds as runs in the longest cluster). Only runs whose predecessor moved are looked at again.
//! * [`BuildMethod::SegmentedLayouts`] (§IV-C3, Algorithm 6): the table is cut into segments of
//!   `q` slots, each laid out serially on its own; each round passes every segment's overflow to
//!   the next, until no overflow changes.

use super::par;
use super::BuildMethod;

/// The layout of a bulk build: where each run of the sorted input starts.
pub(crate) struct Layout {
    /// Index in the sorted input of each run's first element, then the input's length.
    pub(crate) heads: Vec<usize>,
    /// The slot of each run's first element.
    pub(crate) first: Vec<usize>,
}

/// Lays out sorted fingerprint keys (`quotient << remainder_bits | remainder`) for a
/// table of `2^quotient_bits` canonical slots.
pub(crate) fn layout(
    keys: &[u64],
    quotient_bits: u32,
    remainder_bits: u32,
    method: BuildMethod,
) -> Layout {
    let quotient = |i: usize| (keys[i] >> remainder_bits) as usize;
    let mut heads = run_heads(keys, remainder_bits);
    let first = run_starts(&heads, |k| quotient(heads[k]), quotient_bits, method);
    heads.push(keys.len());
    Layout { heads, first }
}

/// The index of each run's first key in sorted keys (`quotient << remainder_bits | remainder`).
pub(crate) fn run_heads(keys: &[u64], remainder_bits: u32) -> Vec<usize> {
    let quotient = |i: usize| keys[i] >> remainder_bits;
    par::map_chunks(keys.len(), par::MIN_PARALLEL, |range| {
        range
            .filter(|&i| i == 0 || quotient(i) != quotient(i - 1))
            .collect::<Vec<_>>()
    })
    .concat()
}

/// Where each run starts: run `k` has the canonical slot `quotient(k)` and `heads[k]` slots of
/// earlier runs before it in the sorted order (elements for the 3-bit layout, entry slots for a
/// counting filter, whose entries take several slots). The scan is the same either way.
pub(crate) fn run_starts(
    heads: &[usize],
    quotient: impl Fn(usize) -> usize + Sync,
    quotient_bits: u32,
    method: BuildMethod,
) -> Vec<usize> {
    let mut w: Vec<i64> = heads
        .iter()
        .enumerate()
        .map(|(k, &head)| quotient(k) as i64 - head as i64)
        .collect();
    match method {
        BuildMethod::ParallelMerging => parallel_merging(&mut w),
        BuildMethod::SequentialShifting => sequential_shifting(&mut w),
        BuildMethod::SegmentedLayouts => {
            let segment_slots = quotient_bits.max(1) as usize;
            let segment = |k: usize| quotient(k) / segment_slots;
            let bounds: Vec<usize> = (0..heads.len())
                .filter(|&k| k == 0 || segment(k) != segment(k - 1))
                .chain([heads.len()])
                .collect();
            segmented_layouts(&mut w, &bounds)
        }
    }
    // Every prefix maximum is at least the run's own `w`, so the start is at least its quotient.
    heads
        .iter()
        .zip(&w)
        .map(|(&head, &max)| (head as i64 + max) as usize)
        .collect()
}

/// Prefix maximum by pairwise merging of segments that double in length each round.
fn parallel_merging(w: &mut [i64]) {
    let mut width = 1;
    while width < w.len() {
        par::for_each_chunk_mut(w, 2 * width, |pair| {
            if pair.len() <= width {
                return;
            }
            let (left, right) = pair.split_at_mut(width);
            let carry = left[width - 1];
            // The right segment is already a prefix maximum, so it is non-decreasing: the carry
            // stops at the first value that reaches it.
            for value in right.iter_mut().take_while(|value| **value < carry) {
                *value = carry;
            }
        });
        width *= 2;
    }
}

/// Prefix maximum by rounds in which every run that overlaps its predecessor moves just past it.
fn sequential_shifting(w: &mut [i64]) {
    let mut active: Vec<usize> = (1..w.len()).collect();
    while !active.is_empty() {
        // Read every move against the state before the round, as parallel threads would.
        let moves = par::filter_map(&active, |&k| (w[k - 1] > w[k]).then_some((k, w[k - 1])));
        for &(k, value) in &moves {
            w[k] = value;
        }
        active = moves
            .iter()
            .map(|&(k, _)| k + 1)
            .filter(|&k| k < w.len())
            .collect();
    }
}

/// Prefix maximum by serial scans inside segments (`bounds` are their first indices, then the
/// end), with each round passing every segment's last value on to the next segment.
fn segmented_layouts(w: &mut [i64], bounds: &[usize]) {
    let mut segments = Vec::with_capacity(bounds.len());
    let mut rest = &mut *w;
    for pair in bounds.windows(2) {
        let (segment, tail) = rest.split_at_mut(pair[1] - pair[0]);
        segments.push(segment);
        rest = tail;
    }
    par::for_each(segments, |segment| {
        for i in 1..segment.len() {
            segment[i] = segment[i].max(segment[i - 1]);
        }
    });
    let segment_count = bounds.len() - 1;
    let mut active: Vec<usize> = (1..segment_count).collect();
    while !active.is_empty() {
        // Each segment's carry is the previous segment's last value before this round.
        let overflows = par::filter_map(&active, |&s| {
            let carry = w[bounds[s] - 1];
            let reached = w[bounds[s]..bounds[s + 1]].partition_point(|&value| value < carry);
            (reached > 0).then_some((s, reached, carry))
        });
        for &(s, reached, carry) in &overflows {
            w[bounds[s]..bounds[s] + reached].fill(carry);
        }
        active = overflows
            .iter()
            .filter(|&&(s, reached, _)| bounds[s] + reached == bounds[s + 1])
            .map(|&(s, _, _)| s + 1)
            .filter(|&s| s < segment_count)
            .collect();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The serial definition: `pos[i] = max(pos[i - 1] + 1, quotient[i])`, the reference the
    /// layout methods and the builds are checked against.
    pub(crate) fn serial_positions(quotients: &[usize]) -> Vec<usize> {
        let mut positions: Vec<usize> = Vec::with_capacity(quotients.len());
        for &q in quotients {
            positions.push(positions.last().map_or(q, |&p| q.max(p + 1)));
        }
        positions
    }

    fn positions(layout: &Layout) -> Vec<usize> {
        let mut out = Vec::new();
        for (k, &first) in layout.first.iter().enumerate() {
            out.extend(first..first + layout.heads[k + 1] - layout.heads[k]);
        }
        out
    }

    proptest! {
        #[test]
        fn every_method_computes_the_serial_scan(
            mut keys in proptest::collection::vec(0u64..(1 << 10), 0..400),
            dedupe in proptest::bool::ANY,
        ) {
            keys.sort_unstable();
            if dedupe {
                keys.dedup();
            }
            // 6 quotient bits, 4 remainder bits: 64 canonical slots, up to 16 per run.
            let quotients: Vec<usize> = keys.iter().map(|&k| (k >> 4) as usize).collect();
            let expected = serial_positions(&quotients);
            for method in BuildMethod::ALL {
                prop_assert_eq!(&positions(&layout(&keys, 6, 4, method)), &expected, "{:?}", method);
            }
        }
    }

    #[test]
    fn a_long_cluster_carries_through_many_segments() {
        // 200 elements on the first 3 canonical slots push runs far right across segments.
        let keys: Vec<u64> = (0..200u64).map(|i| ((i % 3) << 8) | (i / 3)).collect();
        let mut keys = keys;
        keys.sort_unstable();
        let mut more: Vec<u64> = (10..60u64).map(|q| q << 8).collect();
        keys.append(&mut more);
        keys.sort_unstable();
        let quotients: Vec<usize> = keys.iter().map(|&k| (k >> 8) as usize).collect();
        let expected = serial_positions(&quotients);
        for method in BuildMethod::ALL {
            assert_eq!(
                positions(&layout(&keys, 7, 8, method)),
                expected,
                "{method:?}"
            );
        }
    }
}
