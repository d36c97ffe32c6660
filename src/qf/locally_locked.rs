//! `LocallyLockedQf`: the concurrent quotient filter of paper 000 §3.2, which locks with the
//! status bits already in the table, so it needs no memory beyond the sequential table and
//! touches no extra cache line.
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
//! * **contains**: first the whole lookup walked without locks. Its answer stands if the walk
//!   read only the group of the canonical slot (Block F), or if it found the remainder: a query
//!   that succeeds writes nothing, where the paper's takes a read lock (its queries then scale
//!   worse than its inserts). Otherwise, i.e. a miss over several groups, read-lock the cluster
//!   start (the one the walk saw, if it still is one), re-walk under the lock (restart if the
//!   cluster changed), answer, unlock (Blocks G-I). A hit of a walk over several groups can be
//!   a misread: a walk that overlaps a shift through its cluster may take a stale copy for the
//!   next run's element, so the hit is a false positive (also for a key just removed), about
//!   as likely as a fingerprint collision in that run and only while such a shift is in
//!   progress. Callers that act on a hit (`ExpandableQf`'s insert-if-absent) ask
//!   [`contains_hash_locked`](LocallyLockedQf::contains_hash_locked), which trusts only
//!   one-group answers and the locked walk.
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
//! **No deadlock**: a thread waits for a write lock only while holding no lock (Block B). It
//! waits for a read lock either holding nothing (queries, which release their read lock without
//! waiting for anything) or holding a write lock (inserts and removes: Block C, and the shift's
//! waits for read locks ahead of it). Before its first group commit, every read lock a writer
//! holds lies in the supercluster whose write lock it holds, so no other writer can be waiting
//! for it while holding a lock. A removal's commits may split the supercluster, after which a
//! writer of the left part can wait for the removal's new, read-locked cluster starts; but a
//! removal never waits after its first commit. So every chain of waits ends at a thread that
//! waits for nothing.
//!
//! **No false negatives**: a key whose insert has returned is in the table until it is removed;
//! a query answers `false` only from one consistent group or from a walk of a cluster it has
//! read-locked, which nobody changes meanwhile.

use std::hash::Hash;

use crate::counter::StripedCounter;
use crate::filter::{Error, Filter, Full, Remove};
use crate::hash::{hash_key, low_mask};
use crate::storage::{
    with_fixed_width, Commit, Cursor, GroupSource, Preview, Rewriter, SlotArray, SlotLayout,
};
use crate::sync::{Ordering, Waiter};

use super::scan::Fingerprints;
use super::sequential::SequentialQf;
use super::slot::{
    LockView, Slot, CONTINUATION, OCCUPIED, READ_LOCK, SHIFTED, STATUS_BITS, STATUS_MASK,
    WRITE_LOCK,
};
use super::table::QfTable;
use super::walk::{self, InsertStep, LocksReadThrough, UnlockedWalk, KEEP_OCCUPIED};

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
    /// The continuation bit of every lane: finds lock statuses in a word at once.
    continuation_lanes: u64,
}

