//! Loom models of `CountingQf`'s region locks (Pandey et al.'s multi-threaded counting QF) on
//! one block boundary.
//!
//! 128 canonical slots of 4-bit remainders in blocks of 64, one block per region lock. Every
//! model starts with runs of quotients 62 and 63 that spill over the boundary into block 1 (its
//! offset is non-zero) and runs of 64 and 65 pushed right by them. An operation at 62 or 63
//! locks region 0 and then extends to region 1 in ascending order; its shift moves slots and
//! runend bits across the boundary and rewrites block 1's offset, while the other thread works
//! at 64 or 65 holding region 1 only. Queries of 64 and 65 stay inside region 1, so they read
//! optimistically (the seqlock check) while the writer shifts their runs, across the boundary
//! or (the one-block write path) inside block 1. One model puts both blocks in one region, so a
//! query of 63, whose run ends in block 1, reads the two blocks under one version check while
//! an insert shifts that run; in another two inserts into one run there plan from the entry
//! their one-block try located, which holds only while the lock is not let go in between.
//! Another merges the filter (reading it under all its region locks) while an insert shifts
//! across the boundary, and in another two batch inserts share new fingerprints, each of which
//! exactly one of them may count as new (as two `insert_if_absent` calls, single or in batches,
//! share one, which exactly one of them may store). After every interleaving: no lost insert
//! or increment, no false negative, exact counts, the table's invariants, no region left locked
//! and (loom checks it) no deadlock.
//!
//! The last three models use a second table ([`saturated_filter`]): six blocks of 2-bit
//! remainders in which the runs of block 0's quotients spill 288 slots into block 1, so block
//! 1's stored offset saturates and every operation on quotient 64 walks back into block 0. That
//! is the left extension: the operation releases the region it holds and locks again from the
//! lowest region up, after which everything it read before is stale. The other thread changes
//! the region to the left, alone (an insert inside block 0) or with the cluster (an insert that
//! shifts it through every region).

use conqf::{Count, CountingQf, Filter, Remove};
use loom::sync::Arc;

const Q: u32 = 7;
const R: u32 = 4;

/// The hash of fingerprint `(quotient, remainder)`.
fn key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << R) | remainder) << (64 - Q - R)
}

/// A filter with one block per region holding `keys` with their counts, built on one thread.
fn filter_with(keys: &[(u64, u64)]) -> Arc<CountingQf> {
    filter_in_regions_of(1, keys)
}

/// A filter with `region_blocks` blocks per region holding `keys`, built on one thread.
fn filter_in_regions_of(region_blocks: usize, keys: &[(u64, u64)]) -> Arc<CountingQf> {
    let filter = CountingQf::with_bits_and_region(Q, R, region_blocks).unwrap();
    for &(k, n) in keys {
        filter.insert_count_hash(k, n).unwrap();
    }
    filter.check_invariants().unwrap();
    Arc::new(filter)
}

/// Runs at 62 (slots 62-63), 63 (slots 64-65, past the boundary), 64 (slot 66, count 2 in two
/// slots) and 65 (slot 68).
fn boundary_runs() -> Vec<(u64, u64)> {
    vec![
        (key(62, 3), 1),
        (key(62, 9), 1),
        (key(63, 4), 1),
        (key(63, 12), 1),
        (key(64, 7), 2),
        (key(65, 0), 1),
    ]
}

/// Inserts the new fingerprint `insert` on one thread while another counts the two `queries`;
/// checks that the insert stored something new and, afterwards, the table's invariants, and
/// returns the counts the queries saw.
fn counts_during_insert(filter: &Arc<CountingQf>, insert: u64, queries: [u64; 2]) -> (u64, u64) {
    let (inserted, seen) = super::race(
        filter,
        move |x| x.insert_hash(insert).unwrap(),
        move |y| (y.count_hash(queries[0]), y.count_hash(queries[1])),
    );
    assert!(inserted);
    filter.check_invariants().unwrap();
    seen
}

