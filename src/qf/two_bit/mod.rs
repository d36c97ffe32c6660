//! `TwoBitQf`: the 2-status-bit quotient filter of paper 000 §2.2, made concurrent with locks
//! that live in the table's own empty slots (paper 000 §3.2, "2-Status-Bit Concurrent Quotient
//! Filter"; "Protocol" below gives the details).
//!
//! # Table
//!
//! Slots of `r + 2` bits: an occupied bit, a new-run bit and a remainder that is never 0 (see
//! [`table`]). A run is found from its supercluster start by counting occupied and new-run bits
//! ([`walk`]). Slot 0 is an empty guard, so every supercluster has an empty slot on its left.
//!
//! # Protocol
//!
//! The paper's own concurrent variant read-locks a supercluster start by taking its remainder
//! out of the table, which is only sound with a CAS over two neighbouring slots; the paper calls
//! it impractical. This filter locks *empty* slots instead. A **lock** is an empty slot with its
//! new-run bit set (remainder 0, which no element has); walks read it as empty. Every lock is
//! exclusive, and the locks need no memory beyond the table (the shift regions of the queries,
//! below, take 8 bytes per 1,024 groups).
//!
//! The **left lock** of an operation on canonical slot `c` is the empty slot `L` just left of
//! the supercluster holding `c` (the nearest slot at or left of `c` that is not filled). While
//! it is locked nobody can fill it, so the supercluster keeps its start, and every locked
//! operation on that supercluster, and every insert into the supercluster on its left (which
//! would fill `L`), needs the same lock. Inserts also take the **right lock**, on the first empty
//! slot `R` after the supercluster, because their shift fills it; that is the left lock of the
//! supercluster after, so its operations wait.
//!
//! * **insert**: lock-free if the canonical slot is empty and unlocked (one CAS fills it), or if
//!   the whole insert, with both boundary slots, lies in the one group loaded and neither
//!   boundary is locked (one CAS of that group; paper 000 §3.2, "Avoiding locks"). Otherwise:
//!   lock `L`, walk from it (if a slot up to `c` turned out empty, a removal split the
//!   supercluster meanwhile: unlock and restart), answer duplicates, lock `R` (waiting while it
//!   is locked), then shift right group by group, left to right; the last write fills `R`, which
//!   releases it; then unlock `L`. If `c` itself is the slot locked as `L`, it is empty and the
//!   insert writes its element there, which releases the lock.
//! * **contains**: first the whole lookup walked without locks (reading locks as empty), its shift
//!   region's word read before it (see `qf::shift_regions`). Its answer stands if the walk read
//!   only the group of the canonical slot (or the canonical slot has no run), if it found the
//!   remainder (a successful query writes nothing), or if it read only groups of its region and no
//!   locked shift was in flight there at any moment of the walk (the word, read again after the
//!   walk, says so; this is beyond the paper). Otherwise, i.e. a miss over several groups that a
//!   locked shift may have overlapped, lock `L` (the boundary the walk saw, if it is still an
//!   unlocked empty slot). If every group the walk read still holds the word it read, a walk under
//!   the lock would read the same and miss too, so the miss stands; otherwise walk under the lock
//!   (restart if the walk finds the supercluster changed). Then unlock. A hit of a walk over
//!   several groups can be a misread: a walk that overlaps a shift may read a group before and the
//!   next one after a commit and count a slot into the wrong run, so the hit is a false positive
//!   (also for a key just removed), about as likely as a fingerprint collision in that run and only
//!   while a writer shifts that supercluster.
//!   [`contains_hash_locked`](TwoBitQf::contains_hash_locked) trusts only one-group answers, walks
//!   no locked shift overlapped and answers confirmed under the lock.
//! * **locked shifts** (inserts and removals that take `L` and shift; not an insert that fills
//!   its own left lock) count themselves in flight on their shift regions from before their
//!   first group write there (a removal learns where its shift stops only on its way, and
//!   counts itself on each region as it reaches it) to after their last.
//! * **remove**: lock `L`, walk, shift the following elements left up to the next empty slot or
//!   the next run in its own canonical slot, unlock `L`. The slot it empties is written in its
//!   last group write, and the removal writes nothing after it.
//!
//! **Why the locked stretch is stable.** Every writer of a slot in a supercluster holds that
//! supercluster's `L` (removals and inserts into it), or holds `L` as its `R` (an insert into the
//! supercluster on its left, which merges the two), or is a lock-free insert, which needs the
//! boundary slots unlocked in the very word its CAS replaces, or fills an empty canonical slot in
//! one CAS (which extends a supercluster at its right end, or fills the unlocked left boundary
//! of the next one and merges the two: it needs that slot unlocked, so no locked writer holds
//! it; the walks do not depend on what lies after a run's end, and `R` is taken by a CAS that
//! fails on a filled slot). An insert never
//! empties a slot between its locks, and a removal empties one only in its last write, so an
//! empty slot inside another writer's stretch means that writer is done writing. Hence the holder
//! of `L` reads a supercluster that nobody else changes, except to grow it at its end.
//!
//! **No deadlock.** Locks are taken in increasing slot order: an operation waits for a lock
//! either holding nothing, or (an insert) holding only its `L`, while it waits for its `R > L`.
//! Nobody waits while holding a lock further right, and no operation waits during its shift (its
//! stretch is its own: its group CAS only retries when other lanes of the word changed). So every
//! chain of waits runs strictly to the right and ends at an operation that waits for nothing.
//!
//! **No false negatives, no lost inserts.** A group is always written with one CAS from its state
//! before an operation to its state after it, and an occupied bit changes in the same write as the
//! run it describes or in an earlier group. So every group, loaded once, is the restriction of a
//! consistent table, which is what the lock-free paths read; the locked paths read a stretch nobody
//! changes. A query's walk without locks over several groups is trusted when it finds the remainder
//! or when it read only groups of its region and no locked shift was in flight there while it
//! walked (it then read a consistent table: `qf::shift_regions` has the argument), so its `false`
//! always comes from one group, from such a walk, or from what it read under the lock (a walk, or
//! the words it confirmed there). A key whose insert returned is in both the state before and after
//! every later operation except its own removal. Set semantics hold because an insert decides
//! "already there" either from one consistent group or under `L`, which serialises inserts into a
//! supercluster.
//!
//! # Bounded growing
//!
//! [`TwoBitQf::grow`] moves the top remainder bit into the quotient, as
//! [`SequentialQf::grow`](crate::SequentialQf::grow) does. A remainder `10…0` would become 0,
//! which this table cannot store; the filter therefore stores a zero remainder as 1 from the
//! start ([`TwoBitTable::fingerprint`](table::TwoBitTable::fingerprint)), a rule that commutes
//! with growing, so every key is found after any number of doublings.

