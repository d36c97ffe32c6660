//! Whole-table walks of the 3-status-bit layout: the fingerprints in sorted order (what growing
//! and merging extract, paper 000 §2.1 and paper 004 §IV-E) and the table's invariants. Building
//! a table from sorted fingerprints is the bulk build in [`crate::batch`].

use crate::filter::Error;
use crate::hash::{low_mask, Fingerprint};
use crate::storage::{Cursor, GroupSource, SlotArray};
use crate::sync::Ordering;

use super::slot::{Slot, OCCUPIED, STATUS_MASK};
use super::walk::slot_at;

/// The stored fingerprints of a table in increasing `(quotient, remainder)` order.
///
/// Reads the table once, left to right, with a second cursor trailing over the occupied bits to
/// name each run's canonical slot. On a table that other threads change, the result is not a
/// snapshot; callers iterate quiescent tables.
pub struct Fingerprints<'a> {
    cursor: Cursor<'a>,
    occupied: Cursor<'a>,
    canonical: usize,
    /// The walk stops before this slot.
    end: usize,
    done: bool,
}

impl std::fmt::Debug for Fingerprints<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprints")
            .field("next_slot", &self.cursor.index())
            .field("end", &self.end)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<'a> Fingerprints<'a> {
    pub(crate) fn new(array: &'a SlotArray, order: Ordering) -> Self {
        Self::range(array, 0, array.len(), order)
    }

    /// The fingerprints stored in slots `from..to`, where `from` is 0, follows an empty slot
    /// (a supercluster starts there, or the slot is empty) or starts a cluster (whose runs all
    /// have their canonical slots in the cluster), e.g. one supercluster or one cluster.
    pub(crate) fn range(array: &'a SlotArray, from: usize, to: usize, order: Ordering) -> Self {
        Fingerprints {
            cursor: array.cursor(from, order),
            occupied: array.cursor(from, order),
            canonical: from,
            end: to,
            done: from >= to,
        }
    }
}

impl Iterator for Fingerprints<'_> {
    type Item = Fingerprint;

    fn next(&mut self) -> Option<Fingerprint> {
        while !self.done {
            let slot = slot_at(&self.cursor);
            let index = self.cursor.index();
            self.done = index + 1 >= self.end || !self.cursor.advance();
            if slot.is_empty() {
                continue;
            }
            if !slot.is_shifted() {
                self.canonical = index;
                while self.occupied.index() < index && self.occupied.advance() {}
            } else if !slot.is_continuation() {
                while self.occupied.advance() && !slot_at(&self.occupied).is_occupied() {}
                self.canonical = self.occupied.index();
            }
            return Some(Fingerprint {
                quotient: self.canonical as u64,
                remainder: slot.remainder(),
            });
        }
        None
    }
}

