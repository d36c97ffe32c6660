//! `GrowableQf`: a [`LocallyLockedQf`] that doubles itself concurrently when it fills up
//! (bounded growing, paper 000 §2.1, done concurrently as in §3.2 "Growing concurrently").
//!
//! # Protocol
//!
//! The filter points at its current *generation*: a `LocallyLockedQf` and its growth state.
//! When an insert finds the fill at `delta_grow`, it claims the growth, allocates the doubled
//! table (one remainder bit moves into the quotient, so no fingerprint changes) and publishes a
//! migration. From then on every thread that starts an insert or removal first helps: it claims
//! blocks of old slots (4096 by default) with one `fetch_add` and copies the superclusters that
//! start in them ([`migration`] says how, and why the copy is exact and needs no atomics in the
//! target). Inserts and removals already running on the old table either finish before the
//! migration locks their supercluster's end, and are copied, or meet a migration lock, give up
//! without having changed anything, help, and retry on the new table. When the last block is
//! done, any helper swings the filter to the new generation and retires the old one, which the
//! epoch collector frees once no operation can still read it ([`reclaim`]).
//!
//! Queries never help and never wait for the migration: the old table only loses nothing (the
//! migration adds locks to empty slots, which read as empty), and a key inserted into the new
//! table was inserted after the swap, so a query that starts later loads the new table. Every
//! table has `LocallyLockedQf`'s shift regions, so a query's miss over several groups stands
//! without the read lock when no locked shift of its region overlapped its walk: the migration
//! counts in no region, because it shifts nothing in the old table (it only locks empty slots)
//! and writes the new one before any query can load it; the operations on either table count
//! their locked shifts as in a fixed-size filter.
//!
//! What the fixed-size filter pays for this: nothing on its fast paths, and one compare in the
//! write-lock scan, which tells a migration lock (a write lock with a non-zero remainder) from an
//! ordinary one.

mod builder;
#[cfg(loom)]
pub mod loom_hooks;
mod merge;
mod migration;
mod reclaim;
mod snapshot;

use std::fmt;
use std::hash::Hash;

use crate::filter::{Error, Filter, Full, Remove};
use crate::hash::hash_key;
use crate::qf::load_cap::refuse_unless_stored;
use crate::qf::locally_locked::{LocallyLockedQf, Migrating};
use crate::qf::sequential::SequentialQf;
use crate::qf::slot::{Slot, OCCUPIED, WRITE_LOCK};
use crate::qf::table::QfTable;
use crate::sizing;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, Waiter};

pub use builder::GrowableBuilder;
pub(crate) use builder::{growth_threshold, quotient_bits_below_threshold};
use reclaim::Reclaimer;
pub(crate) use reclaim::{defer, pin, Guard};
#[cfg(loom)]
pub use reclaim::{model_grace_periods, GracePeriods};

/// A concurrent quotient filter that doubles itself when its fill reaches `delta_grow`, at most
/// `max_doublings` times: bounded growing (paper 000 §2.1), migrated by all writing threads
/// together (§3.2). Build it with [`GrowableQf::new`], or with options through
/// [`GrowableQf::builder`] (the same as [`LocallyLockedQf::growable`]).
///
/// Fingerprints keep their length when the table doubles, so the false-positive rate grows
/// linearly with the number of keys (`n · 2^-(q + r)`); for a bounded rate at any size, use a
/// multi-level filter.
///
/// Memory: a doubling allocates the new table before the old one goes, so while it migrates
/// the filter holds both, [`memory_bytes`](Filter::memory_bytes) before the doubling plus
/// after it (the old table is freed once the migration ends and no reader holds it). Since each
/// doubling's slots are a bit narrower, that peak is 1.5 to 1.75 times the new table's bytes
/// (measured with a counting allocator for three doublings from `growable(100_000, 0.01)`,
/// `(1_000_000, 0.001)` and `(1_000_000, 1e-6)`).
///
/// ```
/// use conqf::{Filter, LocallyLockedQf, Remove};
/// use std::sync::Arc;
///
/// let filter = Arc::new(LocallyLockedQf::growable(500, 0.01).build()?);
/// std::thread::scope(|s| {
///     for t in 0..2u64 {
///         let filter = &filter;
///         s.spawn(move || {
///             for i in 0..2000u64 {
///                 filter.insert(&(t * 2000 + i)).unwrap();
///             }
///         });
///     }
/// });
/// assert!((0..4000u64).all(|k| filter.contains(&k)));
/// assert!(filter.remove(&7u64)?);
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct GrowableQf {
    /// The current generation; replaced ones are retired through `reclaimer`.
    current: AtomicPtr<Generation>,
    delta_grow: f64,
    block_slots: usize,
    reclaimer: Reclaimer,
}

