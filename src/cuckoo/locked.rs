//! `LockedCuckooFilter`: the fine-grained locking cuckoo filter of paper 001 §1.3, the baseline
//! the lock-free filter is measured against.
//!
//! The table is the same [`CuckooTable`] (same buckets, fingerprints, same-index rule and
//! relocation chains). The buckets are split into contiguous *stripes* (the report's
//! "proportional segments"), each guarded by one reader/writer lock, about eight stripes per
//! hardware thread: queries read-lock the stripes of their two buckets, inserts and removes
//! write-lock them, and a relocation write-locks the two stripes of each single move. Locks are
//! always taken in increasing stripe order, so no two operations wait for each other in a cycle.
//!
//! Writers are not starved (the open problem of paper 001 §4): the locks are
//! `parking_lot::RwLock`s, which are task-fair: a new reader queues behind a waiting writer
//! even while the lock is read-held, so a stream of readers cannot keep a writer out, and
//! their eventual fairness hands a contended lock to the threads waiting for it in turn.
//!
//! Entries are still atomics (stripe boundaries may fall inside a 64-bit group, so two writers
//! holding different stripes may change the same word, which a CAS handles), but under the
//! locks every read may be `Relaxed`: the lock orders it after the write it must see.

use std::fmt;

use crossbeam_utils::CachePadded;

use crate::filter::{Error, Filter, Remove};
use crate::sync::{self, Ordering, ReadGuard, RwLock, WriteGuard};

use super::table::{
    insert_with_relocations, CuckooTable, Entry, Placement, Relocation, State, Store,
};

/// Stripes per hardware thread.
const STRIPES_PER_THREAD: usize = 8;

/// A cuckoo filter behind striped reader/writer locks (paper 001 §1.3), writers not starved.
///
/// Same semantics as [`LockFreeCuckooFilter`](crate::LockFreeCuckooFilter): every insert
/// stores a copy (duplicates too, up to eight of one fingerprint, then `Full`), `remove` removes
/// one copy, and removing a key never inserted may remove another key's fingerprint.
///
/// ```
/// use conqf::{Filter, LockedCuckooFilter, Remove};
///
/// let filter = LockedCuckooFilter::new(10_000, 0.001)?;
/// std::thread::scope(|s| {
///     for t in 0..2u64 {
///         let filter = &filter;
///         s.spawn(move || {
///             for i in 0..1000u64 {
///                 filter.insert(&(t * 1000 + i)).unwrap();
///             }
///         });
///     }
/// });
/// assert!((0..2000u64).all(|k| filter.contains(&k)));
/// assert_eq!(filter.remove(&7u64)?, true);
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct LockedCuckooFilter {
    pub(crate) table: CuckooTable,
    pub(crate) locks: Box<[CachePadded<RwLock>]>,
    /// `bucket >> stripe_shift` is the bucket's stripe.
    stripe_shift: u32,
}

