//! Paper 001's experiment (§3.1): a cuckoo table at load 0.4 under 90% finds, 5% inserts and
//! 5% removes, with 1, 2, ... threads: `LockFreeCuckooFilter` beside `LockedCuckooFilter`
//! (striped, writer-fair locks), the coarse-grained filter (one lock around the whole table,
//! paper 001 §1.2) and the `atomic-cuckoo-filter` crate, all with 16-bit fingerprints and 4-entry
//! buckets; plus single-thread lookups of both filters beside the `cuckoofilter` crate (with its
//! default hasher and with xxh3) at 8-bit fingerprints, its only width.
//!
//! Paper 001 §3.3's associativity table (2 to 128 entries per bucket) is not reproduced: this
//! crate's buckets have 4 entries (the 2-bit entry states and the same-index rule are built for
//! them).
//!
//! Environment: `CONQF_THREADS=1,2,4` picks the thread counts (default 1 up to the available
//! parallelism); `CONQF_SCALE=quick|default|paper` the size (2^16, 2^22 or 2^25 entries, and as
//! many operations per run).
//!
//! Run: `cargo bench --bench cuckoo_mix`.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::cuckoo_lookup::{LookupFilter, LookupWorkload, LOOKUP_FILTERS};
use common::cuckoo_mix::{run_mix_named, MixWorkload, MIX_FILTERS};
use common::{thread_counts, Scale};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

fn mix(c: &mut Criterion, bucket_bits: u32) {
    let ops = 4usize << bucket_bits;
    let mut group = c.benchmark_group("cuckoo_mix/90_5_5");
    group
        .throughput(Throughput::Elements(ops as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for threads in thread_counts() {
        let workload = MixWorkload::new(bucket_bits, ops, threads);
        for name in MIX_FILTERS {
            group.bench_function(BenchmarkId::new(name, threads), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| {
                            let run = run_mix_named(name, bucket_bits, &workload);
                            assert_eq!(run.false_negatives, 0, "{name}: false negatives");
                            run.elapsed
                        })
                        .sum()
                })
            });
        }
    }
    group.finish();
}

/// Single-thread lookups at load 0.4 with 8-bit fingerprints (`cuckoofilter`'s only width),
/// hashing included: every filter is called as a user calls it, with the key; positive and
/// negative lookups apart.
fn lookups(c: &mut Criterion, bucket_bits: u32) {
    let workload = LookupWorkload::new(bucket_bits);
    let mut group = c.benchmark_group("cuckoo_lookup/single_thread");
    group
        .throughput(Throughput::Elements(workload.stored.len() as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for name in LOOKUP_FILTERS {
        let (filter, failed) = LookupFilter::build(name, bucket_bits, &workload);
        assert_eq!(failed, 0, "{name}: inserts failed at load 0.4");
        for (phase, keys) in [
            ("positive", &workload.stored),
            ("negative", &workload.absent),
        ] {
            group.bench_function(BenchmarkId::new(name, phase), |b| {
                b.iter(|| filter.count_hits(keys))
            });
        }
    }
    group.finish();
}

fn main() {
    let scale = Scale::from_env().unwrap_or_else(|why| panic!("{why}"));
    // 2^q entries: buckets of 4.
    let bucket_bits = scale.quotient_bits() - 2;
    let mut c = Criterion::default().configure_from_args();
    mix(&mut c, bucket_bits);
    lookups(&mut c, bucket_bits);
    c.final_summary();
}
