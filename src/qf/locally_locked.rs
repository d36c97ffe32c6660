//! `LocallyLockedQf`: the concurrent quotient filter of paper 000 §3.2, which locks with the
//! status bits already in the table, so its locks need no memory beyond the sequential table.
//! Beyond the paper, one word per 1,024 groups (0.1% of the table) lets a query's miss stand
//! without a lock.
//!
//! This file holds the filter and its public methods; the protocol's parts are `locks` (Blocks B
//! and C, and the commit that waits out read locks), `insert` (Blocks A-E), `query` (F-I),
//! `remove` ("Deletions"); the words that let a miss stand are `qf::shift_regions`.
//!
//! # Protocol
//!
//! The table is exactly the 3-status-bit table of [`SequentialQf`], packed
//! into 64-bit groups. Two status combinations never occur at rest and serve as locks
//! (see [`slot`](super::slot)):
//!
//! * **write lock** `110`, put with a CAS into the first empty slot after a supercluster
//!   (Algorithm 1, Block B). Only the holder may insert into or remove from that supercluster.
//! * **read lock** `010`, replacing a cluster start's `100` (Blocks C and G). While it is held,
//!   nobody changes the cluster: inserts that shift elements through it wait for it (Block E),
//!   and a shifted cluster start stops being one, so its cluster joins the one the shifting
//!   insert holds.
//!
//! Operations:
//!
//! * **insert**: lock-free if the whole insert happens inside the one group it loaded and that
//!   group holds no lock (Block A and "Avoiding locks"); otherwise write-lock the supercluster end
//!   with one CAS of the group word the scan read (so the slots of that group the scan passed were
//!   filled when the lock was taken), check right to left that no slot of the groups before it,
//!   from the canonical slot on, is empty or write-locked (the scan may have passed a slot there
//!   that a removal emptied after the scan read it, while it waited at a write lock or before its
//!   lock's CAS; then unlock and restart). From then on nobody else changes the stretch back to its
//!   cluster start (it is *frozen*, see `plan_frozen`), so one walk from the canonical slot plans
//!   the insert; then read-lock the cluster start the walk found (which keeps locked queries out)
//!   and shift right group by group, left to right, waiting for read locks met on the way (Block
//!   E). The last element moves into the write-locked slot, which releases that lock; then the read
//!   lock is released.
//! * **contains**: first the whole lookup walked without locks, its shift region's word read
//!   before it (see `qf::shift_regions`). Its answer stands if the walk read only the group of the
//!   canonical slot (Block F), if it found the remainder, or if no locked shift wrote its
//!   region of the table while it walked (the word, read again after the walk, says so): a
//!   query writes nothing then, where the paper's takes a read lock (its queries then scale
//!   worse than its inserts). Otherwise, i.e. a miss over several groups beside a locked
//!   shift, read-lock the cluster start (the one the walk saw, if it still is one), re-walk
//!   under the lock (restart if the cluster changed), answer, unlock (Blocks G-I). A hit of a
//!   walk over several groups that overlaps a shift through its cluster can be a misread: the
//!   walk may take a stale copy for the next run's element, so the hit is a false positive
//!   (also for a key just removed), about as likely as a fingerprint collision in that run
//!   and only while such a shift is in progress. Callers that act on a hit (`ExpandableQf`'s
//!   insert-if-absent) ask [`contains_hash_locked`](LocallyLockedQf::contains_hash_locked),
//!   which trusts a hit only from one group, a walk no locked shift overlapped, or the locked
//!   walk.
//! * **remove** (paper 000 §3.2 "Deletions"): lock-free, as an insert, if the whole removal
//!   happens inside the group it loaded, that group holds no lock, and an empty slot in it
//!   follows the removed element (so the shift left stops in the group); an absent key found
//!   so inside one group is answered there. Otherwise write-lock the supercluster end, check the
//!   stretch to it right to left as inserts do, plan with one walk of the frozen stretch (an
//!   absent key is answered there), read-lock the cluster start, shift left. An element that
//!   lands in its canonical slot starts a new cluster, which is written read-locked and
//!   unlocked at the end, right to left with the removal's own cluster start last, so no other
//!   writer can lock a slot the release has still to visit.
//!
//! The lock-free paths change one group with one CAS from a snapshot with no lock and, in that
//! group, an empty slot at or after every slot they change; the CAS compares the whole word, so the
//! group holds no lock when it lands. A locked operation relies, from its right-to-left check on,
//! on the slots its lock's CAS (in `end`'s group), its check and then its plan's walk back read,
//! all filled, from its cluster start to its write lock `end`. A lock-free change of one of them
//! needs an empty, unlocked slot after it in its group: `end` is locked, a slot beyond `end` puts
//! that lock in the group, and a slot before `end` was read filled in the same load and cannot have
//! been emptied since (`stretch_is_filled`). A lock-free change made before those reads is part of
//! what they read; if it emptied a slot behind the scan, the check restarts. So from its check to
//! its release, no lock-free path changes a slot a locked operation relies on; likewise for a
//! growing filter's migration from its re-read of a frozen stretch on.
//!
//! Every group is written with one CAS that moves it from its state before the operation to its
//! state after it, and every occupied bit changes in the same write as the run it describes (or,
//! when the canonical slot is in an earlier group, before it). So a single group, loaded once, is
//! always the restriction of a consistent table to that group, which is what makes the
//! lock-elided fast paths correct.
//!
//! **No deadlock**: a thread waits for a write lock only while holding no lock (Block B). It waits
//! for a read lock either holding nothing (queries, and the merge's and snapshot's sweep, which
//! release their read lock without waiting for anything) or holding a write lock (inserts and
//! removes: Block C, and the shift's waits for read locks ahead of it). Before its first group
//! commit, every read lock a writer holds lies in the supercluster whose write lock it holds, so no
//! other writer can be waiting for it while holding a lock. A removal's commits may split the
//! supercluster, after which a writer of the left part can wait for the removal's new, read-locked
//! cluster starts; but a removal never waits after its first commit. So every chain of waits ends
//! at a thread that waits for nothing.
//!
//! **No false negatives**: a key whose insert has returned is in the table until it is removed;
//! a query answers `false` only from one consistent group, from a walk that no locked shift
//! overlapped (which reads a consistent table: `qf::shift_regions` has the argument), or from a
//! walk of a cluster it has read-locked, which nobody changes meanwhile.

