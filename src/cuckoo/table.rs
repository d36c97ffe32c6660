//! The bucketed cuckoo table both cuckoo filters share (paper 001 §1.1, §2.1): 4-way buckets,
//! partial-key cuckoo hashing, entries packed inline in atomic words, and the search for a
//! relocation path under the same-index rule (paper 001 §2.3).
//!
//! # Packing
//!
//! The table has `2^b` buckets of [`ENTRIES_PER_BUCKET`] entries. Entry `i` of bucket `k` is slot
//! `4k + i` of a [`SlotArray`]: entries are `f + 2` bits wide and packed `floor(64 / (f + 2))` to
//! an `AtomicU64` group, so a bucket may straddle two groups. An entry is the fingerprint and a
//! two-bit [`State`] that the lock-free filter's relocation protocol uses (the locked filter
//! leaves it at [`State::Stable`]):
//!
//! ```text
//!  one group, here f = 12: entries of 14 bits, 4 per group, 8 bits unused
//!  63   56 55             42 41             28 27             14 13              0
//! +-------+-----------------+-----------------+-----------------+-----------------+
//! |unused |  fp  | st       |  fp  | st       |  fp  | st       |  fp  | st       |
//! +-------+-----------------+-----------------+-----------------+-----------------+
//!           entry 4k+3        entry 4k+2        entry 4k+1        entry 4k
//!
//!  one entry:  | fingerprint (f bits, never 0) | state (2 bits) |
//!  the all-zero entry is empty
//! ```
//!
//! | fingerprint bits | entry bits | entries per group | bits per entry | vs. a sequential filter |
//! | --- | --- | --- | --- | --- |
//! | 8 | 10 | 6 | 10.7 | 1.33x |
//! | 12 | 14 | 4 | 16 | 1.33x |
//! | 14 | 16 | 4 | 16 | 1.14x |
//! | 16 | 18 | 3 | 21.3 | 1.33x |
//!
//! Any `f` in [`MIN_FINGERPRINT_BITS`]`..=`[`MAX_FINGERPRINT_BITS`] works. Nothing else is
//! allocated per fingerprint: no pointer, no hazard pointer, no counter per entry (the lock-free
//! filter's relocation counters are a small fixed array of per-stripe versions instead).
//!
//! # Hashing
//!
//! A key's 64-bit hash gives the primary bucket `b1` (its top `b` bits) and the fingerprint (the
//! next `f` bits, re-mixed until non-zero so that 0 can mean empty). The alternate bucket is
//! `b2 = b1 xor offset(fp)` (partial-key cuckoo hashing), with `offset` a mix of the fingerprint
//! that is never 0, so `b1 != b2` and `alt(alt(b, fp), fp) == b`: a stored fingerprint can be
//! moved between its two buckets without knowing its key.
//!
//! # The same-index rule
//!
//! A fingerprint stored in entry `i` only ever moves to entry `i` of its other bucket (paper 001
//! §2.2). So a stored copy is always in one of exactly two entries, `b1[i]` and `b2[i]`, and a
//! relocation path from entry `i` of a bucket is a chain through entry `i` of other buckets
//! ([`CuckooTable::relocation_path`]). The price: a copy never changes index, so relocation
//! chains are single paths instead of a tree of choices, and the table fills less far than a
//! sequential cuckoo filter's 95% before the first insert fails.
//!
//! # Supported sizes and load caps
//!
//! Buckets have 4 entries ([`ENTRIES_PER_BUCKET`], the only bucket size). Fingerprints have 4
//! to 30 bits (`with_bits`); `new(capacity, fpr)` picks the smallest width of at least 8 bits
//! ([`MIN_SIZED_FINGERPRINT_BITS`]) that meets `fpr` at [`MAX_LOAD`] = 70% and sizes the table
//! for that fill (paper 001 measures at 40%). The fill at which the first insert fails (the
//! *load cap*), measured by inserting distinct keys into an empty `LockFreeCuckooFilter` until
//! the first `Full` (median of 3 runs; one run at 2^22 buckets):
//!
//! | fingerprint bits | 2^6 buckets | 2^10 | 2^14 | 2^18 | 2^22 |
//! | --- | --- | --- | --- | --- | --- |
//! | 4 | 84% | 78% | 74% | 68% | 60% |
//! | 5 | | | | | 70% |
//! | 6 | 87% | 83% | 78% | 77% | 75% |
//! | 8 | 87% | 83% | 80% | 78% | 77% |
//! | 12 | 89% | 84% | 80% | 79% | |
//! | 16 | 88% | 83% | 80% | 79% | 78% |
//! | 24 | 84% | 83% | 80% | 78% | |
//! | 30 | 87% | 84% | 81% | 79% | |
//!
//! From 8 bits on the cap hardly depends on the width and stays above 70% up to 2^22 buckets;
//! it falls slowly with the table's size. Below 8 bits the alternate bucket takes only
//! `2^f - 1` offsets, so relocation chains run into each other sooner: with 4 or 5 bits a large
//! table caps below 70%, which is why `new` never picks them (`with_bits` still accepts them,
//! for small tables or a lower fill).

use crate::counter::StripedCounter;
use crate::filter::Error;
use crate::hash::{low_mask, remix, Splitter};
use crate::storage::{GroupSource, LaneFields, SlotArray, SlotLayout};
use crate::sync::Ordering;

/// Entries per bucket (the 4-way buckets of paper 001 §2.1).
pub(crate) const ENTRIES_PER_BUCKET: usize = 4;

/// The smallest fingerprint width the filters accept.
pub(crate) const MIN_FINGERPRINT_BITS: u32 = 4;

