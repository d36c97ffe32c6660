//! `ExternallyLockedQf`: the sequential 3-status-bit quotient filter behind a separate array of
//! spin locks, one per region of consecutive slots. This is the "common scheme" that paper 000
//! §3 argues against and §5 measures ("Externally locked quotient filter using an array with one
//! lock per 4096 slots"): every operation pays a second memory access, to the lock array, besides
//! the table. It is the baseline of the locally locked filter's speedup, so it is kept honest:
//! the locks live in their own array (not in the table), every operation takes one, and there is
//! no lock elision.
//!
//! # Layout
//!
//! The table is exactly the one of [`SequentialQf`] (slots packed into 64-bit groups, an
//! overflow tail instead of wrap-around), so conversion either way is free. Beside it, one
//! `AtomicBool` per region, packed one byte each as in the paper's plain lock array.
//!
//! **Regions are whole groups.** The requested region size is rounded up to `per_group * 2^k`
//! slots (`per_group = floor(64 / (r + 3))` slots per group), so a group never straddles two
//! regions and a slot's region is its group index shifted right by `k`. For the paper's `r = 10`
//! (13-bit slots, 4 per group) the default of 4096 slots is exact. Because a lock covers whole
//! groups, a thread holding the regions it writes is the only writer of those groups, so a shift
//! publishes each group with a plain load and store (no CAS).
//!
//! # Protocol
//!
//! Every operation (insert, contains, remove) locks the region of its canonical slot and runs the
//! plain sequential walk of [`walk`] from that slot. The walk reads a contiguous stretch of the
//! table: left to the cluster start, then right to the end of the run (queries), the first empty
//! slot (inserts) or the first empty slot after the removed element (removals, which shift
//! left at most that far). The walk can read past the held regions; it never writes. Afterwards
//! the operation checks that the stretch it read lies in held regions:
//!
//! * if so, everything it read is stable (nobody else writes a held region), so its answer is the
//!   sequential one, and it writes its shift, which lies inside that same stretch;
//! * if the stretch reaches into later regions, it locks those too, in ascending order, while
//!   holding the ones it has, and walks again;
//! * if the stretch starts in an earlier region (the cluster start is left of the canonical
//!   slot's region), it releases everything and locks from the start's region upward, in
//!   ascending order, and walks again (the table may have changed while nothing was held).
//!
//! (Strictly, the left extension is implied by the right one: a writer that changes the stretch
//! between a cluster start and a canonical slot shifts at least up to that canonical slot, so
//! it holds the slot's region while it writes. The protocol takes it anyway, so the
//! two-phase-locking argument below needs no such lemma; it costs something only when a
//! cluster crosses a region boundary.)
//!
//! A walk that fails outright (it read an inconsistent half-shifted stretch of a region it does
//! not hold) widens the held range by one region on each side and walks again; with every region
//! held it answers as [`SequentialQf`] does on a corrupt table.
//!
//! **No deadlock**: a thread waits for a lock only while every lock it holds belongs to a lower
//! region (right extensions) or while it holds none (the first lock, left extensions). So every
//! chain of waits goes to higher regions and ends.
//!
//! **No false negatives, per-key linearizability**: an operation writes only slots in regions it
//! holds and its answer depends only on slots in regions it holds, all locked at once
//! (two-phase locking: everything is acquired before the accepted walk, released after the
//! writes). So operations on overlapping stretches are serialised in lock order, each sees the
//! table as the previous one left it, and the table is always a sequential table once no
//! operation holds a region.
//!
//! # Memory orderings
//!
//! Locking is an `Acquire` compare-and-exchange and unlocking a `Release` store, so everything
//! the previous holder of a region wrote happens before the next holder reads it. Table loads
//! and stores are therefore `Relaxed`: under the lock they are ordered by it, and loads of
//! regions not held are only used to decide which regions to lock (their results are then
//! discarded).

use crate::batch::keys::extend_with_table_keys;
use crate::counter::StripedCounter;
use crate::filter::{Error, Filter, Merge, Remove};
use crate::storage::{try_boxed, with_fixed_width, AtRest, Commit, Cursor, Rewriter, SlotArray};
use crate::sync::{AtomicBool, Ordering};

use super::load_cap::{refuse_unless_stored, LoadCap};
use super::region_locks;
use super::scan::Fingerprints;
use super::sequential::{merge_tables, SequentialQf};
use super::table::QfTable;
use super::walk::{self, InsertStep, KEEP_OCCUPIED};