// SAFETY: the raw pointers inside point at generations the filter owns (`current`) or that a
// migration owns (`Migration::next`); every shared access goes through atomics, and the
// generations themselves are `Send + Sync` (a `LocallyLockedQf` and atomics).
unsafe impl Send for GrowableQf {}
// SAFETY: as above.
unsafe impl Sync for GrowableQf {}

/// One table and its growth state.
struct Generation {
    filter: LocallyLockedQf,
    /// Grow once this many fingerprints are stored.
    threshold: usize,
    /// Which inserts check the fill: those whose sample (see `fill_reached`) has none of these
    /// bits set.
    check_mask: u64,
    /// Doublings still allowed after this table.
    doublings_left: u32,
    /// Doublings that led to this table.
    doublings_done: u32,
    /// `IDLE`, `CLAIMED` (a thread is allocating or has published the migration) or `FAILED`.
    growth: AtomicUsize,
    /// The migration out of this table, null until published.
    migration: MigrationSlot,
}

/// Owns the migration out of a generation, once published.
struct MigrationSlot(AtomicPtr<Migration>);

impl Drop for MigrationSlot {
    fn drop(&mut self) {
        // Relaxed: dropping means no other thread accesses the generation any more.
        let ptr = self.0.load(Ordering::Relaxed);
        if !ptr.is_null() {
            // SAFETY: the migration was created by `Box::into_raw` and only this slot owns it.
            drop(unsafe { Box::from_raw(ptr) });
        }
    }
}

const IDLE: usize = 0;
const CLAIMED: usize = 1;
const FAILED: usize = 2;

impl Generation {
    /// The doublings this table can still go through: [`doublings_left`](Self::doublings_left)
    /// bounded by what [`QfTable::doubled`] accepts (one remainder bit is always kept, the
    /// quotient stays within [`sizing::MAX_QUOTIENT_BITS`]), and none once growing failed.
    fn doublings_possible(&self) -> u32 {
        // Relaxed: a statistic; a concurrent failure may be seen a little late.
        if self.growth.load(Ordering::Relaxed) == FAILED {
            return 0;
        }
        let table = &self.filter.table;
        self.doublings_left
            .min(table.remainder_bits.saturating_sub(1))
            .min(sizing::MAX_QUOTIENT_BITS.saturating_sub(table.quotient_bits))
    }

    /// The quotient bits of the last table: this one's after every doubling it can still make.
    fn last_quotient_bits(&self) -> u32 {
        self.filter
            .quotient_bits()
            .saturating_add(self.doublings_possible())
    }

    fn new(table: QfTable, delta_grow: f64, doublings_left: u32, doublings_done: u32) -> Self {
        let filter = SequentialQf { table, len: 0 };
        Self::holding(filter, delta_grow, doublings_left, doublings_done)
    }

    /// A generation of `filter`'s table and contents.
    fn holding(
        filter: SequentialQf,
        delta_grow: f64,
        doublings_left: u32,
        doublings_done: u32,
    ) -> Self {
        let threshold = growth_threshold(filter.table.quotient_bits, delta_grow);
        // About one insert in `2^k` checks, with `2^k` at most a thousandth of the threshold
        // (and at most 64), so the fill passes the threshold by about 0.1% or less on average.
        let check_every = (threshold >> 10).clamp(1, 64).next_power_of_two();
        Generation {
            // With shift regions, as a fixed-size filter: a migration moves nothing in the old
            // table (it locks empty slots, which walks read as empty) and writes the new one
            // before any query can load it, so a walk that no locked shift of its region
            // overlapped read a consistent table here too (module doc, "Protocol").
            filter: LocallyLockedQf::from_sequential(filter),
            threshold,
            check_mask: check_every as u64 - 1,
            doublings_left,
            doublings_done,
            growth: AtomicUsize::new(IDLE),
            migration: MigrationSlot(AtomicPtr::new(std::ptr::null_mut())),
        }
    }

