//! Persistence of [`TwoBitQf`], the 2-status-bit table of paper 000 §2.2: `q`, `r`, then the
//! slots (`r + 2` bits each: guard, `2^q` canonical slots, overflow tail) packed as in memory.
//!
//! The exact copy takes `&mut self`: the filter's locks are empty slots of the table itself
//! (paper 000 §3.2), so a word-by-word copy taken while other threads work could hold a lock or
//! a half-shifted supercluster, and stopping every writer would need a global protocol the
//! filter does not have. With `&mut self` no operation is in flight, so the table holds no lock.
//! A filter other threads keep using is persisted through its `&self`
//! [`snapshot`](TwoBitQf::snapshot), read a supercluster at a time under its lock.
//!
//! Reading checks every invariant of a table at rest with the filter's own checker
//! ([`check_slots`]): no lock or stray status bit in an empty slot, guard and last slot empty,
//! every supercluster starting with a run at its canonical slot, as many runs as occupied slots,
//! remainders non-zero and strictly increasing within runs, no occupied bit in the tail.

use std::io::{Read, Write};

use crate::filter::Error;
use crate::qf::two_bit::table::{check_slots, TwoBitTable, GUARD, STATUS_BITS};
use crate::qf::two_bit::TwoBitQf;
use crate::qf::usual_slots;
use crate::sizing;

use super::format::{self, corrupt, ParamsWriter, Tag};
use super::{bad_parameters, check_padding, fill_array, table_words};

impl TwoBitQf {
    /// Writes the filter in the crate's portable format (see [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&mut self, out: W) -> std::io::Result<()> {
        let params = ParamsWriter::default()
            .u32(self.table.quotient_bits)
            .u32(self.table.remainder_bits);
        // `&mut self`: no operation is in flight, so no slot is locked or half shifted.
        format::write_file(out, Tag::TwoBit, params, self.table.slots.groups_at_rest())
    }

    /// The filter as bytes: a versioned little-endian format with a checksum, which
    /// [`from_bytes`](Self::from_bytes) reads on any platform.
    ///
    /// `&mut self`: the filter's locks live in its own empty slots, so only a filter with no
    /// operation in flight has a consistent table to copy (call it on an `Arc` with
    /// [`Arc::get_mut`](std::sync::Arc::get_mut) once the other threads are done). To persist
    /// a filter other threads keep using, write its [`snapshot`](Self::snapshot) instead.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let mut filter = TwoBitQf::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = TwoBitQf::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// assert_eq!(back.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&mut self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid 2-status-bit filter: bad magic,
    /// version, tag, lengths, checksum, parameters, padding bits or table invariants (a lock
    /// left in a slot, a broken run structure). Nothing is allocated before the lengths are
    /// checked against `bytes`. [`Error::OutOfMemory`] if the table's memory cannot be
    /// allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let mut params = file.params_as(&[Tag::TwoBit], "TwoBitQf")?;
        let (quotient_bits, remainder_bits) = (params.u32()?, params.u32()?);
        sizing::check_bits(quotient_bits, remainder_bits, STATUS_BITS, 1)
            .map_err(bad_parameters)?;
        let slots = GUARD + usual_slots(quotient_bits);
        let words = table_words(file.payload, remainder_bits + STATUS_BITS, slots)?;
        check_padding(&words)?;
        let len = check_slots(&words, quotient_bits, remainder_bits).map_err(corrupt)?;
        let table = TwoBitTable::with_bits(quotient_bits, remainder_bits)?;
        fill_array(&words, &table.slots);
        Ok(TwoBitQf::from_table(table, len))
    }

    /// Reads one filter from a stream, consuming exactly its bytes.
    ///
    /// ```
    /// use conqf::{Filter, TwoBitQf};
    /// let mut filter = TwoBitQf::new(1000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// let mut file = Vec::new();
    /// filter.write_to(&mut file).unwrap();
    /// assert!(TwoBitQf::read_from(file.as_slice())?.contains(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`from_bytes`](Self::from_bytes); a stream that ends early is [`Error::Corrupt`],
    /// another read failure [`Error::Io`]. Memory grows only with the bytes that arrive.
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::from_bytes(&format::read_file(input)?)
    }
}
