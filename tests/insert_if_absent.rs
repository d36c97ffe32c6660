//! `Count::insert_if_absent` under real threads against an exact expectation: three threads race
//! to store the same keys, each in its own order, into a table filled to 60-80% (so the cuckoo
//! filters relocate and `CountingQf`'s shifts cross region boundaries), some of the keys stored
//! beforehand. Every key has its own fingerprint (and, in the cuckoo filters, bucket pair), so
//! the answers are exact: `CountingQf` and `LockedCuckooFilter` look and store under one lock
//! hold, and `LockFreeCuckooFilter` under a lock that only these calls take, so each key absent
//! before the race is won exactly once and stored once. Bounded to a few seconds.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;

use common::cuckoo::CuckooUnderTest;
use conqf::{Count, CountingQf, Error, LockFreeCuckooFilter, LockedCuckooFilter};
use rand::seq::SliceRandom;
use rand::SeedableRng;

const THREADS: usize = 3;
/// Fresh tables raced over, each with other keys.
const ROUNDS: u64 = 20;

/// Races [`THREADS`] threads over `keys`, each calling `insert_if_absent` on every key in an
/// order of its own (shuffled with `seed` and its index); returns how many calls answered
/// `Ok(true)` for each key. Any error fails the test.
fn race(
    keys: &[u64],
    seed: u64,
    insert_if_absent: impl Fn(u64) -> Result<bool, Error> + Sync,
) -> Vec<usize> {
    let wins: Vec<AtomicUsize> = keys.iter().map(|_| AtomicUsize::new(0)).collect();
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (wins, barrier, insert_if_absent) = (&wins, &barrier, &insert_if_absent);
            s.spawn(move || {
                let mut order: Vec<usize> = (0..keys.len()).collect();
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 16 + t as u64);
                order.shuffle(&mut rng);
                barrier.wait();
                for i in order {
                    match insert_if_absent(keys[i]) {
                        Ok(true) => {
                            // Relaxed: only read after the threads are joined.
                            wins[i].fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(false) => {}
                        Err(e) => panic!("key {i}: {e}"),
                    }
                }
            });
        }
    });
    wins.into_iter().map(AtomicUsize::into_inner).collect()
}

/// Stores the first quarter of `keys` with `insert_hash`, races the threads over all of them,
/// and checks what a filter that looks and stores in one step must give: every key stored
/// beforehand won by no thread, every other key by exactly one, and each counted once.
fn check_each_key_stored_once<F: Count>(filter: &F, keys: &[u64], seed: u64) {
    let stored_before = keys.len() / 4;
    for &k in &keys[..stored_before] {
        assert_eq!(filter.insert_hash(k), Ok(true));
    }
    let wins = race(keys, seed, |k| filter.insert_if_absent_hash(k));
    for (i, (&k, &won)) in keys.iter().zip(&wins).enumerate() {
        let expected = usize::from(i >= stored_before);
        assert_eq!(won, expected, "round {seed}: key {i} won {won} times");
        assert_eq!(filter.count_hash(k), 1, "round {seed}: key {i}");
    }
    assert_eq!(filter.len(), keys.len());
}

/// Buckets of the cuckoo tables: 1,024 entries.
const BUCKET_BITS: u32 = 8;
const FINGERPRINT_BITS: u32 = 16;

#[test]
fn counting_qf_stores_each_raced_key_once() {
    let (q, r) = (10, 8);
    for seed in 0..ROUNDS {
        // One block per region lock: shifts cross region boundaries all the time.
        let filter = CountingQf::with_bits_and_region(q, r, 1).unwrap();
        let keys = common::distinct_hashes(q, r, 1 << q, (1 << q) * 8 / 10, seed);
        check_each_key_stored_once(&filter, &keys, seed);
        assert_eq!(filter.distinct(), keys.len());
        filter.check_invariants().unwrap();
    }
}

/// [`check_each_key_stored_once`] for a cuckoo filter, in rounds of fresh tables filled to 60%
/// of their entries by keys each with its own fingerprint and bucket pair.
fn cuckoo_filter_stores_each_raced_key_once<F: CuckooUnderTest>() {
    let entries = 4usize << BUCKET_BITS;
    for seed in 0..ROUNDS {
        let filter = F::build(BUCKET_BITS, FINGERPRINT_BITS);
        let placement = |h| {
            let (fingerprint, [a, b]) = filter.place(h);
            (a, b, fingerprint)
        };
        let keys = common::distinct_cuckoo_keys(placement, entries * 60 / 100, seed);
        check_each_key_stored_once(&filter, &keys, seed);
        assert_eq!(filter.stored().len(), keys.len());
        filter.invariants().unwrap();
    }
}

#[test]
fn locked_cuckoo_filter_stores_each_raced_key_once() {
    cuckoo_filter_stores_each_raced_key_once::<LockedCuckooFilter>();
}

/// The lock-free filter looks and inserts under a lock only these calls take: as exact as the
/// locked filter.
#[test]
fn lock_free_cuckoo_filter_stores_each_raced_key_once() {
    cuckoo_filter_stores_each_raced_key_once::<LockFreeCuckooFilter>();
}
