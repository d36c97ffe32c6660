//! Loom model of the locked cuckoo filter's `&self` snapshot (issue 10): `to_bytes` read-locks
//! every stripe while another thread inserts with a relocation, so the copy must be the table
//! between two single-entry steps. A copy that read bucket 2 before the move filled it and
//! bucket 0 after the move emptied it would lose the moved key (the false miss of paper 001
//! §2.2, here in a snapshot). The lock-free filter's `snapshot` pauses relocations instead
//! (`src/cuckoo/pause.rs`); its model races the same relocating insert. A locked filter's merge
//! copies each input under the same read locks, and a lock-free filter's merge copies each
//! input with its relocations paused; their models race the relocation too.

use conqf::{Filter, LockFreeCuckooFilter, LockedCuckooFilter, Merge};
use loom::sync::Arc;
use loom::thread;

use super::cuckoo::{scenario, scenario_from, Scenario, BUCKET_BITS, FINGERPRINT_BITS};

/// Checks a copy of the scenario's filter (a snapshot, or a merge into an empty filter) taken
/// beside the newcomer's insert, given how many entries it stores: all 8 stored keys, the mover
/// under both of its hashes, and the newcomer exactly when the copy holds 9 entries, as its
/// `len` says too.
fn assert_copy_of(s: &Scenario, copy: &impl Filter, entries: usize) {
    assert!(copy.contains_hash(s.mover) && copy.contains_hash(s.mover_from_other_bucket));
    for &k in &s.full {
        assert!(copy.contains_hash(k));
    }
    let has_newcomer = entries == 9;
    assert_eq!(copy.len(), 8 + has_newcomer as usize);
    if has_newcomer {
        assert!(copy.contains_hash(s.newcomer));
    }
}

/// Buckets 0 and 1 are full; the writer's insert moves a fingerprint from bucket 0 to bucket 2
/// (stripes 0 and 2, one bucket per stripe) and then stores its own in bucket 0, while the
/// main thread takes a snapshot. The snapshot must decode, hold all 8 stored keys, and hold the
/// newcomer exactly when it counts 9 entries.
#[test]
fn locked_cuckoo_snapshot_racing_a_relocation_keeps_the_moved_key() {
    super::check(Some(2), || {
        let s = scenario();
        let filter = LockedCuckooFilter::with_stripes(BUCKET_BITS, FINGERPRINT_BITS, 4).unwrap();
        for &k in &s.full {
            assert_eq!(filter.insert_hash(k), Ok(true));
        }
        let filter = Arc::new(filter);
        let writer = filter.clone();
        let newcomer = s.newcomer;
        let t = thread::spawn(move || writer.insert_hash(newcomer));
        let snapshot = LockedCuckooFilter::from_bytes(&filter.to_bytes()).unwrap();
        snapshot.check_invariants().unwrap();
        assert_copy_of(&s, &snapshot, snapshot.fingerprints().len());
        assert_eq!(t.join().unwrap(), Ok(true));
    });
}

/// The scenario above with `LockedCuckooFilter::merge` of the filter into an empty one, the
/// relocation moving down, from bucket 2 to bucket 0 (`scenario_from(2)`), so a copy that read
/// bucket 0 before the move and bucket 2 after it would lose the mover. The merge copies the
/// filter under every stripe's read lock and inserts each copy into the union, which must hold
/// all 8 stored keys and the newcomer exactly when it counts 9 entries. (Copied without the read
/// locks, the union loses the mover in this model, with `CONQF_LOOM_RMW_LOADS=1`.)
#[test]
fn locked_cuckoo_merge_racing_a_relocation_keeps_the_moved_key() {
    super::check(Some(2), || {
        let s = scenario_from(2);
        let filter = LockedCuckooFilter::with_stripes(BUCKET_BITS, FINGERPRINT_BITS, 4).unwrap();
        for &k in &s.full {
            assert_eq!(filter.insert_hash(k), Ok(true));
        }
        let empty = LockedCuckooFilter::with_stripes(BUCKET_BITS, FINGERPRINT_BITS, 4).unwrap();
        let filter = Arc::new(filter);
        let writer = filter.clone();
        let newcomer = s.newcomer;
        let t = thread::spawn(move || writer.insert_hash(newcomer));
        let union = empty.merge(&filter).unwrap();
        union.check_invariants().unwrap();
        assert_copy_of(&s, &union, union.fingerprints().len());
        assert_eq!(t.join().unwrap(), Ok(true));
    });
}

/// The scenario above with `LockFreeCuckooFilter::snapshot`, both operations on spawned
/// threads: the snapshot either waits for the relocation path to finish or makes it wait, so
/// the copy holds all 8 stored keys, no entry in a relocation state, and the newcomer exactly
/// when it counts 9 entries. (Without the pause this model fails.)
#[test]
fn lock_free_cuckoo_snapshot_racing_a_relocation_keeps_the_moved_key() {
    super::check(Some(2), || {
        let s = scenario();
        let filter = LockFreeCuckooFilter::with_bits(BUCKET_BITS, FINGERPRINT_BITS).unwrap();
        for &k in &s.full {
            assert_eq!(filter.insert_hash(k), Ok(true));
        }
        let filter = Arc::new(filter);
        let newcomer = s.newcomer;
        let (inserted, mut copy) = super::race(
            &filter,
            move |writer| writer.insert_hash(newcomer),
            |reader| reader.snapshot().unwrap(),
        );
        assert_eq!(inserted, Ok(true));
        copy.check_invariants().unwrap();
        assert_copy_of(&s, &copy, copy.fingerprints().len());
        LockFreeCuckooFilter::from_bytes(&copy.to_bytes()).unwrap();
    });
}

/// The merge of the lock-free filter into an empty one while the relocation moves down, from
/// bucket 2 to bucket 0 (`scenario_from(2)`): the merge copies its *second* input with that
/// input's relocations paused, so the union holds all 8 stored keys, the mover under both of
/// its hashes, and the newcomer exactly when it counts 9 entries. (Inserting every entry of the
/// second input's live table, without the pause, fails this model in both modes: the union
/// counts 9 entries without the newcomer, the mover read in both of its buckets.)
#[test]
fn lock_free_cuckoo_merge_racing_a_relocation_in_its_second_input_keeps_the_moved_key() {
    super::check(Some(2), || {
        let s = scenario_from(2);
        let filter = LockFreeCuckooFilter::with_bits(BUCKET_BITS, FINGERPRINT_BITS).unwrap();
        for &k in &s.full {
            assert_eq!(filter.insert_hash(k), Ok(true));
        }
        let empty = LockFreeCuckooFilter::with_bits(BUCKET_BITS, FINGERPRINT_BITS).unwrap();
        let filter = Arc::new(filter);
        let newcomer = s.newcomer;
        let (inserted, union) = super::race(
            &filter,
            move |writer| writer.insert_hash(newcomer),
            move |reader| empty.merge(reader).unwrap(),
        );
        assert_eq!(inserted, Ok(true));
        union.check_invariants().unwrap();
        assert_copy_of(&s, &union, union.fingerprints().len());
    });
}
