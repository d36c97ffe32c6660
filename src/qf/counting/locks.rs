//! The region locks of `CountingQf`, as in Pandey et al.'s multi-threaded counting quotient
//! filter: one lock per region of a few blocks, in an array beside the table, plus optimistic
//! (seqlock) reads.
//!
//! Each region has its own cache line holding a version word and the region's share of the
//! filter's counts (copies and distinct fingerprints). The version is even while the region is
//! free; a writer locks it by raising it to the next odd value and unlocks by raising it to the
//! next even one.
//!
//! # Writers
//!
//! An operation on quotient `Q` locks the region of `Q`'s block. A change that stays inside
//! that block (the common insert or removal in a table that is not crowded) it makes at once,
//! reading and writing that block alone (`update::update_in_block`). Any other change runs its walk
//! (`runs`) through a [`View`] that records the lowest and highest block it touched outside the
//! held regions. If it touched none, everything it read is stable and it may write (a write
//! touches only blocks its plan touched). Otherwise it discards what it read and locks more:
//!
//! * regions after the held ones: locked in ascending order while holding the ones it has;
//! * regions before them (an offset of 255 or more sends the lookup one block back): it releases
//!   everything and locks from the lowest one up, in ascending order.
//!
//! A walk that reads an inconsistent table (a concurrent writer in a region it does not hold)
//! widens the held range by a region on each side and walks again.
//!
//! **No deadlock**: a thread waits for a lock only while it holds none, or only lower ones, so
//! every chain of waits goes up and ends. The held-range bookkeeping and the ascending-order
//! rules are the shared [`region_locks`] module's; this file adds the seqlock version, the
//! per-region counts and the cache-line padding. **Linearizable**: two-phase locking; every
//! operation reads and writes only blocks of regions it holds, all held at once.
//!
//! # Readers
//!
//! A query reads the version of its region (waiting while it is odd), walks without locking,
//! and accepts the answer only if the walk stayed inside that region and the version is still
//! the same afterwards (a seqlock). Otherwise it tries again, and after a few failed tries, or
//! when the walk leaves the region, it locks like a writer. Queries therefore write no shared
//! memory, and a query never waits for a writer of another region. A lookup that can answer from
//! its quotient's block alone (or with the next block, when that is in the same region) makes
//! its first try through [`RegionLocks::read_in_block`], the same check inlined into the caller,
//! and only falls back to [`RegionLocks::read`].
//!
//! # Memory orderings
//!
//! * Locking is an `Acquire` compare-and-exchange followed by a `Release` fence, unlocking a
//!   `Release` store. The lock's `Acquire` orders the previous holder's writes before ours; the
//!   fence orders our lock before every table write that follows, which is what a reader's check
//!   relies on.
//! * A reader loads the version with `Acquire` (it then sees everything the last writer wrote),
//!   reads the table `Relaxed`, then issues an `Acquire` fence and loads the version again. If it
//!   read any value a later writer stored, that writer's `Release` fence synchronises with the
//!   reader's fence, so the writer's lock happens before the second load, which then sees a
//!   newer version and the reader retries (Boehm, "Can seqlocks get along with programming
//!   language memory models?", 2012).
//! * Table accesses are `Relaxed` (see `blocks`); the per-region counts are written `Relaxed`
//!   under the lock, and read like the table, through the region's seqlock (a region's copies
//!   take two words, which a reader must not take from two different updates); `len` is a
//!   statistic that may lag.

use super::blocks::{Blocks, View};
use crate::filter::Error;
use crate::qf::region_locks::{self, RegionLock};
use crate::sync::{fence, AtomicU64, Ordering, Waiter};

/// Optimistic tries of a query before it locks.
const OPTIMISTIC_TRIES: usize = 4;

/// One region's lock and counts, alone on a cache line so regions do not share lines.
#[repr(align(64))]
struct Region {
    /// Even: free; odd: held by a writer.
    version: AtomicU64,
    /// Copies stored by operations on quotients of this region: the low 64 bits of a 128-bit
    /// count (a region may hold several fingerprints of up to `u64::MAX` copies each).
    copies: AtomicU64,
    /// The high 64 bits of the copies.
    copies_high: AtomicU64,
    /// Distinct fingerprints of quotients of this region (wrapping).
    distinct: AtomicU64,
}

