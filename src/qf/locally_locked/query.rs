//! `LocallyLockedQf`'s queries (paper 000 §3.2, Blocks F-I): the walk without locks, and the
//! walk under the cluster start's read lock when that walk cannot answer.

use super::LocallyLockedQf;
use crate::qf::shift_regions::QuietRegion;
use crate::qf::walk::{self, LocksReadThrough, UnlockedWalk};
use crate::storage::{with_fixed_width, Cursor, GroupSource};
use crate::sync::Ordering;

impl LocallyLockedQf {
    /// Blocks F and, beyond the paper, a write-free try for the rest: the whole lookup walked
    /// without locks, with the word of its shift region read before it. If the walk read only
    /// the canonical slot's group, its answer is exact (Block F: one load of a group is a
    /// consistent piece of the table). A walk over several groups that overlaps a locked shift
    /// may misread which run a slot belongs to: its `true` is then at worst a false positive
    /// (about as likely as a fingerprint collision in that run), and its `false` proves
    /// nothing, since the shift may have carried the element past the walk; so its answer is
    /// exact only if no locked shift wrote the region meanwhile
    /// ([`ShiftRegions::walk_stands`](crate::qf::shift_regions::ShiftRegions::walk_stands)).
    #[inline]
    pub(super) fn walk_without_locks(
        &self,
        quotient: usize,
        remainder: u64,
    ) -> (QuietRegion, UnlockedWalk) {
        let slots = &self.table.slots;
        with_fixed_width!(slots => {
            // The layout is a constant here: locating the group takes an instruction or two.
            let quiet = self.shifts.read_begin(slots.layout().locate(quotient).0);
            // Acquire: pairs with the Release of the writers that published the groups; and
            // `ShiftRegions::walk_stands` needs it.
            let walk = Self::walk_from(
                Cursor::over(&LocksReadThrough(slots), quotient, Ordering::Acquire),
                remainder,
            );
            (quiet, walk)
        })
    }

    /// [`walk_without_locks`](Self::walk_without_locks) from a cursor on the canonical slot
    /// that loaded its group with `Acquire`.
    #[inline(always)]
    pub(super) fn walk_from<S: GroupSource>(
        mut cursor: Cursor<'_, S>,
        remainder: u64,
    ) -> UnlockedWalk {
        let canonical_group = cursor.group();
        let lookup = walk::lookup(&mut cursor, remainder);
        UnlockedWalk::new(lookup, canonical_group, &cursor)
    }

    /// Blocks G-I: the locked query. `None`: the cluster changed; restart. `hint`: where a walk
    /// without locks just saw the cluster start; it is locked if it still looks like one, which
    /// saves the walk back to it, and checked like any other lock by the walk under it.
    pub(super) fn locked_query(
        &self,
        quotient: usize,
        remainder: u64,
        hint: Option<usize>,
    ) -> Option<bool> {
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
}
