//! `CountingQf`: the counting quotient filter of Pandey et al. on the rank-and-select layout
//! (paper 004 §III-B; paper 000 §2.2, "(Counting) Quotient Filter Using Rank-and-Select"), made
//! concurrent with region locks as in Pandey et al.'s multi-threaded CQF.
//!
//! * [`blocks`]: blocks of 64 slots (`occupieds`, `runends`, 64 packed remainders) and their
//!   8-bit offsets; the [`View`] that records which blocks an operation touched.
//! * [`counter_code`]: how a remainder and its count are stored in consecutive slots.
//! * [`runs`]: finding runs by rank and select.
//! * [`lookup`]: the count stored for a fingerprint.
//! * [`update`]: changing one fingerprint's count.
//! * [`locks`]: the region locks and the protocol that runs an operation under them.
//! * [`check`]: the invariant checker for tests.
//! * this file: the public filter.

pub(crate) mod blocks;
mod check;
pub(crate) mod counter_code;
mod empty_slot;
pub(crate) mod locks;
pub(crate) mod lookup;
pub(crate) mod runs;
mod update;

pub(crate) use check::Stored;

use std::cell::Cell;
use std::hash::Hash;

use crate::counter::StripedCounter;
use crate::filter::{Count, Error, Filter, Remove};
use crate::hash::{hash_key, low_mask, Fingerprint, Splitter};
use crate::qf::load_cap::LoadCap;
use crate::sizing::{check_bits, qf_fpr, qf_parameters, MAX_QUOTIENT_BITS};

use blocks::{BlockSource, Blocks, View, BLOCK_SLOTS};
use counter_code::MIN_REMAINDER_BITS;
use locks::RegionLocks;
use runs::Fault;

/// The fill `new` sizes for: Pandey et al. run the rank-and-select filter up to 95% full.
const MAX_LOAD: f64 = 0.95;

/// A concurrent counting quotient filter on the rank-and-select layout (Pandey et al.): 2.125
/// metadata bits per slot, and a key inserted many times costs a few slots, not one per copy.
///
/// It is a multiset of fingerprints: [`insert`](Filter::insert) adds one copy (returning
/// `Ok(true)` for the first), [`count`](Count::count) tells how many there are (never fewer than
/// inserted; more only through fingerprint collisions), [`remove`](Remove::remove) takes one
/// away and [`remove_all`](Self::remove_all) all of them. [`len`](Filter::len) counts copies;
/// a fingerprint's count stops at `u64::MAX`, and a total past `usize::MAX` copies (reachable
/// only with huge [`insert_count`](Count::insert_count) calls) is reported as `usize::MAX`.
///
/// All methods take `&self`; share it with an [`Arc`](std::sync::Arc). Every write locks the
/// region (a few blocks of 64 slots) of its key and, in ascending order, the following regions
/// its run or shift reaches; queries read optimistically and check a version afterwards (a
/// seqlock), locking only when that keeps failing or the run leaves the region.
///
/// From `2^10` slots on, once its entries take 31/32 of the `2^q` slots, it refuses with
/// [`Error::Full`] every insert that would take a slot more (a new key, or a count that needs
/// another digit); counts that keep their slots still grow, and removals make room again
/// ([`Filter::capacity`]).
///
/// ```
/// use conqf::{Count, CountingQf, Filter, Remove};
///
/// let filter = CountingQf::new(10_000, 0.001)?;
/// assert_eq!(filter.insert(&"apple")?, true); // first copy
/// assert_eq!(filter.insert(&"apple")?, false); // counted
/// filter.insert_count(&"pear", 1_000_000)?; // a few slots, not a million
/// assert_eq!(filter.count(&"apple"), 2);
/// assert_eq!(filter.count(&"pear"), 1_000_000);
/// assert_eq!(filter.remove(&"apple")?, true);
/// assert_eq!(filter.remove_all(&"pear")?, 1_000_000);
/// assert_eq!(filter.count(&"pear"), 0);
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct CountingQf {
    // `pub(crate)` for the bulk build (`batch::counting`), which writes a new, empty filter.
    pub(crate) table: Blocks,
    /// The region locks, which also keep the counts of copies and distinct fingerprints.
    pub(crate) locks: RegionLocks,
    /// Slots the entries take: what the load cap counts (an entry takes one slot per copy up to
    /// two copies, then a few for its counter). Not counted under loom (see `count_slots`).
    pub(crate) slots: StripedCounter,
    /// Refuses inserts that would take a slot once `slots` reaches 31/32 of the `2^q` slots.
    pub(crate) cap: LoadCap,
    quotient_bits: u32,
    remainder_bits: u32,
    splitter: Splitter,
}

