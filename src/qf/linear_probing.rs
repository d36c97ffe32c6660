//! `LinearProbingQf`: the lock-free linear probing quotient filter of paper 000 §2.2 (the
//! variant) and §3.1 (its concurrent form).
//!
//! # What the table holds
//!
//! `2^q` addressable slots plus a short overflow tail
//! ([`overflow_slots`](super::overflow_slots)), packed into 64-bit groups by [`SlotArray`]. A
//! slot is `r` bits wide and holds nothing but a remainder: there are no status bits. `r` is the
//! paper's `r + 3`: the three bits the status bits would have taken go to the remainder instead.
//! Remainders are never 0
//! ([`Fingerprint::nonzero`](crate::Fingerprint::nonzero)), so 0 marks an empty slot.
//!
//! A key with fingerprint `(quotient, remainder)` is stored in the first empty slot at or after
//! slot `quotient`, like a key in a linear probing hash table. Stored remainders are never moved,
//! so the table cannot tell which canonical slot an element came from; a query therefore compares
//! its remainder with *every* slot from its canonical slot up to the first empty slot (all slots
//! of a group at once, beyond the canonical slot). That costs more comparisons than a status-bit
//! filter, which the three extra remainder bits pay for: by Corollary 1 the false-positive rate
//! is at most `½ (1 + 1/(1-δ)²) / (2^r - 1)` at fill `δ`
//! ([`linear_probing_fpr`](crate::linear_probing_fpr), which says why it is a bound). It grows
//! quickly past about 70% fill,
//! where the default load cap stops inserts (see [`LinearProbingBuilder::max_load`]).
//!
//! # Why it is lock-free and has no false negatives
//!
//! A slot changes at most once, from 0 to a remainder, and is never cleared (there is no
//! removal). An insert scans to the first empty slot and fills it with one CAS of the slot's
//! group. If the CAS fails, another thread changed that group, and each such change fills a
//! slot: so a failed CAS means another thread made progress, and since the table has finitely
//! many slots, every insert ends after a bounded number of steps however the threads are
//! scheduled. No thread ever waits for another.
//!
//! Once an insert has stored its remainder in slot `s`, every slot from the canonical slot to
//! `s` is non-empty for ever: the insert saw them non-empty, and non-empty slots stay so. A query
//! that starts later therefore walks past all of them and reaches `s` (paper 000 §3.1: "the
//! contents of a slot never change once something is stored within it").
//!
//! Two inserts of the same fingerprint store it once: both scan to the same first empty slot, or
//! the later one walks past the slot the earlier one filled; the CAS decides which one stores it
//! and the other re-reads the slot and returns `Ok(false)`.
//!
//! # Full
//!
//! The load cap counts places, shared by the inserts through a striped budget (`budget.rs`): an
//! insert takes a place when its scan reaches an empty slot, after it has found its remainder
//! absent, and gives it back if it stores nothing. `Err(Full)` means that when the insert asked,
//! every place was taken by a stored key or by an insert still running (which is what `len` counts
//! too), and that the key was absent. An insert refused a place therefore reads the empty slot
//! again: a racing insert of the same key may have filled it since the scan, and then the answer is
//! `Ok(false)`. If the slot is still empty, the key was absent at the refusal too (a stored key
//! stays stored, in the first empty slot of its stretch), so `Full` is the answer of that moment.
//! An insert whose scan reaches the table's last slot, which always stays empty so that no scan
//! runs off the end, also gets `Full` with places left: the stretch from its quotient to the end of
//! the table is taken, and its remainder is not in it.
//!
//! # Memory orderings
//!
//! The filter's own guarantees need only the coherence of each group word (which every atomic
//! ordering has): a load that happens after a CAS sees that CAS's word or a later one. Inserts
//! publish with `Release` and every load (scans, queries, the value a failed CAS returns) is
//! `Acquire` so that answers *through the filter* are ordered too: if thread A inserts `k1`
//! and then `k2`, and thread B finds `k2`, the `Acquire` load that found it synchronises with
//! A's `Release` CAS, so a later `contains(k1)` in B sees `k1` (with `Relaxed`, B could find
//! `k2` and still miss `k1` on weakly ordered hardware), provided A's insert stored `k2` (if it
//! was there already, B may have found an earlier thread's copy). The same holds when B learns
//! of `k2` from an insert that returned `Ok(false)`. Independent keys are not ordered against each
//! other (no `SeqCst`): two readers may see two unrelated inserts in different orders, which
//! the crate's contract allows.