mod merge;
mod sweep;
pub(crate) mod table;
pub(crate) mod walk;

use std::hash::Hash;

use crate::counter::StripedCounter;
use crate::filter::{Error, Filter, Full, Remove};
use crate::hash::{hash_key, low_mask, Fingerprint};
use crate::storage::{with_fixed_width, Cursor, GroupSource, Guarded, Preview, Recorder, Rewriter};
use crate::sync::{Ordering, Waiter};

use crate::qf::load_cap::{refuse_unless_stored, LoadCap};
use crate::qf::seq_word::Writing;
use crate::qf::shift_regions::{QuietRegion, ShiftRegions};
use crate::qf::walk::UnlockedWalk;
use table::{element, is_filled, TwoBitTable, LOCK, OCCUPIED};
use walk::{InsertPlan, InsertStep, RunSearch};

/// A concurrent quotient filter with 2 status bits per slot (paper 000 §2.2, §3.2), locked
/// through its empty slots.
///
/// One status bit fewer than [`LocallyLockedQf`](crate::LocallyLockedQf) per slot; in exchange,
/// operations walk from the start of a supercluster rather than a cluster, and writes whose walk
/// leaves one 64-bit group lock the supercluster, as do queries that miss over several groups
/// while a locked write shifts elements in the same region of 1,024 groups (a hit needs no
/// lock, though while a shift moves its supercluster a hit can be a misread;
/// [`contains_locked`](TwoBitQf::contains_locked) trusts one only from one group, from a walk no
/// locked shift overlapped, or under the lock). All methods
/// take `&self`; share it with an [`Arc`](std::sync::Arc). [`grow`](TwoBitQf::grow) doubles the
/// table.
///
/// ```
/// use conqf::{Filter, Remove, TwoBitQf};
///
/// let mut filter = TwoBitQf::new(10_000, 0.001)?;
/// std::thread::scope(|s| {
///     for t in 0..2u64 {
///         let filter = &filter;
///         s.spawn(move || {
///             for i in 0..1000u64 {
///                 filter.insert(&(t * 1000 + i)).unwrap();
///             }
///         });
///     }
/// });
/// assert!((0..2000u64).all(|k| filter.contains(&k))); // never a false negative
/// assert_eq!(filter.remove(&7u64)?, true);
/// filter.grow()?; // twice the slots, one remainder bit less
/// assert!((8..2000u64).all(|k| filter.contains(&k)));
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct TwoBitQf {
    pub(crate) table: TwoBitTable,
    pub(crate) len: StripedCounter,
    /// Refuses inserts past about 31/32 of the slots.
    cap: LoadCap,
    /// Which regions a locked shift writes: a query's answer over several groups stands without
    /// the lock if the walk stayed in one region and no locked shift was in flight there.
    shifts: ShiftRegions,
}

