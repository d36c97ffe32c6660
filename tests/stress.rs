//! Real threads against an exact model: `LocallyLockedQf`, `ExternallyLockedQf` and `TwoBitQf` under
//! concurrent inserts, queries and removes of disjoint and overlapping key sets, on a small,
//! heavily loaded table (long superclusters, lock contention) and on a large one. Bounded to run
//! in seconds in CI.
//!
//! Every key has a distinct fingerprint, so the filter must answer exactly: a key inserted and
//! not removed is found (no false negative), a removed key is gone, and at the end the table
//! holds exactly the model's fingerprints. A removed key is checked with the query that cannot
//! misread a hit while others shift ([`UnderTest::contains_without_misread`]); a second `remove`
//! of it must fail and its re-insert must store it anew.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{distinct_hashes, join_writers, UnderTest};
use conqf::{ExternallyLockedQf, Filter, Fingerprint, LocallyLockedQf, Remove, TwoBitQf};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// The workload. Each thread owns a disjoint slice of keys: it inserts them, checks each one
/// right after its insert, removes every third one, checks again. All threads also insert the
/// same shared keys (exactly one insert of each may return `Ok(true)`), and one more thread
/// keeps querying the stable keys that writers have published as inserted. `churn` rounds of
/// removing and re-inserting the removable keys keep the writers busy meanwhile. Then all
/// threads race to remove every shared key (exactly one removal of each may return `Ok(true)`).
/// `make` builds the filter from `(q, r)`.
#[allow(clippy::too_many_arguments)]
fn hammer<F: Filter + Remove + UnderTest>(
    make: impl Fn(u32, u32) -> F,
    q: u32,
    r: u32,
    quotients: u64,
    per_thread: usize,
    shared: usize,
    threads: usize,
    churn: usize,
) {
    let filter = make(q, r);
    let all = distinct_hashes(
        q,
        r,
        quotients,
        per_thread * threads + shared,
        42 + q as u64,
    );
    let (own, common_keys) = all.split_at(per_thread * threads);
    let published: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
    let first_inserts = AtomicUsize::new(0);
    let writers_done = AtomicBool::new(false);

    std::thread::scope(|s| {
        let mut writers = Vec::with_capacity(threads);
        for t in 0..threads {
            let keys = &own[t * per_thread..(t + 1) * per_thread];
            let (filter, published, first_inserts) = (&filter, &published, &first_inserts);
            writers.push(s.spawn(move || {
                let mut shared_order = common_keys.to_vec();
                shared_order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(t as u64));
                let mut shared_iter = shared_order.iter();
                for (i, &key) in keys.iter().enumerate() {
                    assert_eq!(filter.insert_hash(key), Ok(true), "thread {t} key {i}");
                    assert!(
                        filter.contains_hash(key),
                        "false negative right after insert"
                    );
                    // Keys at indices 3k+1 and 3k+2 are never removed: publish the prefix.
                    published[t].store(i + 1, Ordering::Release);
                    if let Some(&k) = shared_iter.next() {
                        if filter.insert_hash(k).unwrap() {
                            first_inserts.fetch_add(1, Ordering::Relaxed);
                        }
                        assert!(filter.contains_hash(k));
                    }
                }
                for &k in shared_iter {
                    if filter.insert_hash(k).unwrap() {
                        first_inserts.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Churn: the removable keys leave and come back while the others must stay
                // visible to the checker.
                for _ in 0..churn {
                    for &key in keys.iter().step_by(3) {
                        assert_eq!(filter.remove_hash(key), Ok(true));
                        assert!(
                            !filter.contains_without_misread(key),
                            "removed key still found"
                        );
                    }
                    for &key in keys.iter().step_by(3) {
                        assert_eq!(filter.insert_hash(key), Ok(true));
                        assert!(filter.contains_hash(key), "false negative after re-insert");
                    }
                }
                for (i, &key) in keys.iter().enumerate() {
                    if i % 3 == 0 {
                        assert_eq!(filter.remove_hash(key), Ok(true));
                        assert!(
                            !filter.contains_without_misread(key),
                            "removed key still found"
                        );
                        assert_eq!(filter.remove_hash(key), Ok(false));
                    }
                }
                for (i, &key) in keys.iter().enumerate() {
                    if i % 3 != 0 {
                        assert!(filter.contains_hash(key), "thread {t} key {i}");
                    }
                    let found = filter.contains_without_misread(key);
                    assert_eq!(found, i % 3 != 0, "thread {t} key {i}");
                }
            }));
        }
        // The checker: every published key that is never removed must be found, whatever the
        // writers are doing. It stops once the writers are done (or one of them panicked:
        // `join_writers` sets the flag before passing the panic on) and it made 10,000 checks.
        let (filter, published, writers_done) = (&filter, &published, &writers_done);
        s.spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            let mut checks = 0u64;
            loop {
                let done = writers_done.load(Ordering::Acquire);
                if done && checks >= 10_000 {
                    break;
                }
                let t = rng.random_range(0..threads);
                let upto = published[t].load(Ordering::Acquire);
                if upto == 0 {
                    if done {
                        // A writer that published nothing panicked before its first key.
                        break;
                    }
                    std::thread::yield_now();
                    continue;
                }
                let i = rng.random_range(0..upto);
                if i % 3 != 0 {
                    let key = own[t * per_thread + i];
                    assert!(
                        filter.contains_hash(key),
                        "false negative: thread {t} key {i}"
                    );
                }
                checks += 1;
            }
        });
        join_writers(writers, writers_done);
    });

    assert_eq!(first_inserts.load(Ordering::Relaxed), shared);
    filter.check().unwrap();

    // Then every thread removes every shared key, each in its own order: exactly one removal
    // of each may return `Ok(true)`, and the key is gone once it has.
    let removals = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (filter, removals) = (&filter, &removals);
            s.spawn(move || {
                let mut order = common_keys.to_vec();
                order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(100 + t as u64));
                for &k in &order {
                    if filter.remove_hash(k).unwrap() {
                        removals.fetch_add(1, Ordering::Relaxed);
                    }
                    assert!(
                        !filter.contains_without_misread(k),
                        "removed shared key found"
                    );
                }
            });
        }
    });
    assert_eq!(removals.load(Ordering::Relaxed), shared);
    filter.check().unwrap();
    let mut expected: Vec<Fingerprint> = own
        .iter()
        .enumerate()
        .filter(|(i, _)| (i % per_thread) % 3 != 0)
        .map(|(_, &h)| F::fingerprint(h, q, r))
        .collect();
    expected.sort_unstable();
    let stored: Vec<Fingerprint> = filter.fingerprints();
    assert_eq!(stored, expected);
}

