//! The `&self` batch API of the concurrent filters that have no batch engine of their own: the
//! 3- and 2-status-bit quotient filters ([`LocallyLockedQf`], [`ExternallyLockedQf`],
//! [`TwoBitQf`]), the growing ones ([`GrowableQf`], [`ExpandableQf`]), [`LinearProbingQf`], the
//! cuckoo filters and the Bloom filter. Batch inserts,
//! removals (not in `LinearProbingQf` and the Bloom filter, which remove nothing) and lookups
//! that other threads may run beside (paper 004 §IV-A's prefetching window). Each hash goes
//! through the filter's own single operation, with its guarantees; the batch only
//! prefetches what the operation a window of hashes ahead reads first (a quotient filter's
//! canonical slot, a key's two buckets, the words of its bits), so that consecutive cache misses
//! overlap (a write's read-modify-write otherwise waits for its own miss before the next one can
//! start). Written once, as macros over the filters, which differ only in where their table is
//! and how a hash is looked up.

use crate::bloom::AtomicBloomFilter;
use crate::cuckoo::lock_free::LockFreeCuckooFilter;
use crate::cuckoo::locked::LockedCuckooFilter;
use crate::filter::{Error, Filter, Remove};
use crate::qf::expandable::ExpandableQf;
use crate::qf::externally_locked::ExternallyLockedQf;
use crate::qf::growing::GrowableQf;
use crate::qf::linear_probing::LinearProbingQf;
use crate::qf::locally_locked::LocallyLockedQf;
use crate::qf::two_bit::TwoBitQf;

use super::lookup::{self, BatchLookup};