impl CountingQf {
    /// Blocks per region lock by default: 4096 slots, the region of Pandey et al.'s and paper
    /// 000's externally locked filters. Each region costs one cache line (its lock and counts).
    pub const DEFAULT_REGION_BLOCKS: usize = 64;

    /// A filter that holds `capacity` distinct keys at an expected false-positive rate of at
    /// most `fpr`.
    ///
    /// ```
    /// let filter = conqf::CountingQf::new(1_000_000, 0.01)?;
    /// assert!(conqf::Filter::capacity(&filter) >= 1_000_000);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        let (q, r) = qf_parameters(capacity, fpr, MAX_LOAD)?;
        Self::with_bits(q, r.max(MIN_REMAINDER_BITS))
    }

    /// A filter with `2^quotient_bits` slots of `remainder_bits` remainder bits each.
    ///
    /// ```
    /// let filter = conqf::CountingQf::with_bits(16, 8)?;
    /// assert_eq!(filter.remainder_bits(), 8);
    /// assert!(conqf::CountingQf::with_bits(16, 1).is_err()); // counters need r >= 2
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] unless `1 <= quotient_bits <= 40`, `remainder_bits >= 2`,
    /// `quotient_bits + remainder_bits <= 64` and `remainder_bits <= 62`;
    /// [`Error::OutOfMemory`] if the table cannot be allocated.
    pub fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        Self::with_bits_and_region(quotient_bits, remainder_bits, Self::DEFAULT_REGION_BLOCKS)
    }

    /// As [`with_bits`](Self::with_bits), with one lock per `region_blocks` blocks of 64 slots
    /// (rounded up to a power of two; a request larger than the table gives one region, its
    /// blocks rounded up so). Blocks, not slots: `ExternallyLockedQf`'s method of this name
    /// counts slots, so 64 here is what 4,096 is there.
    ///
    /// ```
    /// let filter = conqf::CountingQf::with_bits_and_region(12, 8, 3)?;
    /// assert_eq!(filter.region_blocks(), 4);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`with_bits`](Self::with_bits), and [`Error::InvalidParameters`] if `region_blocks`
    /// is 0.
    pub fn with_bits_and_region(
        quotient_bits: u32,
        remainder_bits: u32,
        region_blocks: usize,
    ) -> Result<Self, Error> {
        check_bits(quotient_bits, remainder_bits, 2, MIN_REMAINDER_BITS)?;
        if region_blocks == 0 {
            return Err(Error::InvalidParameters(
                "region_blocks must be at least 1".into(),
            ));
        }
        let blocks = Self::blocks_for(quotient_bits);
        let (slots, cap) = LoadCap::with_counter(quotient_bits, 0);
        Ok(CountingQf {
            table: Blocks::new(blocks, remainder_bits)?,
            locks: RegionLocks::new(blocks, region_blocks)?,
            slots,
            cap,
            quotient_bits,
            remainder_bits,
            splitter: Splitter::new(quotient_bits, remainder_bits),
        })
    }

    /// Blocks of a table with `2^quotient_bits` canonical slots and its overflow tail.
    pub(crate) fn blocks_for(quotient_bits: u32) -> usize {
        let slots = crate::qf::usual_slots(quotient_bits);
        slots.div_ceil(BLOCK_SLOTS)
    }

    /// Checks a table (live or serialised) with `2^quotient_bits` canonical slots: see
    /// [`check_invariants`](Self::check_invariants). Returns what it stores.
    pub(crate) fn check_table<S: BlockSource>(
        table: &S,
        quotient_bits: u32,
    ) -> Result<Stored, String> {
        check::check_table(table, 1usize << quotient_bits)
    }

    /// Quotient bits `q`: the table has `2^q` canonical slots.
    pub fn quotient_bits(&self) -> u32 {
        self.quotient_bits
    }

    /// Remainder bits `r` stored per slot.
    pub fn remainder_bits(&self) -> u32 {
        self.remainder_bits
    }

    /// Blocks of 64 slots per region lock.
    pub fn region_blocks(&self) -> usize {
        self.locks.region_blocks()
    }

    /// Number of distinct fingerprints stored (a fingerprint inserted many times counts once).
    pub fn distinct(&self) -> usize {
        self.locks.counts().1 as usize
    }

    /// Removes every copy of the hash's fingerprint; returns how many there were.
    ///
    /// # Errors
    /// None today; the `Result` matches [`Remove::remove_hash`].
    pub fn remove_all_hash(&self, hash: u64) -> Result<u64, Error> {
        self.remove_count_hash(hash, u64::MAX)
    }

    /// Removes up to `n` copies of the hash's fingerprint; returns how many it removed.
    pub(crate) fn remove_count_hash(&self, hash: u64, n: u64) -> Result<u64, Error> {
        self.update::<true>(hash, |count| count.saturating_sub(n))
            .map(|(old, new)| old - new)
    }

    /// Removes every copy of a key; returns how many there were.
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let filter = CountingQf::with_bits(10, 8)?;
    /// filter.insert_count(&7u32, 5)?;
    /// assert_eq!(filter.remove_all(&7u32)?, 5);
    /// assert!(!filter.contains(&7u32));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`remove_all_hash`](Self::remove_all_hash).
    pub fn remove_all<K: Hash + ?Sized>(&self, key: &K) -> Result<u64, Error> {
        self.remove_all_hash(hash_key(key))
    }

    /// The stored fingerprints and their counts, in increasing order of fingerprint. Only
    /// meaningful while no thread writes.
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let filter = CountingQf::with_bits(10, 8)?;
    /// filter.insert_count(&"a", 3)?;
    /// filter.insert(&"b")?;
    /// let mut counts: Vec<u64> = filter.counts().map(|(_, count)| count).collect();
    /// counts.sort();
    /// assert_eq!(counts, [1, 3]);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn counts(&self) -> Counts<'_> {
        Counts {
            view: View::new(&self.table),
            next_quotient: Some(0),
            quotient: 0,
            at: 1,
            end: 0,
            limit: 1usize << self.quotient_bits,
        }
    }

    /// Doubles the number of slots without rehashing: each fingerprint keeps its bits, one more
    /// of them addresses the table and one fewer is stored (`q + 1`, `r - 1`), so the
    /// false-positive rate at the same number of keys stays the same.
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let mut filter = CountingQf::with_bits(8, 10)?;
    /// filter.insert_count(&"key", 3)?;
    /// filter.grow()?;
    /// assert_eq!((filter.quotient_bits(), filter.remainder_bits()), (9, 9));
    /// assert_eq!(filter.count(&"key"), 3);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if the remainder would drop below 2 bits or the quotient
    /// rise above the maximum; [`Error::OutOfMemory`] if the larger table cannot be allocated;
    /// [`Error::Full`] if the entries do not fit, which only a table of fewer canonical slots
    /// than one block (64) filled past them can see: its one block holds 64 slots whatever
    /// `q`, so a doubling does not halve its load (elsewhere the load halves);
    /// [`Error::Corrupt`] if a run of the table cannot be decoded (not expected: no operation
    /// leaves such a table). The filter is unchanged on error.
    pub fn grow(&mut self) -> Result<(), Error> {
        let (q, r) = (self.quotient_bits, self.remainder_bits);
        if r <= MIN_REMAINDER_BITS || q >= MAX_QUOTIENT_BITS {
            return Err(Error::InvalidParameters(format!(
                "cannot grow a filter of {q} quotient and {r} remainder bits"
            )));
        }
        let grown = Self::with_bits_and_region(q + 1, r - 1, self.region_blocks())?;
        for (fingerprint, count) in self.counts() {
            let quotient = (fingerprint.quotient << 1) | (fingerprint.remainder >> (r - 1));
            let remainder = fingerprint.remainder & low_mask(r - 1);
            let view = View::new(&grown.table);
            let plan = update::plan(&view, quotient as usize, remainder, |old| old + count, None)
                .map_err(|fault| match fault {
                Fault::Full => Error::Full,
                Fault::Inconsistent => Error::Corrupt("inconsistent table".into()),
            })?;
            update::apply(&view, &plan);
        }
        grown.count_written_table();
        *self = grown;
        Ok(())
    }

    /// Sets the counts of copies and distinct fingerprints and the slot count (with the load
    /// cap's flag) from the table, which was written without counting (loaded, or grown into),
    /// while the counters are still at zero. Needs the filter to itself.
    pub(crate) fn count_written_table(&self) {
        let r = self.remainder_bits;
        let mut slots = 0;
        for (fingerprint, count) in self.counts() {
            let block = fingerprint.quotient as usize / BLOCK_SLOTS;
            self.locks.account(block, 0, count);
            slots += counter_code::entry_len(fingerprint.remainder, count, r);
        }
        self.set_slots(slots);
    }

    /// Sets the slot count to `slots` and the load cap's flag from it (the filter to itself).
    pub(crate) fn set_slots(&self, slots: usize) {
        self.cap.set_count(&self.slots, slots);
    }

    /// Removes every key, keeping its table (size and memory) and parameters: the filter
    /// answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// Every count goes too; the regions' counts of copies and fingerprints restart at 0.
    ///
    /// ```
    /// use conqf::{CountingQf, Filter};
    /// let mut filter = CountingQf::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.table.clear();
        self.locks.clear_counts();
        self.set_slots(0);
    }

    /// Checks the table's invariants: no region locked, runs where the occupied and runend bits
    /// say, rank-and-select lookups agree with a plain scan, offsets exact, entries decodable and
    /// strictly increasing within runs, and the counts match `len` and
    /// [`distinct`](Self::distinct). Only meaningful while no thread works on the filter.
    ///
    /// ```
    /// let filter = conqf::CountingQf::with_bits(10, 8)?;
    /// conqf::Filter::insert(&filter, &1u8)?;
    /// assert_eq!(filter.check_invariants(), Ok(()));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.locks.check_unlocked()?;
        let stored = Self::check_table(&self.table, self.quotient_bits)?;
        let counted = self.locks.counts();
        if (stored.copies, stored.entries as u64) != counted {
            return Err(format!(
                "the table holds {} copies of {} fingerprints, the counters say {counted:?}",
                stored.copies, stored.entries
            ));
        }
        // Under loom the updates count no slots (`count_slots`).
        if !cfg!(loom) && stored.slots != self.slots.sum() {
            return Err(format!(
                "the entries take {} slots, the slot count says {}",
                stored.slots,
                self.slots.sum()
            ));
        }
        Ok(())
    }

    /// [`count_hash`](Count::count_hash) when its block (and the next one, if in the same
    /// region) cannot answer (the run ends further on, the spill is saturated, or a writer got
    /// in the way): the general walk, optimistic or under locks.
    #[inline(never)]
    fn count_slow(&self, quotient: usize, remainder: u64) -> u64 {
        self.locks
            .read(&self.table, quotient / BLOCK_SLOTS, |view| {
                lookup::count(view, quotient, remainder)
            })
            .unwrap_or(0)
    }

    /// The count of fingerprint `(quotient, remainder)` ([`Count::count_hash`] after the split).
    #[inline]
    pub(crate) fn count_fingerprint(&self, quotient: usize, remainder: u64) -> u64 {
        // The block's metadata and the run's remainders are often on different cache lines (a
        // block of r = 11 spans 104 bytes, and the run may start in the next block): start all
        // those misses now, so the walk does not wait for one after the other.
        self.table.prefetch(quotient);
        self.count_prefetched(quotient, remainder)
    }

    /// [`count_fingerprint`](Self::count_fingerprint) of a quotient whose lines the caller has
    /// already prefetched (the batch lookups, some keys ahead).
    #[inline]
    pub(crate) fn count_prefetched(&self, quotient: usize, remainder: u64) -> u64 {
        let block = quotient / BLOCK_SLOTS;
        // The next block is read only if the same version check covers it. (In our reading
        // the check is stronger than needed: the part of the next block such a lookup reads,
        // the runs of this block's quotients and the runends below their ends, is written only
        // by writers of this block's quotients or earlier ones, which hold this region; a
        // writer of a later quotient writes from its own run on and stores whole words with
        // the bits below unchanged. No model tells the two apart, and the check keeps the
        // argument local; it sends to the slow path only lookups whose run crosses a region
        // boundary, one block boundary in 64 with the default regions.)
        let may_read_next =
            || block + 1 < self.table.blocks() && self.locks.same_region(block, block + 1);
        if let Some(count) = self.locks.read_in_block(block, || {
            lookup::count_in_block(&self.table, quotient, remainder, may_read_next)
        }) {
            return count;
        }
        self.count_slow(quotient, remainder)
    }

    #[inline]
    pub(crate) fn fingerprint(&self, hash: u64) -> (usize, u64) {
        self.splitter.split(hash)
    }

    /// Sets the count of the hash's fingerprint from `c` to `new_count(c)` under the region
    /// locks; returns `(c, new_count(c))`. `SHRINKS`: whether `new_count` may lower a count
    /// (see [`update::update_in_block`]); the other updates are inserts, which the load cap
    /// may refuse.
    #[inline(always)]
    pub(crate) fn update<const SHRINKS: bool>(
        &self,
        hash: u64,
        new_count: impl Fn(u64) -> u64,
    ) -> Result<(u64, u64), Error> {
        if !SHRINKS && !self.cap.admits(&self.slots) {
            return self.update_at_cap(hash, new_count);
        }
        self.update_uncapped::<SHRINKS>(hash, new_count)
    }

    /// An insert while the filter is at its load cap: it goes ahead only if its entry keeps its
    /// slots (a count that grows within its counter's digits); one that needs a slot more is
    /// refused with `Full` and changes nothing.
    #[cold]
    #[inline(never)]
    fn update_at_cap(
        &self,
        hash: u64,
        new_count: impl Fn(u64) -> u64,
    ) -> Result<(u64, u64), Error> {
        let (_, remainder) = self.fingerprint(hash);
        let r = self.remainder_bits;
        // Set by each call of the closure: the update applies the last call's count.
        let refused = Cell::new(false);
        let result = self.update_uncapped::<false>(hash, |old| {
            let new = new_count(old);
            let grows = counter_code::entry_len(remainder, new, r)
                > counter_code::entry_len(remainder, old, r);
            refused.set(grows);
            if grows {
                old
            } else {
                new
            }
        });
        match result {
            Ok(_) if refused.get() => Err(Error::Full),
            other => other,
        }
    }

    /// [`update`](Self::update) without the load cap's admission; counts the slots it takes
    /// or frees.
    #[inline(always)]
    fn update_uncapped<const SHRINKS: bool>(
        &self,
        hash: u64,
        new_count: impl Fn(u64) -> u64,
    ) -> Result<(u64, u64), Error> {
        let (quotient, remainder) = self.fingerprint(hash);
        let block = quotient / BLOCK_SLOTS;
        // Start the likely cache misses on the table before the lock's read-modify-write, which
        // later loads cannot pass.
        self.table.prefetch(quotient);
        // What the one-block attempt found of the entry, for the first plan only: that one runs
        // under the same lock hold (`RegionLocks::run`), so the block is as the attempt saw it.
        let located = Cell::new(None);
        let in_block = |held: &locks::Held<'_>| {
            // The first region taken is the quotient's block's.
            match update::update_in_block::<SHRINKS>(&self.table, quotient, remainder, &new_count) {
                Ok(change) => {
                    held.account(block, change.old_count, change.new_count);
                    Some(Ok(change))
                }
                Err(found) => {
                    located.set(found);
                    None
                }
            }
        };
        let result = self.locks.run(&self.table, block, in_block, |view, held| {
            let planned = update::plan(view, quotient, remainder, &new_count, located.take());
            let plan = match &planned {
                Ok(plan) => plan,
                Err(Fault::Full) if held.covers(view) => return Some(Err(Error::Full)),
                Err(_) => return None,
            };
            if !held.covers(view) {
                return None;
            }
            update::apply(view, plan);
            held.account(block, plan.old_count, plan.new_count);
            Some(Ok(plan.change()))
        });
        let change = result.unwrap_or(Err(Error::Full))?;
        self.count_slots(change);
        Ok((change.old_count, change.new_count))
    }

    /// Counts the slots an update's entry took or freed, after the update released its locks
    /// (as the 3-status-bit filters count their inserts). Not under loom: the models' tables
    /// are all uncapped (too small for the cap), and an add per update would only multiply the
    /// interleavings they explore; `check_invariants` compares the count with the table
    /// outside loom only.
    #[inline(always)]
    fn count_slots(&self, change: update::Change) {
        if cfg!(loom) {
            return;
        }
        let (before, after) = (change.old_len, change.new_len);
        if after > before {
            self.cap.count_added(&self.slots, after - before);
        } else if after < before {
            self.slots.add((before - after).wrapping_neg());
        }
    }
}

