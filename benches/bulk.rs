//! Batch operations, paper 004 Figures 10-13 on CPU threads (`examples/figures.rs --only bulk`
//! prints the build and lookup parts as a table and a plot):
//!
//! * `bulk/build/{fill}%`: building a `SequentialQf` of `2^q` one-byte slots (r = 5, as in the
//!   paper) to each fill from 10% to 95%, by the three bulk build methods at every thread count,
//!   with and without dedupe, and by one-by-one inserts on one thread (Figures 11-13);
//! * `bulk/lookup/{batch}`: unsuccessful lookups at 70% fill against the batch size, `contains`
//!   one by one on one thread, `contains_batch` at every thread count, and the random-read limit
//!   (the same number of independent 8-byte reads over an array of the table's size) at every
//!   thread count (Figures 8 and 9's lookups, with the batch sizes);
//! * `bulk/insert/{batch}`: a batch into a 70%-full filter by supercluster rounds, by the sweep
//!   and by merge-inserts (the inserts of Figure 10: where the strategies cross over).
//!
//! Environment: `CONQF_THREADS=1,2,4` picks the thread counts (default 1 up to the available
//! parallelism); `CONQF_SCALE=quick|default|paper` the size (2^16, 2^22 or 2^25 slots).
//! Run: `cargo bench --bench bulk`. Keys are hashed before every timed loop.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use common::bulk::{
    build_name, build_time, builds_with_and_without_dedupe, contains_batch_time, contains_time,
    insert_batch_time, one_by_one_time, pool, BULK_FILLS, BULK_LOOKUP_FILL, BULK_REMAINDER_BITS,
};
use common::{
    items_at, key_hashes, parallel_random_reads, thread_counts, ReadArray, Scale, NEGATIVE_KEYS,
};
use conqf::{BatchInsert, BuildMethod, SequentialQf};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};

/// A group whose iterations are whole runs (a build, a batch): few flat samples suffice.
fn group<'a>(
    c: &'a mut Criterion,
    name: String,
    elements: usize,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .throughput(Throughput::Elements(elements as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    group
}

/// Sums the time of `iters` runs of `run`.
fn repeat(iters: u64, run: impl Fn() -> Duration) -> Duration {
    (0..iters).map(|_| run()).sum()
}

fn builds(c: &mut Criterion, q: u32, threads: &[usize]) {
    let all = key_hashes(0, items_at(q, 0.95));
    for percent in BULK_FILLS {
        let hashes = &all[..items_at(q, percent as f64 / 100.0)];
        let mut group = group(c, format!("bulk/build/{percent}%"), hashes.len());
        group.bench_function(BenchmarkId::new("one-by-one", 1), |b| {
            b.iter_custom(|iters| repeat(iters, || one_by_one_time(q, hashes)))
        });
        for &t in threads {
            let pool = pool(t);
            for build in builds_with_and_without_dedupe() {
                let id = BenchmarkId::new(build_name(build.0, build.1), t);
                group.bench_function(id, |b| {
                    b.iter_custom(|iters| repeat(iters, || build_time(&pool, q, hashes, build)))
                });
            }
        }
        group.finish();
    }
}

fn lookups(c: &mut Criterion, q: u32, threads: &[usize]) {
    let inserted = key_hashes(0, items_at(q, BULK_LOOKUP_FILL));
    let filter = SequentialQf::bulk_build(q, BULK_REMAINDER_BITS, &inserted, Default::default())
        .expect("the keys fit");
    let largest = 1usize << q.min(20);
    let negatives = key_hashes(NEGATIVE_KEYS, largest);
    let array = ReadArray::new(filter.memory_bytes());
    black_box(array.warm());
    let mut batch = 1usize << 10;
    while batch <= largest {
        let queries = &negatives[..batch];
        let mut group = group(c, format!("bulk/lookup/{batch}"), batch);
        group.bench_function(BenchmarkId::new("contains", 1), |b| {
            b.iter_custom(|iters| repeat(iters, || contains_time(&filter, queries)))
        });
        for &t in threads {
            let pool = pool(t);
            group.bench_function(BenchmarkId::new("contains_batch", t), |b| {
                b.iter_custom(|iters| {
                    repeat(iters, || contains_batch_time(&pool, &filter, queries))
                })
            });
            group.bench_function(BenchmarkId::new("random-read limit", t), |b| {
                b.iter_custom(|iters| repeat(iters, || parallel_random_reads(&array, batch, t)))
            });
        }
        group.finish();
        batch *= 8;
    }
}

fn batch_inserts(c: &mut Criterion, q: u32, threads: &[usize]) {
    let base = key_hashes(0, items_at(q, BULK_LOOKUP_FILL));
    let extra = key_hashes(NEGATIVE_KEYS, items_at(q, 0.2));
    let mut batch = 1usize << 8;
    while batch <= extra.len() {
        let new = &extra[..batch];
        let mut group = group(c, format!("bulk/insert/{batch}"), batch);
        for &t in threads {
            let pool = pool(t);
            for (name, strategy) in [
                ("superclusters", BatchInsert::Superclusters),
                ("sweep", BatchInsert::Sweep),
                ("merge", BatchInsert::Merge(BuildMethod::default())),
            ] {
                group.bench_function(BenchmarkId::new(name, t), |b| {
                    b.iter_custom(|iters| {
                        repeat(iters, || insert_batch_time(&pool, q, &base, new, strategy))
                    })
                });
            }
        }
        group.finish();
        batch *= 8;
    }
}

fn main() {
    let scale = Scale::from_env().unwrap_or_else(|message| panic!("{message}"));
    let q = scale.quotient_bits();
    let threads = thread_counts();
    // What `criterion_main!` expands to, without its undocumented public function.
    let mut criterion = Criterion::default().configure_from_args();
    builds(&mut criterion, q, &threads);
    lookups(&mut criterion, q, &threads);
    batch_inserts(&mut criterion, q, &threads);
    criterion.final_summary();
}