/// The smallest fingerprint width `new(capacity, fpr)` picks: below 8 bits, the few distinct
/// alternate-bucket offsets (`2^f - 1`) make relocation chains fail early on large tables (the
/// first insert fails at about 60% fill with 4 bits and 70% with 5 bits on 2^22 buckets, under
/// [`MAX_LOAD`]; see the module docs).
pub(crate) const MIN_SIZED_FINGERPRINT_BITS: u32 = 8;

/// The largest fingerprint width the filters accept (entries of 32 bits, 2 per group).
pub(crate) const MAX_FINGERPRINT_BITS: u32 = 30;

/// The largest number of bucket bits (2^36 buckets of 4 entries: beyond any machine).
pub(crate) const MAX_BUCKET_BITS: u32 = 36;

/// Bits of the state field of an entry.
pub(crate) const STATE_BITS: u32 = 2;

/// The longest relocation path an insert follows before it gives up on that chain.
pub(crate) const MAX_PATH: usize = 256;

/// The fill up to which `new(capacity, fpr)` sizes the table, with a margin below the fill at
/// which the same-index rule makes the first inserts fail (about 80% on large tables; the tests
/// fill tables to this load without a failure).
pub(crate) const MAX_LOAD: f64 = 0.7;

/// The state of an entry, used by the lock-free relocation protocol (see
/// [`lock_free`](super::lock_free)). The locked filter only uses `Stable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// An ordinary stored fingerprint (or, with fingerprint 0, the empty entry).
    Stable = 0,
    /// Being moved out to the other bucket; still the copy a query counts.
    Out = 1,
    /// Being moved in from the other bucket.
    In = 2,
    /// Moved out: the copy now lives in the other bucket, this entry is cleared next.
    Vacated = 3,
}

/// One entry: a fingerprint and a [`State`], as stored in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry(u64);

impl Entry {
    /// The empty entry.
    pub(crate) const EMPTY: Entry = Entry(0);

    /// The entry holding `fingerprint` in `state`.
    #[inline]
    pub(crate) const fn new(fingerprint: u64, state: State) -> Self {
        Entry((fingerprint << STATE_BITS) | state as u64)
    }

    /// The stored fingerprint (0 if empty).
    #[inline]
    pub(crate) const fn fingerprint(self) -> u64 {
        self.0 >> STATE_BITS
    }

    /// The entry's state.
    #[inline]
    pub(crate) const fn state(self) -> State {
        match self.0 & low_mask(STATE_BITS) {
            0 => State::Stable,
            1 => State::Out,
            2 => State::In,
            _ => State::Vacated,
        }
    }

    /// Whether the entry is empty.
    #[inline]
    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// How an attempt to free an entry by relocation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relocation {
    /// The chain moved along and the entry was empty after it (another insert may have filled
    /// it since).
    Freed,
    /// No chain of at most [`MAX_PATH`] stable entries ends at an empty entry.
    NoRoom,
    /// Another thread got in the way: the chain met an entry being moved, or a move found its
    /// source or destination changed. A later attempt may succeed.
    Contended,
}

/// How a step of [`insert_with_relocations`] that stores the fingerprint ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    /// The fingerprint went into the entry (for `fill_empty`, into an entry of its buckets).
    Stored,
    /// No empty entry there: none was, or another thread took it.
    Missed,
    /// A copy of the fingerprint is stored already, and the insert (an insert-if-absent)
    /// stores none.
    Present,
}

impl From<bool> for Store {
    /// `Stored` or `Missed`: the steps of an insert that stores a copy whatever is there.
    fn from(stored: bool) -> Self {
        if stored {
            Store::Stored
        } else {
            Store::Missed
        }
    }
}

/// Rounds of "fill an empty entry, else relocate" an insert makes before it reports `Full`
/// while other threads keep getting in its way.
const INSERT_ROUNDS: usize = 4;

/// The insert of both cuckoo filters (paper 001 §2.2), written once over the filter's own
/// steps: `fill_empty()` stores the fingerprint in an empty entry of either bucket if there is
/// one; `relocate(bucket, index, path)` moves the chain behind entry `index` of `bucket` one step
/// along (`path` is scratch space for the chain); `store(bucket, index, entry)` puts `entry`,
/// the fingerprint as a stable entry, into that entry if it is still empty. Each round tries
/// every entry of both buckets (in [`CuckooTable::index_order`] of `seed`). `Ok(true)` once a
/// step stored the fingerprint, and the table's count goes up by one; `Ok(false)`, storing
/// nothing, once a step answered [`Store::Present`] (only an insert-if-absent's steps do).
/// `Err(Full)` after a round in which every chain was too long, or after [`INSERT_ROUNDS`]
/// rounds in which other threads took what the relocations freed or got in the way; a failed
/// insert has moved copies along chains but dropped none.
pub(crate) fn insert_with_relocations(
    table: &CuckooTable,
    seed: u64,
    place: Placement,
    mut fill_empty: impl FnMut() -> Store,
    mut relocate: impl FnMut(usize, usize, &mut Vec<(usize, u64)>) -> Relocation,
    mut store: impl FnMut(usize, usize, Entry) -> Store,
) -> Result<bool, Error> {
    let stable = Entry::new(place.fingerprint, State::Stable);
    let mut path = Vec::new();
    let ended = 'rounds: {
        for _ in 0..INSERT_ROUNDS {
            match fill_empty() {
                Store::Missed => {}
                done => break 'rounds done,
            }
            let mut may_succeed_later = false;
            for index in CuckooTable::index_order(seed) {
                for bucket in [place.primary, place.alternate] {
                    match relocate(bucket, index, &mut path) {
                        Relocation::NoRoom => {}
                        Relocation::Freed => match store(bucket, index, stable) {
                            Store::Missed => may_succeed_later = true,
                            done => break 'rounds done,
                        },
                        Relocation::Contended => may_succeed_later = true,
                    }
                }
            }
            if !may_succeed_later {
                break 'rounds Store::Missed;
            }
        }
        Store::Missed
    };
    match ended {
        Store::Stored => {
            table.len.increment();
            Ok(true)
        }
        Store::Present => Ok(false),
        Store::Missed => Err(Error::Full),
    }
}