use std::fmt;

use crate::budget::CapBudget;
use crate::filter::{Error, Filter};
use crate::hash::Splitter;
use crate::sizing;
use crate::storage::{with_fixed_width, Cursor, GroupSource, LaneFields, SlotArray};
use crate::sync::Ordering;

use super::{usual_slots, walk};

/// A lock-free quotient filter with linear probing and no status bits (paper 000 §2.2, §3.1).
///
/// All methods take `&self`; share it between threads with an [`Arc`](std::sync::Arc) or a
/// scoped borrow. Inserts are one CAS each and never wait; queries never write. It cannot remove
/// keys or grow.
///
/// The number of stored keys is capped at [`capacity`](Filter::capacity), by default 70% of the
/// `2^q` addressable slots; past the cap inserts return [`Error::Full`]. Use
/// [`builder`](LinearProbingQf::builder) to choose another cap.
///
/// ```
/// use conqf::{Filter, LinearProbingQf};
///
/// let filter = LinearProbingQf::new(10_000, 0.001)?;
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
/// assert_eq!(filter.insert(&7u64)?, false); // already there
/// assert!(filter.false_positive_rate() <= 0.001);
///
/// // The paper's r = 13 table of 2^16 slots, allowed to fill to 72% as in its Figure 2:
/// let paper = LinearProbingQf::builder().max_load(0.72).build_with_bits(16, 13)?;
/// assert_eq!(paper.capacity(), 47_185);
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct LinearProbingQf {
    pub(crate) slots: SlotArray,
    quotient_bits: u32,
    remainder_bits: u32,
    /// Splits a hash into its quotient and non-zero remainder.
    splitter: Splitter,
    max_load: f64,
    /// The places under the cap, `floor(max_load * 2^q)`: stored elements plus inserts that
    /// have taken a place and not yet finished are the places used. Only inserts touch it;
    /// queries never do.
    pub(crate) budget: CapBudget,
}

/// Configures a [`LinearProbingQf`] before building it: today only its load cap.
///
/// ```
/// use conqf::{Filter, LinearProbingQf};
/// let filter = LinearProbingQf::builder().max_load(0.5).build(1000, 0.01)?;
/// assert!(filter.capacity() >= 1000);
/// assert!(filter.capacity() as f64 <= 0.5 * (1u64 << filter.quotient_bits()) as f64);
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LinearProbingBuilder {
    max_load: f64,
}

impl Default for LinearProbingBuilder {
    fn default() -> Self {
        LinearProbingBuilder {
            max_load: LinearProbingQf::DEFAULT_MAX_LOAD,
        }
    }
}

impl LinearProbingBuilder {
    /// A builder with the default load cap of 70%.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most the table may be filled, as a fraction of its `2^q` addressable slots, in
    /// `(0, 1]`. Inserts past it return [`Error::Full`]. [`build`](Self::build) also sizes the
    /// remainder for this fill, so the target false-positive rate holds up to the cap.
    ///
    /// The value is checked when the filter is built.
    pub fn max_load(mut self, max_load: f64) -> Self {
        self.max_load = max_load;
        self
    }