/// A concurrent quotient filter guarded by an external array of region spin locks (paper 000
/// §3, §5): the baseline [`LocallyLockedQf`](crate::LocallyLockedQf) is measured against.
///
/// All methods take `&self`; share it with an [`Arc`](std::sync::Arc).
///
/// ```
/// use conqf::{ExternallyLockedQf, Filter, Remove};
///
/// let filter = ExternallyLockedQf::new(100_000, 0.001)?;
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
pub struct ExternallyLockedQf {
    table: QfTable,
    /// One spin lock per region; `true` while held.
    locks: Box<[AtomicBool]>,
    /// The region of group `g` is `g >> region_shift`.
    region_shift: u32,
    /// Slots per region (after rounding to whole groups).
    region_slots: usize,
    len: StripedCounter,
    /// Refuses inserts past about 31/32 of the slots.
    cap: LoadCap,
}

impl ExternallyLockedQf {
    /// The region size of the paper's external-lock competitor: 4096 slots per lock, asked of
    /// every constructor without a region argument. Regions are whole groups, a power of two
    /// of them, so the size a filter gets is this rounded up to `floor(64 / (r + 3)) · 2^k`
    /// slots ([`region_slots`](Self::region_slots)): exactly 4096 for 13- and 16-bit slots
    /// (`r = 10` or 13), 5120 for 11-bit ones, 7168 for 9-bit ones.
    pub const DEFAULT_REGION_SLOTS: usize = 4096;

