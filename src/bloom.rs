//! `AtomicBloomFilter`: the lock-free Bloom filter that paper 000 §5 compares its quotient
//! filters with.
//!
//! The table is `m` bits in 64-bit atomic words. A key sets `k` bits with `fetch_or` and is
//! reported present if all `k` are set. Bits are only ever set, never cleared, so once an insert
//! has returned, every query that starts later finds all of its bits: no false negatives, and
//! no thread ever waits for another.
//!
//! The `k` bit positions come from the key's one 64-bit hash `h1` and a re-mix of it, `h2`:
//! `g_i = rotl(h1 + i h2, 5i)`, each `g_i` mapped onto `0..m` by a multiply-shift
//! (`g_i * m / 2^64`, its top bits, which needs no division). Plain double hashing (Kirsch and
//! Mitzenmacher, `g_i = h1 + i h2`) lets the top bits of `i h2` repeat for the keys whose `h2`
//! lies near a fraction `a / d` of `2^64` with a small `d`: their `k` bits fall on a few
//! positions, and with many hash functions on a small table those keys alone made the rate
//! 20,000 times its target (`new(100, 1e-9)` measured 2e-5 with 30 functions). The rotation
//! brings other bits of each sum to the top, and the measured rates match the textbook's from 1
//! to 64 functions. Filters read from files of the old format keep plain double hashing
//! ([`Probing`]). Bit positions are spread over the whole table (no blocking), so the textbook
//! false-positive rate `(1 - e^{-kn/m})^k` applies; the filter reports the rate of the bits it
//! has set, `(X / m)^k`, which is about that for `n` keys and stays right past the capacity.
//!
//! For the paper's comparison, [`AtomicBloomFilter::with_memory`] takes the memory of the quotient
//! filter it is measured against and the hash-function count (4 in paper 000 §5);
//! [`AtomicBloomFilter::new`] picks both for a capacity and a target rate.

use std::fmt;

use crate::counter::StripedCounter;
use crate::filter::{Error, Filter, Merge};
use crate::hash::remix;
use crate::sizing;
use crate::storage::prefetch_index;
use crate::sync::{fence, AtomicU64, Ordering};

/// The most hash functions a filter may use.
pub(crate) const MAX_HASH_FUNCTIONS: u32 = 64;

/// The largest table, in bits (32 TiB): far beyond any machine, and small enough that every
/// size computation below is exact.
pub(crate) const MAX_BITS: u64 = 1 << 48;

/// A Bloom filter that many threads insert into and query at once, lock-free (`fetch_or`).
///
/// It cannot remove keys or grow, and it is never full: past its capacity the false-positive
/// rate just rises. `insert` returns `Ok(true)` when it set a bit that was clear, so two threads
/// racing to insert one new key can both get `Ok(true)` (each set some of its bits) and both
/// count in `len`; a key whose bits were all set already, a false positive, gets `Ok(false)`.
///
/// ```
/// use conqf::{AtomicBloomFilter, Filter};
///
/// let filter = AtomicBloomFilter::new(10_000, 0.01)?;
/// std::thread::scope(|s| {
///     for t in 0..2u64 {
///         let filter = &filter;
///         s.spawn(move || {
///             for i in 0..1000u64 {
///                 filter.insert(&(t * 1000 + i)).unwrap();
///             }
///         });
///     }
/// });
/// assert!((0..2000u64).all(|k| filter.contains(&k)));
///
/// // The paper's baseline: the memory of a QF with 2^16 slots of 13 bits, 4 hash functions.
/// let baseline = AtomicBloomFilter::with_memory((1 << 16) * 13 / 8, 4)?;
/// assert_eq!(baseline.hash_functions(), 4);
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct AtomicBloomFilter {
    pub(crate) words: Box<[AtomicU64]>,
    /// `m`: the number of bits, `64 * words.len()`.
    bits: u64,
    hash_functions: u32,
    capacity: usize,
    /// How the bit positions follow from a key's hash.
    probing: Probing,
    /// Inserts that set at least one new bit; only inserts touch it.
    pub(crate) len: StripedCounter,
}

