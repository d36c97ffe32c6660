//! Thread scaling, paper 000 Figure 2: fill `2^q` slots to 72% with all threads, then look up
//! keys never inserted and keys inserted, with 1, 2, ... threads; throughput per element.
//!
//! `SequentialQf` called directly on one thread is the baseline every speedup is measured
//! against; `qfilter` (one remainder bit more, the same false-positive rate) runs the same way
//! beside it. The concurrent part is written once, generically over `conqf::Filter`
//! ([`concurrent`]), so each concurrent filter joins with one line in [`benches`]:
//! `SequentialQf` and `qfilter` behind a global `Mutex`, `LocallyLockedQf`,
//! `ExternallyLockedQf`, `TwoBitQf`, `CountingQf`, `LinearProbingQf` (the paper's r = 10 + 3
//! bits, its load cap raised to the figure's 72%), `AtomicBloomFilter` and the `fastbloom`
//! crate's atomic Bloom filter (both with the r = 10 table's memory and 4 hash functions, as
//! paper 000 §5). The random-read limit is measured at every thread count too.
//! The group `fig2/remove` times the removal of every inserted key (the workload of
//! `benches/common/removes.rs`, the figures runner's `removes`) for this file's filters that
//! remove.
//!
//! Environment: `CONQF_THREADS=1,2,4` picks the thread counts (default 1 up to the available
//! parallelism); `CONQF_SCALE=quick|default|paper` the size (2^16, 2^22 or 2^25 slots).
//!
//! Run: `cargo bench --bench thread_scaling`. Keys are hashed before every timed loop.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::removes::{removes_concurrent, removes_sequential};
use common::{
    count_hits, insert_all, items_at, key_hashes, parallel, parallel_random_reads, piece,
    qfilter_like, table_count_hits, table_insert_all, thread_counts, FastBloom, Locked, ReadArray,
    Scale, SeqTable, FIG2_FILL, REMAINDER_BITS,
};
use conqf::{
    AtomicBloomFilter, CountingQf, Error, ExternallyLockedQf, Filter, LinearProbingQf,
    LocallyLockedQf, Remove, SequentialQf, TwoBitQf,
};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};

/// The workload every filter gets.
struct Setup {
    quotient_bits: u32,
    positives: Vec<u64>,
    negatives: Vec<u64>,
    threads: Vec<usize>,
}

/// A benchmark group with the settings of this file: one iteration is a whole phase (millions of
/// operations), so few flat samples suffice.
fn group<'a>(
    c: &'a mut Criterion,
    phase: &str,
    elements: usize,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(format!("fig2/{phase}"));
    group
        .throughput(Throughput::Elements(elements as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group
}

/// A table on one thread, called directly (no lock, no spawned thread): `SequentialQf`, the
/// baseline, and `qfilter`, the rank-select filter users pick today. `make` builds it empty.
fn sequential<T: SeqTable>(c: &mut Criterion, setup: &Setup, name: &str, make: impl Fn() -> T) {
    let mut g = group(c, "insert", setup.positives.len());
    g.bench_function(BenchmarkId::new(name, 1), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut filter = make();
                let start = Instant::now();
                black_box(table_insert_all(&mut filter, &setup.positives));
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();

    let mut filter = make();
    assert_eq!(table_insert_all(&mut filter, &setup.positives), 0);
    for (phase, hashes) in [
        ("lookup_negative", &setup.negatives),
        ("lookup_positive", &setup.positives),
    ] {
        let mut g = group(c, phase, hashes.len());
        g.bench_function(BenchmarkId::new(name, 1), |b| {
            b.iter(|| table_count_hits(&filter, hashes))
        });
        g.finish();
    }
}

/// Figure 2 for one concurrent filter at every thread count: `make` builds an empty filter of
/// `2^q` slots.
fn concurrent<F: Filter>(
    c: &mut Criterion,
    setup: &Setup,
    name: &str,
    make: impl Fn() -> Result<F, Error>,
) {
    let new = || make().unwrap_or_else(|error| panic!("{name}: {error}"));
    let mut g = group(c, "insert", setup.positives.len());
    for &threads in &setup.threads {
        g.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let filter = new();
                    let (elapsed, failed) = parallel(threads, |i| {
                        insert_all(&filter, piece(&setup.positives, i, threads))
                    });
                    black_box(failed);
                    total += elapsed;
                }
                total
            })
        });
    }
    g.finish();

    // One full filter serves the lookups at every thread count. A filter may refuse a few
    // inserts (`LinearProbingQf` when a stretch reaches the end of its overflow tail): they are
    // counted and reported, and their keys' lookups still run.
    let filter = new();
    let failed = insert_all(&filter, &setup.positives);
    if failed > 0 {
        eprintln!(
            "warning: {name}: {failed} of {} inserts failed (full)",
            setup.positives.len()
        );
    }
    for (phase, hashes) in [
        ("lookup_negative", &setup.negatives),
        ("lookup_positive", &setup.positives),
    ] {
        let mut g = group(c, phase, hashes.len());
        for &threads in &setup.threads {
            g.bench_function(BenchmarkId::new(name, threads), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| {
                            let (elapsed, hits) = parallel(threads, |i| {
                                count_hits(&filter, piece(hashes, i, threads))
                            });
                            black_box(hits);
                            elapsed
                        })
                        .sum()
                })
            });
        }
        g.finish();
    }
}