mod insert;
mod locks;
mod query;
mod remove;
mod sweep;

use std::hash::Hash;

use crate::counter::StripedCounter;
use crate::filter::{Error, Filter, Full, Merge, Remove};
use crate::hash::hash_key;
use crate::storage::{with_fixed_width, Cursor, GroupSource};
use crate::sync::Ordering;

use super::load_cap::{refuse_unless_stored, LoadCap};
use super::scan::Fingerprints;
use super::sequential::{merge_tables, SequentialQf};
use super::slot::{CONTINUATION, OCCUPIED, READ_LOCK, SHIFTED, STATUS_BITS, WRITE_LOCK};
use super::table::QfTable;
use super::walk::{self, LocksReadThrough, UnlockedWalk};
use crate::qf::shift_regions::{QuietRegion, ShiftRegions};

/// A concurrent quotient filter locked through its own status bits (paper 000 §3.2).
///
/// All methods take `&self`; share it with an [`Arc`](std::sync::Arc).
///
/// ```
/// use conqf::{Filter, LocallyLockedQf, Remove};
/// use std::sync::Arc;
///
/// let filter = Arc::new(LocallyLockedQf::new(100_000, 0.001)?);
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
pub struct LocallyLockedQf {
    pub(crate) table: QfTable,
    pub(crate) len: StripedCounter,
    /// Refuses inserts past about 31/32 of the slots.
    pub(crate) cap: LoadCap,
    /// The continuation bit of every lane: finds lock statuses in a word at once.
    continuation_lanes: u64,
    /// Which regions a locked shift writes: a query's miss over several groups stands without
    /// the read lock if none did while it walked.
    shifts: ShiftRegions,
}

