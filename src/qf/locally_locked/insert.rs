//! `LocallyLockedQf`'s inserts (paper 000 §3.2, Algorithm 1): Block A, the insert inside one
//! group without locks, and Blocks B-E, the insert under the supercluster's write lock and the
//! cluster's read lock.

use super::locks::Locked;
use super::{LocallyLockedQf, Migrating};
use crate::filter::Full;
use crate::qf::slot::{Slot, OCCUPIED, WRITE_LOCK};
use crate::qf::walk::{self, InsertStep, LocksReadThrough, KEEP_OCCUPIED};
use crate::storage::{Cursor, GroupSource, Preview, Rewriter};
use crate::sync::Ordering;

impl LocallyLockedQf {
    /// Inserts without locks if the insert happens inside the group of the canonical slot and that
    /// group holds no lock. `None`: take the locked path. `slots` is the table, seen through a
    /// [`GroupSource`] of fixed width where there is one
    /// ([`with_fixed_width!`](crate::storage::with_fixed_width)).
    pub(super) fn insert_in_group<S: GroupSource>(
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
        self.cap.count_insert(&self.len);
        Some(Ok(true))
    }

    /// Blocks B-E: write-locks the end of the supercluster of `quotient` and inserts
    /// ([`insert_locked`](Self::insert_locked)); `Ok(None)`: restart. `slots` is the table, seen
    /// through a [`GroupSource`] of fixed width where there is one
    /// ([`with_fixed_width!`](crate::storage::with_fixed_width)).
    ///
    /// Not inlined: it is compiled once per slot width, and the callers' one-group try stays
    /// small.
    #[inline(never)]
    pub(super) fn insert_with_locks<S: GroupSource>(
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
    pub(super) fn insert_locked<S: GroupSource>(
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
            self.cap.count_insert(&self.len);
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
        let shifting = self.shifting(slots.layout(), start, end);
        walk::shift_in(&mut read, &mut rewriter, &plan, Some(start));
        rewriter.finish();
        drop(shifting);
        // The shift filled the write-locked slot, which released it.
        self.unlock_read(start);
        self.cap.count_insert(&self.len);
        Some(Ok(true))
    }
}
