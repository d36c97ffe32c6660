//! The 2-status-bit table (paper 000 §2.2, "Two-Status-Bit Quotient Filter"): its slot encoding,
//! its fingerprints, and the whole-table walks (the stored fingerprints in order, the invariants,
//! and building a table from sorted fingerprints for bounded growing).
//!
//! ```text
//!   slot of r + 2 bits (a storage lane, low bits first)
//!  +-----------------------------+---------+----------+
//!  | remainder (r bits, never 0) | new-run | occupied |
//!  +-----------------------------+---------+----------+
//!   bit 2 ...                      bit 1     bit 0
//!
//!   remainder 0, status 00   empty slot
//!   remainder 0, status 10   locked empty slot (the concurrent filter's lock, see `two_bit`)
//!   remainder > 0            an element; new-run: it is the first element of its run
//! ```
//!
//! `occupied` belongs to the slot *position* (canonical slot `i` has a non-empty run), the
//! new-run bit and the remainder to the *element* stored there. Without the 3-bit filter's
//! `shifted` bit a cluster start cannot be recognised; a run is found from the start of its
//! *supercluster* (the first filled slot after an empty one): the run of canonical slot `c` is
//! the `k`-th run of the supercluster, where `k` counts the occupied slots from the supercluster
//! start up to `c` (paper 000 §2.2).
//!
//! Slot 0 is a guard that is never filled, so every supercluster has an empty slot on its left
//! (the concurrent filter locks it); quotient `x` has its canonical slot at index `x + 1`. An
//! overflow tail follows the `2^q` canonical slots
//! ([`overflow_slots`](crate::qf::overflow_slots)), and the last slot always stays empty.

use crate::filter::Error;
use crate::hash::{low_mask, Fingerprint, Splitter};
use crate::sizing;
use crate::storage::{Cursor, GroupSource, SlotArray};
use crate::sync::Ordering;

use super::super::usual_slots;

/// Status bits per slot.
pub(crate) const STATUS_BITS: u32 = 2;
/// The run of this canonical slot is non-empty.
pub(crate) const OCCUPIED: u64 = 0b01;
/// The element here is the first of its run.
pub(crate) const NEW_RUN: u64 = 0b10;
/// A locked empty slot: status bits that no empty slot has at rest, with remainder 0, which no
/// element has. Its occupied bit is clear, so walks read it as the empty slot it is.
pub(crate) const LOCK: u64 = NEW_RUN;
/// Index of the first canonical slot: slot 0 is the guard.
pub(crate) const GUARD: usize = 1;

/// Whether the raw slot holds an element (a non-zero remainder).
#[inline]
pub(crate) const fn is_filled(raw: u64) -> bool {
    raw >> STATUS_BITS != 0
}

/// Whether the raw slot's canonical run is non-empty.
#[inline]
pub(crate) const fn is_occupied(raw: u64) -> bool {
    raw & OCCUPIED != 0
}

/// Whether the raw slot holds an element that starts a run.
#[inline]
pub(crate) const fn starts_run(raw: u64) -> bool {
    is_filled(raw) && raw & NEW_RUN != 0
}

/// Whether the raw slot holds an element that continues the run on its left.
#[inline]
pub(crate) const fn continues_run(raw: u64) -> bool {
    is_filled(raw) && raw & NEW_RUN == 0
}

/// The remainder of a raw slot (0 for an empty or locked slot).
#[inline]
pub(crate) const fn remainder_of(raw: u64) -> u64 {
    raw >> STATUS_BITS
}

/// An element (occupied bit clear).
#[inline]
pub(crate) const fn element(remainder: u64, new_run: bool) -> u64 {
    (remainder << STATUS_BITS) | if new_run { NEW_RUN } else { 0 }
}

/// The fingerprint rule of the 2-bit tables written out ([`TwoBitTable::fingerprint`] has it
/// through a [`Splitter`]): the top `q` bits and the next `r`, a remainder of 0 stored as 1.
#[cfg(test)]
fn fold(hash: u64, quotient_bits: u32, remainder_bits: u32) -> Fingerprint {
    let f = Fingerprint::split(hash, quotient_bits, remainder_bits);
    Fingerprint {
        quotient: f.quotient,
        remainder: f.remainder.max(1),
    }
}

/// `2^q` canonical slots after the guard, plus the overflow tail, each of `r + 2` bits.
pub(crate) struct TwoBitTable {
    pub(crate) slots: SlotArray,
    pub(crate) quotient_bits: u32,
    pub(crate) remainder_bits: u32,
    /// Splits a hash into quotient and remainder, with the shifts and mask worked out once.
    splitter: Splitter,
}

/// The fill up to which the `new` constructor plans, as for the 3-status-bit filters.
pub(crate) const MAX_LOAD: f64 = 0.9;

