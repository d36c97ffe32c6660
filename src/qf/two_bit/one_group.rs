//! The lock-free paths of a [`TwoBitQf`]: an insert or a lookup that fits the canonical slot's
//! 64-bit group, in one CAS or one load (paper 000 §3.2, "Avoiding locks"; the module doc of
//! [`two_bit`](super) has the protocol).

use super::table::{is_filled, OCCUPIED};
use super::walk::{self, InsertStep};
use super::TwoBitQf;
use crate::filter::Full;
use crate::storage::{Preview, Rewriter};
use crate::sync::Ordering;

impl TwoBitQf {
    /// Inserts with one CAS of the canonical slot's group if the whole insert, both boundary
    /// slots included, lies in that group and neither boundary is locked. If the CAS fails only
    /// because other lanes of the group changed (the insert's own stretch reads the same), it
    /// plans once more on the new word (a whole new plan, so the test only limits the retries:
    /// it is not needed for correctness). `None`: take the locked path.
    pub(super) fn insert_in_group(
        &self,
        quotient: usize,
        remainder: u64,
    ) -> Option<Result<bool, Full>> {
        let slots = &self.table.slots;
        let (group, _) = slots.layout().locate(quotient);
        // Acquire: the group's content is what we build on; pairs with the Release of the
        // writer that published it.
        let mut word = slots.load_group(group, Ordering::Acquire);
        for retry in [true, false] {
            match self.insert_into_word(quotient, remainder, group, word)? {
                Ok(done) => return Some(done),
                Err(Lost { actual, left, end }) => {
                    let same = |index| {
                        slots.cursor_in_group(index, word).slot()
                            == slots.cursor_in_group(index, actual).slot()
                    };
                    if !retry || !(left..=end).all(same) {
                        return None;
                    }
                    word = actual;
                }
            }
        }
        None
    }

    /// One attempt of [`insert_in_group`](Self::insert_in_group) on `word`, the group as last
    /// read. `None`: the insert does not fit the group or meets a lock; `Some(Err(_))`: the CAS
    /// lost to another writer.
    pub(super) fn insert_into_word(
        &self,
        quotient: usize,
        remainder: u64,
        group: usize,
        word: u64,
    ) -> Option<Result<Result<bool, Full>, Lost>> {
        let slots = &self.table.slots;
        let mut cursor = slots.cursor_in_group(quotient, word);
        let canonical = cursor.slot();
        let (plan, left) = if !is_filled(canonical) {
            (
                walk::plan_into_empty(quotient, canonical, remainder),
                quotient,
            )
        } else {
            let left = walk::back_to_boundary(&mut cursor)?;
            match walk::plan_insert(&mut cursor, quotient, remainder)? {
                InsertStep::Duplicate => return Some(Ok(Ok(false))),
                InsertStep::Place(plan) => (plan, left),
            }
        };
        let unlocked = |index: usize| slots.cursor_in_group(index, word).slot() == 0;
        if !unlocked(left) || !unlocked(plan.end) || plan.end + 1 >= slots.len() {
            return None;
        }
        let preview = Preview::new(group, word);
        let mut read = slots.cursor_in_group(plan.position, word);
        let mut rewriter = Rewriter::new(slots, &preview, OCCUPIED);
        walk::shift_in(&mut read, &mut rewriter, &plan);
        rewriter.finish();
        // Release: publishes the new element with the group. Acquire on failure: the caller may
        // plan again on the word it returns, so it must see what that word's writer published.
        match slots.compare_exchange_group(
            group,
            word,
            preview.result(),
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.cap.count_insert(&self.len);
                Some(Ok(Ok(true)))
            }
            Err(actual) => Some(Err(Lost {
                actual,
                left,
                end: plan.end,
            })),
        }
    }

    /// Answers from the group of the canonical slot alone, if it can (locks read as empty).
    #[inline]
    pub(super) fn contains_in_group(&self, quotient: usize, remainder: u64) -> Option<bool> {
        let slots = &self.table.slots;
        let (group, _) = slots.layout().locate(quotient);
        // Acquire: pairs with the Release of the writer that published the group.
        let word = slots.load_group(group, Ordering::Acquire);
        let mut cursor = slots.cursor_in_group(quotient, word);
        walk::lookup(&mut cursor, quotient, remainder).map(|(found, _)| found)
    }
}

/// A fast-path insert whose CAS lost: the group as it is now, and the slots the insert read.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Lost {
    pub(super) actual: u64,
    pub(super) left: usize,
    pub(super) end: usize,
}