/// How a filter derives a key's bit positions from its hash (module doc). Every filter built by
/// this crate probes with [`Rotated`](Probing::Rotated); one read from a file that an older
/// version wrote keeps the [`DoubleHashing`](Probing::DoubleHashing) its bits were set with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probing {
    /// `g_i = rotl(h1 + i h2, 5i)`.
    Rotated,
    /// `g_{i+1} = g_i + h2`: plain double hashing, the positions of the old format.
    DoubleHashing,
}

impl Probing {
    /// How much further left each position's sum is rotated than the one before: plain double
    /// hashing is the same walk without rotations.
    fn rotation(self) -> u32 {
        match self {
            Probing::Rotated => 5,
            Probing::DoubleHashing => 0,
        }
    }
}

/// The bit positions of one key, in probing order ([`AtomicBloomFilter::probes`]).
struct Probes {
    /// `h1 + i h2` for the next position `i`.
    sum: u64,
    /// `h2`.
    step: u64,
    /// `i` times the rotation per step.
    rotation: u32,
    /// The rotation per step.
    rotation_step: u32,
    bits: u64,
}

impl Probes {
    /// The word and the bit mask of the next position.
    #[inline]
    fn next_bit(&mut self) -> (usize, u64) {
        let g = self.sum.rotate_left(self.rotation);
        // Multiply-shift maps g uniformly onto 0..m: floor(g * m / 2^64).
        let bit = ((g as u128 * self.bits as u128) >> 64) as u64;
        // Each position depends on the previous one by an addition only, so the CPU computes
        // them, and issues their loads, side by side.
        self.sum = self.sum.wrapping_add(self.step);
        self.rotation = self.rotation.wrapping_add(self.rotation_step);
        ((bit / 64) as usize, 1u64 << (bit % 64))
    }
}