impl LocallyLockedQf {
    /// A filter that holds `capacity` keys at a false-positive rate of at most `fpr`.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
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
    /// §2.1 and §3.2); see [`GrowableQf`](crate::GrowableQf).
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let filter = LocallyLockedQf::growable(100, 1e-6).max_doublings(4).build()?;
    /// for k in 0..2000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// assert_eq!(filter.doublings(), 4);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn growable(capacity: usize, fpr: f64) -> crate::GrowableBuilder {
        crate::GrowableBuilder::new(capacity, fpr)
    }

    /// The concurrent filter over a sequential filter's table (no copy: the layouts are the
    /// same).
    pub fn from_sequential(filter: SequentialQf) -> Self {
        let continuation_lanes = filter.table.slots.layout().lanes(CONTINUATION);
        let len = StripedCounter::new();
        len.reset(filter.len);
        LocallyLockedQf {
            table: filter.table,
            len,
            continuation_lanes,
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

    /// Checks the table's invariants (no lock left, status bits, run order, the count). Only
    /// meaningful while no thread writes; for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.table.check(self.len.sum())
    }

    /// Whether the fingerprint of `hash` is stored, read without any lock or check.
    ///
    /// Correct only while no thread inserts or removes (e.g. after a build phase): the table is
    /// the sequential one, so the lock-free sequential walk answers exactly (paper 000 §3.2). With
    /// concurrent writers it may miss keys, but it never loops or reads out of bounds. One
    /// exception keeps it exact: an insert that fills an empty canonical slot with one CAS and
    /// moves nothing (the cascading inserts of `ExpandableQf`, see its `level_reads` module).
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
    /// which would otherwise drop a key on a misread. It costs a read lock whenever the answer
    /// is not in the canonical slot's group, hit or miss.
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

    /// [`contains_hash_locked`](Self::contains_hash_locked) for a key.
    pub fn contains_locked<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_locked(hash_key(key))
    }

    #[inline]
    fn fingerprint(&self, hash: u64) -> (usize, u64) {
        self.table.fingerprint(hash)
    }

    /// Whether any slot of `word` holds a lock status (`010` or `110`: continuation without
    /// shifted).
    #[inline]
    fn has_lock(&self, word: u64) -> bool {
        let continuation = word & self.continuation_lanes;
        let shifted = (word >> 1) & self.continuation_lanes;
        continuation & !shifted != 0
    }

    // ----- Block A: insert inside one group -------------------------------------------------

    /// Inserts without locks if the insert happens inside the group of the canonical slot and
    /// that group holds no lock. `None`: take the locked path. `slots` is the table, seen
    /// through a [`GroupSource`] of fixed width where there is one ([`with_fixed_width!`]).
    fn insert_in_group<S: GroupSource>(
        &self,
        slots: S,
        quotient: usize,
        remainder: u64,
    ) -> Option<Result<bool, Full>> {
        let (group, _) = slots.layout().locate(quotient);
        // Acquire: the group's content is what we build on; pairs with the Release of the
        // writer that published it.
        let word = slots.load_group(group, Ordering::Acquire);
        if self.has_lock(word) {
            return None;
        }
        // The word holds no lock, so the walks need not read any through.
        let at_rest = LocksReadThrough(&slots);
        let mut cursor = Cursor::in_group(&at_rest, quotient, word);
        if !walk::group_has_empty_from(&cursor) {
            // The insert would shift into the next group, so only a duplicate can be answered
            // here: the lookup's lane-parallel compare finds it at less cost than planning an
            // insert that is bound to fail (one insert in five on the way to 72% fill, `2^22`
            // slots, r = 10).
            return match walk::lookup(&mut cursor, remainder) {
                Some((true, _)) => Some(Ok(false)),
                _ => None,
            };
        }
        let plan = match walk::plan_insert(&mut cursor, quotient, remainder)? {
            InsertStep::Duplicate { .. } => return Some(Ok(false)),
            InsertStep::Place(plan) => plan,
        };
        if plan.end + 1 >= self.table.slots.len() {
            return None;
        }
        let mut read = Cursor::in_group(&at_rest, plan.position, word);
        let preview = Preview::new(group, word);
        let mut rewriter =
            Rewriter::laid_out(&self.table.slots, slots.layout(), &preview, KEEP_OCCUPIED);
        walk::shift_in(&mut read, &mut rewriter, &plan, None);
        rewriter.finish();
        let new = preview.result();
        // Release: publishes the new element with the group; failure needs no ordering because
        // the fast path is simply abandoned.
        self.table
            .slots
            .compare_exchange_group(group, word, new, Ordering::Release, Ordering::Relaxed)
            .ok()?;
        self.len.increment();
        Some(Ok(true))
    }

    // ----- Blocks B and C: locking ----------------------------------------------------------

    /// Changes slot `index` with `change` in one CAS of its group (see
    /// [`SlotArray::update_slot`]).
    pub(crate) fn update_slot(&self, index: usize, change: impl Fn(u64) -> Option<u64>) -> bool {
        self.table.slots.update_slot(index, change)
    }

    /// Block B: write-locks the first empty slot at or after `quotient`, waiting for write locks
    /// met on the way. Returns its index, or [`Migrating`] if the scan met a migration lock (only
    /// in a growing filter, see [`growing`](super::growing)): the caller then holds no lock.
    #[inline]
    fn lock_supercluster_end<S: GroupSource>(
        &self,
        slots: &S,
        quotient: usize,
    ) -> Result<usize, Migrating> {
        self.lock_first_empty_in(slots, quotient, WRITE_LOCK)
            .map_err(|_| Migrating)
    }

    /// Whether every slot of `from..end` holds an element (read-locked or not), read right to
    /// left, a group at a time, after this thread write-locked `end` (or, migrating a growing
    /// filter, put or met a migration lock there, which is never released): the check that
    /// `end` is the end of the supercluster of `from`. The scan of
    /// [`lock_first_empty`](Self::lock_first_empty) cannot tell by itself for the groups before
    /// `end`'s: a removal may have emptied a slot it had passed there, while it waited at a
    /// write lock or between its read of that slot and the compare-and-swap of the lock, which
    /// compares only the lock's group. (The slots of that group the scan passed were filled at
    /// the instant of the lock: a locked insert or removal checks only up to that group,
    /// [`plan_frozen`](Self::plan_frozen); a growing migration checks the whole stretch.)
    ///
    /// Right to left, the answer holds from the scan on, as long as the write lock on `end` is held
    /// (the lock's own group, seen filled in the word its compare-and-swap replaced, counts as read
    /// first): only a removal empties a slot, a locked one inside the stretch up to the write lock
    /// it holds (on a slot that was the first empty one after its canonical slot), a lock-free one
    /// ([`remove_in_group`](Self::remove_in_group)) only a slot followed, in the group word it
    /// replaces, by an empty slot, with no lock in that group. For a slot `s` seen filled to be
    /// empty later, a removal must empty it holding the lock on some `e'` with `s < e' <= end`, or
    /// lock-free while some `e'` after `s` in the group of `s` is empty and unlocked; then `e' <
    /// end` (else this thread's lock is in that group), and `e'` (seen filled before `s`, in the
    /// same load if lock-free) must have been emptied in the meantime by a removal further right:
    /// the chain must end at `end` or beyond it, which no other thread can lock, pass, or use as
    /// room in its group while this thread holds `end`.
    pub(crate) fn stretch_is_filled(&self, from: usize, end: usize) -> bool {
        Self::stretch_is_filled_in(&self.table.slots, from, end)
    }

    /// [`stretch_is_filled`](Self::stretch_is_filled) over `slots`, a view of the table (of
    /// fixed width, [`with_fixed_width!`]).
    #[inline]
    fn stretch_is_filled_in<S: GroupSource>(slots: &S, from: usize, end: usize) -> bool {
        if from >= end {
            return true;
        }
        let layout = slots.layout();
        let bits = layout.bits();
        let lane_lsb = layout.lanes(1);
        let (first_group, first_offset) = layout.locate(from);
        let (last_group, last_offset) = layout.locate(end - 1);
        for group in (first_group..=last_group).rev() {
            // Acquire: a group written by a removal or insert that finished must be seen with
            // everything that writer did before releasing its locks.
            let word = slots.load_group(group, Ordering::Acquire);
            let mut open = LockView::candidates(word, lane_lsb);
            if group == last_group {
                open &= low_mask((last_offset + 1) * bits);
            }
            if group == first_group {
                open &= !low_mask(first_offset * bits);
            }
            if open != 0 {
                return false;
            }
        }
        true
    }

    /// Puts `lock` into the first empty, unlocked slot at or after `from`, waiting for write
    /// locks met on the way, and returns its index; or returns `Err` with the index of the first
    /// migration lock met before it (the scan then locked nothing). Shared by block B and the
    /// growing migration's freeze ([`growing`](super::growing)), which locks with
    /// [`MIGRATION_LOCK`](super::slot::MIGRATION_LOCK).
    ///
    /// The lock is put with one compare-and-swap of the whole group word the scan read, and in
    /// that word the scan saw every slot of the group from `from` (or from the group's first
    /// slot, if `from` lies in an earlier group) up to the locked one filled: so those slots
    /// were all filled at the instant the lock was taken, which is what
    /// [`stretch_is_filled`](Self::stretch_is_filled) would otherwise have to read again (see
    /// [`plan_frozen`](Self::plan_frozen)). After a wait or a failed compare-and-swap the scan
    /// reloads the group and reads it again from that first slot, so the word compared is
    /// always the one every such slot was seen filled in.
    #[inline]
    pub(crate) fn lock_first_empty(&self, from: usize, lock: u64) -> Result<usize, usize> {
        self.lock_first_empty_in(&self.table.slots, from, lock)
    }

    /// [`lock_first_empty`](Self::lock_first_empty), scanning `slots`, a view of the table.
    #[inline]
    fn lock_first_empty_in<S: GroupSource>(
        &self,
        slots: &S,
        from: usize,
        lock: u64,
    ) -> Result<usize, usize> {
        let waiter = Waiter::new();
        // Acquire: the scan decides where the supercluster ends from what it reads.
        let mut cursor = Cursor::over(slots, from, Ordering::Acquire);
        let (from_group, from_shift) = (cursor.group(), cursor.shift());
        // Reloads the cursor's group and goes back to the first slot of it the scan covers.
        let rescan = |cursor: &mut Cursor<'_, S>| {
            cursor.reload();
            cursor.jump_to_bit(if cursor.group() == from_group {
                from_shift
            } else {
                0
            });
        };
        loop {
            match LockView::of(cursor.slot()) {
                LockView::MigrationLocked => return Err(cursor.index()),
                LockView::WriteLocked => {
                    // Another insert or removal works on this supercluster.
                    waiter.wait();
                    rescan(&mut cursor);
                }
                LockView::Empty => {
                    let word = cursor.word();
                    let locked = word | (lock << cursor.shift());
                    // AcqRel, as every lock taken with `update_slot`: Acquire, to see what the
                    // supercluster's previous writer published before its release (the Release
                    // half is kept from there; this argument does not need it). Relaxed on
                    // failure: `rescan` reloads with Acquire.
                    let taken = self.table.slots.compare_exchange_group(
                        cursor.group(),
                        word,
                        locked,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    );
                    if taken.is_ok() {
                        return Ok(cursor.index());
                    }
                    rescan(&mut cursor);
                }
                LockView::Filled => {
                    // The last slot is never filled, so a filled slot always has a successor;
                    // then on to the next slot that may be empty or locked, a group at a time.
                    let moved = cursor.advance()
                        && walk::seek_lane(&mut cursor, LockView::candidates).is_some();
                    debug_assert!(moved, "the last slot is always empty or write-locked");
                }
            }
        }
    }

    /// Blocks C and G: read-locks the start of the cluster holding `quotient`, waiting while it
    /// is read-locked. `None` if the walk meets an empty slot (a removal emptied the cluster).
    fn lock_cluster_start(&self, quotient: usize) -> Option<usize> {
        let waiter = Waiter::new();
        // Acquire: the walk reads status bits to decide where to lock.
        let mut cursor = self.table.slots.cursor(quotient, Ordering::Acquire);
        loop {
            let raw = cursor.slot();
            match raw & STATUS_MASK {
                READ_LOCK => {
                    waiter.wait();
                    cursor.reload();
                }
                OCCUPIED => {
                    let locked = (raw & !STATUS_MASK) | READ_LOCK;
                    if self.update_slot(cursor.index(), |now| (now == raw).then_some(locked)) {
                        return Some(cursor.index());
                    }
                    cursor.reload();
                }
                0 | WRITE_LOCK => return None,
                // Shifted: on to the nearest unshifted slot to the left, a group at a time.
                _ => {
                    walk::back_to_cluster_start(&mut cursor)?;
                }
            }
        }
    }

    /// Read-locks slot `index` if it holds an unlocked cluster start, without waiting.
    fn try_read_lock(&self, index: usize) -> bool {
        self.update_slot(index, |now| {
            (now & STATUS_MASK == OCCUPIED).then_some((now & !STATUS_MASK) | READ_LOCK)
        })
    }

    /// Releases the read lock on `index`.
    fn unlock_read(&self, index: usize) {
        let released = self.update_slot(index, |now| {
            (now & STATUS_MASK == READ_LOCK).then_some((now & !STATUS_MASK) | OCCUPIED)
        });
        debug_assert!(released, "slot {index} was not read-locked");
    }

    /// Releases every read lock in `from..=to`, a removal's stretch after its shift: right to
    /// left, `from` (its own cluster start) last. When it starts, every read lock there is the
    /// removal's: its cluster start and the cluster starts its shift created, which are all the
    /// cluster starts of the stretch, so nobody else could lock any. The order keeps that true
    /// for the slots still to visit: once slot `s` is released, another writer may lock it and
    /// write new read-locked cluster starts into its cluster (or change that cluster lock-free,
    /// writing no read lock), which lies right of `s`, while
    /// every slot left of `s` is in a cluster whose start the removal still holds. Left to
    /// right, a second removal that locked the released `from` could have its new starts
    /// released by this scan, letting a locked query walk its half-done shift (a false
    /// negative a review found).
    fn unlock_reads_in(&self, from: usize, to: usize) {
        self.unlock_reads_in_observed(from, to, |_| {});
    }

    /// [`unlock_reads_in`](Self::unlock_reads_in), calling `visited(slots)` after each group
    /// with the slots of `from..=to` in that group.
    ///
    /// A group at a time, from the group of `to` down to that of `from`: one compare-and-swap
    /// releases every read lock of the range in a group. That is the right-to-left release
    /// done in one step: the slots still to visit all lie left of the group's lowest released
    /// lane, in clusters whose starts the removal still holds; and as no other thread can lock
    /// a cluster start of the range before the removal releases it, every read lock in the
    /// group's lanes of the range is the removal's own when the compare-and-swap lands.
    #[inline]
    fn unlock_reads_in_observed(
        &self,
        from: usize,
        to: usize,
        mut visited: impl FnMut(std::ops::RangeInclusive<usize>),
    ) {
        let slots = &self.table.slots;
        let layout = slots.layout();
        let bits = layout.bits();
        let (first_group, first_offset) = layout.locate(from);
        let (last_group, last_offset) = layout.locate(to);
        for group in (first_group..=last_group).rev() {
            let group_start = group * layout.per_group() as usize;
            let mut range = low_mask(layout.per_group() * bits);
            let (mut lowest, mut highest) =
                (group_start, group_start + layout.per_group() as usize - 1);
            if group == last_group {
                range &= low_mask((last_offset + 1) * bits);
                highest = to;
            }
            if group == first_group {
                range &= !low_mask(first_offset * bits);
                lowest = from;
            }
            slots.update_group(group, |word| {
                let locks = read_locks(word, self.continuation_lanes) & range;
                // `010` to `100` (occupied, continuation, shifted): flip the two low bits.
                (locks != 0).then_some((word ^ (locks | (locks >> 1)), ()))
            });
            visited(lowest..=highest);
        }
    }

    /// Releases the write lock on `index`, leaving it empty.
    fn unlock_write(&self, index: usize) {
        let released = self.update_slot(index, |now| (now == WRITE_LOCK).then_some(0));
        debug_assert!(released, "slot {index} was not write-locked");
    }

    /// Blocks C and G for a writer whose stretch is frozen (see [`plan_frozen`]): read-locks
    /// `start`, the cluster start its plan found, waiting while a query or a finishing removal
    /// holds it. `false` if `start` holds no cluster start (the frozen stretch rules that out;
    /// the caller restarts all the same).
    ///
    /// [`plan_frozen`]: Self::plan_frozen
    fn read_lock_frozen(&self, start: usize) -> bool {
        let waiter = Waiter::new();
        loop {
            if self.try_read_lock(start) {
                return true;
            }
            // Acquire: as in `lock_cluster_start`, to see the holder's release.
            match self.table.slots.get(start, Ordering::Acquire) & STATUS_MASK {
                READ_LOCK => waiter.wait(),
                OCCUPIED => {}
                _ => return false,
            }
        }
    }

    /// Blocks C and D of an insert or a removal holding the write lock on `end`, the first
    /// empty slot at or after `quotient`: checks that the stretch `quotient..end` is still all
    /// filled ([`stretch_is_filled`](Self::stretch_is_filled)), then runs `plan` on a cursor on
    /// the canonical slot. `None`: a removal emptied a slot behind the scan that found `end`;
    /// restart. The check reads only the groups before `end`'s: the compare-and-swap that took
    /// the lock ([`lock_first_empty`](Self::lock_first_empty)) saw the slots of `end`'s group
    /// from `quotient` on filled, at the instant the lock was taken.
    ///
    /// Once the check passes, the stretch is *frozen*: up to its cluster start, no other thread
    /// changes an element or a status bit in it (read locks, which every walk reads through, still
    /// come and go), so one walk plans the whole operation, with no lock on the cluster start yet
    /// and no second walk to check the locks. Every slot the plan reads, right to left from `end -
    /// 1` (the lock's word, then the check) and then from `quotient` back to the cluster start (the
    /// plan's walk), is seen filled while the write lock is held (the walk back stops at the first
    /// slot whose shifted bit is clear, which holds an element because the slot before a shifted
    /// one always does: every group write keeps that; and
    /// [`read_lock_frozen`](Self::read_lock_frozen) restarts if that slot is no cluster start); by
    /// the check's argument none of them can be emptied while the lock is held. Only the holder of
    /// `end` may insert into or remove from the supercluster those slots belong to (a lock-free
    /// path needs an empty, unlocked slot after what it changes in that group, which this
    /// supercluster has only at the locked `end`), so their elements do not move; an insert from
    /// the supercluster to the left fills at most the empty slot before it and moves nothing of it;
    /// and a removal that emptied a slot of the stretch before the lock was taken wrote that slot
    /// in its last group commit, so what remains of it is the release of its read locks. The plan's
    /// end is then `end` itself, and its cluster start stays one: the caller read-locks it
    /// ([`read_lock_frozen`](Self::read_lock_frozen)) only to keep locked queries out of the shift.
    #[inline(always)]
    fn plan_frozen<S: GroupSource, T>(
        &self,
        slots: &S,
        quotient: usize,
        end: usize,
        plan: impl FnOnce(&mut Cursor<'_, S>) -> T,
    ) -> Option<T> {
        // The first slot of `end`'s group: the lock's compare-and-swap covered the rest.
        let end_group_start = end - slots.layout().locate(end).1 as usize;
        if !Self::stretch_is_filled_in(slots, quotient, end_group_start) {
            return None;
        }
        // Acquire: each load pairs with the Release group CAS of its slot's last writer, and
        // by the argument above no writer but this thread comes after that one.
        Some(plan(&mut Cursor::over(slots, quotient, Ordering::Acquire)))
    }

    // ----- Blocks B-E: the locked insert ----------------------------------------------------

    /// Blocks B-E: write-locks the end of the supercluster of `quotient` and inserts
    /// ([`insert_locked`](Self::insert_locked)); `Ok(None)`: restart. `slots` is the table,
    /// seen through a [`GroupSource`] of fixed width where there is one ([`with_fixed_width!`]).
    ///
    /// Not inlined: it is compiled once per slot width, and the callers' one-group try stays
    /// small.
    #[inline(never)]
    fn insert_with_locks<S: GroupSource>(
        &self,
        slots: S,
        quotient: usize,
        remainder: u64,
    ) -> Result<Option<Result<bool, Full>>, Migrating> {
        let end = self.lock_supercluster_end(&slots, quotient)?;
        Ok(self.insert_locked(&slots, quotient, remainder, end))
    }

    /// The locked insert, holding the write lock on `end`, the first empty slot at or after
    /// `quotient` (Block B). `None`: `end` no longer ends the supercluster; restart.
    #[inline(always)]
    fn insert_locked<S: GroupSource>(
        &self,
        slots: &S,
        quotient: usize,
        remainder: u64,
        end: usize,
    ) -> Option<Result<bool, Full>> {
        if end == quotient {
            // The canonical slot was empty: it becomes a one-element cluster.
            let element = Slot::element(remainder, false, false).raw() | OCCUPIED;
            let stored = self.update_slot(end, |now| (now == WRITE_LOCK).then_some(element));
            debug_assert!(stored, "we hold the write lock");
            self.len.increment();
            return Some(Ok(true));
        }
        // Block D, planned on the frozen stretch (see `plan_frozen`).
        let step = self.plan_frozen(slots, quotient, end, |cursor| {
            walk::plan_insert(cursor, quotient, remainder)
        });
        let plan = match step {
            Some(Some(InsertStep::Place(plan))) => plan,
            Some(Some(InsertStep::Duplicate { .. })) => {
                self.unlock_write(end);
                return Some(Ok(false));
            }
            // A removal emptied a slot behind the scan (`end` ends no supercluster of ours), or
            // a walk could not finish, which the frozen stretch rules out.
            _ => {
                self.unlock_write(end);
                return None;
            }
        };
        if plan.end != end {
            // The frozen stretch rules this out; a hole in that argument restarts rather than
            // shift into a slot this thread has not locked. Debug builds and the loom models
            // stop here instead, so that the models see such a hole: a write lock taken without
            // the compare-and-swap of its group word (`lock_first_empty`) fails seven of them
            // here, which a restart would hide.
            if cfg!(any(loom, debug_assertions)) {
                panic!("the plan of a frozen stretch ends at {}", plan.end);
            }
            self.unlock_write(end);
            return None;
        }
        if end + 1 >= self.table.slots.len() {
            // The run would reach the last slot, which stays empty.
            self.unlock_write(end);
            return Some(Err(Full));
        }
        let start = plan.cluster_start;
        if !self.read_lock_frozen(start) {
            self.unlock_write(end);
            return None;
        }
        // Block E.
        // Acquire: reads of the locked cluster; the locks' Acquire already ordered them.
        let mut read = Cursor::over(slots, plan.position, Ordering::Acquire);
        let commit = Locked::new(self, slots.layout(), start);
        let mut rewriter =
            Rewriter::laid_out(&self.table.slots, slots.layout(), commit, KEEP_OCCUPIED);
        walk::shift_in(&mut read, &mut rewriter, &plan, Some(start));
        rewriter.finish();
        // The shift filled the write-locked slot, which released it.
        self.unlock_read(start);
        self.len.increment();
        Some(Ok(true))
    }

    // ----- Blocks F-I: contains -------------------------------------------------------------

    /// Blocks F and, beyond the paper, a write-free try for the rest: the whole lookup walked
    /// without locks. If the walk read only the canonical slot's group, its answer is exact
    /// (Block F: one load of a group is a consistent piece of the table). A walk over several
    /// groups that overlaps a shift may misread which run a slot belongs to: its `true` is then
    /// at worst a false positive (about as likely as a fingerprint collision in that run), and
    /// its `false` proves nothing, since the shift may have carried the element past the walk.
    #[inline]
    fn walk_without_locks(&self, quotient: usize, remainder: u64) -> UnlockedWalk {
        // Acquire: pairs with the Release of the writers that published the groups.
        let slots = &self.table.slots;
        with_fixed_width!(slots => Self::walk_from(
            Cursor::over(&LocksReadThrough(slots), quotient, Ordering::Acquire),
            remainder
        ))
    }

    /// [`walk_without_locks`](Self::walk_without_locks) from a cursor on the canonical slot
    /// that loaded its group with `Acquire`.
    #[inline(always)]
    fn walk_from<S: GroupSource>(mut cursor: Cursor<'_, S>, remainder: u64) -> UnlockedWalk {
        let canonical_group = cursor.group();
        let lookup = walk::lookup(&mut cursor, remainder);
        UnlockedWalk::new(lookup, canonical_group, &cursor)
    }

    /// Blocks G-I: the locked query. `None`: the cluster changed; restart. `hint`: where a walk
    /// without locks just saw the cluster start; it is locked if it still looks like one, which
    /// saves the walk back to it, and checked like any other lock by the walk under it.
    fn locked_query(&self, quotient: usize, remainder: u64, hint: Option<usize>) -> Option<bool> {
        let start = match hint.filter(|&start| self.try_read_lock(start)) {
            Some(start) => start,
            None => self.lock_cluster_start(quotient)?,
        };
        let slots = &self.table.slots;
        // Acquire: reads of the locked cluster; the lock's Acquire already ordered them.
        let answer = with_fixed_width!(slots => walk::lookup(
            &mut Cursor::over(&LocksReadThrough(slots), quotient, Ordering::Acquire),
            remainder
        ));
        self.unlock_read(start);
        match answer? {
            (found, Some(seen)) if seen == start => Some(found),
            (false, None) => Some(false),
            _ => None,
        }
    }

    // ----- Deletions ------------------------------------------------------------------------

    /// Removes without locks if the whole removal happens inside the group of the canonical
    /// slot, as [`insert_in_group`](Self::insert_in_group) inserts ("Avoiding locks" carried
    /// over to deletions): the group holds no lock, and an empty slot after the removed
    /// element, so the shift left stops inside it. `Some(false)` if the key is absent by a walk
    /// inside the group (whatever the group holds), `Some(true)` once removed, `None`: take the
    /// locked path.
    ///
    /// Why no other operation is hurt by the one CAS: every write or locked walk of these slots
    /// holds a lock in this group (a read lock on the cluster start, found here, or the write
    /// lock on the supercluster's end, which lies at or before the empty slot), or would have
    /// to hold one whose stretch passes the empty slot, which its right-to-left check of the
    /// stretch, or a migration's re-read, refuses; a locked query whose cluster start lies
    /// outside this group walks another cluster. So no locked operation relies on these slots
    /// now, and one that certifies them later reads them after this CAS (and restarts if a slot
    /// it needs is empty); module doc; migration.rs.
    ///
    /// Not inlined: inlined into `remove_or_migrating` (once per slot width), it made the
    /// whole removal 17% more instructions than without this path (callgrind,
    /// `W=removes F=locally-locked Q=16 LO=0.4 HI=0.6`); out of line, 12% fewer.
    #[inline(never)]
    fn remove_in_group<S: GroupSource>(
        &self,
        slots: S,
        quotient: usize,
        remainder: u64,
    ) -> Option<bool> {
        let (group, _) = slots.layout().locate(quotient);
        // Acquire: the group's content is what we build on; pairs with the Release of the
        // writer that published it.
        let word = slots.load_group(group, Ordering::Acquire);
        // Only an absent key can be answered in a group that holds a lock, or in one with no
        // empty slot from the canonical one on (see below): the lookup's lane-parallel compare
        // tells at less cost than planning a removal bound to be refused (most removals near
        // 90% fill; planning them first made `W=removes` a quarter slower).
        fn absent<S: GroupSource>(mut cursor: Cursor<'_, S>, remainder: u64) -> Option<bool> {
            match walk::lookup(&mut cursor, remainder) {
                Some((false, _)) => Some(false),
                _ => None,
            }
        }
        if self.has_lock(word) {
            return absent(Cursor::in_group(&slots, quotient, word), remainder);
        }
        // The word holds no lock, so the walks need not read any through.
        let at_rest = LocksReadThrough(&slots);
        let mut cursor = Cursor::in_group(&at_rest, quotient, word);
        // The slots from the cluster start to the removed element are filled, so an empty slot
        // from the canonical one on lies after it: the plan's look at the next slot and the
        // shift stay in the group.
        if !walk::group_has_empty_from(&cursor) {
            return absent(cursor, remainder);
        }
        let Some(plan) = walk::plan_remove(&mut cursor, quotient, remainder)? else {
            return Some(false);
        };
        let mut read = Cursor::in_group(&at_rest, plan.position + 1, word);
        let mut occupied = Cursor::in_group(&at_rest, quotient, word);
        let preview = Preview::new(group, word);
        let mut rewriter =
            Rewriter::laid_out(&self.table.slots, slots.layout(), &preview, KEEP_OCCUPIED);
        // No read lock on an element that lands home: the one CAS leaves nothing half done.
        walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, false);
        rewriter.finish();
        let new = preview.result();
        // Release: publishes the removal with the group; failure needs no ordering because the
        // fast path is simply abandoned.
        self.table
            .slots
            .compare_exchange_group(group, word, new, Ordering::Release, Ordering::Relaxed)
            .ok()?;
        self.len.decrement();
        Some(true)
    }

    /// Write-locks the end of the supercluster of `quotient` and removes
    /// ([`remove_locked`](Self::remove_locked)); `Ok(None)`: restart. `slots` as in
    /// [`insert_with_locks`](Self::insert_with_locks), and not inlined for the same reason.
    #[inline(never)]
    fn remove_with_locks<S: GroupSource>(
        &self,
        slots: S,
        quotient: usize,
        remainder: u64,
    ) -> Result<Option<bool>, Migrating> {
        let end = self.lock_supercluster_end(&slots, quotient)?;
        Ok(self.remove_locked(&slots, quotient, remainder, end))
    }

    /// The locked removal, holding the write lock on `end`, the first empty slot at or after
    /// `quotient`. `None`: `end` no longer ends the supercluster; restart.
    #[inline(always)]
    fn remove_locked<S: GroupSource>(
        &self,
        slots: &S,
        quotient: usize,
        remainder: u64,
        end: usize,
    ) -> Option<bool> {
        if end == quotient {
            // The canonical slot is empty: nothing to remove.
            self.unlock_write(end);
            return Some(false);
        }
        // Planned on the frozen stretch, as in `insert_locked`: an absent key is absent for
        // as long as this thread holds `end`, so the answer needs no read lock.
        let step = self.plan_frozen(slots, quotient, end, |cursor| {
            walk::plan_remove(cursor, quotient, remainder)
        });
        let plan = match step {
            Some(Some(Some(plan))) => plan,
            Some(Some(None)) => {
                self.unlock_write(end);
                return Some(false);
            }
            _ => {
                self.unlock_write(end);
                return None;
            }
        };
        let start = plan.cluster_start;
        if !self.read_lock_frozen(start) {
            self.unlock_write(end);
            return None;
        }
        // Acquire: reads of the locked cluster; the locks' Acquire already ordered them.
        let mut read = Cursor::over(slots, plan.position + 1, Ordering::Acquire);
        let mut occupied = Cursor::over(slots, quotient, Ordering::Acquire);
        let commit = Locked::new(self, slots.layout(), start);
        let mut rewriter =
            Rewriter::laid_out(&self.table.slots, slots.layout(), commit, KEEP_OCCUPIED);
        let emptied = walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, true);
        rewriter.finish();
        // Our cluster start (if it still holds an element) and the cluster starts the shift
        // created, all read-locked by us and all left of `emptied` (released right to left, see
        // `unlock_reads_in`); then the supercluster end.
        // `emptied` itself is excluded: it has been an ordinary empty slot since the last
        // commit, so another thread may already have filled it and read-locked it.
        if emptied > start {
            self.unlock_reads_in(start, emptied - 1);
        }
        self.unlock_write(end);
        self.len.decrement();
        Some(true)
    }
}