impl TwoBitQf {
    /// A filter that holds `capacity` keys at a false-positive rate of at most `fpr`.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let filter = TwoBitQf::new(1000, 0.01)?;
    /// assert!(filter.capacity() >= 1000);
    /// assert!(filter.false_positive_rate() == 0.0);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        Ok(Self::from_table(TwoBitTable::new(capacity, fpr)?, 0))
    }

    /// A filter with `2^quotient_bits` canonical slots of `remainder_bits` remainder bits each
    /// (slots of `remainder_bits + 2` bits).
    ///
    /// ```
    /// use conqf::TwoBitQf;
    /// let filter = TwoBitQf::with_bits(16, 10)?; // the paper's r = 10
    /// assert_eq!((filter.quotient_bits(), filter.remainder_bits()), (16, 10));
    /// assert!(TwoBitQf::with_bits(0, 10).is_err());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] unless `1 <= quotient_bits <= 40`, `remainder_bits >= 1`,
    /// `quotient_bits + remainder_bits <= 64` and `remainder_bits + 2 <= 64`;
    /// [`Error::OutOfMemory`] if the table cannot be allocated.
    pub fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        let table = TwoBitTable::with_bits(quotient_bits, remainder_bits)?;
        Ok(Self::from_table(table, 0))
    }

    /// The filter over `table`, which holds `len` fingerprints.
    pub(crate) fn from_table(table: TwoBitTable, len: usize) -> Self {
        let (len, cap) = LoadCap::with_counter(table.quotient_bits, len);
        let shifts = ShiftRegions::of(&table.slots);
        TwoBitQf {
            table,
            len,
            cap,
            shifts,
        }
    }

    /// Quotient bits `q`: the table has `2^q` canonical slots.
    ///
    /// ```
    /// assert_eq!(conqf::TwoBitQf::with_bits(8, 6)?.quotient_bits(), 8);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn quotient_bits(&self) -> u32 {
        self.table.quotient_bits
    }

    /// Remainder bits `r` stored per slot.
    ///
    /// ```
    /// assert_eq!(conqf::TwoBitQf::with_bits(8, 6)?.remainder_bits(), 6);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn remainder_bits(&self) -> u32 {
        self.table.remainder_bits
    }

    /// The stored fingerprints in increasing `(quotient, remainder)` order (remainders as
    /// stored: a zero remainder is stored as 1). Only meaningful while no thread writes.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let filter = TwoBitQf::with_bits(4, 8)?;
    /// filter.insert_hash(0x1230_0000_0000_0000)?;
    /// let stored: Vec<_> = filter.fingerprints().collect();
    /// assert_eq!((stored[0].quotient, stored[0].remainder), (0x1, 0x23));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn fingerprints(&self) -> impl Iterator<Item = Fingerprint> + '_ {
        // Acquire: pairs with the writers' releases, for a caller that synchronised with them
        // (e.g. joined them) and then iterates.
        self.table.fingerprints(Ordering::Acquire)
    }

    /// Removes every key, keeping its table (size and memory) and parameters: the filter
    /// answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let mut filter = TwoBitQf::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        // No slot is a lock at rest, and the shift regions' words count no shift.
        self.table.slots.clear();
        self.cap.set_count(&self.len, 0);
    }

    /// Checks the table's invariants (no lock left, status bits, run order, the count). Only
    /// meaningful while no thread writes; for tests and debugging.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let filter = TwoBitQf::with_bits(6, 8)?;
    /// filter.insert(&"x")?;
    /// assert_eq!(filter.check_invariants(), Ok(()));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn check_invariants(&self) -> Result<(), String> {
        self.table.check(self.len.sum())
    }

    /// This filter with shift regions of two groups each (`--cfg loom` only), so that a model's
    /// table of a few groups holds several regions and its shifts cross from one into the next.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn with_two_group_shift_regions(mut self) -> Self {
        self.shifts = ShiftRegions::of_small(&self.table.slots, 1);
        self
    }

    /// Doubles the number of canonical slots without rehashing (bounded growing, paper 000 §2.1):
    /// the top remainder bit moves into the quotient, so every stored key is still found and the
    /// fill halves. The fingerprints keep their `q + r` bits, but a zero remainder is stored (and
    /// looked up) as 1, which makes 1 twice as likely as any other remainder, and the fewer the
    /// bits the more that weighs: the false-positive rate for the stored keys, `δ (2^r + 2) /
    /// 4^r` at fill `δ`, rises by `(2^r + 4) / (2^r + 2)` per doubling (0.2% at `r = 10`, 11% at
    /// `r = 4`; three doublings from `r = 4` to 1 made it 1.8 times as high, 3.96e-2 to 7.11e-2
    /// measured on 2M absent keys, as [`false_positive_rate`](Filter::false_positive_rate)
    /// reports). A doubling makes room for more keys, not a lower rate. Two fingerprints
    /// that become equal (`(x, 10…0)` and `(x, 10…01)` both become `(2x + 1, 1)`) are stored
    /// once, as if their keys had been inserted into the larger table.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let mut filter = TwoBitQf::with_bits(6, 8)?;
    /// for k in 0..50u32 {
    ///     filter.insert(&k)?;
    /// }
    /// filter.grow()?;
    /// assert_eq!((filter.quotient_bits(), filter.remainder_bits()), (7, 7));
    /// assert!((0..50u32).all(|k| filter.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if only one remainder bit is left or the quotient would
    /// exceed 40 bits; [`Error::OutOfMemory`] if the larger table cannot be allocated; the
    /// filter is then unchanged.
    pub fn grow(&mut self) -> Result<(), Error> {
        if self.table.remainder_bits < 2 {
            return Err(Error::InvalidParameters(
                "cannot grow: only one remainder bit is left".into(),
            ));
        }
        let (q, r) = (self.table.quotient_bits + 1, self.table.remainder_bits - 1);
        let mut grown = TwoBitTable::with_bits(q, r)?;
        // Relaxed: `&mut self`, so no other thread touches the table.
        let refined = self
            .table
            .fingerprints(Ordering::Relaxed)
            .map(|f| Fingerprint {
                quotient: (f.quotient << 1) | (f.remainder >> r),
                remainder: (f.remainder & low_mask(r)).max(1),
            });
        // Twice the canonical slots at half the fill cannot overflow where the smaller table
        // did not.
        let stored = table::build_sorted(&mut grown.slots, refined)?;
        *self = Self::from_table(grown, stored);
        Ok(())
    }

    // ----- Lock-free paths --------------------------------------------------------------------

    /// Inserts with one CAS of the canonical slot's group if the whole insert, both boundary
    /// slots included, lies in that group and neither boundary is locked. If the CAS fails only
    /// because other lanes of the group changed (the insert's own stretch reads the same), it
    /// plans once more on the new word (a whole new plan, so the test only limits the retries:
    /// it is not needed for correctness). `None`: take the locked path.
    fn insert_in_group(&self, quotient: usize, remainder: u64) -> Option<Result<bool, Full>> {
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
    fn insert_into_word(
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
    fn contains_in_group(&self, quotient: usize, remainder: u64) -> Option<bool> {
        let slots = &self.table.slots;
        let (group, _) = slots.layout().locate(quotient);
        // Acquire: pairs with the Release of the writer that published the group.
        let word = slots.load_group(group, Ordering::Acquire);
        let mut cursor = slots.cursor_in_group(quotient, word);
        walk::lookup(&mut cursor, quotient, remainder).map(|(found, _)| found)
    }

    /// The whole lookup walked without locks (locks read as empty). Its answer is exact if the
    /// walk read only the canonical slot's group, which it loaded once: a consistent piece of
    /// the table. A walk over several groups that overlaps a shift may count a stale or doubled
    /// slot into the wrong run: its `true` is then at worst a false positive (about as likely
    /// as a fingerprint collision in that run), and its `false` proves nothing, since the shift
    /// may have carried the element past the walk.
    ///
    /// So the word of the canonical slot's shift region is read before the walk: its answer is
    /// exact also if the walk stayed in that region and no locked shift was in flight there at
    /// any moment of it ([`ShiftRegions::walk_stands`]; `qf::shift_regions` has the argument).
    ///
    /// `recorder` keeps the words the walk read, for [`locked_query`](Self::locked_query) to
    /// confirm a miss without walking again. The walk is compiled per slot width
    /// ([`with_fixed_width!`]), so it locates slots with constants.
    #[inline]
    fn walk_without_locks(
        &self,
        recorder: &Recorder<'_>,
        quotient: usize,
        remainder: u64,
    ) -> (QuietRegion, UnlockedWalk) {
        with_fixed_width!(recorder => {
            // The layout is a constant here: locating the group takes an instruction or two.
            let quiet = self.shifts.read_begin(recorder.layout().locate(quotient).0);
            // Acquire: pairs with the Release of the writers that published the groups; and
            // `ShiftRegions::walk_stands` needs it.
            let mut cursor = Cursor::over(&recorder, quotient, Ordering::Acquire);
            let canonical_group = cursor.group();
            let lookup = walk::lookup(&mut cursor, quotient, remainder);
            (quiet, UnlockedWalk::new(lookup, canonical_group, &cursor))
        })
    }

    /// The query: the walk without locks answers if it read one group, if it stands on its
    /// shift region ([`ShiftRegions::walk_stands`]), or if it found the remainder and
    /// `unlocked_hits` trusts that; otherwise the locked query does.
    #[inline(always)]
    pub(crate) fn contains_trusting(
        &self,
        quotient: usize,
        remainder: u64,
        unlocked_hits: bool,
    ) -> bool {
        loop {
            let recorder = Recorder::new(&self.table.slots);
            let (quiet, walk) = self.walk_without_locks(&recorder, quotient, remainder);
            if walk.one_group
                || (walk.found && unlocked_hits)
                || self.shifts.walk_stands(quiet, &walk)
            {
                return walk.found;
            }
            let seen = walk.start.map(|boundary| (boundary, &recorder, walk.found));
            if let Some(found) = self.locked_query(quotient, remainder, seen) {
                return found;
            }
        }
    }

    /// [`contains_hash`](Filter::contains_hash) without trusting a hit of a walk without
    /// locks: `true` only if the fingerprint was stored at some moment of the call, never from
    /// a run misread during a concurrent shift (crate docs, "Consistency"). For callers that
    /// act on a `true`. It costs a lock whenever the answer is not in the canonical slot's
    /// group and the walk cannot stand on its shift region (a locked shift was in flight in
    /// its region of 1,024 groups, the walk crossed into another region, or it gave up on what
    /// it read), hit or miss.
    ///
    /// ```
    /// use conqf::{Filter, Remove, TwoBitQf};
    ///
    /// let filter = TwoBitQf::new(1_000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// assert!(filter.contains_hash_locked(conqf::hash_key(&42u64)));
    /// filter.remove(&42u64)?;
    /// assert!(!filter.contains_locked(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn contains_hash_locked(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.table.fingerprint(hash);
        self.contains_trusting(quotient, remainder, false)
    }

    /// [`contains_hash_locked`](Self::contains_hash_locked) for a key.
    pub fn contains_locked<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_locked(hash_key(key))
    }

    // ----- Locks ------------------------------------------------------------------------------

    /// Locks the nearest slot at or left of `quotient` that is not filled (the empty slot left of
    /// its supercluster, or `quotient` itself if it is empty), waiting while it is locked.
    /// Returns its index.
    fn lock_left(&self, quotient: usize) -> usize {
        let waiter = Waiter::new();
        loop {
            // Acquire: the scan decides where the supercluster starts from what it reads.
            let mut cursor = self.table.slots.cursor(quotient, Ordering::Acquire);
            // Slot 0 is never filled, so the walk always finds a boundary.
            let left = walk::back_to_boundary(&mut cursor).unwrap_or(0);
            if cursor.slot() == LOCK {
                waiter.wait();
            } else if self.try_lock(left) {
                return left;
            }
        }
    }

    /// Locks the first slot after `quotient` that is not filled (the empty slot right of its
    /// supercluster), waiting while it is locked. Returns its index.
    fn lock_right(&self, quotient: usize) -> usize {
        let waiter = Waiter::new();
        let last = self.table.slots.len() - 1;
        loop {
            // Acquire: as in `lock_left`.
            let mut cursor = self.table.slots.cursor(quotient, Ordering::Acquire);
            // The last slot is never filled, so the walk always finds one.
            let right = walk::seek_empty(&mut cursor).unwrap_or(last);
            if cursor.slot() == LOCK {
                waiter.wait();
            } else if self.try_lock(right) {
                return right;
            }
        }
    }

    /// Locks slot `index` if it is empty and unlocked.
    fn try_lock(&self, index: usize) -> bool {
        self.table
            .slots
            .update_slot(index, |now| (now == 0).then_some(LOCK))
    }

    /// Releases the lock on `index`, leaving it empty.
    fn unlock(&self, index: usize) {
        let released = self
            .table
            .slots
            .update_slot(index, |now| (now == LOCK).then_some(0));
        debug_assert!(released, "slot {index} was not locked");
    }

    // ----- Locked paths -----------------------------------------------------------------------

    /// The insert under the left and right locks. `None`: the supercluster changed before the
    /// left lock was taken; restart.
    fn insert_locked(&self, quotient: usize, remainder: u64) -> Option<Result<bool, Full>> {
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
    fn shifting(&self, left: usize, last: usize) -> Writing<'_> {
        let layout = self.table.slots.layout();
        self.shifts
            .shifting(layout.locate(left).0, layout.locate(last).0)
    }

    /// Plans an insert by walking from the locked slot `left`.
    fn plan_locked(&self, left: usize, quotient: usize, remainder: u64) -> Option<InsertStep> {
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
    fn shift_in_locked(&self, plan: &InsertPlan) {
        // Acquire: as in `plan_locked`.
        let mut read = self.table.slots.cursor(plan.position, Ordering::Acquire);
        let mut rewriter = Rewriter::new(&self.table.slots, Guarded, OCCUPIED);
        walk::shift_in(&mut read, &mut rewriter, plan);
        rewriter.finish();
    }

    /// The query under the left lock. `None`: the supercluster changed; restart.
    ///
    /// `seen`: what a walk without locks just saw: the boundary, the words it read and its
    /// answer. The boundary is locked if it is still empty and unlocked, which saves the walk
    /// back to it. If then every group that walk read still holds the word it read (apart from
    /// the new lock), a walk under the lock would read those words and give the same answer,
    /// so that answer is returned without walking again. Otherwise the walk under the lock
    /// checks that every slot from the lock to `quotient` is filled, so the lock is the
    /// boundary (else: restart).
    fn locked_query(
        &self,
        quotient: usize,
        remainder: u64,
        seen: Option<(usize, &Recorder<'_>, bool)>,
    ) -> Option<bool> {
        let hinted = seen.filter(|&(left, _, _)| self.try_lock(left));
        if let Some((left, recorder, found)) = hinted {
            let layout = self.table.slots.layout();
            let (group, offset) = layout.locate(left);
            let lock_bits = layout.slot_mask() << (offset * layout.bits());
            // Acquire: as for the walk under the lock this replaces.
            if recorder.unchanged(group, lock_bits, Ordering::Acquire) {
                self.unlock(left);
                return Some(found);
            }
        }
        let left = match hinted {
            Some((left, _, _)) => left,
            None => self.lock_left(quotient),
        };
        if left == quotient {
            self.unlock(left);
            return Some(false);
        }
        // Acquire: as in `plan_locked`.
        let mut cursor = self.table.slots.cursor(left, Ordering::Acquire);
        let answer = walk::seek_run(&mut cursor, quotient).and_then(|run| {
            if run.exists {
                walk::search_run(&mut cursor, remainder)
                    .map(|found| matches!(found, RunSearch::Found(_)))
            } else {
                Some(false)
            }
        });
        self.unlock(left);
        answer
    }

    /// The removal under the left lock. `None`: the supercluster changed; restart.
    fn remove_locked(&self, quotient: usize, remainder: u64) -> Option<bool> {
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

impl Filter for TwoBitQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        if !self.cap.admits(&self.len) {
            return refuse_unless_stored(|| self.contains_hash_locked(hash));
        }
        let (quotient, remainder) = self.table.fingerprint(hash);
        self.table.slots.prefetch_neighbour_lines(quotient);
        loop {
            if let Some(result) = self.insert_in_group(quotient, remainder) {
                return result.map_err(Error::from);
            }
            if let Some(result) = self.insert_locked(quotient, remainder) {
                return result.map_err(Error::from);
            }
        }
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.table.fingerprint(hash);
        self.table.slots.prefetch_neighbour_lines(quotient);
        self.contains_trusting(quotient, remainder, true)
    }

    fn len(&self) -> usize {
        self.len.sum()
    }

    fn capacity(&self) -> usize {
        self.table.capacity()
    }

    fn memory_bytes(&self) -> usize {
        self.table.slots.memory_bytes() + self.shifts.memory_bytes() + self.len.memory_bytes()
    }

    fn false_positive_rate(&self) -> f64 {
        self.table.false_positive_rate(self.len.sum())
    }
}

impl Remove for TwoBitQf {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        let (quotient, remainder) = self.table.fingerprint(hash);
        self.table.slots.prefetch_neighbour_lines(quotient);
        loop {
            if self.contains_in_group(quotient, remainder) == Some(false) {
                return Ok(false);
            }
            if let Some(removed) = self.remove_locked(quotient, remainder) {
                return Ok(removed);
            }
        }
    }
}