impl AtomicBloomFilter {
    /// A filter that holds `capacity` keys at an expected false-positive rate of at most `fpr`
    /// (one filter's rate varies around it: filled to `capacity`, about half of those built
    /// report a [`false_positive_rate`](Filter::false_positive_rate) above `fpr`), with the
    /// fewest bits any hash-function count achieves it with (`k` is `log2(1/fpr)` rounded down or
    /// up, at most 64).
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)` or below
    /// `capacity · 2^-64` (what keys hashed to 64 bits allow), or the table would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        sizing::check_capacity_and_fpr(capacity, fpr)?;
        let n = capacity as f64;
        // Every bit position comes from the key's 64-bit hash, so a query whose hash equals a
        // stored key's is a false positive whatever the table: about `n 2^-64` of them.
        let floor = n * (-64f64).exp2();
        if fpr < floor {
            return Err(Error::InvalidParameters(format!(
                "a false-positive rate of {fpr:e} is below what 64-bit hashes of {capacity} keys \
                 allow (about {floor:e})"
            )));
        }
        let ideal = (1.0 / fpr).log2();
        let (mut best_k, mut best_bits) = (0, f64::INFINITY);
        for k in [ideal.floor(), ideal.ceil()] {
            let k = k.clamp(1.0, MAX_HASH_FUNCTIONS as f64);
            // (1 - e^{-kn/m})^k <= fpr  <=>  m >= -k n / ln(1 - fpr^{1/k}).
            let bits = -k * n / (-(fpr.ln() / k).exp()).ln_1p();
            if bits < best_bits {
                (best_k, best_bits) = (k as u32, bits);
            }
        }
        let bits = best_bits.ceil().max(64.0);
        if !bits.is_finite() || bits > MAX_BITS as f64 {
            return Err(Error::InvalidParameters(format!(
                "{capacity} keys at a false-positive rate of {fpr:e} need more than 2^48 bits"
            )));
        }
        let words = (bits as u64).div_ceil(64) as usize;
        Self::build(words, best_k, capacity)
    }

    /// A filter whose bit table has `bytes` bytes (rounded down to whole 64-bit words) with
    /// `hash_functions` hash functions, e.g. the memory of a quotient filter's table and 4
    /// functions as in paper 000 §5 ([`memory_bytes`](Filter::memory_bytes) adds the few KB of
    /// its striped count).
    ///
    /// Its [`capacity`](Filter::capacity) is the number of keys at which `hash_functions` is the
    /// optimal count, `m ln 2 / k`, when half of the bits are set.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `bytes < 8`, the table would exceed 2^48 bits, or
    /// `hash_functions` is not in `1..=64`; [`Error::OutOfMemory`] if the table cannot be
    /// allocated.
    pub fn with_memory(bytes: usize, hash_functions: u32) -> Result<Self, Error> {
        if !(1..=MAX_HASH_FUNCTIONS).contains(&hash_functions) {
            return Err(Error::InvalidParameters(format!(
                "{hash_functions} hash functions is not in 1..={MAX_HASH_FUNCTIONS}"
            )));
        }
        let words = bytes / 8;
        if words == 0 || words as u64 > MAX_BITS / 64 {
            return Err(Error::InvalidParameters(format!(
                "{bytes} bytes is outside 8 bytes..=2^48 bits"
            )));
        }
        let bits = words as f64 * 64.0;
        let capacity = ((bits * std::f64::consts::LN_2 / hash_functions as f64) as usize).max(1);
        Self::build(words, hash_functions, capacity)
    }

    pub(crate) fn build(words: usize, hash_functions: u32, capacity: usize) -> Result<Self, Error> {
        Ok(AtomicBloomFilter {
            words: crate::storage::try_zeroed_words(words)?,
            bits: words as u64 * 64,
            hash_functions,
            capacity,
            probing: Probing::Rotated,
            len: StripedCounter::new(),
        })
    }

    /// How this filter's bit positions follow from a key's hash.
    pub(crate) fn probing(&self) -> Probing {
        self.probing
    }

    /// The filter probing its bits as `probing` says (a filter read from the old format).
    pub(crate) fn with_probing(self, probing: Probing) -> Self {
        AtomicBloomFilter { probing, ..self }
    }

    /// Clears every bit, keeping the table (size and memory), the hash functions and the
    /// positions' scheme: the filter answers as a new one of its shape. `&mut self`, so no
    /// other thread is using it.
    ///
    /// ```
    /// use conqf::{AtomicBloomFilter, Filter};
    /// let mut filter = AtomicBloomFilter::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        for word in self.words.iter() {
            // Relaxed: `&mut self`; sharing the filter again orders this.
            word.store(0, Ordering::Relaxed);
        }
        self.len.reset(0);
    }

    /// Adds every key of `other` to this filter in place: the OR of `other`'s table into this
    /// one, word by word, beside other threads' inserts and lookups on either filter. Afterwards
    /// this filter holds every key whose insert into either returned before the call (later
    /// inserts into `other` may or may not come along), and `len` has grown by an estimate of
    /// the keys the new bits stand for (as for a [`merge`](Merge::merge), whose new filter this
    /// saves: fastbloom's `union`).
    ///
    /// ```
    /// use conqf::{AtomicBloomFilter, Filter};
    /// let shared = AtomicBloomFilter::new(1000, 0.01)?;
    /// let shard = AtomicBloomFilter::new(1000, 0.01)?;
    /// shared.insert(&1u64)?;
    /// shard.insert(&2u64)?;
    /// shared.union_with(&shard)?;
    /// assert!(shared.contains(&1u64) && shared.contains(&2u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Incompatible`] as for [`merge`](Merge::merge); the filter is then unchanged.
    pub fn union_with(&self, other: &Self) -> Result<(), Error> {
        self.check_mergeable(other)?;
        let (mut before, mut after) = (0u64, 0u64);
        for (mine, theirs) in self.words.iter().zip(&*other.words) {
            // Relaxed: an insert into `other` that returned before the call happens before
            // this load, which sees its `fetch_or` by coherence whatever the ordering.
            let added = theirs.load(Ordering::Relaxed);
            let old = if added == 0 {
                // Nothing to add: no write, so no cache line taken from the word's readers.
                // Relaxed: only counted.
                mine.load(Ordering::Relaxed)
            } else {
                // Release: a query that sees these bits is ordered after the union, and so
                // after what its caller did before it (the loom model
                // `bloom_union_in_place_publishes_what_came_before`). No Acquire: the union
                // decides nothing from the bits it finds, it only counts them.
                mine.fetch_or(added, Ordering::Release)
            };
            before += u64::from(old.count_ones());
            after += u64::from((old | added).count_ones());
        }
        // No more than the bits it set, so a snapshot's count stays within its bits (its
        // reader checks that), as each insert counts itself only for a bit it set.
        let (m, k) = (self.bits, self.hash_functions);
        let estimate = estimated_keys(after, m, k).saturating_sub(estimated_keys(before, m, k));
        if after > before {
            // Release fence: as in `insert_hash`, before the count that the bits back.
            fence(Ordering::Release);
            self.len.add(estimate.min((after - before) as usize));
        }
        Ok(())
    }

    /// Whether a union with `other` keeps every key's bits where its queries look: the same
    /// bits and hash functions, and the same positions' scheme.
    fn check_mergeable(&self, other: &Self) -> Result<(), Error> {
        let shape = |f: &Self| (f.bits, f.hash_functions);
        if shape(self) != shape(other) {
            return Err(Error::Incompatible(format!(
                "{} bits and {} hash functions against {} bits and {} hash functions",
                self.bits, self.hash_functions, other.bits, other.hash_functions
            )));
        }
        if self.probing != other.probing {
            return Err(Error::Incompatible(format!(
                "bit positions by {:?} against {:?} (a filter read from the old format)",
                self.probing, other.probing
            )));
        }
        Ok(())
    }

    /// The number of hash functions `k`: bits set per key.
    pub fn hash_functions(&self) -> u32 {
        self.hash_functions
    }

    /// The number of bits `m`.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// Asks the CPU to start loading every word `hash`'s bits lie in (a hint; the batch
    /// operations call it a window of keys ahead).
    pub(crate) fn prefetch(&self, hash: u64) {
        let mut probes = self.probes(hash);
        for _ in 0..self.hash_functions {
            prefetch_index(&self.words, probes.next_bit().0);
        }
    }

    /// The count and then the words, read while other threads may insert (for
    /// [`write_to`](Self::write_to) and [`clone`](Clone::clone)): the words hold every bit set
    /// by an insert that returned before the call and by every insert the count includes, so
    /// the count never exceeds the bits set.
    pub(crate) fn snapshot(&self) -> (usize, impl ExactSizeIterator<Item = u64> + '_) {
        let len = self.len();
        // Acquire fence after reading the count: pairs with the Release fence an insert issues
        // before counting itself, so every counted insert's bits are seen below.
        fence(Ordering::Acquire);
        // Relaxed: an insert that returned before this call happens before these loads, so
        // coherence alone makes them see its bits; counted ones are ordered by the fence.
        (
            len,
            self.words.iter().map(|word| word.load(Ordering::Relaxed)),
        )
    }

    /// The bit positions of a key with hash `hash`.
    #[inline]
    fn probes(&self, hash: u64) -> Probes {
        Probes {
            sum: hash,
            step: remix(hash),
            rotation: 0,
            rotation_step: self.probing.rotation(),
            bits: self.bits,
        }
    }
}