/// At most two preemptions. Unlike the other modules' models, every operation here makes
/// hundreds of atomic accesses (bit-packed remainders, slot-by-slot shifts, the invariant
/// checker), each a loom branch, so the branch limit is raised; the lock protocol itself has few
/// contended points.
fn model(f: impl Fn() + Sync + Send + 'static) {
    super::check_with_branches(Some(2), Some(100_000), f);
}

/// [`model`] with one preemption instead of two when table words are read as read-modify-writes
/// (`CONQF_LOOM_RMW_LOADS`), for the model of two inserts that each shift through all six blocks
/// of the saturated table: every read of theirs is then a branch against the other thread's
/// writes, and at two preemptions that mode explored 267,652 executions (339 s in CI, the whole
/// mode's wall time: the other test thread ran every other model in 192 s) against 10,514 at one
/// and 8,666 in the plain mode at two. Both modes, so bounded, fail a left extension that locks the
/// lower region while holding its own (the two threads deadlock) and a retry that applies the
/// plan it made before relocking (both mutants tried on 2026-11-29).
fn model_one_preemption_with_rmw_loads(f: impl Fn() + Sync + Send + 'static) {
    let preemptions = if conqf::loom_loads_as_rmw() { 1 } else { 2 };
    super::check_with_branches(Some(preemptions), Some(100_000), f);
}

/// Two inserts into the cluster that crosses the boundary: (62, 5) shifts everything after it,
/// across the boundary, holding both regions; (65, 8) holds region 1 only. Neither is lost.
#[test]
fn inserts_across_the_block_boundary_lose_nothing() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (first, second) = super::race(
            &filter,
            |x| x.insert_hash(key(62, 5)).unwrap(),
            |y| y.insert_hash(key(65, 8)).unwrap(),
        );
        assert!(first && second);
        for k in [
            key(62, 3),
            key(62, 5),
            key(62, 9),
            key(63, 4),
            key(63, 12),
            key(65, 8),
        ] {
            assert_eq!(filter.count_hash(k), 1, "lost {k:#x}");
        }
        assert_eq!(filter.count_hash(key(64, 7)), 2);
        assert_eq!(filter.len(), 9);
        filter.check_invariants().unwrap();
    });
}

/// Two inserts into the run of 62 with both blocks in one region: each finds no empty slot
/// after its entry in block 0, so its general plan starts from the entry its one-block try
/// located, under the same hold of the one lock, and shifts the cluster into block 1. Had the
/// lock been let go between the try and the plan, the other insert could move the run under
/// the located entry. Neither is lost, and the run keeps its order.
#[test]
fn inserts_planned_from_a_located_entry_lose_nothing() {
    model(|| {
        let filter = filter_in_regions_of(2, &boundary_runs());
        let (first, second) = super::race(
            &filter,
            |x| x.insert_hash(key(62, 5)).unwrap(),
            |y| y.insert_hash(key(62, 7)).unwrap(),
        );
        assert!(first && second);
        for k in [key(62, 3), key(62, 5), key(62, 7), key(62, 9), key(65, 0)] {
            assert_eq!(filter.count_hash(k), 1, "lost {k:#x}");
        }
        assert_eq!(filter.len(), 9);
        filter.check_invariants().unwrap();
    });
}

/// One thread increments a fingerprint at 63 whose entry straddles the boundary and grows a
/// counter slot (count 2 to 3), shifting block 1; the other increments the one at 64 in block 1
/// (count 2 to 4, also a slot more). No increment is lost.
#[test]
fn increments_of_a_counter_on_the_boundary_are_not_lost() {
    model(|| {
        let filter = filter_with(&[(key(62, 3), 1), (key(63, 4), 2), (key(64, 7), 2)]);
        let (stored, ()) = super::race(
            &filter,
            |x| x.insert_hash(key(63, 4)).unwrap(),
            |y| y.insert_count_hash(key(64, 7), 2).unwrap(),
        );
        assert!(!stored);
        assert_eq!(filter.count_hash(key(63, 4)), 3);
        assert_eq!(filter.count_hash(key(64, 7)), 4);
        assert_eq!(filter.count_hash(key(62, 3)), 1);
        filter.check_invariants().unwrap();
    });
}