impl LocallyLockedQf {
    /// A filter that holds `capacity` keys at an expected false-positive rate of at most `fpr`.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        Ok(Self::from_sequential(SequentialQf::new(capacity, fpr)?))
    }

    /// A filter with `2^quotient_bits` slots of `remainder_bits` remainder bits each.
    ///
    /// # Errors
    /// As [`SequentialQf::with_bits`].
    pub fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        Ok(Self::from_sequential(SequentialQf::with_bits(
            quotient_bits,
            remainder_bits,
        )?))
    }

    /// A builder for a filter that starts sized for `capacity` keys at a false-positive rate of
    /// at most `fpr` and doubles concurrently when it fills up (bounded growing, paper 000
    /// §2.1 and §3.2); see [`GrowableQf`](crate::GrowableQf). Each doubling moves a remainder
    /// bit into the quotient, so a filter keeps at most `r - 1` doublings: a large `fpr` leaves
    /// few remainder bits (`growable(1, 0.5)` gets one, and never doubles), and
    /// [`GrowableQf::doublings_possible`](crate::GrowableQf::doublings_possible) tells how many
    /// are left.
    ///
    /// `fpr` holds for the first `capacity` keys only: each doubling about doubles the rate,
    /// and [`capacity`](crate::Filter::capacity) counts the keys of every doubling to come.
    /// `growable(1000, 0.01)` reports a capacity of 58,982 and measured false-positive rates of
    /// 0.8% at 1,000 keys, 3.0% at 4,000, 11% at 16,000 and 26% at 40,000 (a million absent
    /// keys each, 2026-12-01; its `false_positive_rate` predicted each). Give the size you plan
    /// for with [`max_capacity`](crate::GrowableBuilder::max_capacity), which keeps the rate
    /// below `fpr` up to it (0.94% at 40,000 with `max_capacity(40_000)`), or use
    /// [`ExpandableQf`](crate::ExpandableQf) when there is no size to plan for.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let filter = LocallyLockedQf::growable(100, 1e-6).max_doublings(4).build()?;
    /// for k in 0..2000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// assert_eq!(filter.doublings(), 4);
    ///
    /// let coarse = LocallyLockedQf::growable(1, 0.5).build()?;
    /// assert_eq!((coarse.remainder_bits(), coarse.doublings_possible()), (1, 0));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn growable(capacity: usize, fpr: f64) -> crate::GrowableBuilder {
        crate::GrowableBuilder::new(capacity, fpr)
    }

    /// The concurrent filter over a sequential filter's table (no copy: the layouts are the
    /// same).
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf, SequentialQf};
    /// let mut sequential = SequentialQf::new(1000, 0.01)?;
    /// sequential.insert("apple")?;
    /// let concurrent = LocallyLockedQf::from_sequential(sequential); // no copy
    /// concurrent.insert(&"pear")?; // `&self`, from any thread
    /// let mut back = concurrent.into_sequential(); // no copy either
    /// back.grow()?;
    /// assert!(back.contains("apple") && back.contains("pear"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn from_sequential(filter: SequentialQf) -> Self {
        let continuation_lanes = filter.table.slots.layout().lanes(CONTINUATION);
        let (len, cap) = LoadCap::with_counter(filter.table.quotient_bits, filter.len);
        let shifts = ShiftRegions::of(&filter.table.slots);
        LocallyLockedQf {
            table: filter.table,
            len,
            cap,
            continuation_lanes,
            shifts,
        }
    }

    /// The sequential filter over this table (no copy), e.g. to grow or merge it.
    pub fn into_sequential(self) -> SequentialQf {
        let len = self.len.sum();
        SequentialQf {
            table: self.table,
            len,
        }
    }

    /// Quotient bits `q`: the table has `2^q` canonical slots.
    pub fn quotient_bits(&self) -> u32 {
        self.table.quotient_bits
    }

    /// Remainder bits `r` stored per slot.
    pub fn remainder_bits(&self) -> u32 {
        self.table.remainder_bits
    }

    /// The stored fingerprints in increasing order. Only meaningful while no thread writes.
    pub fn fingerprints(&self) -> Fingerprints<'_> {
        // Acquire: pairs with the writers' releases, for a caller that synchronised with them
        // (e.g. joined them) and then iterates.
        self.table.fingerprints(Ordering::Acquire)
    }

    /// Removes every key, keeping its table (size and memory) and parameters: the filter
    /// answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let mut filter = LocallyLockedQf::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        // The table holds no lock at rest, and the shift regions' words count no shift.
        self.table.slots.clear();
        self.cap.set_count(&self.len, 0);
    }

    /// Checks the table's invariants (no lock left, status bits, run order, the count). Only
    /// meaningful while no thread writes; for tests and debugging.
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.table.check(self.len.sum())
    }

    /// Whether the fingerprint of `hash` is stored, read without any lock or check.
    ///
    /// Correct only while no thread inserts or removes (e.g. after a build phase): the table is
    /// the sequential one, so the lock-free sequential walk answers exactly (paper 000 §3.2). With
    /// concurrent writers it may miss keys, but it never loops or reads out of bounds. One
    /// exception keeps it exact: an insert that fills an empty canonical slot with one CAS and
    /// moves nothing (the cascading inserts of [`ExpandableQf`](crate::ExpandableQf) into its
    /// lower levels, which it reads this way).
    pub fn contains_hash_unsynchronized(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        // Acquire: as in `fingerprints`; and `ExpandableQf`'s lock-free level reads depend on
        // it (`level_reads::read`: a group load that sees a removal's write then orders the
        // removal's counter increment before the reader's second counter load). Weakening it
        // to Relaxed breaks that seqlock.
        let slots = &self.table.slots;
        with_fixed_width!(slots => walk::lookup(
            &mut Cursor::over(&LocksReadThrough(slots), quotient, Ordering::Acquire),
            remainder
        ))
        .is_some_and(|(found, _)| found)
    }

    /// [`contains_hash_unsynchronized`](Self::contains_hash_unsynchronized) for a key.
    pub fn contains_unsynchronized<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_unsynchronized(hash_key(key))
    }

    /// [`contains_hash`](Filter::contains_hash) without trusting a hit of a walk without
    /// locks: `true` only if the fingerprint was stored at some moment of the call, never from
    /// a run misread during a concurrent shift (crate docs, "Consistency"). For callers that
    /// act on a `true`, such as an insert-if-absent across several filters (`ExpandableQf`'s),
    /// which would otherwise drop a key on a misread. It costs a read lock when the answer is
    /// not in the canonical slot's group and a locked shift of its region overlapped the walk.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf, Remove};
    ///
    /// let filter = LocallyLockedQf::new(1_000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// assert!(filter.contains_hash_locked(conqf::hash_key(&42u64)));
    /// filter.remove(&42u64)?;
    /// assert!(!filter.contains_locked(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn contains_hash_locked(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        let walk = self.walk_without_locks(quotient, remainder);
        self.contains_trusting(quotient, remainder, false, walk)
    }

    /// This filter without its shift regions (`--cfg loom` only): every miss over several groups
    /// takes the read lock, as in the paper. For the loom models whose subject is the locked
    /// query or the locks' release, which the regions' words would put past CI's budget (their
    /// writers' counts never change what a writer does, and the models of queries beside shifts
    /// check the words).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn locking_every_miss(mut self) -> Self {
        self.shifts = ShiftRegions::none();
        self
    }

    /// [`contains_hash_locked`](Self::contains_hash_locked) for a key.
    pub fn contains_locked<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_locked(hash_key(key))
    }

    #[inline]
    fn fingerprint(&self, hash: u64) -> (usize, u64) {
        self.table.fingerprint(hash)
    }
}