impl LockedCuckooFilter {
    /// A filter that holds `capacity` keys with an expected false-positive rate of at most
    /// `fpr` when that full, with about 8 stripes per hardware thread (a table of fewer than
    /// `2^7` buckets may refuse one of them, rarely: see [`Filter::capacity`]).
    ///
    /// ```
    /// use conqf::{Filter, LockedCuckooFilter};
    /// let filter = LockedCuckooFilter::new(1000, 0.01)?;
    /// assert!(filter.capacity() >= 1000);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`LockFreeCuckooFilter::new`](crate::LockFreeCuckooFilter::new).
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        let (bucket_bits, fingerprint_bits) = CuckooTable::parameters_for(capacity, fpr)?;
        Self::with_bits(bucket_bits, fingerprint_bits)
    }

    /// `2^bucket_bits` buckets with `fingerprint_bits`-bit fingerprints and about 8 stripes
    /// per hardware thread.
    ///
    /// ```
    /// let filter = conqf::LockedCuckooFilter::with_bits(10, 16)?;
    /// assert!(filter.stripes() >= 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`LockFreeCuckooFilter::with_bits`](crate::LockFreeCuckooFilter::with_bits).
    pub fn with_bits(bucket_bits: u32, fingerprint_bits: u32) -> Result<Self, Error> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::with_stripes(bucket_bits, fingerprint_bits, threads * STRIPES_PER_THREAD)
    }

    /// As [`with_bits`](Self::with_bits) with `stripes` locks (rounded up to a power of two, at
    /// most one per bucket). One stripe is the coarse-grained filter of paper 001 §1.2: one
    /// lock around the whole table.
    ///
    /// ```
    /// let coarse = conqf::LockedCuckooFilter::with_stripes(10, 16, 1)?;
    /// assert_eq!(coarse.stripes(), 1);
    /// assert!(conqf::LockedCuckooFilter::with_stripes(10, 16, 0).is_err());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`with_bits`](Self::with_bits), and if `stripes` is 0.
    pub fn with_stripes(
        bucket_bits: u32,
        fingerprint_bits: u32,
        stripes: usize,
    ) -> Result<Self, Error> {
        if stripes == 0 {
            return Err(Error::InvalidParameters(
                "a striped filter needs at least one stripe".into(),
            ));
        }
        let table = CuckooTable::new(bucket_bits, fingerprint_bits)?;
        let stripes = stripes
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX)
            .min(table.buckets());
        let stripe_bits = stripes.trailing_zeros();
        // A lock per bucket is larger than the bucket: allocate it fallibly too.
        Ok(LockedCuckooFilter {
            locks: crate::storage::try_boxed(stripes, || CachePadded::new(RwLock::new(())))?,
            stripe_shift: bucket_bits - stripe_bits,
            table,
        })
    }

    /// The number of lock stripes.
    ///
    /// ```
    /// let filter = conqf::LockedCuckooFilter::with_stripes(4, 8, 3)?;
    /// assert_eq!(filter.stripes(), 4);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn stripes(&self) -> usize {
        self.locks.len()
    }

    /// `b`: the table has `2^b` buckets of 4 entries.
    ///
    /// ```
    /// let filter = conqf::LockedCuckooFilter::with_bits(5, 12)?;
    /// assert_eq!(filter.bucket_bits(), 5);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn bucket_bits(&self) -> u32 {
        self.table.bucket_bits()
    }

    /// `f`: the width of a fingerprint.
    ///
    /// ```
    /// let filter = conqf::LockedCuckooFilter::with_bits(5, 12)?;
    /// assert_eq!(filter.fingerprint_bits(), 12);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn fingerprint_bits(&self) -> u32 {
        self.table.fingerprint_bits()
    }

    /// The primary bucket, the alternate bucket and the fingerprint of a hash.
    ///
    /// ```
    /// let filter = conqf::LockedCuckooFilter::with_bits(4, 8)?;
    /// let (b1, b2, fp) = filter.placement(conqf::hash_key("apple"));
    /// assert!(b1 != b2 && fp != 0);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn placement(&self, hash: u64) -> (usize, usize, u64) {
        let p = self.table.placement(hash);
        (p.primary, p.alternate, p.fingerprint)
    }

    /// Every stored fingerprint with its two buckets (smaller first), sorted; exact only while
    /// no thread writes.
    ///
    /// ```
    /// use conqf::{Filter, LockedCuckooFilter};
    /// let filter = LockedCuckooFilter::with_bits(4, 8)?;
    /// filter.insert(&1u8)?;
    /// assert_eq!(filter.fingerprints().len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn fingerprints(&self) -> Vec<(u64, [usize; 2])> {
        self.table
            .stored()
            .into_iter()
            .map(|(fp, pair, _)| (fp, pair))
            .collect()
    }

    /// Removes every key, keeping its table (size and memory) and parameters: the filter
    /// answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{Filter, LockedCuckooFilter};
    /// let mut filter = LockedCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.table.clear();
    }

    /// Checks the table's invariants (see
    /// [`LockFreeCuckooFilter::check_invariants`](crate::LockFreeCuckooFilter::check_invariants)).
    ///
    /// ```
    /// let filter = conqf::LockedCuckooFilter::with_bits(4, 8)?;
    /// assert_eq!(filter.check_invariants(), Ok(()));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.table.check_invariants()
    }

    /// The stripe of `bucket`.
    #[inline]
    fn stripe(&self, bucket: usize) -> usize {
        // A shift by the full width cannot happen: stripe_shift < 64 since bucket_bits <= 36.
        bucket >> self.stripe_shift
    }

    /// The stripes of two buckets, smaller first, and whether they differ.
    #[inline]
    fn stripes_of(&self, a: usize, b: usize) -> (usize, Option<usize>) {
        let (x, y) = (self.stripe(a), self.stripe(b));
        match x.cmp(&y) {
            std::cmp::Ordering::Less => (x, Some(y)),
            std::cmp::Ordering::Greater => (y, Some(x)),
            std::cmp::Ordering::Equal => (x, None),
        }
    }

    /// Read-locks the stripes of buckets `a` and `b`, in stripe order.
    pub(super) fn read_both(&self, a: usize, b: usize) -> (ReadGuard<'_>, Option<ReadGuard<'_>>) {
        let (first, second) = self.stripes_of(a, b);
        let first = sync::read(&self.locks[first]);
        (first, second.map(|s| sync::read(&self.locks[s])))
    }

    /// Read-locks every stripe, in stripe order (the order every operation locks in, so this
    /// waits for the operations in flight and cannot deadlock with them). While the guards live
    /// no entry changes: every write holds a write lock on the stripe of the entry it changes.
    pub(crate) fn read_all(&self) -> Vec<ReadGuard<'_>> {
        self.locks.iter().map(|lock| sync::read(lock)).collect()
    }

    /// A copy of the filter taken while other threads keep working, as `Clone` makes it: the
    /// table between two operation steps, read under every stripe's read lock (writers wait
    /// for the copy), with the same stripes. The name matches
    /// [`LockFreeCuckooFilter::snapshot`](crate::LockFreeCuckooFilter::snapshot); this
    /// filter's [`to_bytes`](Self::to_bytes) takes `&self` already.
    ///
    /// ```
    /// use conqf::{Filter, LockedCuckooFilter, Remove};
    /// let filter = LockedCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let copy = filter.snapshot()?;
    /// filter.remove(&"apple")?;
    /// assert!(copy.contains(&"apple") && !filter.contains(&"apple"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the copy's memory cannot be allocated.
    pub fn snapshot(&self) -> Result<Self, Error> {
        self.copy()
    }

    /// A copy of the table between two steps, with this filter's stripe count: read under
    /// every stripe's read lock ([`read_all`](Self::read_all)), which other threads' writes
    /// wait for.
    pub(crate) fn copy(&self) -> Result<Self, Error> {
        let copy = Self::with_stripes(
            self.table.bucket_bits(),
            self.table.fingerprint_bits(),
            self.stripes(),
        )?;
        {
            let _locks = self.read_all();
            // Relaxed: the read locks order these loads after every write made under the locks.
            copy.table.copy_from(&self.table, Ordering::Relaxed);
        }
        copy.table.recount();
        Ok(copy)
    }

    /// Write-locks the stripes of two buckets, in stripe order.
    fn write_both(&self, a: usize, b: usize) -> (WriteGuard<'_>, Option<WriteGuard<'_>>) {
        let (first, second) = self.stripes_of(a, b);
        let first = sync::write(&self.locks[first]);
        (first, second.map(|s| sync::write(&self.locks[s])))
    }

    /// Fills an empty entry of `bucket`; the caller holds its stripe's write lock.
    fn fill_empty(&self, bucket: usize, fingerprint: u64, hash: u64) -> bool {
        CuckooTable::index_order(hash).any(|index| {
            self.table.compare_exchange(
                bucket,
                index,
                Entry::EMPTY,
                Entry::new(fingerprint, State::Stable),
            )
        })
    }

    /// Stores a copy of `place`'s fingerprint in one of its buckets (the insert of a hash, and
    /// of a stored copy during a merge); `seed` picks the order of the entry indices tried.
    pub(crate) fn insert_placed(&self, seed: u64, place: Placement) -> Result<(), Error> {
        self.store_placed(seed, place, false)?;
        Ok(())
    }

    /// [`insert_placed`](Self::insert_placed), or with `if_absent` an insert-if-absent:
    /// `Ok(false)`, storing nothing, if a copy is stored. Each step that stores first looks for
    /// a copy under the same write locks on both buckets' stripes, which every writer of those
    /// buckets takes (a move of a copy between them holds both), so no copy can appear between
    /// the look and the store: of racing calls for one fingerprint, one stores it.
    pub(crate) fn store_placed(
        &self,
        seed: u64,
        place: Placement,
        if_absent: bool,
    ) -> Result<bool, Error> {
        // Called under the write locks of both buckets' stripes.
        let stored_already = || if_absent && self.holds(place);
        insert_with_relocations(
            &self.table,
            seed,
            place,
            || {
                let _locks = self.write_both(place.primary, place.alternate);
                if stored_already() {
                    return Store::Present;
                }
                let filled = self.fill_empty(place.primary, place.fingerprint, seed)
                    || self.fill_empty(place.alternate, place.fingerprint, seed);
                filled.into()
            },
            |bucket, index, path| self.relocate(bucket, index, path),
            |bucket, index, stable| {
                let _locks = self.write_both(place.primary, place.alternate);
                if stored_already() {
                    return Store::Present;
                }
                let stored = self
                    .table
                    .compare_exchange(bucket, index, Entry::EMPTY, stable);
                stored.into()
            },
        )
    }

    /// Whether a bucket of `place` holds its fingerprint; the caller holds at least the read
    /// locks of both buckets' stripes.
    fn holds(&self, place: Placement) -> bool {
        // Relaxed: the caller's locks order these reads after every write made under the locks.
        [place.primary, place.alternate].into_iter().any(|bucket| {
            self.table
                .find_in_bucket(bucket, place.fingerprint, Ordering::Relaxed, |_| true)
                .is_some()
        })
    }

    /// Frees entry `index` of `start` by moving its chain one step along, each move under the
    /// write locks of its two buckets' stripes: [`Relocation::Freed`] if every move succeeded,
    /// [`Relocation::Contended`] if one found its entries changed since the path was read.
    fn relocate(&self, start: usize, index: usize, path: &mut Vec<(usize, u64)>) -> Relocation {
        // The path is read without locks; each move re-checks its two entries under the locks.
        let found = self.table.relocation_path(start, index, path);
        if found != Relocation::Freed {
            return found;
        }
        for step in (0..path.len() - 1).rev() {
            let (source, fingerprint) = path[step];
            let destination = path[step + 1].0;
            let _locks = self.write_both(source, destination);
            let stable = Entry::new(fingerprint, State::Stable);
            // Relaxed: the write locks order these reads after every earlier write to them.
            if self.table.entry(source, index, Ordering::Relaxed) != stable
                || !self
                    .table
                    .entry(destination, index, Ordering::Relaxed)
                    .is_empty()
            {
                return Relocation::Contended;
            }
            let moved = self
                .table
                .compare_exchange(destination, index, Entry::EMPTY, stable)
                && self
                    .table
                    .compare_exchange(source, index, stable, Entry::EMPTY);
            debug_assert!(moved, "both entries are write-locked");
        }
        Relocation::Freed
    }
}

