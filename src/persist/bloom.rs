//! Persistence of [`AtomicBloomFilter`] (the baseline of paper 000 §5): hash-function count,
//! capacity and count, then the bit words (their number is the payload's). The tag says how a
//! key's bit positions follow from its hash: [`Tag::BloomRotated`] for every filter this crate
//! builds, [`Tag::Bloom`] for the plain double hashing of files the first format wrote, which
//! are read with it (their bits were set by it) and written back with their tag.
//!
//! The snapshot takes `&self` while other threads insert. Bits are only ever set, so a copy that
//! reads the words one after another holds every bit set before the copy began: every key whose
//! insert returned before `to_bytes` was called is found in the filter read back; keys inserted
//! meanwhile may be. The count is a statistic and may be off by the racing inserts.

use std::io::{Read, Write};

use crate::bloom::{AtomicBloomFilter, Probing, MAX_BITS, MAX_HASH_FUNCTIONS};
use crate::filter::{Error, Filter};
use crate::storage::le_word;
use crate::sync::Ordering;

use super::format::{self, corrupt, ParamsWriter, Tag};

impl AtomicBloomFilter {
    /// Writes the filter in the crate's portable format while other threads may insert: the
    /// result holds every key whose insert returned before the call.
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<()> {
        // The count stays within the bits set, which `from_bytes` checks.
        let (len, words) = self.snapshot();
        let params = ParamsWriter::default()
            .u64(self.hash_functions() as u64)
            .u64(self.capacity() as u64)
            .u64(len as u64);
        let tag = match self.probing() {
            Probing::Rotated => Tag::BloomRotated,
            Probing::DoubleHashing => Tag::Bloom,
        };
        format::write_file(out, tag, params, words)
    }

    /// The snapshot of [`write_to`](Self::write_to) as bytes.
    ///
    /// ```
    /// use conqf::{AtomicBloomFilter, Filter};
    /// let filter = AtomicBloomFilter::new(1000, 0.01)?;
    /// filter.insert(&"apple")?;
    /// let back = AtomicBloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert!(back.contains(&"apple"));
    /// assert_eq!(back.bits(), filter.bits());
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid Bloom filter (magic, version,
    /// tag, lengths, checksum, a hash-function count in `1..=64`, a size up to 2^48 bits, a
    /// positive capacity, a count no larger than the bits set). [`Error::OutOfMemory`] if
    /// the memory cannot be allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let mut params = file.params_as(&[Tag::BloomRotated, Tag::Bloom], "AtomicBloomFilter")?;
        let probing = if file.tag == Tag::Bloom {
            Probing::DoubleHashing
        } else {
            Probing::Rotated
        };
        let (hash_functions, capacity, len) = (params.u64()?, params.u64()?, params.u64()?);
        let hash_functions = u32::try_from(hash_functions)
            .ok()
            .filter(|k| (1..=MAX_HASH_FUNCTIONS).contains(k))
            .ok_or_else(|| corrupt(format!("{hash_functions} hash functions")))?;
        let capacity = usize::try_from(capacity)
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| corrupt(format!("capacity {capacity}")))?;
        let words = file.payload.len() / 8;
        if words == 0 || words as u64 > MAX_BITS / 64 {
            return Err(corrupt(format!("{words} words is outside 1..=2^42")));
        }
        let set: u64 = file
            .payload
            .chunks_exact(8)
            .map(|w| w.iter().map(|b| b.count_ones() as u64).sum::<u64>())
            .sum();
        // Each counted insert set at least one new bit.
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len as u64 <= set)
            .ok_or_else(|| corrupt(format!("count {len} exceeds the {set} bits set")))?;
        let filter =
            AtomicBloomFilter::build(words, hash_functions, capacity)?.with_probing(probing);
        for (index, word) in filter.words.iter().enumerate() {
            // Relaxed: the filter is not shared yet; handing it to other threads orders this.
            word.store(le_word(file.payload, index), Ordering::Relaxed);
        }
        filter.len.reset(len);
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
