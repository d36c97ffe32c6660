//! The batch API of [`SequentialQf`] and [`LocallyLockedQf`]: bulk build, batch insert, remove
//! and lookup (paper 004 §IV), over the 3-status-bit table both share. `LocallyLockedQf`'s
//! `&self` batch methods are in [`shared_api`](super::shared_api), with those of the other
//! concurrent filters.

use crate::filter::Error;
use crate::qf::locally_locked::LocallyLockedQf;
use crate::qf::sequential::SequentialQf;
use crate::qf::table::QfTable;
use crate::sync::Ordering;

use super::keys::{add_absent, sorted_keys, sorted_keys_with_repeats, table_keys};
use super::{
    build, build_segmented, build_table, insertion, lookup, removal, supercluster, within_load_cap,
    BatchInsert, BatchLookup, BuildMethod, Dedupe,
};

impl SequentialQf {
    /// A filter with `2^quotient_bits` slots of `remainder_bits` remainder bits holding the
    /// fingerprints of `hashes`, built in bulk (paper 004 §IV-C): sort, compute every element's
    /// slot with `method`, write them all. The table is exactly the one inserting the hashes one
    /// by one gives; duplicate fingerprints are stored once (see
    /// [`bulk_build_with`](Self::bulk_build_with) to keep them).
    ///
    /// ```
    /// use conqf::{BuildMethod, SequentialQf};
    /// let hashes: Vec<u64> = (0..10_000u64).map(|k| conqf::hash_key(&k)).collect();
    /// let filter = SequentialQf::bulk_build(14, 20, &hashes, BuildMethod::default())?;
    /// assert_eq!(filter.len(), 10_000);
    /// assert!(filter.contains(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] and [`Error::OutOfMemory`] as for
    /// [`with_bits`](Self::with_bits); [`Error::Full`] if the fingerprints do not fit in the
    /// table or pass its load cap (see [`insert_hash`](Self::insert_hash)).
    pub fn bulk_build(
        quotient_bits: u32,
        remainder_bits: u32,
        hashes: &[u64],
        method: BuildMethod,
    ) -> Result<Self, Error> {
        Self::bulk_build_with(quotient_bits, remainder_bits, hashes, method, Dedupe::On)
    }

    /// [`bulk_build`](Self::bulk_build) that stores a repeated fingerprint once or as often as
    /// it occurs, as `dedupe` says (paper 004 §IV-C; [`Dedupe`] describes the multiset a build
    /// without deduplication gives).
    ///
    /// ```
    /// use conqf::{BuildMethod, Dedupe, SequentialQf};
    /// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&(k % 400))).collect();
    /// let method = BuildMethod::SequentialShifting;
    /// let filter = SequentialQf::bulk_build_with(12, 20, &hashes, method, Dedupe::Off)?;
    /// assert_eq!(filter.len(), 1000);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`bulk_build`](Self::bulk_build).
    pub fn bulk_build_with(
        quotient_bits: u32,
        remainder_bits: u32,
        hashes: &[u64],
        method: BuildMethod,
        dedupe: Dedupe,
    ) -> Result<Self, Error> {
        let table = QfTable::with_bits(quotient_bits, remainder_bits)?;
        let bits = quotient_bits + remainder_bits;
        // The builds skip repeats themselves (with `Dedupe::On`), in parallel.
        let len = if method == BuildMethod::SegmentedLayouts && bits <= u32::BITS {
            let keys = sorted_keys_with_repeats::<u32>(hashes, bits);
            build_segmented(&table, &keys, dedupe)?
        } else {
            build(
                &table,
                sorted_keys_with_repeats(hashes, bits),
                method,
                dedupe,
            )?
        };
        let len = within_load_cap(&table, len)?;
        Ok(SequentialQf { table, len })
    }