impl Filter for AtomicBloomFilter {
    /// Sets the key's bits; `Ok(true)` if any of them was not yet set. Never returns an error.
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        let mut probes = self.probes(hash);
        let mut added = false;
        for _ in 0..self.hash_functions {
            let (word, mask) = probes.next_bit();
            // Acquire: a bit found set counts towards `Ok(false)` ("already present"), an answer
            // ordered after the insert that set it, as for a query. Testing first skips the
            // read-modify-write, and its cache-line transfer, for bits already set.
            if self.words[word].load(Ordering::Acquire) & mask == 0 {
                // Release: a query whose Acquire load sees this bit is ordered after this insert,
                // so if thread A inserts k1 then k2, setting bits of k2 that were clear, and
                // thread B finds k2, B then finds k1 too (if k2's bits were all set already, B
                // may have found it through an earlier insert of another thread).
                // Acquire: as for the load above, when another thread set the bit meanwhile.
                let before = self.words[word].fetch_or(mask, Ordering::AcqRel);
                added |= before & mask == 0;
            }
        }
        if added {
            // Release fence: a snapshot that reads this count and then issues an Acquire fence
            // sees the bits set above, so a snapshot's count never exceeds its bits (which its
            // reader checks). Free on x86, where stores are not reordered.
            fence(Ordering::Release);
            self.len.increment();
        }
        Ok(added)
    }

    fn contains_hash(&self, hash: u64) -> bool {
        let mut probes = self.probes(hash);
        (0..self.hash_functions).all(|_| {
            let (word, mask) = probes.next_bit();
            // Acquire: a positive answer is ordered after the inserts that set the bits (see
            // `insert_hash`). No false negative needs it: a load that happens after a
            // `fetch_or` sees its bit under any ordering, by coherence.
            self.words[word].load(Ordering::Acquire) & mask != 0
        })
    }

    /// The number of inserts that set at least one new bit (a key whose bits were all set
    /// already, a false positive, is not counted); for a union made by
    /// [`merge`](Merge::merge), an estimate from its bits plus such inserts since.
    fn len(&self) -> usize {
        self.len.sum()
    }

    /// The key count [`new`](Self::new) was sized for, or for
    /// [`with_memory`](Self::with_memory) the count at which its `k` is optimal.
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn memory_bytes(&self) -> usize {
        self.words.len() * std::mem::size_of::<u64>() + self.len.memory_bytes()
    }

    /// `(X / m)^k` for the `X` of the `m` bits that are set: the chance that the `k` bits of
    /// an absent key are all among them. It follows the bits rather than `len`, so it stays
    /// right past the capacity, where many keys find their bits set already and are not
    /// counted (`(1 - e^{-k len / m})^k` reported 0.52 where 0.84 was measured, at five times
    /// the capacity). Reads every word of the table (`m / 64` loads) beside other threads'
    /// inserts; below the capacity it is about `(1 - e^{-kn/m})^k` for `n` keys.
    fn false_positive_rate(&self) -> f64 {
        let set_bits: u64 = self
            .words
            .iter()
            // Relaxed: a statistic; inserts racing the count may or may not be in it.
            .map(|word| u64::from(word.load(Ordering::Relaxed).count_ones()))
            .sum();
        (set_bits as f64 / self.bits as f64).powi(self.hash_functions as i32)
    }
}

