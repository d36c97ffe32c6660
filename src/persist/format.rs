//! The file format shared by every filter: header, parameter fields, payload, checksum; writing
//! it to an [`io::Write`], and reading it back from bytes or an [`io::Read`] with every length
//! checked before anything is allocated. What the parameters and the payload mean is each
//! variant family's business (the sibling modules).
//!
//! ```text
//!  offset  size  field (all integers little-endian)
//!       0     8  magic  89 'C' 'O' 'N' 'Q' 'F' 0D 0A
//!       8     2  format version (1)
//!      10     2  variant tag (see `Tag`)
//!      12     4  parameter length P in bytes (fixed per tag)
//!      16     8  payload length N in bytes (the table's 64-bit groups)
//!      24     P  parameters: little-endian u32/u64 fields, per tag
//!  24 + P     N  payload: the table's groups as little-endian u64 words, in order
//!  24+P+N     8  xxh3-64 of bytes 8 .. 24 + P + N (everything between magic and checksum)
//! ```
//!
//! The magic's first byte is not ASCII and it ends in CR LF, so text-mode transfers and files
//! that are not filters fail at once, as in PNG.

use std::io::{self, Read, Write};

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::filter::Error;

/// The first eight bytes of every serialised filter.
pub(crate) const MAGIC: [u8; 8] = [0x89, b'C', b'O', b'N', b'Q', b'F', b'\r', b'\n'];
/// The format version this crate writes (and the only one it reads so far).
pub(crate) const VERSION: u16 = 1;
/// Bytes before the parameters.
pub(crate) const HEADER_LEN: usize = 24;
/// Bytes of the checksum trailer.
const CHECKSUM_LEN: usize = 8;
/// Bytes written or read at once when streaming the payload.
const CHUNK: usize = 64 * 1024;

/// Which filter family wrote a file. A tag fixes the parameter fields and the payload layout; a
/// new variant takes the next free number (never reuse one) and adds one arm to each match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// The 3-status-bit table (`SequentialQf`, `LocallyLockedQf`): `q`, `r`.
    Qf3 = 1,
    /// The 3-status-bit table with lock regions (`ExternallyLockedQf`): `q`, `r`, region slots.
    Qf3Regions = 2,
    /// `LinearProbingQf`: `q`, `r`, the load cap as `f64` bits.
    LinearProbing = 3,
    /// `AtomicBloomFilter` whose bit positions are plain double hashing, as the first format
    /// wrote it (read only; the writer uses [`BloomRotated`](Tag::BloomRotated)): hash
    /// functions, capacity, len (the bit count is the payload's).
    Bloom = 4,
    /// The cuckoo table (`LockFreeCuckooFilter`, `LockedCuckooFilter`): bucket bits,
    /// fingerprint bits.
    Cuckoo = 5,
    /// The 2-status-bit table (`TwoBitQf`): `q`, `r`.
    TwoBit = 6,
    /// The rank-and-select counting table (`CountingQf`): `q`, `r`, region blocks.
    Counting = 7,
    /// `GrowableQf`: `q`, `r`, `delta_grow` as `f64` bits, doublings done and left, migration
    /// block slots, slot count; the payload is a 3-status-bit table.
    Growable = 8,
    /// `ExpandableQf`: `q_0`, `r_0`, `delta_grow` as `f64` bits, cascading, levels, the
    /// levels' removal flags, a zero field; the payload is the levels, each a whole `Growable`
    /// file (its own header and checksum), one after another.
    Expandable = 9,
    /// `AtomicBloomFilter` with the rotated bit positions: the fields of
    /// [`Bloom`](Tag::Bloom).
    BloomRotated = 10,
    /// A 3-status-bit table with more slots than `with_bits` makes (grown: a doubling makes at
    /// least twice the slots it had, see `QfTable::doubled`): `q`, `r`, slot count. Files of
    /// such tables written before it have tag [`Qf3`](Tag::Qf3) and read back with every lane
    /// of their groups as a slot.
    Qf3Grown = 11,
    /// [`Qf3Regions`](Tag::Qf3Regions) of a grown table: `q`, `r`, region slots, slot count.
    Qf3RegionsGrown = 12,
}

impl Tag {
    fn from_u16(tag: u16) -> Option<Tag> {
        Some(match tag {
            1 => Tag::Qf3,
            2 => Tag::Qf3Regions,
            3 => Tag::LinearProbing,
            4 => Tag::Bloom,
            5 => Tag::Cuckoo,
            6 => Tag::TwoBit,
            7 => Tag::Counting,
            8 => Tag::Growable,
            9 => Tag::Expandable,
            10 => Tag::BloomRotated,
            11 => Tag::Qf3Grown,
            12 => Tag::Qf3RegionsGrown,
            _ => return None,
        })
    }

