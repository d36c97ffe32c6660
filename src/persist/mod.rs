//! Persistence: every filter written as bytes and read back, from untrusted input (issue 10).
//!
//! The format ([`format`](mod@format)) is versioned, little-endian and checksummed (xxh3), so a
//! filter read back answers every query exactly as before on any platform. Reading never trusts
//! the bytes: the header, every length (before anything is allocated), the checksum, the
//! parameters and the table's own invariants are checked, and anything wrong is
//! [`Error::Corrupt`], never a panic.
//!
//! One module per variant family holds its parameters, its payload and its methods:
//! [`qf`] (the 3-status-bit table of `SequentialQf`, `LocallyLockedQf`, `ExternallyLockedQf`,
//! and the zero-copy [`SequentialQfRef`](crate::SequentialQfRef)), [`linear_probing`],
//! [`bloom`], [`cuckoo`] (`LockFreeCuckooFilter`, `LockedCuckooFilter`), [`two_bit`]
//! (`TwoBitQf`), [`counting`] (`CountingQf` and the zero-copy
//! [`CountingQfRef`](crate::CountingQfRef)), [`growing`] (`GrowableQf`, `ExpandableQf`); `serde`
//! support (feature `serde`) is in `serde_impls`. Every table allocation goes through
//! [`storage::try_reserve`](crate::storage::try_reserve), so a table too large for the machine
//! is an error, not an abort.
//!
//! # Adding a variant
//!
//! 1. Give it the next free [`format::Tag`] with its parameter length (never reuse a number).
//! 2. Write a family module with an encoder (its parameters with `ParamsWriter`, its groups as
//!    words, through [`format::write_file`]) and a decoder (`format::parse` or
//!    `format::read_file`, its parameters with `ParamsReader`, each one validated, the payload
//!    with [`table_words`] (its length checked before allocating; padding with
//!    [`check_padding`]), the table's own invariants, then the one fallible allocation).
//! 3. Add its type to the round-trip, corruption and golden-file tests in `tests/persist.rs`.

pub(crate) mod bloom;
pub(crate) mod counting;
pub(crate) mod cuckoo;
pub(crate) mod format;
pub(crate) mod growing;
pub(crate) mod linear_probing;
pub(crate) mod qf;
#[cfg(feature = "serde")]
mod serde_impls;
pub(crate) mod two_bit;

use crate::filter::Error;
use crate::hash::low_mask;
use crate::storage::{GroupSource, LeWords, SlotArray, SlotLayout};
use crate::sync::Ordering;

use format::corrupt;

/// `Err` if any group holds bits outside its slots (the unused high bits of a group, or the
/// lanes after the last slot): a table that operations built has none, and walks that test
/// whole words must not see any.
pub(crate) fn check_padding<S: GroupSource>(source: &S) -> Result<(), Error> {
    let layout = source.layout();
    let bits = layout.bits();
    let per_group = (64 / bits) as usize;
    let slots = source.slot_count();
    for group in 0..layout.groups_for(slots) {
        let lanes = (slots - group * per_group).min(per_group);
        // Relaxed: the source is borrowed bytes or a table no other thread can see yet.
        let word = source.load_group(group, Ordering::Relaxed);
        if word & !low_mask(lanes as u32 * bits) != 0 {
            return Err(corrupt(format!("group {group} has bits outside its slots")));
        }
    }
    Ok(())
}

/// A constructor's parameter error, for parameters read from bytes.
pub(crate) fn bad_parameters(error: Error) -> Error {
    match error {
        Error::InvalidParameters(why) => corrupt(format!("bad parameters: {why}")),
        other => other,
    }
}

/// The `slots` slots of `bits` bits in `payload`; `Err` unless the payload has exactly their
/// groups.
pub(crate) fn table_words(payload: &[u8], bits: u32, slots: usize) -> Result<LeWords<'_>, Error> {
    let groups = SlotLayout::new(bits).groups_for(slots);
    format::expect_payload(payload, groups)?;
    LeWords::new(payload, bits, slots).ok_or_else(|| corrupt("table size out of range"))
}

/// Copies validated words into a fresh array of the same layout that no other thread sees yet.
pub(crate) fn fill_array(words: &LeWords<'_>, slots: &SlotArray) {
    debug_assert_eq!(words.group_count(), slots.layout().groups_for(slots.len()));
    for group in 0..words.group_count() {
        let word = words.load_group(group, Ordering::Relaxed);
        // Relaxed: the array is not shared yet; handing it to other threads orders this.
        slots.store_group(group, word, Ordering::Relaxed);
    }
}