#[test]
fn small_heavily_loaded_table_with_long_superclusters() {
    // 256 canonical slots, 16 of them hit: clusters of ~12 elements merge into superclusters
    // spanning most of the table; 8-bit remainders in 11-bit slots, 5 per group.
    for _ in 0..40 {
        hammer(locally_locked, 8, 8, 16, 50, 20, 4, 50);
    }
}

#[test]
fn small_table_one_slot_per_group() {
    // 35-bit slots: every shift crosses groups, every operation takes the locked path.
    for _ in 0..40 {
        hammer(locally_locked, 7, 32, 8, 30, 10, 4, 50);
    }
}

#[test]
fn clusters_across_a_shift_region_boundary() {
    // 35-bit slots, one per group: 4,096 groups make four of `LocallyLockedQf`'s shift regions
    // (1,024 groups each). At about 78% fill with random quotients the clusters run long, and
    // with these keys (the seed is fixed) some cross the boundaries between regions: a miss
    // read across one never stands on one region's word and goes to the locked query, while
    // locked shifts count themselves in both regions.
    for _ in 0..4 {
        hammer(locally_locked, 12, 32, 1 << 12, 700, 400, 4, 20);
    }
}

#[test]
fn large_table_at_seventy_percent() {
    // 2^16 canonical slots filled to ~70% with random quotients.
    hammer(locally_locked, 16, 10, 1 << 16, 15_000, 1_000, 3, 3);
}