impl Region {
    /// The region's copies, as its holder (or a thread with the filter to itself) reads them.
    #[inline]
    fn held_copies(&self) -> u128 {
        // Relaxed: only the region's holder writes the counts, and this is the holder.
        let low = self.copies.load(Ordering::Relaxed);
        // Relaxed: as above.
        let high = self.copies_high.load(Ordering::Relaxed);
        u128::from(high) << 64 | u128::from(low)
    }

    /// Sets the region's copies; only its holder (or a thread with the filter to itself).
    #[inline]
    fn set_held_copies(&self, copies: u128) {
        // Relaxed: only the holder writes; readers of both words go through the seqlock
        // (`RegionLocks::counts`), which the holder's unlock (Release) publishes them to.
        self.copies.store(copies as u64, Ordering::Relaxed);
        // Relaxed: as above.
        self.copies_high
            .store((copies >> 64) as u64, Ordering::Relaxed);
    }
}

impl RegionLock for Region {
    /// Raises the version from even to odd (test and test-and-set).
    #[inline]
    fn lock(&self) {
        let version = &self.version;
        let waiter = Waiter::new();
        loop {
            // Relaxed: only a hint; the CAS below acquires.
            let seen = version.load(Ordering::Relaxed);
            // Acquire on success: the previous holder's writes (before its Release unlock)
            // happen before ours. Relaxed on failure: nothing read is used.
            if seen & 1 == 0
                && version
                    .compare_exchange(seen, seen + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
            waiter.wait();
        }
        // Release fence: every table write after it is ordered after the odd version, so an
        // optimistic reader that sees such a write sees the odd (or a later) version too.
        fence(Ordering::Release);
    }

    /// Raises the version from odd to even.
    #[inline]
    fn unlock(&self) {
        // Relaxed: we hold the region, so nobody else changes its version.
        let held = self.version.load(Ordering::Relaxed);
        // Release: publishes our writes in the region to its next holder and to readers.
        self.version.store(held + 1, Ordering::Release);
    }

    fn is_locked(&self) -> bool {
        // Acquire: pairs with the last holder's Release, so a later scan sees its writes.
        self.version.load(Ordering::Acquire) & 1 == 1
    }
}

/// One lock per `2^shift` blocks.
pub(crate) struct RegionLocks {
    regions: Box<[Region]>,
    shift: u32,
}

impl RegionLocks {
    /// Locks for `blocks` blocks, `region_blocks >= 1` (rounded up to a power of two) per lock.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub(crate) fn new(blocks: usize, region_blocks: usize) -> Result<Self, Error> {
        let region_blocks = region_blocks.clamp(1, blocks.max(1)).next_power_of_two();
        let shift = region_blocks.trailing_zeros();
        let count = ((blocks.max(1) - 1) >> shift) + 1;
        Ok(RegionLocks {
            regions: crate::storage::try_boxed(count, || Region {
                version: AtomicU64::new(0),
                copies: AtomicU64::new(0),
                copies_high: AtomicU64::new(0),
                distinct: AtomicU64::new(0),
            })?,
            shift,
        })
    }

    /// Sets every region's counts of copies and fingerprints to 0, for a table just emptied
    /// (`&mut self`: no writer holds a region, so every version stays even).
    pub(crate) fn clear_counts(&mut self) {
        for region in self.regions.iter() {
            // Relaxed: `&mut self`; sharing the filter again orders this.
            region.copies.store(0, Ordering::Relaxed);
            region.copies_high.store(0, Ordering::Relaxed);
            region.distinct.store(0, Ordering::Relaxed);
        }
    }

    /// Runs `op` holding every region, locked in ascending order like any writer's: no writer
    /// changes the table meanwhile (they wait, and so do lookups that cannot validate an
    /// optimistic read). For reads of the whole table through `&self`, such as the extraction
    /// of a merge.
    pub(crate) fn with_all_held<T>(&self, op: impl FnOnce() -> T) -> T {
        // `new` makes at least one region.
        let _held = region_locks::Held::lock(&self.regions, 0, self.regions.len() - 1);
        op()
    }

    /// Blocks per region.
    pub(crate) fn region_blocks(&self) -> usize {
        1 << self.shift
    }