/// Merging without rehashing as [`SequentialQf`]'s [`Merge`] does (paper 004 §IV-E; the same
/// result shape and the same [`Error::Incompatible`] rule), while other threads keep using both
/// filters.
///
/// Each filter is read one cluster at a time under the cluster start's read lock, the lock a
/// query takes (first one filter, then the other, holding one lock at a time), so the result
/// holds every fingerprint stored in a filter before the merge began and not removed during
/// it. Unlike [`ExternallyLockedQf`](crate::ExternallyLockedQf)'s merge, which holds all of
/// its filter's region locks at once, this read is not the table of one instant: fingerprints
/// inserted or removed while it runs may or may not be in the result. Writers into the cluster
/// being read, or shifting through it from a cluster further left, wait for it (as for a
/// locked query); nobody else does.
///
/// ```
/// use conqf::{Filter, LocallyLockedQf, Merge};
/// let a = LocallyLockedQf::with_bits(10, 10)?;
/// let b = LocallyLockedQf::with_bits(10, 10)?;
/// a.insert(&1u64)?;
/// b.insert(&2u64)?;
/// let union = std::thread::scope(|s| {
///     s.spawn(|| a.insert(&3u64)); // may or may not be in the union
///     a.merge(&b)
/// })?;
/// assert!(union.contains(&1u64) && union.contains(&2u64));
/// # Ok::<(), conqf::Error>(())
/// ```
///
/// # Errors
/// [`Error::Incompatible`] if the fingerprint lengths differ; [`Error::Full`] if the union
/// does not fit; [`Error::OutOfMemory`] if its table cannot be allocated.
impl Merge for LocallyLockedQf {
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        let merged = merge_tables(
            (&self.table, || self.swept_keys()),
            (&other.table, || other.swept_keys()),
        )?;
        Ok(Self::from_sequential(merged))
    }
}