#[test]
fn three_slots_per_group_at_a_compiled_width() {
    // 17-bit remainders in 20-bit slots, 3 per group with 4 bits spare: a width the walks are
    // compiled for (`with_fixed_width!`), under the long superclusters of the small table above.
    for _ in 0..20 {
        hammer(locally_locked, 8, 17, 16, 50, 20, 4, 50);
    }
}

fn locally_locked(q: u32, r: u32) -> LocallyLockedQf {
    LocallyLockedQf::with_bits(q, r).unwrap()
}

/// `ExternallyLockedQf` with one lock per `region` slots.
fn externally_locked(region: usize) -> impl Fn(u32, u32) -> ExternallyLockedQf {
    move |q, r| ExternallyLockedQf::with_bits_and_region(q, r, region).unwrap()
}

#[test]
fn externally_locked_tiny_regions_under_long_superclusters() {
    // The small loaded table of the locally locked test with regions of 2 groups (10 slots):
    // its superclusters span two, three and more regions, so operations extend their locks
    // both ways while others hold them.
    for _ in 0..40 {
        hammer(externally_locked(10), 8, 8, 16, 50, 20, 4, 50);
    }
}

#[test]
fn externally_locked_one_slot_per_group_and_region() {
    // 35-bit slots, one per group, and a region per group: every shift crosses regions.
    for _ in 0..40 {
        hammer(externally_locked(1), 7, 32, 8, 30, 10, 4, 50);
    }
}

#[test]
fn externally_locked_large_table_default_regions() {
    // 2^16 canonical slots at ~70% with the paper's 4096-slot regions (16 of them).
    hammer(
        externally_locked(4096),
        16,
        10,
        1 << 16,
        15_000,
        1_000,
        3,
        3,
    );
}

fn two_bit(q: u32, r: u32) -> TwoBitQf {
    TwoBitQf::with_bits(q, r).unwrap()
}

#[test]
fn two_bit_small_heavily_loaded_table_with_long_superclusters() {
    // The small loaded table of the locally locked test: 8-bit remainders in 10-bit slots, 6 per
    // group; superclusters span most of the table, so most operations lock.
    for _ in 0..40 {
        hammer(two_bit, 8, 8, 16, 50, 20, 4, 50);
    }
}

#[test]
fn two_bit_one_slot_per_group() {
    // 34-bit slots: every walk past the canonical slot leaves its group and locks.
    for _ in 0..40 {
        hammer(two_bit, 7, 32, 8, 30, 10, 4, 50);
    }
}

#[test]
fn two_bit_superclusters_across_a_shift_region_boundary() {
    // 34-bit slots, one per group: the 4,096 canonical slots make four full shift regions of
    // 1,024 groups and a fifth for the overflow tail. At about 78% fill the superclusters run
    // long and, with these keys, some cross the boundaries between regions (as in
    // `clusters_across_a_shift_region_boundary`).
    for _ in 0..4 {
        hammer(two_bit, 12, 32, 1 << 12, 700, 400, 4, 20);
    }
}

#[test]
fn two_bit_three_slots_per_group_at_a_compiled_width() {
    // 18-bit remainders in 20-bit slots, 3 per group: a width the walks are compiled for.
    for _ in 0..20 {
        hammer(two_bit, 8, 18, 16, 50, 20, 4, 50);
    }
}

#[test]
fn two_bit_large_table_at_seventy_percent() {
    // 2^16 canonical slots filled to ~70% with random quotients: mostly lock-free fast paths.
    hammer(two_bit, 16, 10, 1 << 16, 15_000, 1_000, 3, 3);
}