    /// A filter that holds `capacity` keys, up to the load cap, at a false-positive rate of at
    /// most `fpr` (Corollary 1's bound at the cap's fill; the measured rate is about 0.8 of it
    /// there, see [`linear_probing_fpr`](crate::linear_probing_fpr)).
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, the load cap
    /// is not in `(0, 1]`, or the table would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn build(self, capacity: usize, fpr: f64) -> Result<LinearProbingQf, Error> {
        sizing::check_capacity_and_fpr(capacity, fpr)?;
        let max_load = check_max_load(self.max_load)?;
        let q = sizing::quotient_bits_for(capacity, max_load)?;
        // Size the remainder at the fill the cap allows, which may be a little above
        // `capacity / 2^q`: the promised rate must hold for every fill the filter accepts.
        let cap_load = cap_for(q, max_load) as f64 / (1u64 << q) as f64;
        let r = sizing::smallest_bits(fpr, (1, 64 - q), "remainder", |r| {
            sizing::linear_probing_fpr(cap_load, r)
        })?;
        self.build_with_bits(q, r)
    }

    /// A filter with `2^quotient_bits` addressable slots of `remainder_bits` bits (the paper's
    /// `r + 3`: its linear probing filter with `r = 10` is `build_with_bits(q, 13)`).
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] unless `1 <= quotient_bits <= 40`, `remainder_bits >= 1`
    /// and `quotient_bits + remainder_bits <= 64`, if the load cap is not in `(0, 1]` or leaves
    /// room for no key; [`Error::OutOfMemory`] if the table cannot be allocated.
    pub fn build_with_bits(
        self,
        quotient_bits: u32,
        remainder_bits: u32,
    ) -> Result<LinearProbingQf, Error> {
        sizing::check_bits(quotient_bits, remainder_bits, 0, 1)?;
        let max_load = check_max_load(self.max_load)?;
        let cap = cap_with_room(quotient_bits, max_load)?;
        let slot_count = usual_slots(quotient_bits);
        Ok(LinearProbingQf {
            slots: SlotArray::new(remainder_bits, slot_count)?,
            quotient_bits,
            remainder_bits,
            splitter: Splitter::new(quotient_bits, remainder_bits),
            max_load,
            budget: CapBudget::new(cap),
        })
    }
}

/// The load cap if it is in `(0, 1]` (NaN fails both comparisons).
pub(crate) fn check_max_load(max_load: f64) -> Result<f64, Error> {
    if max_load > 0.0 && max_load <= 1.0 {
        Ok(max_load)
    } else {
        Err(Error::InvalidParameters(format!(
            "maximum load {max_load} is not in (0, 1]"
        )))
    }
}

/// `floor(max_load * 2^q)`, exact for the `q <= 40` the constructors allow.
pub(crate) fn cap_for(quotient_bits: u32, max_load: f64) -> usize {
    ((1u64 << quotient_bits) as f64 * max_load) as usize
}

/// [`cap_for`], refused if it leaves no room for a key: for the builder and for a filter read
/// from bytes (whose reader makes the error `Corrupt`).
///
/// # Errors
/// [`Error::InvalidParameters`] if the cap is 0.
pub(crate) fn cap_with_room(quotient_bits: u32, max_load: f64) -> Result<usize, Error> {
    match cap_for(quotient_bits, max_load) {
        0 => Err(Error::InvalidParameters(format!(
            "a load cap of {max_load} leaves no room in 2^{quotient_bits} slots"
        ))),
        cap => Ok(cap),
    }
}

/// What happened when an insert tried to fill the empty slot it found.
enum Place {
    /// This insert's CAS stored the remainder.
    Stored,
    /// Another insert stored the same remainder there first.
    Duplicate,
    /// Another insert stored a different remainder there; the scan goes on.
    Taken,
}

impl LinearProbingQf {
    /// The fill at which [`new`](Self::new) plans and caps the table unless told otherwise
    /// (paper 000 §2.2: up to about 70% the extra remainder bits outweigh the extra
    /// comparisons).
    pub const DEFAULT_MAX_LOAD: f64 = 0.7;