/// Where a hash lives: its two buckets and its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The primary bucket.
    pub(crate) primary: usize,
    /// The alternate bucket, `primary xor offset(fingerprint)`; never equal to `primary`.
    pub(crate) alternate: usize,
    /// The fingerprint, never 0.
    pub(crate) fingerprint: u64,
}

/// `2^b` buckets of 4 packed entries, with the hashing and path search both filters share.
pub(crate) struct CuckooTable {
    /// Entry `i` of bucket `k` is slot `4k + i`.
    pub(crate) entries: SlotArray,
    bucket_bits: u32,
    fingerprint_bits: u32,
    /// Splits a hash into the primary bucket and the non-zero fingerprint.
    splitter: Splitter,
    /// Stored copies (inserts minus removes); a statistic.
    pub(crate) len: StripedCounter,
    /// The word constants of the broadword bucket search.
    lanes: Lanes,
    /// The index of the last group of `entries`.
    last_group: usize,
}

/// The groups a bucket lies in, as loaded at one instant each ([`CuckooTable::load_bucket`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BucketWords {
    /// The group of the bucket's first entry and the group after it.
    words: [u64; 2],
    /// The lane of the bucket's first entry in `words[0]`.
    offset: u32,
    /// How many of the bucket's entries are in `words[0]`; the rest start at lane 0 of
    /// `words[1]`.
    first: u32,
}

impl BucketWords {
    /// Entry `index` (below [`ENTRIES_PER_BUCKET`]) of the loaded bucket, as it was loaded;
    /// `layout` is the table's.
    pub(crate) fn entry(&self, layout: &SlotLayout, index: usize) -> Entry {
        let index = index as u32;
        if index < self.first {
            Entry(layout.get(self.words[0], self.offset + index))
        } else {
            Entry(layout.get(self.words[1], index - self.first))
        }
    }
}

/// Word constants that compare a fingerprint with every entry of a group at once
/// ([`LaneFields`] over the fingerprint field). A *lane* is one entry's bits in a group; a
/// lane's top bit is its *flag*.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lanes {
    /// The entries' layout.
    layout: SlotLayout,
    /// The fingerprint field of every lane, above the state bits.
    fields: LaneFields,
}

impl Lanes {
    /// The constants of `layout`: computed once per table, or folded into the code where the
    /// layout is a constant (a lookup compiled per entry width, `with_fixed_width!`).
    #[inline(always)]
    pub(crate) fn new(layout: &SlotLayout) -> Self {
        Lanes {
            layout: *layout,
            fields: LaneFields::new(layout, STATE_BITS),
        }
    }

    /// `fingerprint` (non-zero, `f` bits) in the fingerprint field of every lane.
    #[inline]
    fn pattern(&self, fingerprint: u64) -> u64 {
        self.fields.pattern(fingerprint, STATE_BITS)
    }

    /// The flags of the lanes of `word` whose fingerprint equals `pattern`'s
    /// ([`LaneFields::equal`]). Empty entries never match (fingerprints are never 0).
    #[inline]
    fn matches(&self, word: u64, pattern: u64) -> u64 {
        self.fields.equal(word, pattern)
    }

    /// The flags of `count` lanes from lane `first` on (`first + count <= per_group`).
    #[inline]
    fn span(&self, first: u32, count: u32) -> u64 {
        let bits = self.layout.bits();
        (self.fields.flags() & low_mask(count * bits)) << (first * bits)
    }

    /// The lane whose flag is bit `bit` ([`SlotLayout::lane_of_bit`]).
    #[inline]
    fn lane_of(&self, bit: u32) -> u32 {
        self.layout.lane_of_bit(bit)
    }
}

