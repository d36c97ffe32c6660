//! The status-bit locks of `LocallyLockedQf` (paper 000 §3.2, Blocks B and C): the write lock
//! `110` after a supercluster, the read lock `010` on a cluster start, and the commit that waits
//! out other threads' read locks while a shift passes (Block E).

use super::{LocallyLockedQf, Migrating};
use crate::hash::low_mask;
use crate::qf::seq_word::Writing;
use crate::qf::slot::{LockView, OCCUPIED, READ_LOCK, STATUS_MASK, WRITE_LOCK};
use crate::qf::walk;
use crate::storage::{Commit, Cursor, GroupSource, SlotArray, SlotLayout};
use crate::sync::{Ordering, Waiter};

impl LocallyLockedQf {
    /// Whether any slot of `word` holds a lock status (`010` or `110`: continuation without
    /// shifted).
    #[inline]
    pub(super) fn has_lock(&self, word: u64) -> bool {
        let continuation = word & self.continuation_lanes;
        let shifted = (word >> 1) & self.continuation_lanes;
        continuation & !shifted != 0
    }

    /// A locked shift of the slots `start..=end` (its cluster start and its write lock), in
    /// flight for the queries' misses (see `qf::shift_regions`) until the result drops. Start it
    /// holding both locks, before the first group commit; drop it after the last.
    pub(super) fn shifting(&self, layout: &SlotLayout, start: usize, end: usize) -> Writing<'_> {
        self.shifts
            .shifting(layout.locate(start).0, layout.locate(end).0)
    }

    /// Changes slot `index` with `change` in one CAS of its group (see
    /// [`SlotArray::update_slot`]).
    pub(crate) fn update_slot(&self, index: usize, change: impl Fn(u64) -> Option<u64>) -> bool {
        self.table.slots.update_slot(index, change)
    }

    /// Block B: write-locks the first empty slot at or after `quotient`, waiting for write locks
    /// met on the way. Returns its index, or [`Migrating`] if the scan met a migration lock (only
    /// in a growing filter, see [`growing`](crate::qf::growing)): the caller then holds no lock.
    #[inline]
    pub(super) fn lock_supercluster_end<S: GroupSource>(
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
    /// fixed width, [`with_fixed_width!`](crate::storage::with_fixed_width)).
    #[inline]
    pub(super) fn stretch_is_filled_in<S: GroupSource>(slots: &S, from: usize, end: usize) -> bool {
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
    /// growing migration's freeze ([`growing`](crate::qf::growing)), which locks with
    /// [`MIGRATION_LOCK`](crate::qf::slot::MIGRATION_LOCK).
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
    pub(super) fn lock_first_empty_in<S: GroupSource>(
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
    pub(super) fn lock_cluster_start(&self, quotient: usize) -> Option<usize> {
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
    pub(super) fn try_read_lock(&self, index: usize) -> bool {
        self.update_slot(index, |now| {
            (now & STATUS_MASK == OCCUPIED).then_some((now & !STATUS_MASK) | READ_LOCK)
        })
    }

    /// Releases the read lock on `index`.
    pub(super) fn unlock_read(&self, index: usize) {
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
    pub(super) fn unlock_reads_in(&self, from: usize, to: usize) {
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
    pub(super) fn unlock_reads_in_observed(
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
    pub(super) fn unlock_write(&self, index: usize) {
        let released = self.update_slot(index, |now| (now == WRITE_LOCK).then_some(0));
        debug_assert!(released, "slot {index} was not write-locked");
    }

    /// Blocks C and G for a writer whose stretch is frozen (see [`plan_frozen`]): read-locks
    /// `start`, the cluster start its plan found, waiting while a query or a finishing removal
    /// holds it. `false` if `start` holds no cluster start (the frozen stretch rules that out;
    /// the caller restarts all the same).
    ///
    /// [`plan_frozen`]: Self::plan_frozen
    pub(super) fn read_lock_frozen(&self, start: usize) -> bool {
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
    pub(super) fn plan_frozen<S: GroupSource, T>(
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
}

/// The continuation bit of every lane of `word` that holds a read lock (`010`: continuation
/// without shifted or occupied); `continuation_lanes` is the continuation bit of every lane.
#[inline]
pub(super) fn read_locks(word: u64, continuation_lanes: u64) -> u64 {
    let continuation = word & continuation_lanes;
    let shifted = (word >> 1) & continuation_lanes;
    let occupied = (word << 1) & continuation_lanes;
    continuation & !shifted & !occupied
}

/// [`Commit`] for the locked shifts: compare-and-exchange each group, keeping other threads'
/// changes to lanes outside the rewritten range, and wait while a read lock other than our own
/// sits in the range (Block E: "if it is read locked then wait until released").
pub(super) struct Locked {
    /// The continuation bit of every lane ([`LocallyLockedQf`]'s field).
    continuation_lanes: u64,
    /// The group of the cluster start this operation holds read-locked.
    own_group: usize,
    /// The bits of that start's lane in its group: located once, not on every commit.
    own_lane: u64,
}

impl Locked {
    /// The commit of an operation that holds the read lock on slot `own`, laid out as `layout`.
    pub(super) fn new(filter: &LocallyLockedQf, layout: &SlotLayout, own: usize) -> Self {
        let (own_group, own_offset) = layout.locate(own);
        Locked {
            continuation_lanes: filter.continuation_lanes,
            own_group,
            own_lane: layout.place(own_offset, layout.slot_mask()),
        }
    }

    /// The lanes of `word` inside `range` that hold a read lock, other than our own.
    #[inline]
    pub(super) fn foreign_read_locks(&self, group: usize, word: u64, range: u64) -> u64 {
        let mut locks = read_locks(word, self.continuation_lanes) & range;
        if group == self.own_group {
            locks &= !self.own_lane;
        }
        locks
    }
}

impl Commit for Locked {
    #[inline]
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