    /// Heap bytes of the lock array.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.regions.len() * std::mem::size_of::<Region>()
    }

    /// `Err` naming a region that is still locked.
    pub(crate) fn check_unlocked(&self) -> Result<(), String> {
        region_locks::check_unlocked(&self.regions)
    }

    /// The sums of the regions' copies (saturating at `u128::MAX`, which no table of up to
    /// `2^64` fingerprints of `u64::MAX` copies each reaches) and distinct counts.
    ///
    /// Each region's two words of copies are read through its seqlock, so a reader never pairs
    /// one update's low word with another's high word; after a few tries spoilt by writers it
    /// reads them under the region's lock.
    pub(crate) fn counts(&self) -> (u128, u64) {
        let mut copies = 0u128;
        let mut distinct = 0u64;
        for (index, region) in self.regions.iter().enumerate() {
            let read = || {
                // Relaxed: ordered by the seqlock's loads and fence (module doc).
                let low = region.copies.load(Ordering::Relaxed);
                // Relaxed: as above.
                let high = region.copies_high.load(Ordering::Relaxed);
                // Relaxed: as above.
                let fingerprints = region.distinct.load(Ordering::Relaxed);
                (u128::from(high) << 64 | u128::from(low), fingerprints)
            };
            let optimistic = (0..OPTIMISTIC_TRIES).find_map(|_| self.optimistic(index, read));
            let (region_copies, region_distinct) = optimistic.unwrap_or_else(|| {
                region.lock();
                let counts = read();
                region.unlock();
                counts
            });
            copies = copies.saturating_add(region_copies);
            distinct = distinct.wrapping_add(region_distinct);
        }
        (copies, distinct)
    }

    /// Records that a count in `block`'s region went from `old` to `new`. The caller holds the
    /// region, or has the filter to itself.
    #[inline]
    pub(crate) fn account(&self, block: usize, old: u64, new: u64) {
        let region = &self.regions[self.region_of(block)];
        // The region holds the `old` copies, so the difference never goes below 0.
        let copies = region.held_copies() - u128::from(old) + u128::from(new);
        region.set_held_copies(copies);
        let change = u64::from(new > 0).wrapping_sub(u64::from(old > 0));
        if change != 0 {
            // Relaxed: as above.
            let distinct = region.distinct.load(Ordering::Relaxed);
            region
                .distinct
                .store(distinct.wrapping_add(change), Ordering::Relaxed);
        }
    }

    /// Adds `copies` copies of `distinct` new fingerprints to `block`'s region (a bulk build
    /// filling an empty filter it has to itself).
    pub(crate) fn add(&self, block: usize, copies: u128, distinct: u64) {
        let region = &self.regions[self.region_of(block)];
        // The filter is not shared yet (publishing it orders these stores).
        region.set_held_copies(region.held_copies() + copies);
        // Relaxed: as above.
        region.distinct.fetch_add(distinct, Ordering::Relaxed);
    }

    #[inline]
    fn region_of(&self, block: usize) -> usize {
        block >> self.shift
    }

    /// A view of `table` whose window is the blocks of regions `first..=last`.
    #[inline]
    fn view<'t>(&self, table: &'t Blocks, first: usize, last: usize) -> View<'t> {
        View::window(table, first << self.shift, ((last + 1) << self.shift) - 1)
    }

    /// One optimistic (seqlock) run of the read-only `op` on region `region` (see the module
    /// doc): its result if no writer held or changed the region meanwhile, else `None`.
    #[inline(always)]
    fn optimistic<T>(&self, region: usize, op: impl FnOnce() -> T) -> Option<T> {
        let version = &self.regions[region].version;
        // Acquire: everything the last writer wrote before unlocking is visible.
        let before = version.load(Ordering::Acquire);
        if before & 1 == 1 {
            return None;
        }
        let answer = op();
        // Acquire fence: pairs with the Release fence of any writer whose table write `op`
        // read, making its lock visible to the load below.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        (version.load(Ordering::Relaxed) == before).then_some(answer)
    }

    /// Whether blocks `a` and `b` share a region (and so a lock and a version).
    #[inline]
    pub(crate) fn same_region(&self, a: usize, b: usize) -> bool {
        self.region_of(a) == self.region_of(b)
    }

    /// Runs the read-only `op`, which reads nothing outside block `block`'s region, once
    /// optimistically: its answer if it gave one and no writer held or changed the region
    /// meanwhile, else `None` (then [`read`](Self::read) answers). Inlined, so the lookup's
    /// common case is one function without a closure call or a reach to record.
    #[inline(always)]
    pub(crate) fn read_in_block<T>(
        &self,
        block: usize,
        op: impl FnOnce() -> Option<T>,
    ) -> Option<T> {
        self.optimistic(self.region_of(block), op)?
    }

    /// Runs the read-only `op` on `block`'s region: optimistically (see the module doc), or
    /// under locks. `None` only if `op` fails with every region held (a corrupt table).
    #[inline]
    pub(crate) fn read<T>(
        &self,
        table: &Blocks,
        block: usize,
        op: impl Fn(&View<'_>) -> Option<T>,
    ) -> Option<T> {
        let region = self.region_of(block);
        let waiter = Waiter::new();
        for _ in 0..OPTIMISTIC_TRIES {
            let view = self.view(table, region, region);
            let Some(answer) = self.optimistic(region, || op(&view)) else {
                waiter.wait(); // a writer held or changed the region
                continue;
            };
            if view.reach().is_some() {
                // The walk left the region.
                break;
            }
            if answer.is_some() {
                return answer;
            }
        }
        self.run(
            table,
            block,
            |_| None,
            |view, held| {
                let answer = op(view)?;
                held.covers(view).then_some(answer)
            },
        )
    }

    /// Runs `op` under the lock of `block`'s region, and of more regions until `op` answers
    /// `Some` (see the module doc); `None` only if `op` fails with every region held, i.e. the
    /// table is corrupt. First, holding just that region, it asks `in_block`, which may answer
    /// from block `block` alone (and must touch no other block): then no view is made and no
    /// other region considered. Otherwise `op`'s first call runs under the same hold, nothing
    /// released in between, so it sees the block as `in_block` left it.
    #[inline]
    pub(crate) fn run<T>(
        &self,
        table: &Blocks,
        block: usize,
        in_block: impl FnOnce(&Held<'_>) -> Option<T>,
        mut op: impl FnMut(&View<'_>, &Held<'_>) -> Option<T>,
    ) -> Option<T> {
        let region = self.region_of(block);
        let mut held = Held {
            locks: self,
            regions: region_locks::Held::lock(&self.regions, region, region),
        };
        if let Some(answer) = in_block(&held) {
            return Some(answer);
        }
        loop {
            let (first, last) = held.regions.range();
            let view = self.view(table, first, last);
            if let Some(answer) = op(&view, &held) {
                return Some(answer);
            }
            match view.reach() {
                Some((low, high)) if !held.covers(&view) => {
                    held.regions
                        .extend(self.region_of(low), self.region_of(high));
                }
                _ => {
                    if !held.regions.widen() {
                        return None;
                    }
                }
            }
        }
    }
}

/// The regions an operation holds (ascending-order locking, see [`region_locks`]), with the
/// lock array that maps blocks to them and keeps their counts.
pub(crate) struct Held<'a> {
    locks: &'a RegionLocks,
    regions: region_locks::Held<'a, Region>,
}