    /// Whether the fill has reached the growth threshold, checked after an insert of `hash`.
    ///
    /// Summing the counter's stripes reads a cache line per stripe, more than an insert costs,
    /// so only a sample of the inserts sums them: those whose hash, multiplied by an odd
    /// constant (Fibonacci hashing), has none of `check_mask`'s bits set in its top six bits.
    /// The product's top bits depend on every bit of the hash, so even hashes that differ only
    /// in a few bits (e.g. `insert_hash` of small integers) are sampled about evenly. The fill
    /// then passes the threshold by `check_mask + 1` inserts on average; inserts that are never
    /// sampled still grow the table once it is full (the insert loop grows on
    /// [`Error::Full`]).
    #[inline]
    fn fill_reached(&self, hash: u64) -> bool {
        let sample = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58;
        sample & self.check_mask == 0 && self.filter.len.sum() >= self.threshold
    }

    /// The migration out of this generation, if one was published.
    #[inline]
    fn migration(&self) -> Option<&Migration> {
        // Acquire: pairs with the Release that published the migration, so its fields and its
        // target table are initialised.
        let ptr = self.migration.0.load(Ordering::Acquire);
        // SAFETY: a published migration lives as long as its generation (freed in `drop`).
        unsafe { ptr.as_ref() }
    }
}

/// A migration from one generation to the next (paper 000 §3.2).
struct Migration {
    /// The next generation: owned here until `published`, then by the filter.
    next: *mut Generation,
    published: AtomicBool,
    /// Old slots per block, and the number of blocks.
    block_slots: usize,
    blocks: usize,
    /// The next block to claim.
    next_block: AtomicUsize,
    /// Blocks copied completely.
    done_blocks: AtomicUsize,
}

impl Drop for Migration {
    fn drop(&mut self) {
        // Relaxed: as in `MigrationSlot::drop`; the reclaimer ordered the store before this.
        if !self.published.load(Ordering::Relaxed) {
            // SAFETY: never published, so only this migration owns the next generation.
            drop(unsafe { Box::from_raw(self.next) });
        }
    }
}