impl CuckooTable {
    /// Empties every entry (no fingerprint, no relocation state) and sets the count to 0
    /// (`&mut self`: no other thread).
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.len.reset(0);
    }

    /// A table of `2^bucket_bits` buckets with `fingerprint_bits`-bit fingerprints.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if either is out of range; [`Error::OutOfMemory`] if the
    /// memory cannot be allocated.
    pub(crate) fn new(bucket_bits: u32, fingerprint_bits: u32) -> Result<Self, Error> {
        Self::check_bits(bucket_bits, fingerprint_bits)?;
        let entries = SlotArray::new(fingerprint_bits + STATE_BITS, Self::slots_for(bucket_bits))?;
        Ok(CuckooTable {
            lanes: Lanes::new(entries.layout()),
            last_group: entries.layout().groups_for(entries.len()) - 1,
            entries,
            bucket_bits,
            fingerprint_bits,
            splitter: Splitter::new(bucket_bits, fingerprint_bits),
            len: StripedCounter::new(),
        })
    }

    /// `Err` unless `bucket_bits` and `fingerprint_bits` are in range (nothing allocated).
    pub(crate) fn check_bits(bucket_bits: u32, fingerprint_bits: u32) -> Result<(), Error> {
        if !(1..=MAX_BUCKET_BITS).contains(&bucket_bits) {
            return Err(Error::InvalidParameters(format!(
                "bucket_bits {bucket_bits} is not in 1..={MAX_BUCKET_BITS}"
            )));
        }
        if !(MIN_FINGERPRINT_BITS..=MAX_FINGERPRINT_BITS).contains(&fingerprint_bits) {
            return Err(Error::InvalidParameters(format!(
                "fingerprint_bits {fingerprint_bits} is not in \
                 {MIN_FINGERPRINT_BITS}..={MAX_FINGERPRINT_BITS}"
            )));
        }
        if bucket_bits + fingerprint_bits > u64::BITS {
            // A hash splits into the bucket and the fingerprint, so both must fit its 64 bits.
            return Err(Error::InvalidParameters(format!(
                "bucket_bits {bucket_bits} + fingerprint_bits {fingerprint_bits} exceed the \
                 hash's 64 bits"
            )));
        }
        Ok(())
    }

    /// The entries (slots) of `2^bucket_bits` buckets; `bucket_bits` was checked.
    pub(crate) fn slots_for(bucket_bits: u32) -> usize {
        ENTRIES_PER_BUCKET << bucket_bits
    }

    /// Parameters for `capacity` items at fill at most [`MAX_LOAD`] and an expected
    /// false-positive rate at most `fpr` there: `(bucket_bits, fingerprint_bits)`.
    pub(crate) fn parameters_for(capacity: usize, fpr: f64) -> Result<(u32, u32), Error> {
        crate::sizing::check_capacity_and_fpr(capacity, fpr)?;
        let buckets = capacity as f64 / (ENTRIES_PER_BUCKET as f64 * MAX_LOAD);
        let bucket_bits = (buckets.log2().ceil().max(1.0) as u32).max(1);
        let mut bucket_bits = bucket_bits;
        while bucket_bits <= MAX_BUCKET_BITS && Self::capacity_of(bucket_bits) < capacity {
            bucket_bits += 1;
        }
        if bucket_bits > MAX_BUCKET_BITS {
            return Err(Error::InvalidParameters(format!(
                "capacity {capacity} needs more than 2^{MAX_BUCKET_BITS} buckets"
            )));
        }
        let fingerprint_bits = crate::sizing::smallest_bits(
            fpr,
            (MIN_SIZED_FINGERPRINT_BITS, MAX_FINGERPRINT_BITS),
            "fingerprint",
            |f| cuckoo_fpr(MAX_LOAD, f),
        )?;
        Ok((bucket_bits, fingerprint_bits))
    }

    /// How many items `2^bucket_bits` buckets hold at [`MAX_LOAD`].
    pub(crate) fn capacity_of(bucket_bits: u32) -> usize {
        (((ENTRIES_PER_BUCKET as u64) << bucket_bits) as f64 * MAX_LOAD) as usize
    }

    /// Number of buckets.
    #[inline]
    pub(crate) fn buckets(&self) -> usize {
        1 << self.bucket_bits
    }

    /// `b`: the table has `2^b` buckets.
    pub(crate) fn bucket_bits(&self) -> u32 {
        self.bucket_bits
    }

    /// `f`: the fingerprint width.
    pub(crate) fn fingerprint_bits(&self) -> u32 {
        self.fingerprint_bits
    }

    /// Bytes of the entry groups.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.entries.memory_bytes() + self.len.memory_bytes()
    }

    /// The expected false-positive rate at the current fill.
    pub(crate) fn false_positive_rate(&self) -> f64 {
        let load = self.len.sum() as f64 / (ENTRIES_PER_BUCKET * self.buckets()) as f64;
        cuckoo_fpr(load, self.fingerprint_bits)
    }

    /// The buckets and fingerprint of a hash.
    #[inline]
    pub(crate) fn placement(&self, hash: u64) -> Placement {
        let (primary, fingerprint) = self.splitter.split_nonzero(hash);
        Placement {
            primary,
            alternate: self.alternate(primary, fingerprint),
            fingerprint,
        }
    }

    /// The other bucket of `fingerprint` stored in `bucket` (partial-key cuckoo hashing).
    #[inline]
    pub(crate) fn alternate(&self, bucket: usize, fingerprint: u64) -> usize {
        let mask = low_mask(self.bucket_bits);
        // Never 0, so the two buckets differ; a function of the fingerprint alone, so the map
        // is an involution.
        let offset = (remix(fingerprint) & mask).max(1);
        bucket ^ offset as usize
    }

    /// Reads entry `index` of `bucket`.
    #[inline]
    pub(crate) fn entry(&self, bucket: usize, index: usize, order: Ordering) -> Entry {
        Entry(self.entries.get(bucket * ENTRIES_PER_BUCKET + index, order))
    }

    /// Replaces entry `index` of `bucket` by `new` if it holds `current`; other entries of the
    /// same group may change meanwhile (the CAS is retried for them). Returns whether it did.
    ///
    /// `AcqRel` on success: `Release` publishes the entry to queries that load it with `Acquire`
    /// (and orders everything this thread did before, e.g. a version increment, before it);
    /// `Acquire` orders this thread's later reads after the writes whose entries it replaced.
    /// The failure and reload orderings are `Acquire` for the same reason as every load.
    #[inline]
    pub(crate) fn compare_exchange(
        &self,
        bucket: usize,
        index: usize,
        current: Entry,
        new: Entry,
    ) -> bool {
        let layout = *self.entries.layout();
        let (group, offset) = layout.locate(bucket * ENTRIES_PER_BUCKET + index);
        let mut word = self.entries.load_group(group, Ordering::Acquire);
        loop {
            if layout.get(word, offset) != current.0 {
                return false;
            }
            let replaced = layout.set(word, offset, new.0);
            match self.entries.compare_exchange_group(
                group,
                word,
                replaced,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }

    /// The entry index in `bucket` holding `fingerprint` in a state `accept` takes, if any:
    /// [`load_bucket`](Self::load_bucket), then [`search`](Self::search).
    #[inline(always)]
    pub(crate) fn find_in_bucket(
        &self,
        bucket: usize,
        fingerprint: u64,
        order: Ordering,
        accept: impl Fn(State) -> bool,
    ) -> Option<usize> {
        self.search(&self.load_bucket(bucket, order), fingerprint, accept)
    }

    /// Loads the groups of `bucket`. A bucket of 4 entries lies in at most two groups (a group
    /// holds at least 2 entries); both are loaded, each once, so the search does not branch on
    /// where the bucket ends. Entries of one group are read at the same instant, which is as
    /// good as reading them one by one.
    #[inline(always)]
    pub(crate) fn load_bucket(&self, bucket: usize, order: Ordering) -> BucketWords {
        self.load_bucket_from(&self.entries, bucket, order)
    }

    /// [`load_bucket`](Self::load_bucket) through `entries`, this table's entries seen as a
    /// [`GroupSource`] (of a fixed width, for a lookup compiled per width).
    #[inline(always)]
    pub(crate) fn load_bucket_from<S: GroupSource>(
        &self,
        entries: &S,
        bucket: usize,
        order: Ordering,
    ) -> BucketWords {
        let layout = entries.layout();
        let (group, offset) = layout.locate(bucket * ENTRIES_PER_BUCKET);
        let first = (layout.per_group() - offset).min(ENTRIES_PER_BUCKET as u32);
        // The group after the last one is never needed (the last bucket ends in the last
        // group); any valid group will do there, its entries are masked out.
        let next = (group + 1).min(self.last_group);
        BucketWords {
            words: [
                entries.load_group(group, order),
                entries.load_group(next, order),
            ],
            offset,
            first,
        }
    }

    /// The entry index of a loaded bucket holding `fingerprint` in a state `accept` takes, if
    /// any. The entries of each group are compared all at once ([`Lanes::matches`]); only
    /// matching entries are decoded for `accept`.
    #[inline(always)]
    pub(crate) fn search(
        &self,
        bucket: &BucketWords,
        fingerprint: u64,
        accept: impl Fn(State) -> bool,
    ) -> Option<usize> {
        Self::search_with(&self.lanes, bucket, fingerprint, accept)
    }

    /// [`search`](Self::search) with the lanes' constants given: [`CuckooTable::lanes`], or
    /// those of a constant layout.
    #[inline(always)]
    pub(crate) fn search_with(
        lanes: &Lanes,
        bucket: &BucketWords,
        fingerprint: u64,
        accept: impl Fn(State) -> bool,
    ) -> Option<usize> {
        let layout = &lanes.layout;
        let pattern = lanes.pattern(fingerprint);
        let (words, offset, first) = (bucket.words, bucket.offset, bucket.first);
        let hits = [
            lanes.matches(words[0], pattern) & lanes.span(offset, first),
            lanes.matches(words[1], pattern) & lanes.span(0, ENTRIES_PER_BUCKET as u32 - first),
        ];
        if hits[0] | hits[1] == 0 {
            return None;
        }
        for (part, (&word, mut hits)) in words.iter().zip(hits).enumerate() {
            while hits != 0 {
                let lane = lanes.lane_of(hits.trailing_zeros());
                if accept(Entry(layout.get(word, lane)).state()) {
                    let index = if part == 0 {
                        lane - offset
                    } else {
                        first + lane
                    };
                    return Some(index as usize);
                }
                hits &= hits - 1;
            }
        }
        None
    }

    /// Fills `path` with the chain of stable entries an insert would push to free entry `index`
    /// of `start`: `path[0]` is `(start, fingerprint in start[index])`, each next bucket is the
    /// alternate bucket of the previous fingerprint, and the last element is the bucket whose
    /// entry `index` was empty (with fingerprint 0). Returns [`Relocation::Freed`] when it found
    /// such a chain, [`Relocation::Contended`] if the chain meets an entry that is being moved,
    /// and [`Relocation::NoRoom`] if it is longer than [`MAX_PATH`] or comes back to an entry
    /// it passed that still holds the fingerprint it held then.
    ///
    /// Each bucket's next one depends only on its entry `index`, so a chain that comes back to a
    /// bucket goes round that cycle until `MAX_PATH`, and moving it along frees nothing. The common
    /// cycle is two buckets whose entry `index` both hold one fingerprint (the ninth copy of a key
    /// finds all eight entries of its pair so): without the check each such insert walked eight
    /// chains of 256 steps, 16 µs against 0.23 µs with it (2026-12-01, a throwaway program, best of
    /// five runs of 20,000 inserts; filling `2^22` entries to 85% took as long either way). Brent's
    /// method finds any cycle within about twice its distance from `start` plus its length: each
    /// entry read is compared with one saved entry of the chain, saved anew after 1, 2, 4, ...
    /// steps. (Another thread may change an entry between two visits; a chain that comes back to a
    /// changed one goes on.)
    ///
    /// The reads are not a snapshot: the caller moves the entries from the end of the path back
    /// to its start, checking each entry again as it moves it.
    pub(crate) fn relocation_path(
        &self,
        start: usize,
        index: usize,
        path: &mut Vec<(usize, u64)>,
    ) -> Relocation {
        path.clear();
        let mut bucket = start;
        // The position in `path` of the saved bucket, and the step at which to save anew.
        let (mut saved, mut next_save) = (0, 1);
        for step in 0..MAX_PATH {
            // Acquire: the fingerprint read decides where to move it; the move re-checks it
            // with a CAS, so this read only needs to be a value some thread wrote.
            let entry = self.entry(bucket, index, Ordering::Acquire);
            if entry.is_empty() {
                path.push((bucket, 0));
                return Relocation::Freed;
            }
            if entry.state() != State::Stable {
                return Relocation::Contended;
            }
            // Back at the saved bucket, which holds what it held then: the chain repeats.
            if step > 0 && path[saved] == (bucket, entry.fingerprint()) {
                return Relocation::NoRoom;
            }
            if step == next_save {
                (saved, next_save) = (path.len(), 2 * step);
            }
            path.push((bucket, entry.fingerprint()));
            bucket = self.alternate(bucket, entry.fingerprint());
        }
        Relocation::NoRoom
    }

    /// Copies every entry of `from` (a table of the same shape) into this table, which no
    /// other thread uses yet. The caller keeps `from`'s entries where they are meanwhile (holds
    /// its locks, or pauses its relocations), so one pass over the words reads every copy
    /// stored throughout; `ordering` is the loads' order. The count is left to
    /// [`recount`](Self::recount), which needs no lock of `from`.
    pub(crate) fn copy_from(&self, from: &CuckooTable, ordering: Ordering) {
        debug_assert_eq!(
            (self.bucket_bits, self.fingerprint_bits),
            (from.bucket_bits, from.fingerprint_bits)
        );
        self.entries.copy_groups_from(&from.entries, ordering);
    }

    /// Sets the count to the entries stored, for a table no other thread uses yet (a copy).
    pub(crate) fn recount(&self) {
        let layout = *self.entries.layout();
        let stored: usize = (0..layout.groups_for(self.entries.len()))
            // Relaxed: no other thread uses this table.
            .map(|group| self.entries.load_group(group, Ordering::Relaxed))
            // Lanes past the last slot are never written, so they read as empty.
            .map(|word| {
                (0..layout.per_group())
                    .filter(|&lane| layout.get(word, lane) != 0)
                    .count()
            })
            .sum();
        self.len.reset(stored);
    }

    /// The order in which an insert tries the entry indices: a rotation picked by the hash, so
    /// keys spread evenly over the indices (paper 001 §2.2 shuffles them at random; a rotation
    /// derived from the hash is as even and keeps every run reproducible).
    #[inline]
    pub(crate) fn index_order(hash: u64) -> impl Iterator<Item = usize> {
        let first = (hash as usize) % ENTRIES_PER_BUCKET;
        (0..ENTRIES_PER_BUCKET).map(move |k| (first + k) % ENTRIES_PER_BUCKET)
    }

    /// Every stored fingerprint with its bucket pair (sorted), read entry by entry: exact only
    /// while no thread writes. Entries in a transient state are reported as they are.
    pub(crate) fn stored(&self) -> Vec<(u64, [usize; 2], State)> {
        let mut all = Vec::new();
        for bucket in 0..self.buckets() {
            for index in 0..ENTRIES_PER_BUCKET {
                // Acquire: as every load; exactness is only claimed without concurrent writers.
                let entry = self.entry(bucket, index, Ordering::Acquire);
                if !entry.is_empty() {
                    let other = self.alternate(bucket, entry.fingerprint());
                    all.push((
                        entry.fingerprint(),
                        [bucket.min(other), bucket.max(other)],
                        entry.state(),
                    ));
                }
            }
        }
        all.sort_by_key(|&(fp, pair, _)| (pair, fp));
        all
    }

    /// Checks the invariants of a quiescent table: every entry is stable, and the number of
    /// stored entries is `len`.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let stored = self.stored();
        if let Some(&(fp, pair, state)) = stored.iter().find(|e| e.2 != State::Stable) {
            return Err(format!(
                "fingerprint {fp:#x} in buckets {pair:?} left in state {state:?}"
            ));
        }
        if stored.len() != self.len.sum() {
            return Err(format!(
                "{} entries stored but len is {}",
                stored.len(),
                self.len.sum()
            ));
        }
        Ok(())
    }
}