    /// A filter that holds `capacity` keys at an expected false-positive rate of at most `fpr`,
    /// with regions of [`DEFAULT_REGION_SLOTS`](Self::DEFAULT_REGION_SLOTS).
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        // The fallible conversion: a lock array that cannot be allocated is an error here, not
        // an abort (found by a review of the public API).
        Self::from_sequential_with_region(
            SequentialQf::new(capacity, fpr)?,
            Self::DEFAULT_REGION_SLOTS,
        )
    }

    /// A filter with `2^quotient_bits` slots of `remainder_bits` remainder bits each, with
    /// regions of [`DEFAULT_REGION_SLOTS`](Self::DEFAULT_REGION_SLOTS).
    ///
    /// # Errors
    /// As [`SequentialQf::with_bits`].
    pub fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        Self::with_bits_and_region(quotient_bits, remainder_bits, Self::DEFAULT_REGION_SLOTS)
    }

    /// As [`with_bits`](Self::with_bits), with one lock per `region_slots` slots, rounded up to
    /// a power-of-two number of whole groups, and at most the whole table rounded up so (see
    /// [`region_slots`](Self::region_slots)). Slots, not blocks: `CountingQf`'s method of this
    /// name counts blocks of 64 slots.
    ///
    /// ```
    /// use conqf::ExternallyLockedQf;
    /// let filter = ExternallyLockedQf::with_bits_and_region(16, 10, 1024)?;
    /// assert_eq!(filter.region_slots(), 1024); // 256 groups of four 13-bit slots
    /// assert!(ExternallyLockedQf::with_bits_and_region(16, 10, 0).is_err());
    /// // More than the table: one lock over its 256 groups of five 11-bit slots.
    /// let whole = ExternallyLockedQf::with_bits_and_region(10, 8, usize::MAX)?;
    /// assert_eq!((whole.region_slots(), whole.regions()), (1280, 1));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`SequentialQf::with_bits`], and [`Error::InvalidParameters`] if `region_slots` is 0.
    pub fn with_bits_and_region(
        quotient_bits: u32,
        remainder_bits: u32,
        region_slots: usize,
    ) -> Result<Self, Error> {
        check_region(region_slots)?;
        let sequential = SequentialQf::with_bits(quotient_bits, remainder_bits)?;
        Self::from_sequential_with_region(sequential, region_slots)
    }

    /// The concurrent filter over a sequential filter's table (no copy: the layouts are the
    /// same), with regions of [`DEFAULT_REGION_SLOTS`](Self::DEFAULT_REGION_SLOTS).
    ///
    /// Allocates only the lock array, one byte per region. Like a `std` collection, it aborts
    /// through [`handle_alloc_error`](std::alloc::handle_alloc_error) if even that cannot be
    /// had; [`from_sequential_with_region`](Self::from_sequential_with_region) returns an error
    /// instead.
    pub fn from_sequential(filter: SequentialQf) -> Self {
        let shape = RegionShape::of(&filter, Self::DEFAULT_REGION_SLOTS);
        Self::build(filter, shape).unwrap_or_else(|_| {
            crate::storage::abort_for_bytes(shape.regions * std::mem::size_of::<AtomicBool>())
        })
    }

    /// [`from_sequential`](Self::from_sequential) with one lock per `region_slots` slots.
    ///
    /// ```
    /// use conqf::{ExternallyLockedQf, Filter, SequentialQf};
    /// let mut sequential = SequentialQf::with_bits(12, 10)?;
    /// sequential.insert(&7u64)?;
    /// let filter = ExternallyLockedQf::from_sequential_with_region(sequential, 256)?;
    /// assert!(filter.contains(&7u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `region_slots` is 0; [`Error::OutOfMemory`] if the lock
    /// array cannot be allocated.
    pub fn from_sequential_with_region(
        filter: SequentialQf,
        region_slots: usize,
    ) -> Result<Self, Error> {
        check_region(region_slots)?;
        let shape = RegionShape::of(&filter, region_slots);
        Self::build(filter, shape)
    }

    /// The sequential filter over this table (no copy), e.g. to grow or merge it.
    pub fn into_sequential(self) -> SequentialQf {
        let len = self.len.sum();
        SequentialQf {
            table: self.table,
            len,
        }
    }

    /// The filter over `filter`'s table with regions of `shape`.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the lock array cannot be allocated.
    fn build(filter: SequentialQf, shape: RegionShape) -> Result<Self, Error> {
        let (len, cap) = LoadCap::with_counter(filter.table.quotient_bits, filter.len);
        Ok(ExternallyLockedQf {
            table: filter.table,
            locks: try_boxed(shape.regions, || AtomicBool::new(false))?,
            region_shift: shape.region_groups.trailing_zeros(),
            region_slots: shape.region_slots,
            len,
            cap,
        })
    }

    /// Quotient bits `q`: the table has `2^q` canonical slots.
    pub fn quotient_bits(&self) -> u32 {
        self.table.quotient_bits
    }

    /// Remainder bits `r` stored per slot.
    pub fn remainder_bits(&self) -> u32 {
        self.table.remainder_bits
    }

    /// Slots per lock: the requested region size rounded up to `per_group * 2^k` slots, where
    /// `per_group = floor(64 / (r + 3))`, so regions are whole groups; a request larger than the
    /// table gives one region, the table's groups rounded up to a power of two
    /// (`with_bits_and_region(10, 8, usize::MAX)` has 1,280 slots per lock: 256 groups of five).
    pub fn region_slots(&self) -> usize {
        self.region_slots
    }

    /// Number of regions (locks).
    pub fn regions(&self) -> usize {
        self.locks.len()
    }

    /// The stored fingerprints in increasing order. Only meaningful while no thread writes.
    pub fn fingerprints(&self) -> Fingerprints<'_> {
        // Relaxed: the caller has synchronised with the writers (joined them, or any
        // Release/Acquire pair after their last operation), which orders their stores first.
        self.table.fingerprints(Ordering::Relaxed)
    }

    /// The table (for persistence).
    pub(crate) fn table(&self) -> &QfTable {
        &self.table
    }

    /// The table's groups, copied while every region lock is held (taken in ascending order,
    /// as every operation takes them): the table between two operations.
    pub(crate) fn snapshot_groups(&self) -> Vec<u64> {
        let slots = &self.table.slots;
        let groups = slots.layout().groups_for(slots.len());
        // Allocated before locking, so other threads wait only for the copy.
        let mut copy = Vec::with_capacity(groups);
        // Relaxed: every region is held, so no thread writes the table, and the locks'
        // Acquire ordered the previous holders' stores before these loads.
        self.with_all_held(|| {
            copy.extend((0..groups).map(|group| slots.load_group(group, Ordering::Relaxed)));
        });
        copy
    }

    /// Runs `read` while every region lock is held (taken in ascending order, as every writer
    /// takes its regions): no thread writes the table meanwhile, and the locks' Acquire ordered
    /// the previous holders' writes, the table's and the count's, before `read`'s loads.
    fn with_all_held<T>(&self, read: impl FnOnce() -> T) -> T {
        let _all = region_locks::Held::lock(&self.locks, 0, self.locks.len() - 1);
        read()
    }

    /// The sorted fingerprint keys of the table, read while every region lock is held (as in
    /// [`snapshot_groups`](Self::snapshot_groups)): the table between two operations.
    fn locked_keys(&self) -> Vec<u64> {
        // Allocated before locking, with room for inserts that land before the locks are
        // taken, so other threads wait only for the read (growing the vector under the locks
        // stalled a lookup 48 ms at `2^22` slots, in review).
        let expected = self.len.sum();
        let mut keys = Vec::with_capacity(expected + expected / 16 + 64);
        // Relaxed: every region is held (`with_all_held`).
        self.with_all_held(|| extend_with_table_keys(&mut keys, &self.table, Ordering::Relaxed));
        keys
    }

    /// Removes every key, keeping its table (size and memory) and parameters: the filter
    /// answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{ExternallyLockedQf, Filter};
    /// let mut filter = ExternallyLockedQf::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.table.slots.clear();
        self.cap.set_count(&self.len, 0);
    }

    /// Checks that no region is locked and the table's invariants (status bits, run order, the
    /// count). Only meaningful while no thread works on the filter; for tests and debugging.
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        region_locks::check_unlocked(&self.locks)?;
        self.table.check(self.len.sum())
    }

    /// The table's slots, which hold no locks: the locks are beside the table.
    #[inline]
    fn slots(&self) -> AtRest<'_> {
        AtRest(&self.table.slots)
    }

    #[inline]
    fn fingerprint(&self, hash: u64) -> (usize, u64) {
        self.table.fingerprint(hash)
    }

    /// [`Filter::contains_hash`] of a split hash: the walk under the region locks of its stretch.
    #[inline]
    pub(crate) fn contains_fingerprint(&self, quotient: usize, remainder: u64) -> bool {
        self.locked(quotient, |held| {
            // Relaxed: as in `insert_hash`.
            let slots = self.slots();
            let lookup = with_fixed_width!(slots => {
                let mut cursor = Cursor::over(&slots, quotient, Ordering::Relaxed);
                walk::lookup(&mut cursor, remainder).map(|(found, start)| (found, start, cursor.index()))
            });
            match lookup {
                Some((found, start, stopped)) => {
                    let to = stopped.max(quotient);
                    held.answer(start.unwrap_or(quotient), to, found)
                }
                None => held.failed(false),
            }
        })
    }

    /// The region holding slot `index`.
    #[inline]
    fn region_of(&self, index: usize) -> usize {
        self.table.slots.layout().locate(index).0 >> self.region_shift
    }

    /// Runs `op` holding the region of `quotient`, and more regions as `op` asks for them,
    /// until it answers; releases everything before returning.
    #[inline]
    fn locked<T>(&self, quotient: usize, mut op: impl FnMut(&Held<'_>) -> Walked<T>) -> T {
        let region = self.region_of(quotient);
        let mut held = Held {
            filter: self,
            regions: region_locks::Held::lock(&self.locks, region, region),
        };
        loop {
            match op(&held) {
                Walked::Done(answer) => return answer,
                Walked::Read { from, to } => {
                    held.regions
                        .extend(self.region_of(from), self.region_of(to));
                }
                Walked::Failed => {
                    // `failed` answers `Done` once every region is held, so there is more.
                    held.regions.widen();
                }
            }
        }
    }
}

