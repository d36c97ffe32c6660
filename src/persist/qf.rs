//! Persistence of the 3-status-bit table (paper 000 §2.1) shared by [`SequentialQf`],
//! [`LocallyLockedQf`] and [`ExternallyLockedQf`], and [`SequentialQfRef`], a read-only filter
//! over borrowed bytes that answers queries with the same walk ([`walk::lookup`]) reading the
//! little-endian groups in place.
//!
//! The three filters hold the same table at rest, so each reads what any of them wrote. Their
//! snapshots:
//!
//! * `SequentialQf` writes with `&self`: nothing else can change it meanwhile.
//! * `LocallyLockedQf` writes with `&mut self`, so no operation is in flight and the table holds
//!   no status-bit lock. An exact `&self` copy would have to stop every writer, which its locks
//!   (inside the table, per cluster) cannot do without a new global protocol; its `&self`
//!   [`snapshot`](LocallyLockedQf::snapshot) reads a cluster at a time instead, and is not the
//!   table of one instant.
//! * `ExternallyLockedQf` writes with `&self`: it takes every region lock, in the ascending order
//!   all its operations use, copies the table and releases them, so the snapshot is the table
//!   between two operations while other threads keep working (they wait for the copy).

use std::hash::Hash;
use std::io::{Read, Write};

use crate::filter::Error;
use crate::hash::{hash_key, Fingerprint};
use crate::qf::externally_locked::ExternallyLockedQf;
use crate::qf::locally_locked::LocallyLockedQf;
use crate::qf::scan::check_table;
use crate::qf::sequential::SequentialQf;
use crate::qf::slot::{OCCUPIED, STATUS_BITS};
use crate::qf::table::QfTable;
use crate::qf::walk;
use crate::qf::{overflow_slots, usual_slots};
use crate::sizing;
use crate::storage::{Cursor, GroupSource, LeWords, SlotLayout};
use crate::sync::Ordering;

use super::format::{self, corrupt, File, ParamsWriter, Tag};
use super::{bad_parameters, check_padding, fill_array, table_words};

pub(super) fn params(table: &QfTable) -> ParamsWriter {
    ParamsWriter::default()
        .u32(table.quotient_bits)
        .u32(table.remainder_bits)
}

/// The tag and parameters of a 3-status-bit table's file, with its lock regions if an
/// `ExternallyLockedQf` writes it. A grown table (more slots than `with_bits` makes) stores its
/// slot count: read as every lane of its groups, as files without it are, it came back with up
/// to a group's lanes more than it had, which its tail then filled differently (a review found
/// `with_bits(6, 10)` grown twice, 392 slots, read back with 395).
fn header(table: &QfTable, region_slots: Option<usize>) -> (Tag, ParamsWriter) {
    let grown = table.slots.len() != usual_slots(table.quotient_bits);
    let params = params(table);
    match (region_slots, grown) {
        (None, false) => (Tag::Qf3, params),
        (None, true) => (Tag::Qf3Grown, params.u64(table.slots.len() as u64)),
        (Some(region), false) => (Tag::Qf3Regions, params.u64(region as u64)),
        (Some(region), true) => (
            Tag::Qf3RegionsGrown,
            params.u64(region as u64).u64(table.slots.len() as u64),
        ),
    }
}

/// A validated 3-status-bit table in borrowed bytes.
#[derive(Clone, Copy)]
pub(super) struct Decoded<'a> {
    words: LeWords<'a>,
    quotient_bits: u32,
    remainder_bits: u32,
    /// Slots per lock region, if an `ExternallyLockedQf` wrote it.
    region_slots: Option<usize>,
    len: usize,
}

