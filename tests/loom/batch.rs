//! Loom models of the parallel batch writes (paper 004 §IV-B, §IV-D): writers of different
//! superclusters (an insert round) or clusters (a removal's sweeps) run at once and publish each
//! group with a CAS that keeps the other lanes. Neighbouring regions share 64-bit groups here on
//! purpose. After every interleaving: nothing lost, nothing left behind, the invariants of the
//! sequential table hold.
//!
//! Tables have 8 canonical slots of 13-bit remainders (16-bit slots, 4 per group), but for the
//! `CountingQf` build's: four blocks of 64 slots, two writers of two blocks each.

use conqf::batch_loom::{
    racing_cluster_sweeps, racing_counting_build, racing_insert_sweeps, racing_segmented_build,
    racing_supercluster_inserts,
};
use conqf::{Count, CountingQf, Filter, SequentialQf};

const Q: u32 = 3;
const R: u32 = 13;

/// The hash of fingerprint `(quotient, remainder)`.
fn key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << R) | remainder) << (64 - Q - R)
}

fn filter_with(keys: &[u64]) -> SequentialQf {
    let mut filter = SequentialQf::with_bits(Q, R).unwrap();
    for &k in keys {
        assert!(filter.insert_hash(k).unwrap());
    }
    filter
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    super::check(Some(3), f);
}

/// How a batch removal's sweep may treat a cluster, as `one_by_one_slots`: every cluster one key
/// at a time, or every cluster rewritten whole.
const SWEEPS: [usize; 2] = [0, 1 << 20];

/// Checks the filter holds exactly `expected`, and its invariants.
fn holds_exactly(filter: &SequentialQf, expected: &[u64]) {
    filter.check_invariants().unwrap();
    let mut want: Vec<_> = expected
        .iter()
        .map(|&h| conqf::Fingerprint::split(h, Q, R))
        .collect();
    want.sort();
    assert_eq!(filter.fingerprints().collect::<Vec<_>>(), want);
}

/// Two inserts in neighbouring superclusters whose slots share group 0: one shifts an element
/// into slot 1, the other fills slot 2. Neither group write may lose the other's lanes.
#[test]
fn neighbouring_superclusters_in_one_group_lose_no_insert() {
    model(|| {
        let before = [key(0, 20)];
        let new = [key(0, 10), key(2, 5)];
        let (filter, stored) = racing_supercluster_inserts(filter_with(&before), &new);
        assert_eq!(stored, 2);
        holds_exactly(&filter, &[before[0], new[0], new[1]]);
    });
}

/// An insert that shifts a run across the group boundary (slots 2-3 into slot 4) races one
/// that fills slot 5 of the same second group.
#[test]
fn a_shift_across_groups_keeps_the_neighbours_insert() {
    model(|| {
        let before = [key(2, 30), key(3, 30)];
        let new = [key(2, 10), key(5, 7)];
        let (filter, _) = racing_supercluster_inserts(filter_with(&before), &new);
        holds_exactly(&filter, &[before[0], before[1], new[0], new[1]]);
    });
}

/// A batch insert's sweeps of two stretches that share group 0: the fence is slot 2 (empty, the
/// canonical slot of a key that waits for the calling thread); the left sweep shifts (0, 20)
/// into slot 1, the right one fills slot 3. Neither group write may lose the other's lanes.
#[test]
fn insert_sweeps_sharing_a_group_lose_no_insert() {
    model(|| {
        let before = [key(0, 20)];
        let new = [key(0, 10), key(2, 5), key(3, 7)];
        let (filter, stored) = racing_insert_sweeps(filter_with(&before), &new, 1);
        assert_eq!(stored, 3);
        holds_exactly(&filter, &[before[0], new[0], new[1], new[2]]);
    });
}

/// The left stretch's inserts would fill its fence (slot 2, the first empty slot after its
/// cluster of slots 0-1), so they wait, while the right sweep fills slot 3 of the same group;
/// the calling thread then inserts them, shifting (3, 1) along.
#[test]
fn inserts_that_would_fill_the_fence_wait() {
    model(|| {
        let before = [key(0, 20), key(1, 3)];
        let new = [key(0, 10), key(1, 5), key(3, 1)];
        let (filter, stored) = racing_insert_sweeps(filter_with(&before), &new, 1);
        assert_eq!(stored, 3);
        let all: Vec<u64> = before.iter().chain(&new).copied().collect();
        holds_exactly(&filter, &all);
    });
}