/// Two `insert_batch_concurrent` calls whose batches share two new fingerprints, one at 62
/// (its insert shifts the cluster across the boundary, holding both regions) and one at 65
/// (region 1 only), the second batch naming 65's twice: each update sees whether its
/// fingerprint was new under the region locks, so of the two batches exactly one counts each
/// new fingerprint (the returns add up to 2), and no copy is lost.
#[test]
fn racing_batches_count_each_new_fingerprint_once() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (first, second) = super::race(
            &filter,
            |x| {
                x.insert_batch_concurrent(&[key(62, 5), key(65, 8)])
                    .unwrap()
            },
            |y| {
                y.insert_batch_concurrent(&[key(65, 8), key(62, 5), key(65, 8)])
                    .unwrap()
            },
        );
        assert_eq!(
            first + second,
            2,
            "new fingerprints counted {first} + {second}"
        );
        assert_eq!(filter.count_hash(key(62, 5)), 2);
        assert_eq!(filter.count_hash(key(65, 8)), 3);
        assert_eq!(filter.count_hash(key(63, 12)), 1);
        assert_eq!(filter.len(), 7 + 5);
        filter.check_invariants().unwrap();
    });
}

/// Queries for keys of quotients 64 and 65 (region 1 only) while an insert at 62 shifts them by
/// one slot and rewrites the offset the queries start from: they still find them, exactly.
#[test]
fn query_racing_a_shift_across_the_boundary_has_no_false_negative() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let seen = counts_during_insert(&filter, key(62, 1), [key(64, 7), key(65, 0)]);
        assert_eq!(seen, (2, 1));
    });
}

/// With both blocks in one region, the run of 63 (slots 64-65) ends in the block after its
/// quotient's, and a query of it reads the two blocks at once, optimistically under the one
/// region's version, while an insert at 62 shifts that run a slot up across the boundary and
/// rewrites block 1's offset. The query still finds both entries, exactly.
#[test]
fn query_of_a_run_ending_in_the_next_block_of_its_region_has_no_false_negative() {
    model(|| {
        let filter = filter_in_regions_of(2, &boundary_runs());
        let seen = counts_during_insert(&filter, key(62, 1), [key(63, 4), key(63, 12)]);
        assert_eq!(seen, (1, 1));
    });
}

/// The same race inside one block: an insert at 64 (before the entry of (64, 7)) takes the
/// one-block write path, shifting the runs of 64 and 65 a slot up within block 1, while queries
/// of both read that block optimistically. Neither misses.
#[test]
fn query_racing_a_shift_inside_the_block_has_no_false_negative() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let seen = counts_during_insert(&filter, key(64, 3), [key(64, 7), key(65, 0)]);
        assert_eq!(seen, (2, 1));
        assert_eq!(filter.count_hash(key(64, 3)), 1);
    });
}

/// A removal inside one block: one copy of (64, 7) goes (its entry shrinks from two slots to
/// one) on the one-block write path, shifting the run of 65 a slot down within block 1, while
/// queries of both read that block optimistically. The query of 65 never misses, and the one of
/// (64, 7) sees the count before or after, never 0.
#[test]
fn query_racing_a_removal_inside_the_block_has_no_false_negative() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (removed, seen) = super::race(
            &filter,
            |x| x.remove_hash(key(64, 7)).unwrap(),
            |y| (y.count_hash(key(64, 7)), y.count_hash(key(65, 0))),
        );
        assert!(removed);
        assert!(matches!(seen, (1 | 2, 1)), "saw {seen:?}");
        assert_eq!(filter.count_hash(key(64, 7)), 1);
        assert_eq!(filter.count_hash(key(65, 0)), 1);
        filter.check_invariants().unwrap();
    });
}