/// The expected false-positive rate of a cuckoo filter at fill `load` with `f`-bit non-zero
/// fingerprints: a query compares with the `8 · load` stored fingerprints of its two buckets on
/// average, each equal with probability `1 / (2^f - 1)`, so `1 - (1 - 1/(2^f - 1))^(8 load)`
/// (about `8 load / (2^f - 1)`, and at most that once `8 load >= 1`; Fan et al., reference 1 of
/// paper 001). `load` is clamped to `[0, 1]` (a table holds at most one fingerprint per entry)
/// and a NaN counts as 1, as in `conqf::linear_probing_fpr`.
///
/// ```
/// let rate = conqf::cuckoo_fpr(0.5, 12);
/// assert!(rate > 0.0 && rate <= 4.0 / 4095.0);
/// assert_eq!(conqf::cuckoo_fpr(0.0, 12), 0.0);
/// assert_eq!(conqf::cuckoo_fpr(f64::NAN, 12), conqf::cuckoo_fpr(1.0, 12));
/// ```
pub fn cuckoo_fpr(load: f64, fingerprint_bits: u32) -> f64 {
    let compared = 2.0 * ENTRIES_PER_BUCKET as f64 * crate::sizing::formula_load(load);
    if compared == 0.0 {
        return 0.0;
    }
    // At most 1: with `f = 0` every query matches.
    let per_entry = (1.0 / ((fingerprint_bits as f64).exp2() - 1.0)).min(1.0);
    // `1 - (1 - p)^c` as `-(e^(c ln(1 - p)) - 1)`: `1 - p` rounds to 1 once `p` is below 2^-53
    // (fingerprints of 54 bits or more), which made the rate 0.
    (-(compared * (-per_entry).ln_1p()).exp_m1()).min(1.0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{
        low_mask, CuckooTable, Lanes, Ordering, Relocation, SlotLayout, State, ENTRIES_PER_BUCKET,
        MAX_BUCKET_BITS, MAX_FINGERPRINT_BITS, MAX_PATH, MIN_FINGERPRINT_BITS, STATE_BITS,
    };

    /// The rate stays below its first-order bound `8 load / (2^f - 1)`, and from 12 bits up to
    /// 63 within 1% of it (computed as `1 - (1 - p)^c` it was 0 from 54 bits on); it is 1 when
    /// every query matches.
    #[test]
    fn the_cuckoo_rate_keeps_its_precision_at_every_width() {
        use super::cuckoo_fpr;
        for f in 4..=63 {
            let bound = 4.0 / ((f as f64).exp2() - 1.0);
            let rate = cuckoo_fpr(0.5, f);
            // The bound with room for the last bits of the library's `ln_1p` and `exp_m1`.
            assert!(
                rate > 0.0 && rate <= bound * (1.0 + 1e-12),
                "f = {f}: {rate} vs {bound}"
            );
            assert!(f < 12 || rate >= 0.99 * bound, "f = {f}: {rate} vs {bound}");
        }
        assert_eq!(cuckoo_fpr(1.0, 1), 1.0);
        assert_eq!(cuckoo_fpr(0.5, 0), 1.0);
        assert_eq!(cuckoo_fpr(0.0, 0), 0.0);
        assert!(cuckoo_fpr(f64::NAN, 63) > 0.0);
    }

    /// The shared insert loop gives up after one round only if every chain was too long: a
    /// round whose relocations other threads got in the way of (or whose freed entries they
    /// took) is followed by another, up to the round limit.
    #[test]
    fn inserts_report_full_early_only_when_no_chain_has_room() {
        use super::{insert_with_relocations, Placement, Relocation, Store, INSERT_ROUNDS};
        use crate::filter::Error;
        let place = Placement {
            primary: 1,
            alternate: 2,
            fingerprint: 7,
        };
        // (how every relocation of rounds before the last one ends, in which round the
        // relocations free the entry and it is stored, if any; a relocation that frees the
        // entry in an earlier round finds it taken by another thread)
        let run = |ending: Relocation, stored_in_round: Option<usize>| {
            let table = CuckooTable::new(2, 8).unwrap();
            let (rounds, mut attempts) = (std::cell::Cell::new(0), 0);
            let result = insert_with_relocations(
                &table,
                0,
                place,
                || {
                    rounds.set(rounds.get() + 1);
                    Store::Missed
                },
                |_, _, _| {
                    attempts += 1;
                    if Some(rounds.get()) == stored_in_round {
                        Relocation::Freed
                    } else {
                        ending
                    }
                },
                |_, _, _| (Some(rounds.get()) == stored_in_round).into(),
            );
            // Only a stored fingerprint is counted.
            assert_eq!(table.len.sum(), usize::from(result.is_ok()));
            (result, rounds.get(), attempts)
        };
        let per_round = 2 * ENTRIES_PER_BUCKET;
        assert_eq!(
            run(Relocation::NoRoom, None),
            (Err(Error::Full), 1, per_round)
        );
        for busy in [Relocation::Contended, Relocation::Freed] {
            let (result, rounds, _) = run(busy, Some(2));
            assert_eq!((result, rounds), (Ok(true), 2), "{busy:?}");
            let gave_up = (Err(Error::Full), INSERT_ROUNDS, INSERT_ROUNDS * per_round);
            assert_eq!(run(busy, None), gave_up, "{busy:?}");
        }
    }

    /// An insert-if-absent's step that finds the fingerprint stored (`Store::Present`) ends
    /// the insert with `Ok(false)` and counts nothing, whether the first fill or a store after
    /// a relocation found it.
    #[test]
    fn a_step_finding_the_fingerprint_ends_the_insert_uncounted() {
        use super::{insert_with_relocations, Placement, Relocation, Store};
        let place = Placement {
            primary: 1,
            alternate: 2,
            fingerprint: 7,
        };
        for (fill, store) in [
            (Store::Present, Store::Stored),
            (Store::Missed, Store::Present),
        ] {
            let table = CuckooTable::new(2, 8).unwrap();
            let mut relocations = 0;
            let result = insert_with_relocations(
                &table,
                0,
                place,
                || fill,
                |_, _, _| {
                    relocations += 1;
                    Relocation::Freed
                },
                |_, _, _| store,
            );
            let expected_relocations = usize::from(fill == Store::Missed);
            assert_eq!((result, relocations), (Ok(false), expected_relocations));
            assert_eq!(table.len.sum(), 0);
        }
    }

    /// Bucket and fingerprint bits are cut from one 64-bit hash, so each in its range is not
    /// enough: the two together must fit (the widest of each did not, and would have shifted by
    /// a negative amount when splitting a hash).
    #[test]
    fn bucket_and_fingerprint_bits_must_fit_one_hash_together() {
        for f in MIN_FINGERPRINT_BITS..=MAX_FINGERPRINT_BITS {
            for b in 1..=MAX_BUCKET_BITS {
                let fits = b + f <= 64;
                assert_eq!(
                    CuckooTable::check_bits(b, f).is_ok(),
                    fits,
                    "b = {b}, f = {f}"
                );
            }
        }
    }

    proptest! {
        /// The broadword compare flags exactly the lanes whose fingerprint field is equal,
        /// whatever the states and the unused bits, at every fingerprint width.
        #[test]
        fn lanes_match_exactly_the_equal_fingerprints(
            fingerprint_bits in MIN_FINGERPRINT_BITS..=MAX_FINGERPRINT_BITS,
            word in any::<u64>(),
            fingerprint in 1u64..,
            copy_into in any::<u16>(),
        ) {
            let layout = SlotLayout::new(fingerprint_bits + STATE_BITS);
            let lanes = Lanes::new(&layout);
            let fingerprint = (fingerprint & low_mask(fingerprint_bits)).max(1);
            // Plant the fingerprint (with whatever state the word had) in some lanes.
            let mut word = word;
            for lane in 0..layout.per_group() {
                if copy_into >> lane & 1 == 1 {
                    let state = layout.get(word, lane) & low_mask(STATE_BITS);
                    word = layout.set(word, lane, (fingerprint << STATE_BITS) | state);
                }
            }
            let flags = lanes.matches(word, lanes.pattern(fingerprint));
            for lane in 0..layout.per_group() {
                let equal = layout.get(word, lane) >> STATE_BITS == fingerprint;
                let flag = 1u64 << (lane * layout.bits() + layout.bits() - 1);
                prop_assert_eq!(flags & flag != 0, equal, "lane {}", lane);
                prop_assert_eq!(lanes.lane_of((lane + 1) * layout.bits() - 1), lane);
            }
            prop_assert_eq!(flags & !lanes.fields.flags(), 0);
        }

        /// `find_in_bucket` agrees with reading the bucket entry by entry.
        #[test]
        fn find_in_bucket_agrees_with_entry_by_entry(
            fingerprint_bits in MIN_FINGERPRINT_BITS..=MAX_FINGERPRINT_BITS,
            entries in proptest::collection::vec((0u64..4, 0u64..4), 4 << 3),
            bucket in 0usize..(1 << 3),
            wanted in 1u64..4,
            accept_vacated in any::<bool>(),
        ) {
            let mut table = CuckooTable::new(3, fingerprint_bits).unwrap();
            for (slot, &(fingerprint, state)) in entries.iter().enumerate() {
                let value = if fingerprint == 0 { 0 } else { (fingerprint << STATE_BITS) | state };
                table.entries.set_exclusive(slot, value);
            }
            let accept = |state: State| accept_vacated || state != State::Vacated;
            let expected = (0..ENTRIES_PER_BUCKET).find(|&index| {
                let entry = table.entry(bucket, index, Ordering::Relaxed);
                entry.fingerprint() == wanted && accept(entry.state())
            });
            prop_assert_eq!(
                table.find_in_bucket(bucket, wanted, Ordering::Relaxed, accept),
                expected
            );
        }

        /// On a table no thread changes, stopping a chain that comes back to an entry it passed
        /// changes no answer: the plain walk of [`MAX_PATH`] steps finds the same path or none.
        /// Tables of 8 buckets whose entries are empty or hold fingerprint 1, 2 or 3 (three
        /// alternate offsets at most) are full of cycles.
        #[test]
        fn stopping_at_a_cycle_changes_no_relocation_path(
            fingerprints in proptest::collection::vec(0u64..4, 4 << 3),
        ) {
            let mut table = CuckooTable::new(3, 4).unwrap();
            for (slot, &fingerprint) in fingerprints.iter().enumerate() {
                table.entries.set_exclusive(slot, fingerprint << STATE_BITS);
            }
            let (mut path, mut plain) = (Vec::new(), Vec::new());
            for bucket in 0..table.buckets() {
                for index in 0..ENTRIES_PER_BUCKET {
                    let found = table.relocation_path(bucket, index, &mut path);
                    let expected = plain_walk(&table, bucket, index, &mut plain);
                    prop_assert_eq!(found, expected, "bucket {}, entry {}", bucket, index);
                    if found == Relocation::Freed {
                        prop_assert_eq!(&path, &plain);
                    } else {
                        // Brent's method: within twice the distance to the cycle plus its
                        // length, both at most the 8 buckets.
                        prop_assert!(path.len() <= 3 * 8, "{} steps", path.len());
                    }
                }
            }
        }
    }

    /// [`CuckooTable::relocation_path`] without its cycle check: [`MAX_PATH`] steps or an
    /// empty entry.
    fn plain_walk(
        table: &CuckooTable,
        start: usize,
        index: usize,
        path: &mut Vec<(usize, u64)>,
    ) -> Relocation {
        path.clear();
        let mut bucket = start;
        for _ in 0..MAX_PATH {
            let entry = table.entry(bucket, index, Ordering::Relaxed);
            path.push((bucket, entry.fingerprint()));
            if entry.is_empty() {
                return Relocation::Freed;
            }
            bucket = table.alternate(bucket, entry.fingerprint());
        }
        Relocation::NoRoom
    }

    /// The ninth copy of a key finds both its buckets full of its own fingerprint: each of its
    /// eight chains goes back and forth between the two, and stops after a few steps (it took
    /// 256 before), and the insert is `Full` with the eight copies in place.
    #[test]
    fn the_ninth_copy_of_a_key_stops_its_chains_at_once() {
        use crate::filter::Filter;
        use crate::{LockFreeCuckooFilter, LockedCuckooFilter};
        let hash = crate::hash_key("hot");
        let lock_free = LockFreeCuckooFilter::with_bits(10, 12).unwrap();
        let locked = LockedCuckooFilter::with_bits(10, 12).unwrap();
        let filters: [(&dyn Filter, &CuckooTable); 2] =
            [(&lock_free, &lock_free.table), (&locked, &locked.table)];
        for (filter, table) in filters {
            for _ in 0..8 {
                assert_eq!(filter.insert_hash(hash), Ok(true));
            }
            assert_eq!(filter.insert_hash(hash), Err(crate::Error::Full));
            assert_eq!(filter.len(), 8);
            let place = table.placement(hash);
            let mut path = Vec::new();
            for bucket in [place.primary, place.alternate] {
                for index in 0..ENTRIES_PER_BUCKET {
                    let found = table.relocation_path(bucket, index, &mut path);
                    assert_eq!((found, path.len()), (Relocation::NoRoom, 4));
                }
            }
        }
    }

    /// Sizing takes the fewest buckets that hold `capacity` at [`MAX_LOAD`](super::MAX_LOAD):
    /// `capacity_of(b)` items fit `2^b` buckets and one more needs `2^(b + 1)`, up to the
    /// largest table (sized, not allocated), past which the capacity is an error.
    #[test]
    fn sizing_takes_the_fewest_buckets_that_hold_the_capacity() {
        use crate::filter::Error;
        let bits = |capacity| CuckooTable::parameters_for(capacity, 0.01).map(|(b, _)| b);
        for b in 1..=MAX_BUCKET_BITS {
            let capacity = CuckooTable::capacity_of(b);
            assert_eq!(bits(capacity), Ok(b), "b = {b}");
            if b < MAX_BUCKET_BITS {
                assert_eq!(bits(capacity + 1), Ok(b + 1), "b = {b}");
            } else {
                assert!(matches!(
                    bits(capacity + 1),
                    Err(Error::InvalidParameters(_))
                ));
            }
        }
    }
}
