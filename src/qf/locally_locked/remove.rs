//! `LocallyLockedQf`'s removals (paper 000 §3.2, "Deletions"): inside one group without locks,
//! or under the same locks as an insert, shifting left.

use super::locks::Locked;
use super::{LocallyLockedQf, Migrating};
use crate::qf::walk::{self, LocksReadThrough, KEEP_OCCUPIED};
use crate::storage::{Cursor, GroupSource, Preview, Rewriter};
use crate::sync::Ordering;

impl LocallyLockedQf {
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
    pub(super) fn remove_in_group<S: GroupSource>(
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
    pub(super) fn remove_with_locks<S: GroupSource>(
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
    pub(super) fn remove_locked<S: GroupSource>(
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
        let shifting = self.shifting(slots.layout(), start, end);
        let emptied = walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, true);
        rewriter.finish();
        drop(shifting);
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