/// A removal at 62 shifts the runs in block 1 back left while an insert at 64 (region 1 only)
/// shifts them right: the counts end exact and the offsets right.
#[test]
fn remove_and_insert_shifting_across_the_boundary_stay_exact() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (removed, ()) = super::race(
            &filter,
            |x| x.remove_hash(key(62, 3)).unwrap(),
            |y| y.insert_count_hash(key(64, 9), 7).unwrap(),
        );
        assert!(removed);
        assert_eq!(filter.count_hash(key(62, 3)), 0);
        assert_eq!(filter.count_hash(key(62, 9)), 1);
        assert_eq!(filter.count_hash(key(64, 9)), 7);
        assert_eq!(filter.count_hash(key(64, 7)), 2);
        assert_eq!(filter.count_hash(key(65, 0)), 1);
        filter.check_invariants().unwrap();
    });
}

/// A merge reads its input while an insert at 62 shifts the runs of 63-65 a slot up across the
/// boundary, holding both regions. The merge holds every region of the filter it reads, so the
/// union has every key stored before, with its count, and the new key once or not at all; the
/// filter itself loses nothing. Without those locks a merge that met the shift half done ended
/// its walk early and dropped the later keys (checked: this model then fails).
#[test]
fn merge_racing_a_shift_across_the_boundary_keeps_every_stored_key() {
    use conqf::Merge;
    model(|| {
        let filter = filter_with(&boundary_runs());
        let other = CountingQf::with_bits_and_region(Q, R, 1).unwrap();
        other.insert_hash(key(100, 2)).unwrap();
        let (inserted, merged) = super::race(
            &filter,
            |x| x.insert_hash(key(62, 1)).unwrap(),
            move |y| y.merge(&other).unwrap(),
        );
        assert!(inserted);
        for (k, n) in boundary_runs() {
            assert_eq!(merged.count_hash(k), n, "the merge lost copies of {k:#x}");
            assert_eq!(filter.count_hash(k), n, "the filter lost copies of {k:#x}");
        }
        assert_eq!(merged.count_hash(key(100, 2)), 1);
        assert!(merged.count_hash(key(62, 1)) <= 1);
        assert_eq!(filter.count_hash(key(62, 1)), 1);
        merged.check_invariants().unwrap();
        filter.check_invariants().unwrap();
    });
}

/// `len` while an insert in the same region carries the region's count of copies past
/// `u64::MAX` (its two words go from `(u64::MAX, 0)` to `(0, 1)`): `len` reads them through the
/// region's seqlock, so it sees the count before or after (both saturate to `usize::MAX`),
/// never the new low word with the old high one (0, which `is_empty` would call empty).
#[test]
fn len_never_reads_a_half_written_count_of_copies() {
    model(|| {
        let filter = filter_with(&[(key(64, 7), u64::MAX)]);
        let (inserted, (len, empty)) = super::race(
            &filter,
            |x| x.insert_hash(key(65, 0)).unwrap(),
            |y| (y.len(), y.is_empty()),
        );
        assert!(inserted);
        assert_eq!((len, empty), (usize::MAX, false));
        assert_eq!(filter.len(), usize::MAX);
        filter.check_invariants().unwrap();
    });
}

/// `to_bytes` (through `&self`, under every region lock) while an insert at 62 shifts the runs
/// of 63-65 across the block boundary: the bytes decode (the decoder checks every invariant)
/// to the table before the insert or after it, never a half-shifted one.
#[test]
fn snapshot_racing_a_shift_across_the_boundary_is_the_table_between_operations() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (inserted, bytes) = super::race(
            &filter,
            |x| x.insert_hash(key(62, 1)).unwrap(),
            |y| y.to_bytes(),
        );
        assert!(inserted);
        let snapshot = CountingQf::from_bytes(&bytes).unwrap();
        for (k, n) in boundary_runs() {
            assert_eq!(
                snapshot.count_hash(k),
                n,
                "the snapshot lost copies of {k:#x}"
            );
        }
        let new = snapshot.count_hash(key(62, 1));
        assert!(new <= 1);
        let stored: u64 = boundary_runs().iter().map(|&(_, n)| n).sum();
        assert_eq!(snapshot.len() as u64, stored + new);
        snapshot.check_invariants().unwrap();
    });
}