impl GrowableQf {
    /// A filter sized for `capacity` keys at a false-positive rate of at most `fpr`, which
    /// doubles concurrently when it fills up, with the default options: the same as
    /// [`LocallyLockedQf::growable`](crate::LocallyLockedQf::growable)`(capacity, fpr).build()`,
    /// whose doc says how the rate grows with every doubling.
    ///
    /// ```
    /// use conqf::{Filter, GrowableQf};
    /// let filter = GrowableQf::new(1000, 0.001)?;
    /// for k in 0..5000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// assert!(filter.doublings() >= 2);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`GrowableBuilder::build`].
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        Self::builder(capacity, fpr).build()
    }

    /// A builder for a growable filter with options (fill to double at, how many doublings,
    /// the size to plan the rate for): the same as
    /// [`LocallyLockedQf::growable`](crate::LocallyLockedQf::growable).
    ///
    /// ```
    /// use conqf::GrowableQf;
    /// let filter = GrowableQf::builder(1000, 0.01).max_capacity(40_000).build()?;
    /// assert!(filter.doublings_possible() >= 5);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn builder(capacity: usize, fpr: f64) -> GrowableBuilder {
        GrowableBuilder::new(capacity, fpr)
    }

    /// The current generation, valid while `guard` lives.
    #[inline]
    fn generation<'g>(&self, _guard: &'g Guard) -> &'g Generation {
        // Acquire: pairs with the Release of the swap that published the generation, which
        // came after the whole migration into it (the completion counter's Acquire).
        let ptr = self.current.load(Ordering::Acquire);
        // SAFETY: `current` always holds a live generation; a replaced one is retired through
        // the reclaimer, which frees it only after every guard pinned before the swap is gone.
        unsafe { &*ptr }
    }

    /// How many times the table has doubled.
    pub fn doublings(&self) -> u32 {
        let guard = reclaim::pin();
        self.generation(&guard).doublings_done
    }

    /// How many more times the table can double: what the builder's
    /// [`max_doublings`](GrowableBuilder::max_doublings) leaves, but never more than the
    /// remainder bits minus one (each doubling moves a remainder bit into the quotient) nor past
    /// `2^40` slots, and 0 once a doubling failed (memory). When it reaches 0 the table fills like
    /// a fixed-size one; every doubling before that roughly doubles the false-positive rate at
    /// the same fill ([`false_positive_rate`](Filter::false_positive_rate) reports it).
    ///
    /// ```
    /// use conqf::LocallyLockedQf;
    /// // 0.001 at 100 keys takes 9 remainder bits, so 8 doublings at most, not 12.
    /// let filter = LocallyLockedQf::growable(100, 0.001).max_doublings(12).build()?;
    /// assert_eq!(filter.remainder_bits(), 9);
    /// assert_eq!(filter.doublings_possible(), 8);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn doublings_possible(&self) -> u32 {
        let guard = reclaim::pin();
        self.generation(&guard).doublings_possible()
    }

    /// The fill at which the table stops taking inserts once it has made every doubling it still
    /// can: the [`growth_threshold`] of the last table. An [`ExpandableQf`](crate::ExpandableQf)
    /// opens its next level when its newest level reaches it.
    pub(crate) fn last_threshold(&self) -> usize {
        let guard = reclaim::pin();
        let last = self.generation(&guard).last_quotient_bits();
        growth_threshold(last, self.delta_grow)
    }

    /// Quotient bits of the current table.
    pub fn quotient_bits(&self) -> u32 {
        let guard = reclaim::pin();
        self.generation(&guard).filter.quotient_bits()
    }

    /// Remainder bits of the current table.
    pub fn remainder_bits(&self) -> u32 {
        let guard = reclaim::pin();
        self.generation(&guard).filter.remainder_bits()
    }

    /// The fill at which the table doubles.
    pub fn delta_grow(&self) -> f64 {
        self.delta_grow
    }

    /// [`contains_hash`](Filter::contains_hash) without trusting a hit of a walk without
    /// locks: `true` only if the fingerprint was stored at some moment of the call, never from
    /// a run misread during a concurrent shift (crate docs, "Consistency"); as
    /// [`LocallyLockedQf::contains_hash_locked`] on the current table. For callers that act on
    /// a `true`.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf, Remove};
    ///
    /// let filter = LocallyLockedQf::growable(100, 0.01).build()?;
    /// filter.insert(&42u64)?;
    /// assert!(filter.contains_hash_locked(conqf::hash_key(&42u64)));
    /// filter.remove(&42u64)?;
    /// assert!(!filter.contains_locked(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn contains_hash_locked(&self, hash: u64) -> bool {
        self.contains_locked_pinned(hash, &reclaim::pin())
    }

    /// [`contains_hash_locked`](Self::contains_hash_locked) for a key.
    pub fn contains_locked<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_locked(hash_key(key))
    }

    /// A filter in the growth state a persisted one had: `filter` is its current table, after
    /// `doublings_done` doublings with `doublings_left` to go.
    pub(crate) fn from_parts(
        filter: SequentialQf,
        delta_grow: f64,
        doublings_done: u32,
        doublings_left: u32,
        block_slots: usize,
    ) -> Self {
        let generation = Generation::holding(filter, delta_grow, doublings_left, doublings_done);
        GrowableQf {
            current: AtomicPtr::new(Box::into_raw(Box::new(generation))),
            delta_grow,
            block_slots,
            reclaimer: Reclaimer::new(),
        }
    }

    /// Runs `f` on the current table and the growth state `(doublings_done, doublings_left,
    /// block_slots)`. For a snapshot: the caller makes sure no operation is in flight, so no
    /// migration is either (the last helper of a migration swaps the generation before its
    /// operation returns).
    pub(crate) fn with_quiescent<T>(
        &self,
        f: impl FnOnce(&LocallyLockedQf, (u32, u32, usize)) -> T,
    ) -> T {
        let guard = reclaim::pin();
        let generation = self.generation(&guard);
        debug_assert!(generation.migration().is_none(), "a migration is in flight");
        f(
            &generation.filter,
            (
                generation.doublings_done,
                generation.doublings_left,
                self.block_slots,
            ),
        )
    }

    /// The current table as a fixed-size filter (no copy), e.g. to iterate its fingerprints.
    pub fn into_inner(self) -> LocallyLockedQf {
        let mut this = std::mem::ManuallyDrop::new(self);
        // Relaxed: `self` is owned, so no other thread accesses it.
        let ptr = this.current.load(Ordering::Relaxed);
        // SAFETY: `this` is never used again and its `Drop` does not run, so the reclaimer is
        // dropped exactly once.
        unsafe { std::ptr::drop_in_place(&mut this.reclaimer) };
        // SAFETY: `self` is consumed, so no operation runs; `current` owns its generation.
        let generation = unsafe { Box::from_raw(ptr) };
        let Generation { filter, .. } = *generation;
        filter
    }

    /// Whether the table is at its final size and its fill has reached `delta_grow`, checked
    /// after an insert of `hash` (see [`Generation::fill_reached`]): a multi-level filter then
    /// opens its next level. Final also when the builder still allows doublings that the table
    /// cannot make ([`Generation::doublings_possible`]: remainder or quotient bits used up, or
    /// allocating the larger table failed): else such a level would fill up to `Full` first.
    pub(crate) fn saturated(&self, hash: u64, guard: &Guard) -> bool {
        let generation = self.generation(guard);
        generation.doublings_possible() == 0 && generation.fill_reached(hash)
    }

    /// Stores the fingerprint of `hash` in its canonical slot if that slot is empty, with one
    /// CAS and no lock (cascading inserts, paper 000 §4.2): no element moves, so lock-free
    /// readers stay correct. Waits while the slot is write-locked (an operation in flight will
    /// fill it or leave it empty). Each time it reads the slot empty (Acquire) it first asks
    /// `may_store`, so the caller can check state written before whatever emptied the slot;
    /// if that says no, it returns `None` without storing. Returns `Some(true)` if it stored
    /// the fingerprint, `Some(false)` if the slot holds this very fingerprint as its cluster
    /// start (a racing cascading insert of the same key stored it), and `None` if the slot
    /// holds another element, which it keeps holding until a removal.
    ///
    /// For a table that does not migrate any more (a lower level): a migration lock counts as
    /// an element.
    pub(crate) fn insert_into_empty_canonical(
        &self,
        hash: u64,
        guard: &Guard,
        may_store: impl Fn() -> bool,
    ) -> Option<bool> {
        let filter = &self.generation(guard).filter;
        let (quotient, remainder) = filter.table.fingerprint(hash);
        let element = Slot::element(remainder, false, false).raw() | OCCUPIED;
        let waiter = Waiter::new();
        loop {
            // Acquire: the decision depends on the slot; pairs with the writer's Release.
            let raw = filter.table.slots.get(quotient, Ordering::Acquire);
            if raw == WRITE_LOCK {
                waiter.wait();
                continue;
            }
            if raw != 0 {
                return (Slot::unlocked(raw).raw() == element).then_some(false);
            }
            if !may_store() {
                return None;
            }
            if filter.update_slot(quotient, |now| (now == 0).then_some(element)) {
                filter.len.increment();
                return Some(true);
            }
        }
    }

    /// Asks the CPU to start loading the group of the canonical slot of `hash` in the current
    /// table (a hint; see [`SlotArray::prefetch`](crate::storage::SlotArray::prefetch)): a
    /// multi-level filter issues this for every level before it probes the first, so the
    /// levels' cache misses overlap instead of following one another.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64, guard: &Guard) {
        let filter = &self.generation(guard).filter;
        let (quotient, _) = filter.table.fingerprint(hash);
        filter.table.slots.prefetch(quotient);
    }

    /// Whether the canonical slot of `hash` is empty and unlocked (raw zero).
    pub(crate) fn canonical_is_empty(&self, hash: u64, guard: &Guard) -> bool {
        let filter = &self.generation(guard).filter;
        let (quotient, _) = filter.table.fingerprint(hash);
        // Acquire: as in `insert_into_empty_canonical`.
        filter.table.slots.get(quotient, Ordering::Acquire) == 0
    }

    /// Removes every key, keeping the current table (its size, the doublings made and those
    /// left) and parameters; the rate per key is what it was before (fingerprints keep their
    /// length through doublings). A doubling that failed for want of memory, which stops all
    /// later ones, may be tried again. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let mut filter = LocallyLockedQf::growable(100, 0.01).build()?;
    /// for k in 0..1000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// let doublings = filter.doublings();
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// assert_eq!(filter.doublings(), doublings);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        // Relaxed: `&mut self`, so no other thread accesses the filter.
        let ptr = self.current.load(Ordering::Relaxed);
        // SAFETY: `current` always holds a live generation the filter owns (only replaced ones
        // are retired to the reclaimer), and `&mut self` rules out every other access to it.
        let generation = unsafe { &mut *ptr };
        debug_assert!(generation.migration().is_none(), "a migration is in flight");
        generation.filter.clear();
        // The current generation is IDLE, or FAILED if its doubling could not allocate (a
        // CLAIMED one has a migration, which ends with another generation current). Relaxed:
        // `&mut self`; sharing the filter again orders this.
        generation.growth.store(IDLE, Ordering::Relaxed);
    }

    /// Checks the current table's invariants (see [`LocallyLockedQf::check_invariants`]).
    /// Only meaningful while no thread writes.
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        let guard = reclaim::pin();
        self.generation(&guard).filter.check_invariants()
    }

    /// Starts growing `generation` if nobody has; then helps. Returns whether an insert that
    /// found the table full should retry (a migration is or will be under way). A loser that
    /// finds the new table still being allocated waits one step of the caller's `waiter`, so
    /// its backoff escalates over the caller's retries.
    fn grow(&self, generation: &Generation, guard: &Guard, waiter: &Waiter) -> bool {
        if generation.doublings_left == 0 {
            return false;
        }
        // AcqRel on success: the claim orders nothing else, but Acquire on failure lets a loser
        // see FAILED.
        match generation
            .growth
            .compare_exchange(IDLE, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {}
            Err(FAILED) => return false,
            Err(_) => {
                match generation.migration() {
                    Some(migration) => self.help(generation, migration, guard),
                    // Another thread is allocating the new table.
                    None => waiter.wait(),
                }
                return true;
            }
        }
        let Ok(table) = generation.filter.table.doubled() else {
            // Release: nothing to publish; Relaxed would do, but losers read it with Acquire.
            generation.growth.store(FAILED, Ordering::Release);
            return false;
        };
        let next = Generation::new(
            table,
            self.delta_grow,
            generation.doublings_left - 1,
            generation.doublings_done + 1,
        );
        let old_slots = generation.filter.table.slots.len();
        let migration = Box::new(Migration {
            next: Box::into_raw(Box::new(next)),
            published: AtomicBool::new(false),
            block_slots: self.block_slots,
            blocks: old_slots.div_ceil(self.block_slots),
            next_block: AtomicUsize::new(0),
            done_blocks: AtomicUsize::new(0),
        });
        // Release: publishes the migration and its zeroed target to every helper.
        generation
            .migration
            .0
            .store(Box::into_raw(migration), Ordering::Release);
        if let Some(migration) = generation.migration() {
            self.help(generation, migration, guard);
        }
        true
    }

    /// Helps `migration` out of `generation` until it is complete and published.
    fn help(&self, generation: &Generation, migration: &Migration, guard: &Guard) {
        // SAFETY: the next generation lives until the old one is freed: the migration owns it
        // until it is published, and then the filter does, retiring it only after this guard.
        let next = unsafe { &*migration.next };
        let old = &generation.filter;
        let old_slots = old.table.slots.len();
        let mut buffer = Vec::new();
        loop {
            // Relaxed: the claim only hands out block numbers; what the block holds is read
            // with Acquire loads of the old table.
            let block = migration.next_block.fetch_add(1, Ordering::Relaxed);
            if block >= migration.blocks {
                break;
            }
            let lo = block * migration.block_slots;
            let hi = (lo + migration.block_slots).min(old_slots);
            let copied = migration::migrate_block(old, &next.filter.table, lo, hi, &mut buffer);
            next.filter.len.add(copied);
            // Release: publishes this block's target writes to whoever sees the count complete.
            migration.done_blocks.fetch_add(1, Ordering::Release);
        }
        let waiter = Waiter::new();
        // Acquire: reading the final count synchronises with every block's Release increment
        // (a release sequence of read-modify-writes), so all target writes are visible.
        while migration.done_blocks.load(Ordering::Acquire) < migration.blocks {
            waiter.wait();
        }
        // The copies were added to the count in bulk: the cap's check interval, set for the
        // empty table, follows the count now (each helper may do it; it sets the same values).
        next.filter.cap.recount(&next.filter.len);
        let old_ptr = generation as *const Generation as *mut Generation;
        // AcqRel: Release publishes the new table (and, transitively, all blocks' writes) to
        // every later `generation` load; Acquire on failure orders nothing we rely on.
        if self
            .current
            .compare_exchange(old_ptr, migration.next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // Relaxed: read only by the destructor, which the reclaimer runs after this thread
            // retired the generation.
            migration.published.store(true, Ordering::Relaxed);
            // SAFETY: the old generation is unlinked (the CAS replaced it), came from
            // `Box::into_raw`, and only the CAS winner retires it.
            unsafe { self.reclaimer.retire(guard, old_ptr) };
        }
    }
}

