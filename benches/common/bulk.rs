//! The batch experiments of paper 004 Figures 10-13 on CPU threads, shared by `benches/bulk.rs`
//! and the `bulk` figure of `examples/figures.rs`: bulk builds by the three methods (with and
//! without dedupe) and one-by-one inserts, `contains` against `contains_batch`, and supercluster inserts against merge-inserts.
//! Every function times one run on prehashed keys inside a rayon pool of the chosen size.

use std::hint::black_box;
use std::time::{Duration, Instant};

use conqf::{BatchInsert, BuildMethod, Dedupe, SequentialQf};

/// Remainder bits of paper 004's experiments (§VII: r = 5, so a slot is one byte).
pub(crate) const BULK_REMAINDER_BITS: u32 = 5;

/// The fills of paper 004 Figures 11-13, in percent.
pub(crate) const BULK_FILLS: [u32; 10] = [10, 20, 30, 40, 50, 60, 70, 80, 90, 95];

/// The fill of the lookup and batch-insert experiments (the 70%).
pub(crate) const BULK_LOOKUP_FILL: f64 = 0.7;

/// A rayon pool of `threads` workers: the library's parallel steps run on it inside `install`.
pub(crate) fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .expect("a thread pool")
}

/// The bulk builds of paper 004 Figure 13: each method with and without deduplication.
pub(crate) fn builds_with_and_without_dedupe() -> impl Iterator<Item = (BuildMethod, Dedupe)> {
    [Dedupe::On, Dedupe::Off]
        .into_iter()
        .flat_map(|dedupe| BuildMethod::ALL.map(|method| (method, dedupe)))
}

/// A build's name: the method's, with ", no dedupe" when it keeps repeats.
pub(crate) fn build_name(method: BuildMethod, dedupe: Dedupe) -> String {
    match dedupe {
        Dedupe::On => method.name().to_string(),
        Dedupe::Off => format!("{}, no dedupe", method.name()),
    }
}

/// The time of one bulk build of `hashes` into `2^q` slots.
pub(crate) fn build_time(
    pool: &rayon::ThreadPool,
    quotient_bits: u32,
    hashes: &[u64],
    (method, dedupe): (BuildMethod, Dedupe),
) -> Duration {
    pool.install(|| {
        let start = Instant::now();
        let filter = SequentialQf::bulk_build_with(
            quotient_bits,
            BULK_REMAINDER_BITS,
            hashes,
            method,
            dedupe,
        )
        .expect("the keys fit");
        let elapsed = start.elapsed();
        black_box(filter.len());
        elapsed
    })
}

/// The time of inserting `hashes` one by one into an empty `SequentialQf` (one thread).
pub(crate) fn one_by_one_time(quotient_bits: u32, hashes: &[u64]) -> Duration {
    let mut filter =
        SequentialQf::with_bits(quotient_bits, BULK_REMAINDER_BITS).expect("valid parameters");
    let start = Instant::now();
    for &hash in hashes {
        black_box(filter.insert_hash(hash).expect("the keys fit"));
    }
    start.elapsed()
}

/// The time of `contains_hash` on every query, one after the other (one thread).
pub(crate) fn contains_time(filter: &SequentialQf, queries: &[u64]) -> Duration {
    let start = Instant::now();
    let hits = queries.iter().filter(|&&h| filter.contains_hash(h)).count();
    let elapsed = start.elapsed();
    black_box(hits);
    elapsed
}

/// The time of one `contains_batch` over the queries.
pub(crate) fn contains_batch_time(
    pool: &rayon::ThreadPool,
    filter: &SequentialQf,
    queries: &[u64],
) -> Duration {
    let mut found = vec![false; queries.len()];
    pool.install(|| {
        let start = Instant::now();
        filter
            .contains_batch(queries, &mut found)
            .expect("one answer per query");
        let elapsed = start.elapsed();
        black_box(found.iter().filter(|&&f| f).count());
        elapsed
    })
}

/// The time of one batch insert of `batch` into a filter bulk built from `base` (untimed).
pub(crate) fn insert_batch_time(
    pool: &rayon::ThreadPool,
    quotient_bits: u32,
    base: &[u64],
    batch: &[u64],
    strategy: BatchInsert,
) -> Duration {
    pool.install(|| {
        let mut filter = SequentialQf::bulk_build(
            quotient_bits,
            BULK_REMAINDER_BITS,
            base,
            BuildMethod::default(),
        )
        .expect("the keys fit");
        let start = Instant::now();
        let stored = filter
            .insert_batch_with(batch, strategy)
            .expect("the keys fit");
        let elapsed = start.elapsed();
        black_box(stored);
        elapsed
    })
}
