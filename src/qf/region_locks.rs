//! Region locks taken in ascending order: the locking discipline shared by
//! [`ExternallyLockedQf`](crate::ExternallyLockedQf) (paper 000 §3 and §5, the external lock
//! array) and [`CountingQf`](crate::CountingQf) (Pandey et al.'s multi-threaded CQF, one lock per
//! region of blocks).
//!
//! Both filters keep an array of spin locks beside the table, one per region of consecutive
//! slots or blocks. An operation locks the region it starts in, walks, and if the walk read
//! outside the regions it holds it takes more and walks again. This module holds that part once:
//!
//! * [`RegionLock`]: one lock of the array, acquired with backoff ([`Waiter`]). Each filter
//!   chooses the lock word: a plain [`AtomicBool`] for the external array (one byte per lock, as
//!   in the paper), a seqlock version on its own cache line for `CountingQf`.
//! * [`Held`]: the contiguous range `first..=last` of regions a thread holds, grown to the right
//!   while held, re-taken from the lowest region when it must grow to the left, released on
//!   drop.
//!
//! # Why ascending order cannot deadlock
//!
//! A thread waits for a lock only while every lock it holds belongs to a lower region (growing
//! right: the new regions are all after the held ones) or while it holds none (the first lock,
//! and growing left, which releases everything and locks again from the lowest region up). So in
//! every chain "thread A waits for a region held by thread B" the regions strictly increase, and
//! a chain over finitely many regions cannot close into a cycle.
//!
//! # What the orderings guarantee
//!
//! Acquiring a lock is an `Acquire` read-modify-write and releasing it a `Release` store (see
//! each [`RegionLock`] implementation): everything a region's previous holder wrote before
//! releasing it happens before the next holder's reads. With all regions an operation reads
//! held at once (two-phase locking), its accesses to the table can be `Relaxed`.

use crate::sync::{AtomicBool, Ordering, Waiter};

/// One lock of a region-lock array.
pub(crate) trait RegionLock {
    /// Spins, with backoff, until this thread holds the lock. Must acquire (`Acquire` or
    /// stronger) so the previous holder's writes are visible.
    fn lock(&self);
    /// Releases the lock. Must release (`Release` or stronger) so this holder's writes are
    /// visible to the next one.
    fn unlock(&self);
    /// Whether some thread holds the lock (for invariant checks while no thread works).
    fn is_locked(&self) -> bool;
}

/// The plain spin lock of an external lock array: `true` while held.
impl RegionLock for AtomicBool {
    /// Test-and-test-and-set.
    #[inline]
    fn lock(&self) {
        let waiter = Waiter::new();
        // Acquire on success: everything the previous holder wrote before its Release unlock
        // happens before our reads of the region. Relaxed on failure: nothing read is used.
        // (A CAS rather than a swap: a failed CAS writes nothing, so waiting threads do not
        // bounce the line with stores, and loom can tell that they wait.)
        while self
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Relaxed: only a hint that the lock may be free; the CAS acquires it.
            while self.load(Ordering::Relaxed) {
                waiter.wait();
            }
        }
    }

    #[inline]
    fn unlock(&self) {
        // Release: publishes our table writes in the region to its next holder.
        self.store(false, Ordering::Release);
    }

    fn is_locked(&self) -> bool {
        // Acquire: pairs with the last holder's Release, so a later scan sees its writes.
        self.load(Ordering::Acquire)
    }
}

/// `Err` naming the first region of `locks` that is still locked.
pub(crate) fn check_unlocked<L: RegionLock>(locks: &[L]) -> Result<(), String> {
    match locks.iter().position(RegionLock::is_locked) {
        Some(region) => Err(format!("region {region} is still locked")),
        None => Ok(()),
    }
}

/// The regions `first..=last` of a lock array, all locked by this thread; unlocked on drop.
pub(crate) struct Held<'a, L: RegionLock> {
    locks: &'a [L],
    first: usize,
    last: usize,
}

impl<'a, L: RegionLock> Held<'a, L> {
    /// Locks `first..=last` (`first <= last < locks.len()`) in ascending order.
    #[inline]
    pub(crate) fn lock(locks: &'a [L], first: usize, last: usize) -> Self {
        debug_assert!(first <= last && last < locks.len());
        lock_range(locks, first, last);
        Held { locks, first, last }
    }

    /// Whether the regions `first..=last` are all held.
    #[inline]
    pub(crate) fn holds(&self, first: usize, last: usize) -> bool {
        first >= self.first && last <= self.last
    }

    /// Holds `first.min(self.first)..=last.max(self.last)`, locking in ascending order: regions
    /// after the held ones are added while holding them (they are all lower); for regions before
    /// them, everything is released first and locked again from the lowest. After a left
    /// extension nothing read before it is stable any more.
    #[inline]
    pub(crate) fn extend(&mut self, first: usize, last: usize) {
        let last = last.min(self.locks.len() - 1).max(self.last);
        if first < self.first {
            self.release();
            self.first = first;
            lock_range(self.locks, first, last);
        } else if last > self.last {
            lock_range(self.locks, self.last + 1, last);
        }
        self.last = last;
    }

    /// Holds one more region on each side (as far as there are any): what a walk that read an
    /// inconsistent stretch outside the held regions asks for. `false`, holding nothing more, if
    /// every region is already held.
    #[inline]
    pub(crate) fn widen(&mut self) -> bool {
        if self.first == 0 && self.last == self.locks.len() - 1 {
            return false;
        }
        self.extend(self.first.saturating_sub(1), self.last + 1);
        true
    }