/// Two removals in neighbouring clusters of one group, swept by two threads (one key at a time,
/// then each cluster rewritten whole): the left sweep reads the right cluster's start to find
/// its cluster's end (and, one key at a time, to stop its shift) while the right one empties
/// that slot. The left cluster must end there either way, and both removals must land.
#[test]
fn a_removal_reading_the_next_cluster_start_stops_there() {
    for sweep in SWEEPS {
        model(move || {
            let stay = [key(0, 20), key(3, 1)];
            let gone = [key(0, 10), key(2, 10)];
            let filter = filter_with(&[stay[0], stay[1], gone[0], gone[1]]);
            let (filter, removed) = racing_cluster_sweeps(filter, &gone, 1, sweep);
            assert_eq!(removed, 2);
            holds_exactly(&filter, &stay);
        });
    }
}

/// Chunks of one key each would give the cluster of slots 0-2 (quotients 0 and 1) to two
/// threads; the cut moves past it, and the next chunk's thread removes from the cluster of slots
/// 3-4, whose start shares group 0 with it. Both ways of sweeping, as above.
#[test]
fn a_cluster_with_keys_in_two_chunks_is_swept_by_one() {
    for sweep in SWEEPS {
        model(move || {
            let stay = [key(0, 20), key(3, 2)];
            let gone = [key(0, 10), key(1, 6), key(3, 1)];
            let all: Vec<u64> = stay.iter().chain(&gone).copied().collect();
            let (filter, removed) = racing_cluster_sweeps(filter_with(&all), &gone, 1, sweep);
            assert_eq!(removed, 3);
            holds_exactly(&filter, &stay);
        });
    }
}

/// The write pass of a segmented bulk build, in two segments. The first fills slots 0-4; the
/// second sets slot 3's occupied bit (group 0) and writes slots 5 and 6 (group 1). Both groups
/// are shared and must be OR-ed by both segments: a plain store by either into group 0 or
/// group 1 could drop the other's bits. (Group 1 starts right after the first segment's last
/// slot but one, so an off-by-one in the second segment's exclusive groups shows too.)
#[test]
fn segments_sharing_a_group_lose_no_bit() {
    model(|| {
        let first = [key(0, 10), key(0, 20), key(1, 5), key(1, 6), key(2, 1)];
        let second = [key(3, 2), key(6, 1)];
        let keys: Vec<u64> = first.iter().chain(&second).copied().collect();
        let filter = racing_segmented_build(Q, R, &keys, first.len());
        holds_exactly(&filter, &keys);
    });
}

/// The write pass of a `CountingQf` bulk build in two threads, blocks 0-1 and 2-3 of a
/// 256-slot table. Runs spill over each block boundary: 63 into block 1, 127 into block 2 (so
/// the runs of 128 and 129 start past their quotients), 191 into block 3. Each thread writes its
/// blocks' spill bytes, which share one word, and the runs' slots on its side of the boundary;
/// only the second sets the occupied bits of 128 and 129, a plain read-modify-write of block
/// 2's word. The result must be, byte for byte, the table one-by-one inserts give. Fails if the
/// first thread also sets the occupied bit of the quotient at its end (`<=` for `<`: it
/// overwrites the second's bits), or if a spill is stored with a plain read-modify-write of
/// the shared word.
#[test]
fn counting_build_writers_of_neighbouring_blocks_lose_no_bit() {
    const Q: u32 = 8;
    const R: u32 = 4;
    let key = |quotient: u64, remainder: u64| ((quotient << R) | remainder) << (64 - Q - R);
    let entries = [
        (63, 1, 1),
        (63, 2, 1),
        (63, 3, 1),
        (126, 5, 1),
        (127, 1, 1),
        (127, 9, 2),
        (128, 4, 1),
        (129, 6, 3),
        (191, 2, 1),
        (191, 7, 2),
    ];
    let hashes: Vec<u64> = entries
        .iter()
        .flat_map(|&(quotient, remainder, count)| {
            std::iter::repeat_n(key(quotient, remainder), count)
        })
        .collect();
    check_counting_build(move || {
        // Built in the model: loom's atomics exist only inside it.
        let one_by_one = CountingQf::with_bits_and_region(Q, R, 1).unwrap();
        for &hash in &hashes {
            one_by_one.insert_hash(hash).unwrap();
        }
        let expected = one_by_one.to_bytes();
        let built = racing_counting_build(Q, R, &hashes, 2);
        built.check_invariants().unwrap();
        assert_eq!(built.count_hash(key(129, 6)), 3);
        assert!(
            built.to_bytes() == expected,
            "not the table of one-by-one inserts"
        );
    });
}

/// Every interleaving, unbounded: the two writers share only the spill word (and, in the
/// mutants, an occupied word), which loom explored in 33,441 executions (7 s here).
fn check_counting_build(f: impl Fn() + Sync + Send + 'static) {
    super::check_with_branches(None, Some(100_000), f);
}
