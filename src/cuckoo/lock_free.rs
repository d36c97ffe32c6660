//! `LockFreeCuckooFilter`: the lock-free cuckoo filter of paper 001 §2, with fingerprints and
//! relocation state inline in the table's atomic words instead of a heap cell per fingerprint
//! behind hazard pointers.
//!
//! # The table
//!
//! The shared [`CuckooTable`]: 4-way buckets, partial-key cuckoo hashing, entries of a
//! fingerprint and a two-bit [`State`] packed into `AtomicU64` groups, and the same-index rule
//! (a copy in entry `i` only moves to entry `i` of its other bucket), so a copy is always in one
//! of two entries, `b1[i]` or `b2[i]`.
//!
//! # Moving a copy (paper 001 §2.3, without pointers)
//!
//! A relocation moves fingerprint `y` from entry `i` of bucket `s` to entry `i` of
//! `d = alt(s, y)` in five single-entry CAS steps, all done by the thread that started the move
//! (the *owner*; nobody else changes an entry that is not `Stable`):
//!
//! ```text
//!            s[i]              d[i]        the copy a query counts
//!  start     y  Stable         empty       s
//!  (1)       y  Out            empty       s            (fails if s[i] changed: give up)
//!  (2)       y  Out            y  In       s (and d)    (fails if d[i] was filled: undo 1)
//!            versions[d] += 1
//!  (3)       y  Vacated        y  In       d
//!  (4)       y  Vacated        y  Stable   d
//!  (5)       empty             y  Stable   d
//! ```
//!
//! Queries count every entry holding their fingerprint except `Vacated` ones, so at every
//! instant each stored copy is visible in `b1[i]` or `b2[i]` (in both during steps 2-3).
//! Removes take only `Stable` entries, so a copy being moved is never removed under its owner's
//! feet; a remove that sees its fingerprint only in moving entries waits for the owner (three
//! CAS operations at most). Inserts only fill empty entries, and relocations only start from
//! `Stable` ones, so a move in progress blocks no insert: it only takes other chains.
//!
//! # The two-round find and its relocation counters (paper 001 §2.2)
//!
//! A query that reads `b1` and then `b2` could miss a copy that moves from `b2` to `b1` between
//! the two reads (the report's false-miss figure). The report keeps a relocation counter in
//! each entry's pointer; here the counters are a fixed array of 64-bit *versions*, one per
//! stripe of buckets (`bucket mod stripes`, at most [`VERSION_STRIPES`], 8 KiB): the owner of a
//! move increments the version of the destination's stripe between steps 2 and 3. A query:
//!
//! 1. loads `v = versions[b1]`;
//! 2. looks for its fingerprint in `b1`, then in `b2` (a hit is final);
//! 3. loads `versions[b1]` again: unchanged means no copy moved into `b1` while it looked, so
//!    the miss is real; changed means it retries.
//!
//! Why that is enough: suppose a copy stays stored throughout the query but the query saw it
//! in neither bucket. When the query read `b1` the copy was visible only in `b2`, and when it
//! read `b2` it was visible only in `b1`. So a move from `b2` into `b1` did its step 2 after the
//! read of `b1` (an `In` entry is visible, and it stays visible until the copy leaves `b1`
//! again, which would need yet another move back into `b2`, visible there) and its step 3
//! before the read of `b2`. Its version increment lies between, hence between the two version
//! loads. In the memory model: step 3 is a `Release` CAS and the read of `b2` an `Acquire` load
//! that sees it (or a later CAS of the same group), so the increment happens before the second
//! version load, which therefore sees it; and the first version load cannot have seen it, or
//! (increment `Release`, load `Acquire`) step 2 would happen before the read of `b1`, which
//! would have seen the `In` entry. Versions are 64-bit counters, so they never wrap back.
//!
//! A remove answers `Ok(false)` after the same check. Stripes only cost false retries, never a
//! missed move, so many buckets share a version; they live in their own small array that stays
//! in cache, and a query that hits in `b1` reads one version and one bucket.
//!
//! # Progress
//!
//! Queries and inserts never wait: a query retries only when a move into a bucket of its
//! primary bucket's version stripe did its step 2 in the meantime (some thread made progress),
//! and an insert fills an empty entry with one CAS (retrying when another thread
//! changed the group), or relocates along chains of `Stable` entries, skipping entries others
//! are moving. An insert fails with [`Error::Full`] when no chain of at most
//! [`MAX_PATH`](super::table::MAX_PATH) entries from its 8 entries ends at an empty entry (or
//! when other threads got in the way of its chains four rounds in a row), and every stored copy
//! is still stored then: relocations move copies, they never drop one (the
//! `cuckoofilter` crate evicts a random fingerprint when a path fails; this filter never does).
//! Removes are not lock-free: they wait for the owner of a move of the copy they want.
//!
//! Two exceptions to "inserts never wait". The `&self`
//! [`snapshot`](LockFreeCuckooFilter::snapshot): while it copies the table, an insert that has
//! to relocate waits before its first move (`pause.rs`); lookups, removes and inserts that find
//! an empty entry go on. And [`insert_if_absent`](crate::Count::insert_if_absent), which for a
//! key it does not find looks again and inserts under one of up to 256 locks that no other
//! operation takes, so that of racing calls for one key exactly one stores it (`count.rs`):
//! such calls for keys of one stripe of buckets wait for each other.

