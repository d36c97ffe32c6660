//! Both cuckoo filters through the public API: parameter validation, sizing, `Full` that keeps
//! every stored key, duplicates, and the false-positive rate against the analytical bound.

mod common;

use common::cuckoo::CuckooUnderTest;
use conqf::{cuckoo_fpr, hash_key, Error, Filter, LockFreeCuckooFilter, LockedCuckooFilter};

fn both(bucket_bits: u32, fingerprint_bits: u32) -> Vec<Box<dyn CuckooUnderTest>> {
    vec![
        Box::new(LockFreeCuckooFilter::with_bits(bucket_bits, fingerprint_bits).unwrap()),
        Box::new(LockedCuckooFilter::with_bits(bucket_bits, fingerprint_bits).unwrap()),
    ]
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    for (b, f) in [(0, 8), (37, 8), (10, 3), (10, 31)] {
        let lock_free = LockFreeCuckooFilter::with_bits(b, f);
        let locked = LockedCuckooFilter::with_bits(b, f);
        assert!(
            matches!(lock_free, Err(Error::InvalidParameters(_))),
            "{b} {f}"
        );
        assert!(
            matches!(locked, Err(Error::InvalidParameters(_))),
            "{b} {f}"
        );
    }
    for (capacity, fpr) in [
        (0, 0.01),
        (100, 0.0),
        (100, 1.0),
        (100, f64::NAN),
        (100, 1e-12),
    ] {
        assert!(matches!(
            LockFreeCuckooFilter::new(capacity, fpr),
            Err(Error::InvalidParameters(_))
        ));
        assert!(matches!(
            LockedCuckooFilter::new(capacity, fpr),
            Err(Error::InvalidParameters(_))
        ));
    }
    assert!(LockFreeCuckooFilter::new(usize::MAX, 0.01).is_err());
    assert!(LockedCuckooFilter::with_stripes(4, 8, 0).is_err());
    // The message names what ran short: fingerprint bits (it said remainder bits).
    let Err(Error::InvalidParameters(message)) = LockFreeCuckooFilter::new(100, 1e-12) else {
        panic!("accepted");
    };
    assert!(message.contains("fingerprint bits"), "{message}");
}

#[test]
fn new_meets_capacity_and_target_rate() {
    for (capacity, fpr) in [
        (1000usize, 0.01),
        (100_000, 0.001),
        (10, 0.5),
        (50_000, 1e-6),
    ] {
        let filter = LockFreeCuckooFilter::new(capacity, fpr).unwrap();
        assert!(filter.capacity() >= capacity);
        let load = capacity as f64 / (4u64 << filter.bucket_bits()) as f64;
        assert!(cuckoo_fpr(load, filter.fingerprint_bits()) <= fpr);
        // The smallest fingerprint that meets the target at full capacity, at least 8 bits
        // (smaller ones cap the load below 70% on large tables).
        let f = filter.fingerprint_bits();
        assert!(f >= 8);
        assert!(
            f == 8 || cuckoo_fpr(0.7, f - 1) > fpr,
            "{capacity} {fpr}: {f} bits"
        );
    }
}

#[test]
fn fills_to_capacity_without_a_failure() {
    for f in [8, 12, 16] {
        for filter in both(12, f) {
            let capacity = filter.capacity() as u64;
            for k in 0..capacity {
                assert_eq!(filter.insert_hash(hash_key(&k)), Ok(true), "f {f} key {k}");
            }
            assert!((0..capacity).all(|k| filter.contains_hash(hash_key(&k))));
            filter.invariants().unwrap();
        }
    }
}

#[test]
fn full_keeps_every_stored_key_and_stays_usable() {
    for filter in both(6, 12) {
        let mut stored = Vec::new();
        let mut fulls = 0;
        for k in 0..2000u64 {
            match filter.insert_hash(hash_key(&k)) {
                Ok(true) => stored.push(k),
                Err(Error::Full) => fulls += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(fulls > 0, "the table never filled");
        assert_eq!(filter.len(), stored.len());
        for &k in &stored {
            assert!(filter.contains_hash(hash_key(&k)), "Full dropped key {k}");
        }
        filter.invariants().unwrap();
        // Still usable: removing makes room again.
        for &k in &stored[..10] {
            assert_eq!(filter.remove_hash(hash_key(&k)), Ok(true));
        }
        assert_eq!(filter.insert_hash(hash_key(&stored[0])), Ok(true));
        filter.invariants().unwrap();
    }
}

#[test]
fn duplicates_are_stored_and_removed_one_copy_at_a_time() {
    for filter in both(6, 16) {
        let h = hash_key("dup");
        for _ in 0..3 {
            assert_eq!(filter.insert_hash(h), Ok(true));
        }
        assert_eq!(filter.len(), 3);
        for left in (0..3).rev() {
            assert_eq!(filter.remove_hash(h), Ok(true));
            assert_eq!(filter.contains_hash(h), left > 0);
        }
        assert_eq!(filter.remove_hash(h), Ok(false));
        // Two buckets of 4 entries hold at most 8 copies of one fingerprint; the ninth is Full
        // and the eight stay.
        for _ in 0..8 {
            assert_eq!(filter.insert_hash(h), Ok(true));
        }
        assert_eq!(filter.insert_hash(h), Err(Error::Full));
        assert_eq!(filter.len(), 8);
        filter.invariants().unwrap();
    }
}

#[test]
fn placement_is_partial_key_cuckoo_hashing() {
    let filter = LockFreeCuckooFilter::with_bits(10, 8).unwrap();
    for k in 0..2000u64 {
        let (b1, b2, fp) = filter.placement(hash_key(&k));
        assert!(b1 < 1024 && b2 < 1024 && b1 != b2 && (1..256).contains(&fp));
        // The primary bucket is the hash's top bits and the fingerprint the next ones (unless
        // those are 0, which is re-mixed away).
        let hash = hash_key(&k);
        if (hash >> 46) & 0xff != 0 {
            assert_eq!((b1, fp), ((hash >> 54) as usize, (hash >> 46) & 0xff));
        }
        // The alternate bucket depends on the bucket and fingerprint only, and going there and
        // back is the identity: a hash with primary b2 and the same fingerprint has alternate b1.
        let mirrored = ((b2 as u64) << 54) | (fp << 46);
        assert_eq!(filter.placement(mirrored), (b2, b1, fp));
    }
    // Stored pairs are the placements' pairs.
    filter.insert_hash(hash_key(&1u64)).unwrap();
    let (b1, b2, fp) = filter.placement(hash_key(&1u64));
    assert_eq!(filter.fingerprints(), vec![(fp, [b1.min(b2), b1.max(b2)])]);
}

/// The measured false-positive rate of keys never inserted stays within the analytical rate at
/// that fill (with slack for sampling: the standard deviation of the count is about its square
/// root).
#[test]
fn false_positive_rate_within_the_analytical_bound() {
    for f in [8, 12] {
        for filter in both(14, f) {
            let n = filter.capacity() as u64;
            for k in 0..n {
                filter.insert_hash(hash_key(&k)).unwrap();
            }
            let trials = 400_000u64;
            let hits = (n..n + trials)
                .filter(|k| filter.contains_hash(hash_key(k)))
                .count() as f64;
            let expected = filter.false_positive_rate() * trials as f64;
            assert!(
                hits <= expected + 4.0 * expected.sqrt() + 4.0,
                "f {f}: {hits} false positives, expected {expected}"
            );
            assert!(
                hits >= expected - 4.0 * expected.sqrt() - 4.0,
                "f {f}: {hits} vs {expected}"
            );
        }
    }
}