/// The continuation bit of every lane of `word` that holds a read lock (`010`: continuation
/// without shifted or occupied); `continuation_lanes` is the continuation bit of every lane.
#[inline]
fn read_locks(word: u64, continuation_lanes: u64) -> u64 {
    let continuation = word & continuation_lanes;
    let shifted = (word >> 1) & continuation_lanes;
    let occupied = (word << 1) & continuation_lanes;
    continuation & !shifted & !occupied
}

/// [`Commit`] for the locked shifts: compare-and-exchange each group, keeping other threads'
/// changes to lanes outside the rewritten range, and wait while a read lock other than our own
/// sits in the range (Block E: "if it is read locked then wait until released").
struct Locked {
    /// The continuation bit of every lane ([`LocallyLockedQf`]'s field).
    continuation_lanes: u64,
    /// The group of the cluster start this operation holds read-locked.
    own_group: usize,
    /// The bits of that start's lane in its group: located once, not on every commit.
    own_lane: u64,
}

impl Locked {
    /// The commit of an operation that holds the read lock on slot `own`, laid out as `layout`.
    fn new(filter: &LocallyLockedQf, layout: &SlotLayout, own: usize) -> Self {
        let (own_group, own_offset) = layout.locate(own);
        Locked {
            continuation_lanes: filter.continuation_lanes,
            own_group,
            own_lane: layout.place(own_offset, layout.slot_mask()),
        }
    }