impl std::fmt::Debug for TwoBitQf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoBitQf")
            .field("quotient_bits", &self.table.quotient_bits)
            .field("remainder_bits", &self.table.remainder_bits)
            .field("len", &self.len.sum())
            .finish_non_exhaustive()
    }
}

/// A fast-path insert whose CAS lost: the group as it is now, and the slots the insert read.
#[derive(Debug, PartialEq, Eq)]
struct Lost {
    actual: u64,
    left: usize,
    end: usize,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The hash of fingerprint `(quotient, remainder)` in a table of `2^3` slots and 14-bit
    /// remainders (16-bit slots, 4 per group).
    fn key(quotient: u64, remainder: u64) -> u64 {
        ((quotient << 14) | remainder) << (64 - 17)
    }

    fn filter(keys: &[u64]) -> TwoBitQf {
        let filter = TwoBitQf::with_bits(3, 14).unwrap();
        for &k in keys {
            assert_eq!(filter.insert_hash(k), Ok(true));
        }
        filter.check_invariants().unwrap();
        filter
    }

    /// A query's walk without locks over a half-committed removal: the removal of `(1,2)` from
    /// the supercluster in slots 2-5 committed in group 0 (slots 0-3) but not yet in group 1.
    /// The walk for `(3,7)` (canonical slot 4) counts the moved `(2,7)` in slot 3 as a run that
    /// is passed, then takes its stale copy in slot 4 for quotient 3's run: a misread hit, which
    /// must not be called exact. Walks inside one group are.
    #[test]
    fn a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact() {
        let torn = half_committed_removal();
        let (_, misread) = walk_without_locks(&torn, 4, 7);
        assert!(misread.found, "the stale copy reads as quotient 3's run");
        assert!(!misread.one_group);
        assert_eq!(misread.start, Some(1));
        let (_, inside) = walk_without_locks(&torn, 2, 1);
        assert!(inside.found && inside.one_group);
        let (_, unoccupied) = walk_without_locks(&torn, 6, 7);
        assert!(!unoccupied.found && unoccupied.one_group);
    }

