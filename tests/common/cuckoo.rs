//! Both cuckoo filters (paper 001) behind one trait, for the tests that run the same checks on
//! each: their placement, stored entries, invariant check and byte format are inherent methods
//! of each filter, not part of the crate's traits. Shared by the integration tests (as
//! `common::cuckoo`) and the loom models (`tests/loom/main.rs` includes this file).

use conqf::{Count, Error, Filter, LockFreeCuckooFilter, LockedCuckooFilter, Remove};

/// What the tests need from either cuckoo filter. Object-safe apart from the two constructors.
pub(crate) trait CuckooUnderTest: Filter + Remove + Count + 'static {
    /// A filter of `2^bucket_bits` buckets of `fingerprint_bits`-bit fingerprints; the locked one
    /// with two stripes, so its moves and queries take one lock or two.
    fn build(bucket_bits: u32, fingerprint_bits: u32) -> Self
    where
        Self: Sized;
    /// `hash`'s fingerprint and its two buckets, the smaller first.
    fn place(&self, hash: u64) -> (u64, [usize; 2]);
    /// Every stored fingerprint with its two buckets, as `place` gives them.
    fn stored(&self) -> Vec<(u64, [usize; 2])>;
    /// The filter's own invariant check.
    fn invariants(&self) -> Result<(), String>;
    /// `to_bytes`.
    fn bytes(&mut self) -> Vec<u8>;
    /// What `write_to` writes.
    fn stream(&mut self) -> Vec<u8>;
    /// `from_bytes`.
    fn decode(bytes: &[u8]) -> Result<Self, Error>
    where
        Self: Sized;
}

/// Implements [`CuckooUnderTest`] for a cuckoo filter type, built by `$build`.
macro_rules! cuckoo_under_test {
    ($filter:ty, $build:expr) => {
        impl CuckooUnderTest for $filter {
            fn build(bucket_bits: u32, fingerprint_bits: u32) -> Self {
                let build: fn(u32, u32) -> Result<Self, Error> = $build;
                build(bucket_bits, fingerprint_bits).unwrap()
            }
            fn place(&self, hash: u64) -> (u64, [usize; 2]) {
                let (a, b, fingerprint) = self.placement(hash);
                (fingerprint, [a.min(b), a.max(b)])
            }
            fn stored(&self) -> Vec<(u64, [usize; 2])> {
                self.fingerprints()
            }
            fn invariants(&self) -> Result<(), String> {
                self.check_invariants()
            }
            fn bytes(&mut self) -> Vec<u8> {
                self.to_bytes()
            }
            fn stream(&mut self) -> Vec<u8> {
                let mut out = Vec::new();
                self.write_to(&mut out).unwrap();
                out
            }
            fn decode(bytes: &[u8]) -> Result<Self, Error> {
                Self::from_bytes(bytes)
            }
        }
    };
}

cuckoo_under_test!(LockFreeCuckooFilter, |b, f| Self::with_bits(b, f));
cuckoo_under_test!(LockedCuckooFilter, |b, f| Self::with_stripes(b, f, 2));