    /// The lanes of `word` inside `range` that hold a read lock, other than our own.
    #[inline]
    fn foreign_read_locks(&self, group: usize, word: u64, range: u64) -> u64 {
        let mut locks = read_locks(word, self.continuation_lanes) & range;
        if group == self.own_group {
            locks &= !self.own_lane;
        }
        locks
    }
}

impl Commit for Locked {
    fn commit(&self, array: &SlotArray, group: usize, range: u64, compose: impl Fn(u64) -> u64) {
        let waiter = Waiter::new();
        // Acquire: we wait on read locks in this word and must see their holders' releases.
        let mut word = array.load_group(group, Ordering::Acquire);
        loop {
            if self.foreign_read_locks(group, word, range) != 0 {
                waiter.wait();
                // Acquire: as above.
                word = array.load_group(group, Ordering::Acquire);
                continue;
            }
            // Release: publishes the shifted slots; Acquire on failure: the next attempt
            // inspects the fresh word for locks.
            match array.compare_exchange_group(
                group,
                word,
                compose(word),
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }
}

impl Filter for LocallyLockedQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        self.insert_or_migrating(hash)
            .unwrap_or_else(|Migrating| unreachable!("only a growing filter migrates"))
            .map_err(Error::from)
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        let slots = &self.table.slots;
        // Acquire: pairs with the Release of the writers that published the groups.
        let walk = with_fixed_width!(slots => Self::walk_from(
            Cursor::over_prefetching(&LocksReadThrough(slots), quotient, Ordering::Acquire),
            remainder
        ));
        self.contains_trusting(quotient, remainder, true, walk)
    }