/// The race `LocallyLockedQf` had (`a_removal_behind_the_plan_walk_hides_an_empty_slot`), here:
/// an insert at 62, holding region 0, plans up to the cluster's first empty slot (69) in region
/// 1 before it holds that region, while the other thread, in region 1 only, removes (65, 0)
/// (emptying slot 68, which the plan may have passed), shrinks (64, 7) from two copies to one
/// and inserts (65, 8) (refilling). The insert must act only on a plan made under every region
/// it read.
#[test]
fn removals_behind_the_plan_to_the_empty_slot_leave_the_insert_intact() {
    super::check_with_branches(Some(2), Some(100_000), || {
        let filter = filter_with(&boundary_runs());
        let (inserted, ()) = super::race(
            &filter,
            |x| x.insert_hash(key(62, 5)).unwrap(),
            |t| {
                assert!(t.remove_hash(key(65, 0)).unwrap());
                assert!(t.remove_hash(key(64, 7)).unwrap());
                assert!(t.insert_hash(key(65, 8)).unwrap());
            },
        );
        assert!(inserted);
        filter.check_invariants().unwrap();
        for (k, n) in [
            (key(62, 3), 1),
            (key(62, 5), 1),
            (key(62, 9), 1),
            (key(63, 4), 1),
            (key(63, 12), 1),
            (key(64, 7), 1),
            (key(65, 8), 1),
            (key(65, 0), 0),
        ] {
            assert_eq!(filter.count_hash(k), n, "count of {k:#x}");
        }
    });
}

/// Quotient bits of the filter whose block 1 has a saturated offset: 256 canonical slots and
/// the overflow tail make 6 blocks (384 slots), the smallest table with room for a cluster that
/// spills 255 slots or more into block 1.
const SATURATED_Q: u32 = 8;
/// Remainder bits of that filter: with 2-bit slots a counter takes the most slots per copy
/// (base 3), so eight entries fill the cluster.
const SATURATED_R: u32 = 2;
/// A count whose entry takes 41 slots at `r = 2` (42 for remainder 1, 43 for remainder 0):
/// `BIG - 3 = 3^38` has 39 base-3 digits. The seven such entries below stay under `2^64`
/// copies in all, so `len` is exact.
const BIG: u64 = 3 + 3u64.pow(38);

/// The hash of fingerprint `(quotient, remainder)` in the filter of [`saturated_filter`].
fn saturated_key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << SATURATED_R) | remainder) << (64 - SATURATED_Q - SATURATED_R)
}

/// The entries of [`saturated_filter`] as `(quotient, remainder, count)`, in slot order: the
/// cluster of quotients 61 to 63 starts at slot 61 and ends at slot 351, (61, 3) in slots
/// 61-101, (62, 1) in 102, (62, 2) and (62, 3) in 103-184, 63's four counters in 185-351;
/// (64, 1) follows in slot 352. So runs of block 0's quotients use 288 slots of block 1 (its
/// stored offset saturates at 255), while blocks 2 to 5 keep exact offsets (225, 161, 97, 33).
/// Remainder 0 of 62 and quotient 10 are free for the other thread.
fn saturated_entries() -> Vec<(u64, u64, u64)> {
    let mut entries = vec![(61, 3, BIG), (62, 1, 1), (62, 2, BIG), (62, 3, BIG)];
    entries.extend((0..4).map(|x| (63, x, BIG)));
    entries.push((64, 1, 1));
    entries
}