use std::fmt;

use crate::filter::{Error, Filter, Remove};
use crate::sync::{self, AtomicU64, Ordering, RwLock, Waiter, WriteGuard};

use super::pause::RelocationPause;
use super::table::{
    insert_with_relocations, BucketWords, CuckooTable, Entry, Lanes, Placement, Relocation, State,
};
use crate::storage::{with_fixed_width, GroupSource};

/// The most version stripes (8 KiB of counters, which stay in cache).
pub(crate) const VERSION_STRIPES: usize = 1024;

/// The most stripes of the insert-if-absent locks (2 KiB of unpadded locks).
const ABSENT_LOCK_STRIPES: usize = 256;

/// A cuckoo filter that many threads insert into, query and remove from at once, lock-free
/// (paper 001), with fingerprints stored inline in the table.
///
/// Each insert stores a copy of the key's fingerprint, also when the same fingerprint is
/// already there (cuckoo filters keep duplicates, paper 001 §1.1), so `insert` returns
/// `Ok(true)` whenever it stored one; `remove` removes one copy. Removing a key that was never
/// inserted may remove another key's fingerprint that shares its fingerprint and buckets, as in
/// every cuckoo filter: only remove keys you inserted. A fingerprint has eight entries (its two
/// buckets of four), so the ninth copy of one key returns [`Error::Full`] however empty the
/// table is.
///
/// ```
/// use conqf::{Filter, LockFreeCuckooFilter, Remove};
///
/// let filter = LockFreeCuckooFilter::new(10_000, 0.001)?;
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
/// assert_eq!(filter.len(), 1999);
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct LockFreeCuckooFilter {
    pub(crate) table: CuckooTable,
    /// Relocation counters: `versions[bucket & stripe_mask]` counts moves into that stripe.
    versions: Box<[AtomicU64]>,
    stripe_mask: usize,
    /// Holds relocations off while a `&self` snapshot copies the table.
    pause: RelocationPause,
    /// The locks only [`insert_if_absent_hash`](crate::Count::insert_if_absent_hash) takes, one
    /// per stripe of buckets (`absent_locks[smaller bucket & absent_mask]`): racing calls for
    /// one fingerprint take turns, so the second finds the first's copy (`cuckoo/count.rs`).
    /// Not padded: only those calls touch them.
    absent_locks: Box<[RwLock]>,
    absent_mask: usize,
}