/// What a walk under a [`Held`] set of regions found.
enum Walked<T> {
    /// Everything the walk read is in held regions: this is the answer.
    Done(T),
    /// The walk read the slots `from..=to`, some of them outside the held regions.
    Read { from: usize, to: usize },
    /// The walk failed: it read an inconsistent stretch outside the held regions.
    Failed,
}

/// The regions an operation holds, with the filter that maps slots to them.
struct Held<'a> {
    filter: &'a ExternallyLockedQf,
    regions: region_locks::Held<'a, AtomicBool>,
}

impl Held<'_> {
    /// Whether the slots `from..=to` all lie in held regions.
    #[inline]
    fn covers(&self, from: usize, to: usize) -> bool {
        self.regions
            .holds(self.filter.region_of(from), self.filter.region_of(to))
    }

    /// `answer` if the walk that produced it read only `from..=to` and those are held.
    #[inline]
    fn answer<T>(&self, from: usize, to: usize, answer: T) -> Walked<T> {
        if self.covers(from, to) {
            Walked::Done(answer)
        } else {
            Walked::Read { from, to }
        }
    }

    /// A failed walk: with every region held the table itself is corrupt and `fallback` (what
    /// the sequential filter answers) stands; otherwise lock more and walk again.
    #[inline]
    fn failed<T>(&self, fallback: T) -> Walked<T> {
        if self.regions.holds_all() {
            Walked::Done(fallback)
        } else {
            Walked::Failed
        }
    }
}

