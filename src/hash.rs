//! Key hashing and the split of a hash into a fingerprint (paper 000 §2.1).
//!
//! Every key is hashed once with xxh3 ([`hash_key`]). The hasher feeds integers in little-endian
//! order and `usize` as `u64`, so a key hashes the same on every platform and in every run, which
//! serialised filters rely on. One exception is std's: a slice, array or `Vec` of integers wider
//! than a byte hashes its elements as one block of their in-memory bytes (`Hash::hash_slice`),
//! which differs between little- and big-endian machines (and, for `usize`, between 32 and 64
//! bits); no hasher can tell those bytes' types.
//!
//! A fingerprint is the top `q` bits of the hash (the quotient, addressing the table) followed
//! by the next `r` bits (the remainder, stored in the slot). The linear-probing filter and the
//! cuckoo filters need remainders that are never zero (paper 000 §2.2): [`Fingerprint::nonzero`]
//! re-mixes the hash until the remainder is non-zero. The 2-status-bit filter stores a zero
//! remainder as 1 instead, a rule that survives growing.

use std::hash::{Hash, Hasher};

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed, Xxh3};

/// Hashes a key with xxh3; stable across runs and platforms for integers, strings and byte slices,
/// and for tuples, structs and enums deriving `Hash` made of them. Slices, arrays and `Vec`s of
/// wider integers are hashed by std as their elements' in-memory bytes, so they hash the same
/// only on machines of one byte order (and, for `usize`, one pointer width): to persist a filter
/// of such keys across platforms, hash them as bytes of a fixed order (e.g. a `Vec<u32>` as the
/// concatenated `to_le_bytes` of its elements, a `[u8]` key), or hash them yourself and use the
/// `*_hash` methods such as [`insert_hash`](crate::Filter::insert_hash).
///
/// ```
/// let a = conqf::hash_key("apple");
/// assert_eq!(a, conqf::hash_key(&String::from("apple")));
/// assert_ne!(a, conqf::hash_key("pear"));
/// ```
///
/// The hash has no secret: anyone can compute it, so keys chosen by an adversary can be picked
/// offline to share a quotient (one long cluster: slow inserts and lookups, and `Full` early in
/// the small tables that have no load cap) or to be false positives of a filter whose contents
/// they know. For such keys use [`hash_key_with_seed`] with a secret seed (its doc says how
/// far that goes).
pub fn hash_key<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = StableHasher::<false>::new(0);
    key.hash(&mut hasher);
    hasher.finish()
}

/// Hashes a key with xxh3 seeded by `seed`, for keys an adversary may choose: keys picked
/// offline against the public [`hash_key`] to share a quotient or to be false positives do not
/// line up under a secret seed. xxh3 is not a keyed cryptographic hash, though, so this guards
/// against keys prepared in advance, not against an attacker who can study the filter's answers
/// at length; where that matters, hash with a keyed hash such as SipHash with random keys
/// (`std::hash::RandomState`, whose hashes differ between processes, so such a filter is not
/// persisted) and pass the result to the same methods. Pass the hashes to the
/// `*_hash` methods ([`insert_hash`](crate::Filter::insert_hash),
/// [`contains_hash`](crate::Filter::contains_hash), the batch operations); a filter does not
/// store the seed, so keep it with the filter's bytes if you persist them, and use one seed for
/// filters you merge. Draw the seed at random (e.g. `rand::random()`); stable across runs and
/// platforms as [`hash_key`] is, which is this function with seed 0.
///
/// ```
/// use conqf::{hash_key, hash_key_with_seed, Filter, LocallyLockedQf};
///
/// let seed = 0x5eed_0f_c0ffee; // in a service, a random secret
/// let filter = LocallyLockedQf::new(1000, 0.01)?;
/// filter.insert_hash(hash_key_with_seed("apple", seed))?;
/// assert!(filter.contains_hash(hash_key_with_seed("apple", seed)));
/// assert_eq!(hash_key_with_seed("apple", 0), hash_key("apple"));
/// assert_ne!(hash_key_with_seed("apple", seed), hash_key("apple"));
/// # Ok::<(), conqf::Error>(())
/// ```
pub fn hash_key_with_seed<K: Hash + ?Sized>(key: &K, seed: u64) -> u64 {
    let mut hasher = StableHasher::<true>::new(seed);
    key.hash(&mut hasher);
    hasher.finish()
}

/// How many bytes [`StableHasher`] buffers before it switches to streaming.
const INLINE_BYTES: usize = 64;

