//! Persistence of the growing filters: [`GrowableQf`] (bounded growing, paper 000 §2.1, §3.2)
//! and [`ExpandableQf`] (levels of growable filters, paper 000 §4).
//!
//! * A `GrowableQf` file is its current 3-status-bit table (the payload of a `SequentialQf`
//!   file) with the growth state: `delta_grow`, the doublings done and left, the migration
//!   block size, and the slot count (a grown table's overflow tail is longer than a new
//!   one's). A filter read back doubles at the same fill, as often as the original still
//!   would have.
//! * An `ExpandableQf` file holds `q_0`, `r_0`, `delta_grow`, cascading, the number of levels,
//!   their removal flags and how the levels hash (0: all split the key's hash, as cascading
//!   filters and every file before per-level hashes do; 1: each later level the hash times its
//!   own odd constant); its payload is the levels, each a whole `GrowableQf` file. Every level's
//!   shape is checked against the one the level structure gives it (paper 000 §4.1), so a
//!   filter read back opens its next levels exactly as the original would.
//!
//! Both snapshots take `&mut self`: no operation, and so no migration (the last helper swaps the
//! generation before its operation returns), is in flight, and no table holds a lock.

use std::io::{Read, Write};

use crate::filter::Error;
use crate::qf::expandable::{ExpandableQf, LevelHashes, MAX_LEVELS};
use crate::qf::growing::GrowableQf;
use crate::qf::locally_locked::LocallyLockedQf;
use crate::qf::slot::STATUS_BITS;
use crate::sizing;
use crate::storage::le_word;

use super::bad_parameters;
use super::format::{self, corrupt, File, ParamsReader, ParamsWriter, Tag};
use super::qf::{params as qf3_params, Decoded};

/// The largest number of doublings a file may record (a fingerprint has at most 64 bits).
const MAX_DOUBLINGS: u32 = 64;

/// `delta_grow` from its bits; `Err` unless it is in `(0, 0.9]`, the builders' range.
fn delta_grow(params: &mut ParamsReader<'_>) -> Result<f64, Error> {
    let delta = f64::from_bits(params.u64()?);
    if delta > 0.0 && delta <= 0.9 {
        Ok(delta)
    } else {
        Err(corrupt(format!("delta_grow {delta} is not in (0, 0.9]")))
    }
}

/// Writes a growable filter no operation works on.
fn write_growable<W: Write>(filter: &GrowableQf, out: W) -> std::io::Result<()> {
    let delta = filter.delta_grow();
    filter.with_quiescent(|table: &LocallyLockedQf, (done, left, block_slots)| {
        let params = qf3_params(&table.table)
            .u64(delta.to_bits())
            .u32(done)
            .u32(left)
            .u64(block_slots as u64)
            .u64(table.table.slots.len() as u64);
        format::write_file(
            out,
            Tag::Growable,
            params,
            table.table.slots.groups_at_rest(),
        )
    })
}

/// A validated growable filter in borrowed bytes.
struct DecodedGrowable<'a> {
    table: Decoded<'a>,
    delta_grow: f64,
    doublings_done: u32,
    doublings_left: u32,
    block_slots: usize,
}

impl<'a> DecodedGrowable<'a> {
    fn new(file: &File<'a>, reader: &str) -> Result<Self, Error> {
        let mut params = file.params_as(&[Tag::Growable], reader)?;
        let (quotient_bits, remainder_bits) = (params.u32()?, params.u32()?);
        let delta_grow = delta_grow(&mut params)?;
        let (doublings_done, doublings_left) = (params.u32()?, params.u32()?);
        if doublings_done > MAX_DOUBLINGS || doublings_left > MAX_DOUBLINGS {
            return Err(corrupt(format!(
                "{doublings_done} doublings done and {doublings_left} left"
            )));
        }
        let block_slots = params.u64()?;
        let block_slots = usize::try_from(block_slots)
            .ok()
            .filter(|&slots| slots > 0)
            .ok_or_else(|| corrupt(format!("migration block of {block_slots} slots")))?;
        let slots =
            usize::try_from(params.u64()?).map_err(|_| corrupt("slot count out of range"))?;
        Ok(DecodedGrowable {
            table: Decoded::table(
                file.payload,
                quotient_bits,
                remainder_bits,
                None,
                Some(slots),
            )?,
            delta_grow,
            doublings_done,
            doublings_left,
            block_slots,
        })
    }

    /// The filter (the one allocation, fallible).
    fn to_filter(&self) -> Result<GrowableQf, Error> {
        Ok(GrowableQf::from_parts(
            self.table.to_sequential()?,
            self.delta_grow,
            self.doublings_done,
            self.doublings_left,
            self.block_slots,
        ))
    }
}

impl GrowableQf {
    /// Writes the filter in the crate's portable format (see [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&mut self, out: W) -> std::io::Result<()> {
        write_growable(self, out)
    }

    /// The filter as bytes: its current table and its growth state (`delta_grow`, doublings
    /// done and left, migration block size), so a filter read back keeps growing the same way.
    ///
    /// `&mut self`: no operation and no migration is in flight (call it on an `Arc` with
    /// [`Arc::get_mut`](std::sync::Arc::get_mut) once the other threads are done). To persist
    /// a filter other threads keep using, write its [`snapshot`](Self::snapshot) instead.
    ///
    /// ```
    /// use conqf::{Filter, GrowableQf, LocallyLockedQf};
    /// let mut filter = LocallyLockedQf::growable(100, 0.01).max_doublings(4).build()?;
    /// for k in 0..500u64 {
    ///     filter.insert(&k)?;
    /// }
    /// let back = GrowableQf::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(back.doublings(), filter.doublings());
    /// assert!((0..500u64).all(|k| back.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&mut self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid growable filter: bad magic,
    /// version, tag, lengths, checksum, growth parameters (`delta_grow` outside `(0, 0.9]`,
    /// more than 64 doublings, an empty migration block) or table (as
    /// [`SequentialQf::from_bytes`](crate::SequentialQf::from_bytes)). Nothing is allocated
    /// before the lengths are checked. [`Error::OutOfMemory`] if the memory cannot be
    /// allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        DecodedGrowable::new(&file, "GrowableQf")?.to_filter()
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