impl LockFreeCuckooFilter {
    /// A filter that holds `capacity` keys with an expected false-positive rate of at most
    /// `fpr` when that full (a table of fewer than `2^7` buckets may refuse one of them, rarely:
    /// see [`Filter::capacity`]).
    ///
    /// ```
    /// use conqf::{Filter, LockFreeCuckooFilter};
    /// let filter = LockFreeCuckooFilter::new(1000, 0.01)?;
    /// assert!(filter.capacity() >= 1000);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)` or needs more
    /// than 30 fingerprint bits, or the table would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    ///
    /// The fingerprints have at least 8 bits (fewer would cap the fill below 70% on large
    /// tables), so a large `fpr` is met with room to spare.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        let (bucket_bits, fingerprint_bits) = CuckooTable::parameters_for(capacity, fpr)?;
        Self::with_bits(bucket_bits, fingerprint_bits)
    }

    /// A filter of `2^bucket_bits` buckets of 4 entries with `fingerprint_bits`-bit
    /// fingerprints (4 to 30 bits; 8, 12 and 16 are the usual choices). Below 8 bits large
    /// tables fill less far before an insert fails (about 60% with 4 bits at 2^22 buckets; the
    /// load caps are tabled in the crate README's cuckoo section).
    ///
    /// ```
    /// use conqf::LockFreeCuckooFilter;
    /// let filter = LockFreeCuckooFilter::with_bits(10, 16)?; // 1024 buckets, 16-bit fingerprints
    /// assert_eq!(filter.fingerprint_bits(), 16);
    /// assert!(LockFreeCuckooFilter::with_bits(10, 40).is_err());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `bucket_bits` is not in `1..=36` or `fingerprint_bits`
    /// not in `4..=30`; [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn with_bits(bucket_bits: u32, fingerprint_bits: u32) -> Result<Self, Error> {
        let table = CuckooTable::new(bucket_bits, fingerprint_bits)?;
        let stripes = table.buckets().min(VERSION_STRIPES);
        let absent_stripes = table.buckets().min(ABSENT_LOCK_STRIPES);
        Ok(LockFreeCuckooFilter {
            versions: (0..stripes).map(|_| AtomicU64::new(0)).collect(),
            stripe_mask: stripes - 1,
            table,
            pause: RelocationPause::default(),
            absent_locks: (0..absent_stripes).map(|_| RwLock::default()).collect(),
            absent_mask: absent_stripes - 1,
        })
    }

    /// `b`: the table has `2^b` buckets of 4 entries.
    ///
    /// ```
    /// let filter = conqf::LockFreeCuckooFilter::with_bits(5, 12)?;
    /// assert_eq!(filter.bucket_bits(), 5);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn bucket_bits(&self) -> u32 {
        self.table.bucket_bits()
    }

    /// `f`: the width of a fingerprint.
    ///
    /// ```
    /// let filter = conqf::LockFreeCuckooFilter::with_bits(5, 12)?;
    /// assert_eq!(filter.fingerprint_bits(), 12);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn fingerprint_bits(&self) -> u32 {
        self.table.fingerprint_bits()
    }

    /// The primary bucket, the alternate bucket and the fingerprint of a hash: where the filter
    /// stores it (for tests and diagnostics).
    ///
    /// ```
    /// let filter = conqf::LockFreeCuckooFilter::with_bits(4, 8)?;
    /// let (b1, b2, fp) = filter.placement(conqf::hash_key("apple"));
    /// assert!(b1 < 16 && b2 < 16 && b1 != b2 && fp != 0 && fp < 256);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn placement(&self, hash: u64) -> (usize, usize, u64) {
        let p = self.table.placement(hash);
        (p.primary, p.alternate, p.fingerprint)
    }

    /// Every stored fingerprint with its two buckets (smaller first), sorted by buckets and
    /// fingerprint; duplicates appear once per copy. Exact only while no thread writes.
    ///
    /// ```
    /// use conqf::{Filter, LockFreeCuckooFilter};
    /// let filter = LockFreeCuckooFilter::with_bits(4, 8)?;
    /// filter.insert(&1u8)?;
    /// filter.insert(&1u8)?;
    /// assert_eq!(filter.fingerprints().len(), 2);
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
    /// use conqf::{Filter, LockFreeCuckooFilter};
    /// let mut filter = LockFreeCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        // The relocation counters only ever grow; a lookup compares two reads of one.
        self.table.clear();
    }

    /// Checks the table's invariants: no entry left in a moving state and `len` equal to the
    /// number of stored entries. Meaningful only while no thread writes.
    ///
    /// ```
    /// let filter = conqf::LockFreeCuckooFilter::with_bits(4, 8)?;
    /// assert_eq!(filter.check_invariants(), Ok(()));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.table.check_invariants()
    }

    /// Takes the insert-if-absent lock of `place`'s bucket pair (the stripe of its smaller
    /// bucket, the same from either bucket), which no other operation takes.
    pub(super) fn lock_absent(&self, place: Placement) -> WriteGuard<'_> {
        let bucket = place.primary.min(place.alternate);
        sync::write(&self.absent_locks[bucket & self.absent_mask])
    }

    /// The relocation counter of `bucket`'s stripe.
    #[inline]
    fn version(&self, bucket: usize) -> &AtomicU64 {
        &self.versions[bucket & self.stripe_mask]
    }

    /// Loads the relocation counter of `bucket`'s stripe.
    ///
    /// Acquire: if it sees a move's increment, the move's step 2 is visible to the bucket reads
    /// that follow (see the module docs).
    #[inline]
    pub(super) fn load_version(&self, bucket: usize) -> u64 {
        #[cfg(loom)]
        if crate::sync::loom_loads_as_rmw() {
            // As in `SlotArray::load_group`: an RMW read makes loom explore load-then-compare
            // races its partial-order reduction skips.
            return self.version(bucket).fetch_add(0, Ordering::Acquire);
        }
        self.version(bucket).load(Ordering::Acquire)
    }

    /// [`contains_hash`](Filter::contains_hash) of a hash placed at `place`.
    #[inline]
    pub(super) fn contains_placed(&self, place: Placement) -> bool {
        let entries = &self.table.entries;
        // Compiled per entry width for the widths `with_fixed_width!` lists.
        with_fixed_width!(entries => self.contains_in(entries, place))
    }

    /// [`contains_hash`](Filter::contains_hash) through `entries`, the table's entries seen as a
    /// [`GroupSource`]: compiled per entry width (`with_fixed_width!`), so the lanes' masks and
    /// the bucket's group are constants and multiplications, not computed from the layout.
    #[inline(always)]
    fn contains_in<S: GroupSource>(&self, entries: S, place: Placement) -> bool {
        let lanes = Lanes::new(entries.layout());
        let visible = |bucket: &BucketWords| Self::visible_in(&lanes, bucket, place.fingerprint);
        loop {
            let version = self.load_version(place.primary);
            // Both buckets are loaded, `primary` first, before either is searched, so the two
            // loads overlap; the order of the reads is the one the module docs' argument uses.
            // Acquire: the entries were published by `Release` CASes; see the module docs.
            let primary = self
                .table
                .load_bucket_from(&entries, place.primary, Ordering::Acquire);
            let alternate =
                self.table
                    .load_bucket_from(&entries, place.alternate, Ordering::Acquire);
            if visible(&primary) || visible(&alternate) {
                return true;
            }
            if self.load_version(place.primary) == version {
                return false;
            }
        }
    }

    /// Whether `bucket` (loaded) shows a copy of `fingerprint` a query counts (any state but
    /// `Vacated`), with `lanes` the constants of the table's layout.
    #[inline(always)]
    fn visible_in(lanes: &Lanes, bucket: &BucketWords, fingerprint: u64) -> bool {
        CuckooTable::search_with(lanes, bucket, fingerprint, |state| state != State::Vacated)
            .is_some()
    }

    /// Fills an empty entry of `bucket` with a stable `fingerprint`.
    fn fill_empty(&self, bucket: usize, fingerprint: u64, hash: u64) -> bool {
        for index in CuckooTable::index_order(hash) {
            // Acquire: as every load.
            while self
                .table
                .entry(bucket, index, Ordering::Acquire)
                .is_empty()
            {
                if self.table.compare_exchange(
                    bucket,
                    index,
                    Entry::EMPTY,
                    Entry::new(fingerprint, State::Stable),
                ) {
                    return true;
                }
            }
        }
        false
    }

    /// Frees entry `index` of `start` by moving the chain behind it one step along, from its
    /// empty end back to `start`. [`Relocation::Freed`] if every move succeeded (the entry was
    /// empty then; another insert may fill it first), [`Relocation::Contended`] if one found
    /// its entries changed.
    fn relocate(&self, start: usize, index: usize, path: &mut Vec<(usize, u64)>) -> Relocation {
        let found = self.table.relocation_path(start, index, path);
        if found != Relocation::Freed {
            return found;
        }
        // No move while a snapshot copies the table (waits for it if one is under way).
        let _moving = self.pause.start_moving();
        for step in (0..path.len() - 1).rev() {
            let (source, fingerprint) = path[step];
            let destination = path[step + 1].0;
            if !self.move_entry(source, destination, index, fingerprint) {
                return Relocation::Contended;
            }
        }
        Relocation::Freed
    }

    /// A copy of the filter, taken while other threads keep working: a filter of the same shape
    /// holding every copy stored before the call and not removed during it, each where it was;
    /// copies inserted or removed meanwhile may or may not be in it (crate docs, "Consistency").
    /// While it copies the table (one pass, no locks), relocations wait: an insert that must move
    /// entries to make room waits for the copy, while lookups, removals and inserts that find an
    /// empty entry go on (a relocation that starts during the copy waits for it to end, and the
    /// copy waits for the relocations already under way to finish). Persist a live filter with
    /// `filter.snapshot()?.to_bytes()`; [`to_bytes`](Self::to_bytes) needs `&mut self`.
    ///
    /// ```
    /// use conqf::{Filter, LockFreeCuckooFilter};
    /// let filter = LockFreeCuckooFilter::new(10_000, 0.001)?;
    /// filter.insert(&"apple")?;
    /// let mut copy = std::thread::scope(|s| {
    ///     s.spawn(|| filter.insert(&"pear")); // may or may not be in the copy
    ///     filter.snapshot()
    /// })?;
    /// let back = LockFreeCuckooFilter::from_bytes(&copy.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the copy's memory cannot be allocated.
    pub fn snapshot(&self) -> Result<LockFreeCuckooFilter, Error> {
        let copy = Self::with_bits(self.table.bucket_bits(), self.table.fingerprint_bits())?;
        {
            // With no move under way, every entry is empty or `Stable` and stays where it is
            // until removed, so one pass over the words reads every copy stored throughout.
            let _paused = self.pause.pause();
            // Acquire: pairs with the Release CASes that filled the entries.
            copy.table.copy_from(&self.table, Ordering::Acquire);
        }
        copy.table.recount();
        Ok(copy)
    }

    /// Stores a copy of `place`'s fingerprint in one of its buckets (the insert of a hash, and
    /// of a stored copy during a merge); `seed` picks the order of the entry indices tried.
    pub(crate) fn insert_placed(&self, seed: u64, place: Placement) -> Result<(), Error> {
        insert_with_relocations(
            &self.table,
            seed,
            place,
            || {
                let filled = self.fill_empty(place.primary, place.fingerprint, seed)
                    || self.fill_empty(place.alternate, place.fingerprint, seed);
                filled.into()
            },
            |bucket, index, path| self.relocate(bucket, index, path),
            |bucket, index, stable| {
                let stored = self
                    .table
                    .compare_exchange(bucket, index, Entry::EMPTY, stable);
                stored.into()
            },
        )?;
        Ok(())
    }

    /// Moves stable `fingerprint` from `source[index]` to `destination[index]` (its alternate
    /// bucket) with the five steps of the module docs. Returns `false`, changing nothing, if
    /// the source no longer holds it or the destination is no longer empty.
    fn move_entry(
        &self,
        source: usize,
        destination: usize,
        index: usize,
        fingerprint: u64,
    ) -> bool {
        let stable = Entry::new(fingerprint, State::Stable);
        let out = Entry::new(fingerprint, State::Out);
        let incoming = Entry::new(fingerprint, State::In);
        let vacated = Entry::new(fingerprint, State::Vacated);
        let table = &self.table;
        // (1) Claim the source: from here on only this thread changes it.
        if !table.compare_exchange(source, index, stable, out) {
            return false;
        }
        // (2) Copy into the destination if it is still empty.
        if !table.compare_exchange(destination, index, Entry::EMPTY, incoming) {
            let undone = table.compare_exchange(source, index, out, stable);
            debug_assert!(undone, "only the owner changes an Out entry");
            return false;
        }
        // The relocation counter, between steps 2 and 3. AcqRel: the `Release` half orders step
        // 2 before the increment, so a query whose `Acquire` version load sees it also sees step
        // 2; step 3's own `Release` CAS orders the increment before step 3. The `Acquire` half
        // is not needed by that argument and costs nothing on x86 (every RMW is a full fence).
        self.version(destination).fetch_add(1, Ordering::AcqRel);
        // (3) The destination is now the copy; (4) make it ordinary; (5) clear the source.
        // Only this thread changes these entries, so the CASes succeed (they loop only over
        // changes to the other entries of the same groups).
        let moved = table.compare_exchange(source, index, out, vacated)
            && table.compare_exchange(destination, index, incoming, stable)
            && table.compare_exchange(source, index, vacated, Entry::EMPTY);
        debug_assert!(moved, "only the owner changes a moving entry");
        true
    }
}