/// A [`Hasher`] that writes integers little-endian and hashes all bytes written with xxh3,
/// seeded if `SEEDED`.
///
/// `SEEDED` is a parameter rather than a test of the seed: `finish` is not inlined into
/// [`hash_key`], so the seed would reach it at run time, and xxh3's seeded function cost about 4
/// instructions more per hash of a `u64` than its unseeded one (callgrind).
///
/// Short keys (the common case) are buffered and hashed in one shot, which is several times
/// faster than xxh3's streaming state; longer ones stream. Both give the same hash for the same
/// bytes, however they were split across `write` calls.
struct StableHasher<const SEEDED: bool> {
    inline: [u8; INLINE_BYTES],
    inline_len: usize,
    stream: Option<Box<Xxh3>>,
    /// xxh3's seed, if `SEEDED` (0 gives the unseeded hash).
    seed: u64,
}

impl<const SEEDED: bool> StableHasher<SEEDED> {
    fn new(seed: u64) -> Self {
        StableHasher {
            inline: [0; INLINE_BYTES],
            inline_len: 0,
            stream: None,
            seed,
        }
    }
}

impl<const SEEDED: bool> StableHasher<SEEDED> {
    /// Appends `N` bytes: a copy of a known size into the inline buffer when it fits (the
    /// common case of integer keys), else [`Hasher::write`]. Hashes exactly as `write` would.
    #[inline]
    fn write_fixed<const N: usize>(&mut self, bytes: [u8; N]) {
        let end = self.inline_len + N;
        if self.stream.is_none() && end <= INLINE_BYTES {
            self.inline[self.inline_len..end].copy_from_slice(&bytes);
            self.inline_len = end;
        } else {
            self.write(&bytes);
        }
    }
}

impl<const SEEDED: bool> Hasher for StableHasher<SEEDED> {
    fn write(&mut self, bytes: &[u8]) {
        if let Some(stream) = self.stream.as_mut() {
            stream.update(bytes);
        } else if self.inline_len + bytes.len() <= INLINE_BYTES {
            self.inline[self.inline_len..self.inline_len + bytes.len()].copy_from_slice(bytes);
            self.inline_len += bytes.len();
        } else {
            let mut stream = Box::new(if SEEDED {
                Xxh3::with_seed(self.seed)
            } else {
                Xxh3::new()
            });
            stream.update(&self.inline[..self.inline_len]);
            stream.update(bytes);
            self.stream = Some(stream);
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_fixed(i.to_le_bytes());
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_fixed(i.to_le_bytes());
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.write_fixed(i.to_le_bytes());
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.write_fixed(i.to_le_bytes());
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_i8(&mut self, i: i8) {
        self.write_u8(i as u8);
    }
    #[inline]
    fn write_i16(&mut self, i: i16) {
        self.write_u16(i as u16);
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_i128(&mut self, i: i128) {
        self.write_u128(i as u128);
    }
    #[inline]
    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as i64 as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        match self.stream.as_ref() {
            Some(stream) => stream.digest(),
            None if SEEDED => xxh3_64_with_seed(&self.inline[..self.inline_len], self.seed),
            None => xxh3_64(&self.inline[..self.inline_len]),
        }
    }
}

/// [`Fingerprint::split`] for one table's fixed `(q, r)`, with its shift and mask computed once:
/// two shifts and an `and` per hash, without `split`'s checks for the widths that need special
/// cases (an empty fingerprint, a 64-bit remainder), which no table has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Splitter {
    /// `64 - (q + r)`: drops the hash bits below the fingerprint.
    shift: u32,
    remainder_bits: u32,
    remainder_mask: u64,
}

impl Splitter {
    /// The split of `quotient_bits >= 1` and `remainder_bits` with `q + r <= 64` (what every
    /// table's constructor checks).
    pub(crate) const fn new(quotient_bits: u32, remainder_bits: u32) -> Self {
        assert!(quotient_bits >= 1 && quotient_bits + remainder_bits <= 64);
        Splitter {
            shift: 64 - quotient_bits - remainder_bits,
            remainder_bits,
            remainder_mask: low_mask(remainder_bits),
        }
    }

    /// `(quotient, remainder)` of `hash`, as [`Fingerprint::split`] gives them.
    #[inline(always)]
    pub(crate) fn split(&self, hash: u64) -> (usize, u64) {
        // Both shifts are below 64: `shift <= 63` as `q >= 1`, and `r <= 63` for the same reason.
        let fingerprint = hash >> self.shift;
        (
            (fingerprint >> self.remainder_bits) as usize,
            fingerprint & self.remainder_mask,
        )
    }