/// The `&self` batch writes of the concurrent filters, for [`batch_writes`].
trait BatchWrites {
    fn insert_batch(&self, hashes: &[u64]) -> Result<usize, conqf::Error>;
    fn remove_batch(&self, hashes: &[u64]) -> Result<usize, conqf::Error>;
}

macro_rules! batch_writes_of {
    ($($filter:ty),*) => {$(
        impl BatchWrites for $filter {
            fn insert_batch(&self, hashes: &[u64]) -> Result<usize, conqf::Error> {
                self.insert_batch_concurrent(hashes)
            }
            fn remove_batch(&self, hashes: &[u64]) -> Result<usize, conqf::Error> {
                self.remove_batch_concurrent(hashes)
            }
        }
    )*};
}

batch_writes_of!(LocallyLockedQf, ExternallyLockedQf, TwoBitQf);

#[test]
fn concurrent_batch_writes_from_several_threads() {
    batch_writes(locally_locked);
}

#[test]
fn externally_locked_concurrent_batch_writes_from_several_threads() {
    batch_writes(externally_locked(64));
}

#[test]
fn two_bit_concurrent_batch_writes_from_several_threads() {
    batch_writes(two_bit);
}

/// `insert_batch_concurrent`, then `remove_batch_concurrent`, from four threads at once, in
/// batches of 64, on a table of 2^12 slots filled to about 70%: every thread's own keys, and
/// shared keys that every thread inserts and then removes (exactly one insert and one removal
/// of each may count). The two phases are two scopes, so no removal meets a later insert.
fn batch_writes<F: Filter + UnderTest + BatchWrites>(make: impl Fn(u32, u32) -> F) {
    let (q, r, threads, per_thread, shared) = (12, 10, 4, 600, 400);
    for round in 0..10u64 {
        let filter = make(q, r);
        let all = distinct_hashes(q, r, 1 << q, threads * per_thread + shared, 300 + round);
        let (own, common_keys) = all.split_at(threads * per_thread);
        let mine = |t: usize| &own[t * per_thread..(t + 1) * per_thread];
        let shuffled = |keys: Vec<u64>, t: usize| {
            let mut keys = keys;
            keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(
                round * 10 + t as u64,
            ));
            keys
        };
        let (stored, removed) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for t in 0..threads {
                let (filter, stored) = (&filter, &stored);
                let keys = shuffled(mine(t).iter().chain(common_keys).copied().collect(), t);
                s.spawn(move || {
                    for batch in keys.chunks(64) {
                        let new = filter.insert_batch(batch).unwrap();
                        stored.fetch_add(new, Ordering::Relaxed);
                        assert!(batch.iter().all(|&k| filter.contains_hash(k)));
                    }
                });
            }
        });
        assert_eq!(
            stored.load(Ordering::Relaxed),
            threads * per_thread + shared
        );
        std::thread::scope(|s| {
            for t in 0..threads {
                let (filter, removed) = (&filter, &removed);
                // The even-indexed own keys and every shared key leave.
                let own_leaving = mine(t).iter().step_by(2).copied();
                let keys = shuffled(own_leaving.chain(common_keys.iter().copied()).collect(), t);
                s.spawn(move || {
                    for batch in keys.chunks(64) {
                        let gone = filter.remove_batch(batch).unwrap();
                        removed.fetch_add(gone, Ordering::Relaxed);
                    }
                    for (i, &k) in mine(t).iter().enumerate() {
                        assert_eq!(filter.contains_without_misread(k), i % 2 == 1, "key {i}");
                    }
                });
            }
        });
        assert_eq!(
            removed.load(Ordering::Relaxed),
            threads * per_thread.div_ceil(2) + shared
        );
        filter.check().unwrap();
        let mut expected: Vec<Fingerprint> = own
            .iter()
            .enumerate()
            .filter(|(i, _)| (i % per_thread) % 2 == 1)
            .map(|(_, &h)| F::fingerprint(h, q, r))
            .collect();
        expected.sort_unstable();
        assert_eq!(UnderTest::fingerprints(&filter), expected);
    }
}