/// [`Commit`] for groups in regions this thread holds: nobody else writes them (a region is a
/// whole number of groups), so a load and a store publish a group.
struct UnderLock;

impl Commit for UnderLock {
    #[inline]
    fn commit(&self, array: &SlotArray, group: usize, _range: u64, compose: impl Fn(u64) -> u64) {
        // Relaxed: we hold the group's region, so no other thread writes it; the lock's Acquire
        // ordered the previous holder's stores before this load, and our unlock's Release orders
        // this store before the next holder's loads. Threads that read it without the lock
        // discard what they read.
        let word = array.load_group(group, Ordering::Relaxed);
        array.store_group(group, compose(word), Ordering::Relaxed);
    }
}

/// Merging without rehashing, as [`SequentialQf`]'s merge does (paper 004 §IV-E; the same
/// result shape and the same [`Error::Incompatible`] rule). The result's regions are this
/// filter's [`region_slots`](Self::region_slots), rounded to its groups as
/// [`from_sequential_with_region`](Self::from_sequential_with_region) rounds them.
///
/// Other threads may keep using both filters: each is read whole while the merge holds all of
/// its region locks (first this filter, then `other`, never both at once), so the result holds
/// every fingerprint stored in a filter before the merge began and not removed during it.
/// Meanwhile that filter's operations wait for the read.
///
/// ```
/// use conqf::{ExternallyLockedQf, Filter, Merge};
/// let a = ExternallyLockedQf::with_bits(10, 10)?;
/// let b = ExternallyLockedQf::with_bits(10, 10)?;
/// a.insert(&1u64)?;
/// b.insert(&2u64)?;
/// let union = a.merge(&b)?;
/// assert!(union.contains(&1u64) && union.contains(&2u64));
/// assert_eq!(union.len(), 2);
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for ExternallyLockedQf {
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        let merged = merge_tables(
            (&self.table, || self.locked_keys()),
            (&other.table, || other.locked_keys()),
        )?;
        Self::from_sequential_with_region(merged, self.region_slots)
    }
}

/// A copy of the filter while other threads keep working: the table between two operations,
/// read under every region lock (as [`write_to`](ExternallyLockedQf::write_to) reads it; writers
/// wait for the copy), with the same regions. Like `Vec`'s, the clone aborts the process if its
/// memory cannot be had.
///
/// ```
/// use conqf::{ExternallyLockedQf, Filter, Remove};
///
/// let original = ExternallyLockedQf::new(1000, 0.01)?;
/// original.insert(&"apple")?;
/// let copy = original.clone();
/// copy.insert(&"pear")?;
/// original.remove(&"apple")?;
/// assert!(copy.contains(&"apple") && copy.contains(&"pear"));
/// assert!(!original.contains(&"pear"));
/// assert_eq!((copy.len(), copy.region_slots()), (2, original.region_slots()));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for ExternallyLockedQf {
    fn clone(&self) -> Self {
        self.snapshot()
            .unwrap_or_else(|_| crate::storage::abort_for_bytes(self.memory_bytes()))
    }
}

impl ExternallyLockedQf {
    /// A copy of the filter taken while other threads keep working, as `Clone` makes it (the
    /// table between two operations, read under every region lock; writers wait for the
    /// copy), but with an error where `Clone` aborts. The name matches the other concurrent
    /// filters' `snapshot`.
    ///
    /// ```
    /// use conqf::{ExternallyLockedQf, Filter, Remove};
    /// let filter = ExternallyLockedQf::new(1000, 0.01)?;
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
        // Allocated before locking, so other threads wait only for the copy.
        let (q, r, slots) = (
            self.quotient_bits(),
            self.remainder_bits(),
            self.table.slots.len(),
        );
        let copy = QfTable::with_slots(q, r, slots)?;
        // Relaxed loads: every region is held (`with_all_held`). The count is exact there too:
        // every insert and removal counts itself under its locks.
        let len = self.with_all_held(|| {
            copy.slots
                .copy_groups_from(&self.table.slots, Ordering::Relaxed);
            self.len.sum()
        });
        let filter = SequentialQf { table: copy, len };
        let shape = RegionShape::of(&filter, self.region_slots);
        Self::build(filter, shape)
    }
}

