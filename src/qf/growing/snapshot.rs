//! A copy of a `GrowableQf` taken through `&self` while other threads insert, remove and grow
//! it: the current table read by the locally locked filter's cluster-by-cluster sweep
//! ([`LocallyLockedQf::snapshot`](crate::LocallyLockedQf::snapshot)), with the growth state
//! of that table (paper 000 §2.1 and §3.2).
//!
//! # Why nothing stored is missed
//!
//! The snapshot reads the generation that is current when it starts, whether or not a
//! migration out of it is under way, and its guard keeps that generation alive to the end. An
//! operation that returned before the call acted on this generation or on an earlier one: it
//! loaded its generation as current (Acquire) before it returned, so the snapshot's later load
//! of `current` reads that generation or a newer one. An earlier one's effect was copied into
//! this one: a generation becomes current only once the migration into it is complete, and the
//! migration copies every operation that finished on the old table (module doc of
//! `migration`). A migration that is under way, or starts during the sweep, only adds migration
//! locks to empty slots, which the sweep reads as the empty slots they lock (as every lock-free
//! walk does); no element of the old table moves or vanishes because of it. So the sweep's
//! argument (module doc of `locally_locked::sweep`) holds unchanged: every fingerprint stored
//! when the snapshot began and not removed since is read. Keys inserted into the doubled table
//! meanwhile are not in the copy, which the contract allows.
//!
//! # No deadlock
//!
//! A migration never waits for read locks: it waits only for the write locks on the ends of the
//! superclusters it freezes, and the sweep holds one read lock at a time, as a query does.

use super::{reclaim, GrowableQf};
use crate::filter::Error;

impl GrowableQf {
    /// A copy of the filter, taken while other threads keep inserting, removing and growing
    /// it: its current table as a [`LocallyLockedQf::snapshot`](crate::LocallyLockedQf::snapshot)
    /// reads it, with the same growth state (doublings done and left, `delta_grow`, migration
    /// block size). It holds every key stored before the call and not removed during it; keys
    /// inserted or removed meanwhile may or may not be in it (crate docs, "Consistency"). The
    /// call only reads: a doubling under way goes on beside it, and the copy is of the table
    /// being doubled, with that table's growth state, so the copy doubles the way the original
    /// did (once a sampled insert finds the fill at `delta_grow`, or an insert finds the table
    /// full). A doubling that failed (memory) is tried again by the copy.
    ///
    /// Persist a live filter with `filter.snapshot()?.to_bytes()`. The copy owns its memory
    /// (as much as the current table); the call keeps the current table alive until it returns,
    /// even if a doubling replaces it meanwhile.
    ///
    /// ```
    /// use conqf::{Filter, GrowableQf, LocallyLockedQf};
    /// let filter = LocallyLockedQf::growable(100, 0.01).build()?;
    /// for k in 0..500u64 {
    ///     filter.insert(&k)?;
    /// }
    /// let mut copy = std::thread::scope(|s| {
    ///     s.spawn(|| (500..1000u64).for_each(|k| drop(filter.insert(&k)))); // may be in it
    ///     filter.snapshot()
    /// })?;
    /// let back = GrowableQf::from_bytes(&copy.to_bytes())?;
    /// assert!((0..500u64).all(|k| back.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`LocallyLockedQf::snapshot`](crate::LocallyLockedQf::snapshot): [`Error::Full`]
    /// only if writers churned so much near a full table that more was read than it ever held;
    /// [`Error::OutOfMemory`] if the copy's table cannot be allocated.
    pub fn snapshot(&self) -> Result<GrowableQf, Error> {
        let guard = reclaim::pin();
        let generation = self.generation(&guard);
        let table = generation.filter.snapshot()?;
        Ok(GrowableQf::from_parts(
            table,
            self.delta_grow,
            generation.doublings_done,
            generation.doublings_left,
            self.block_slots,
        ))
    }
}