    /// A filter that holds `capacity` keys at an expected false-positive rate of at most `fpr`,
    /// capped at 70% fill.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        LinearProbingBuilder::new().build(capacity, fpr)
    }

    /// A filter with `2^quotient_bits` addressable slots of `remainder_bits` bits, capped at 70%
    /// fill; see [`LinearProbingBuilder::build_with_bits`].
    ///
    /// # Errors
    /// As [`LinearProbingBuilder::build_with_bits`].
    pub fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        LinearProbingBuilder::new().build_with_bits(quotient_bits, remainder_bits)
    }

    /// A builder, to set the load cap.
    pub fn builder() -> LinearProbingBuilder {
        LinearProbingBuilder::new()
    }

    /// Quotient bits `q`: the table has `2^q` addressable slots.
    pub fn quotient_bits(&self) -> u32 {
        self.quotient_bits
    }

    /// Remainder bits stored per slot (the paper's `r + 3`).
    pub fn remainder_bits(&self) -> u32 {
        self.remainder_bits
    }

    /// The load cap, as a fraction of the `2^q` addressable slots.
    pub fn max_load(&self) -> f64 {
        self.max_load
    }

    /// All slots of the table: the `2^q` addressable ones and the overflow tail after them.
    /// A stretch of full slots may run into the tail but never into its last slot, which always
    /// stays empty.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub(crate) fn fingerprint(&self, hash: u64) -> (usize, u64) {
        self.splitter.split_nonzero(hash)
    }

    /// Whether fingerprint `(quotient, remainder)` is stored ([`Filter::contains_hash`] after
    /// the split; the batch lookups call it for each query).
    #[inline]
    pub(crate) fn contains_fingerprint(&self, quotient: usize, remainder: u64) -> bool {
        let slots = &self.slots;
        slots.prefetch_next_line(quotient);
        // Acquire: a positive answer is ordered after the insert that stored the remainder
        // (module doc, "Memory orderings"). Coherence alone already rules out false negatives.
        with_fixed_width!(slots => seek_remainder_or_empty(
            &mut Cursor::over(&slots, quotient, Ordering::Acquire),
            remainder
        ))
        .is_some_and(|stored| stored != 0)
    }

    /// Tries to put `remainder` into slot `index`, which a scan found empty.
    #[inline]
    fn place(&self, index: usize, remainder: u64) -> Place {
        let layout = *self.slots.layout();
        let (group, offset) = layout.locate(index);
        // Acquire: this word decides the answer if the slot already holds our remainder
        // (`Duplicate` -> `Ok(false)`), and that answer must be ordered after the insert that
        // stored it (module doc, "Memory orderings").
        let mut word = self.slots.load_group(group, Ordering::Acquire);
        loop {
            match layout.get(word, offset) {
                0 => {}
                stored if stored == remainder => return Place::Duplicate,
                _ => return Place::Taken,
            }
            let new = layout.set(word, offset, remainder);
            // Success Release: publishes the remainder, so that a thread whose Acquire load
            // sees it also sees everything this thread did before (module doc). Acquire is not
            // needed on success: the word equals the one loaded with Acquire above, and since
            // slots only ever go from empty to full, an equal word means nobody wrote the group
            // in between. Failure Acquire: the word returned decides `Duplicate` as above.
            match self.slots.compare_exchange_group(
                group,
                word,
                new,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Place::Stored,
                // Another slot of the group, or this one, was filled meanwhile: look again.
                Err(now) => word = now,
            }
        }
    }

    /// Removes every key, keeping its table (size and memory), parameters and load cap: the
    /// filter answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{Filter, LinearProbingQf};
    /// let mut filter = LinearProbingQf::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.slots.clear();
        self.budget.set_used(0);
    }

    /// Checks what can be checked without knowing each element's canonical slot: the count
    /// matches the non-empty slots, the last slot is empty, and the overflow tail is one
    /// unbroken stretch that continues a stretch ending in the last addressable slot (an element
    /// in the tail was pushed there from an addressable slot through full slots). Only
    /// meaningful while no thread inserts; for tests and debugging.
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        // Acquire: pairs with the inserts' Release, for a caller that synchronised with the
        // writers (joined them) before checking.
        let slot = |i: usize| self.slots.get(i, Ordering::Acquire);
        let total = self.slots.len();
        let addressable = 1usize << self.quotient_bits;
        if slot(total - 1) != 0 {
            return Err(format!("the last slot {} is not empty", total - 1));
        }
        let stored = (0..total).filter(|&i| slot(i) != 0).count();
        let len = self.budget.used();
        if stored != len {
            return Err(format!("{stored} slots are full but len is {len}"));
        }
        if len > self.budget.cap() {
            return Err(format!("len {len} exceeds the cap {}", self.budget.cap()));
        }
        check_tail(slot, addressable, total)
    }
}

