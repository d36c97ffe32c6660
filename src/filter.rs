//! The public contract: the [`Filter`] trait every filter implements, the capability traits
//! [`Remove`], [`Count`] and [`Merge`], and the crate's [`Error`].
//!
//! The object-safe core of [`Filter`] works on 64-bit hashes, so `dyn Filter` works and callers
//! that already hold a hash skip rehashing; the generic conveniences hash a key with
//! [`hash_key`] first.

use std::fmt;
use std::hash::Hash;

use crate::hash::hash_key;

/// What can go wrong when building or changing a filter.
///
/// No method of this crate panics on user input: every bad argument and every full table is one of
/// these variants.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The filter has no room for this fingerprint, or holds as many as its load cap allows
    /// (the quotient filters that shift stop at 31/32 of their slots, see
    /// [`Filter::capacity`]). The filter is unchanged and still usable: every key
    /// inserted before still answers `true`.
    Full,
    /// An argument is out of range (a constructor's, or for example a `grow` past the last
    /// remainder bit, or a batch lookup's answer slice of the wrong length); the message says
    /// which and why.
    InvalidParameters(String),
    /// Serialised bytes are not a valid filter; the message says what is wrong.
    Corrupt(String),
    /// Two filters cannot be combined because their parameters differ; the message says how.
    Incompatible(String),
    /// Reading a serialised filter failed for a reason other than its bytes (the I/O error's
    /// kind and message); a stream that ends early is [`Error::Corrupt`]. Also what `?` makes
    /// of the `std::io::Error` of a `write_to` (`From<std::io::Error>`), so its message names
    /// neither direction.
    Io(std::io::ErrorKind, String),
    /// The memory for a table could not be allocated (the number is the bytes asked for; for
    /// a stream being read, the file's length): the arguments were valid, the machine or the
    /// process's limits had no room. Nothing changed; a smaller filter may still fit. Every
    /// table, lock array and counter array is allocated this way; smaller working buffers (the
    /// sorted keys of a batch, a bulk build, a grow or a snapshot) and `Clone` abort the
    /// process as `Vec` does when memory runs out.
    OutOfMemory(usize),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Full => f.write_str("the filter is full"),
            Error::InvalidParameters(why) => write!(f, "invalid filter parameters: {why}"),
            Error::Corrupt(why) => write!(f, "corrupt filter bytes: {why}"),
            Error::Incompatible(why) => write!(f, "incompatible filters: {why}"),
            Error::Io(_, why) => write!(f, "filter I/O failed: {why}"),
            Error::OutOfMemory(bytes) => write!(f, "cannot allocate {bytes} bytes"),
        }
    }
}

impl std::error::Error for Error {}

/// An I/O error as [`Error::Io`] (its kind and message), so `?` works on the `write_to` of a
/// filter (which returns `std::io::Result`) in a function that returns this crate's errors.
///
/// ```
/// use conqf::{Filter, LinearProbingQf};
/// fn save(filter: &LinearProbingQf, out: impl std::io::Write) -> Result<(), conqf::Error> {
///     filter.write_to(out)?;
///     Ok(())
/// }
/// let filter = LinearProbingQf::new(1000, 0.01)?;
/// let mut bytes = Vec::new();
/// save(&filter, &mut bytes)?;
/// assert_eq!(bytes, filter.to_bytes());
/// # Ok::<(), conqf::Error>(())
/// ```
impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Io(error.kind(), error.to_string())
    }
}

/// The one way an insert into a table can fail, as a zero-sized type: the insert paths return
/// `Result<bool, Full>`, which fits in a register, and the public methods turn it into
/// [`Error::Full`]. A `Result<bool, Error>` is 32 bytes and goes through memory; returned from
/// `LocallyLockedQf`'s non-inlined insert paths, its read-back stalled on store forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full;

impl From<Full> for Error {
    fn from(Full: Full) -> Self {
        Error::Full
    }
}