impl Filter for ExternallyLockedQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        if !self.cap.admits(&self.len) {
            // `contains_hash` reads under the region locks: a hit is never a misread.
            return refuse_unless_stored(|| self.contains_hash(hash));
        }
        let (quotient, remainder) = self.fingerprint(hash);
        // Before the region lock's read-modify-write, which later loads cannot pass.
        self.table.slots.prefetch_neighbour_lines(quotient);
        self.locked(quotient, |held| {
            // Relaxed: the plan is used only if every group it read is in a held region, whose
            // lock's Acquire ordered the last writer's stores before these loads.
            let slots = self.slots();
            let mut cursor = slots.cursor(quotient, Ordering::Relaxed);
            let plan = match walk::plan_insert(&mut cursor, quotient, remainder) {
                Some(InsertStep::Duplicate { cluster_start }) => {
                    let to = cursor.index().max(quotient);
                    return held.answer(cluster_start, to, Ok(false));
                }
                Some(InsertStep::Place(plan)) => plan,
                None => return held.failed(Err(Error::Full)),
            };
            // The walk read from the cluster start to the first empty slot; the shift writes
            // inside that stretch.
            let (from, to) = (plan.cluster_start, plan.end.max(quotient));
            if !held.covers(from, to) {
                return Walked::Read { from, to };
            }
            if plan.end + 1 >= self.table.slots.len() {
                // The run would reach the last slot, which stays empty.
                return Walked::Done(Err(Error::Full));
            }
            // Relaxed: reads of held regions, as above.
            let mut read = slots.cursor(plan.position, Ordering::Relaxed);
            let mut rewriter = Rewriter::new(&self.table.slots, UnderLock, KEEP_OCCUPIED);
            walk::shift_in(&mut read, &mut rewriter, &plan, None);
            rewriter.finish();
            self.cap.count_insert(&self.len);
            Walked::Done(Ok(true))
        })
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        // Before the region lock's read-modify-write, which later loads cannot pass.
        self.table.slots.prefetch_neighbour_lines(quotient);
        self.contains_fingerprint(quotient, remainder)
    }

    fn len(&self) -> usize {
        self.len.sum()
    }

    fn capacity(&self) -> usize {
        self.table.capacity()
    }

    fn memory_bytes(&self) -> usize {
        self.table.slots.memory_bytes()
            + std::mem::size_of_val(&*self.locks)
            + self.len.memory_bytes()
    }

    fn false_positive_rate(&self) -> f64 {
        self.table.false_positive_rate(self.len.sum())
    }
}

impl Remove for ExternallyLockedQf {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        let (quotient, remainder) = self.fingerprint(hash);
        // Before the region lock's read-modify-write, which later loads cannot pass.
        self.table.slots.prefetch_neighbour_lines(quotient);
        self.locked(quotient, |held| {
            // Relaxed: as in `insert_hash`.
            let slots = self.slots();
            let mut cursor = slots.cursor(quotient, Ordering::Relaxed);
            let plan = match walk::plan_remove(&mut cursor, quotient, remainder) {
                Some(Some(plan)) => plan,
                Some(None) => {
                    // Not stored. If the canonical slot has a run, the walk went back to the
                    // cluster start first: walk back again to learn where that was (over held
                    // regions both walks read the same slots, so they stop at the same start).
                    let to = cursor.index().max(quotient);
                    // Relaxed: as above.
                    let mut back = slots.cursor(quotient, Ordering::Relaxed);
                    if walk::slot_at(&back).is_occupied() {
                        walk::back_to_cluster_start(&mut back);
                    }
                    return held.answer(back.index(), to, Ok(false));
                }
                None => return held.failed(Ok(false)),
            };
            // The cursor is past the removed element. The left shift stops at the next empty
            // slot or cluster start, and reads one slot beyond what it moves: at most up to the
            // next empty slot.
            let Some(end) = walk::seek_empty(&mut cursor) else {
                return held.failed(Ok(false));
            };
            let (from, to) = (plan.cluster_start, end.max(quotient));
            if !held.covers(from, to) {
                return Walked::Read { from, to };
            }
            // Relaxed: reads of held regions, as above.
            let mut read = slots.cursor(plan.position + 1, Ordering::Relaxed);
            let mut occupied = slots.cursor(quotient, Ordering::Relaxed);
            let mut rewriter = Rewriter::new(&self.table.slots, UnderLock, KEEP_OCCUPIED);
            walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, false);
            rewriter.finish();
            self.len.decrement();
            Walked::Done(Ok(true))
        })
    }
}