impl TwoBitTable {
    /// An empty table with `2^quotient_bits` canonical slots of `remainder_bits` remainders.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] unless `1 <= quotient_bits <= 40`, `remainder_bits >= 1`,
    /// `quotient_bits + remainder_bits <= 64` and `remainder_bits + 2 <= 64`;
    /// [`Error::OutOfMemory`] if the table cannot be allocated.
    pub(crate) fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        sizing::check_bits(quotient_bits, remainder_bits, STATUS_BITS, 1)?;
        let slot_count = GUARD + usual_slots(quotient_bits);
        Ok(TwoBitTable {
            slots: SlotArray::new(remainder_bits + STATUS_BITS, slot_count)?,
            quotient_bits,
            remainder_bits,
            splitter: Splitter::new(quotient_bits, remainder_bits),
        })
    }

    /// The table for `capacity` keys at a false-positive rate of at most `fpr`.
    pub(crate) fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        sizing::check_capacity_and_fpr(capacity, fpr)?;
        let q = sizing::quotient_bits_for(capacity, MAX_LOAD)?;
        let load = capacity as f64 / (1u64 << q) as f64;
        let r = sizing::smallest_bits(fpr, (1, 62.min(64 - q)), "remainder", |r| {
            folded_fpr(load, r)
        })?;
        Self::with_bits(q, r)
    }

    /// The canonical slot index (after the guard slots) and the remainder of a hash: the top `q`
    /// bits and the next `r` bits, where a remainder of 0 is stored as 1 (*folding*).
    ///
    /// Folding 0 onto 1 (rather than re-mixing the hash until the remainder is non-zero, as
    /// [`Fingerprint::nonzero`] does) is what makes bounded growing sound. Growing moves the top
    /// remainder bit into the quotient; a stored remainder `10…0` becomes `0`, and the keys that
    /// had it must be found again after the growth. Under re-mixing their new fingerprint depends
    /// on hash bits the table never stored; under folding it is `1`, at the same new quotient,
    /// for every such key. In general folding commutes with growing: `fold(split(h, q + 1, r -
    /// 1))` equals `grow(fold(split(h, q, r)))` for every hash `h`, where `grow` maps `(x, v)` to
    /// `(2x + top bit of v, fold(v without its top bit))` (a proptest checks it). The price is
    /// that remainder 1 is twice as likely as the others, which raises the false-positive rate
    /// by a factor of about `1 + 2^-r` over `δ / (2^r - 1)` (see
    /// [`TwoBitTable::false_positive_rate`]).
    #[inline]
    pub(crate) fn fingerprint(&self, hash: u64) -> (usize, u64) {
        // `fold`, through the splitter.
        let (quotient, remainder) = self.splitter.split(hash);
        (quotient + GUARD, remainder.max(1))
    }

    /// How many fingerprints fit at [`MAX_LOAD`].
    pub(crate) fn capacity(&self) -> usize {
        ((1u64 << self.quotient_bits) as f64 * MAX_LOAD) as usize
    }

    /// The expected false-positive rate with `len` fingerprints stored.
    pub(crate) fn false_positive_rate(&self, len: usize) -> f64 {
        let load = len as f64 / (1u64 << self.quotient_bits) as f64;
        folded_fpr(load, self.remainder_bits)
    }

    /// The stored fingerprints in increasing `(quotient, remainder)` order, read with `order`.
    pub(crate) fn fingerprints(&self, order: Ordering) -> TwoBitFingerprints<'_> {
        self.fingerprints_in(0, self.slots.len(), order)
    }

    /// The fingerprints stored in slots `start..end`, where `start` is a supercluster's first
    /// slot (or 0) and `end` is not inside a supercluster: every run there belongs to an occupied
    /// slot of the same stretch, so the stretch decodes on its own.
    pub(crate) fn fingerprints_in(
        &self,
        start: usize,
        end: usize,
        order: Ordering,
    ) -> TwoBitFingerprints<'_> {
        TwoBitFingerprints {
            cursor: self.slots.cursor(start, order),
            occupied: self.slots.cursor(start, order),
            canonical: start,
            end,
            done: start >= end,
        }
    }

    /// Checks the table's invariants and that it stores `len` fingerprints.
    pub(crate) fn check(&self, len: usize) -> Result<(), String> {
        let stored = self.check_slots()?;
        if stored != len {
            return Err(format!("{stored} fingerprints stored but len is {len}"));
        }
        Ok(())
    }

    /// Checks every invariant of a table at rest; see [`check_slots`].
    fn check_slots(&self) -> Result<usize, String> {
        check_slots(&self.slots, self.quotient_bits, self.remainder_bits)
    }
}

