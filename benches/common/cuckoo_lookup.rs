//! Single-thread lookups of the cuckoo filters beside the `cuckoofilter` crate (issue 7's
//! "single-thread lookups at least 1.2x `cuckoofilter`"), shared by `benches/cuckoo_mix.rs` and
//! the `cuckoo` figure of `examples/figures.rs`.
//!
//! Every filter holds the same keys at the same load ([`MIX_LOAD`], paper 001 §3.1) in
//! `2^bucket_bits` buckets of 4 entries with 8-bit fingerprints (the only width `cuckoofilter`
//! has), and is asked for keys as a user asks: with the key, hashing included. `cuckoofilter`
//! runs twice: with its default hasher (`std`'s SipHash, what its users get) and with xxh3, the
//! hash function of this crate, so the comparison is also made with equal hashing.

use std::hash::Hasher;
use std::hint::black_box;
use std::time::{Duration, Instant};

use conqf::{Filter, LockFreeCuckooFilter, LockedCuckooFilter};

use super::cuckoo_mix::MIX_LOAD;
use super::NEGATIVE_KEYS;

/// The fingerprint width of the comparison: `cuckoofilter` stores one byte per fingerprint.
pub(crate) const LOOKUP_FINGERPRINT_BITS: u32 = 8;

/// The filters of the comparison, by name.
pub(crate) const LOOKUP_FILTERS: [&str; 4] = [
    "LockFreeCuckooFilter",
    "LockedCuckooFilter",
    "cuckoofilter",
    "cuckoofilter (xxh3)",
];

/// The filter single-thread lookups are compared with (the faster of the two `cuckoofilter`
/// runs, the one with this crate's hash function).
pub(crate) const LOOKUP_BASELINE: &str = "cuckoofilter (xxh3)";

/// xxh3 over the bytes written, as a `std::hash::Hasher` (for `cuckoofilter`'s `H`), without a
/// heap allocation: the bytes gather in an inline buffer (a full buffer is replaced by its
/// hash, which the keys here never need: a `u64` key writes 8 bytes, a fingerprint 9).
#[derive(Default)]
pub(crate) struct Xxh3Hasher {
    buffer: [u8; 32],
    len: usize,
}

impl Hasher for Xxh3Hasher {
    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.len == self.buffer.len() {
                let folded = xxhash_rust::xxh3::xxh3_64(&self.buffer).to_le_bytes();
                self.buffer[..8].copy_from_slice(&folded);
                self.len = 8;
            }
            let take = bytes.len().min(self.buffer.len() - self.len);
            self.buffer[self.len..self.len + take].copy_from_slice(&bytes[..take]);
            self.len += take;
            bytes = &bytes[take..];
        }
    }
    fn finish(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&self.buffer[..self.len])
    }
}

/// The keys: the stored ones and as many never stored.
pub(crate) struct LookupWorkload {
    /// Keys inserted (untimed), and asked for by the positive lookups.
    pub(crate) stored: Vec<u64>,
    /// Keys never inserted, asked for by the negative lookups.
    pub(crate) absent: Vec<u64>,
}

impl LookupWorkload {
    /// [`MIX_LOAD`] of the entries of `2^bucket_bits` buckets of 4.
    pub(crate) fn new(bucket_bits: u32) -> Self {
        let stored = ((4usize << bucket_bits) as f64 * MIX_LOAD) as u64;
        LookupWorkload {
            stored: (0..stored).collect(),
            absent: (NEGATIVE_KEYS..NEGATIVE_KEYS + stored).collect(),
        }
    }
}

/// One of the filters of [`LOOKUP_FILTERS`], filled with a workload's stored keys.
pub(crate) enum LookupFilter {
    /// This crate's lock-free filter.
    LockFree(LockFreeCuckooFilter),
    /// This crate's striped filter.
    Locked(LockedCuckooFilter),
    /// `cuckoofilter` with its default hasher.
    Sip(cuckoofilter::CuckooFilter<std::collections::hash_map::DefaultHasher>),
    /// `cuckoofilter` with xxh3.
    Xxh3(cuckoofilter::CuckooFilter<Xxh3Hasher>),
}

/// What timing one filter's lookups measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LookupRun {
    /// Time of the lookups of every stored key.
    pub(crate) positive: Duration,
    /// Time of the lookups of every absent key.
    pub(crate) negative: Duration,
    /// Stored keys found (all of them, or the filter is broken).
    pub(crate) positive_hits: usize,
    /// Absent keys found (false positives).
    pub(crate) negative_hits: usize,
}

impl LookupFilter {
    /// The filter named `name` (one of [`LOOKUP_FILTERS`]) with `2^bucket_bits` buckets of 4,
    /// filled with the stored keys. Returns it and the number of inserts that failed.
    pub(crate) fn build(name: &str, bucket_bits: u32, workload: &LookupWorkload) -> (Self, usize) {
        let bits = LOOKUP_FINGERPRINT_BITS;
        let entries = 4usize << bucket_bits;
        let keys = &workload.stored;
        match name {
            "LockFreeCuckooFilter" => {
                let filter = LockFreeCuckooFilter::with_bits(bucket_bits, bits).expect("valid");
                let failed = keys.iter().filter(|k| filter.insert(k).is_err()).count();
                (LookupFilter::LockFree(filter), failed)
            }
            "LockedCuckooFilter" => {
                let filter = LockedCuckooFilter::with_bits(bucket_bits, bits).expect("valid");
                let failed = keys.iter().filter(|k| filter.insert(k).is_err()).count();
                (LookupFilter::Locked(filter), failed)
            }
            "cuckoofilter" => {
                let mut filter = cuckoofilter::CuckooFilter::with_capacity(entries);
                let failed = keys.iter().filter(|k| filter.add(k).is_err()).count();
                (LookupFilter::Sip(filter), failed)
            }
            "cuckoofilter (xxh3)" => {
                let mut filter = cuckoofilter::CuckooFilter::with_capacity(entries);
                let failed = keys.iter().filter(|k| filter.add(k).is_err()).count();
                (LookupFilter::Xxh3(filter), failed)
            }
            other => panic!("unknown cuckoo filter {other:?}"),
        }
    }

    /// How many of `keys` the filter reports present.
    pub(crate) fn count_hits(&self, keys: &[u64]) -> usize {
        match self {
            LookupFilter::LockFree(filter) => hits(keys, |k| filter.contains(k)),
            LookupFilter::Locked(filter) => hits(keys, |k| filter.contains(k)),
            LookupFilter::Sip(filter) => hits(keys, |k| filter.contains(k)),
            LookupFilter::Xxh3(filter) => hits(keys, |k| filter.contains(k)),
        }
    }

    /// Times the positive, then the negative lookups of `workload`.
    pub(crate) fn time(&self, workload: &LookupWorkload) -> LookupRun {
        let start = Instant::now();
        let positive_hits = self.count_hits(&workload.stored);
        let middle = Instant::now();
        let negative_hits = self.count_hits(&workload.absent);
        let end = Instant::now();
        LookupRun {
            positive: middle - start,
            negative: end - middle,
            positive_hits,
            negative_hits,
        }
    }
}

/// How many of `keys` `contains` finds; monomorphised per filter, so no call is indirect.
#[inline(never)]
fn hits(keys: &[u64], contains: impl Fn(&u64) -> bool) -> usize {
    keys.iter().filter(|&k| contains(black_box(k))).count()
}
