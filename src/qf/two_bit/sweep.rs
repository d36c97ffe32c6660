//! Reading every stored fingerprint of a `TwoBitQf` while other threads write: one supercluster
//! at a time under its left lock (paper 000 §3.2, the 2-status-bit filter's locking, as the
//! module doc of `two_bit` describes it), left to right, for the `&self` snapshot and the merge
//! (`merge.rs`). The 3-status-bit filter's sweep (`locally_locked::sweep`) does the same with
//! clusters and read locks.
//!
//! # Why nothing stored is missed
//!
//! The sweep keeps a position `next` and the claim that every fingerprint stored when it began,
//! and not removed since, whose canonical slot lies before `next` has been read. Take such a
//! fingerprint with canonical slot `c >= next`. While it is stored, slot `c` is filled (its run
//! starts at or after `c`, and the slots between are filled), and every group load is a
//! consistent piece of the table, so the search for the first filled slot from `next` stops at
//! some `o <= c`. The sweep locks the empty slot `L` left of the supercluster holding `o` (the
//! lock every locked operation on that supercluster takes) and reads from `L + 1` to the first
//! slot `e` that is not filled. While `L` is held nobody changes that stretch except to grow it
//! at its end (module doc of `two_bit`, "Why the locked stretch is stable"), so it is one whole
//! supercluster and decodes on its own. If `e > c`, slot `c` lies in it, and so does the run of
//! `c`: the fingerprint is read. Otherwise `next` moves to `e` if that is further, and the claim
//! holds for `next..e` too. The supercluster may end before `o`: between the search and the
//! lock, a removal may have split it; then `next` may stay where it is and the search runs
//! again (each round either moves `next` on or follows a writer's change). Elements shifted
//! right across `next` after their supercluster was read are read again (the fingerprints are
//! deduplicated at the end); elements never move left of their canonical slot, so none moves
//! from the unread part into the read one.
//!
//! The result is not the table of one instant: fingerprints inserted or removed during the
//! sweep may or may not be in it.
//!
//! # No deadlock
//!
//! The sweep holds at most one lock, which it takes as a locked query does (waiting only while
//! it holds nothing), and while it holds it, it only reads.

use super::table::{self, TwoBitTable};
use super::{walk, TwoBitQf};
use crate::filter::Error;
use crate::hash::Fingerprint;
use crate::sync::Ordering;

impl TwoBitQf {
    /// A copy of the filter, taken while other threads keep working: a `TwoBitQf` of the same
    /// shape holding every fingerprint stored before the call and not removed during it.
    /// Fingerprints inserted or removed meanwhile may or may not be in it; it is not the table
    /// of one instant (crate docs, "Consistency"). The copy is read one supercluster at a time
    /// under the lock a locked query takes, so the locked writers of that supercluster (and
    /// inserts into the one on its left, whose right lock it is) wait for the read of it,
    /// nobody else does. Persist a live filter with `filter.snapshot()?.to_bytes()`;
    /// [`to_bytes`](Self::to_bytes) copies the table exactly but needs `&mut self`.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let filter = TwoBitQf::new(10_000, 0.001)?;
    /// filter.insert(&"apple")?;
    /// let mut copy = std::thread::scope(|s| {
    ///     s.spawn(|| filter.insert(&"pear")); // may or may not be in the copy
    ///     filter.snapshot()
    /// })?;
    /// let back = TwoBitQf::from_bytes(&copy.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] if what the read collected does not fit the table's slots: only when
    /// writers inserted and removed so many keys during it, near a full table, that more were
    /// read than the table ever held at once. Another try may succeed.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn snapshot(&self) -> Result<TwoBitQf, Error> {
        let fingerprints = self.swept_fingerprints();
        let mut copy = TwoBitTable::with_bits(self.table.quotient_bits, self.table.remainder_bits)?;
        let stored = table::build_sorted(&mut copy.slots, fingerprints)?;
        Ok(TwoBitQf::from_table(copy, stored))
    }

    /// The sorted, distinct fingerprints stored when the call began and not removed during it,
    /// and perhaps some inserted or removed meanwhile (module doc).
    pub(super) fn swept_fingerprints(&self) -> Vec<Fingerprint> {
        let slots = &self.table.slots;
        let expected = self.len.sum();
        let mut fingerprints = Vec::with_capacity(expected + expected / 16 + 64);
        let mut next = table::GUARD;
        while next < slots.len() {
            // Acquire: pairs with the Release of the writers that published the groups, so a
            // filled slot seen here is the element they wrote.
            let mut search = slots.cursor(next, Ordering::Acquire);
            let Some(filled) = walk::seek_filled(&mut search) else {
                break;
            };
            let left = self.lock_left(filled);
            if left == filled {
                // A removal emptied the slot meanwhile: search again from `next`.
                self.unlock(left);
                continue;
            }
            // Acquire: reads of the locked stretch, as in `locked_query`; the lock's Acquire
            // already ordered the last writer's stores before them.
            let mut cursor = slots.cursor(left + 1, Ordering::Acquire);
            let end = walk::seek_empty(&mut cursor).expect("the last slot is never filled");
            fingerprints.extend(self.table.fingerprints_in(left + 1, end, Ordering::Acquire));
            self.unlock(left);
            next = next.max(end);
        }
        fingerprints.sort_unstable();
        fingerprints.dedup();
        fingerprints
    }
}