/// An approximate membership query filter that many threads may use at once.
///
/// `contains` never returns a false negative: once `insert(k)` has returned `Ok`, every
/// `contains(k)` that starts later returns `true` until `k` is removed (or, in a filter that
/// stores each fingerprint once, another key with the same fingerprint: see [`Remove`]). It may
/// return a false positive for a key that is not stored, with probability about
/// [`false_positive_rate`] (and, for some filters, a little more while other threads shift that
/// key's cluster: crate docs, "Consistency").
///
/// The methods on `u64` hashes are the object-safe core; the generic methods hash the key with
/// [`hash_key`] and call them. They need `Self: Sized` (so that `dyn Filter` exists), so a
/// trait object takes the hash methods, with the same hash:
///
/// ```
/// use conqf::{hash_key, Filter, LocallyLockedQf, LockFreeCuckooFilter};
/// let filters: Vec<Box<dyn Filter>> = vec![
///     Box::new(LocallyLockedQf::new(1000, 0.01)?),
///     Box::new(LockFreeCuckooFilter::new(1000, 0.01)?),
/// ];
/// for filter in &filters {
///     assert!(filter.is_empty());
///     filter.insert_hash(hash_key("apple"))?;
///     assert!(filter.contains_hash(hash_key("apple")) && !filter.is_empty());
/// }
/// # Ok::<(), conqf::Error>(())
/// ```
///
/// [`false_positive_rate`]: Filter::false_positive_rate
pub trait Filter: Send + Sync {
    /// Inserts the fingerprint of a hash.
    ///
    /// Returns `Ok(true)` if it stored the fingerprint and `Ok(false)` if nothing new was
    /// stored. The quotient filters other than `CountingQf` store a fingerprint once and return
    /// `Ok(false)` when it is already there (two exceptions: crate docs, "Set semantics");
    /// `CountingQf` counts every copy and returns `Ok(false)` when the fingerprint was already
    /// counted; the cuckoo filters store a copy per
    /// insert and return `Ok(true)` for each (one fingerprint has eight entries, its two buckets
    /// of four, so a ninth copy of one key is [`Error::Full`] even in an empty table);
    /// `AtomicBloomFilter` returns `Ok(false)` when every bit of the key was set already.
    ///
    /// # Errors
    /// [`Error::Full`] if there is no room; the filter is unchanged.
    fn insert_hash(&self, hash: u64) -> Result<bool, Error>;

    /// Whether the fingerprint of this hash may be present (`false` is always right).
    fn contains_hash(&self, hash: u64) -> bool;

    /// How many fingerprints are stored (each stored copy counts once).
    fn len(&self) -> usize;

    /// How many fingerprints fit at the filter's maximum load factor: the planned load.
    ///
    /// For a filter made by `new(capacity, fpr)` it is at least the `capacity` asked, and in
    /// the quotient filters often up to twice that (their `2^q` slots are the next power of
    /// two). The rate `fpr` is promised up to the `capacity` asked: a quotient filter's
    /// remainder is sized for it, and filled on to `capacity()` its rate grows with the fill
    /// (`new(922, 0.01)` has `capacity() == 1843`, where the rate is 0.014;
    /// [`false_positive_rate`](Filter::false_positive_rate) tells). The cuckoo, linear-probing
    /// and Bloom filters are sized for their `capacity()` itself.
    ///
    /// `LinearProbingQf` stops there and `ExpandableQf` opens a new level. `SequentialQf`,
    /// `LocallyLockedQf`, `ExternallyLockedQf`, `TwoBitQf` (and `GrowableQf` once it cannot
    /// double) and `CountingQf` take fingerprints past it up to their load cap, 31/32 of their
    /// `2^q` slots (from `2^10` slots on; smaller tables up to their last slot), and refuse
    /// inserts of new keys with [`Error::Full`] (an insert of a key already stored answers
    /// `Ok(false)` there too, looked up without misreads; `CountingQf` caps the slots its
    /// entries take, and refuses the inserts that need one more)
    /// until removals bring them below it. One thread stops exactly at the cap (`CountingQf`:
    /// its last insert, admitted below the cap, may end an entry's few slots past it);
    /// concurrent inserts check a sampled count and may pass it by a few keys per thread. They
    /// slow down as they fill (absent-key lookups about fivefold from 90% to the cap), and
    /// without the cap the last three percent cost far more (the README's quick-start section
    /// has the measurements). The cuckoo filters refuse an insert when no relocation path finds
    /// a free entry: in their tests, with fingerprints of 8 to 16 bits and distinct keys, not
    /// before `capacity` from `2^7` buckets on (with 4-bit ones the first `Full` came at 60-68%
    /// of the entries of `2^18` to `2^22` buckets, and eight copies of one key fill its buckets
    /// at any load); tables of 4 to 64 buckets refused a key before `capacity` in 4 to 8 of
    /// 10,000 random key sets (20,000 tried per size), keeping every key they had.
    fn capacity(&self) -> usize;

    /// The heap memory the filter holds, in bytes: its table and the parts of fixed size beside
    /// it (lock arrays, the striped counts, a cache line per stripe, about 3 KB), all but a few
    /// bytes of bookkeeping. A growing filter counts its current tables; while a doubling
    /// migrates, the table it replaces is still allocated (until the migration ends and no
    /// reader holds it) and is not counted.
    fn memory_bytes(&self) -> usize;