/// How a table is cut into lock regions: computed once per filter.
#[derive(Clone, Copy)]
struct RegionShape {
    /// Groups per region: a power of two, so a group's region is a shift away. When one region
    /// covers the whole table it may count more groups than the table has.
    region_groups: usize,
    /// Slots per region.
    region_slots: usize,
    /// Regions (locks) of the table.
    regions: usize,
}

impl RegionShape {
    /// Regions of about `region_slots` slots (`>= 1`) over `filter`'s table.
    fn of(filter: &SequentialQf, region_slots: usize) -> Self {
        let layout = *filter.table.slots.layout();
        let per_group = (64 / layout.bits()) as usize;
        let groups = layout.groups_for(filter.table.slots.len());
        // Clamped to the whole table (`groups >= 1`) first, so the power of two cannot overflow.
        let region_groups = region_slots
            .div_ceil(per_group)
            .clamp(1, groups)
            .next_power_of_two();
        RegionShape {
            region_groups,
            region_slots: region_groups * per_group,
            regions: ((groups - 1) >> region_groups.trailing_zeros()) + 1,
        }
    }
}

/// Rejects an empty region.
fn check_region(region_slots: usize) -> Result<(), Error> {
    if region_slots == 0 {
        return Err(Error::InvalidParameters(
            "a lock region must hold at least one slot".into(),
        ));
    }
    Ok(())
}

