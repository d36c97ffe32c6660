//! Persistence of [`CountingQf`], the rank-and-select counting quotient filter (paper 004
//! §III-B, paper 000 §2.2), and [`CountingQfRef`], a read-only filter over borrowed bytes that
//! answers [`count`](CountingQfRef::count) with the filter's own lookup (`lookup::count` through a
//! [`View`] of the little-endian words, [`LeBlocks`]).
//!
//! Parameters: `q`, `r`, blocks per region lock. Payload: every block's `2 + r` words
//! (`occupieds`, `runends`, 64 packed remainders), then the 8-bit offsets, eight blocks to a
//! word, exactly as in memory. The counts of copies and distinct fingerprints are not stored:
//! reading recounts them from the entries.
//!
//! The snapshot takes `&self` and holds every region lock (in ascending order, as every writer
//! takes them, and as `ExternallyLockedQf`'s snapshot does) while it copies the table: no
//! writer is inside a region, so no shift is half done; writers wait until the copy is made, and
//! so do lookups that cannot validate an optimistic read meanwhile.
//!
//! Reading runs the filter's invariant checker on the bytes in place (one pass, no allocation):
//! occupied and runend bits pair up, every run lies where rank and select find it, offsets
//! exact, entries canonically encoded with non-zero counts and strictly increasing remainders,
//! no stray remainder outside runs, no run of an overflow slot, zero padding.

use std::hash::Hash;
use std::io::{Read, Write};

use crate::filter::Error;
use crate::hash::{hash_key, Fingerprint};
use crate::qf::counting::blocks::{BlockSource, LeBlocks, View};
use crate::qf::counting::lookup;
use crate::qf::counting::CountingQf;
use crate::qf::counting::Stored;
use crate::sizing;

use super::bad_parameters;
use super::format::{self, corrupt, File, ParamsWriter, Tag};

/// The smallest remainder width of `CountingQf` (its counters need base `2^r - 1 >= 3`).
const MIN_REMAINDER_BITS: u32 = 2;

/// A validated counting table in borrowed bytes.
#[derive(Clone, Copy)]
struct Decoded<'a> {
    table: LeBlocks<'a>,
    quotient_bits: u32,
    remainder_bits: u32,
    region_blocks: usize,
    /// What the table holds (copies, distinct fingerprints, slots), as the check counted it.
    stored: Stored,
}

impl<'a> Decoded<'a> {
    /// Checks the parameters, the payload's length and padding, and the table's invariants;
    /// allocates nothing.
    fn new(file: &File<'a>, reader: &str) -> Result<Self, Error> {
        let mut params = file.params_as(&[Tag::Counting], reader)?;
        let (quotient_bits, remainder_bits) = (params.u32()?, params.u32()?);
        let region_blocks = params.u64()?;
        sizing::check_bits(quotient_bits, remainder_bits, 2, MIN_REMAINDER_BITS)
            .map_err(bad_parameters)?;
        let blocks = CountingQf::blocks_for(quotient_bits);
        // A power of two no larger than the table's blocks rounded up: what the constructor
        // makes of any request, so a file holds only values it can write back unchanged.
        let region_blocks = usize::try_from(region_blocks)
            .ok()
            .filter(|&n| n.is_power_of_two() && n <= blocks.next_power_of_two())
            .ok_or_else(|| corrupt(format!("bad lock region size {region_blocks}")))?;
        let words = LeBlocks::words_for(blocks, remainder_bits)
            .ok_or_else(|| corrupt("table size out of range"))?;
        format::expect_payload(file.payload, words)?;
        let table = LeBlocks::new(file.payload, blocks, remainder_bits)
            .ok_or_else(|| corrupt("table size out of range"))?;
        // The offset bytes after the last block.
        let spill_words = blocks.div_ceil(8);
        let last = table.load_spill_word(spill_words - 1);
        let used = (blocks - (spill_words - 1) * 8) as u32;
        if used < 8 && last >> (8 * used) != 0 {
            return Err(corrupt("offset bytes after the last block are not zero"));
        }
        let stored = CountingQf::check_table(&table, quotient_bits).map_err(corrupt)?;
        Ok(Decoded {
            table,
            quotient_bits,
            remainder_bits,
            region_blocks,
            stored,
        })
    }

    /// A filter holding this table (its allocations fallible), with its counts rebuilt.
    fn to_filter(self) -> Result<CountingQf, Error> {
        let filter = CountingQf::with_bits_and_region(
            self.quotient_bits,
            self.remainder_bits,
            self.region_blocks,
        )?;
        debug_assert_eq!(filter.region_blocks(), self.region_blocks);
        filter.table.fill_from(&self.table);
        filter.count_written_table();
        debug_assert_eq!(filter.slots.sum(), self.stored.slots);
        Ok(filter)
    }
}