/// The batch inserts and lookups of `$filter`: `$this` names the filter in `$table`, its table
/// (a [`BatchTable`](super::lookup::BatchTable)), and in `$contains`, its lookup of a split
/// hash's key; `$make` constructs the filter in the examples (an expression of type
/// `Result<$filter, Error>`), and `$more`, if given, is a last
/// sentence for the insert's doc.
macro_rules! batch_inserts_and_lookups {
    (
        $filter:ident,
        |$this:ident| table: $table:expr,
        contains: |$key:pat_param| $contains:expr,
        make: $make:literal
        $(, insert_doc: $more:literal)?
    ) => {
        impl $filter {
            /// Inserts every hash with [`insert_hash`](Filter::insert_hash), in order on the
            /// calling thread, prefetching the group of the key a window ahead. Takes `&self`:
            /// each insert is an `insert_hash`, with its guarantees, so other threads
            /// may use the filter meanwhile (and call this too). Returns how many were newly
            /// stored.
            $(#[doc = $more])?
            ///
            /// ```
            #[doc = concat!("use conqf::{Filter, ", stringify!($filter), "};")]
            #[doc = concat!("let filter = ", $make, "?;")]
            /// let hashes: Vec<u64> = (0..500u64).map(|k| conqf::hash_key(&k)).collect();
            /// std::thread::scope(|s| {
            ///     let (low, high) = hashes.split_at(250);
            ///     s.spawn(|| filter.insert_batch_concurrent(low));
            ///     s.spawn(|| filter.insert_batch_concurrent(high));
            /// });
            /// assert!((0..500u64).all(|k| filter.contains(&k)));
            /// # Ok::<(), conqf::Error>(())
            /// ```
            ///
            /// # Errors
            /// The first error of [`insert_hash`](Filter::insert_hash) (`Full` if the filter
            /// has one): the hashes before the one that failed are inserted, it and the later
            /// ones are not.
            pub fn insert_batch_concurrent(&self, hashes: &[u64]) -> Result<usize, Error> {
                let $this = self;
                lookup::each_prefetched($table, hashes, |hash| self.insert_hash(hash))
            }

            /// Answers [`contains_hash`](Filter::contains_hash) for every hash into `out`,
            /// prefetching a window ahead and splitting the batch over threads. Takes `&self`
            /// and is safe while other threads write: every query is a
            /// `contains_hash`, with its guarantees (crate docs, "Consistency").
            ///
            /// ```
            #[doc = concat!("use conqf::{Filter, ", stringify!($filter), "};")]
            #[doc = concat!("let filter = ", $make, "?;")]
            /// filter.insert(&7u64)?;
            /// let mut found = [false, true];
            /// let hashes = [conqf::hash_key(&7u64), conqf::hash_key(&8u64)];
            /// filter.contains_batch(&hashes, &mut found)?;
            /// assert_eq!(found, [true, false]);
            /// # Ok::<(), conqf::Error>(())
            /// ```
            ///
            /// # Errors
            /// [`Error::InvalidParameters`] if `hashes` and `out` differ in length.
            pub fn contains_batch(&self, hashes: &[u64], out: &mut [bool]) -> Result<(), Error> {
                self.contains_batch_with(hashes, out, BatchLookup::Auto)
            }

            /// [`contains_batch`](Self::contains_batch) in a chosen order: prefetching in the
            /// caller's order, or radix-partitioned by the hashes' top bits ([`BatchLookup`]:
            /// a quotient filter then reads its table in order, `ExpandableQf` without
            /// cascading inserts only its level 0, as its other levels hash keys apart; a
            /// cuckoo filter its primary buckets, a Bloom filter the first of each key's bits).
            ///
            /// ```
            #[doc = concat!("use conqf::{BatchLookup, Filter, ", stringify!($filter), "};")]
            #[doc = concat!("let filter = ", $make, "?;")]
            /// let hashes: Vec<u64> = (0..5000u64).map(|k| conqf::hash_key(&k)).collect();
            /// filter.insert_batch_concurrent(&hashes)?;
            /// let mut found = vec![false; hashes.len()];
            /// filter.contains_batch_with(&hashes, &mut found, BatchLookup::Sorted)?;
            /// assert!(found.iter().all(|&f| f));
            /// # Ok::<(), conqf::Error>(())
            /// ```
            ///
            /// # Errors
            /// As [`contains_batch`](Self::contains_batch).
            pub fn contains_batch_with(
                &self,
                hashes: &[u64],
                out: &mut [bool],
                order: BatchLookup,
            ) -> Result<(), Error> {
                let $this = self;
                lookup::contains_batch($table, hashes, out, order, |$key| $contains)
            }
        }
    };
}

/// The batch removal of `$filter`, whose table `$table` names (`$this` being the filter).
macro_rules! batch_removals {
    ($filter:ident, |$this:ident| table: $table:expr, make: $make:literal) => {
        impl $filter {
            /// Removes every hash with [`remove_hash`](Remove::remove_hash), in order on the
            /// calling thread, prefetching a window ahead as
            /// [`insert_batch_concurrent`](Self::insert_batch_concurrent) does; `&self`, safe
            /// beside other threads. Returns how many were stored and are now removed.
            ///
            /// ```
            #[doc = concat!("use conqf::{Filter, ", stringify!($filter), "};")]
            #[doc = concat!("let filter = ", $make, "?;")]
            /// let hashes: Vec<u64> = (0..500u64).map(|k| conqf::hash_key(&k)).collect();
            /// assert_eq!(filter.insert_batch_concurrent(&hashes)?, 500);
            /// assert_eq!(filter.remove_batch_concurrent(&hashes[..100])?, 100);
            /// assert_eq!(filter.len(), 400);
            /// # Ok::<(), conqf::Error>(())
            /// ```
            ///
            /// # Errors
            /// None today; the `Result` matches [`remove_hash`](Remove::remove_hash).
            pub fn remove_batch_concurrent(&self, hashes: &[u64]) -> Result<usize, Error> {
                let $this = self;
                lookup::each_prefetched($table, hashes, |hash| self.remove_hash(hash))
            }
        }
    };
}

/// The four methods for a filter that removes: [`batch_inserts_and_lookups`] and
/// [`batch_removals`].
macro_rules! concurrent_batch_api {
    (
        $filter:ident,
        |$this:ident| table: $table:expr,
        contains: |$key:pat_param| $contains:expr,
        make: $make:literal
        $(, insert_doc: $more:literal)?
    ) => {
        batch_inserts_and_lookups!(
            $filter,
            |$this| table: $table,
            contains: |$key| $contains,
            make: $make
            $(, insert_doc: $more)?
        );
        batch_removals!($filter, |$this| table: $table, make: $make);
    };
}

concurrent_batch_api!(
    LocallyLockedQf,
    |filter| table: &filter.table,
    contains: |(quotient, remainder)| filter.contains_fingerprint(quotient, remainder),
    make: "LocallyLockedQf::with_bits(14, 20)",
    insert_doc: "Where no other thread uses the filter, [`insert_batch`](Self::insert_batch) \
        may be faster still."
);

concurrent_batch_api!(
    ExternallyLockedQf,
    |filter| table: filter.table(),
    contains: |(quotient, remainder)| filter.contains_fingerprint(quotient, remainder),
    make: "ExternallyLockedQf::with_bits(14, 20)"
);

concurrent_batch_api!(
    TwoBitQf,
    |filter| table: &filter.table,
    contains: |(quotient, remainder)| filter.contains_trusting(quotient, remainder, true),
    make: "TwoBitQf::with_bits(14, 20)"
);

batch_inserts_and_lookups!(
    LinearProbingQf,
    |filter| table: filter,
    contains: |(quotient, remainder)| filter.contains_fingerprint(quotient, remainder),
    make: "LinearProbingQf::with_bits(14, 20)",
    insert_doc: "Its inserts are lock-free, so are these."
);

concurrent_batch_api!(
    LockFreeCuckooFilter,
    |filter| table: &filter.table,
    contains: |hash| filter.contains_hash(hash),
    make: "LockFreeCuckooFilter::with_bits(12, 16)",
    insert_doc: "The window prefetches both buckets of a key. Every insert stores a copy \
        (duplicates too), so the count is of the hashes stored."
);

concurrent_batch_api!(
    LockedCuckooFilter,
    |filter| table: &filter.table,
    contains: |hash| filter.contains_hash(hash),
    make: "LockedCuckooFilter::with_bits(12, 16)",
    insert_doc: "The window prefetches both buckets of a key. Every insert stores a copy \
        (duplicates too), so the count is of the hashes stored."
);

batch_inserts_and_lookups!(
    AtomicBloomFilter,
    |filter| table: filter,
    contains: |hash| filter.contains_hash(hash),
    make: "AtomicBloomFilter::new(10_000, 0.001)",
    insert_doc: "The window prefetches every word a key's bits lie in. A key counts as new when \
        it set a bit that was clear (as for [`insert_hash`](Filter::insert_hash))."
);

concurrent_batch_api!(
    GrowableQf,
    |filter| table: filter,
    contains: |hash| filter.contains_hash(hash),
    make: "conqf::LocallyLockedQf::growable(100, 1e-6).build()",
    insert_doc: "The table may double during the batch, as for single inserts."
);

concurrent_batch_api!(
    ExpandableQf,
    |filter| table: filter,
    contains: |hash| filter.contains_hash(hash),
    make: "ExpandableQf::new(100, 1e-6)",
    insert_doc: "The window prefetches the key's canonical group on every level. Levels may \
        open during the batch, as for single inserts."
);

#[cfg(all(test, not(loom)))]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{batch_lookups_equal_lookups, workload};
    use super::*;

    /// On one thread, the batch writes of a filter give the table the same filter's one-by-one
    /// writes give: the same count up to the first `Full` (then `Full`), the same fingerprints,
    /// and the same removals, of stored hashes and of hashes never inserted.
    fn writes_equal_one_by_one<F: Filter + Remove, T: PartialEq + std::fmt::Debug>(
        make: impl Fn() -> F,
        batch: (
            impl Fn(&F, &[u64]) -> Result<usize, Error>,
            impl Fn(&F, &[u64]) -> Result<usize, Error>,
        ),
        fingerprints: impl Fn(&F) -> Vec<T>,
        hashes: &[u64],
        seed: u64,
    ) -> Result<(), TestCaseError> {
        let (insert_batch, remove_batch) = batch;
        let (expected, filter) = (make(), make());
        let mut stored = 0;
        let mut full = false;
        for &hash in hashes {
            match expected.insert_hash(hash) {
                Ok(new) => stored += usize::from(new),
                Err(Error::Full) => {
                    full = true;
                    break;
                }
                Err(other) => return Err(TestCaseError::fail(other.to_string())),
            }
        }
        let result = insert_batch(&filter, hashes);
        if full {
            prop_assert_eq!(result, Err(Error::Full));
        } else {
            prop_assert_eq!(result, Ok(stored));
        }
        prop_assert_eq!(fingerprints(&filter), fingerprints(&expected));
        let mut gone: Vec<u64> = hashes.iter().step_by(2).copied().collect();
        gone.extend((0..hashes.len() as u64 / 4).map(|i| crate::hash::remix(seed ^ i)));
        let removed = gone
            .iter()
            .filter(|&&h| expected.remove_hash(h).unwrap())
            .count();
        prop_assert_eq!(remove_batch(&filter, &gone), Ok(removed));
        prop_assert_eq!(fingerprints(&filter), fingerprints(&expected));
        Ok(())
    }

    /// A proptest that `$filter`'s batch methods equal its one-by-one operations: the writes
    /// ([`writes_equal_one_by_one`]) and the lookups in every order.
    macro_rules! batches_equal_one_by_one {
        (
            $name:ident,
            $filter:ident,
            |$q:ident, $r:ident| $make:expr,
            fingerprints: |$f:ident| $fingerprints:expr
        ) => {
            proptest! {
                #[test]
                fn $name(($q, $r, hashes) in workload(), seed: u64) {
                    let make = || $make;
                    writes_equal_one_by_one(
                        make,
                        ($filter::insert_batch_concurrent, $filter::remove_batch_concurrent),
                        |$f: &$filter| $fingerprints,
                        &hashes,
                        seed,
                    )?;
                    let filter = make();
                    let _ = filter.insert_batch_concurrent(&hashes);
                    batch_lookups_equal_lookups(
                        &hashes,
                        seed,
                        |queries, found, order| filter.contains_batch_with(queries, found, order),
                        |query| filter.contains_hash(query),
                    )?;
                    filter.check_invariants().map_err(TestCaseError::fail)?;
                }
            }
        };
    }

    batches_equal_one_by_one!(
        externally_locked_batches_equal_one_by_one,
        ExternallyLockedQf,
        |q, r| ExternallyLockedQf::with_bits_and_region(q, r, 16).unwrap(),
        fingerprints: |f| f.fingerprints().collect::<Vec<_>>()
    );
    batches_equal_one_by_one!(
        two_bit_batches_equal_one_by_one,
        TwoBitQf,
        |q, r| TwoBitQf::with_bits(q, r).unwrap(),
        fingerprints: |f| f.fingerprints().collect::<Vec<_>>()
    );
    // The cuckoo filters' relocations are deterministic, so one thread's batch writes store the
    // same fingerprints as its single writes, each with its pair of buckets (`fingerprints`
    // lists them sorted: which of the two buckets holds a copy is not compared).
    batches_equal_one_by_one!(
        lock_free_cuckoo_batches_equal_one_by_one,
        LockFreeCuckooFilter,
        |q, r| LockFreeCuckooFilter::with_bits(q, r.clamp(4, 30)).unwrap(),
        fingerprints: |f| f.fingerprints()
    );
    batches_equal_one_by_one!(
        locked_cuckoo_batches_equal_one_by_one,
        LockedCuckooFilter,
        |q, r| LockedCuckooFilter::with_bits(q, r.clamp(4, 30)).unwrap(),
        fingerprints: |f| f.fingerprints()
    );

    // The growing filters grow at the same inserts either way (the fill is checked on inserts
    // picked by their hash), so one thread's batch writes give the same tables.
    batches_equal_one_by_one!(
        growable_batches_equal_one_by_one,
        GrowableQf,
        |q, r| LocallyLockedQf::growable(1, 0.5).build_with_bits(q, r).unwrap(),
        fingerprints: |f| f.with_quiescent(|table, _| {
            let q = table.quotient_bits();
            table.fingerprints().map(|x| (q, x)).collect::<Vec<_>>()
        })
    );
    batches_equal_one_by_one!(
        expandable_batches_equal_one_by_one,
        ExpandableQf,
        |q, r| ExpandableQf::new(1 << (q - 1), 0.5f64.powi(r.min(30) as i32)).unwrap(),
        fingerprints: |f| f.level_fingerprints()
    );

    proptest! {
        /// The Bloom filter's batch inserts set the bits its one-by-one inserts set, counting
        /// the same keys as new, and its batch lookups equal its lookups in every order.
        #[test]
        fn bloom_batches_equal_one_by_one((q, _r, hashes) in workload(), seed: u64) {
            let make = || AtomicBloomFilter::with_memory(1 << q, 1 + (seed % 6) as u32).unwrap();
            let (expected, filter) = (make(), make());
            let new = hashes.iter().filter(|&&h| expected.insert_hash(h).unwrap()).count();
            prop_assert_eq!(filter.insert_batch_concurrent(&hashes), Ok(new));
            let words = |f: &AtomicBloomFilter| -> Vec<u64> {
                f.words.iter().map(|w| w.load(std::sync::atomic::Ordering::Relaxed)).collect()
            };
            prop_assert_eq!(words(&filter), words(&expected));
            batch_lookups_equal_lookups(
                &hashes,
                seed,
                |queries, found, order| filter.contains_batch_with(queries, found, order),
                |query| filter.contains_hash(query),
            )?;
        }
    }

    proptest! {
        /// `LinearProbingQf`'s batch inserts fill the table slot for slot as its one-by-one
        /// inserts do, with the same count up to the first `Full` at its load cap (then
        /// `Full`), and its batch lookups equal its lookups in every order.
        #[test]
        fn linear_probing_batches_equal_one_by_one((q, r, hashes) in workload(), seed: u64) {
            let make = || LinearProbingQf::with_bits(q, r + 3).unwrap();
            let (expected, filter) = (make(), make());
            let mut stored = 0;
            let mut full = false;
            for &hash in &hashes {
                match expected.insert_hash(hash) {
                    Ok(new) => stored += usize::from(new),
                    Err(Error::Full) => {
                        full = true;
                        break;
                    }
                    Err(other) => return Err(TestCaseError::fail(other.to_string())),
                }
            }
            let result = filter.insert_batch_concurrent(&hashes);
            prop_assert_eq!(result, if full { Err(Error::Full) } else { Ok(stored) });
            let slots = |f: &LinearProbingQf| -> Vec<u64> {
                (0..f.slots.len())
                    .map(|i| f.slots.get(i, std::sync::atomic::Ordering::Relaxed))
                    .collect()
            };
            prop_assert_eq!(slots(&filter), slots(&expected));
            batch_lookups_equal_lookups(
                &hashes,
                seed,
                |queries, found, order| filter.contains_batch_with(queries, found, order),
                |query| filter.contains_hash(query),
            )?;
            filter.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}