/// A copy of the filter while other threads keep working: the table between two operations,
/// read under every region lock (as [`write_to`](CountingQf::write_to) reads it; writers wait
/// for the copy), with the same regions and counts. Like `Vec`'s, the clone aborts the process
/// if its memory cannot be had.
///
/// ```
/// use conqf::{Count, CountingQf, Filter};
///
/// let original = CountingQf::new(1000, 0.01)?;
/// original.insert_count(&"apple", 3)?;
/// let copy = original.clone();
/// copy.insert(&"apple")?;
/// assert_eq!((copy.count(&"apple"), original.count(&"apple")), (4, 3));
/// assert_eq!((copy.len(), copy.distinct()), (4, 1));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for CountingQf {
    fn clone(&self) -> Self {
        self.snapshot()
            .unwrap_or_else(|_| crate::storage::abort_for_bytes(self.memory_bytes()))
    }
}

impl CountingQf {
    /// A copy of the filter taken while other threads keep working, as `Clone` makes it (the
    /// table between two operations, read under every region lock; writers wait for the
    /// copy), but with an error where `Clone` aborts. The name matches the other concurrent
    /// filters' `snapshot`.
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Remove};
    /// let filter = CountingQf::new(1000, 0.01)?;
    /// filter.insert_count(&"apple", 2)?;
    /// let copy = filter.snapshot()?;
    /// filter.remove(&"apple")?;
    /// assert_eq!((copy.count(&"apple"), filter.count(&"apple")), (2, 1));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the copy's memory cannot be allocated.
    pub fn snapshot(&self) -> Result<Self, Error> {
        // Allocated before locking, so other threads wait only for the copy.
        let copy = Self::with_bits_and_region(
            self.quotient_bits,
            self.remainder_bits,
            self.region_blocks(),
        )?;
        self.locks
            .with_all_held(|| copy.table.fill_from(&self.table));
        copy.count_written_table();
        Ok(copy)
    }
}

