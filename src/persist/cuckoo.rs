//! Persistence of the cuckoo table (paper 001 §2.1) shared by [`LockFreeCuckooFilter`] and
//! [`LockedCuckooFilter`]: `b` (bucket bits) and `f` (fingerprint bits), then the entries,
//! `f + 2` bits each (fingerprint and state), packed as in memory.
//!
//! Both filters hold the same table at rest, so each reads what the other wrote. What is not
//! stored, and why:
//!
//! * The count: it is the number of non-empty entries, recounted on reading.
//! * The lock-free filter's relocation counters (paper 001 §2.2): they only have to grow while
//!   a query is in flight, and a filter read back has none, so they start at 0.
//! * The locked filter's stripe count: a property of the machine, not of the contents; a filter
//!   read back gets the default for the machine that reads it.
//!
//! Every stored entry is `Stable`: the snapshots are taken when no relocation is in flight.
//!
//! * `LockFreeCuckooFilter` writes with `&mut self`. With `&self`, a copy that reads the buckets
//!   one after another could read a key's destination bucket before a relocation moves the key
//!   there and its source bucket after, and lose the key; the relocation counters would detect
//!   that but not bound the retries, and the copy would have to resolve half-done moves. So the
//!   exact copy waits for a quiescent filter (`Arc::get_mut` once the other threads are done),
//!   and the `&self` [`snapshot`](LockFreeCuckooFilter::snapshot) pauses relocations while it
//!   copies (`cuckoo/pause.rs`), then writes the copy.
//! * `LockedCuckooFilter` writes with `&self`: it read-locks every stripe in the ascending order
//!   all its operations lock in, copies the table and unlocks. Every entry write holds its
//!   stripe's write lock, so the copy is the table between two single-entry steps (each
//!   relocation step moves a copy whole, under both its stripes' locks): it holds every key
//!   whose insert returned before the call and no key whose removal did. Writers wait for the
//!   copy, and so do queries of a stripe a writer is already waiting on: the locks are
//!   task-fair, so a new reader queues behind a waiting writer (which keeps writers from
//!   starving). Queries of the other stripes go on.

use std::io::{Read, Write};

use crate::cuckoo::lock_free::LockFreeCuckooFilter;
use crate::cuckoo::locked::LockedCuckooFilter;
use crate::cuckoo::table::{CuckooTable, ENTRIES_PER_BUCKET, STATE_BITS};
use crate::filter::Error;
use crate::hash::low_mask;
use crate::storage::{Cursor, LeWords};
use crate::sync::Ordering;

use super::format::{self, corrupt, ParamsWriter, Tag};
use super::{bad_parameters, check_padding, fill_array, table_words};

/// Writes `table`, which no thread changes during the call.
fn write_table<W: Write>(table: &CuckooTable, out: W) -> std::io::Result<()> {
    let params = ParamsWriter::default()
        .u32(table.bucket_bits())
        .u32(table.fingerprint_bits());
    // The callers hold `&mut self` or every stripe's lock, which orders every write to the
    // table before the loads.
    format::write_file(out, Tag::Cuckoo, params, table.entries.groups_at_rest())
}

/// A validated cuckoo table in borrowed bytes.
struct Decoded<'a> {
    words: LeWords<'a>,
    bucket_bits: u32,
    fingerprint_bits: u32,
    /// Non-empty entries.
    len: usize,
}

impl<'a> Decoded<'a> {
    /// Checks the parameters, the payload's length and padding, and every entry (empty, or a
    /// non-zero fingerprint in state `Stable`); allocates nothing.
    fn new(bytes: &'a [u8], reader: &str) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let mut params = file.params_as(&[Tag::Cuckoo], reader)?;
        let (bucket_bits, fingerprint_bits) = (params.u32()?, params.u32()?);
        CuckooTable::check_bits(bucket_bits, fingerprint_bits).map_err(bad_parameters)?;
        let words = table_words(
            file.payload,
            fingerprint_bits + STATE_BITS,
            CuckooTable::slots_for(bucket_bits),
        )?;
        check_padding(&words)?;
        let mut len = 0;
        let mut cursor = Cursor::over(&words, 0, Ordering::Relaxed);
        loop {
            let entry = cursor.slot();
            // A zero state field is `Stable`; with it, a non-empty entry has a non-zero
            // fingerprint.
            if entry & low_mask(STATE_BITS) != 0 {
                return Err(corrupt(format!(
                    "entry {} of bucket {} is in a relocation state",
                    cursor.index() % ENTRIES_PER_BUCKET,
                    cursor.index() / ENTRIES_PER_BUCKET
                )));
            }
            len += (entry != 0) as usize;
            if !cursor.advance() {
                break;
            }
        }
        Ok(Decoded {
            words,
            bucket_bits,
            fingerprint_bits,
            len,
        })
    }