    /// Inserts the fingerprints of `hashes`: the sweep (each thread inserting its part of the
    /// sorted batch in table order), or a merge-insert for a large batch into a nearly empty
    /// table or a batch crowded into long clusters of its own ([`BatchInsert::Auto`]). Returns
    /// how many were newly stored. Either way a fingerprint already stored is left as it is
    /// (with the copies of a build without deduplication).
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let mut filter = SequentialQf::with_bits(12, 20)?;
    /// filter.insert(&1u64)?;
    /// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
    /// assert_eq!(filter.insert_batch(&hashes)?, 999); // key 1 was there already
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] if the fingerprints do not fit in the table or under its load cap (see
    /// [`insert_hash`](Self::insert_hash)). A merge-insert then leaves the filter unchanged;
    /// the sweep and supercluster rounds keep what they inserted before they found no room, up
    /// to the cap. Either way the filter stays usable and keeps every fingerprint it held.
    /// [`Error::OutOfMemory`] if a merge-insert cannot allocate its new table (the filter is
    /// then unchanged).
    pub fn insert_batch(&mut self, hashes: &[u64]) -> Result<usize, Error> {
        self.insert_batch_with(hashes, BatchInsert::Auto)
    }

    /// [`insert_batch`](Self::insert_batch) with a chosen strategy.
    ///
    /// ```
    /// use conqf::{BatchInsert, BuildMethod, SequentialQf};
    /// let mut filter = SequentialQf::with_bits(12, 20)?;
    /// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
    /// let merge = BatchInsert::Merge(BuildMethod::ParallelMerging);
    /// assert_eq!(filter.insert_batch_with(&hashes, merge)?, 1000);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`insert_batch`](Self::insert_batch).
    pub fn insert_batch_with(
        &mut self,
        hashes: &[u64],
        strategy: BatchInsert,
    ) -> Result<usize, Error> {
        insert_batch(&mut self.table, &mut self.len, hashes, strategy)
    }

    /// Removes the fingerprints of `hashes` a cluster at a time, the clusters split over the
    /// threads (paper 004 §IV-D's regions); a fingerprint named several times is removed once.
    /// Returns how many were stored and are now removed.
    ///
    /// The batch is sorted, and each thread takes the keys of a stretch of the table's clusters:
    /// a cluster from which the batch removes at least one key per 8 slots is rewritten in one
    /// pass without those keys, the keys of any other are removed one by one. So many removals
    /// from one cluster cost one pass over it rather than a shift each. On the 2-core machine of
    /// this crate's measurements (a throwaway program, 2026-12-01): 2,667 keys from one cluster
    /// of 8,000 in 0.26 ms against 16.4 ms with `remove_hash` one by one; 117,965 random keys from
    /// `2^18` slots at 90% fill in 6.6 ms on one thread and 3.7 ms on two, against 8.5 ms; and
    /// 1,006,633 from `2^22` slots at 72% in 58.7 and 34.2 ms, against 60.7 ms (the sort counts
    /// in the batch's time: one by one in sorted order took 44 ms there).
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
    /// let mut filter = SequentialQf::bulk_build(12, 20, &hashes, Default::default())?;
    /// assert_eq!(filter.remove_batch(&hashes[..400]), 400);
    /// assert_eq!(filter.len(), 600);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn remove_batch(&mut self, hashes: &[u64]) -> usize {
        let removed = remove_batch(&mut self.table, hashes);
        self.len -= removed;
        removed
    }

    /// Answers [`contains_hash`](Self::contains_hash) for every hash into `out`, prefetching a
    /// window of queries ahead and splitting the batch over threads (paper 004 §IV-A).
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let mut filter = SequentialQf::with_bits(12, 20)?;
    /// filter.insert(&7u64)?;
    /// let queries = [conqf::hash_key(&7u64), conqf::hash_key(&8u64)];
    /// let mut found = [false; 2];
    /// filter.contains_batch(&queries, &mut found)?;
    /// assert!(found[0]);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `hashes` and `out` differ in length.
    pub fn contains_batch(&self, hashes: &[u64], out: &mut [bool]) -> Result<(), Error> {
        self.contains_batch_with(hashes, out, BatchLookup::Auto)
    }

    /// [`contains_batch`](Self::contains_batch) in a chosen order: prefetching in the caller's
    /// order, or radix-partitioned by quotient to read the table in order ([`BatchLookup`]).
    ///
    /// ```
    /// use conqf::{BatchLookup, Filter, SequentialQf};
    /// let hashes: Vec<u64> = (0..5000u64).map(|k| conqf::hash_key(&k)).collect();
    /// let filter = SequentialQf::bulk_build(14, 8, &hashes, Default::default())?;
    /// let mut found = vec![false; hashes.len()];
    /// filter.contains_batch_with(&hashes, &mut found, BatchLookup::Sorted)?;
    /// assert!(found.iter().all(|&f| f));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `hashes` and `out` differ in length.
    pub fn contains_batch_with(
        &self,
        hashes: &[u64],
        out: &mut [bool],
        order: BatchLookup,
    ) -> Result<(), Error> {
        lookup::contains_batch(&self.table, hashes, out, order, |(quotient, remainder)| {
            self.contains_fingerprint(quotient, remainder)
        })
    }
}

impl LocallyLockedQf {
    /// A concurrent filter built in bulk; see [`SequentialQf::bulk_build`].
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
    /// let filter = LocallyLockedQf::bulk_build(12, 20, &hashes, Default::default())?;
    /// assert!(filter.contains(&3u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`SequentialQf::bulk_build`].
    pub fn bulk_build(
        quotient_bits: u32,
        remainder_bits: u32,
        hashes: &[u64],
        method: BuildMethod,
    ) -> Result<Self, Error> {
        Self::bulk_build_with(quotient_bits, remainder_bits, hashes, method, Dedupe::On)
    }

