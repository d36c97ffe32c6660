//! Loom models of `ExternallyLockedQf` (paper 000 §3, §5): the region locks on a tiny table.
//!
//! 8 canonical slots of 13-bit remainders (16-bit slots, 4 per group) and regions of 4 slots, one
//! group each: region 0 is slots 0-3, region 1 slots 4-7 (the overflow tail has more regions,
//! which these keys never reach). Every model puts a cluster across the boundary between regions
//! 0 and 1, so operations extend their locks to the right (walking to the run or the empty slot
//! in region 1) and to the left (a canonical slot in region 1 whose cluster starts in region 0:
//! release, lock both from region 0 up, walk again). After every interleaving: no lost insert,
//! no false negative, the sequential table's invariants hold, no region is left locked and
//! (loom checks this itself) no deadlock. The racing operations run on two spawned threads.
//! One model (`extension_left_and_right_at_once_locks_the_right_region`) doubles the table to
//! give region 2 canonical slots of its own.

use conqf::{ExternallyLockedQf, Filter, Remove, SequentialQf};
use loom::sync::Arc;
use loom::thread;

const Q: u32 = 3;
const R: u32 = 13;
const REGION: usize = 4;

/// The hash of fingerprint `(quotient, remainder)`.
fn key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << R) | remainder) << (64 - Q - R)
}

/// A filter holding `keys`, built without concurrency.
fn filter_with(keys: &[u64]) -> Arc<ExternallyLockedQf> {
    filter_of(Q, keys)
}

/// [`filter_with`] over `2^q` canonical slots.
fn filter_of(q: u32, keys: &[u64]) -> Arc<ExternallyLockedQf> {
    let mut sequential = SequentialQf::with_bits(q, R).unwrap();
    for &k in keys {
        assert!(sequential.insert_hash(k).unwrap());
    }
    let filter = ExternallyLockedQf::from_sequential_with_region(sequential, REGION).unwrap();
    assert_eq!(filter.region_slots(), REGION);
    Arc::new(filter)
}

/// Explores every interleaving (no preemption bound): these models finish in seconds.
fn model(f: impl Fn() + Sync + Send + 'static) {
    super::check(None, f);
}

/// Two inserts into one cluster that crosses from region 0 into region 1: (2, 10) locks
/// region 0 and extends right to the empty slot in region 1; (4, 10) locks region 1 and
/// extends left to the cluster start in region 0. Neither may be lost.
#[test]
fn inserts_across_the_region_boundary_lose_nothing() {
    model(|| {
        // Slots 2-3: run of 2; slot 4: run of 3 (shifted); slot 5: run of 4 (shifted).
        let filter = filter_with(&[key(2, 50), key(2, 60), key(3, 50), key(4, 50)]);
        let (first, second) = super::race(
            &filter,
            |x| x.insert_hash(key(2, 10)).unwrap(),
            |y| y.insert_hash(key(4, 10)).unwrap(),
        );
        assert!(first && second);
        for k in [
            key(2, 10),
            key(2, 50),
            key(2, 60),
            key(3, 50),
            key(4, 10),
            key(4, 50),
        ] {
            assert!(filter.contains_hash(k), "lost {k:#x}");
        }
        assert_eq!(filter.len(), 6);
        filter.check_invariants().unwrap();
    });
}

/// The same fingerprint inserted twice at once, its run crossing the boundary: exactly one
/// insert stores it.
#[test]
fn racing_duplicate_inserts_store_once() {
    model(|| {
        let filter = filter_with(&[key(2, 1), key(2, 2), key(3, 9)]);
        let (a, b) = super::race(
            &filter,
            |x| x.insert_hash(key(3, 5)).unwrap(),
            |y| y.insert_hash(key(3, 5)).unwrap(),
        );
        assert!(a ^ b, "exactly one insert stores the fingerprint");
        assert_eq!(filter.len(), 4);
        filter.check_invariants().unwrap();
    });
}