/// Checks every invariant of a 2-status-bit table at rest (`source` holds its slots: the guard,
/// `2^quotient_bits` canonical slots and the overflow tail) and returns the number of stored
/// fingerprints. It reads every slot once and never panics, so it also validates untrusted
/// bytes (`persist`):
///
/// * no lock is left: a slot without a remainder is all zero; the guard and the last slot
///   are empty; occupied bits only on canonical slots;
/// * every supercluster starts with an element in its canonical slot that starts a run;
/// * in every prefix of a supercluster there are at least as many occupied slots as runs
///   (a run starts at or after its canonical slot), and in the whole supercluster as many;
/// * remainders fit `r` bits and increase strictly within a run.
pub(crate) fn check_slots<S: GroupSource>(
    source: &S,
    quotient_bits: u32,
    remainder_bits: u32,
) -> Result<usize, String> {
    let len = source.slot_count();
    let canonical_end = GUARD + (1usize << quotient_bits);
    // Relaxed: the checker runs on a table no thread writes (its callers synchronised with
    // the writers, e.g. by joining them), or on borrowed bytes.
    let mut cursor = Cursor::over(source, 0, Ordering::Relaxed);
    let (mut occupied, mut runs, mut elements) = (0usize, 0usize, 0usize);
    let mut previous = 0u64;
    let mut inside = false;
    for index in 0..len {
        let raw = cursor.slot();
        if !is_filled(raw) {
            if raw != 0 {
                return Err(format!(
                    "slot {index} has status {raw:02b} but no remainder"
                ));
            }
            if inside && occupied != runs {
                return Err(format!(
                    "supercluster ending at {index}: {runs} runs but {occupied} occupied slots"
                ));
            }
            inside = false;
        } else {
            if index == 0 || index + 1 == len {
                return Err(format!("slot {index} must stay empty"));
            }
            if remainder_of(raw) > low_mask(remainder_bits) {
                return Err(format!("slot {index}: remainder wider than r bits"));
            }
            if !inside {
                if raw & (OCCUPIED | NEW_RUN) != OCCUPIED | NEW_RUN {
                    return Err(format!("supercluster start {index} has status {raw:02b}"));
                }
                inside = true;
                (occupied, runs) = (0, 0);
            }
            occupied += is_occupied(raw) as usize;
            if starts_run(raw) {
                runs += 1;
            } else if remainder_of(raw) <= previous {
                return Err(format!("slot {index}: run not strictly increasing"));
            }
            if runs > occupied {
                return Err(format!(
                    "slot {index}: a run starts left of its canonical slot"
                ));
            }
            previous = remainder_of(raw);
            elements += 1;
        }
        if is_occupied(raw) && index >= canonical_end {
            return Err(format!("slot {index} in the overflow tail is occupied"));
        }
        if index + 1 < len {
            cursor.advance();
        }
    }
    Ok(elements)
}

/// `δ (2^r + 2) / 4^r`: the chance that a query's fingerprint equals one of the `δ` stored
/// fingerprints expected at its canonical slot, with remainders folded as
/// [`TwoBitTable::fingerprint`] folds them (remainder
/// 1 has probability `2 / 2^r`, every other non-zero value `1 / 2^r`).
pub(crate) fn folded_fpr(load: f64, remainder_bits: u32) -> f64 {
    let values = (remainder_bits as f64).exp2();
    (load * (values + 2.0) / (values * values)).min(1.0)
}

/// The stored fingerprints of a 2-status-bit table in increasing order: the `j`-th run of the
/// table belongs to its `j`-th occupied slot, so one pass pairs them. Not a snapshot if other
/// threads write: callers iterate quiescent tables, or (the sweep of `sweep.rs`) one
/// supercluster that its left lock keeps still.
pub(crate) struct TwoBitFingerprints<'a> {
    /// On the next slot to read; like [`Fingerprints`](crate::qf::scan::Fingerprints), the scan
    /// reads a group at a time.
    cursor: Cursor<'a>,
    /// On the next slot to test for an occupied bit, trailing `cursor`.
    occupied: Cursor<'a>,
    /// The canonical slot of the current run.
    canonical: usize,
    /// The slot after the last one to read.
    end: usize,
    /// `cursor` has read the last slot to read.
    done: bool,
}

impl Iterator for TwoBitFingerprints<'_> {
    type Item = Fingerprint;

    fn next(&mut self) -> Option<Fingerprint> {
        while !self.done {
            let raw = self.cursor.slot();
            self.done = self.cursor.index() + 1 >= self.end || !self.cursor.advance();
            if !is_filled(raw) {
                continue;
            }
            if starts_run(raw) {
                // The last slot is never occupied, so at rest the next occupied slot exists.
                while !is_occupied(self.occupied.slot()) && self.occupied.advance() {}
                self.canonical = self.occupied.index();
                self.occupied.advance();
            }
            return Some(Fingerprint {
                quotient: self.canonical.saturating_sub(GUARD) as u64,
                remainder: remainder_of(raw),
            });
        }
        None
    }
}