    /// Copies the entries into `table` (fresh, of these parameters, not shared yet).
    fn fill(&self, table: &CuckooTable) {
        fill_array(&self.words, &table.entries);
        table.len.reset(self.len);
    }
}

impl LockFreeCuckooFilter {
    /// Writes the filter in the crate's portable format (see [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&mut self, out: W) -> std::io::Result<()> {
        write_table(&self.table, out)
    }

    /// The filter as bytes: a versioned little-endian format with a checksum, which
    /// [`from_bytes`](Self::from_bytes) and
    /// [`LockedCuckooFilter::from_bytes`] read on any platform.
    ///
    /// `&mut self`: no relocation is in flight, so no key is missed by a copy that reads the
    /// buckets one after another (call it on an `Arc` with
    /// [`Arc::get_mut`](std::sync::Arc::get_mut) once the other threads are done). To persist
    /// a filter other threads keep using, write its [`snapshot`](Self::snapshot), which holds
    /// relocations off while it copies. The relocation counters are not stored: a filter read
    /// back starts them at 0.
    ///
    /// ```
    /// use conqf::{Filter, LockFreeCuckooFilter};
    /// let mut filter = LockFreeCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = LockFreeCuckooFilter::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// assert_eq!(back.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&mut self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes) or by
    /// [`LockedCuckooFilter::to_bytes`].
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid cuckoo filter: bad magic,
    /// version, tag, lengths, checksum, parameters, padding bits, or an entry in a relocation
    /// state. Nothing is allocated before the lengths are checked against `bytes`.
    /// [`Error::OutOfMemory`] if the table's memory cannot be allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let decoded = Decoded::new(bytes, "LockFreeCuckooFilter")?;
        let filter = Self::with_bits(decoded.bucket_bits, decoded.fingerprint_bits)?;
        decoded.fill(&filter.table);
        Ok(filter)
    }

    /// Reads one filter from a stream, consuming exactly its bytes.
    ///
    /// ```
    /// use conqf::{Filter, LockFreeCuckooFilter};
    /// let mut filter = LockFreeCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// let mut file = Vec::new();
    /// filter.write_to(&mut file).unwrap();
    /// assert!(LockFreeCuckooFilter::read_from(file.as_slice())?.contains(&42u64));
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

impl LockedCuckooFilter {
    /// Writes the filter in the crate's portable format while other threads keep working (see
    /// [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns. The stripes stay read-locked while `out` is written to, so
    /// write to a buffer (or use `to_bytes`) when writers must not wait for slow output (nor
    /// the queries of a stripe a writer waits on: the locks are task-fair).
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<()> {
        let _all = self.read_all();
        write_table(&self.table, out)
    }

    /// The filter as bytes (the format of [`LockFreeCuckooFilter::to_bytes`]), taken while
    /// other threads keep working: every stripe is read-locked during the copy, so the bytes
    /// are the table between two operation steps. They hold every key whose insert returned
    /// before the call and no key whose removal returned before it. The stripe count is not
    /// stored.
    ///
    /// ```
    /// use conqf::{Filter, LockedCuckooFilter};
    /// let filter = LockedCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = LockedCuckooFilter::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// assert_eq!(back.fingerprints(), filter.fingerprints());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes) or by
    /// [`LockFreeCuckooFilter::to_bytes`], with the default stripes of
    /// [`with_bits`](Self::with_bits).
    ///
    /// # Errors
    /// As [`LockFreeCuckooFilter::from_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let decoded = Decoded::new(bytes, "LockedCuckooFilter")?;
        let filter = Self::with_bits(decoded.bucket_bits, decoded.fingerprint_bits)?;
        decoded.fill(&filter.table);
        Ok(filter)
    }

    /// Reads one filter from a stream, consuming exactly its bytes.
    ///
    /// ```
    /// use conqf::{Filter, LockedCuckooFilter};
    /// let filter = LockedCuckooFilter::new(1000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// let mut file = Vec::new();
    /// filter.write_to(&mut file).unwrap();
    /// assert!(LockedCuckooFilter::read_from(file.as_slice())?.contains(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`from_bytes`](Self::from_bytes).
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::from_bytes(&format::read_file(input)?)
    }
}