/// A query from region 1 whose cluster starts in region 0, while an insert at the head of that
/// cluster shifts everything right across the boundary: the query must find its key.
#[test]
fn contains_during_a_shift_across_regions_never_misses() {
    model(|| {
        // Slots 2-4: run of 2; slot 5: (4, 1), shifted from region 1's slot 4.
        let filter = filter_with(&[key(2, 1), key(2, 2), key(2, 3), key(4, 1)]);
        let (writer, reader) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || writer.insert_hash(key(2, 0)).unwrap());
        let u = thread::spawn(move || {
            assert!(reader.contains_hash(key(4, 1)));
            // Moves from slot 3 (region 0) to slot 4 (region 1).
            assert!(reader.contains_hash(key(2, 2)));
        });
        u.join().unwrap();
        assert!(t.join().unwrap());
        assert!(filter.contains_hash(key(2, 0)));
        filter.check_invariants().unwrap();
    });
}

/// A removal that shifts a cluster left across the boundary while a key of the same cluster,
/// canonical in region 1, is queried: the query must find it, and the removed key is gone.
#[test]
fn contains_during_a_removal_across_regions_never_misses() {
    model(|| {
        // Slots 2-3: run of 2; slot 4: run of 3; slot 5: run of 4.
        let filter = filter_with(&[key(2, 1), key(2, 2), key(3, 3), key(4, 4)]);
        let (writer, reader) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || writer.remove_hash(key(2, 1)).unwrap());
        let u = thread::spawn(move || {
            assert!(reader.contains_hash(key(4, 4)));
            assert!(reader.contains_hash(key(3, 3)));
        });
        u.join().unwrap();
        assert!(t.join().unwrap());
        assert!(!filter.contains_hash(key(2, 1)));
        assert_eq!(filter.len(), 3);
        filter.check_invariants().unwrap();
    });
}

/// A removal from region 0 racing an insert canonical in region 1 into the same cluster.
#[test]
fn removal_races_an_insert_across_regions() {
    model(|| {
        let filter = filter_with(&[key(2, 1), key(2, 2), key(3, 3), key(4, 4)]);
        let (removed, inserted) = super::race(
            &filter,
            |a| a.remove_hash(key(2, 2)).unwrap(),
            |b| b.insert_hash(key(4, 9)).unwrap(),
        );
        assert!(removed && inserted);
        for k in [key(2, 1), key(3, 3), key(4, 4), key(4, 9)] {
            assert!(filter.contains_hash(k), "lost {k:#x}");
        }
        assert!(!filter.contains_hash(key(2, 2)));
        filter.check_invariants().unwrap();
    });
}

/// Keys whose supercluster starts in region 0 (run of 2 in slots 2-3) and continues with a
/// cluster that starts in region 1 (run of 4 in slots 4-5, run of 5 in slot 6): an insert into
/// region 0 shifts region 1, while operations canonical in region 1 never look into region 0.
const SPLIT_SUPERCLUSTER: [(u64, u64); 5] = [(2, 1), (2, 2), (4, 1), (4, 2), (5, 1)];

fn split_supercluster() -> Arc<ExternallyLockedQf> {
    let keys: Vec<u64> = SPLIT_SUPERCLUSTER.iter().map(|&(q, r)| key(q, r)).collect();
    filter_with(&keys)
}

/// An insert from region 0 whose shift runs into region 1 must lock region 1 before writing,
/// or it races an insert that holds only region 1.
#[test]
fn shift_into_the_next_region_locks_it() {
    model(|| {
        let filter = split_supercluster();
        let (first, second) = super::race(
            &filter,
            |a| a.insert_hash(key(2, 0)).unwrap(),
            |b| b.insert_hash(key(5, 0)).unwrap(),
        );
        assert!(first && second);
        for (q, r) in SPLIT_SUPERCLUSTER.into_iter().chain([(2, 0), (5, 0)]) {
            assert!(filter.contains_hash(key(q, r)), "lost ({q}, {r})");
        }
        filter.check_invariants().unwrap();
    });
}