/// The bytes ([`CountingQf::to_bytes`]) of a filter of [`SATURATED_Q`] and [`SATURATED_R`]
/// bits, one block per region, holding [`saturated_entries`]. Built once, in a model of its own
/// (loom's atomics exist only inside one): the inserts that build it make thousands of atomic
/// accesses, which every execution of every model would repeat, while
/// [`saturated_filter`] copies the table's 25 words.
fn saturated_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let built = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let out = built.clone();
        let mut builder = loom::model::Builder::new();
        builder.max_branches = 100_000;
        builder.check(move || {
            let filter = CountingQf::with_bits_and_region(SATURATED_Q, SATURATED_R, 1).unwrap();
            for (quotient, remainder, n) in saturated_entries() {
                let k = saturated_key(quotient, remainder);
                filter.insert_count_hash(k, n).unwrap();
            }
            filter.check_invariants().unwrap();
            *out.lock().unwrap() = filter.to_bytes();
        });
        let mut bytes = built.lock().unwrap();
        std::mem::take(&mut *bytes)
    })
}

/// The filter of [`saturated_bytes`], read back.
///
/// Any operation on quotient 64 finds block 1's offset saturated and recomputes it from block
/// 0's runends (`runs::spill`): holding region 1 only, its walk touches block 0, so it must
/// extend its locks to the left, releasing region 1 and locking regions 0 to 5 from the lowest
/// (its walk also reads up to block 5, where 64's run lies), and walk again.
fn saturated_filter(bytes: &[u8]) -> Arc<CountingQf> {
    Arc::new(CountingQf::from_bytes(bytes).unwrap())
}

/// Checks that `filter` holds exactly `entries`, `(quotient, remainder, count)`: in its table
/// (read in one pass, cheaper under loom than a lookup of each), in `len` and in `distinct`;
/// and the table's invariants, which include that no region is left locked.
fn assert_holds_exactly(filter: &CountingQf, entries: &[(u64, u64, u64)]) {
    let mut expected = entries.to_vec();
    expected.sort_unstable();
    let stored: Vec<(u64, u64, u64)> = filter
        .counts()
        .map(|(fingerprint, n)| (fingerprint.quotient, fingerprint.remainder, n))
        .collect();
    assert_eq!(stored, expected, "the stored entries and counts");
    let copies: u64 = entries.iter().map(|&(_, _, n)| n).sum();
    assert_eq!(
        (filter.len() as u64, filter.distinct()),
        (copies, entries.len())
    );
    filter.check_invariants().unwrap();
}

/// The left extension racing a writer of the regions it releases. An insert of (64, 2) holds
/// region 1, walks back into block 0 for block 1's saturated offset, and so releases region 1
/// to lock regions 0 to 5 from the lowest; the other thread inserts (62, 0), which holds region
/// 0 and extends to the right over regions 1 to 5 (waiting for region 1 while the first insert
/// holds it), shifting the whole cluster, (64, 1) included, a slot up. When that insert runs
/// between the release and the relock, everything the first walk read is stale: the insert
/// must plan again under regions 0 to 5. Both inserts land, every count stays exact, the
/// invariants hold and no region stays locked; and (loom checks it) the two threads, each
/// holding the region the other waits for, do not deadlock, because the left extension waits
/// holding nothing.
#[test]
fn an_insert_that_looks_back_a_block_plans_again_after_relocking() {
    let bytes = saturated_bytes();
    model_one_preemption_with_rmw_loads(move || {
        let filter = saturated_filter(bytes);
        let (first, second) = super::race(
            &filter,
            |x| x.insert_hash(saturated_key(64, 2)).unwrap(),
            |y| y.insert_hash(saturated_key(62, 0)).unwrap(),
        );
        assert!(first && second);
        let mut entries = saturated_entries();
        entries.extend([(64, 2, 1), (62, 0, 1)]);
        assert_holds_exactly(&filter, &entries);
    });
}