/// The union of two filters of the same shape (bits and hash functions): every bit set in
/// either. It answers `true` for every key either input holds, and its false-positive rate is
/// the one a single filter with all those bits set would have.
///
/// Other threads may keep inserting into both inputs meanwhile: every key inserted into either
/// before the merge began is in the union; one inserted during it may or may not be.
///
/// [`len`](Filter::len) of the union is estimated from its set bits, since keys inserted into
/// both inputs set the same bits: `n = -(m / k) ln(1 - X / m)` for `X` set bits (Swamidass and
/// Baldi, 2007), the count at which `X` bits are expected set (the union's
/// [`false_positive_rate`](Filter::false_positive_rate), `(X / m)^k`, is read from the bits
/// themselves). The estimate is rounded and never more than `X` (each counted insert set a bit,
/// which a filter read back from bytes must satisfy; with `k = 1`, or nearly every bit set, the
/// formula alone would pass it). The union has the first input's
/// [`capacity`](Filter::capacity).
///
/// ```
/// use conqf::{AtomicBloomFilter, Filter, Merge};
///
/// let (a, b) = (AtomicBloomFilter::new(1000, 0.01)?, AtomicBloomFilter::new(1000, 0.01)?);
/// a.insert(&"left")?;
/// b.insert(&"right")?;
/// let union = a.merge(&b)?;
/// assert!(union.contains(&"left") && union.contains(&"right"));
/// assert_eq!(union.len(), 2);
///
/// let other = AtomicBloomFilter::new(2000, 0.01)?;
/// assert!(matches!(a.merge(&other), Err(conqf::Error::Incompatible(_))));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for AtomicBloomFilter {
    /// # Errors
    /// [`Error::Incompatible`] if the filters differ in bits or hash functions (a key's bit
    /// positions depend on both), or one was read from a file of the old format (whose bit
    /// positions follow from the hash differently) and the other not;
    /// [`Error::OutOfMemory`] if the union's table cannot be allocated. Never
    /// [`Error::Full`].
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        self.check_mergeable(other)?;
        let union = Self::build(self.words.len(), self.hash_functions, self.capacity)?
            .with_probing(self.probing);
        let mut set_bits = 0u64;
        for ((out, left), right) in union.words.iter().zip(&*self.words).zip(&*other.words) {
            // Relaxed: an insert that returned before the merge began happens before these
            // loads, which then see its `fetch_or` by coherence whatever the ordering; the
            // union is not shared yet, so its store needs no ordering either.
            let word = left.load(Ordering::Relaxed) | right.load(Ordering::Relaxed);
            out.store(word, Ordering::Relaxed);
            set_bits += u64::from(word.count_ones());
        }
        union
            .len
            .add(estimated_keys(set_bits, union.bits, union.hash_functions));
        Ok(union)
    }
}