    /// `(quotient, remainder)` of `hash`, as [`Fingerprint::nonzero`] gives them: the plain
    /// split, unless its remainder is 0 (one hash in `2^r`), which is re-mixed out of line. The
    /// general `nonzero`, with its width checks and its loop, ran about 50 instructions per
    /// call out of line (callgrind, a cuckoo lookup of about 260).
    #[inline(always)]
    pub(crate) fn split_nonzero(&self, hash: u64) -> (usize, u64) {
        let (quotient, remainder) = self.split(hash);
        if remainder != 0 {
            return (quotient, remainder);
        }
        self.split_nonzero_slow(hash)
    }

    /// [`split_nonzero`](Self::split_nonzero) of a hash whose plain remainder is 0.
    #[cold]
    #[inline(never)]
    fn split_nonzero_slow(&self, hash: u64) -> (usize, u64) {
        let quotient_bits = 64 - self.shift - self.remainder_bits;
        let f = Fingerprint::nonzero(hash, quotient_bits, self.remainder_bits);
        (f.quotient as usize, f.remainder)
    }
}

/// A hash split into a quotient (the canonical slot) and a remainder (what the slot stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint {
    /// The top `q` bits of the hash: the index of the canonical slot.
    pub quotient: u64,
    /// The next `r` bits of the hash.
    pub remainder: u64,
}

impl Fingerprint {
    /// Splits a hash into the top `quotient_bits` and the next `remainder_bits`.
    ///
    /// ```
    /// use conqf::Fingerprint;
    /// let f = Fingerprint::split(0xABCD << 48, 8, 8);
    /// assert_eq!((f.quotient, f.remainder), (0xAB, 0xCD));
    /// assert_eq!(Fingerprint::split(7, 0, 64).remainder, 7); // all 64 bits
    /// // Past the hash's 64 bits, the bits read as zeros (widths are capped at 64):
    /// assert_eq!(Fingerprint::split(u64::MAX, 60, 8).remainder, 0b1111_0000);
    /// ```
    ///
    /// Every filter splits with `quotient_bits + remainder_bits <= 64` (their constructors
    /// check it); any other widths are accepted too, with the hash read as followed by zeros.
    #[inline]
    pub fn split(hash: u64, quotient_bits: u32, remainder_bits: u32) -> Self {
        if u64::from(quotient_bits) + u64::from(remainder_bits) > 64 {
            return Self::split_past_the_hash(hash, quotient_bits, remainder_bits);
        }
        let fingerprint_bits = quotient_bits + remainder_bits;
        // Keep the top `q + r` bits, right-aligned; shifting a u64 by 64 is not allowed, so the
        // empty fingerprint is a special case.
        let fingerprint = if fingerprint_bits == 0 {
            0
        } else {
            hash >> (64 - fingerprint_bits)
        };
        Fingerprint {
            // A 64-bit remainder leaves no quotient (and a shift by 64 is not allowed).
            quotient: fingerprint.checked_shr(remainder_bits).unwrap_or(0),
            remainder: fingerprint & low_mask(remainder_bits),
        }
    }

    /// [`split`](Self::split) for widths that add up to more than 64 bits: the hash as the top
    /// half of a 128-bit word whose low half is zeros, each width capped at 64.
    #[cold]
    fn split_past_the_hash(hash: u64, quotient_bits: u32, remainder_bits: u32) -> Self {
        let (q, r) = (quotient_bits.min(64), remainder_bits.min(64));
        let wide = u128::from(hash) << 64;
        // The top `bits` bits of `word`, right-aligned (none for 0 bits).
        let top = |word: u128, bits: u32| word.checked_shr(128 - bits).unwrap_or(0) as u64;
        Fingerprint {
            quotient: top(wide, q),
            remainder: top(wide << q, r),
        }
    }