impl std::fmt::Debug for ExternallyLockedQf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternallyLockedQf")
            .field("quotient_bits", &self.table.quotient_bits)
            .field("remainder_bits", &self.table.remainder_bits)
            .field("region_slots", &self.region_slots)
            .field("regions", &self.locks.len())
            .field("len", &self.len.sum())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::region_locks::tests::locked_regions;
    use super::super::region_locks::RegionLock;
    use super::super::slot::{OCCUPIED, SHIFTED, STATUS_BITS};
    use super::*;

    const Q: u32 = 4;
    const R: u32 = 13;

    fn key(quotient: u64, remainder: u64) -> u64 {
        ((quotient << R) | remainder) << (64 - Q - R)
    }

    /// 16-bit slots, 4 per group, one group per region: region 0 is slots 0-3, region 1 slots
    /// 4-7.
    fn filter_with(keys: &[(u64, u64)]) -> ExternallyLockedQf {
        let filter = ExternallyLockedQf::with_bits_and_region(Q, R, 4).unwrap();
        for &(q, r) in keys {
            assert_eq!(filter.insert_hash(key(q, r)), Ok(true));
        }
        filter.check_invariants().unwrap();
        filter
    }

    #[test]
    fn regions_are_whole_groups() {
        // 16-bit slots, 4 per group: 4096 slots is exact, 8 is two groups, 5 rounds up to 8.
        let f = ExternallyLockedQf::with_bits(12, 13).unwrap();
        assert_eq!(f.region_slots(), 4096);
        assert_eq!(f.regions(), (4096 + overflow(12)).div_ceil(4096));
        assert_eq!(
            ExternallyLockedQf::with_bits_and_region(4, 13, 8)
                .unwrap()
                .region_slots(),
            8
        );
        assert_eq!(
            ExternallyLockedQf::with_bits_and_region(4, 13, 5)
                .unwrap()
                .region_slots(),
            8
        );
        // 11-bit slots, 5 per group: 8 slots need 2 groups (10 slots), 12 need 4 (20 slots).
        assert_eq!(
            ExternallyLockedQf::with_bits_and_region(4, 8, 8)
                .unwrap()
                .region_slots(),
            10
        );
        assert_eq!(
            ExternallyLockedQf::with_bits_and_region(4, 8, 12)
                .unwrap()
                .region_slots(),
            20
        );
        // A region larger than the table is the whole table.
        let one = ExternallyLockedQf::with_bits_and_region(4, 13, usize::MAX).unwrap();
        assert_eq!(one.regions(), 1);
        assert!(matches!(
            ExternallyLockedQf::with_bits_and_region(4, 13, 0),
            Err(Error::InvalidParameters(_))
        ));
        // The lock array is memory of its own, and so is the striped count.
        let own = f.table.slots.memory_bytes() + f.regions() + f.len.memory_bytes();
        assert_eq!(f.memory_bytes(), own);
    }

    fn overflow(q: u32) -> usize {
        super::super::overflow_slots(q)
    }

    #[test]
    fn a_walk_into_the_next_region_locks_it() {
        // Run of 2 in slots 2-4: region 0 into region 1.
        let filter = filter_with(&[(2, 1), (2, 2), (2, 3)]);
        assert_eq!(
            locked_regions(|| filter.contains_hash(key(2, 3))),
            (vec![0, 1], true)
        );
        assert_eq!(
            locked_regions(|| filter.insert_hash(key(2, 4))),
            (vec![0, 1], Ok(true))
        );
        // A query that stays in region 0 does not lock region 1.
        assert_eq!(
            locked_regions(|| filter.contains_hash(key(2, 1))),
            (vec![0], true)
        );
        filter.check_invariants().unwrap();
    }

    #[test]
    fn a_cluster_start_in_the_previous_region_locks_it() {
        // Run of 2 in slots 2-4, (4, 1) shifted to slot 5: canonical in region 1, cluster
        // start in region 0.
        let filter = filter_with(&[(2, 1), (2, 2), (2, 3), (4, 1)]);
        assert_eq!(
            locked_regions(|| filter.contains_hash(key(4, 1))),
            (vec![0, 1], true)
        );
        assert_eq!(
            locked_regions(|| filter.insert_hash(key(4, 2))),
            (vec![0, 1], Ok(true))
        );
        assert_eq!(
            locked_regions(|| filter.remove_hash(key(4, 1))),
            (vec![0, 1], Ok(true))
        );
        filter.check_invariants().unwrap();
    }

    #[test]
    fn a_removal_locks_the_regions_its_shift_reaches() {
        // Runs of 2 (slots 2-3) and 3 (slots 4-5): removing (2, 1) shifts region 1 left.
        let filter = filter_with(&[(2, 1), (2, 2), (3, 1), (3, 2)]);
        assert_eq!(
            locked_regions(|| filter.remove_hash(key(2, 1))),
            (vec![0, 1], Ok(true))
        );
        assert!(filter.contains_hash(key(3, 1)) && !filter.contains_hash(key(2, 1)));
        filter.check_invariants().unwrap();
    }

    #[test]
    fn full_at_the_overflow_tail_leaves_the_filter_unchanged() {
        // Every key on the last canonical slot: the run fills the overflow tail.
        let filter = ExternallyLockedQf::with_bits_and_region(Q, R, 4).unwrap();
        let mut stored = 0;
        let full = (0..100).find_map(|r| match filter.insert_hash(key(15, r)) {
            Ok(true) => {
                stored += 1;
                None
            }
            other => Some(other),
        });
        assert_eq!(full, Some(Err(Error::Full)));
        assert_eq!(filter.len(), stored);
        filter.check_invariants().unwrap();
        assert!((0..stored as u64).all(|r| filter.contains_hash(key(15, r))));
        assert!(filter.remove_hash(key(15, 0)).unwrap());
        assert_eq!(filter.insert_hash(key(15, 99)), Ok(true));
        filter.check_invariants().unwrap();
    }

    /// A walk that fails on a table no writer explains (here slot 0 holds a shifted element, so
    /// the walk back to its cluster start has nowhere to go) takes a region more on each side
    /// until it holds every region, then answers what the sequential filter answers for a
    /// corrupt table (`Walked::Failed`, then `failed`'s fallback), and releases every region.
    /// In use only a walk over regions it does not hold, beside a writer there, could fail, and
    /// no race we know of makes one; a corrupted table drives the path instead.
    #[test]
    fn a_walk_that_fails_widens_to_every_region_then_gives_the_fallback() {
        let filter = filter_with(&[]);
        let corrupt = (5 << STATUS_BITS) | OCCUPIED | SHIFTED;
        assert!(filter.table.slots.update_slot(0, |_| Some(corrupt)));
        let every: Vec<usize> = (0..filter.regions()).collect();
        assert!(every.len() > 2, "the test needs regions to widen into");
        assert_eq!(
            locked_regions(|| filter.contains_hash(key(0, 5))),
            (every.clone(), false)
        );
        assert_eq!(
            locked_regions(|| filter.remove_hash(key(0, 5))),
            (every.clone(), Ok(false))
        );
        assert_eq!(
            locked_regions(|| filter.insert_hash(key(0, 6))),
            (every, Err(Error::Full))
        );
        assert!(filter.locks.iter().all(|lock| !lock.is_locked()));
        // A walk that stays away from the corrupt slot still locks only its own region.
        assert_eq!(
            locked_regions(|| filter.insert_hash(key(9, 1))),
            (vec![2], Ok(true))
        );
    }
}