impl<'a> Decoded<'a> {
    /// Checks the parameters, the payload's length and padding, and the table's invariants;
    /// allocates nothing.
    fn new(file: &File<'a>, reader: &str) -> Result<Self, Error> {
        let tags = [
            Tag::Qf3,
            Tag::Qf3Regions,
            Tag::Qf3Grown,
            Tag::Qf3RegionsGrown,
        ];
        let mut params = file.params_as(&tags, reader)?;
        let (quotient_bits, remainder_bits) = (params.u32()?, params.u32()?);
        let region_slots = match file.tag {
            Tag::Qf3Regions | Tag::Qf3RegionsGrown => Some(
                usize::try_from(params.u64()?)
                    .ok()
                    .filter(|&slots| slots > 0)
                    .ok_or_else(|| corrupt("bad lock region size"))?,
            ),
            _ => None,
        };
        let exact_slots = match file.tag {
            Tag::Qf3Grown | Tag::Qf3RegionsGrown => {
                let slots = params.u64()?;
                // Only a grown table stores its count, so the usual one is never written with
                // it (such a file would not write back as it was read). `table` checks the bits.
                let usual = usual_slots(quotient_bits.min(sizing::MAX_QUOTIENT_BITS));
                if slots <= usual as u64 {
                    return Err(corrupt(format!(
                        "a grown table of {slots} slots, no more than a new one of q = \
                         {quotient_bits}"
                    )));
                }
                Some(usize::try_from(slots).map_err(|_| corrupt("bad slot count"))?)
            }
            _ => None,
        };
        Self::table(
            file.payload,
            quotient_bits,
            remainder_bits,
            region_slots,
            exact_slots,
        )
    }

    /// Checks a 3-status-bit table of these parameters in `payload` (its length and padding,
    /// and the table's invariants); allocates nothing. Its slot count is `exact_slots` if the
    /// file stores it, else the usual `2^q` and overflow tail, or, for a larger payload (a
    /// grown table's longer tail), every lane of its groups.
    pub(super) fn table(
        payload: &'a [u8],
        quotient_bits: u32,
        remainder_bits: u32,
        region_slots: Option<usize>,
        exact_slots: Option<usize>,
    ) -> Result<Self, Error> {
        sizing::check_bits(quotient_bits, remainder_bits, STATUS_BITS, 1)
            .map_err(bad_parameters)?;
        let addressable = 1usize << quotient_bits;
        let bits = remainder_bits + STATUS_BITS;
        // A table that has grown has a longer overflow tail than a new one (see
        // `QfTable::doubled`); its file stores the slot count, but one written before
        // `Tag::Qf3Grown` does not: its larger payload is that tail, every lane of its groups
        // a slot.
        let usual = addressable + overflow_slots(quotient_bits);
        let layout = SlotLayout::new(bits);
        let groups = payload.len() / 8;
        let slots = match exact_slots {
            Some(slots) if slots < usual => {
                return Err(corrupt(format!(
                    "{slots} slots is below the {usual} of q = {quotient_bits}"
                )))
            }
            Some(slots) => slots,
            None if groups > layout.groups_for(usual) => {
                groups.saturating_mul(layout.per_group() as usize)
            }
            None => usual,
        };
        let words = table_words(payload, bits, slots)?;
        check_padding(&words)?;
        let len = check_table(&words, remainder_bits).map_err(corrupt)?;
        // Only the 2^q addressable slots are canonical slots of some fingerprint.
        let mut tail = Cursor::over(&words, addressable, Ordering::Relaxed);
        loop {
            if tail.slot() & OCCUPIED != 0 {
                return Err(corrupt(format!(
                    "overflow slot {} is marked occupied",
                    tail.index()
                )));
            }
            if !tail.advance() {
                break;
            }
        }
        Ok(Decoded {
            words,
            quotient_bits,
            remainder_bits,
            region_slots,
            len,
        })
    }

    /// Quotient bits `q`.
    pub(super) fn quotient_bits(&self) -> u32 {
        self.quotient_bits
    }

    /// Remainder bits `r`.
    pub(super) fn remainder_bits(&self) -> u32 {
        self.remainder_bits
    }

    /// A sequential filter holding this table (the one allocation, fallible).
    pub(super) fn to_sequential(self) -> Result<SequentialQf, Error> {
        let table = QfTable::with_slots(
            self.quotient_bits,
            self.remainder_bits,
            self.words.slot_count(),
        )?;
        let mut filter = SequentialQf { table, len: 0 };
        fill_array(&self.words, &filter.table.slots);
        filter.len = self.len;
        Ok(filter)
    }
}