impl GrowableQf {
    /// [`Filter::insert_hash`] under a guard the caller pinned (a multi-level filter pins once
    /// per operation). The retries reload the current generation under the same guard.
    pub(crate) fn insert_pinned(&self, hash: u64, guard: &Guard) -> Result<bool, Error> {
        let waiter = Waiter::new();
        loop {
            let generation = self.generation(guard);
            if let Some(migration) = generation.migration() {
                self.help(generation, migration, guard);
                continue;
            }
            match generation.filter.insert_or_migrating(hash) {
                Err(Migrating) => continue,
                Ok(Ok(true)) => {
                    // A table that may not double any more skips the counter altogether.
                    if generation.doublings_left > 0 && generation.fill_reached(hash) {
                        self.grow(generation, guard, &waiter);
                    }
                    return Ok(true);
                }
                Ok(Err(Full)) => {
                    if !self.grow(generation, guard, &waiter) {
                        // At the cap of its last size: no doubling, so no migration either.
                        let stored = || generation.filter.contains_hash_locked(hash);
                        return refuse_unless_stored(stored);
                    }
                }
                Ok(Ok(false)) => return Ok(false),
            }
        }
    }

    /// [`Filter::contains_hash`] under a guard the caller pinned.
    pub(crate) fn contains_pinned(&self, hash: u64, guard: &Guard) -> bool {
        self.generation(guard).filter.contains_hash(hash)
    }

