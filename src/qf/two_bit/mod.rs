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

mod locked;
mod locks;
mod merge;
mod one_group;
mod query;
mod sweep;
pub(crate) mod table;
pub(crate) mod walk;

use crate::counter::StripedCounter;
use crate::filter::{Error, Filter, Remove};
use crate::hash::{low_mask, Fingerprint};
use crate::sync::Ordering;

use crate::qf::load_cap::{refuse_unless_stored, LoadCap};
use crate::qf::shift_regions::ShiftRegions;
use table::TwoBitTable;

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
    /// A filter that holds `capacity` keys at an expected false-positive rate of at most `fpr`.
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
    ///
    /// # Errors
    /// A description of the first violation.
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

#[cfg(all(test, not(loom)))]
mod tests;