fn read_sequential(bytes: &[u8], reader: &str) -> Result<(SequentialQf, Option<usize>), Error> {
    let file = format::parse(bytes)?;
    let decoded = Decoded::new(&file, reader)?;
    Ok((decoded.to_sequential()?, decoded.region_slots))
}

impl SequentialQf {
    /// Writes the filter in the crate's portable format (see [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<()> {
        let (tag, params) = header(&self.table, None);
        format::write_file(out, tag, params, self.table.slots.groups_at_rest())
    }

    /// The filter as bytes: a versioned little-endian format with a checksum, which
    /// [`from_bytes`](Self::from_bytes), [`SequentialQfRef`], and the concurrent 3-status-bit
    /// filters read on any platform.
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let mut filter = SequentialQf::new(1000, 0.01)?;
    /// filter.insert("apple")?;
    /// let bytes = filter.to_bytes();
    /// let back = SequentialQf::from_bytes(&bytes)?;
    /// assert!(back.contains("apple"));
    /// assert_eq!(back.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes) (or by `LocallyLockedQf` or
    /// `ExternallyLockedQf`).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid 3-status-bit filter: bad magic,
    /// version, tag, lengths, checksum, parameters or table invariants. Nothing is allocated
    /// before the lengths are checked against `bytes`. [`Error::OutOfMemory`] if the
    /// table's memory cannot be allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        read_sequential(bytes, "SequentialQf").map(|(filter, _)| filter)
    }

    /// Reads one filter from a stream, consuming exactly its bytes.
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let mut filter = SequentialQf::new(1000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// let mut file = Vec::new();
    /// filter.write_to(&mut file).unwrap();
    /// assert!(SequentialQf::read_from(file.as_slice())?.contains(&42u64));
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

impl LocallyLockedQf {
    /// Writes the filter as [`SequentialQf::write_to`] does. `&mut self`: no operation is in
    /// flight, so the snapshot holds no status-bit lock (call it on an `Arc` with
    /// [`Arc::get_mut`](std::sync::Arc::get_mut) once the other threads are done). To persist
    /// a filter other threads keep using, write its [`snapshot`](Self::snapshot) instead.
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&mut self, out: W) -> std::io::Result<()> {
        let (tag, params) = header(&self.table, None);
        format::write_file(out, tag, params, self.table.slots.groups_at_rest())
    }

    /// The filter as bytes, in the format of [`SequentialQf::to_bytes`]; see
    /// [`write_to`](Self::write_to) for why it takes `&mut self`.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let mut filter = LocallyLockedQf::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = LocallyLockedQf::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&mut self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads any 3-status-bit filter's bytes; see [`SequentialQf::from_bytes`].
    ///
    /// # Errors
    /// As [`SequentialQf::from_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (filter, _) = read_sequential(bytes, "LocallyLockedQf")?;
        Ok(Self::from_sequential(filter))
    }

    /// Reads one filter from a stream; see [`SequentialQf::read_from`].
    ///
    /// # Errors
    /// As [`SequentialQf::read_from`].
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::from_bytes(&format::read_file(input)?)
    }
}

impl ExternallyLockedQf {
    /// Writes a consistent snapshot while other threads keep working: the table as it is
    /// between two operations (every region lock is held while the table is copied; other
    /// threads wait for the copy, not for `out`). The region size is kept.
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<()> {
        let snapshot = self.snapshot_groups();
        let (tag, params) = header(self.table(), Some(self.region_slots()));
        format::write_file(out, tag, params, snapshot.into_iter())
    }

    /// The snapshot of [`write_to`](Self::write_to) as bytes.
    ///
    /// ```
    /// use conqf::{ExternallyLockedQf, Filter};
    /// let filter = ExternallyLockedQf::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = ExternallyLockedQf::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// assert_eq!(back.region_slots(), filter.region_slots());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads any 3-status-bit filter's bytes; see [`SequentialQf::from_bytes`]. Bytes without a
    /// region size get [`DEFAULT_REGION_SLOTS`](Self::DEFAULT_REGION_SLOTS).
    ///
    /// # Errors
    /// As [`SequentialQf::from_bytes`], and [`Error::Corrupt`] for a region size no filter of
    /// that table has (the constructors round a size to whole groups, a power of two of them,
    /// at most the table; bytes with any other would not be written back as they were read).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (filter, region) = read_sequential(bytes, "ExternallyLockedQf")?;
        let external =
            Self::from_sequential_with_region(filter, region.unwrap_or(Self::DEFAULT_REGION_SLOTS))
                .map_err(bad_parameters)?;
        if region.is_some_and(|slots| slots != external.region_slots()) {
            return Err(corrupt(
                "lock region size not rounded as the constructors round it",
            ));
        }
        Ok(external)
    }

    /// Reads one filter from a stream; see [`SequentialQf::read_from`].
    ///
    /// # Errors
    /// As [`SequentialQf::read_from`].
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::from_bytes(&format::read_file(input)?)
    }
}