impl Filter for CountingQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        self.update::<false>(hash, |count| count.saturating_add(1))
            .map(|(old, _)| old == 0)
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.count_hash(hash) > 0
    }

    /// The copies stored, the sum of every fingerprint's count; at most `usize::MAX` (a few
    /// counts near `u64::MAX` pass it).
    fn len(&self) -> usize {
        usize::try_from(self.locks.counts().0).unwrap_or(usize::MAX)
    }

    fn capacity(&self) -> usize {
        ((1u64 << self.quotient_bits) as f64 * MAX_LOAD) as usize
    }

    fn memory_bytes(&self) -> usize {
        self.table.memory_bytes() + self.locks.memory_bytes() + self.slots.memory_bytes()
    }

    fn false_positive_rate(&self) -> f64 {
        let load = self.distinct() as f64 / (1u64 << self.quotient_bits) as f64;
        qf_fpr(load, self.remainder_bits)
    }
}

impl Remove for CountingQf {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        self.update::<true>(hash, |count| count.saturating_sub(1))
            .map(|(old, _)| old > 0)
    }
}

impl Count for CountingQf {
    fn count_hash(&self, hash: u64) -> u64 {
        let (quotient, remainder) = self.fingerprint(hash);
        self.count_fingerprint(quotient, remainder)
    }