    /// [`contains_pinned`](Self::contains_pinned) whose `true` never comes from a misread run
    /// ([`LocallyLockedQf::contains_hash_locked`]).
    pub(crate) fn contains_locked_pinned(&self, hash: u64, guard: &Guard) -> bool {
        self.generation(guard).filter.contains_hash_locked(hash)
    }

    /// Whether the fingerprint of `hash` is stored, read without locks or checks
    /// ([`LocallyLockedQf::contains_hash_unsynchronized`]): exact only while no thread shifts
    /// elements in the table, which the caller ensures ([`level_reads`](crate::qf::level_reads)).
    #[inline]
    pub(crate) fn contains_unlocked_pinned(&self, hash: u64, guard: &Guard) -> bool {
        self.generation(guard)
            .filter
            .contains_hash_unsynchronized(hash)
    }

    /// [`Remove::remove_hash`] under a guard the caller pinned.
    pub(crate) fn remove_pinned(&self, hash: u64, guard: &Guard) -> Result<bool, Error> {
        loop {
            let generation = self.generation(guard);
            if let Some(migration) = generation.migration() {
                self.help(generation, migration, guard);
                continue;
            }
            if let Ok(removed) = generation.filter.remove_or_migrating(hash) {
                return Ok(removed);
            }
        }
    }
}

