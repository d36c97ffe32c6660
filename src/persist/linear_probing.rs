//! Persistence of [`LinearProbingQf`] (paper 000 §2.2, §3.1): `q`, `r` and the load cap, then
//! the slots.
//!
//! The snapshot takes `&self` while other threads insert. Slots only ever go from empty to a
//! remainder and never move, so a copy that reads every group once holds every remainder stored
//! before the copy began: every insert that returned before `to_bytes` was called is found in
//! the filter read back. Inserts that race with the copy may be in it or not, and one of them
//! may be stored in the copy yet unreachable (its probe stretch torn by the copy): harmless,
//! since it was never promised, and counted in `len` read back, which is the number of stored
//! remainders.
//!
//! A torn stretch must not reach into the overflow tail, though: a full tail slot behind an
//! empty last addressable slot breaks the table's invariant (and the decoder rejects it). So the
//! copy reads the group of the last addressable slot and the tail first, last group first, and
//! then the rest: a remainder in a tail slot was placed when every slot from its canonical one
//! up to it was full, and the copy's load that finds it is an Acquire that synchronises with the
//! insert's Release, so those slots, read later, are full in the copy too.
use std::io::{Read, Write};

use crate::filter::Error;
use crate::qf::linear_probing::{cap_with_room, check_max_load, check_tail, LinearProbingQf};
use crate::qf::usual_slots;
use crate::sizing;
use crate::storage::{Cursor, GroupSource};
use crate::sync::Ordering;

use super::format::{self, corrupt, ParamsWriter, Tag};
use super::{bad_parameters, check_padding, table_words};

impl LinearProbingQf {
    /// Writes the filter in the crate's portable format (the header, checksum and framing of
    /// [`SequentialQf::to_bytes`](crate::SequentialQf::to_bytes), with this filter's own variant
    /// tag and parameters) while other threads may insert: the result holds every key whose
    /// insert returned before the call.
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<()> {
        let params = ParamsWriter::default()
            .u32(self.quotient_bits())
            .u32(self.remainder_bits())
            .u64(self.max_load().to_bits());
        format::write_file(out, Tag::LinearProbing, params, self.snapshot_words())
    }

    /// The table's groups, read while other threads may insert (for [`write_to`](Self::write_to)
    /// and [`clone`](Clone::clone)): the overflow tail's end is read when this is called, the
    /// rest as the iterator runs (module doc).
    pub(crate) fn snapshot_words(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let slots = &self.slots;
        let groups = slots.layout().groups_for(slots.len());
        let (first_of_tail, _) = slots.layout().locate((1usize << self.quotient_bits()) - 1);
        // The tail end first, last group first (module doc). Acquire: a load that sees a
        // racing insert's remainder in the tail synchronises with that insert's Release CAS, so
        // every load after it sees the slots that insert found full on its way there. With
        // Relaxed, a later load of the last addressable slot could still read it empty (seen in
        // a loom model). An insert that returned before this call is seen either way.
        let mut tail: Vec<u64> = (first_of_tail..groups)
            .rev()
            .map(|g| slots.load_group(g, Ordering::Acquire))
            .collect();
        tail.reverse();
        (0..groups).map(move |g| match g.checked_sub(first_of_tail) {
            Some(in_tail) => tail[in_tail],
            // Relaxed: the tail's Acquire loads came first, and no slot outside the tail needs
            // to agree with another; an insert that returned before this call happens before
            // this load, so coherence alone makes it see its slot.
            None => slots.load_group(g, Ordering::Relaxed),
        })
    }

    /// The snapshot of [`write_to`](Self::write_to) as bytes.
    ///
    /// ```
    /// use conqf::{Filter, LinearProbingQf};
    /// let filter = LinearProbingQf::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = LinearProbingQf::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// assert_eq!(back.max_load(), filter.max_load());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid linear probing filter (magic,
    /// version, tag, lengths, checksum, parameters (a load cap leaving room for at least one
    /// key among them), padding bits, the last slot empty, no more
    /// remainders than the load cap allows, the overflow tail one stretch continuing from the
    /// last addressable slot). [`Error::OutOfMemory`] if the table's memory cannot be
    /// allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let mut params = file.params_as(&[Tag::LinearProbing], "LinearProbingQf")?;
        let (quotient_bits, remainder_bits) = (params.u32()?, params.u32()?);
        let max_load = f64::from_bits(params.u64()?);
        sizing::check_bits(quotient_bits, remainder_bits, 0, 1).map_err(bad_parameters)?;
        let max_load = check_max_load(max_load).map_err(bad_parameters)?;
        // Checked here, not by `build_with_bits` below, whose refusal would be
        // InvalidParameters: no writer makes such a filter, so the file is at fault.
        let cap = cap_with_room(quotient_bits, max_load).map_err(bad_parameters)?;
        let slot_count = usual_slots(quotient_bits);
        let words = table_words(file.payload, remainder_bits, slot_count)?;
        check_padding(&words)?;
        let (stored, last_empty) = full_slots(&words);
        if !last_empty {
            return Err(corrupt("the last slot is not empty"));
        }
        if stored > cap {
            return Err(corrupt(format!(
                "{stored} remainders stored but the load cap allows {cap}"
            )));
        }
        let slot = |i: usize| Cursor::over(&words, i, Ordering::Relaxed).slot();
        check_tail(slot, 1usize << quotient_bits, slot_count).map_err(corrupt)?;
        let filter = LinearProbingQf::builder()
            .max_load(max_load)
            .build_with_bits(quotient_bits, remainder_bits)?;
        for group in 0..words.group_count() {
            // Relaxed: the filter is not shared yet; handing it to other threads orders this.
            let word = words.load_group(group, Ordering::Relaxed);
            filter.slots.store_group(group, word, Ordering::Relaxed);
        }
        filter.budget.set_used(stored);
        Ok(filter)
    }

    /// Reads one filter from a stream, consuming exactly its bytes.
    ///
    /// # Errors
    /// As [`from_bytes`](Self::from_bytes); a stream that ends early is [`Error::Corrupt`],
    /// another read failure [`Error::Io`]. Memory grows only with the bytes that arrive.
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::from_bytes(&format::read_file(input)?)
    }
}

/// How many slots of the table `source` holds are full, and whether its last slot is empty (the
/// table's invariant), from one pass over every slot.
pub(crate) fn full_slots<S: GroupSource>(source: &S) -> (usize, bool) {
    let mut stored = 0usize;
    // Relaxed: the table is not shared (bytes read, or a copy not yet handed out).
    let mut cursor = Cursor::over(source, 0, Ordering::Relaxed);
    loop {
        stored += (cursor.slot() != 0) as usize;
        if !cursor.advance() {
            return (stored, cursor.slot() == 0);
        }
    }
}
