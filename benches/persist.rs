//! Persistence throughput (issue 10): writing and reading a `SequentialQf` of `2^22` slots
//! (`r = 10`, 72% full; `CONQF_SCALE` changes the size as for the other benches), beside the
//! limits of the same bytes: copying them (`copy`) and hashing them with xxh3 (`checksum`),
//! which every read does once.
//!
//! Groups, per byte of the file (criterion `Throughput::Bytes`):
//! * `to_bytes`, `from_bytes` (checksum, invariants, copy into a new table), `view`
//!   (`SequentialQfRef::from_bytes`: checksum and invariants, no copy), `copy`, `checksum`;
//! * `lookup`: positive lookups in the owned filter and in the view over the bytes, per lookup.
//!
//! No peer crate is measured: `qfilter` and `fastbloom` serialise only through their `serde`
//! features, which this crate's dev-dependencies do not enable.
//!
//! Run: `cargo bench --bench persist`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{items_at, key_hashes, Scale, FIG2_FILL, POSITIVE_KEYS, REMAINDER_BITS};
use conqf::{SequentialQf, SequentialQfRef};
use criterion::{Criterion, SamplingMode, Throughput};

fn main() {
    let scale = Scale::from_env().unwrap_or_else(|e| panic!("{e}"));
    let q = scale.quotient_bits();
    let mut filter = SequentialQf::with_bits(q, REMAINDER_BITS).expect("valid parameters");
    let keys = key_hashes(POSITIVE_KEYS, items_at(q, FIG2_FILL));
    for &h in &keys {
        filter.insert_hash(h).expect("fits at 72%");
    }
    let bytes = filter.to_bytes();

    let mut criterion = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    let mut group = criterion.benchmark_group(format!("persist/q{q}"));
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("to_bytes", |b| b.iter(|| black_box(filter.to_bytes())));
    group.bench_function("from_bytes", |b| {
        b.iter(|| black_box(SequentialQf::from_bytes(&bytes).expect("valid")))
    });
    group.bench_function("view", |b| {
        b.iter(|| black_box(SequentialQfRef::from_bytes(&bytes).expect("valid").len()))
    });
    group.bench_function("copy", |b| b.iter(|| black_box(bytes.to_vec())));
    group.bench_function("checksum", |b| {
        b.iter(|| black_box(xxhash_rust::xxh3::xxh3_64(&bytes)))
    });
    group.finish();

    let view = SequentialQfRef::from_bytes(&bytes).expect("valid");
    let probes = &keys[..keys.len().min(1 << 16)];
    let mut group = criterion.benchmark_group(format!("persist_lookup/q{q}"));
    group.throughput(Throughput::Elements(probes.len() as u64));
    group.bench_function("owned", |b| {
        b.iter(|| probes.iter().filter(|&&h| filter.contains_hash(h)).count())
    });
    group.bench_function("view", |b| {
        b.iter(|| probes.iter().filter(|&&h| view.contains_hash(h)).count())
    });
    group.finish();
    criterion.final_summary();
}