    /// Adds `n` copies (the count saturates at `u64::MAX`).
    fn insert_count_hash(&self, hash: u64, n: u64) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        self.update::<false>(hash, |count| count.saturating_add(n))
            .map(|_| ())
    }

    /// Sets a count of 0 to 1 and leaves any other as it is, in one update under the region
    /// locks (an insert's), so of racing calls for one absent fingerprint exactly one answers
    /// `Ok(true)`. At the load cap, `Full` for an absent fingerprint (it needs a slot) and
    /// `Ok(false)` for a stored one.
    fn insert_if_absent_hash(&self, hash: u64) -> Result<bool, Error> {
        self.update::<false>(hash, |count| count.max(1))
            .map(|(old, _)| old == 0)
    }
}

impl std::fmt::Debug for CountingQf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingQf")
            .field("quotient_bits", &self.quotient_bits)
            .field("remainder_bits", &self.remainder_bits)
            .field("region_blocks", &self.region_blocks())
            .field("distinct", &self.distinct())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// The `(fingerprint, count)` pairs of a [`CountingQf`] in increasing order; see
/// [`CountingQf::counts`].
pub struct Counts<'a> {
    view: View<'a>,
    /// The first quotient not yet visited, `None` when all are.
    next_quotient: Option<usize>,
    quotient: usize,
    /// The next slot of the current run, and its last.
    at: usize,
    end: usize,
    limit: usize,
}