    /// A concurrent filter built in bulk, a repeated fingerprint stored once or as often as it
    /// occurs; see [`SequentialQf::bulk_build_with`].
    ///
    /// ```
    /// use conqf::{BuildMethod, Dedupe, Filter, LocallyLockedQf, Remove};
    /// let hashes = [conqf::hash_key("a"), conqf::hash_key("a")];
    /// let filter =
    ///     LocallyLockedQf::bulk_build_with(10, 10, &hashes, BuildMethod::default(), Dedupe::Off)?;
    /// assert!(filter.remove("a")? && filter.contains("a"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`SequentialQf::bulk_build`].
    pub fn bulk_build_with(
        quotient_bits: u32,
        remainder_bits: u32,
        hashes: &[u64],
        method: BuildMethod,
        dedupe: Dedupe,
    ) -> Result<Self, Error> {
        SequentialQf::bulk_build_with(quotient_bits, remainder_bits, hashes, method, dedupe)
            .map(Self::from_sequential)
    }

    /// Inserts a batch, choosing the strategy as [`SequentialQf::insert_batch`] does. Takes
    /// `&mut self`; see [`insert_batch_with`](Self::insert_batch_with).
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let mut filter = LocallyLockedQf::with_bits(12, 20)?;
    /// let hashes: Vec<u64> = (0..500u64).map(|k| conqf::hash_key(&k)).collect();
    /// assert_eq!(filter.insert_batch(&hashes)?, 500);
    /// assert!(filter.contains(&499u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`SequentialQf::insert_batch`].
    pub fn insert_batch(&mut self, hashes: &[u64]) -> Result<usize, Error> {
        self.insert_batch_with(hashes, BatchInsert::Auto)
    }

    /// Inserts a batch; see [`SequentialQf::insert_batch_with`].
    ///
    /// Takes `&mut self`: the sweep and supercluster rounds write without the status-bit
    /// locks, and a merge-insert replaces the table, so no other thread may use the filter
    /// meanwhile. To insert a batch while other threads work, call
    /// [`insert_batch_concurrent`](Self::insert_batch_concurrent) (`&self`: one
    /// [`insert_hash`](crate::Filter::insert_hash) per hash, with its locks, from any number
    /// of threads).
    ///
    /// ```
    /// use conqf::{BatchInsert, Filter, LocallyLockedQf};
    /// let mut filter = LocallyLockedQf::with_bits(12, 20)?;
    /// let hashes: Vec<u64> = (0..500u64).map(|k| conqf::hash_key(&k)).collect();
    /// assert_eq!(filter.insert_batch_with(&hashes, BatchInsert::Auto)?, 500);
    /// assert_eq!(filter.len(), 500);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`SequentialQf::insert_batch`].
    pub fn insert_batch_with(
        &mut self,
        hashes: &[u64],
        strategy: BatchInsert,
    ) -> Result<usize, Error> {
        let mut len = self.len.sum();
        let result = insert_batch(&mut self.table, &mut len, hashes, strategy);
        self.cap.set_count(&self.len, len);
        result
    }

    /// Removes a batch; see [`SequentialQf::remove_batch`]. Takes `&mut self` for the same
    /// reason as [`insert_batch_with`](Self::insert_batch_with).
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let hashes: Vec<u64> = (0..500u64).map(|k| conqf::hash_key(&k)).collect();
    /// let mut filter = LocallyLockedQf::bulk_build(12, 20, &hashes, Default::default())?;
    /// assert_eq!(filter.remove_batch(&hashes), 500);
    /// assert!(filter.is_empty());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn remove_batch(&mut self, hashes: &[u64]) -> usize {
        let removed = remove_batch(&mut self.table, hashes);
        self.cap.set_count(&self.len, self.len.sum() - removed);
        removed
    }
}

/// A batch insert into a table holding `len` fingerprints; `len` is updated.
fn insert_batch(
    table: &mut QfTable,
    len: &mut usize,
    hashes: &[u64],
    strategy: BatchInsert,
) -> Result<usize, Error> {
    let (q, r) = (table.quotient_bits, table.remainder_bits);
    let keys = sorted_keys(hashes, q + r);
    let strategy = match strategy {
        BatchInsert::Auto => BatchInsert::choose_for(&keys, r, *len, 1 << q),
        chosen => chosen,
    };
    match strategy {
        BatchInsert::Merge(method) => {
            // Relaxed: `&mut` access to the table.
            let stored = table_keys(table, Ordering::Relaxed);
            // As the sweep: the copies a build without dedupe stored stay, and a key is added
            // only if absent.
            let (union, added) = add_absent(&stored, &keys);
            let (merged, merged_len) = build_table(q, r, table.slots.len(), union, method)?;
            *table = merged;
            *len = merged_len;
            Ok(added)
        }
        BatchInsert::Superclusters => {
            let before = *len;
            supercluster::insert(table, &keys, len)?;
            Ok(*len - before)
        }
        BatchInsert::Sweep | BatchInsert::Auto => {
            let before = *len;
            insertion::insert(table, &keys, len)?;
            Ok(*len - before)
        }
    }
}

/// A batch removal; returns how many fingerprints went.
fn remove_batch(table: &mut QfTable, hashes: &[u64]) -> usize {
    let keys = sorted_keys(hashes, table.quotient_bits + table.remainder_bits);
    removal::remove(table, &keys)
}
