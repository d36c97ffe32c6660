//! Persistence throughput (issue 10): writing and reading a `SequentialQf` of `2^22` slots
//! (`r = 10`, 72% full; `CONQF_SCALE` changes the size as for the other benches), beside the
//! limits of the same bytes: copying them (`copy`) and hashing them with xxh3 (`checksum`),
//! which every read does once.
//!
//! Groups, per byte of the file (criterion `Throughput::Bytes`):
//! * `to_bytes`, `from_bytes` (checksum, invariants, copy into a new table), `view`
//!   (`SequentialQfRef::from_bytes`: checksum and invariants, no copy), `copy`, `checksum`;
//! * `lookup`: positive lookups in the owned filter and in the view over the bytes, per lookup.
//! * `persist_cuckoo`, per stored key: `to_bytes` and `from_bytes` of both cuckoo filters with
//!   `2^(q-2)` buckets of 4 entries (as many entries as the quotient filter has slots) and
//!   16-bit fingerprints at the mix load of 40%, beside the `cuckoofilter` crate's
//!   `export` and `From<ExportedCuckooFilter>` (8-bit fingerprints, no checksum or
//!   validation) holding the same keys.
//!
//! No peer crate is measured: `qfilter` and `fastbloom` serialise only through their `serde`
//! features, which this crate's dev-dependencies do not enable.
//!
//! Run: `cargo bench --bench persist`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use common::cuckoo_mix::{MIX_FINGERPRINT_BITS, MIX_LOAD};
use common::{items_at, key_hashes, Scale, FIG2_FILL, POSITIVE_KEYS, REMAINDER_BITS};
use conqf::{LockFreeCuckooFilter, LockedCuckooFilter, SequentialQf, SequentialQfRef};
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

    persist_cuckoo(&mut criterion, q);
    criterion.final_summary();
}

/// The cuckoo filters' `to_bytes`/`from_bytes` beside the `cuckoofilter` crate's export and
/// import, per stored key.
fn persist_cuckoo(criterion: &mut Criterion, q: u32) {
    let bucket_bits = q - 2;
    let keys = key_hashes(POSITIVE_KEYS, items_at(q, MIX_LOAD));
    let mut lock_free =
        LockFreeCuckooFilter::with_bits(bucket_bits, MIX_FINGERPRINT_BITS).expect("valid");
    let locked = LockedCuckooFilter::with_bits(bucket_bits, MIX_FINGERPRINT_BITS).expect("valid");
    type Peer = cuckoofilter::CuckooFilter<std::collections::hash_map::DefaultHasher>;
    let mut peer = Peer::with_capacity(keys.len() * 2);
    for &h in &keys {
        conqf::Filter::insert_hash(&lock_free, h).expect("fits at 40%");
        conqf::Filter::insert_hash(&locked, h).expect("fits at 40%");
        peer.add(&h).expect("fits at 40%");
    }
    let bytes = lock_free.to_bytes();

    let mut group = criterion.benchmark_group(format!("persist_cuckoo/q{q}"));
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("lock_free/to_bytes", |b| {
        b.iter(|| black_box(lock_free.to_bytes()))
    });
    group.bench_function("lock_free/from_bytes", |b| {
        b.iter(|| black_box(LockFreeCuckooFilter::from_bytes(&bytes).expect("valid")))
    });
    group.bench_function("locked/to_bytes", |b| {
        b.iter(|| black_box(locked.to_bytes()))
    });
    group.bench_function("locked/from_bytes", |b| {
        b.iter(|| black_box(LockedCuckooFilter::from_bytes(&bytes).expect("valid")))
    });
    group.bench_function("cuckoofilter/export", |b| {
        b.iter(|| black_box(peer.export()))
    });
    let exported = peer.export();
    group.bench_function("cuckoofilter/import", |b| {
        b.iter(|| {
            let copy = cuckoofilter::ExportedCuckooFilter {
                values: exported.values.clone(),
                length: exported.length,
            };
            black_box(Peer::from(copy))
        })
    });
    group.finish();
}