impl Filter for GrowableQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        self.insert_pinned(hash, &reclaim::pin())
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.contains_pinned(hash, &reclaim::pin())
    }

    fn len(&self) -> usize {
        let guard = reclaim::pin();
        self.generation(&guard).filter.len()
    }

    /// The keys the filter holds once it has made every doubling it still can: as many as
    /// the builder allows, at most one per remainder bit beyond the last (a table keeps one),
    /// none past the largest quotient, and none once allocating a larger table failed.
    fn capacity(&self) -> usize {
        let guard = reclaim::pin();
        let generation = self.generation(&guard);
        // The last table's capacity, not the current one's scaled: a table of 2 slots holds
        // 1 key at 90%, one of 512 holds 460, not 256.
        crate::qf::table::capacity_of(generation.last_quotient_bits())
    }

    fn memory_bytes(&self) -> usize {
        let guard = reclaim::pin();
        self.generation(&guard).filter.memory_bytes()
    }

    fn false_positive_rate(&self) -> f64 {
        let guard = reclaim::pin();
        self.generation(&guard).filter.false_positive_rate()
    }
}

impl Remove for GrowableQf {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        self.remove_pinned(hash, &reclaim::pin())
    }
}

impl Drop for GrowableQf {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, so no other thread accesses it.
        let ptr = self.current.load(Ordering::Relaxed);
        // SAFETY: `&mut self`: no operation runs; `current` owns its generation.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

impl fmt::Debug for GrowableQf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowableQf")
            .field("quotient_bits", &self.quotient_bits())
            .field("remainder_bits", &self.remainder_bits())
            .field("len", &self.len())
            .field("delta_grow", &self.delta_grow)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::filter::Filter;

