//! A [`TwoBitQf`]'s locks: empty slots with the new-run bit set, taken left of a supercluster
//! and, for inserts, right of it, always in increasing slot order (the module doc of
//! [`two_bit`](super), "Protocol" and "No deadlock").

use super::table::LOCK;
use super::walk;
use super::TwoBitQf;
use crate::sync::{Ordering, Waiter};

impl TwoBitQf {
    /// Locks the nearest slot at or left of `quotient` that is not filled (the empty slot left of
    /// its supercluster, or `quotient` itself if it is empty), waiting while it is locked.
    /// Returns its index.
    pub(super) fn lock_left(&self, quotient: usize) -> usize {
        let waiter = Waiter::new();
        loop {
            // Acquire: the scan decides where the supercluster starts from what it reads.
            let mut cursor = self.table.slots.cursor(quotient, Ordering::Acquire);
            // Slot 0 is never filled, so the walk always finds a boundary.
            let left = walk::back_to_boundary(&mut cursor).unwrap_or(0);
            if cursor.slot() == LOCK {
                waiter.wait();
            } else if self.try_lock(left) {
                return left;
            }
        }
    }

    /// Locks the first slot after `quotient` that is not filled (the empty slot right of its
    /// supercluster), waiting while it is locked. Returns its index.
    pub(super) fn lock_right(&self, quotient: usize) -> usize {
        let waiter = Waiter::new();
        let last = self.table.slots.len() - 1;
        loop {
            // Acquire: as in `lock_left`.
            let mut cursor = self.table.slots.cursor(quotient, Ordering::Acquire);
            // The last slot is never filled, so the walk always finds one.
            let right = walk::seek_empty(&mut cursor).unwrap_or(last);
            if cursor.slot() == LOCK {
                waiter.wait();
            } else if self.try_lock(right) {
                return right;
            }
        }
    }

    /// Locks slot `index` if it is empty and unlocked.
    pub(super) fn try_lock(&self, index: usize) -> bool {
        self.table
            .slots
            .update_slot(index, |now| (now == 0).then_some(LOCK))
    }

    /// Releases the lock on `index`, leaving it empty.
    pub(super) fn unlock(&self, index: usize) {
        let released = self
            .table
            .slots
            .update_slot(index, |now| (now == LOCK).then_some(0));
        debug_assert!(released, "slot {index} was not locked");
    }
}