/// Queries canonical in region 1 whose walks continue into region 2, while an insert from
/// region 0 shifts all three regions, one group (= one region) at a time: neither may see
/// region 1 after the shift and region 2 before it.
#[test]
fn contains_across_two_regions_during_a_shift_from_the_left() {
    model(|| {
        // Slots 2-3: run of 2; slots 4-7: run of 4 (cluster start 4); slot 8: run of 5.
        let filter = filter_with(&[
            key(2, 1),
            key(2, 2),
            key(4, 1),
            key(4, 2),
            key(4, 3),
            key(4, 4),
            key(5, 1),
        ]);
        let (writer, reader) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || writer.insert_hash(key(2, 0)).unwrap());
        // (4, 4) moves from slot 7 to slot 8: a query that read group 1 after the shift and
        // group 2 before it would end the run at slot 7 and miss it.
        let u = thread::spawn(move || {
            assert!(reader.contains_hash(key(4, 4)));
            assert!(reader.contains_hash(key(5, 1)));
        });
        u.join().unwrap();
        assert!(t.join().unwrap());
        filter.check_invariants().unwrap();
    });
}

/// 8-bit remainders: 11-bit slots, 5 per group, so the requested 4-slot region rounds up to one
/// group of 5 slots (region 0 is slots 0-4, region 1 slots 5-9) and slots per group do not divide
/// the request. The same race as `shift_into_the_next_region_locks_it` across that boundary:
/// an insert from region 0 shifts region 1, an insert canonical in region 1 holds only it. A
/// group shared by two regions would let the two lock holders write one word at once.
#[test]
fn shift_into_the_next_region_with_five_slots_per_group() {
    const R8: u32 = 8;
    fn key8(quotient: u64, remainder: u64) -> u64 {
        ((quotient << R8) | remainder) << (64 - Q - R8)
    }
    // Slots 3-4: run of 3; slots 5-6: run of 5 (cluster start 5); slot 7: run of 6.
    const KEYS: [(u64, u64); 5] = [(3, 1), (3, 2), (5, 1), (5, 2), (6, 1)];
    model(|| {
        let mut sequential = SequentialQf::with_bits(Q, R8).unwrap();
        for (q, r) in KEYS {
            assert!(sequential.insert_hash(key8(q, r)).unwrap());
        }
        let filter = ExternallyLockedQf::from_sequential_with_region(sequential, REGION).unwrap();
        assert_eq!(filter.region_slots(), 5);
        let filter = Arc::new(filter);
        let (first, second) = super::race(
            &filter,
            |a| a.insert_hash(key8(3, 0)).unwrap(),
            |b| b.insert_hash(key8(6, 0)).unwrap(),
        );
        assert!(first && second);
        for (q, r) in KEYS.into_iter().chain([(3, 0), (6, 0)]) {
            assert!(filter.contains_hash(key8(q, r)), "lost ({q}, {r})");
        }
        filter.check_invariants().unwrap();
    });
}

/// `merge` (through `&self`, under every region lock of each filter in turn) while an insert
/// from region 0 shifts the cluster across the boundary into region 1: the union holds every
/// key stored before, whichever side of the insert the merge's read falls, and the insert's
/// key if the insert finished first; the result is a valid table. A merge that read the
/// table without the locks could see region 0 after the shift and region 1 before it, and
/// lose the key the shift carries across the boundary: planted, it lost (2, 2), and only the
/// read-modify-write pass (`CONQF_LOOM_RMW_LOADS=1`) catches that, since the read's loads come
/// before the insert's stores (`check`'s doc).
#[test]
fn merge_during_a_shift_across_regions_keeps_every_key() {
    merge_racing_an_insert(&[key(2, 1), key(2, 2), key(2, 3), key(4, 1)], key(2, 0));
}

/// The body of the merge models: `stored` in the filter, one thread merges it into an empty
/// filter while the other inserts `inserted`. The union holds every stored key, and the
/// inserted one exactly when it has one key more; both tables stay valid.
fn merge_racing_an_insert(stored: &[u64], inserted: u64) {
    use conqf::Merge;
    let stored = stored.to_vec();
    model(move || {
        let filter = filter_with(&stored);
        let empty = ExternallyLockedQf::with_bits(Q, R).unwrap();
        let (union, was_inserted) = super::race(
            &filter,
            move |merging| merging.merge(&empty).unwrap(),
            move |writer| writer.insert_hash(inserted).unwrap(),
        );
        assert!(was_inserted);
        for &k in &stored {
            assert!(union.contains_hash(k), "the merge lost {k:#x}");
        }
        let extra = union.len() - stored.len();
        assert!(extra <= 1, "{} keys", union.len());
        if extra == 1 {
            assert!(
                union.contains_hash(inserted),
                "a key more, not the insert's"
            );
        }
        union.check_invariants().unwrap();
        filter.check_invariants().unwrap();
    });
}

