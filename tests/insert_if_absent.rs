//! `Count::insert_if_absent` under real threads against an exact expectation: three threads race
//! to store the same keys, each in its own order, into a table filled to 60-80% (so the cuckoo
//! filters relocate and `CountingQf`'s shifts cross region boundaries), some of the keys stored
//! beforehand. Every key has its own fingerprint (and, in the cuckoo filters, bucket pair), so
//! the answers are exact: `CountingQf` and `LockedCuckooFilter` look and store under one lock
//! hold, and `LockFreeCuckooFilter` under a lock that only these calls take, so each key absent
//! before the race is won exactly once and stored once. `CountingQf::insert_batch_if_absent`
//! races the same way, in batches. Bounded to a few seconds.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;

use common::cuckoo::CuckooUnderTest;
use conqf::{Count, CountingQf, Error, Filter, LockFreeCuckooFilter, LockedCuckooFilter};
use rand::seq::SliceRandom;
use rand::SeedableRng;

const THREADS: usize = 3;
/// Fresh tables raced over, each with other keys.
const ROUNDS: u64 = 20;

/// Runs [`THREADS`] threads over the indices of `len` keys, each in an order of its own
/// (shuffled with `seed` and its index) and started together, handing `each` thread `t`'s
/// indices in chunks of `chunk(t)`.
fn race_in_chunks(
    len: usize,
    seed: u64,
    chunk: impl Fn(usize) -> usize + Sync,
    each: impl Fn(&[usize]) + Sync,
) {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (barrier, chunk, each) = (&barrier, &chunk, &each);
            s.spawn(move || {
                let mut order: Vec<usize> = (0..len).collect();
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 16 + t as u64);
                order.shuffle(&mut rng);
                barrier.wait();
                order.chunks(chunk(t)).for_each(each);
            });
        }
    });
}

/// Races [`THREADS`] threads over `keys`, each calling `insert_if_absent` on every key in an
/// order of its own; returns how many calls answered `Ok(true)` for each key. Any error fails
/// the test.
fn race(
    keys: &[u64],
    seed: u64,
    insert_if_absent: impl Fn(u64) -> Result<bool, Error> + Sync,
) -> Vec<usize> {
    let wins: Vec<AtomicUsize> = keys.iter().map(|_| AtomicUsize::new(0)).collect();
    race_in_chunks(
        keys.len(),
        seed,
        |_| 1,
        |one| {
            let i = one[0];
            match insert_if_absent(keys[i]) {
                Ok(true) => {
                    // Relaxed: only read after the threads are joined.
                    wins[i].fetch_add(1, Ordering::Relaxed);
                }
                Ok(false) => {}
                Err(e) => panic!("key {i}: {e}"),
            }
        },
    );
    wins.into_iter().map(AtomicUsize::into_inner).collect()
}

/// Stores the first quarter of `keys` with `insert_hash`, races the threads over all of them,
/// and checks what a filter that looks and stores in one step must give: every key stored
/// beforehand won by no thread, every other key by exactly one, and each counted once.
fn check_each_key_stored_once<F: Count>(filter: &F, keys: &[u64], seed: u64) {
    let stored_before = store_the_first_quarter(filter, keys);
    let wins = race(keys, seed, |k| filter.insert_if_absent_hash(k));
    for (i, (&k, &won)) in keys.iter().zip(&wins).enumerate() {
        let expected = usize::from(i >= stored_before);
        assert_eq!(won, expected, "round {seed}: key {i} won {won} times");
        assert_eq!(filter.count_hash(k), 1, "round {seed}: key {i}");
    }
    assert_eq!(filter.len(), keys.len());
}

/// Stores the first quarter of `keys` with `insert_hash`; returns how many that is.
fn store_the_first_quarter<F: Filter>(filter: &F, keys: &[u64]) -> usize {
    let stored_before = keys.len() / 4;
    for &k in &keys[..stored_before] {
        assert_eq!(filter.insert_hash(k), Ok(true));
    }
    stored_before
}

/// Round `seed`'s `CountingQf` of 1,024 slots, one block per region lock (so shifts cross
/// region boundaries all the time), and its keys: 80% of the slots, each its own fingerprint.
fn counting_round(seed: u64) -> (CountingQf, Vec<u64>) {
    let (q, r) = (10, 8);
    let filter = CountingQf::with_bits_and_region(q, r, 1).unwrap();
    let keys = common::distinct_hashes(q, r, 1 << q, (1 << q) * 8 / 10, seed);
    (filter, keys)
}

/// Buckets of the cuckoo tables: 1,024 entries.
const BUCKET_BITS: u32 = 8;
const FINGERPRINT_BITS: u32 = 16;

#[test]
fn counting_qf_stores_each_raced_key_once() {
    for seed in 0..ROUNDS {
        let (filter, keys) = counting_round(seed);
        check_each_key_stored_once(&filter, &keys, seed);
        assert_eq!(filter.distinct(), keys.len());
        filter.check_invariants().unwrap();
    }
}

/// `CountingQf::insert_batch_if_absent` raced by three threads over the same keys, in batches
/// of 1, 41 and 81 keys (so single updates race batches, and batches' ranges overlap), a
/// quarter of the keys stored beforehand: the batches' answers add up to the keys absent before
/// the race, each stored once.
#[test]
fn counting_qf_batches_store_each_raced_key_once() {
    for seed in 0..ROUNDS {
        let (filter, keys) = counting_round(seed);
        let stored_before = store_the_first_quarter(&filter, &keys);
        let stored = AtomicUsize::new(0);
        race_in_chunks(
            keys.len(),
            seed,
            |t| 1 + 40 * t,
            |batch| {
                let hashes: Vec<u64> = batch.iter().map(|&i| keys[i]).collect();
                let new = filter.insert_batch_if_absent(&hashes).unwrap();
                // Relaxed: only read after the threads are joined.
                stored.fetch_add(new, Ordering::Relaxed);
            },
        );
        assert_eq!(
            stored.into_inner(),
            keys.len() - stored_before,
            "round {seed}"
        );
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(filter.count_hash(k), 1, "round {seed}: key {i}");
        }
        assert_eq!(filter.len(), keys.len());
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