/// The overflow tail's rule, for a table of `total` slots whose first `addressable` are
/// canonical, read through `slot`: the tail's full slots form one stretch from its first slot,
/// and that stretch continues one ending in the last addressable slot (an element in the tail
/// was pushed there from an addressable slot through full slots). Shared by
/// [`LinearProbingQf::check_invariants`] and the decoder.
pub(crate) fn check_tail(
    slot: impl Fn(usize) -> u64,
    addressable: usize,
    total: usize,
) -> Result<(), String> {
    let tail_run = (addressable..total).take_while(|&i| slot(i) != 0).count();
    if let Some(i) = (addressable + tail_run..total).find(|&i| slot(i) != 0) {
        return Err(format!(
            "slot {i} in the overflow tail is full after an empty tail slot"
        ));
    }
    if tail_run > 0 && slot(addressable - 1) == 0 {
        return Err("the overflow tail is full but the last addressable slot is empty".into());
    }
    Ok(())
}

/// Moves `cursor` to the first slot at or after it that is empty or holds `remainder` (never
/// 0), comparing every slot of a group at once ([`LaneFields::equal`]), and returns what that
/// slot holds: 0 or `remainder`. `None` if the scan would leave the table, which the always
/// empty last slot prevents.
#[inline(always)]
fn seek_remainder_or_empty<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    remainder: u64,
) -> Option<u64> {
    // The canonical slot alone decides most lookups of stored keys and most inserts into a
    // table that is not crowded: look at it before setting up the comparison of whole groups.
    let first = cursor.slot();
    if first == 0 || first == remainder {
        return Some(first);
    }
    let lanes = LaneFields::new(cursor.layout(), 0);
    let wanted = lanes.pattern(remainder, 0);
    let flag_to_lsb = cursor.slot_bits() - 1;
    walk::seek_lane(cursor, |word, _| {
        (lanes.equal(word, wanted) | lanes.equal(word, 0)) >> flag_to_lsb
    })?;
    Some(cursor.slot())
}

impl LinearProbingQf {
    /// [`insert_hash`](Filter::insert_hash) after the split, scanning through `slots`, a view
    /// of the table ([`with_fixed_width!`]).
    #[inline(always)]
    fn insert_through<S: GroupSource>(
        &self,
        slots: S,
        quotient: usize,
        remainder: u64,
    ) -> Result<bool, Error> {
        let last = self.slots.len() - 1;
        // Acquire: a remainder seen in the scan decides `Ok(false)` (module doc).
        let mut cursor = Cursor::over(&slots, quotient, Ordering::Acquire);
        let mut reserved = false;
        let outcome = loop {
            match seek_remainder_or_empty(&mut cursor, remainder) {
                // Unreachable while the last slot stays empty; kept so no scan runs off the end.
                None => break Err(Error::Full),
                Some(0) => {
                    let index = cursor.index();
                    if index == last {
                        // The stretch reached the last slot, which stays empty.
                        break Err(Error::Full);
                    }
                    if !reserved {
                        if self.budget.take(quotient) {
                            reserved = true;
                        } else {
                            // Every place is taken, but a racing insert of this very key may
                            // have filled the slot since the scan read it: `Full` only if the
                            // slot is still empty after the refusal (module doc, "Full").
                            cursor.reload();
                            if cursor.slot() == 0 {
                                break Err(Error::Full);
                            }
                            continue;
                        }
                    }
                    match self.place(index, remainder) {
                        // The reservation becomes the stored element.
                        Place::Stored => return Ok(true),
                        Place::Duplicate => break Ok(false),
                        // The slot holds another remainder now: read it again with its group,
                        // which `place` saw change, and scan on from it.
                        Place::Taken => cursor.reload(),
                    }
                }
                Some(_) => break Ok(false),
            }
        };
        if reserved {
            self.budget.give_back();
        }
        outcome
    }
}