    /// The expected false-positive rate at the current load: 0 for an empty filter, except
    /// `LinearProbingQf`, whose figure is the paper's bound at the current fill (above 0 even
    /// when empty; its own docs say how far above the expectation).
    fn false_positive_rate(&self) -> f64;

    /// Whether no fingerprint is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts a key; see [`insert_hash`](Filter::insert_hash).
    ///
    /// # Errors
    /// [`Error::Full`] if there is no room; the filter is unchanged.
    fn insert<K: Hash + ?Sized>(&self, key: &K) -> Result<bool, Error>
    where
        Self: Sized,
    {
        self.insert_hash(hash_key(key))
    }

    /// Whether a key may be present; see [`contains_hash`](Filter::contains_hash).
    fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool
    where
        Self: Sized,
    {
        self.contains_hash(hash_key(key))
    }
}

/// Filters that can delete a key.
pub trait Remove: Filter {
    /// Removes one stored copy of the hash's fingerprint.
    ///
    /// Returns `Ok(true)` if a copy was removed and `Ok(false)` if none was stored. Removing a key
    /// that was never inserted but shares a fingerprint with one that was removes that one: only
    /// remove keys you inserted.
    ///
    /// **Shared fingerprints.** A filter that stores each fingerprint once (every quotient filter
    /// with `Remove` but `CountingQf`) keeps one copy for all the keys that share it: the insert
    /// of the second returned `Ok(false)`, and removing either key removes the copy, so the other
    /// then answers
    /// `false`, a false negative the filter cannot avoid. A kept key loses its copy so with about
    /// the chance that it is a false positive of the removed keys alone, `2^-(q + r)` per removed
    /// key; a growing filter keeps `q + r` when it doubles, so that chance per key does not
    /// change, but it grows with the number of keys removed. `CountingQf` and the cuckoo
    /// filters keep a count or a copy per insert, so removing one key leaves the others: use one
    /// of them when removed and kept keys must not interfere.
    ///
    /// ```
    /// use conqf::{CountingQf, Filter, LocallyLockedQf, Remove};
    /// // Two keys whose hashes share a fingerprint (the same top bits).
    /// let (a, b) = (0xABCD_0000_0000_0001u64, 0xABCD_0000_0000_0002u64);
    /// let set = LocallyLockedQf::with_bits(8, 8)?;
    /// assert_eq!(set.insert_hash(a)?, true);
    /// assert_eq!(set.insert_hash(b)?, false); // already there: one copy for both
    /// set.remove_hash(a)?;
    /// assert!(!set.contains_hash(b)); // b went with a
    /// let multiset = CountingQf::with_bits(8, 8)?;
    /// multiset.insert_hash(a)?;
    /// multiset.insert_hash(b)?;
    /// multiset.remove_hash(a)?;
    /// assert!(multiset.contains_hash(b)); // one copy of two left
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// Only variants that need room to remove (none today) return an error.
    fn remove_hash(&self, hash: u64) -> Result<bool, Error>;

    /// Removes one stored copy of a key's fingerprint; see [`remove_hash`](Remove::remove_hash).
    ///
    /// # Errors
    /// As [`remove_hash`](Remove::remove_hash).
    fn remove<K: Hash + ?Sized>(&self, key: &K) -> Result<bool, Error>
    where
        Self: Sized,
    {
        self.remove_hash(hash_key(key))
    }
}

/// Filters that count how often each fingerprint was inserted.
///
/// Implemented by `CountingQf` (a counter per fingerprint in its slots, up to `u64::MAX`) and
/// both cuckoo filters (a copy per insert, at most 8 of one fingerprint: its two buckets of
/// four entries).
pub trait Count: Filter {
    /// How many times the hash's fingerprint is stored (0 if absent; may overcount through
    /// fingerprint collisions, never undercounts, except that a count stops at `u64::MAX`).
    fn count_hash(&self, hash: u64) -> u64;

    /// Adds `n` occurrences of the hash's fingerprint.
    ///
    /// # Errors
    /// [`Error::Full`] if there is no room; the filter is unchanged.
    fn insert_count_hash(&self, hash: u64, n: u64) -> Result<(), Error>;

