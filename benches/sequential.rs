//! Single-threaded throughput of `SequentialQf` beside the `qfilter` crate (a rank-select
//! quotient filter) and the physical limit, at the parameters of paper 000 Figure 2's sequential
//! baseline: `2^22` slots, `r = 10`, filled to 72%.
//!
//! Three groups, per element (criterion `Throughput::Elements`):
//! * `insert`: filling an empty filter to 72% (a fresh filter for every iteration);
//! * `lookup_negative` / `lookup_positive`: lookups of keys never inserted / inserted, in a full
//!   filter, plus `random_read`: one independent random 8-byte read per operation over an array
//!   of the byte size of the `SequentialQf` table, the most a lookup that touches one random
//!   cache line can do.
//!
//! All keys are hashed before the timed loops (with `conqf::hash_key`), and both filters take the
//! same 64-bit hashes (`qfilter` through its `*_fingerprint` methods), so the comparison is of
//! the tables alone. `qfilter` is sized in `common::qfilter_like`: same items, the false-positive
//! rate of our filter at 72% fill.
//!
//! Run: `cargo bench --bench sequential`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{items_at, key_hashes, qfilter_like, ReadArray, Xorshift, FIG2_FILL};
use conqf::SequentialQf;
use criterion::{BatchSize, Criterion, SamplingMode, Throughput};

/// `2^22` slots, as issue 2 asks.
const QUOTIENT_BITS: u32 = 22;
/// The paper's remainder.
const REMAINDER_BITS: u32 = common::REMAINDER_BITS;
/// Lookups per timed iteration; each iteration takes the next batch of keys, cycling through
/// all of them, so the same few cache lines are not looked up again and again.
const LOOKUP_BATCH: usize = 1 << 16;

fn new_sequential() -> SequentialQf {
    SequentialQf::with_bits(QUOTIENT_BITS, REMAINDER_BITS).expect("valid parameters")
}

/// The next `LOOKUP_BATCH` hashes after `*cursor`, wrapping around.
fn next_batch<'a>(hashes: &'a [u64], cursor: &mut usize) -> &'a [u64] {
    if *cursor + LOOKUP_BATCH > hashes.len() {
        *cursor = 0;
    }
    let batch = &hashes[*cursor..*cursor + LOOKUP_BATCH];
    *cursor += LOOKUP_BATCH;
    batch
}

fn benches(c: &mut Criterion) {
    let items = items_at(QUOTIENT_BITS, FIG2_FILL);
    let positives = key_hashes(common::POSITIVE_KEYS, items);
    let negatives = key_hashes(common::NEGATIVE_KEYS, items);

    // Insert: time filling an empty filter to 72%. `iter_batched` builds the empty filter
    // outside the timing and drops the full one outside it too.
    let mut group = c.benchmark_group("insert");
    group
        .throughput(Throughput::Elements(items as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("SequentialQf", |b| {
        b.iter_batched(
            new_sequential,
            |mut filter| {
                for &hash in &positives {
                    let _ = black_box(filter.insert_hash(hash));
                }
                filter
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("qfilter", |b| {
        b.iter_batched(
            || qfilter_like(QUOTIENT_BITS, REMAINDER_BITS),
            |mut filter| {
                for &hash in &positives {
                    let _ = black_box(filter.insert_fingerprint(false, hash));
                }
                filter
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();

    // Full filters for the lookups, built once, outside any timing. Every inserted key must be
    // found: a correctness check, not a timed assertion.
    let mut ours = new_sequential();
    let mut theirs = qfilter_like(QUOTIENT_BITS, REMAINDER_BITS);
    for &hash in &positives {
        ours.insert_hash(hash).expect("72% fill fits");
        theirs
            .insert_fingerprint(false, hash)
            .expect("72% fill fits");
    }
    assert!(positives.iter().all(|&hash| ours.contains_hash(hash)));
    assert!(positives
        .iter()
        .all(|&hash| theirs.contains_fingerprint(hash)));
    let array = ReadArray::new(ours.memory_bytes());
    eprintln!(
        "sequential bench: 2^{QUOTIENT_BITS} slots, {items} items; SequentialQf {} bytes \
         (r = {REMAINDER_BITS}), qfilter {} bytes (fingerprint {} bits)",
        ours.memory_bytes(),
        theirs.memory_usage(),
        theirs.fingerprint_size(),
    );

    for (name, hashes) in [
        ("lookup_negative", &negatives),
        ("lookup_positive", &positives),
    ] {
        let mut group = c.benchmark_group(name);
        group
            .throughput(Throughput::Elements(LOOKUP_BATCH as u64))
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        let mut cursor = 0;
        group.bench_function("SequentialQf", |b| {
            b.iter(|| {
                let batch = next_batch(hashes, &mut cursor);
                batch
                    .iter()
                    .filter(|&&hash| ours.contains_hash(black_box(hash)))
                    .count()
            })
        });
        let mut cursor = 0;
        group.bench_function("qfilter", |b| {
            b.iter(|| {
                let batch = next_batch(hashes, &mut cursor);
                batch
                    .iter()
                    .filter(|&&hash| theirs.contains_fingerprint(black_box(hash)))
                    .count()
            })
        });
        // The limit: the same number of reads, each at an independent random index from a cheap
        // generator; the sum of the words read goes through `black_box`, so no read is elided.
        let mut rng = Xorshift::new(42);
        group.bench_function("random_read", |b| {
            b.iter(|| black_box(array.random_reads(&mut rng, LOOKUP_BATCH)))
        });
        group.finish();
    }
}

fn main() {
    // What `criterion_main!` expands to, without its undocumented public function.
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
