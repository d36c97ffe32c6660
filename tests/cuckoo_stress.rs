//! Real threads against an exact expectation: both cuckoo filters on a small table filled to
//! 45-70%, where most inserts of the writers relocate stored fingerprints, while a reader
//! keeps checking keys that are never removed. Every key has its own fingerprint and bucket
//! pair, so the filters must answer exactly: no false negative for a stored key (the reader's
//! check runs while relocations move those very keys), a removed key is gone, and at the end
//! the table holds exactly the expected fingerprints. Bounded to a few seconds.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use conqf::{Error, Filter, LockFreeCuckooFilter, LockedCuckooFilter, Remove};
use rand::{Rng, SeedableRng};

const BUCKET_BITS: u32 = 8;
const FINGERPRINT_BITS: u32 = 16;
const WRITERS: usize = 3;
const ROUNDS: usize = 2000;

/// `count` hashes with pairwise distinct (fingerprint, bucket pair).
fn distinct_keys(placement: impl Fn(u64) -> (usize, usize, u64), count: usize) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut seen = BTreeSet::new();
    let mut keys = Vec::with_capacity(count);
    while keys.len() < count {
        let hash: u64 = rng.random();
        let (a, b, fp) = placement(hash);
        if seen.insert((fp, a.min(b), a.max(b))) {
            keys.push(hash);
        }
    }
    keys
}

fn hammer<F: Filter + Remove>(
    filter: &F,
    placement: impl Fn(u64) -> (usize, usize, u64) + Copy,
    stored_fingerprints: impl Fn(&F) -> usize,
) {
    let entries = 4usize << BUCKET_BITS;
    let stable_count = entries * 45 / 100;
    let per_writer = entries * 25 / 100 / WRITERS;
    let keys = distinct_keys(placement, stable_count + per_writer * WRITERS);
    let (stable, churn) = keys.split_at(stable_count);
    // Each stable key also as the hash with the same fingerprint whose primary bucket is the
    // key's alternate one (the same stored copy): queries of it read the buckets in the other
    // order, so between them the reader meets relocations in both directions.
    let mirrored: Vec<u64> = stable
        .iter()
        .map(|&k| {
            let (_, alternate, fp) = placement(k);
            ((alternate as u64) << (64 - BUCKET_BITS))
                | (fp << (64 - BUCKET_BITS - FINGERPRINT_BITS))
        })
        .collect();
    let mirrored = &mirrored;
    for &k in stable {
        assert_eq!(filter.insert_hash(k), Ok(true));
    }
    let writers_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for t in 0..WRITERS {
            let own = &churn[t * per_writer..(t + 1) * per_writer];
            writers.push(s.spawn(move || {
                let mut fulls = 0;
                for _ in 0..ROUNDS {
                    let mut inserted = Vec::new();
                    for &k in own {
                        match filter.insert_hash(k) {
                            Ok(true) => {
                                assert!(filter.contains_hash(k), "false negative after insert");
                                inserted.push(k);
                            }
                            Err(Error::Full) => fulls += 1,
                            other => panic!("{other:?}"),
                        }
                    }
                    for &k in &inserted {
                        assert_eq!(
                            filter.remove_hash(k),
                            Ok(true),
                            "inserted key not removable"
                        );
                        assert!(!filter.contains_hash(k), "removed key still found");
                        assert_eq!(filter.remove_hash(k), Ok(false));
                    }
                }
                fulls
            }));
        }
        let writers_done = &writers_done;
        s.spawn(move || {
            while !writers_done.load(Ordering::Acquire) {
                for (&k, &m) in stable.iter().zip(mirrored) {
                    assert!(filter.contains_hash(k), "false negative during relocations");
                    assert!(filter.contains_hash(m), "false negative during relocations");
                }
            }
        });
        let fulls: usize = common::join_writers(writers, writers_done)
            .into_iter()
            .sum();
        // At 70% a table this size has room: Full must stay rare.
        assert!(
            fulls < ROUNDS * per_writer * WRITERS / 100,
            "{fulls} inserts failed"
        );
    });
    assert_eq!(filter.len(), stable.len());
    assert_eq!(stored_fingerprints(filter), stable.len());
    assert!(stable.iter().all(|&k| filter.contains_hash(k)));
    assert!(churn.iter().all(|&k| !filter.contains_hash(k)));
}

#[test]
fn lock_free_has_no_false_negatives_under_relocations() {
    let filter = LockFreeCuckooFilter::with_bits(BUCKET_BITS, FINGERPRINT_BITS).unwrap();
    hammer(&filter, |h| filter.placement(h), |f| f.fingerprints().len());
    filter.check_invariants().unwrap();
}

#[test]
fn locked_has_no_false_negatives_under_relocations() {
    // Two stripes per writer thread, so moves often need two locks.
    let filter =
        LockedCuckooFilter::with_stripes(BUCKET_BITS, FINGERPRINT_BITS, 2 * WRITERS).unwrap();
    hammer(&filter, |h| filter.placement(h), |f| f.fingerprints().len());
    filter.check_invariants().unwrap();
}