impl Filter for LocallyLockedQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        match self.insert_or_migrating(hash) {
            Ok(Ok(new)) => Ok(new),
            Ok(Err(Full)) => refuse_unless_stored(|| self.contains_hash_locked(hash)),
            Err(Migrating) => unreachable!("only a growing filter migrates"),
        }
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        let slots = &self.table.slots;
        // As `walk_without_locks`, with the prefetch written out here: one function for both,
        // with the prefetch a constant parameter, ran about 85 more instructions per lookup
        // (callgrind, `peer_probe W=lookups F=locally-locked Q=16 R=5`, 2026-11-30).
        let first_walk = with_fixed_width!(slots => {
            // The layout is a constant here: locating the group takes an instruction or two.
            let quiet = self.shifts.read_begin(slots.layout().locate(quotient).0);
            // Acquire: pairs with the Release of the writers that published the groups; and
            // `ShiftRegions::walk_stands` needs it.
            let walk = Self::walk_from(
                Cursor::over_prefetching(&LocksReadThrough(slots), quotient, Ordering::Acquire),
                remainder,
            );
            (quiet, walk)
        });
        self.contains_trusting(quotient, remainder, true, first_walk)
    }

    fn len(&self) -> usize {
        self.len.sum()
    }

    fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// The table and the shift regions' words (8 bytes per 1,024 groups).
    fn memory_bytes(&self) -> usize {
        self.table.slots.memory_bytes() + self.shifts.memory_bytes() + self.len.memory_bytes()
    }

    fn false_positive_rate(&self) -> f64 {
        self.table.false_positive_rate(self.len.sum())
    }
}

impl Remove for LocallyLockedQf {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        Ok(self
            .remove_or_migrating(hash)
            .unwrap_or_else(|Migrating| unreachable!("only a growing filter migrates")))
    }
}

/// An operation met a migration lock: the table is being copied into a larger one (paper 000
/// §3.2, "Growing concurrently"), so the operation holds no lock, changed nothing, and must be
/// retried on the new table. Only a growing filter ever sees this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Migrating;