impl Filter for LinearProbingQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        let (quotient, remainder) = self.fingerprint(hash);
        let slots = &self.slots;
        slots.prefetch_next_line(quotient);
        with_fixed_width!(slots => self.insert_through(slots, quotient, remainder))
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        self.contains_fingerprint(quotient, remainder)
    }

    /// The number of stored keys. While inserts run it may also count inserts that have
    /// reserved a place but not finished, or briefly miss one whose place was given back during
    /// the count; it never exceeds [`capacity`](Filter::capacity).
    fn len(&self) -> usize {
        self.budget.used()
    }

    /// `floor(max_load * 2^q)`: inserts beyond it return [`Error::Full`].
    fn capacity(&self) -> usize {
        self.budget.cap()
    }

    fn memory_bytes(&self) -> usize {
        self.slots.memory_bytes() + self.budget.memory_bytes()
    }

    /// Corollary 1 of paper 000 at the current fill `len / 2^q`: up to the default load cap a
    /// bound of the expected rate (about 20 times it at 5% fill, 1.25 times at 70%), about equal
    /// to it at 90-95% ([`linear_probing_fpr`](crate::linear_probing_fpr) says why); a small
    /// table's own rate varies around the expectation and may pass it.
    fn false_positive_rate(&self) -> f64 {
        let load = self.len() as f64 / (1u64 << self.quotient_bits) as f64;
        sizing::linear_probing_fpr(load, self.remainder_bits)
    }
}

/// A copy of the filter, which other threads may go on inserting into meanwhile: it holds every
/// key whose insert returned before the call (the snapshot of
/// [`write_to`](LinearProbingQf::write_to), without the bytes; an insert racing the copy may be
/// in it or not), with the same load cap; later inserts into either filter do not reach the
/// other. Like `Vec`'s, the clone aborts the process if its memory cannot be had.
///
/// ```
/// use conqf::{Filter, LinearProbingQf};
///
/// let original = LinearProbingQf::new(1000, 0.01)?;
/// original.insert(&"apple")?;
/// let copy = original.clone();
/// copy.insert(&"pear")?;
/// assert!(copy.contains(&"apple") && copy.contains(&"pear"));
/// assert!(!original.contains(&"pear"));
/// assert_eq!((copy.len(), original.len()), (2, 1));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for LinearProbingQf {
    fn clone(&self) -> Self {
        let copy = LinearProbingQf::builder()
            .max_load(self.max_load)
            .build_with_bits(self.quotient_bits, self.remainder_bits)
            .unwrap_or_else(|_| crate::storage::abort_for_bytes(self.slots.memory_bytes()));
        for (group, word) in self.snapshot_words().enumerate() {
            // Relaxed: the copy is not shared yet; handing it to other threads orders this.
            copy.slots.store_group(group, word, Ordering::Relaxed);
        }
        // Every full slot holds a place under this filter's cap, so the count is within it.
        let (stored, _) = crate::persist::linear_probing::full_slots(&copy.slots);
        copy.budget.set_used(stored);
        copy
    }
}

impl fmt::Debug for LinearProbingQf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearProbingQf")
            .field("quotient_bits", &self.quotient_bits)
            .field("remainder_bits", &self.remainder_bits)
            .field("max_load", &self.max_load)
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_meets_the_target_at_the_cap() {
        for &(capacity, fpr) in &[(1000usize, 0.01), (100_000, 0.001), (10, 0.5), (7, 1e-9)] {
            let filter = LinearProbingQf::new(capacity, fpr).unwrap();
            assert!(filter.capacity() >= capacity);
            let q = filter.quotient_bits();
            let cap_load = filter.capacity() as f64 / (1u64 << q) as f64;
            assert!(cap_load <= LinearProbingQf::DEFAULT_MAX_LOAD);
            let r = filter.remainder_bits();
            assert!(sizing::linear_probing_fpr(cap_load, r) <= fpr);
            assert!(r == 1 || sizing::linear_probing_fpr(cap_load, r - 1) > fpr);
        }
    }

    #[test]
    fn the_cap_stops_inserts_and_leaves_the_filter_unchanged() {
        let filter = LinearProbingQf::builder()
            .max_load(0.25)
            .build_with_bits(4, 13)
            .unwrap();
        assert_eq!(filter.capacity(), 4);
        for k in 0..4u64 {
            assert_eq!(filter.insert(&k), Ok(true));
        }
        assert_eq!(filter.insert(&99u64), Err(Error::Full));
        // A key already there is still recognised at the cap.
        assert_eq!(filter.insert(&2u64), Ok(false));
        assert_eq!(filter.len(), 4);
        filter.check_invariants().unwrap();
    }
}