    /// The length of this tag's parameter fields.
    fn params_len(self) -> usize {
        match self {
            Tag::Qf3 => 8,
            Tag::Qf3Regions => 16,
            Tag::Qf3Grown => 16,
            Tag::Qf3RegionsGrown => 24,
            Tag::LinearProbing => 16,
            Tag::Bloom | Tag::BloomRotated => 24,
            Tag::Cuckoo => 8,
            Tag::TwoBit => 8,
            Tag::Counting => 16,
            Tag::Growable => 40,
            Tag::Expandable => 32,
        }
    }
}

/// The bytes `write` produces: how every filter's `to_bytes` runs its `write_to`.
pub(crate) fn to_vec(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> Vec<u8> {
    let mut bytes = Vec::new();
    write(&mut bytes).expect("writing to a Vec cannot fail");
    bytes
}

/// A corrupt-input error.
pub(crate) fn corrupt(why: impl Into<String>) -> Error {
    Error::Corrupt(why.into())
}

/// A failed read: a stream that ends early is corrupt input, anything else an I/O error.
fn read_error(error: io::Error) -> Error {
    if error.kind() == io::ErrorKind::UnexpectedEof {
        corrupt("truncated: the stream ended inside the filter")
    } else {
        Error::from(error)
    }
}

/// Little-endian parameter fields, written in order.
#[derive(Default)]
pub(crate) struct ParamsWriter(Vec<u8>);

impl ParamsWriter {
    pub(crate) fn u32(mut self, value: u32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub(crate) fn u64(mut self, value: u64) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
}

/// Little-endian parameter fields, read in order. The parameter block's length was checked
/// against its tag, so running out of fields is a bug in a family decoder; it still reports
/// corruption rather than panicking.
pub(crate) struct ParamsReader<'a>(&'a [u8]);

impl ParamsReader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or_else(|| corrupt("parameters too short"))?;
        self.0 = rest;
        Ok(*head)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        self.take().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        self.take().map(u64::from_le_bytes)
    }
}

/// Writes a whole file: header, `params`, the payload `words` (little-endian), checksum.
pub(crate) fn write_file<W: Write>(
    mut out: W,
    tag: Tag,
    params: ParamsWriter,
    words: impl ExactSizeIterator<Item = u64>,
) -> io::Result<()> {
    let params = params.0;
    debug_assert_eq!(params.len(), tag.params_len());
    let payload_len = words.len() as u64 * 8;
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..10].copy_from_slice(&VERSION.to_le_bytes());
    header[10..12].copy_from_slice(&(tag as u16).to_le_bytes());
    header[12..16].copy_from_slice(&(params.len() as u32).to_le_bytes());
    header[16..24].copy_from_slice(&payload_len.to_le_bytes());
    let mut checksum = Xxh3::new();
    let mut emit = |bytes: &[u8], checked: bool| -> io::Result<()> {
        if checked {
            checksum.update(bytes);
        }
        out.write_all(bytes)
    };
    emit(&header[..8], false)?;
    emit(&header[8..], true)?;
    emit(&params, true)?;
    let mut buffer = Vec::with_capacity(CHUNK.min(words.len() * 8));
    for word in words {
        buffer.extend_from_slice(&word.to_le_bytes());
        if buffer.len() >= CHUNK {
            emit(&buffer, true)?;
            buffer.clear();
        }
    }
    emit(&buffer, true)?;
    let digest = checksum.digest();
    out.write_all(&digest.to_le_bytes())
}

/// A file whose header, lengths and checksum are valid.
pub(crate) struct File<'a> {
    pub(crate) tag: Tag,
    params: &'a [u8],
    pub(crate) payload: &'a [u8],
}

impl<'a> File<'a> {
    /// The parameter fields, if the tag is one of `accepted`; `Err` naming `reader` otherwise.
    pub(crate) fn params_as(
        &self,
        accepted: &[Tag],
        reader: &str,
    ) -> Result<ParamsReader<'a>, Error> {
        if accepted.contains(&self.tag) {
            Ok(ParamsReader(self.params))
        } else {
            Err(corrupt(format!(
                "the bytes hold a {:?} filter, which {reader} cannot read",
                self.tag
            )))
        }
    }
}

/// What the fixed header says.
struct Header {
    tag: Tag,
    params_len: usize,
    payload_len: usize,
    /// The whole file's length.
    total: usize,
}