    /// The table of [`a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact`]:
    /// `(1,1), (1,2), (2,7), (3,9)` with the removal of `(1,2)` committed in group 0 only.
    fn half_committed_removal() -> TwoBitQf {
        half_committed(
            &[key(1, 1), key(1, 2), key(2, 7), key(3, 9)],
            &[key(1, 1), key(2, 7), key(3, 9)],
        )
    }

    /// The table holding `before`, with group 0 (slots 0-3) replaced by that of the table
    /// holding `after`: a shift committed in group 0 but not yet in group 1.
    fn half_committed(before: &[u64], after: &[u64]) -> TwoBitQf {
        let (torn, after) = (filter(before), filter(after));
        let group_0 = after.table.slots.load_group(0, Ordering::Relaxed);
        torn.table.slots.store_group(0, group_0, Ordering::Relaxed);
        torn
    }

    fn walk_without_locks(
        filter: &TwoBitQf,
        quotient: usize,
        remainder: u64,
    ) -> (QuietRegion, UnlockedWalk) {
        filter.walk_without_locks(&Recorder::new(&filter.table.slots), quotient, remainder)
    }

    /// In the torn table [`half_committed_removal`], the walk for the stored `(3,9)` (canonical
    /// slot 4) counts the moved `(2,7)` as a run and takes the stale copy in slot 4 for quotient
    /// 3's run: a miss over two groups that cannot tell. So it stands only if no locked shift of
    /// the region was in flight at any moment of the walk. Counted in flight (as the removal
    /// that tore it would be) before the walk, or started during it, the shift makes the miss
    /// go to the locked query.
    #[test]
    fn a_miss_stands_only_if_no_locked_shift_was_in_flight_during_the_walk() {
        let torn = half_committed_removal();
        let (quiet, walk) = walk_without_locks(&torn, 4, 9);
        assert!(!walk.found && !walk.one_group, "a miss over two groups");
        assert!(
            torn.shifts.walk_stands(quiet, &walk),
            "no shift counted: the miss stands"
        );

        let shifting = torn.shifting(1, 6);
        let (quiet, walk) = walk_without_locks(&torn, 4, 9);
        assert!(
            !torn.shifts.walk_stands(quiet, &walk),
            "a shift in flight before the walk"
        );
        drop(shifting);

        let (quiet, walk) = walk_without_locks(&torn, 4, 9);
        drop(torn.shifting(1, 6));
        assert!(
            !torn.shifts.walk_stands(quiet, &walk),
            "a shift started during the walk"
        );
    }

