//! The region locks of `CountingQf`, as in Pandey et al.'s multi-threaded counting quotient
//! filter: one spin lock per region of a few blocks, in an array beside the table.
//!
//! # Protocol
//!
//! An operation on quotient `Q` locks the region of `Q`'s block and runs its walk (`runs`)
//! through a [`View`] that records the lowest and highest block it touched. If those all lie in
//! held regions, everything it read is stable and it may write (a write touches only blocks its
//! plan touched). Otherwise it discards what it read and locks more:
//!
//! * regions after the held ones: locked in ascending order while holding the ones it has;
//! * regions before them (an offset of 255 or more sends the lookup one block back): it releases
//!   everything and locks from the lowest one up, in ascending order.
//!
//! A walk that reads an inconsistent table (a concurrent writer in a region it does not hold)
//! widens the held range by a region on each side and walks again.
//!
//! **No deadlock**: a thread waits for a lock only while it holds none, or only lower ones, so
//! every chain of waits goes up and ends. **Linearizable**: two-phase locking; every operation
//! reads and writes only blocks of regions it holds, all held at once. Readers lock too: without
//! the lock a query could compute a rank before and a select after a concurrent shift (paper 000
//! §3 explains why that breaks).
//!
//! # Memory orderings
//!
//! Locking is an `Acquire` compare-and-exchange and unlocking a `Release` store, so everything
//! the last holder of a region wrote happens before the next holder reads it; table accesses are
//! `Relaxed` (see `blocks`).

use super::blocks::{Blocks, View};
use crate::sync::{AtomicBool, Ordering, Waiter};

/// One spin lock per `2^shift` blocks.
pub(crate) struct RegionLocks {
    locks: Box<[AtomicBool]>,
    shift: u32,
}

impl RegionLocks {
    /// Locks for `blocks` blocks, `region_blocks >= 1` (rounded up to a power of two) per lock.
    pub(crate) fn new(blocks: usize, region_blocks: usize) -> Self {
        let region_blocks = region_blocks.clamp(1, blocks.max(1)).next_power_of_two();
        let shift = region_blocks.trailing_zeros();
        let regions = ((blocks.max(1) - 1) >> shift) + 1;
        RegionLocks {
            locks: (0..regions).map(|_| AtomicBool::new(false)).collect(),
            shift,
        }
    }

    /// Blocks per region.
    pub(crate) fn region_blocks(&self) -> usize {
        1 << self.shift
    }

    /// Heap bytes of the lock array.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.locks.len() * std::mem::size_of::<AtomicBool>()
    }

    /// `Err` naming a region that is still locked.
    pub(crate) fn check_unlocked(&self) -> Result<(), String> {
        for (region, lock) in self.locks.iter().enumerate() {
            // Acquire: pairs with the last holder's Release, so a later scan sees its writes.
            if lock.load(Ordering::Acquire) {
                return Err(format!("region {region} is still locked"));
            }
        }
        Ok(())
    }

    #[inline]
    fn region_of(&self, block: usize) -> usize {
        block >> self.shift
    }

    /// Spins until this thread holds `region` (test and test-and-set).
    #[inline]
    fn lock(&self, region: usize) {
        let lock = &self.locks[region];
        let waiter = Waiter::new();
        // Acquire on success: the previous holder's writes (before its Release unlock) happen
        // before ours. Relaxed on failure: nothing read is used.
        while lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Relaxed: only a hint that the lock may be free; the CAS acquires it.
            while lock.load(Ordering::Relaxed) {
                waiter.wait();
            }
        }
    }

    #[inline]
    fn unlock(&self, region: usize) {
        // Release: publishes our writes in the region to its next holder.
        self.locks[region].store(false, Ordering::Release);
    }

    /// Runs `op` under the lock of `block`'s region, and of more regions until `op` answers
    /// `Some` (see the module doc); `None` only if `op` fails with every region held, i.e. the
    /// table is corrupt.
    #[inline]
    pub(crate) fn run<T>(
        &self,
        table: &Blocks,
        block: usize,
        mut op: impl FnMut(&View<'_>, &Held<'_>) -> Option<T>,
    ) -> Option<T> {
        let region = self.region_of(block);
        let mut held = Held::lock(self, region, region);
        loop {
            let view = View::new(table);
            if let Some(answer) = op(&view, &held) {
                return Some(answer);
            }
            let last = self.locks.len() - 1;
            match view.reach() {
                Some((low, high)) if !held.covers(&view) => {
                    held.extend(self.region_of(low), self.region_of(high).min(last));
                }
                _ if held.first == 0 && held.last == last => return None,
                _ => held.extend(held.first.saturating_sub(1), (held.last + 1).min(last)),
            }
        }
    }
}

/// The regions `first..=last`, all locked by this thread; unlocked on drop.
pub(crate) struct Held<'a> {
    locks: &'a RegionLocks,
    first: usize,
    last: usize,
}

impl<'a> Held<'a> {
    fn lock(locks: &'a RegionLocks, first: usize, last: usize) -> Self {
        for region in first..=last {
            locks.lock(region);
        }
        Held { locks, first, last }
    }

    /// Holds `first.min(self.first)..=last.max(self.last)`, locking in ascending order.
    fn extend(&mut self, first: usize, last: usize) {
        let last = last.max(self.last);
        if first < self.first {
            self.release();
            self.first = first;
            for region in first..=last {
                self.locks.lock(region);
            }
        } else {
            for region in self.last + 1..=last {
                self.locks.lock(region);
            }
        }
        self.last = last;
    }

    fn release(&self) {
        for region in self.first..=self.last {
            self.locks.unlock(region);
        }
    }

    /// Whether every block `view` touched lies in a held region.
    #[inline]
    pub(crate) fn covers(&self, view: &View<'_>) -> bool {
        match view.reach() {
            Some((low, high)) => {
                self.locks.region_of(low) >= self.first && self.locks.region_of(high) <= self.last
            }
            None => true,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.release();
    }
}