    /// Stores the hash's fingerprint unless it is stored already: `Ok(true)` if this call
    /// stored it, `Ok(false)` if the filter held it (and is unchanged). The set insert of a
    /// counting filter, for streams that repeat keys: a key keeps one copy, where `insert`
    /// adds one per call (and a cuckoo filter refuses a ninth copy of a key with `Full`
    /// however empty its table is).
    ///
    /// In this crate's filters, of several threads racing to store one absent fingerprint,
    /// exactly one gets `Ok(true)`: `CountingQf` and `LockedCuckooFilter` look and store in one
    /// step under their locks, and `LockFreeCuckooFilter` looks and stores under a lock that
    /// only these calls take (its lookups, inserts and removes stay lock-free). A plain
    /// `insert` racing with it stores its copy as always. The provided method, for other
    /// implementations, looks with [`contains_hash`](Filter::contains_hash) and then adds one
    /// copy with [`insert_count_hash`](Count::insert_count_hash): two steps, so racing calls
    /// may each store a copy unless the implementation overrides it.
    /// [`CountingQf::insert_batch_if_absent`](crate::CountingQf::insert_batch_if_absent) is the
    /// batch form.
    ///
    /// ```
    /// use conqf::{Count, LockedCuckooFilter};
    ///
    /// let filter = LockedCuckooFilter::new(1000, 0.01)?;
    /// assert!(filter.insert_if_absent(&"apple")?);
    /// for _ in 0..20 {
    ///     assert!(!filter.insert_if_absent(&"apple")?); // `insert` would be `Full` by the 9th
    /// }
    /// assert_eq!(filter.count(&"apple"), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] if the fingerprint is absent and there is no room for it, as for
    /// [`insert_hash`](Filter::insert_hash); the filter is unchanged.
    fn insert_if_absent_hash(&self, hash: u64) -> Result<bool, Error> {
        if self.contains_hash(hash) {
            return Ok(false);
        }
        self.insert_count_hash(hash, 1).map(|()| true)
    }

    /// Stores a key's fingerprint unless it is stored already; see
    /// [`insert_if_absent_hash`](Count::insert_if_absent_hash).
    ///
    /// # Errors
    /// As [`insert_if_absent_hash`](Count::insert_if_absent_hash).
    fn insert_if_absent<K: Hash + ?Sized>(&self, key: &K) -> Result<bool, Error>
    where
        Self: Sized,
    {
        self.insert_if_absent_hash(hash_key(key))
    }

    /// How many times a key's fingerprint is stored; see [`count_hash`](Count::count_hash).
    fn count<K: Hash + ?Sized>(&self, key: &K) -> u64
    where
        Self: Sized,
    {
        self.count_hash(hash_key(key))
    }

    /// Adds `n` occurrences of a key; see [`insert_count_hash`](Count::insert_count_hash).
    ///
    /// # Errors
    /// [`Error::Full`] if there is no room; the filter is unchanged.
    fn insert_count<K: Hash + ?Sized>(&self, key: &K, n: u64) -> Result<(), Error>
    where
        Self: Sized,
    {
        self.insert_count_hash(hash_key(key), n)
    }
}

/// Filters that can absorb another filter of the same parameters without rehashing.
///
/// Implemented by `SequentialQf`, `ExternallyLockedQf`, `LocallyLockedQf`, `GrowableQf` (the
/// union grows on as the first input would), `TwoBitQf`, `CountingQf`, `AtomicBloomFilter` (the
/// bitwise OR of two tables of one shape, read without locks) and both cuckoo filters (the
/// copies of both inputs in one table of their shape). `ExpandableQf` and `LinearProbingQf` do
/// not merge: an expandable level has a fixed size for its fingerprint length, which the union
/// of two full levels overflows, and a linear-probing slot does not say which quotient its
/// remainder belongs to. The concurrent filters let other threads keep using both inputs:
/// `ExternallyLockedQf`, `CountingQf` and `LockedCuckooFilter` read each input under all of its
/// locks (the table of one instant), `LocallyLockedQf` and `GrowableQf` one cluster at a time
/// under the cluster's read lock, `TwoBitQf` one supercluster at a time under its left lock and
/// `LockFreeCuckooFilter` in one pass while its relocations wait (every fingerprint stored
/// before the merge and not removed during it; see their `Merge` impls).
pub trait Merge: Sized {
    /// A new filter holding the fingerprints of both.
    ///
    /// # Errors
    /// [`Error::Incompatible`] if the inputs' shapes differ: the fingerprint lengths `q + r` of
    /// the quotient filters, the bits and hash functions of `AtomicBloomFilter`, the bucket and
    /// fingerprint bits of the cuckoo filters. [`Error::Full`] if the union does not fit (never
    /// for `AtomicBloomFilter`). [`Error::OutOfMemory`] if the union's memory cannot be
    /// allocated. Each implementation's docs give its own list.
    fn merge(&self, other: &Self) -> Result<Self, Error>;
}