    /// A half-committed removal can also show more run starts than occupied slots before the
    /// canonical slot, which no consistent table has: the removal of `(1,2)` moved `(2,5)` into
    /// slot 3 in group 0, and group 1 still holds its old copy in slot 4. The walk for
    /// `(4,6)` must give up (not panic on the count, not be called exact).
    #[test]
    fn a_walk_counting_more_runs_than_occupied_slots_gives_up() {
        let torn = half_committed(
            &[key(1, 1), key(1, 2), key(2, 5), key(4, 6)],
            &[key(1, 1), key(2, 5), key(4, 6)],
        );
        let (quiet, walk) = walk_without_locks(&torn, 5, 6);
        assert!(!walk.found && !walk.one_group);
        assert!(
            !torn.shifts.walk_stands(quiet, &walk),
            "a walk that gave up"
        );
    }

    /// A removal counts itself on each shift region its shift writes, also those it reaches
    /// only on its way: here regions 0 and 1 of 1,024 one-slot groups, and no other.
    #[test]
    fn a_removal_shifting_into_the_next_region_counts_itself_there() {
        use crate::qf::shift_regions::REGION_GROUPS;
        // 34-bit slots, one per group: region `k` is slots `1,024 k..1,024 (k + 1)`, and
        // quotient `x` lives at slot `x + 1`.
        let filter = TwoBitQf::with_bits(12, 32).unwrap();
        let key = |quotient: usize, remainder: u64| ((quotient as u64) << 32 | remainder) << 20;
        let boundary = REGION_GROUPS;
        // Quotient `run`'s five elements fill slots `boundary - 3..=boundary + 1`, and quotient
        // 5's two stay far inside region 0.
        let run = boundary - 4;
        for remainder in 1..=5 {
            filter.insert_hash(key(run, remainder)).unwrap();
        }
        filter.insert_hash(key(5, 1)).unwrap();
        filter.insert_hash(key(5, 2)).unwrap();
        let quiet = |group: usize| (group, filter.shifts.read_begin(group));
        let stands = |(group, quiet)| filter.shifts.read_stands(quiet, group, group);
        let before = [quiet(0), quiet(boundary), quiet(2 * boundary)];

        assert_eq!(filter.remove_hash(key(5, 1)), Ok(true));
        assert!(
            !stands(before[0]),
            "the removal in region 0 counted itself there"
        );
        assert!(stands(before[1]) && stands(before[2]));

        let before = [quiet(0), quiet(boundary), quiet(2 * boundary)];
        assert_eq!(filter.remove_hash(key(run, 1)), Ok(true));
        assert!(!stands(before[0]), "the shift starts in region 0");
        assert!(!stands(before[1]), "and reaches into region 1");
        assert!(stands(before[2]), "but not region 2");
        assert!(
            !filter.shifts.read_begin(boundary).shift_in_flight(),
            "it ended"
        );
        assert!((2..=5).all(|r| filter.contains_hash(key(run, r))));

        // Now the run fills slots `boundary - 3..=boundary`: the shift's only write in region
        // 1 empties its first slot.
        let before = [quiet(0), quiet(boundary)];
        assert_eq!(filter.remove_hash(key(run, 2)), Ok(true));
        assert!(!stands(before[0]) && !stands(before[1]));

        // A removal whose canonical slot is region 1's first (its left lock, slot
        // `boundary - 4`, lies in region 0) writes nothing in region 0.
        filter.insert_hash(key(boundary - 1, 1)).unwrap();
        let before = [quiet(0), quiet(boundary)];
        assert_eq!(filter.remove_hash(key(boundary - 1, 1)), Ok(true));
        assert!(stands(before[0]) && !stands(before[1]));
        assert!((3..=5).all(|r| filter.contains_hash(key(run, r))));
        filter.check_invariants().unwrap();
    }