impl CountingQf {
    /// Writes the filter in the crate's portable format (see [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<()> {
        let params = ParamsWriter::default()
            .u32(self.quotient_bits())
            .u32(self.remainder_bits())
            .u64(self.region_blocks() as u64);
        // Allocated before locking, so other threads wait only for the copy, not for `out`.
        let mut words = Vec::with_capacity(self.table.word_count());
        self.locks
            .with_all_held(|| self.table.copy_words_into(&mut words));
        format::write_file(out, Tag::Counting, params, words.into_iter())
    }

    /// The filter as bytes: a versioned little-endian format with a checksum, which
    /// [`from_bytes`](Self::from_bytes) and the zero-copy [`CountingQfRef`] read on any
    /// platform. The region size is kept.
    ///
    /// Other threads may keep using the filter: the table is copied while every region lock is
    /// held (taken in ascending order, as every writer takes them), so the bytes are the table
    /// between two operations; writers wait for the copy, not for the output, and so do the
    /// lookups that meet a held region.
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let filter = CountingQf::new(1000, 0.01)?;
    /// filter.insert_count(&"apple", 7)?;
    /// let back = CountingQf::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(back.count(&"apple"), 7);
    /// assert_eq!((back.len(), back.distinct()), (7, 1));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid counting filter: bad magic,
    /// version, tag, lengths, checksum, parameters, padding, or table invariants (run
    /// structure, offsets, counters). Nothing is allocated before the lengths are checked
    /// against `bytes`. [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        Decoded::new(&file, "CountingQf")?.to_filter()
    }

    /// Reads one filter from a stream, consuming exactly its bytes.
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let filter = CountingQf::new(1000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// let mut file = Vec::new();
    /// filter.write_to(&mut file).unwrap();
    /// assert_eq!(CountingQf::read_from(file.as_slice())?.count(&42u64), 1);
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

/// A read-only [`CountingQf`] over borrowed bytes, e.g. a memory-mapped file: queries read the
/// serialised table in place (any alignment, any host byte order) with the filter's own lookup
/// code; nothing is copied.
///
/// [`from_bytes`](Self::from_bytes) validates the whole buffer once (checksum and table
/// invariants, one pass), so every later query is as exact as the owned filter's.
///
/// ```
/// use conqf::{Count, CountingQf, CountingQfRef, Filter};
/// let filter = CountingQf::new(1000, 0.01)?;
/// filter.insert_count(&"apple", 3)?;
/// let bytes = filter.to_bytes(); // or a memory-mapped file
/// let view = CountingQfRef::from_bytes(&bytes)?;
/// assert_eq!(view.count(&"apple"), 3);
/// assert!(!view.contains(&"pear"));
/// assert_eq!(view.len(), 3);
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct CountingQfRef<'a> {
    bytes: &'a [u8],
    decoded: Decoded<'a>,
}

impl<'a> CountingQfRef<'a> {
    /// A view over the bytes of [`CountingQf::to_bytes`].
    ///
    /// # Errors
    /// [`Error::Corrupt`] as for [`CountingQf::from_bytes`]; it allocates nothing.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let decoded = Decoded::new(&file, "CountingQfRef")?;
        Ok(CountingQfRef { bytes, decoded })
    }

    /// The serialised filter the view reads (what it was made from).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How many copies of the hash's fingerprint are stored.
    pub fn count_hash(&self, hash: u64) -> u64 {
        let f = Fingerprint::split(
            hash,
            self.decoded.quotient_bits,
            self.decoded.remainder_bits,
        );
        let view = View::new(&self.decoded.table);
        // A validated table is consistent, so the lookup never reports a fault.
        lookup::count(&view, f.quotient as usize, f.remainder).unwrap_or(0)
    }

    /// How many copies of a key are stored (never fewer than inserted), as
    /// [`Count::count`](crate::Count::count) of the filter.
    pub fn count<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        self.count_hash(hash_key(key))
    }

    /// Whether the hash's fingerprint is stored.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.count_hash(hash) > 0
    }

    /// Whether a key may be present.
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(hash_key(key))
    }

    /// Number of stored copies (as [`Filter::len`](crate::Filter::len) of the filter): at most
    /// `usize::MAX`.
    pub fn len(&self) -> usize {
        usize::try_from(self.decoded.stored.copies).unwrap_or(usize::MAX)
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.decoded.stored.entries == 0
    }

    /// Number of distinct fingerprints stored.
    pub fn distinct(&self) -> usize {
        self.decoded.stored.entries
    }

    /// Quotient bits `q`.
    pub fn quotient_bits(&self) -> u32 {
        self.decoded.quotient_bits
    }

    /// Remainder bits `r`.
    pub fn remainder_bits(&self) -> u32 {
        self.decoded.remainder_bits
    }

    /// The expected false-positive rate at the stored fill, as [`CountingQf`] computes it.
    pub fn false_positive_rate(&self) -> f64 {
        let load = self.decoded.stored.entries as f64 / (1u64 << self.decoded.quotient_bits) as f64;
        sizing::qf_fpr(load, self.decoded.remainder_bits)
    }

    /// An owned, writable copy (with the stored region size).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn to_owned_filter(&self) -> Result<CountingQf, Error> {
        self.decoded.to_filter()
    }
}

impl std::fmt::Debug for CountingQfRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingQfRef")
            .field("quotient_bits", &self.decoded.quotient_bits)
            .field("remainder_bits", &self.decoded.remainder_bits)
            .field("len", &self.len())
            .field("distinct", &self.decoded.stored.entries)
            .finish_non_exhaustive()
    }
}
