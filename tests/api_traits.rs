//! The public types' standard traits, checked at compile time: every public type prints with
//! `Debug`, every filter that takes `&self` can be shared across threads (`Send + Sync`, so an
//! `Arc<F>` works) and unwind-safe, the filters that copy themselves are `Clone`, and `Error` is a
//! `std::error::Error` that crosses threads. A type that loses one of these makes this file fail
//! to compile. The last tests check documented details of the contract at run time.

use conqf::{Count, Error, Filter};

fn debug<T: std::fmt::Debug + ?Sized>() {}
fn shared<T: Send + Sync + ?Sized>() {}
fn cloned<T: Clone>() {}

#[test]
fn every_public_type_is_debug() {
    debug::<conqf::SequentialQf>();
    debug::<conqf::LocallyLockedQf>();
    debug::<conqf::ExternallyLockedQf>();
    debug::<conqf::TwoBitQf>();
    debug::<conqf::LinearProbingQf>();
    debug::<conqf::LinearProbingBuilder>();
    debug::<conqf::CountingQf>();
    debug::<conqf::GrowableQf>();
    debug::<conqf::GrowableBuilder>();
    debug::<conqf::ExpandableQf>();
    debug::<conqf::ExpandableBuilder>();
    debug::<conqf::AtomicBloomFilter>();
    debug::<conqf::LockFreeCuckooFilter>();
    debug::<conqf::LockedCuckooFilter>();
    debug::<conqf::Counts<'static>>();
    debug::<conqf::Fingerprints<'static>>();
    debug::<conqf::SequentialQfRef<'static>>();
    debug::<conqf::CountingQfRef<'static>>();
    debug::<conqf::Fingerprint>();
    debug::<conqf::Error>();
    debug::<conqf::BuildMethod>();
    debug::<conqf::BatchLookup>();
    debug::<conqf::BatchInsert>();
    debug::<conqf::Dedupe>();
}

#[test]
fn every_shared_filter_is_send_and_sync() {
    shared::<conqf::LocallyLockedQf>();
    shared::<conqf::ExternallyLockedQf>();
    shared::<conqf::TwoBitQf>();
    shared::<conqf::LinearProbingQf>();
    shared::<conqf::CountingQf>();
    shared::<conqf::GrowableQf>();
    shared::<conqf::ExpandableQf>();
    shared::<conqf::AtomicBloomFilter>();
    shared::<conqf::LockFreeCuckooFilter>();
    shared::<conqf::LockedCuckooFilter>();
    shared::<dyn Filter>();
    shared::<dyn Count>();
    shared::<conqf::SequentialQf>();
}

/// Every filter can be used across `catch_unwind` (`&F` is `UnwindSafe`): as a `std`
/// collection of atomics would be, and `LockedCuckooFilter` too, whose `parking_lot` locks guard
/// no data of their own.
#[test]
fn every_filter_is_unwind_safe() {
    fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe + ?Sized>() {}
    unwind_safe::<conqf::SequentialQf>();
    unwind_safe::<conqf::LocallyLockedQf>();
    unwind_safe::<conqf::ExternallyLockedQf>();
    unwind_safe::<conqf::TwoBitQf>();
    unwind_safe::<conqf::LinearProbingQf>();
    unwind_safe::<conqf::CountingQf>();
    unwind_safe::<conqf::GrowableQf>();
    unwind_safe::<conqf::ExpandableQf>();
    unwind_safe::<conqf::AtomicBloomFilter>();
    unwind_safe::<conqf::LockFreeCuckooFilter>();
    unwind_safe::<conqf::LockedCuckooFilter>();
}

/// The filters a `clone` copies (the concurrent ones beside other threads, as their persistence
/// snapshot reads them); the others copy through `snapshot()` or their bytes.
#[test]
fn the_filters_that_copy_themselves_are_clone() {
    cloned::<conqf::SequentialQf>();
    cloned::<conqf::AtomicBloomFilter>();
    cloned::<conqf::LinearProbingQf>();
    cloned::<conqf::ExternallyLockedQf>();
    cloned::<conqf::CountingQf>();
    cloned::<conqf::LockedCuckooFilter>();
    cloned::<conqf::LockFreeCuckooFilter>();
}

/// The views of serialised bytes answer queries from many threads at once, like the filters;
/// the iterators move to another thread (one thread drives an iterator at a time, so `Sync` is
/// not asked of them: `Counts` keeps what its reads reached in `Cell`s and is not).
#[test]
fn byte_views_are_shared_and_iterators_move_across_threads() {
    fn sent<T: Send + ?Sized>() {}
    shared::<conqf::SequentialQfRef<'static>>();
    shared::<conqf::CountingQfRef<'static>>();
    sent::<conqf::Fingerprints<'static>>();
    sent::<conqf::Counts<'static>>();
}

#[test]
fn errors_cross_threads_as_std_errors() {
    fn std_error<E: std::error::Error + Send + Sync + 'static>() {}
    std_error::<conqf::Error>();
}

/// A failed `write_to` reaches the caller's `?` as `Error::Io`, whose message must fit a write
/// as well as a read (it said "reading a filter failed" for a full disk).
#[test]
fn a_failed_write_prints_as_filter_io() {
    struct FullDisk;
    impl std::io::Write for FullDisk {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left",
            ))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    fn save(filter: &conqf::CountingQf) -> Result<(), Error> {
        filter.write_to(FullDisk)?;
        Ok(())
    }
    let error = save(&conqf::CountingQf::new(1000, 0.01).unwrap()).unwrap_err();
    assert!(matches!(
        error,
        Error::Io(std::io::ErrorKind::StorageFull, _)
    ));
    assert_eq!(error.to_string(), "filter I/O failed: no space left");
}