    /// Like [`split`](Self::split), but re-mixes the hash until the remainder is non-zero, as the
    /// linear-probing and cuckoo filters need (their empty slot or entry is 0). The 2-status-bit
    /// filter does not re-mix: it stores a zero remainder as 1, which survives growing.
    ///
    /// The result is a pure function of the hash. After 64 unlucky rounds (probability
    /// `2^-(64 r)` while `q + r <= 64`; always when `q >= 64` leaves the remainder no hash bits)
    /// the remainder is forced to 1, so the loop always ends. With
    /// `remainder_bits == 0` no remainder is non-zero: the result is then `split`'s (remainder
    /// 0), as no filter splits that way.
    ///
    /// ```
    /// use conqf::Fingerprint;
    /// assert_ne!(Fingerprint::nonzero(0, 10, 4).remainder, 0);
    /// assert_eq!(Fingerprint::nonzero(0, 10, 0).remainder, 0);
    /// ```
    #[inline]
    pub fn nonzero(hash: u64, quotient_bits: u32, remainder_bits: u32) -> Self {
        if remainder_bits == 0 {
            return Self::split(hash, quotient_bits, 0);
        }
        let mut mixed = hash;
        for _ in 0..64 {
            let fingerprint = Self::split(mixed, quotient_bits, remainder_bits);
            if fingerprint.remainder != 0 {
                return fingerprint;
            }
            mixed = remix(mixed);
        }
        Fingerprint {
            remainder: 1,
            ..Self::split(hash, quotient_bits, remainder_bits)
        }
    }
}