/// How many keys set `set_bits` of `bits` bits with `k` hash functions, in expectation:
/// `-(m / k) ln(1 - X / m)`, rounded, and at most `X` (each counted insert set a bit).
fn estimated_keys(set_bits: u64, bits: u64, k: u32) -> usize {
    let (m, k) = (bits as f64, f64::from(k));
    // All bits set: the estimate diverges; count as if one bit were still clear.
    let x = (set_bits as f64).min(m - 1.0);
    let estimate = (-(m / k) * (-x / m).ln_1p()).round() as u64;
    estimate.min(set_bits) as usize
}

/// A copy of the filter, which other threads may go on inserting into meanwhile: it holds every
/// key whose insert returned before the call (the snapshot of
/// [`write_to`](AtomicBloomFilter::write_to), without the bytes), and later inserts into either
/// filter do not reach the other.
///
/// ```
/// use conqf::{AtomicBloomFilter, Filter};
///
/// let original = AtomicBloomFilter::new(1000, 0.01)?;
/// original.insert(&"apple")?;
/// let copy = original.clone();
/// copy.insert(&"pear")?;
/// assert!(copy.contains(&"apple") && copy.contains(&"pear"));
/// assert!(!original.contains(&"pear"));
/// assert_eq!(copy.to_bytes(), {
///     let again = original.clone();
///     again.insert(&"pear")?;
///     again.to_bytes()
/// });
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for AtomicBloomFilter {
    fn clone(&self) -> Self {
        let (len, words) = self.snapshot();
        let copy = AtomicBloomFilter {
            words: words.map(AtomicU64::new).collect(),
            bits: self.bits,
            hash_functions: self.hash_functions,
            capacity: self.capacity,
            probing: self.probing,
            len: StripedCounter::new(),
        };
        copy.len.reset(len);
        copy
    }
}

impl fmt::Debug for AtomicBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicBloomFilter")
            .field("bits", &self.bits)
            .field("hash_functions", &self.hash_functions)
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fpr(bits: f64, k: u32, n: f64) -> f64 {
        (1.0 - (-(k as f64) * n / bits).exp()).powi(k as i32)
    }

    #[test]
    fn new_meets_the_target_with_near_optimal_memory() {
        for &(capacity, target) in &[(1000usize, 0.01), (100_000, 0.001), (10, 0.5), (7, 1e-9)] {
            let filter = AtomicBloomFilter::new(capacity, target).unwrap();
            let (m, k, n) = (
                filter.bits() as f64,
                filter.hash_functions(),
                capacity as f64,
            );
            assert!(fpr(m, k, n) <= target, "{capacity} {target}");
            // The optimum is n log2(1/p) / ln 2 bits; integer k and whole words cost a little.
            let optimum = n * (1.0 / target).log2() / std::f64::consts::LN_2;
            assert!(m <= optimum * 1.05 + 64.0, "{m} bits for optimum {optimum}");
        }
    }

    #[test]
    fn positions_stay_in_the_table() {
        for probing in [Probing::Rotated, Probing::DoubleHashing] {
            let filter = AtomicBloomFilter::with_memory(24, 7)
                .unwrap()
                .with_probing(probing);
            for hash in [0, 1, u64::MAX, u64::MAX / 3, 1 << 63] {
                let mut probes = filter.probes(hash);
                for _ in 0..7 {
                    let (word, mask) = probes.next_bit();
                    assert!(word < 3 && mask.count_ones() == 1);
                }
            }
        }
    }

    /// The old format's positions are plain double hashing, `h1 + i h2` mapped by
    /// multiply-shift, so filters read from its files find the keys their bits were set for.
    #[test]
    fn double_hashing_probes_are_h1_plus_i_h2() {
        let filter = AtomicBloomFilter::with_memory(1 << 10, 9)
            .unwrap()
            .with_probing(Probing::DoubleHashing);
        for hash in [3, 0x1234_5678_9abc_def0, u64::MAX] {
            let mut probes = filter.probes(hash);
            for i in 0..9u64 {
                let g = hash.wrapping_add(remix(hash).wrapping_mul(i));
                let bit = ((g as u128 * filter.bits as u128) >> 64) as u64;
                assert_eq!(probes.next_bit(), ((bit / 64) as usize, 1 << (bit % 64)));
            }
        }
    }
}
