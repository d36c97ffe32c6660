//! Throughput against fill degree, paper 000 Figure 3: at every 10% of fill, the time of the
//! last 100k inserts up to that fill, of 100k unsuccessful lookups and of 100k successful ones,
//! for every quotient filter and the Bloom baseline, from one thread (`examples/figures.rs`
//! prints the same experiment as a table; this is its criterion form).
//!
//! `CONQF_SCALE=quick|default|paper` picks the table size (2^16, 2^22 or 2^25 slots, r = 10;
//! `LinearProbingQf` has r = 13 and stops at its 70% load cap). Keys are hashed before timing.
//!
//! Run: `cargo bench --bench fill_degree`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{
    items_at, key_hashes, qfilter_like, table_count_hits, table_insert_all, Direct, Scale,
    SeqTable, NEGATIVE_KEYS, POSITIVE_KEYS, REMAINDER_BITS,
};
use conqf::{
    AtomicBloomFilter, CountingQf, ExternallyLockedQf, LinearProbingQf, LocallyLockedQf,
    SequentialQf, TwoBitQf,
};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

/// Operations timed per point, as in the paper.
const OPERATIONS: usize = 100_000;

/// The keys of one run: all inserts in order, and the absent keys looked up at every level.
struct Keys {
    quotient_bits: u32,
    inserts: Vec<u64>,
    negatives: Vec<u64>,
}

/// Measures one filter at fills `10%..=max_percent`: `make` builds an empty table.
fn curve<T: SeqTable>(
    c: &mut Criterion,
    keys: &Keys,
    name: &str,
    max_percent: usize,
    make: impl Fn() -> T,
) {
    for percent in (10..=max_percent).step_by(10) {
        let fill = items_at(keys.quotient_bits, percent as f64 / 100.0);
        let operations = OPERATIONS.min(fill);
        let before = &keys.inserts[..fill - operations];
        let last = &keys.inserts[fill - operations..fill];
        let mut group = c.benchmark_group(format!("fig3/{percent}%"));
        group
            .throughput(Throughput::Elements(operations as u64))
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        group.bench_function(BenchmarkId::new("insert", name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut table = make();
                    black_box(table_insert_all(&mut table, before));
                    let start = Instant::now();
                    black_box(table_insert_all(&mut table, last));
                    total += start.elapsed();
                }
                total
            })
        });
        let mut table = make();
        black_box(table_insert_all(&mut table, &keys.inserts[..fill]));
        let absent = &keys.negatives[..operations];
        // Inserted keys spread evenly over everything inserted so far, as in the figures
        // runner (the last keys inserted would favour a table whose recent inserts sit close).
        let present: Vec<u64> = (0..operations)
            .map(|j| keys.inserts[j * fill / operations])
            .collect();
        group.bench_function(BenchmarkId::new("lookup_negative", name), |b| {
            b.iter(|| table_count_hits(&table, absent))
        });
        group.bench_function(BenchmarkId::new("lookup_positive", name), |b| {
            b.iter(|| table_count_hits(&table, &present))
        });
        group.finish();
    }
}

/// The filter, or a panic naming the bad parameters (the benches use only valid ones).
fn valid<F>(result: Result<F, conqf::Error>) -> F {
    result.expect("valid parameters")
}

fn benches(c: &mut Criterion) {
    let scale = Scale::from_env().unwrap_or_else(|why| panic!("{why}"));
    let q = scale.quotient_bits();
    let r = REMAINDER_BITS;
    let keys = Keys {
        quotient_bits: q,
        inserts: key_hashes(POSITIVE_KEYS, items_at(q, 0.9)),
        negatives: key_hashes(NEGATIVE_KEYS, OPERATIONS),
    };
    let bytes = valid(SequentialQf::with_bits(q, r)).memory_bytes();

    curve(c, &keys, "SequentialQf", 90, || {
        valid(SequentialQf::with_bits(q, r))
    });
    curve(c, &keys, "qfilter", 90, || qfilter_like(q, r));
    // The qfilter peer's parameters (2^q slots of r + 1 bits): like for like.
    curve(c, &keys, "CountingQf", 90, || {
        Direct(valid(CountingQf::with_bits(q, r + 1)))
    });
    curve(c, &keys, "LocallyLockedQf", 90, || {
        Direct(valid(LocallyLockedQf::with_bits(q, r)))
    });
    curve(c, &keys, "ExternallyLockedQf", 90, || {
        Direct(valid(ExternallyLockedQf::with_bits(q, r)))
    });
    curve(c, &keys, "TwoBitQf", 90, || {
        Direct(valid(TwoBitQf::with_bits(q, r)))
    });
    curve(c, &keys, "LinearProbingQf", 70, || {
        Direct(valid(LinearProbingQf::with_bits(q, r + 3)))
    });
    curve(c, &keys, "AtomicBloomFilter", 90, || {
        Direct(valid(AtomicBloomFilter::with_memory(bytes, 4)))
    });
}

fn main() {
    // What `criterion_main!` expands to, without its undocumented public function.
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