    fn len(&self) -> usize {
        self.len.sum()
    }

    fn capacity(&self) -> usize {
        self.table.capacity()
    }

    fn memory_bytes(&self) -> usize {
        self.table.slots.memory_bytes()
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
    /// over several groups, so a successful query writes nothing.
    #[inline]
    pub(crate) fn contains_fingerprint(&self, quotient: usize, remainder: u64) -> bool {
        let walk = self.walk_without_locks(quotient, remainder);
        self.contains_trusting(quotient, remainder, true, walk)
    }

    /// The query, given its first walk without locks: a walk answers if it read one group, or
    /// if it found the remainder and `unlocked_hits` trusts that; otherwise the locked query
    /// does (Blocks G-I), and if the cluster changed under it, a new walk and so on.
    #[inline(always)]
    fn contains_trusting(
        &self,
        quotient: usize,
        remainder: u64,
        unlocked_hits: bool,
        first_walk: UnlockedWalk,
    ) -> bool {
        let mut walk = first_walk;
        loop {
            if walk.one_group || (walk.found && unlocked_hits) {
                return walk.found;
            }
            if let Some(found) = self.locked_query(quotient, remainder, walk.start) {
                return found;
            }
            walk = self.walk_without_locks(quotient, remainder);
        }
    }

    /// [`Filter::insert_hash`], or [`Migrating`] if the insert met a migration lock before it
    /// changed anything.
    #[inline]
    pub(crate) fn insert_or_migrating(&self, hash: u64) -> Result<Result<bool, Full>, Migrating> {
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
mod tests {
    use super::*;

    fn key(quotient: u64, remainder: u64) -> u64 {
        ((quotient << 13) | remainder) << (64 - 16)
    }

    /// Slots of 16 bits, 4 per group; quotient 2's run fills slots 2-4 and quotient 5 starts a
    /// cluster at slot 5, so slot 6 ends the supercluster.
    fn filter() -> LocallyLockedQf {
        filter_with(&[key(2, 1), key(2, 2), key(2, 3), key(5, 1)])
    }

    /// A table of 8 slots of 16 bits (4 per group) holding `keys`.
    fn filter_with(keys: &[u64]) -> LocallyLockedQf {
        let mut sequential = SequentialQf::with_bits(3, 13).unwrap();
        for &k in keys {
            sequential.insert_hash(k).unwrap();
        }
        LocallyLockedQf::from_sequential(sequential)
    }

    /// A query's walk without locks over a half-committed shift: level 0 of the loom model
    /// `insert_if_absent_ignores_a_hit_misread_during_a_lower_level_removal`, with the removal
    /// of `(2,2)` committed in group 0 (slots 0-3) but not yet in group 1. The walk for `(4,7)`
    /// misreads the stale `(3,7)` in slot 4 as quotient 4's run, and must say it read more than
    /// one group; a walk inside one group is exact.
    #[test]
    fn a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact() {
        let before = filter_with(&[key(2, 1), key(2, 2), key(3, 7), key(4, 9)]);
        let after = filter_with(&[key(2, 1), key(3, 7), key(4, 9)]);
        let group_0 = after.table.slots.load_group(0, Ordering::Relaxed);
        before
            .table
            .slots
            .store_group(0, group_0, Ordering::Relaxed);

        let misread = before.walk_without_locks(4, 7);
        assert!(misread.found, "the stale copy reads as quotient 4's run");
        assert!(!misread.one_group);
        assert_eq!(misread.start, Some(3));
        let inside = before.walk_without_locks(2, 1);
        assert!(inside.found && inside.one_group);
        let unoccupied = before.walk_without_locks(1, 7);
        assert!(!unoccupied.found && unoccupied.one_group);
    }

    #[test]
    fn fast_path_insert_refuses_a_group_holding_a_write_lock() {
        let filter = filter();
        // As if a locked insert into quotient 2 held the supercluster's end.
        assert!(filter.update_slot(6, |now| (now == 0).then_some(WRITE_LOCK)));
        assert_eq!(filter.insert_in_group(&filter.table.slots, 5, 9), None);
        assert_eq!(filter.table.slots.get(6, Ordering::Relaxed), WRITE_LOCK);
        filter.unlock_write(6);
        assert_eq!(
            filter.insert_in_group(&filter.table.slots, 5, 9),
            Some(Ok(true))
        );
        filter.check_invariants().unwrap();
    }

    #[test]
    fn fast_path_insert_refuses_a_group_holding_a_read_lock() {
        let filter = filter();
        assert_eq!(filter.lock_cluster_start(5), Some(5));
        assert_eq!(filter.insert_in_group(&filter.table.slots, 5, 9), None);
        // Queries still answer from the group, reading through the lock.
        let walk = filter.walk_without_locks(5, 1);
        assert!(walk.found && walk.one_group);
        filter.unlock_read(5);
        filter.check_invariants().unwrap();
    }

    /// Quotient 1's run fills slots 1-3, the rest of group 0: an insert there would shift into
    /// group 1, so the one-group path answers only duplicates and leaves the rest to the locked
    /// path, changing nothing.
    #[test]
    fn fast_path_insert_into_a_group_without_room_answers_only_duplicates() {
        let filter = filter_with(&[key(1, 1), key(1, 2), key(1, 3)]);
        let slots = &filter.table.slots;
        let before = slots.load_group(0, Ordering::Relaxed);
        assert_eq!(filter.insert_in_group(slots, 1, 2), Some(Ok(false)));
        assert_eq!(filter.insert_in_group(slots, 1, 9), None);
        assert_eq!(filter.insert_in_group(slots, 2, 5), None);
        assert_eq!(slots.load_group(0, Ordering::Relaxed), before);
        // Slot 0 is empty, so quotient 0 still inserts inside the group.
        assert_eq!(filter.insert_in_group(slots, 0, 5), Some(Ok(true)));
        assert_eq!(filter.insert_hash(key(1, 9)), Ok(true));
        assert!(filter.contains_hash(key(1, 9)) && filter.contains_hash(key(0, 5)));
        filter.check_invariants().unwrap();
    }

    /// The one-group removal: slots 2-4 hold quotient 2's run and slot 5 quotient 5's, slots
    /// 6 and 7 are empty. Group 1 (slots 4-7) holds a cluster start with room after it, so
    /// quotient 5 removes there (the canonical slot loses its occupied bit) and answers an
    /// absent key; quotient 2's walk leaves group 0 (its run ends in group 1), so it takes the
    /// locked path.
    #[test]
    fn fast_path_removal_acts_inside_one_group_only() {
        let filter = filter();
        let slots = &filter.table.slots;
        assert_eq!(filter.remove_in_group(slots, 2, 3), None);
        assert_eq!(filter.remove_in_group(slots, 5, 9), Some(false));
        assert_eq!(filter.remove_in_group(slots, 6, 9), Some(false));
        assert_eq!(filter.remove_in_group(slots, 5, 1), Some(true));
        assert_eq!(filter.len(), 3);
        assert!(!filter.contains_hash(key(5, 1)));
        assert!((1..=3).all(|r| filter.contains_hash(key(2, r))));
        filter.check_invariants().unwrap();
        assert_eq!(filter.remove_hash(key(2, 3)), Ok(true));
        assert_eq!(filter.len(), 2);
        filter.check_invariants().unwrap();
    }

    /// A removal inside group 1 whose shift left moves the next run's head into its canonical
    /// slot, which starts a new cluster there: written as a plain cluster start (`100`), not
    /// read-locked as the locked removal writes it, since one CAS leaves nothing to unlock.
    #[test]
    fn fast_path_removal_lands_a_run_head_home_unlocked() {
        let filter = filter_with(&[key(4, 1), key(4, 2), key(5, 3)]);
        assert_eq!(
            filter.remove_in_group(&filter.table.slots, 4, 2),
            Some(true)
        );
        let slot_5 = Slot::from_raw(filter.table.slots.get(5, Ordering::Relaxed));
        assert!(slot_5.is_cluster_start() && slot_5.raw() & READ_LOCK == 0);
        assert!(filter.contains_hash(key(4, 1)) && filter.contains_hash(key(5, 3)));
        filter.check_invariants().unwrap();
    }

    /// A group with a lock in it is left to the locked path, even with room for the shift: a
    /// read lock on the cluster start (a locked query or writer of that cluster) or a write
    /// lock at the end of the supercluster (a locked writer whose plan may cover these slots).
    /// Absent keys are still answered, reading through the locks.
    #[test]
    fn fast_path_removal_refuses_a_group_holding_a_lock() {
        let filter = filter_with(&[key(4, 1), key(4, 2)]);
        let slots = &filter.table.slots;
        assert_eq!(filter.lock_cluster_start(4), Some(4));
        assert_eq!(filter.remove_in_group(slots, 4, 2), None);
        assert_eq!(filter.remove_in_group(slots, 4, 3), Some(false));
        filter.unlock_read(4);
        assert!(filter.update_slot(6, |now| (now == 0).then_some(WRITE_LOCK)));
        assert_eq!(filter.remove_in_group(slots, 4, 2), None);
        assert_eq!(filter.remove_in_group(slots, 4, 3), Some(false));
        filter.unlock_write(6);
        assert_eq!(filter.len(), 2);
        filter.check_invariants().unwrap();
        assert_eq!(filter.remove_in_group(slots, 4, 2), Some(true));
        filter.check_invariants().unwrap();
    }

    /// Group 1 full from the canonical slot on (slots 4-7 of one run): the shift left would
    /// have to pull in slot 8, so the one-group path refuses, changing nothing.
    #[test]
    fn fast_path_removal_refuses_a_group_without_an_empty_slot_after_it() {
        let filter = LocallyLockedQf::with_bits(4, 13).unwrap();
        let key = |quotient: u64, remainder: u64| ((quotient << 13) | remainder) << (64 - 17);
        for r in 1..=5 {
            assert_eq!(filter.insert_hash(key(4, r)), Ok(true));
        }
        let slots = &filter.table.slots;
        let before = slots.load_group(1, Ordering::Relaxed);
        assert_eq!(filter.remove_in_group(slots, 4, 2), None);
        assert_eq!(slots.load_group(1, Ordering::Relaxed), before);
        assert_eq!(filter.remove_hash(key(4, 2)), Ok(true));
        assert!([1, 3, 4, 5]
            .iter()
            .all(|&r| filter.contains_hash(key(4, r))));
        filter.check_invariants().unwrap();
    }

    /// A removal's release of its read locks, on the configuration a review found the bug in:
    /// removing `(0,0)` from slots 0-6 holding `(0,0) (0,1) (0,2) (1,3) (2,4) (3,5) (3,6)`
    /// leaves slots 0-5 as one cluster read-locked at slot 0. At every step of the release,
    /// each slot still to visit must lie in a cluster whose start the removal still holds:
    /// otherwise another removal could lock that start and write new read-locked cluster
    /// starts there, which the release would then take for its own (it did, left to right).
    #[test]
    fn a_removal_releases_its_read_locks_so_no_other_writer_can_lock_ahead_of_it() {
        let filter = LocallyLockedQf::with_bits(4, 13).unwrap();
        let key = |quotient: u64, remainder: u64| ((quotient << 13) | remainder) << (64 - 17);
        for (q, r) in [(0, 0), (0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (3, 6)] {
            assert_eq!(filter.insert_hash(key(q, r)), Ok(true));
        }
        // The removal of (0, 0) as `remove_locked` makes it, up to its release.
        let end = filter
            .lock_supercluster_end(&filter.table.slots, 0)
            .unwrap();
        let start = filter.lock_cluster_start(0).unwrap();
        assert_eq!((start, end), (0, 7));
        let mut cursor = filter.table.slots.cursor(0, Ordering::Acquire);
        let plan = walk::plan_remove(&mut cursor, 0, 0).unwrap().unwrap();
        let mut read = filter
            .table
            .slots
            .cursor(plan.position + 1, Ordering::Acquire);
        let mut occupied = filter.table.slots.cursor(0, Ordering::Acquire);
        let commit = Locked::new(&filter, filter.table.slots.layout(), start);
        let mut rewriter = Rewriter::new(&filter.table.slots, commit, KEEP_OCCUPIED);
        let emptied = walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, true);
        rewriter.finish();
        assert_eq!(emptied, 6);
        let slots = &filter.table.slots;
        let cluster_start_of = |mut index: usize| {
            while Slot::unlocked(slots.get(index, Ordering::Relaxed)).is_shifted() {
                index -= 1;
            }
            index
        };
        let mut to_visit: Vec<usize> = (start..emptied).collect();
        filter.unlock_reads_in_observed(start, emptied - 1, |released| {
            to_visit.retain(|i| !released.contains(i));
            for &ahead in &to_visit {
                let held = cluster_start_of(ahead);
                assert_eq!(
                    slots.get(held, Ordering::Relaxed) & STATUS_MASK,
                    READ_LOCK,
                    "after releasing slots {released:?}, slot {ahead} still to visit lies in the \
                     cluster of slot {held}, which another writer could now lock"
                );
            }
        });
        filter.unlock_write(end);
        filter.len.decrement();
        filter.check_invariants().unwrap();
        assert!(!filter.contains_hash(key(0, 0)));
        assert!(filter.contains_hash(key(3, 6)));
    }

    #[test]
    fn a_frozen_plan_read_locks_only_an_unlocked_cluster_start() {
        let filter = filter();
        // Slot 2 starts the cluster of quotient 2, slot 3 holds a continuation, slot 7 is empty.
        assert!(filter.read_lock_frozen(2));
        assert_eq!(
            filter.table.slots.get(2, Ordering::Relaxed) & STATUS_MASK,
            READ_LOCK
        );
        filter.unlock_read(2);
        assert!(!filter.read_lock_frozen(3));
        assert!(!filter.read_lock_frozen(7));
        filter.check_invariants().unwrap();
    }
}