#[test]
fn a_counting_filter_prints_its_shape_and_contents() {
    let filter = conqf::CountingQf::with_bits(10, 8).unwrap();
    filter.insert_count(&"pear", 3).unwrap();
    let printed = format!("{filter:?}");
    for part in [
        "quotient_bits: 10",
        "remainder_bits: 8",
        "distinct: 1",
        "len: 3",
    ] {
        assert!(printed.contains(part), "{printed:?} lacks {part:?}");
    }
    let counts = format!("{:?}", filter.counts());
    assert!(counts.starts_with("Counts"), "{counts:?}");
}

/// A Bloom filter prints its name, its shape (bits and hash functions) and its count.
#[test]
fn a_bloom_filter_prints_its_shape_and_count() {
    let filter = conqf::AtomicBloomFilter::with_memory(64, 3).unwrap();
    filter.insert(&"pear").unwrap();
    let printed = format!("{filter:?}");
    assert!(printed.starts_with("AtomicBloomFilter"), "{printed:?}");
    for part in ["bits: 512", "hash_functions: 3", "len: 1"] {
        assert!(printed.contains(part), "{printed:?} lacks {part:?}");
    }
}

/// `Filter::false_positive_rate`'s doc: 0 for every empty filter but `LinearProbingQf`, whose
/// bound is above 0 at any fill.
#[test]
fn an_empty_filter_reports_a_zero_rate_but_linear_probing() {
    use conqf::*;
    let filters: Vec<(&str, Box<dyn Filter>)> = vec![
        (
            "LocallyLockedQf",
            Box::new(LocallyLockedQf::new(1000, 0.01).unwrap()),
        ),
        (
            "ExternallyLockedQf",
            Box::new(ExternallyLockedQf::new(1000, 0.01).unwrap()),
        ),
        ("TwoBitQf", Box::new(TwoBitQf::new(1000, 0.01).unwrap())),
        ("CountingQf", Box::new(CountingQf::new(1000, 0.01).unwrap())),
        (
            "GrowableQf",
            Box::new(LocallyLockedQf::growable(1000, 0.01).build().unwrap()),
        ),
        (
            "ExpandableQf",
            Box::new(ExpandableQf::new(1000, 0.01).unwrap()),
        ),
        (
            "AtomicBloomFilter",
            Box::new(AtomicBloomFilter::new(1000, 0.01).unwrap()),
        ),
        (
            "LockFreeCuckooFilter",
            Box::new(LockFreeCuckooFilter::new(1000, 0.01).unwrap()),
        ),
        (
            "LockedCuckooFilter",
            Box::new(LockedCuckooFilter::new(1000, 0.01).unwrap()),
        ),
    ];
    for (name, filter) in filters {
        assert_eq!(filter.false_positive_rate(), 0.0, "{name}");
        filter.insert_hash(hash_key(&1u64)).unwrap();
        assert!(filter.false_positive_rate() > 0.0, "{name}");
    }
    let mut sequential = SequentialQf::new(1000, 0.01).unwrap();
    assert_eq!(sequential.false_positive_rate(), 0.0);
    sequential.insert(&1u64).unwrap();
    assert!(sequential.false_positive_rate() > 0.0);
    assert!(
        LinearProbingQf::new(1000, 0.01)
            .unwrap()
            .false_positive_rate()
            > 0.0
    );
}

/// An allocation failure names the bytes asked for.
#[test]
fn out_of_memory_prints_the_bytes() {
    let error = conqf::Error::OutOfMemory(1 << 40);
    assert_eq!(error.to_string(), "cannot allocate 1099511627776 bytes");
}

/// `Count::insert_if_absent_hash`'s provided method, which an implementation outside the crate
/// gets: it stores a fingerprint once and answers `Ok(false)` after (a wrapper that forwards
/// everything else to a `CountingQf`).
#[test]
fn the_provided_insert_if_absent_stores_a_fingerprint_once() {
    struct Wrapped(conqf::CountingQf);
    impl Filter for Wrapped {
        fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
            self.0.insert_hash(hash)
        }
        fn contains_hash(&self, hash: u64) -> bool {
            self.0.contains_hash(hash)
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn capacity(&self) -> usize {
            self.0.capacity()
        }
        fn memory_bytes(&self) -> usize {
            self.0.memory_bytes()
        }
        fn false_positive_rate(&self) -> f64 {
            self.0.false_positive_rate()
        }
    }
    impl Count for Wrapped {
        fn count_hash(&self, hash: u64) -> u64 {
            self.0.count_hash(hash)
        }
        fn insert_count_hash(&self, hash: u64, n: u64) -> Result<(), Error> {
            self.0.insert_count_hash(hash, n)
        }
    }
    let filter = Wrapped(conqf::CountingQf::new(1000, 0.01).unwrap());
    assert_eq!(filter.insert_if_absent(&"apple"), Ok(true));
    assert_eq!(filter.insert_if_absent(&"apple"), Ok(false));
    assert_eq!((filter.count(&"apple"), filter.len()), (1, 1));
}