fn parse_header(header: &[u8; HEADER_LEN]) -> Result<Header, Error> {
    let field = |at: usize| -> [u8; 8] {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&header[at..at + 8]);
        bytes
    };
    if field(0) != MAGIC {
        return Err(corrupt("not a conqf filter (bad magic number)"));
    }
    let version = u16::from_le_bytes([header[8], header[9]]);
    if version != VERSION {
        return Err(corrupt(format!(
            "format version {version}; this conqf reads version {VERSION}"
        )));
    }
    let tag_number = u16::from_le_bytes([header[10], header[11]]);
    let tag = Tag::from_u16(tag_number)
        .ok_or_else(|| corrupt(format!("unknown filter variant tag {tag_number}")))?;
    let params_len = u32::from_le_bytes([header[12], header[13], header[14], header[15]]) as usize;
    if params_len != tag.params_len() {
        return Err(corrupt(format!(
            "{params_len} parameter bytes; a {tag:?} filter has {}",
            tag.params_len()
        )));
    }
    let payload_len = u64::from_le_bytes(field(16));
    let total = usize::try_from(payload_len)
        .ok()
        .filter(|len| len % 8 == 0)
        .and_then(|len| len.checked_add(HEADER_LEN + params_len + CHECKSUM_LEN))
        .ok_or_else(|| corrupt(format!("impossible payload length {payload_len}")))?;
    Ok(Header {
        tag,
        params_len,
        payload_len: payload_len as usize,
        total,
    })
}

/// Checks the header, the lengths and the checksum of `bytes`, which must hold exactly one
/// filter.
pub(crate) fn parse(bytes: &[u8]) -> Result<File<'_>, Error> {
    let Some(header) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(corrupt(format!(
            "truncated: {} bytes, shorter than the header",
            bytes.len()
        )));
    };
    let header = parse_header(header)?;
    if bytes.len() < header.total {
        return Err(corrupt(format!(
            "truncated: {} bytes of a {}-byte filter",
            bytes.len(),
            header.total
        )));
    }
    if bytes.len() > header.total {
        return Err(corrupt(format!(
            "{} bytes after the end of the filter",
            bytes.len() - header.total
        )));
    }
    let body_end = header.total - CHECKSUM_LEN;
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&bytes[body_end..]);
    if xxh3_64(&bytes[MAGIC.len()..body_end]) != u64::from_le_bytes(stored) {
        return Err(corrupt("checksum mismatch"));
    }
    let params_end = HEADER_LEN + header.params_len;
    Ok(File {
        tag: header.tag,
        params: &bytes[HEADER_LEN..params_end],
        payload: &bytes[params_end..params_end + header.payload_len],
    })
}

/// Checks the first filter in `bytes` (which may go on after it) as [`parse`] does; returns it
/// and the bytes after it. How a filter made of filters (`ExpandableQf`) reads its parts.
pub(crate) fn parse_prefix(bytes: &[u8]) -> Result<(File<'_>, &[u8]), Error> {
    let Some(header) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(corrupt(
            "truncated: a nested filter is shorter than the header",
        ));
    };
    let total = parse_header(header)?.total;
    if bytes.len() < total {
        return Err(corrupt(
            "truncated: a nested filter runs past its container",
        ));
    }
    let (first, rest) = bytes.split_at(total);
    Ok((parse(first)?, rest))
}

/// Reads exactly one filter's bytes from `input` (nothing after it). Memory grows with the
/// bytes that actually arrive, so a header that claims a huge table costs nothing until the
/// stream delivers it.
pub(crate) fn read_file<R: Read>(mut input: R) -> Result<Vec<u8>, Error> {
    let mut header = [0u8; HEADER_LEN];
    input.read_exact(&mut header).map_err(read_error)?;
    let total = parse_header(&header)?.total;
    let mut bytes = header.to_vec();
    while bytes.len() < total {
        let start = bytes.len();
        let chunk = CHUNK.min(total - start);
        bytes
            .try_reserve(chunk)
            .map_err(|_| Error::OutOfMemory(total))?;
        bytes.resize(start + chunk, 0);
        input.read_exact(&mut bytes[start..]).map_err(read_error)?;
    }
    Ok(bytes)
}

/// The payload length, in bytes, of `groups` 64-bit groups; `Err` unless it is `payload`'s.
pub(crate) fn expect_payload(payload: &[u8], groups: usize) -> Result<(), Error> {
    if groups.checked_mul(8) == Some(payload.len()) {
        Ok(())
    } else {
        Err(corrupt(format!(
            "the table is {} bytes but its parameters need {groups} groups of 8",
            payload.len()
        )))
    }
}