impl std::fmt::Debug for Counts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counts")
            .field("next_quotient", &self.next_quotient)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Iterator for Counts<'_> {
    type Item = (Fingerprint, u64);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.at <= self.end {
                let r = self.view.table().remainder_bits();
                let (x, count, len) =
                    counter_code::decode(self.at, self.end, r, |i| self.view.remainder(i))?;
                self.at += len;
                let fingerprint = Fingerprint {
                    quotient: self.quotient as u64,
                    remainder: x,
                };
                return Some((fingerprint, count));
            }
            let from = self.next_quotient?;
            let quotient = runs::next_occupied_from(&self.view, from).filter(|&q| q < self.limit);
            let Some(quotient) = quotient else {
                self.next_quotient = None;
                return None;
            };
            let (start, end) = runs::run_of(&self.view, quotient)??;
            self.quotient = quotient;
            self.next_quotient = Some(quotient + 1);
            self.at = start;
            self.end = end;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::counter_code::MAX_ENTRY_SLOTS;
    use super::*;
    use crate::qf::load_cap::load_cap;

    /// One thread inserting keys of a thousand copies (entries of several slots) is refused
    /// once the entries take the cap's slots: the last insert admitted started below the cap,
    /// so the slots end at most one entry past it, and the count matches the table.
    #[test]
    fn repeated_keys_stop_at_the_cap_of_slots() {
        for r in [4, 10, 20] {
            let filter = CountingQf::with_bits(12, r).unwrap();
            let mut key = 0u64;
            loop {
                match filter.insert_count(&key, 1000) {
                    Ok(()) => key += 1,
                    Err(Error::Full) => break,
                    Err(other) => panic!("{other}"),
                }
            }
            let (slots, cap) = (filter.slots.sum(), load_cap(12));
            // The longest entry of a count up to 2000 (two keys may share a fingerprint).
            let longest = (0..1u64 << r.min(8))
                .chain([low_mask(r)])
                .map(|x| counter_code::entry_len(x, 2000, r))
                .max()
                .unwrap();
            assert!(longest > 1 && longest < MAX_ENTRY_SLOTS);
            assert!(
                (cap..cap + longest).contains(&slots),
                "r = {r}: {key} keys take {slots} slots, cap {cap}"
            );
            filter.check_invariants().unwrap();
        }
    }
}