/// The left extension racing a writer of the released region alone, on the removal path: a
/// removal of (64, 1) (its run the only one of block 1) walks back into block 0 for block 1's
/// saturated offset, extends to regions 0 to 5, and, the run's last slot moving, recomputes the
/// offsets of blocks 2 to 5 from block 0's runends again while writing (the write's reach to
/// the left, which must lie inside the plan's). The other thread inserts (10, 1), a run of its
/// own in block 0, holding region 0 only: it writes block 0's `occupieds` and `runends` words
/// one after the other, so a walk between the two stores counts the runs of block 0 wrong and
/// places 64's run elsewhere (inside 63's run, or nowhere). Only the walk under region 0's
/// lock may be acted on: the removal takes out (64, 1) and nothing else, the insert lands,
/// every count stays exact, the invariants hold and no region stays locked.
#[test]
fn a_removal_that_looks_back_a_block_reads_it_only_under_its_lock() {
    let bytes = saturated_bytes();
    model(move || {
        let filter = saturated_filter(bytes);
        let (removed, inserted) = super::race(
            &filter,
            |x| x.remove_hash(saturated_key(64, 1)).unwrap(),
            |y| y.insert_hash(saturated_key(10, 1)).unwrap(),
        );
        assert!(removed && inserted);
        let mut entries = saturated_entries();
        entries.retain(|&(quotient, _, _)| quotient != 64);
        entries.push((10, 1, 1));
        assert_holds_exactly(&filter, &entries);
    });
}

/// The lookup's left extension: a query of (64, 1) cannot answer from block 1 (its offset is
/// saturated), so it walks optimistically, leaves region 1 (back into block 0 for the offset),
/// locks region 1 and walks again, and, that walk still reaching block 0, releases region 1 to
/// lock regions 0 to 5 from the lowest. Meanwhile the other thread inserts (10, 1) in block 0,
/// holding region 0 only: neither region 1's version nor its lock sees that write, so only an
/// answer read while holding region 0 too may be given. The query finds exactly one copy (no
/// false negative, and not the count of a neighbouring run that a half-written block 0 points
/// it to), the insert lands, the invariants hold and no region stays locked.
#[test]
fn a_lookup_that_looks_back_a_block_answers_only_under_every_lock() {
    let bytes = saturated_bytes();
    model(move || {
        let filter = saturated_filter(bytes);
        let (seen, inserted) = super::race(
            &filter,
            |x| x.count_hash(saturated_key(64, 1)),
            |y| y.insert_hash(saturated_key(10, 1)).unwrap(),
        );
        assert_eq!(seen, 1);
        assert!(inserted);
        let mut entries = saturated_entries();
        entries.push((10, 1, 1));
        assert_holds_exactly(&filter, &entries);
    });
}

/// Two `insert_if_absent` calls of one new fingerprint at 62, whose insert shifts the cluster
/// across the boundary holding both regions: the look and the store are one update under the
/// region locks, so exactly one call stores it and the count is 1. Fails if the call looks
/// first and then inserts (both can store: count 2).
#[test]
fn racing_inserts_if_absent_of_one_fingerprint_store_it_once() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (first, second) = super::race(
            &filter,
            |x| x.insert_if_absent_hash(key(62, 5)).unwrap(),
            |y| y.insert_if_absent_hash(key(62, 5)).unwrap(),
        );
        assert!(first != second, "stored by {first} and {second}");
        assert_eq!(filter.count_hash(key(62, 5)), 1);
        assert_eq!(filter.len(), 8);
        filter.check_invariants().unwrap();
    });
}

/// Two `insert_batch_if_absent` calls whose batches share the new fingerprint at 62 (its insert
/// shifts the cluster across the boundary, holding both regions), the second also naming
/// 64's, stored before: each update looks and stores under the region locks, so exactly one
/// batch stores 62's (the answers add up to 1), with count 1, and 64's count stays 2. Fails if
/// a batch looks first and then inserts.
#[test]
fn racing_batches_if_absent_store_a_new_fingerprint_once() {
    model(|| {
        let filter = filter_with(&boundary_runs());
        let (first, second) = super::race(
            &filter,
            |x| x.insert_batch_if_absent(&[key(62, 5)]).unwrap(),
            |y| y.insert_batch_if_absent(&[key(64, 7), key(62, 5)]).unwrap(),
        );
        assert_eq!(first + second, 1, "stored {first} + {second}");
        assert_eq!(filter.count_hash(key(62, 5)), 1);
        assert_eq!(filter.count_hash(key(64, 7)), 2);
        assert_eq!(filter.len(), 8);
        filter.check_invariants().unwrap();
    });
}