/// Checks every invariant of a 3-status-bit table at rest and returns the number of stored
/// fingerprints.
///
/// * no lock status (`010`, `110`) is left; empty slots are all zero; the last slot is empty;
/// * an occupied slot holds an element; every cluster starts with an element in its canonical
///   slot (`100`) after an empty slot or another cluster;
/// * a run's canonical slot is the next occupied slot after the previous run's, it is left of
///   the run, and `shifted` is set exactly on elements away from their canonical slot;
/// * remainders fit `remainder_bits` and do not decrease within a run (they increase strictly
///   unless a bulk build without dedupe stored copies, see [`Dedupe`](crate::Dedupe));
/// * there are as many runs as occupied slots.
///
/// It reads the table through any [`GroupSource`], so serialised bytes are checked in place.
pub(crate) fn check_table<S: GroupSource>(array: &S, remainder_bits: u32) -> Result<usize, String> {
    let len = array.slot_count();
    let mut occupied_bits = 0usize;
    let mut runs = 0usize;
    let mut elements = 0usize;
    let mut canonical = 0usize;
    // Relaxed: the checker runs on a table no thread writes (its callers synchronised with
    // the writers, e.g. by joining them).
    let mut occupied = Cursor::over(array, 0, Ordering::Relaxed);
    let mut previous: Option<Slot> = None;
    let mut cursor = Cursor::over(array, 0, Ordering::Relaxed);
    for index in 0..len {
        let slot = Slot::from_raw(cursor.slot());
        let status = slot.status();
        if status == super::slot::READ_LOCK || status == super::slot::WRITE_LOCK {
            return Err(format!("slot {index} holds a lock ({status:03b})"));
        }
        occupied_bits += slot.is_occupied() as usize;
        if slot.is_empty() {
            if slot.raw() != 0 {
                return Err(format!(
                    "empty slot {index} has stray bits {:#x}",
                    slot.raw()
                ));
            }
        } else {
            elements += 1;
            if slot.remainder() > low_mask(remainder_bits) {
                return Err(format!(
                    "slot {index}: remainder wider than {remainder_bits} bits"
                ));
            }
            if !slot.is_shifted() {
                if slot.raw() & STATUS_MASK != OCCUPIED {
                    return Err(format!(
                        "slot {index}: unshifted element with status {status:03b}"
                    ));
                }
                canonical = index;
                while occupied.index() < index && occupied.advance() {}
                runs += 1;
            } else {
                let Some(before) = previous.filter(|p| !p.is_empty()) else {
                    return Err(format!("slot {index}: shifted element after an empty slot"));
                };
                if slot.is_continuation() {
                    if slot.remainder() < before.remainder() {
                        return Err(format!("slot {index}: run decreasing"));
                    }
                } else {
                    runs += 1;
                    loop {
                        if !occupied.advance() || occupied.index() >= index {
                            return Err(format!("slot {index}: run without an occupied slot"));
                        }
                        if slot_at(&occupied).is_occupied() {
                            break;
                        }
                    }
                    canonical = occupied.index();
                }
                if canonical >= index {
                    return Err(format!(
                        "slot {index}: shifted but canonical slot {canonical}"
                    ));
                }
            }
        }
        if slot.is_occupied() && slot.is_empty() {
            return Err(format!("slot {index} is occupied but empty"));
        }
        previous = Some(slot);
        if index + 1 < len {
            cursor.advance();
        }
    }
    if previous.is_some_and(|last| !last.is_empty()) {
        return Err("the last slot is not empty".into());
    }
    if runs != occupied_bits {
        return Err(format!("{runs} runs but {occupied_bits} occupied slots"));
    }
    Ok(elements)
}

/// The placement rule of the sorted build, for any destination (the migration of a growing
/// filter writes through it): each fingerprint (increasing, equal ones stored once) goes to its
/// canonical slot or the first slot at or after
/// `first_free` right of the previous run, whichever is later. `write(index, bits)` ORs bits
/// into a slot that starts out zero: the element's bits at its position, the occupied bit at
/// its canonical slot. Returns how many were placed.
///
/// # Errors
/// [`Error::Full`] if a fingerprint would land at or after `limit`.
pub(crate) fn place_sorted(
    fingerprints: impl IntoIterator<Item = Fingerprint>,
    first_free: usize,
    limit: usize,
    mut write: impl FnMut(usize, u64),
) -> Result<usize, Error> {
    let mut next_free = first_free;
    let mut previous: Option<Fingerprint> = None;
    let mut stored = 0;
    for fingerprint in fingerprints {
        debug_assert!(previous.is_none_or(|p| p <= fingerprint), "input is sorted");
        if previous == Some(fingerprint) {
            continue;
        }
        let quotient = fingerprint.quotient as usize;
        let position = quotient.max(next_free);
        if position >= limit {
            return Err(Error::Full);
        }
        let continuation = previous.is_some_and(|p| p.quotient == fingerprint.quotient);
        let element = Slot::element(fingerprint.remainder, continuation, position != quotient);
        write(position, element.raw());
        write(quotient, OCCUPIED);
        next_free = position + 1;
        previous = Some(fingerprint);
        stored += 1;
    }
    Ok(stored)
}