    /// The held regions, `(first, last)`.
    #[inline]
    pub(crate) fn range(&self) -> (usize, usize) {
        (self.first, self.last)
    }

    /// Whether every region is held.
    #[inline]
    pub(crate) fn holds_all(&self) -> bool {
        self.first == 0 && self.last == self.locks.len() - 1
    }

    fn release(&self) {
        for lock in &self.locks[self.first..=self.last] {
            lock.unlock();
        }
    }
}

impl<L: RegionLock> Drop for Held<'_, L> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Locks `first..=last` in ascending order.
#[inline]
fn lock_range<L: RegionLock>(locks: &[L], first: usize, last: usize) {
    #[cfg(all(test, not(loom)))]
    tests::record_locks(first..=last);
    for lock in &locks[first..=last] {
        lock.lock();
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::*;

    thread_local! {
        /// The regions this thread has locked since [`locked_regions`] last cleared the list.
        static LOCKED: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Called with the regions a [`Held`] is about to lock, in order, in unit tests.
    pub(super) fn record_locks(regions: std::ops::RangeInclusive<usize>) {
        LOCKED.with(|locked| locked.borrow_mut().extend(regions));
    }

    /// Runs `op` on this thread and returns the regions it locked, in the order it locked them
    /// (with repeats), and its answer.
    pub(crate) fn lock_sequence<T>(op: impl FnOnce() -> T) -> (Vec<usize>, T) {
        LOCKED.with(|locked| locked.borrow_mut().clear());
        let answer = op();
        let regions = LOCKED.with(|locked| std::mem::take(&mut *locked.borrow_mut()));
        (regions, answer)
    }

    /// As [`lock_sequence`], with the regions sorted and each listed once: a deterministic check
    /// of which regions an operation serialises on.
    pub(crate) fn locked_regions<T>(op: impl FnOnce() -> T) -> (Vec<usize>, T) {
        let (mut regions, answer) = lock_sequence(op);
        regions.sort_unstable();
        regions.dedup();
        (regions, answer)
    }

    fn locks(n: usize) -> Vec<AtomicBool> {
        (0..n).map(|_| AtomicBool::new(false)).collect()
    }

    fn locked(locks: &[AtomicBool]) -> Vec<usize> {
        (0..locks.len()).filter(|&r| locks[r].is_locked()).collect()
    }

    #[test]
    fn extend_right_locks_only_the_new_regions() {
        let locks = locks(6);
        let (order, ()) = lock_sequence(|| {
            let mut held = Held::lock(&locks, 2, 2);
            held.extend(2, 4);
            assert_eq!((held.first, held.last), (2, 4));
            assert_eq!(locked(&locks), vec![2, 3, 4]);
            // Nothing new to take: no lock is touched.
            held.extend(3, 4);
            std::mem::forget(held);
        });
        assert_eq!(order, vec![2, 3, 4]);
    }

    #[test]
    fn extend_left_relocks_from_the_lowest() {
        let locks = locks(6);
        let (order, ()) = lock_sequence(|| {
            let mut held = Held::lock(&locks, 3, 4);
            held.extend(1, 3);
            assert_eq!((held.first, held.last), (1, 4));
            assert_eq!(locked(&locks), vec![1, 2, 3, 4]);
            std::mem::forget(held);
        });
        // Released 3 and 4, then ascending from 1: never a lower lock taken while holding a
        // higher one.
        assert_eq!(order, vec![3, 4, 1, 2, 3, 4]);
    }

    #[test]
    fn extend_stops_at_the_last_region() {
        let locks = locks(3);
        let mut held = Held::lock(&locks, 1, 1);
        held.extend(1, 7);
        assert_eq!((held.first, held.last), (1, 2));
        assert!(!held.holds_all());
        assert!(held.holds(1, 2) && !held.holds(0, 2));
    }

    #[test]
    fn widen_takes_a_region_on_each_side_until_all_are_held() {
        let locks = locks(4);
        let mut held = Held::lock(&locks, 1, 1);
        assert!(held.widen());
        assert_eq!((held.first, held.last), (0, 2));
        assert!(held.widen());
        assert_eq!((held.first, held.last), (0, 3));
        assert!(held.holds_all());
        assert!(!held.widen());
        assert_eq!(locked(&locks), vec![0, 1, 2, 3]);
    }

    #[test]
    fn drop_releases_every_held_region() {
        let locks = locks(5);
        {
            let mut held = Held::lock(&locks, 2, 3);
            held.extend(0, 4);
            assert_eq!(
                check_unlocked(&locks),
                Err("region 0 is still locked".into())
            );
        }
        assert_eq!(locked(&locks), Vec::<usize>::new());
        assert_eq!(check_unlocked(&locks), Ok(()));
        // The regions can be taken again.
        let held = Held::lock(&locks, 0, 4);
        assert!(held.holds_all());
    }

    #[test]
    fn a_held_region_blocks_other_threads_until_released() {
        let locks = locks(2);
        let entered = AtomicBool::new(false);
        std::thread::scope(|s| {
            let held = Held::lock(&locks, 0, 1);
            let waiter = s.spawn(|| {
                let _held = Held::lock(&locks, 1, 1);
                entered.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!entered.load(Ordering::SeqCst));
            drop(held);
            waiter.join().unwrap();
        });
        assert!(entered.load(Ordering::SeqCst));
        assert_eq!(check_unlocked(&locks), Ok(()));
    }
}