impl Filter for LockFreeCuckooFilter {
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
        self.contains_placed(self.table.placement(hash))
    }

    fn len(&self) -> usize {
        self.table.len.sum()
    }

    /// The number of keys that fit at the sizing fill of 70% (the same-index rule keeps cuckoo
    /// tables from filling as far as sequential ones; see the README's cuckoo section).
    fn capacity(&self) -> usize {
        CuckooTable::capacity_of(self.table.bucket_bits())
    }

    /// The table, the relocation counters and the insert-if-absent locks.
    fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
            + self.versions.len() * std::mem::size_of::<u64>()
            + std::mem::size_of_val(&*self.absent_locks)
    }

    /// `1 - (1 - 1/(2^f - 1))^(8 · load)`: see [`cuckoo_fpr`](crate::cuckoo_fpr).
    fn false_positive_rate(&self) -> f64 {
        self.table.false_positive_rate()
    }
}

impl Remove for LockFreeCuckooFilter {
    /// Removes one stable copy of the hash's fingerprint; waits if the only copies are being
    /// moved. `Ok(false)` if no copy is stored.
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        let place = self.table.placement(hash);
        let waiter = Waiter::new();
        'retry: loop {
            let version = self.load_version(place.primary);
            let mut moving = false;
            for bucket in [place.primary, place.alternate] {
                // Acquire: as every load.
                let words = self.table.load_bucket(bucket, Ordering::Acquire);
                let stable = Entry::new(place.fingerprint, State::Stable);
                if let Some(index) = self
                    .table
                    .search(&words, place.fingerprint, |state| state == State::Stable)
                {
                    if self
                        .table
                        .compare_exchange(bucket, index, stable, Entry::EMPTY)
                    {
                        self.table.len.decrement();
                        return Ok(true);
                    }
                    // The entry changed under us (moved or removed): look again.
                    continue 'retry;
                }
                moving |= self
                    .table
                    .search(&words, place.fingerprint, |state| {
                        matches!(state, State::Out | State::In)
                    })
                    .is_some();
            }
            if moving {
                waiter.wait();
                continue;
            }
            if self.load_version(place.primary) == version {
                return Ok(false);
            }
        }
    }
}