impl ExpandableQf {
    /// Writes the filter in the crate's portable format (see [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// Whatever `out` returns.
    pub fn write_to<W: Write>(&mut self, out: W) -> std::io::Result<()> {
        let (((q0, r0), delta, cascading), removed, levels) = self.parts();
        let mut payload = Vec::new();
        for level in &levels {
            write_growable(level, &mut payload)?;
        }
        let params = ParamsWriter::default()
            .u32(q0)
            .u32(r0)
            .u64(delta.to_bits())
            .u32(cascading as u32)
            .u32(levels.len() as u32)
            .u32(removed)
            .u32(match self.level_hashes() {
                LevelHashes::Shared => 0,
                LevelHashes::PerLevel => 1,
            });
        // Every level file is a whole number of 8-byte words (its fields are).
        let words = (0..payload.len() / 8).map(|index| le_word(&payload, index));
        format::write_file(out, Tag::Expandable, params, words)
    }

    /// The filter as bytes: its parameters (`q_0`, `r_0`, `delta_grow`, cascading, how the
    /// levels hash) and every level with its growth state and removal flag, so a filter read
    /// back answers as before and opens its next levels the same way.
    ///
    /// `&mut self`: no operation, migration or level opening is in flight (call it on an `Arc`
    /// with [`Arc::get_mut`](std::sync::Arc::get_mut) once the other threads are done). To
    /// persist a filter other threads keep using, write its [`snapshot`](Self::snapshot).
    ///
    /// ```
    /// use conqf::{ExpandableQf, Filter};
    /// let mut filter = ExpandableQf::new(100, 0.01)?;
    /// for k in 0..2000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// let back = ExpandableQf::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(back.levels(), filter.levels());
    /// assert!((0..2000u64).all(|k| back.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn to_bytes(&mut self) -> Vec<u8> {
        format::to_vec(|out| self.write_to(out))
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the bytes are not exactly one valid expandable filter: bad magic,
    /// version, tag, lengths, checksum, parameters, a level that is not a valid
    /// [`GrowableQf`] file, or a level whose shape or growth state is not the one the level
    /// structure gives it. [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let file = format::parse(bytes)?;
        let mut params = file.params_as(&[Tag::Expandable], "ExpandableQf")?;
        let (q0, r0) = (params.u32()?, params.u32()?);
        let delta = delta_grow(&mut params)?;
        let cascading = match params.u32()? {
            0 => false,
            1 => true,
            other => return Err(corrupt(format!("cascading flag {other}"))),
        };
        let count = params.u32()? as usize;
        let removed = params.u32()?;
        // Files written before the levels had hashes of their own have a 0 here (the field
        // was reserved then).
        let level_hashes = match params.u32()? {
            0 => LevelHashes::Shared,
            // No constructor makes a cascading filter with a hash per level: its early stop
            // needs one hash (`ExpandableQf`'s docs, "A hash per level").
            1 if !cascading => LevelHashes::PerLevel,
            other => {
                return Err(corrupt(format!(
                    "level hashing {other} (cascading: {cascading})"
                )))
            }
        };
        sizing::check_bits(q0, r0, STATUS_BITS, 1).map_err(bad_parameters)?;
        if !ExpandableQf::fingerprints_grow_to_64_bits((q0, r0)) {
            // No constructor makes these (their levels would leave the bound).
            return Err(corrupt(format!("level 0 of ({q0}, {r0}) bits")));
        }
        if !(1..=MAX_LEVELS).contains(&count) {
            return Err(corrupt(format!("{count} levels")));
        }
        if count < 32 && removed >> count != 0 {
            return Err(corrupt("removal flag of a level that does not exist"));
        }
        // Every level validated before any is allocated.
        let mut decoded = Vec::new();
        let mut rest = file.payload;
        for level in 0..count {
            let (nested, after) = format::parse_prefix(rest)?;
            rest = after;
            let d = DecodedGrowable::new(&nested, "ExpandableQf level")?;
            let (q, r) = (d.table.quotient_bits(), d.table.remainder_bits());
            let expected = ExpandableQf::level_shape((q0, r0), level, d.doublings_done);
            if expected != Some((q, r, d.doublings_done + d.doublings_left))
                || d.delta_grow.to_bits() != delta.to_bits()
            {
                return Err(corrupt(format!(
                    "level {level} ({q}, {r}, {} + {} doublings) does not fit q0 = {q0}, \
                     r0 = {r0}",
                    d.doublings_done, d.doublings_left
                )));
            }
            decoded.push(d);
        }
        if !rest.is_empty() {
            return Err(corrupt("bytes after the last level"));
        }
        let mut levels = Vec::new();
        crate::storage::try_reserve(&mut levels, count)?;
        for d in &decoded {
            levels.push(d.to_filter()?);
        }
        Ok(ExpandableQf::from_parts(
            levels,
            removed,
            (q0, r0),
            delta,
            cascading,
            level_hashes,
        ))
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