impl Held<'_> {
    /// Whether every block `view` touched lies in a held region.
    #[inline]
    pub(crate) fn covers(&self, view: &View<'_>) -> bool {
        match view.reach() {
            Some((low, high)) => {
                let (low, high) = (self.locks.region_of(low), self.locks.region_of(high));
                self.regions.holds(low, high)
            }
            None => true,
        }
    }

    /// Records a count change of a quotient in `block`, which must be in a held region.
    #[inline]
    pub(crate) fn account(&self, block: usize, old: u64, new: u64) {
        let region = self.locks.region_of(block);
        debug_assert!(self.regions.holds(region, region));
        self.locks.account(block, old, new);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `counts` of a region whose writer holds it for longer than the optimistic tries last:
    /// the reader gives up on them, waits for the region's lock and reads what the writer left
    /// (a count carried past `u64::MAX` into its high word), never what was there before. The
    /// loom models cannot spoil four tries, so this is the fallback's one test. The pause only
    /// lets the reader reach the fallback first (without it the reader may come after the
    /// writer and read optimistically); the answer is the same either way, and a fallback that
    /// read without the lock would return `(0, 0)` after the pause.
    #[test]
    fn counts_of_a_held_region_waits_for_its_writer() {
        let locks = RegionLocks::new(4, 1).unwrap();
        locks.regions[1].lock();
        std::thread::scope(|s| {
            let reader = s.spawn(|| locks.counts());
            std::thread::sleep(std::time::Duration::from_millis(50));
            // As a writer holding region 1: two fingerprints, `u64::MAX` copies and 5.
            locks.account(1, 0, u64::MAX);
            locks.account(1, 0, 5);
            locks.regions[1].unlock();
            assert_eq!(reader.join().unwrap(), (u128::from(u64::MAX) + 5, 2));
        });
    }
}