/// A copy of the filter while other threads keep working: its
/// [`snapshot`](LockFreeCuckooFilter::snapshot) (one pass over the table while relocations
/// wait), aborting the process like `Vec`'s clone if its memory cannot be had.
///
/// ```
/// use conqf::{Filter, LockFreeCuckooFilter, Remove};
///
/// let original = LockFreeCuckooFilter::new(1000, 0.01)?;
/// original.insert(&"apple")?;
/// let copy = original.clone();
/// original.remove(&"apple")?;
/// assert!(copy.contains(&"apple") && !original.contains(&"apple"));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for LockFreeCuckooFilter {
    fn clone(&self) -> Self {
        self.snapshot()
            .unwrap_or_else(|_| crate::storage::abort_for_bytes(self.memory_bytes()))
    }
}

/// The insert-if-absent locks are `RwLock<()>`s, whose `UnsafeCell<()>` holds no data, so they
/// would make the filter lose `RefUnwindSafe` for nothing: the table is atomics, a lock is
/// released (not poisoned) when a call holding it unwinds, and every step of an insert leaves
/// every stored copy visible (a move fills its destination before it clears its source).
impl std::panic::RefUnwindSafe for LockFreeCuckooFilter {}

impl fmt::Debug for LockFreeCuckooFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockFreeCuckooFilter")
            .field("bucket_bits", &self.bucket_bits())
            .field("fingerprint_bits", &self.fingerprint_bits())
            .field("len", &self.len())
            .finish()
    }
}