/// A read-only [`SequentialQf`] over borrowed bytes, e.g. a memory-mapped file: queries read
/// the serialised table in place (any alignment, any host byte order), nothing is copied.
///
/// [`from_bytes`](Self::from_bytes) validates the whole buffer once (checksum and table
/// invariants, one pass over it), so every later query is as exact as the owned filter's.
///
/// ```
/// use conqf::{SequentialQf, SequentialQfRef};
/// let mut filter = SequentialQf::new(1000, 0.01)?;
/// filter.insert("apple")?;
/// let bytes = filter.to_bytes(); // or a memory-mapped file
/// let view = SequentialQfRef::from_bytes(&bytes)?;
/// assert!(view.contains("apple"));
/// assert_eq!(view.len(), 1);
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct SequentialQfRef<'a> {
    /// The whole serialised filter.
    bytes: &'a [u8],
    decoded: Decoded<'a>,
}

impl<'a> SequentialQfRef<'a> {
    /// A view over the bytes of a fixed-size 3-status-bit filter ([`SequentialQf::to_bytes`],
    /// [`LocallyLockedQf::to_bytes`](crate::LocallyLockedQf::to_bytes) and
    /// [`ExternallyLockedQf::to_bytes`](crate::ExternallyLockedQf::to_bytes)). A
    /// [`GrowableQf`](crate::GrowableQf)'s bytes carry its growth state too and are refused
    /// ([`Error::Corrupt`]); read them with `GrowableQf::from_bytes`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] as for [`SequentialQf::from_bytes`]; it allocates nothing.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let decoded = Decoded::new(&file, "SequentialQfRef")?;
        Ok(SequentialQfRef { bytes, decoded })
    }

    /// The serialised filter the view reads (what it was made from).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether the fingerprint of `hash` is stored.
    pub fn contains_hash(&self, hash: u64) -> bool {
        let f = Fingerprint::split(
            hash,
            self.decoded.quotient_bits,
            self.decoded.remainder_bits,
        );
        let mut cursor = Cursor::over(&self.decoded.words, f.quotient as usize, Ordering::Relaxed);
        walk::lookup(&mut cursor, f.remainder).is_some_and(|(found, _)| found)
    }

    /// Whether a key may be present.
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(hash_key(key))
    }

    /// Number of stored fingerprints.
    pub fn len(&self) -> usize {
        self.decoded.len
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.decoded.len == 0
    }

    /// Quotient bits `q`.
    pub fn quotient_bits(&self) -> u32 {
        self.decoded.quotient_bits
    }

    /// Remainder bits `r`.
    pub fn remainder_bits(&self) -> u32 {
        self.decoded.remainder_bits
    }

    /// The expected false-positive rate at the stored fill, as [`SequentialQf`] computes it.
    pub fn false_positive_rate(&self) -> f64 {
        let load = self.decoded.len as f64 / (1u64 << self.decoded.quotient_bits) as f64;
        sizing::qf_fpr(load, self.decoded.remainder_bits)
    }

    /// An owned, writable copy.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the table's memory cannot be allocated.
    pub fn to_owned_filter(&self) -> Result<SequentialQf, Error> {
        self.decoded.to_sequential()
    }
}

impl std::fmt::Debug for SequentialQfRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequentialQfRef")
            .field("quotient_bits", &self.decoded.quotient_bits)
            .field("remainder_bits", &self.decoded.remainder_bits)
            .field("len", &self.decoded.len)
            .finish_non_exhaustive()
    }
}