    #[test]
    fn memory_counts_the_shift_regions_words() {
        // 2^20 canonical slots of 12 bits, 5 per group: 210,535 groups with the guard and the
        // overflow tail, so 206 regions of 1,024 groups, 8 bytes each.
        let filter = TwoBitQf::with_bits(20, 10).unwrap();
        let table = filter.table.slots.memory_bytes();
        let groups = filter
            .table
            .slots
            .layout()
            .groups_for(filter.table.slots.len());
        let count = filter.len.memory_bytes();
        assert_eq!(
            filter.memory_bytes(),
            table + 8 * groups.div_ceil(1024) + count
        );
        assert!(filter.memory_bytes() > table);
    }

    #[test]
    fn fast_path_insert_refuses_a_locked_boundary() {
        // Quotient 1 (slot 2) holds one element; slot 1 is its left boundary, slot 3 its right.
        let filter = filter(&[key(1, 5)]);
        assert_eq!(filter.lock_left(2), 1);
        assert_eq!(filter.insert_in_group(2, 9), None);
        // Queries read through the lock.
        assert_eq!(filter.contains_in_group(2, 5), Some(true));
        filter.unlock(1);
        assert!(filter.try_lock(3));
        assert_eq!(filter.insert_in_group(2, 9), None);
        filter.unlock(3);
        assert_eq!(filter.insert_in_group(2, 9), Some(Ok(true)));
        filter.check_invariants().unwrap();
    }