/// Writes fingerprints given in increasing order (remainders non-zero) into an empty table, each
/// run at its canonical slot or right after the previous run, whichever is later. Equal
/// fingerprints are stored once. Returns how many were stored.
///
/// # Errors
/// [`Error::Full`] if a run would reach the table's last slot (which stays empty); the table is
/// then partly written and the caller discards it.
pub(crate) fn build_sorted(
    array: &mut SlotArray,
    fingerprints: impl IntoIterator<Item = Fingerprint>,
) -> Result<usize, Error> {
    let last = array.len() - 1;
    let mut next_free = GUARD;
    let mut previous: Option<Fingerprint> = None;
    let mut stored = 0;
    for fingerprint in fingerprints {
        debug_assert!(previous.is_none_or(|p| p <= fingerprint), "input is sorted");
        debug_assert!(fingerprint.remainder != 0, "remainders are never 0");
        if previous == Some(fingerprint) {
            continue;
        }
        let canonical = fingerprint.quotient as usize + GUARD;
        let position = canonical.max(next_free);
        if position >= last {
            return Err(Error::Full);
        }
        let new_run = previous.is_none_or(|p| p.quotient != fingerprint.quotient);
        // Relaxed: `&mut` access; no other thread sees the table being built.
        let kept = array.get(position, Ordering::Relaxed) & OCCUPIED;
        array.set_exclusive(position, element(fingerprint.remainder, new_run) | kept);
        let at_canonical = array.get(canonical, Ordering::Relaxed);
        array.set_exclusive(canonical, at_canonical | OCCUPIED);
        next_free = position + 1;
        previous = Some(fingerprint);
        stored += 1;
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Folding commutes with growing: the fingerprint a key gets after a growth is the
        /// growth of the fingerprint it had before, so a grown table finds every stored key.
        #[test]
        fn folding_commutes_with_growing(hash: u64, q in 1u32..20, r in 2u32..20) {
            let before = fold(hash, q, r);
            let top = before.remainder >> (r - 1);
            let grown = Fingerprint {
                quotient: (before.quotient << 1) | top,
                remainder: (before.remainder & low_mask(r - 1)).max(1),
            };
            prop_assert_eq!(grown, fold(hash, q + 1, r - 1));
        }

        /// A table splits as `fold` does, after its guard slots; among the hashes, those
        /// whose plain remainder is 0.
        #[test]
        fn tables_fold_their_fingerprints(hash: u64, q in 1u32..12, r in 1u32..20, zero: bool) {
            let hash = if zero { hash & !(low_mask(r) << (64 - q - r)) } else { hash };
            let table = TwoBitTable::with_bits(q, r).unwrap();
            let f = fold(hash, q, r);
            prop_assert_eq!(table.fingerprint(hash), (f.quotient as usize + GUARD, f.remainder));
        }
    }

    #[test]
    fn folded_rate_is_the_collision_probability_of_folded_remainders() {
        // r = 2: remainders 1, 1, 2, 3 with probabilities 1/2, 1/4, 1/4: Σp² = 3/8.
        assert!((folded_fpr(1.0, 2) - 0.375).abs() < 1e-15);
        let r10 = folded_fpr(0.5, 10);
        assert!(r10 > sizing::nonzero_qf_fpr(0.5, 10));
        assert!(r10 < sizing::nonzero_qf_fpr(0.5, 10) * 1.001);
    }

    #[test]
    fn lock_reads_as_an_unoccupied_empty_slot() {
        assert!(!is_filled(LOCK) && !is_occupied(LOCK) && !starts_run(LOCK));
        assert!(!continues_run(LOCK));
        assert!(starts_run(element(5, true)) && continues_run(element(5, false)));
    }

    #[test]
    fn build_then_iterate_round_trips() {
        let mut table = TwoBitTable::with_bits(3, 4).unwrap();
        let input: Vec<Fingerprint> = [(0, 3), (0, 9), (1, 1), (1, 1), (3, 2), (7, 15)]
            .iter()
            .map(|&(quotient, remainder)| Fingerprint {
                quotient,
                remainder,
            })
            .collect();
        let stored = build_sorted(&mut table.slots, input.iter().copied()).unwrap();
        assert_eq!(stored, 5);
        table.check(5).unwrap();
        let mut expected = input.clone();
        expected.dedup();
        assert_eq!(
            table.fingerprints(Ordering::Relaxed).collect::<Vec<_>>(),
            expected
        );
    }
}