/// The removal of every inserted key from a table filled to 72% (untimed, as is building the
/// table: each iteration builds and fills its own, so a sample takes several times its timed
/// span) by the concurrent filter `make` builds, at every thread count.
fn removals<F: Remove>(
    c: &mut Criterion,
    setup: &Setup,
    name: &str,
    make: impl Fn() -> Result<F, Error>,
) {
    let keys = &setup.positives;
    let mut g = group(c, "remove", keys.len());
    for &threads in &setup.threads {
        g.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let filter = make().unwrap_or_else(|error| panic!("{name}: {error}"));
                        let run = removes_concurrent(&filter, keys, threads);
                        assert_eq!(run.problem(), None, "{name} with {threads} threads");
                        run.time
                    })
                    .sum()
            })
        });
    }
    g.finish();
}

/// The removal baseline: `SequentialQf` on one thread, called directly.
fn sequential_removals(c: &mut Criterion, setup: &Setup) {
    let keys = &setup.positives;
    let mut g = group(c, "remove", keys.len());
    g.bench_function(BenchmarkId::new("SequentialQf", 1), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let mut filter = SequentialQf::with_bits(setup.quotient_bits, REMAINDER_BITS)
                        .expect("valid");
                    let run = removes_sequential(&mut filter, keys);
                    assert_eq!(run.problem(), None, "SequentialQf");
                    run.time
                })
                .sum()
        })
    });
    g.finish();
}

/// The physical limit at every thread count: as many independent random 8-byte reads as there
/// are lookups, over an array of the `SequentialQf` table's size.
fn random_read_limit(c: &mut Criterion, setup: &Setup) {
    let bytes = SequentialQf::with_bits(setup.quotient_bits, REMAINDER_BITS)
        .expect("valid")
        .memory_bytes();
    let array = ReadArray::new(bytes);
    let reads = setup.positives.len();
    let mut g = group(c, "limit", reads);
    for &threads in &setup.threads {
        g.bench_function(BenchmarkId::new("random_read", threads), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| parallel_random_reads(&array, reads, threads))
                    .sum()
            })
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let scale = Scale::from_env().unwrap_or_else(|message| panic!("{message}"));
    let quotient_bits = scale.quotient_bits();
    let items = items_at(quotient_bits, FIG2_FILL);
    let setup = Setup {
        quotient_bits,
        positives: key_hashes(common::POSITIVE_KEYS, items),
        negatives: key_hashes(common::NEGATIVE_KEYS, items),
        threads: thread_counts(),
    };
    let q = quotient_bits;
    let r = REMAINDER_BITS;
    eprintln!(
        "thread_scaling: scale {}, 2^{q} slots, {items} keys, threads {:?}",
        scale.name(),
        setup.threads
    );

    sequential(c, &setup, "SequentialQf", || {
        SequentialQf::with_bits(q, r).expect("valid")
    });
    // `qfilter` with one remainder bit more (`qfilter_like`: the same false-positive rate).
    sequential(c, &setup, "qfilter", || qfilter_like(q, r));

    // The Bloom filters get the memory of the r = 10 quotient filter and 4 hash functions.
    let bytes = SequentialQf::with_bits(q, r).expect("valid").memory_bytes();

    // The concurrent filters: one line each.
    concurrent(c, &setup, "SequentialQf+Mutex", || {
        SequentialQf::with_bits(q, r).map(Locked::new)
    });
    concurrent(c, &setup, "qfilter+Mutex", || {
        Ok(Locked::new(qfilter_like(q, r)))
    });
    concurrent(c, &setup, "LocallyLockedQf", || {
        LocallyLockedQf::with_bits(q, r)
    });
    concurrent(c, &setup, "ExternallyLockedQf", || {
        ExternallyLockedQf::with_bits(q, r)
    });
    concurrent(c, &setup, "TwoBitQf", || TwoBitQf::with_bits(q, r));
    concurrent(c, &setup, "LinearProbingQf", || {
        LinearProbingQf::builder()
            .max_load(FIG2_FILL)
            .build_with_bits(q, r + 3)
    });
    concurrent(c, &setup, "AtomicBloomFilter", || {
        AtomicBloomFilter::with_memory(bytes, 4)
    });
    concurrent(c, &setup, "fastbloom", || {
        Ok(FastBloom::with_memory(bytes, 4))
    });
    // CountingQf with the qfilter peer's parameters (`qfilter_like`: 2^q slots of r + 1 bits,
    // the same false-positive rate), so the two rank-and-select filters compare like for like.
    concurrent(c, &setup, "CountingQf", || CountingQf::with_bits(q, r + 1));

    sequential_removals(c, &setup);
    removals(c, &setup, "SequentialQf+Mutex", || {
        SequentialQf::with_bits(q, r).map(Locked::new)
    });
    removals(c, &setup, "LocallyLockedQf", || {
        LocallyLockedQf::with_bits(q, r)
    });
    removals(c, &setup, "ExternallyLockedQf", || {
        ExternallyLockedQf::with_bits(q, r)
    });
    removals(c, &setup, "TwoBitQf", || TwoBitQf::with_bits(q, r));
    removals(c, &setup, "CountingQf", || CountingQf::with_bits(q, r + 1));

    random_read_limit(c, &setup);
}

fn main() {
    // What `criterion_main!` expands to, without its undocumented public function.
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
