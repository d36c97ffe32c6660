//! Reading every stored fingerprint of a `LocallyLockedQf` while other threads write: one
//! cluster at a time under its start's read lock (paper 000 §3.2, Blocks G-I, the locked
//! query's lock), left to right, for the merge (paper 004 §IV-E) and the snapshot through
//! `&self`.
//!
//! # Why nothing stored is missed
//!
//! The sweep keeps a position `next` and the claim that every fingerprint stored when it began,
//! and not removed since, whose canonical slot lies before `next` has been read. Take such a
//! fingerprint with canonical slot `c >= next`. While it is stored, slot `c` holds an element
//! (its run starts at or after `c`, and the slots between are filled; a shift only fills
//! slots, and a removal empties only the last slot of its stretch), and every group load is a
//! consistent piece of the table (module doc of `locally_locked`), so the search for the first
//! filled slot from `next` stops at some `o <= c`. The sweep walks back from `o` and read-locks
//! the cluster start `s <= o` it finds, then reads the cluster `s..=e`. While the lock is held
//! nobody changes the slots of that cluster (other lanes of its groups may change), and slot
//! `e + 1` stays unshifted (a shifted element there would belong to the cluster), so `e` is
//! found exactly. If `e >= c`, slot `c` lies in the cluster, and so does the run of `c`: the
//! fingerprint is read. Otherwise `next` moves to `e + 1` if that is further, and the claim
//! holds for the fingerprints of `next..=e` too. The cluster may end before `o`: while the
//! sweep waited at `s`, a removal may have split it; then `next` may stay where it is and the
//! search runs again (each round either moves `next` on or follows a writer's change, so the
//! sweep ends once writers leave the stretch alone). Elements shifted right across `next`
//! after their cluster was read are read again (the keys are deduplicated at the end);
//! elements never move left of their canonical slot, so none moves from the unread part into
//! the read one.
//!
//! The result is not the table of one instant: fingerprints inserted or removed during the
//! sweep may or may not be in it.
//!
//! # No deadlock
//!
//! The sweep holds at most one read lock, and waits (for a read lock, in `lock_cluster_start`)
//! only while it holds none, as a query does; while it holds one, it only reads.

use super::LocallyLockedQf;
use crate::batch::{self, BuildMethod};
use crate::filter::Error;
use crate::qf::scan::Fingerprints;
use crate::qf::sequential::SequentialQf;
use crate::qf::walk;
use crate::sync::Ordering;

impl LocallyLockedQf {
    /// A copy of the filter, taken while other threads keep working: a [`SequentialQf`] of the
    /// same shape (quotient and remainder bits, slots) holding every fingerprint stored before
    /// the call and not removed during it. Fingerprints inserted or removed meanwhile may or
    /// may not be in it; it is not the table of one instant (the merge's read, see
    /// [`Merge`](crate::Merge)). Copies of a fingerprint (from a bulk build with
    /// [`Dedupe::Off`](crate::Dedupe::Off)) are kept once. Persist a live filter with
    /// `filter.snapshot()?.to_bytes()`, which [`from_bytes`](Self::from_bytes) reads back;
    /// [`to_bytes`](Self::to_bytes) copies the table exactly but needs `&mut self`.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let filter = LocallyLockedQf::new(10_000, 0.001)?;
    /// filter.insert(&"apple")?;
    /// let copy = std::thread::scope(|s| {
    ///     s.spawn(|| filter.insert(&"pear")); // may or may not be in the copy
    ///     filter.snapshot()
    /// })?;
    /// let back = LocallyLockedQf::from_bytes(&copy.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] if what the read collected does not fit the table's shape: only when
    /// writers inserted and removed so many keys during it, near a full table, that more were
    /// read than the table ever held at once. Another try may succeed. [`Error::OutOfMemory`]
    /// if the copy's table cannot be allocated.
    pub fn snapshot(&self) -> Result<SequentialQf, Error> {
        let keys = self.swept_keys();
        let table = &self.table;
        let (table, len) = batch::build_table_uncapped(
            table.quotient_bits,
            table.remainder_bits,
            table.slots.len(),
            keys,
            BuildMethod::default(),
        )?;
        Ok(SequentialQf { table, len })
    }

    /// The sorted, distinct fingerprint keys (`quotient << r | remainder`) of every fingerprint
    /// stored when the call began and not removed during it, and perhaps of some inserted or
    /// removed meanwhile (module doc).
    pub(super) fn swept_keys(&self) -> Vec<u64> {
        let slots = &self.table.slots;
        let r = self.table.remainder_bits;
        let expected = self.len.sum();
        let mut keys = Vec::with_capacity(expected + expected / 16 + 64);
        let mut next = 0;
        while next < slots.len() {
            // Acquire: pairs with the Release of the writers that published the groups, so a
            // filled slot seen here is the element they wrote.
            let mut search = slots.cursor(next, Ordering::Acquire);
            let Some(filled) = walk::seek_filled(&mut search) else {
                break;
            };
            let Some(start) = self.lock_cluster_start(filled) else {
                // A removal emptied the slot meanwhile: search again from `next`.
                continue;
            };
            // Acquire: reads of the locked cluster, as in `locked_query`; the lock's Acquire
            // already ordered the last writer's stores before them.
            let mut cursor = slots.cursor(start, Ordering::Acquire);
            let end = walk::cluster_end(&mut cursor).expect("the last slot is always empty");
            keys.extend(
                Fingerprints::range(slots, start, end + 1, Ordering::Acquire)
                    .map(|f| (f.quotient << r) | f.remainder),
            );
            self.unlock_read(start);
            next = next.max(end + 1);
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}