impl LocallyLockedQf {
    /// Whether `(quotient, remainder)` is stored: [`contains_hash`](Filter::contains_hash)
    /// after the split and without asking for the neighbouring cache lines, for a batch lookup
    /// whose window already prefetched the canonical slot's line.
    ///
    /// Every query first walks without locks; it takes the read lock only if that walk missed
    /// over several groups and cannot stand on its shift region (a locked shift was in flight
    /// there, or the walk left it), so a successful query writes nothing.
    #[inline]
    pub(crate) fn contains_fingerprint(&self, quotient: usize, remainder: u64) -> bool {
        let walk = self.walk_without_locks(quotient, remainder);
        self.contains_trusting(quotient, remainder, true, walk)
    }

    /// The query, given its first walk without locks and its region's word read before it: a
    /// walk answers if it read one group, if it found the remainder and `unlocked_hits` trusts
    /// that, or if it stands on its shift region ([`ShiftRegions::walk_stands`]: it stayed in
    /// the region and no locked shift was in flight there at any moment of it); otherwise the
    /// locked query does (Blocks G-I), and if the cluster changed under it, a new walk and so
    /// on.
    #[inline(always)]
    fn contains_trusting(
        &self,
        quotient: usize,
        remainder: u64,
        unlocked_hits: bool,
        first_walk: (QuietRegion, UnlockedWalk),
    ) -> bool {
        let (mut quiet, mut walk) = first_walk;
        loop {
            if walk.one_group
                || (walk.found && unlocked_hits)
                || self.shifts.walk_stands(quiet, &walk)
            {
                return walk.found;
            }
            if let Some(found) = self.locked_query(quotient, remainder, walk.start) {
                return found;
            }
            (quiet, walk) = self.walk_without_locks(quotient, remainder);
        }
    }

    /// [`Filter::insert_hash`], or [`Migrating`] if the insert met a migration lock before it
    /// changed anything.
    #[inline]
    pub(crate) fn insert_or_migrating(&self, hash: u64) -> Result<Result<bool, Full>, Migrating> {
        if !self.cap.admits(&self.len) {
            return Ok(Err(Full));
        }
        let (quotient, remainder) = self.fingerprint(hash);
        self.table.slots.prefetch_neighbour_lines(quotient);
        loop {
            let slots = &self.table.slots;
            let in_group =
                with_fixed_width!(slots => self.insert_in_group(slots, quotient, remainder));
            if let Some(result) = in_group {
                return Ok(result);
            }
            let locked =
                with_fixed_width!(slots => self.insert_with_locks(slots, quotient, remainder));
            if let Some(result) = locked? {
                return Ok(result);
            }
        }
    }

    /// [`Remove::remove_hash`], or [`Migrating`] as for
    /// [`insert_or_migrating`](Self::insert_or_migrating).
    pub(crate) fn remove_or_migrating(&self, hash: u64) -> Result<bool, Migrating> {
        let (quotient, remainder) = self.fingerprint(hash);
        self.table.slots.prefetch_neighbour_lines(quotient);
        loop {
            let slots = &self.table.slots;
            let in_group =
                with_fixed_width!(slots => self.remove_in_group(slots, quotient, remainder));
            if let Some(result) = in_group {
                return Ok(result);
            }
            let locked =
                with_fixed_width!(slots => self.remove_with_locks(slots, quotient, remainder));
            if let Some(result) = locked? {
                return Ok(result);
            }
        }
    }
}

impl std::fmt::Debug for LocallyLockedQf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocallyLockedQf")
            .field("quotient_bits", &self.table.quotient_bits)
            .field("remainder_bits", &self.table.remainder_bits)
            .field("len", &self.len.sum())
            .finish_non_exhaustive()
    }
}

/// Compile-time check of the lock encodings this module relies on.
const _: () = {
    assert!(READ_LOCK & SHIFTED == 0 && READ_LOCK & OCCUPIED == 0);
    assert!(WRITE_LOCK == OCCUPIED | CONTINUATION);
    assert!(STATUS_BITS == 3);
};

#[cfg(all(test, not(loom)))]
mod tests;
