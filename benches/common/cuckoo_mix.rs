//! Paper 001's workload, shared by `benches/cuckoo_mix.rs` and the `cuckoo` figure of
//! `examples/figures.rs`: a table filled to load 0.4, then 90% finds, 5% inserts and 5% removes
//! on every thread, so the load stays at 0.4 (paper 001 §3.1). Also the peers: the
//! `atomic-cuckoo-filter` crate (the concurrent cuckoo filter people use today) as a
//! `conqf::Filter + Remove`.
//!
//! Each thread's operations are generated beforehand from a seed, with keys hashed already:
//! a thread removes only keys it owns (its share of the prefill, then the keys it inserted, in
//! insertion order) and half of its finds ask for a key it owns, so every such find must answer
//! `true`, which the run counts (a false negative would be a bug). The other half ask for keys
//! never inserted.

use std::collections::VecDeque;
use std::time::Duration;

use conqf::{hash_key, Error, Filter, LockFreeCuckooFilter, LockedCuckooFilter, Remove};

use super::{parallel, piece, Xorshift, NEGATIVE_KEYS};

/// The load factor of paper 001's experiments.
pub(crate) const MIX_LOAD: f64 = 0.4;

/// Fingerprint bits of every cuckoo filter in the comparison (the peers offer 4, 8, 16 or 32).
pub(crate) const MIX_FINGERPRINT_BITS: u32 = 16;

/// One operation of the mix, on a prehashed key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MixOp {
    /// A find of a key the thread owns (must answer `true`).
    FindPresent(u64),
    /// A find of a key never inserted.
    FindAbsent(u64),
    /// An insert of a fresh key.
    Insert(u64),
    /// A remove of the thread's oldest key.
    Remove(u64),
}

/// The prefill and every thread's operations.
pub(crate) struct MixWorkload {
    /// Hashes inserted before the timed part: `MIX_LOAD` of the table's entries.
    pub(crate) prefill: Vec<u64>,
    /// Each thread's operations, in order.
    pub(crate) per_thread: Vec<Vec<MixOp>>,
}

impl MixWorkload {
    /// The workload for a table of `2^bucket_bits` buckets of 4 entries: `ops` operations in
    /// all, split over `threads`.
    pub(crate) fn new(bucket_bits: u32, ops: usize, threads: usize) -> Self {
        let entries = 4usize << bucket_bits;
        let prefill: Vec<u64> = (0..(entries as f64 * MIX_LOAD) as u64)
            .map(|k| hash_key(&k))
            .collect();
        let per_thread = (0..threads)
            .map(|t| {
                let mut rng = Xorshift::new(0x5EED ^ ((t as u64 + 1) << 20));
                let mut owned: VecDeque<u64> =
                    piece(&prefill, t, threads).iter().copied().collect();
                // Fresh keys of thread t: far above the prefill, disjoint from other threads'.
                let mut fresh = (t as u64 + 1) << 48;
                let mut absent = NEGATIVE_KEYS + ((t as u64) << 48);
                let count = ops * (t + 1) / threads - ops * t / threads;
                (0..count)
                    .map(|_| match rng.below(100) {
                        0..=4 => {
                            fresh += 1;
                            let hash = hash_key(&fresh);
                            owned.push_back(hash);
                            MixOp::Insert(hash)
                        }
                        5..=9 if !owned.is_empty() => {
                            MixOp::Remove(owned.pop_front().expect("not empty"))
                        }
                        n if n % 2 == 0 && !owned.is_empty() => {
                            MixOp::FindPresent(owned[rng.below(owned.len())])
                        }
                        _ => {
                            absent += 1;
                            MixOp::FindAbsent(hash_key(&absent))
                        }
                    })
                    .collect()
            })
            .collect();
        MixWorkload {
            prefill,
            per_thread,
        }
    }

    /// Operations in all.
    pub(crate) fn ops(&self) -> usize {
        self.per_thread.iter().map(Vec::len).sum()
    }
}

/// What one run of the mix measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MixRun {
    /// Wall time of the operations (the prefill is not timed).
    pub(crate) elapsed: Duration,
    /// Inserts that failed (`Full`); 0 expected at load 0.4.
    pub(crate) failed_inserts: usize,
    /// Finds of owned keys that answered `false`, and removes of owned keys that found nothing:
    /// 0 unless an insert failed or the filter is broken.
    pub(crate) false_negatives: usize,
}