    #[test]
    fn fast_path_insert_losing_to_another_lane_can_plan_again_on_the_new_word() {
        // Group 1 holds slots 4-7: quotient 4's element at slot 5 (the index the walks take),
        // the insert's stretch 4-6.
        let filter = filter(&[key(4, 5)]);
        let stale = filter.table.slots.load_group(1, Ordering::Relaxed);
        // Another writer fills slot 7 (quotient 6), outside the stretch but in the group.
        assert_eq!(filter.insert_hash(key(6, 1)), Ok(true));
        let Some(Err(lost)) = filter.insert_into_word(5, 9, 1, stale) else {
            panic!("the CAS on the stale word must fail");
        };
        assert_eq!((lost.left, lost.end), (4, 6));
        let slot = |word, index| filter.table.slots.cursor_in_group(index, word).slot();
        assert!((4..=6).all(|i| slot(stale, i) == slot(lost.actual, i)));
        assert_ne!(slot(stale, 7), slot(lost.actual, 7));
        assert_eq!(
            filter.insert_into_word(5, 9, 1, lost.actual),
            Some(Ok(Ok(true)))
        );
        filter.check_invariants().unwrap();
        assert!([key(4, 5), key(4, 9), key(6, 1)]
            .iter()
            .all(|&k| filter.contains_hash(k)));
    }

    #[test]
    fn locked_insert_into_an_empty_canonical_slot_fills_its_lock() {
        let filter = filter(&[]);
        assert_eq!(filter.insert_locked(5, 7), Some(Ok(true)));
        assert_eq!(
            filter.table.slots.get(5, Ordering::Relaxed),
            element(7, true) | OCCUPIED
        );
        filter.check_invariants().unwrap();
    }

    #[test]
    fn insert_waits_for_the_right_lock_held_by_the_next_supercluster() {
        // Slot 2 (quotient 1) and slot 4 (quotient 3) with empty slot 3 between.
        let filter = filter(&[key(1, 5), key(3, 5)]);
        // An operation on quotient 3 holds slot 3 as its left lock.
        assert_eq!(filter.lock_left(4), 3);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| filter.insert_locked(2, 9));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(filter.table.slots.get(3, Ordering::Acquire), LOCK);
            filter.unlock(3);
            assert_eq!(waiting.join().unwrap(), Some(Ok(true)));
        });
        filter.check_invariants().unwrap();
        assert!(filter.contains_hash(key(3, 5)) && filter.contains_hash(key(1, 9)));
    }

    #[test]
    fn locked_walks_fail_when_the_boundary_is_stale() {
        // Slots 2-4 hold quotient 1's run, slot 5 quotient 3's element; slot 1 is the boundary.
        let filter = filter(&[key(1, 1), key(1, 2), key(1, 3), key(3, 4)]);
        assert_eq!(filter.lock_left(4), 1);
        let mut cursor = filter.table.slots.cursor(1, Ordering::Relaxed);
        assert!(walk::seek_run(&mut cursor, 4).is_some());
        filter.unlock(1);
        // A walk from an empty slot further left meets the empty slot 1: the caller restarts.
        let mut cursor = filter.table.slots.cursor(0, Ordering::Relaxed);
        assert!(walk::seek_run(&mut cursor, 4).is_none());
    }
}
