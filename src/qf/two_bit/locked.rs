//! A [`TwoBitQf`]'s locked writes: an insert under its left and right locks and a removal under
//! its left lock, each counted in flight on the shift regions it writes (the module doc of
//! [`two_bit`](super), "insert", "locked shifts" and "remove").

use super::table::{element, LOCK, OCCUPIED};
use super::walk::{self, InsertPlan, InsertStep};
use super::TwoBitQf;
use crate::filter::Full;
use crate::qf::seq_word::Writing;
use crate::storage::{Guarded, Rewriter};
use crate::sync::Ordering;

impl TwoBitQf {
    /// The insert under the left and right locks. `None`: the supercluster changed before the
    /// left lock was taken; restart.
    pub(super) fn insert_locked(
        &self,
        quotient: usize,
        remainder: u64,
    ) -> Option<Result<bool, Full>> {
        let left = self.lock_left(quotient);
        if left == quotient {
            // The canonical slot is empty and ours: the element goes there, which unlocks it.
            let slot = element(remainder, true) | OCCUPIED;
            let stored = self
                .table
                .slots
                .update_slot(left, |now| (now == LOCK).then_some(slot));
            debug_assert!(stored, "we hold the lock");
            self.cap.count_insert(&self.len);
            return Some(Ok(true));
        }
        let plan = match self.plan_locked(left, quotient, remainder) {
            Some(InsertStep::Place(plan)) => plan,
            Some(InsertStep::Duplicate) => {
                self.unlock(left);
                return Some(Ok(false));
            }
            None => {
                self.unlock(left);
                return None;
            }
        };
        let right = self.lock_right(quotient);
        // Between the plan and the right lock the supercluster can only have grown at its end
        // (an empty canonical slot filled in one CAS); then plan again over the longer stretch.
        let plan = if right == plan.end {
            plan
        } else {
            match self.plan_locked(left, quotient, remainder) {
                Some(InsertStep::Place(plan)) if plan.end == right => plan,
                _ => {
                    // The locks rule this out; a hole in that argument restarts rather than
                    // shift into a stretch this thread has not planned. Debug builds and the
                    // loom models stop here instead, so that the models see such a hole.
                    if cfg!(any(loom, debug_assertions)) {
                        panic!("the locked supercluster changed");
                    }
                    self.unlock(right);
                    self.unlock(left);
                    return None;
                }
            }
        };
        if right + 1 >= self.table.slots.len() {
            // The run would reach the last slot, which stays empty.
            self.unlock(right);
            self.unlock(left);
            return Some(Err(Full));
        }
        let writing = self.shifting(left, right);
        self.shift_in_locked(&plan);
        drop(writing);
        // The shift filled the right lock's slot, which released it.
        self.unlock(left);
        self.cap.count_insert(&self.len);
        Some(Ok(true))
    }

    /// A locked shift of slots in `left..=last`, in flight for the queries (see
    /// `qf::shift_regions`) until the result drops. Start it holding the locks, before the
    /// first group commit; drop it after the last.
    pub(super) fn shifting(&self, left: usize, last: usize) -> Writing<'_> {
        let layout = self.table.slots.layout();
        self.shifts
            .shifting(layout.locate(left).0, layout.locate(last).0)
    }

    /// Plans an insert by walking from the locked slot `left`.
    pub(super) fn plan_locked(
        &self,
        left: usize,
        quotient: usize,
        remainder: u64,
    ) -> Option<InsertStep> {
        // Acquire on every group load. Taking the lock does not order us after a lock-free
        // insert into an empty canonical slot (one CAS) that extends the stretch at its end
        // without touching the left lock; but such a writer (like every lock-free one) publishes
        // nothing outside the word it swaps, so a Relaxed load would read the same slots, and
        // did pass every model when mutation-tested (2026-11-29). Acquire costs nothing on x86
        // and keeps the walk ordered should a lock-free writer ever publish more than its word.
        let mut cursor = self.table.slots.cursor(left, Ordering::Acquire);
        walk::plan_insert(&mut cursor, quotient, remainder)
    }

    /// Writes an insert plan whose stretch this thread has locked.
    pub(super) fn shift_in_locked(&self, plan: &InsertPlan) {
        // Acquire: as in `plan_locked`.
        let mut read = self.table.slots.cursor(plan.position, Ordering::Acquire);
        let mut rewriter = Rewriter::new(&self.table.slots, Guarded, OCCUPIED);
        walk::shift_in(&mut read, &mut rewriter, plan);
        rewriter.finish();
    }

    /// The removal under the left lock. `None`: the supercluster changed; restart.
    pub(super) fn remove_locked(&self, quotient: usize, remainder: u64) -> Option<bool> {
        let left = self.lock_left(quotient);
        if left == quotient {
            self.unlock(left);
            return Some(false);
        }
        let slots = &self.table.slots;
        // Acquire: as in `plan_locked`.
        let mut cursor = slots.cursor(left, Ordering::Acquire);
        let plan = match walk::plan_remove(&mut cursor, quotient, remainder) {
            Some(Some(plan)) => plan,
            Some(None) => {
                self.unlock(left);
                return Some(false);
            }
            None => {
                self.unlock(left);
                return None;
            }
        };
        // Acquire: as in `plan_locked`.
        let mut read = slots.cursor(plan.position + 1, Ordering::Acquire);
        let mut occupied = slots.cursor(quotient, Ordering::Acquire);
        let mut rewriter = Rewriter::new(slots, Guarded, OCCUPIED);
        // Where the shift stops is known only once it gets there: it counts itself in flight
        // on each region before its first write there.
        let mut reach = self.shifts.reaching(slots.layout(), quotient);
        let before_write = |slot| reach.before_write(slot);
        let emptied = walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, before_write);
        debug_assert!(reach.counts(emptied), "a write past the counted regions");
        rewriter.finish();
        drop(reach);
        self.unlock(left);
        self.len.decrement();
        Some(true)
    }
}