/// A bijective mixer (the splitmix64 finaliser on a shifted input): a fresh, independent-looking
/// hash from an old one.
#[inline]
pub(crate) const fn remix(hash: u64) -> u64 {
    let mut z = hash.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The lowest `bits` bits set (`bits` may be 64).
#[inline]
pub(crate) const fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// [`low_mask`] for `bits < 64`, without the branch (or conditional move) for 64: for hot paths
/// whose width is below 64 by construction (a remainder, a position in a 64-slot block).
#[inline(always)]
pub(crate) const fn low_mask_below_64(bits: u32) -> u64 {
    debug_assert!(bits < 64);
    !(u64::MAX << bits)
}

/// [`low_mask`] for `1 <= bits <= 64`, without the branch (or conditional move) for 64: for the
/// mask of the lanes up to and including a slot, whose end can be a group's last bit.
#[inline(always)]
pub(crate) const fn low_mask_nonzero(bits: u32) -> u64 {
    debug_assert!(bits >= 1 && bits <= 64);
    // `2 << 63` shifts the bit out, and the subtraction wraps to all ones.
    (2u64 << (bits - 1)).wrapping_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_masks_agree_below_64() {
        for bits in 0..64 {
            assert_eq!(low_mask_below_64(bits), low_mask(bits));
            assert_eq!(low_mask(bits).count_ones(), bits);
        }
        assert_eq!(low_mask(64), u64::MAX);
        for bits in 1..=64 {
            assert_eq!(low_mask_nonzero(bits), low_mask(bits));
        }
    }

    #[test]
    fn the_splitter_splits_nonzero_as_fingerprint_nonzero_does() {
        let mut hash = 0x9E37_79B9_7F4A_7C15u64;
        for q in 1..=64u32 {
            for r in 0..=64 - q {
                let splitter = Splitter::new(q, r);
                // Random hashes, and the ones whose plain remainder is 0 (re-mixed).
                let zero_remainder = |h: u64| h & !(low_mask(r) << (64 - q - r));
                for _ in 0..8 {
                    for h in [hash, zero_remainder(hash)] {
                        let f = Fingerprint::nonzero(h, q, r);
                        let expected = (f.quotient as usize, f.remainder);
                        assert_eq!(splitter.split_nonzero(h), expected, "{q} {r} {h:x}");
                    }
                    hash = remix(hash);
                }
            }
        }
    }

    #[test]
    fn the_splitter_splits_as_fingerprint_split_does() {
        let mut hash = 0x9E37_79B9_7F4A_7C15u64;
        for q in 1..=64u32 {
            for r in 0..=64 - q {
                let splitter = Splitter::new(q, r);
                for _ in 0..8 {
                    let f = Fingerprint::split(hash, q, r);
                    assert_eq!(
                        splitter.split(hash),
                        (f.quotient as usize, f.remainder),
                        "{q} {r}"
                    );
                    hash = remix(hash);
                }
            }
        }
    }

    #[test]
    fn hashes_are_pinned_across_releases() {
        // These values pin the byte encoding: changing how keys are fed to xxh3 breaks every
        // serialised filter, so it must fail this test first.
        assert_eq!(hash_key(&0u64), xxh3_64(&0u64.to_le_bytes()));
        assert_eq!(hash_key(&7usize), xxh3_64(&7u64.to_le_bytes()));
        assert_eq!(hash_key(&[1u8, 2, 3][..]), {
            let mut bytes = 3u64.to_le_bytes().to_vec();
            bytes.extend_from_slice(&[1, 2, 3]);
            xxh3_64(&bytes)
        });
        assert_eq!(hash_key("ab"), xxh3_64(&[b'a', b'b', 0xff]));
    }

    #[test]
    fn long_keys_stream_to_the_same_hash_as_one_shot() {
        let long: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let mut expected = (long.len() as u64).to_le_bytes().to_vec();
        expected.extend_from_slice(&long);
        assert_eq!(hash_key(&long[..]), xxh3_64(&expected));
    }

    /// A seeded hash is xxh3's seeded hash of the same bytes, in one shot and streamed (a key
    /// past the inline buffer); seeds change it, and seed 0 is `hash_key`.
    #[test]
    fn seeded_hashes_are_xxh3_s_with_the_seed() {
        let long: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let mut long_bytes = (long.len() as u64).to_le_bytes().to_vec();
        long_bytes.extend_from_slice(&long);
        for seed in [1, 0x5eed, u64::MAX] {
            assert_eq!(
                hash_key_with_seed(&7u64, seed),
                xxh3_64_with_seed(&7u64.to_le_bytes(), seed)
            );
            assert_eq!(
                hash_key_with_seed(&long[..], seed),
                xxh3_64_with_seed(&long_bytes, seed)
            );
            assert_ne!(hash_key_with_seed(&7u64, seed), hash_key(&7u64));
            assert_ne!(hash_key_with_seed(&long[..], seed), hash_key(&long[..]));
        }
        assert_eq!(hash_key_with_seed(&7u64, 0), hash_key(&7u64));
        assert_eq!(hash_key_with_seed(&long[..], 0), hash_key(&long[..]));
    }

    #[test]
    fn split_takes_top_bits() {
        let hash = 0xABCD_EF01_2345_6789;
        let f = Fingerprint::split(hash, 8, 12);
        assert_eq!(f.quotient, 0xAB);
        assert_eq!(f.remainder, 0xCDE);
        let whole = Fingerprint::split(hash, 20, 44);
        assert_eq!(whole.quotient, hash >> 44);
        assert_eq!(whole.remainder, hash & low_mask(44));
    }

    #[test]
    fn widths_past_the_hash_read_zeros() {
        let hash = 0xABCD_EF01_2345_6789;
        // 60 + 8 bits: the remainder is the hash's last 4 bits followed by 4 zeros.
        let f = Fingerprint::split(hash, 60, 8);
        assert_eq!(f.quotient, hash >> 4);
        assert_eq!(f.remainder, 0x90);
        // 64 + 64 bits: the whole hash, then nothing.
        assert_eq!(Fingerprint::split(hash, 64, 64).quotient, hash);
        assert_eq!(Fingerprint::split(hash, 64, 64).remainder, 0);
        // Widths over 64 count as 64.
        assert_eq!(
            Fingerprint::split(hash, u32::MAX, u32::MAX),
            Fingerprint::split(hash, 64, 64)
        );
        assert_eq!(Fingerprint::split(hash, 0, 100).remainder, hash);
        // The widths that fit agree with the general rule at the boundary.
        for q in 0..=64 {
            let r = 64 - q;
            let wide = Fingerprint::split_past_the_hash(hash, q, r);
            assert_eq!(Fingerprint::split(hash, q, r), wide, "q = {q}");
        }
        assert_eq!(Fingerprint::nonzero(hash, 70, 0).remainder, 0);
    }

    #[test]
    fn nonzero_remainder_is_never_zero_and_keeps_nonzero_fingerprints() {
        for hash in (0..10_000u64).map(|i| i << 52) {
            let f = Fingerprint::nonzero(hash, 4, 2);
            assert_ne!(f.remainder, 0);
            let plain = Fingerprint::split(hash, 4, 2);
            if plain.remainder != 0 {
                assert_eq!(f, plain);
            }
        }
    }

    #[test]
    fn nonzero_forces_a_remainder_of_one_when_the_hash_has_no_bits_left_for_it() {
        // With `quotient_bits >= 64` every split has remainder 0, so after its 64 re-mixes
        // `nonzero` must force the remainder to 1 and keep the plain split's quotient.
        for hash in [0, 1, 0x0123_4567_89ab_cdef, u64::MAX] {
            for r in [1, 4, 13, 64] {
                let f = Fingerprint::nonzero(hash, 64, r);
                assert_eq!((f.quotient, f.remainder), (hash, 1), "hash {hash:x}, r {r}");
            }
        }
    }
}