/// Fills `filter` with the prefill (untimed, all threads), then runs the operations with one
/// thread per list.
pub(crate) fn run_mix<F: Filter + Remove>(filter: &F, workload: &MixWorkload) -> MixRun {
    let threads = workload.per_thread.len();
    let (_, failed) = parallel(threads, |t| {
        piece(&workload.prefill, t, threads)
            .iter()
            .filter(|&&hash| filter.insert_hash(hash).is_err())
            .count()
    });
    let prefill_failures: usize = failed.iter().sum();
    let (elapsed, counts) = parallel(threads, |t| {
        let (mut failed_inserts, mut false_negatives) = (0, 0);
        for &op in &workload.per_thread[t] {
            match op {
                MixOp::FindPresent(hash) => {
                    false_negatives += usize::from(!filter.contains_hash(hash))
                }
                MixOp::FindAbsent(hash) => {
                    std::hint::black_box(filter.contains_hash(hash));
                }
                MixOp::Insert(hash) => {
                    failed_inserts += usize::from(filter.insert_hash(hash).is_err())
                }
                MixOp::Remove(hash) => {
                    false_negatives += usize::from(filter.remove_hash(hash) != Ok(true));
                }
            }
        }
        (failed_inserts, false_negatives)
    });
    MixRun {
        elapsed,
        failed_inserts: prefill_failures + counts.iter().map(|c| c.0).sum::<usize>(),
        false_negatives: counts.iter().map(|c| c.1).sum(),
    }
}

/// The filters of the comparison, by name, each built for a table of `2^bucket_bits` buckets
/// of 4 entries with 16-bit fingerprints.
pub(crate) const MIX_FILTERS: [&str; 4] = [
    "LockFreeCuckooFilter",
    "LockedCuckooFilter",
    "coarse (one RwLock)",
    "atomic-cuckoo-filter",
];

/// Runs the mix on the filter named `name` (one of [`MIX_FILTERS`]), freshly built.
pub(crate) fn run_mix_named(name: &str, bucket_bits: u32, workload: &MixWorkload) -> MixRun {
    match name {
        "LockFreeCuckooFilter" => run_mix(
            &LockFreeCuckooFilter::with_bits(bucket_bits, MIX_FINGERPRINT_BITS).expect("valid"),
            workload,
        ),
        "LockedCuckooFilter" => run_mix(
            &LockedCuckooFilter::with_bits(bucket_bits, MIX_FINGERPRINT_BITS).expect("valid"),
            workload,
        ),
        // The coarse-grained filter of paper 001 §1.2: one lock around the whole table (a
        // reader/writer lock, so finds still run side by side).
        "coarse (one RwLock)" => run_mix(
            &LockedCuckooFilter::with_stripes(bucket_bits, MIX_FINGERPRINT_BITS, 1).expect("valid"),
            workload,
        ),
        "atomic-cuckoo-filter" => run_mix(&AtomicCuckoo::with_buckets(bucket_bits), workload),
        other => panic!("unknown cuckoo filter {other:?}"),
    }
}

/// The `atomic-cuckoo-filter` crate's `CuckooFilter` (lock-free reads and inserts, a global
/// lock around evictions) as a `conqf::Filter + Remove`. It hashes what it is given with its
/// own hasher, so it gets our 64-bit hash as the item and hashes it once more.
pub(crate) struct AtomicCuckoo(atomic_cuckoo_filter::CuckooFilter);

impl AtomicCuckoo {
    /// `2^bucket_bits` buckets of 4 entries, 16-bit fingerprints, as our filters get.
    pub(crate) fn with_buckets(bucket_bits: u32) -> Self {
        AtomicCuckoo(
            atomic_cuckoo_filter::CuckooFilter::builder()
                .capacity(4usize << bucket_bits)
                .bucket_size(4)
                .fingerprint_size(16)
                .build()
                .expect("valid parameters"),
        )
    }
}

impl Filter for AtomicCuckoo {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        self.0.insert(&hash).map(|()| true).map_err(|_| Error::Full)
    }
    fn contains_hash(&self, hash: u64) -> bool {
        self.0.contains(&hash)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    fn memory_bytes(&self) -> usize {
        // 16-bit fingerprints in buckets of 4 (its layout); not reported by the crate.
        self.0.capacity() * 2
    }
    fn false_positive_rate(&self) -> f64 {
        conqf::cuckoo_fpr(self.len() as f64 / self.capacity() as f64, 16)
    }
}

impl Remove for AtomicCuckoo {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        Ok(self.0.remove(&hash))
    }
}