impl Filter for LockedCuckooFilter {
    /// Stores a copy of the hash's fingerprint: `Ok(true)` (duplicates are stored too).
    ///
    /// # Errors
    /// [`Error::Full`] if no empty entry can be reached by a relocation chain of at most 256
    /// entries, or (rarely, under contention) if in four rounds in a row other threads took the
    /// entries its relocations freed or moved the entries its chains needed; every stored copy
    /// stays stored.
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        self.insert_placed(hash, self.table.placement(hash))?;
        Ok(true)
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let place = self.table.placement(hash);
        let _locks = self.read_both(place.primary, place.alternate);
        self.holds(place)
    }

    fn len(&self) -> usize {
        self.table.len.sum()
    }

    /// The number of keys that fit at the sizing fill of 70%.
    fn capacity(&self) -> usize {
        CuckooTable::capacity_of(self.table.bucket_bits())
    }

    /// The table and the locks.
    fn memory_bytes(&self) -> usize {
        self.table.memory_bytes() + self.locks.len() * std::mem::size_of::<CachePadded<RwLock>>()
    }

    /// `1 - (1 - 1/(2^f - 1))^(8 · load)`: see [`cuckoo_fpr`](crate::cuckoo_fpr).
    fn false_positive_rate(&self) -> f64 {
        self.table.false_positive_rate()
    }
}