    /// A table of one remainder bit cannot double (a table keeps at least one), whatever
    /// `max_doublings` allows: once its fill reaches `delta_grow` it is saturated, so a
    /// multi-level filter opens its next level then, not only when this one is full.
    #[test]
    fn a_table_that_cannot_double_is_saturated_at_its_threshold() {
        let filter = LocallyLockedQf::growable(1, 0.5)
            .delta_grow(0.5)
            .max_doublings(1)
            .build_with_bits(4, 1)
            .unwrap();
        // Hash 0 samples the fill on every check; 16 slots, threshold 8.
        let guard = reclaim::pin();
        let key = |quotient: u64, remainder: u64| ((quotient << 1) | remainder) << 59;
        for quotient in 0..7 {
            assert_eq!(filter.insert_hash(key(quotient * 2, 0)), Ok(true));
        }
        assert!(!filter.saturated(0, &guard), "7 keys, below the threshold");
        assert_eq!(filter.insert_hash(key(14, 0)), Ok(true));
        assert!(filter.saturated(0, &guard));
        assert_eq!(filter.doublings(), 0);
    }

    /// As [`GrowableBuilder::delta_grow`] says: `capacity` keys never double the table, also
    /// where `capacity` is exactly `delta_grow` of a power of two (768 of 1,024 at the default
    /// 0.75: that table would double on the 768th key, so the filter starts at 2,048 slots and
    /// doubles on the 1,536th). At 767 the 1,024 slots hold them all.
    #[test]
    fn a_capacity_at_a_threshold_starts_one_table_larger() {
        for (capacity, start) in [(767, 10), (768, 11)] {
            let filter = LocallyLockedQf::growable(capacity, 0.01).build().unwrap();
            assert_eq!(filter.quotient_bits(), start, "capacity {capacity}");
            let threshold = growth_threshold(start, 0.75);
            let mut key = 0u64;
            while filter.len() < threshold - 1 {
                filter.insert(&key).unwrap();
                key += 1;
            }
            assert!(filter.len() >= capacity);
            assert_eq!(filter.doublings(), 0, "capacity {capacity}: {key} inserts");
            while filter.len() < threshold {
                filter.insert(&key).unwrap();
                key += 1;
            }
            assert_eq!(filter.quotient_bits(), start + 1, "capacity {capacity}");
        }
    }
}