/// An insert from region 0 whose shift ends exactly on the first slot of region 1 (the empty
/// slot right after the boundary) must lock region 1, although everything else it reads lies in
/// region 0: that slot is where an insert canonical in region 1, holding only region 1, writes
/// too. A walk whose stretch ended one slot short of the empty slot it fills lost one of the two
/// keys (or left a corrupt group 1).
#[test]
fn shift_ending_on_the_first_slot_of_the_next_region_locks_it() {
    model(|| {
        // Slots 2-3: run of 2, ending at the boundary; slot 4 (region 1) empty.
        let filter = filter_with(&[key(2, 1), key(2, 2)]);
        let (first, second) = super::race(
            &filter,
            |a| a.insert_hash(key(2, 0)).unwrap(),
            |b| b.insert_hash(key(4, 1)).unwrap(),
        );
        assert!(first && second);
        for (q, r) in [(2, 0), (2, 1), (2, 2), (4, 1)] {
            assert!(filter.contains_hash(key(q, r)), "lost ({q}, {r})");
        }
        assert_eq!(filter.len(), 4);
        filter.check_invariants().unwrap();
    });
}

/// `merge` while an insert canonical in region 1 shifts a run of 4 over region 1 into region 2
/// (the overflow tail), one group at a time: the insert never takes region 0, so only a merge
/// that holds every region of the filter (not only the first) is kept out of the shift. A merge
/// that read region 1 after the shift and region 2 before it would lose `(4, 4)` (or decode a
/// torn table); a merge holding region 0 alone fails this model in both modes.
#[test]
fn merge_during_a_shift_past_region_0_keeps_every_key() {
    // Slots 4-7: run of 4; slot 8 (region 2): run of 5.
    merge_racing_an_insert(
        &[key(4, 1), key(4, 2), key(4, 3), key(4, 4), key(5, 1)],
        key(4, 0),
    );
}

/// 16 canonical slots (`Q + 1` quotient bits), the same 13-bit remainders and 4-slot regions:
/// region 2 (slots 8-11) has canonical slots of its own, so an operation can hold it alone.
fn key16(quotient: u64, remainder: u64) -> u64 {
    ((quotient << R) | remainder) << (64 - (Q + 1) - R)
}

/// An insert that must extend left and right in the same round: (4, 0), canonical in region 1,
/// whose cluster starts in region 0 (slot 3) and whose shift ends on the empty slot 8, in region
/// 2. Its first walk, holding region 1, reads both, so it releases region 1 and locks regions
/// 0-2 in one left extension, walks again and shifts slots 5-7 into 6-8. Meanwhile (8, 1),
/// canonical in region 2, holds only region 2 and writes slot 8 too. Neither key may be lost.
/// A left extension that locked only up to the old right end (regions 0-1) while recording
/// region 2 as held (mutant M3) lets both write group 2 at once: a lost key or a corrupt group.
#[test]
fn extension_left_and_right_at_once_locks_the_right_region() {
    // Slot 3: run of 3 (cluster start); slot 4: its second key; slots 5-7: runs of 4, 5, 6,
    // shifted; slot 8 (region 2) empty.
    const KEYS: [(u64, u64); 5] = [(3, 1), (3, 2), (4, 1), (5, 1), (6, 1)];
    model(|| {
        let filter = filter_of(Q + 1, &KEYS.map(|(q, r)| key16(q, r)));
        let (first, second) = super::race(
            &filter,
            |a| a.insert_hash(key16(4, 0)).unwrap(),
            |b| b.insert_hash(key16(8, 1)).unwrap(),
        );
        assert!(first && second);
        for (q, r) in KEYS.into_iter().chain([(4, 0), (8, 1)]) {
            assert!(filter.contains_hash(key16(q, r)), "lost ({q}, {r})");
        }
        assert_eq!(filter.len(), KEYS.len() + 2);
        filter.check_invariants().unwrap();
    });
}