impl Remove for LockedCuckooFilter {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        let place = self.table.placement(hash);
        let _locks = self.write_both(place.primary, place.alternate);
        for bucket in [place.primary, place.alternate] {
            if let Some(index) =
                self.table
                    .find_in_bucket(bucket, place.fingerprint, Ordering::Relaxed, |_| true)
            {
                let removed = self.table.compare_exchange(
                    bucket,
                    index,
                    Entry::new(place.fingerprint, State::Stable),
                    Entry::EMPTY,
                );
                debug_assert!(removed, "the entry is write-locked");
                self.table.len.decrement();
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A copy of the filter while other threads keep working: the table between two operation
/// steps, read under every stripe's read lock (as [`write_to`](LockedCuckooFilter::write_to)
/// reads it; writers wait for the copy), with the same stripes. Like `Vec`'s, the clone aborts
/// the process if its memory cannot be had.
///
/// ```
/// use conqf::{Filter, LockedCuckooFilter, Remove};
///
/// let original = LockedCuckooFilter::new(1000, 0.01)?;
/// original.insert(&"apple")?;
/// let copy = original.clone();
/// original.remove(&"apple")?;
/// assert!(copy.contains(&"apple") && !original.contains(&"apple"));
/// assert_eq!(copy.stripes(), original.stripes());
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for LockedCuckooFilter {
    fn clone(&self) -> Self {
        self.copy()
            .unwrap_or_else(|_| crate::storage::abort_for_bytes(self.memory_bytes()))
    }
}

/// The stripe locks are `RwLock<()>`s, whose `UnsafeCell<()>` holds no data, so they make the
/// filter lose `RefUnwindSafe` for nothing: the table is atomics, and an operation that panics
/// while it holds locks leaves every copy stored (a move fills its destination before it
/// clears its source). So the filter is as unwind-safe as the lock-free one.
impl std::panic::RefUnwindSafe for LockedCuckooFilter {}

impl fmt::Debug for LockedCuckooFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockedCuckooFilter")
            .field("bucket_bits", &self.bucket_bits())
            .field("fingerprint_bits", &self.fingerprint_bits())
            .field("stripes", &self.stripes())
            .field("len", &self.len())
            .finish()
    }
}
