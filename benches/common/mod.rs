//! Shared by `benches/*.rs` and `examples/figures.rs` (included with `#[path]`): the papers'
//! parameters and scales, prehashed keys, the physical limits (independent random 8-byte reads
//! and a dependent pointer chase over an array of the filter's size), adapters that give
//! `SequentialQf` and the `qfilter` crate one single-threaded interface, a `Mutex` wrapper that
//! turns either into a `conqf::Filter`, and the multi-threaded driver of paper 000 Figure 2,
//! written once, generically over `conqf::Filter`.
//!
//! Every timed loop here works on hashes computed beforehand, so it measures the tables, not the
//! hash function.
#![allow(dead_code)]

pub(crate) mod bulk;
pub(crate) mod fig4;

use std::hint::black_box;
use std::sync::{Barrier, Mutex, PoisonError};
use std::time::{Duration, Instant};

use conqf::{hash_key, Error, Filter, Remove, SequentialQf};

pub(crate) mod cuckoo_lookup;
pub(crate) mod cuckoo_mix;
pub(crate) mod removes;

/// Remainder bits of the paper's quotient filters (paper 000 §5: r = 10).
pub(crate) const REMAINDER_BITS: u32 = 10;

/// The fill degree of paper 000 Figure 2: the table is filled to 72% of its `2^q` slots.
pub(crate) const FIG2_FILL: f64 = 0.72;

/// Where the positive keys start; negative keys start at [`NEGATIVE_KEYS`], far from them.
pub(crate) const POSITIVE_KEYS: u64 = 0;

/// The first negative key: no positive key of any scale reaches it.
pub(crate) const NEGATIVE_KEYS: u64 = 1 << 62;

/// How big the experiments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Seconds: a smoke run (2^16 slots, one repetition).
    Quick,
    /// Well under five minutes on two cores (2^22 slots, three repetitions).
    Default,
    /// The papers' sizes (2^25 slots, about 24M keys at 72% fill, five repetitions).
    Paper,
}

impl Scale {
    /// Parses `quick`, `default` or `paper`.
    pub(crate) fn parse(text: &str) -> Option<Scale> {
        match text {
            "quick" => Some(Scale::Quick),
            "default" => Some(Scale::Default),
            "paper" => Some(Scale::Paper),
            _ => None,
        }
    }

    /// The scale named by the `CONQF_SCALE` environment variable, `Default` if it is unset.
    ///
    /// # Errors
    /// A message if the variable is set to anything else than the three names.
    pub(crate) fn from_env() -> Result<Scale, String> {
        match std::env::var("CONQF_SCALE") {
            Err(std::env::VarError::NotPresent) => Ok(Scale::Default),
            Ok(text) => Scale::parse(&text)
                .ok_or_else(|| format!("CONQF_SCALE={text:?} is not one of quick, default, paper")),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err("CONQF_SCALE is not valid UTF-8".to_string())
            }
        }
    }

    /// The scale's name, as `parse` takes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Default => "default",
            Scale::Paper => "paper",
        }
    }

    /// Quotient bits `q`: the tables have `2^q` slots.
    pub(crate) fn quotient_bits(self) -> u32 {
        match self {
            Scale::Quick => 16,
            Scale::Default => 22,
            Scale::Paper => 25,
        }
    }

    /// How often each measurement is repeated (the median is reported).
    pub(crate) fn repetitions(self) -> usize {
        match self {
            Scale::Quick => 1,
            Scale::Default => 3,
            Scale::Paper => 5,
        }
    }
}

/// The thread counts from `CONQF_THREADS` (comma-separated), else `1..=available_parallelism`.
pub(crate) fn thread_counts() -> Vec<usize> {
    match std::env::var("CONQF_THREADS") {
        Ok(text) => text
            .split(',')
            .map(|part| match part.trim().parse::<usize>() {
                Ok(threads) if threads > 0 => threads,
                _ => panic!("CONQF_THREADS={text:?}: expected positive integers like 1,2,4"),
            })
            .collect(),
        Err(_) => {
            let available = std::thread::available_parallelism().map_or(1, |n| n.get());
            (1..=available).collect()
        }
    }
}

/// How many keys fill `2^q` slots to `fill`.
pub(crate) fn items_at(quotient_bits: u32, fill: f64) -> usize {
    ((1u64 << quotient_bits) as f64 * fill) as usize
}

/// The hashes of the `u64` keys `start..start + count`, with the crate's own `hash_key`.
pub(crate) fn key_hashes(start: u64, count: usize) -> Vec<u64> {
    (start..start + count as u64)
        .map(|key| hash_key(&key))
        .collect()
}

/// The `qfilter` peer sized like a `SequentialQf::with_bits(q, r)` at 72% fill: room for the same
/// number of items (`0.72 * 2^q`, which `qfilter` rounds to the same `2^q` slots) at the
/// false-positive rate our filter is expected to have there, `0.72 * 2^-r`. `qfilter` reads that
/// rate as a bound at its own maximum fill (95%), so it picks `r + 1` remainder bits: with its
/// 2.125 metadata bits per slot that is about the memory of our `r + 3`-bit slots, at half the
/// false-positive rate. Both numbers are printed beside every measurement.
pub(crate) fn qfilter_like(quotient_bits: u32, remainder_bits: u32) -> qfilter::Filter {
    let items = items_at(quotient_bits, FIG2_FILL) as u64;
    let fpr = FIG2_FILL * (-(remainder_bits as f64)).exp2();
    qfilter::Filter::new(items, fpr).expect("qfilter accepts the paper's sizes")
}

/// A cheap random number generator (xorshift64*): enough to pick independent array indices.
#[derive(Debug, Clone)]
pub(crate) struct Xorshift(u64);

impl Xorshift {
    /// A generator from any seed (zero is mapped to a fixed non-zero state).
    pub(crate) fn new(seed: u64) -> Self {
        Xorshift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform index below `len`, without a division (multiply-high).
    #[inline]
    pub(crate) fn below(&mut self, len: usize) -> usize {
        ((u128::from(self.next_u64()) * len as u128) >> 64) as usize
    }
}

/// An array of 8-byte words as large as a filter's table: the physical limit of a lookup.
///
/// The words are filled with non-zero values on purpose: a zeroed allocation maps every page to
/// the kernel's shared zero page, and reads of it would all hit in the cache.
pub(crate) struct ReadArray {
    words: Vec<u64>,
}

impl ReadArray {
    /// An array of `bytes` bytes (at least one word) for independent random reads.
    pub(crate) fn new(bytes: usize) -> Self {
        let mut rng = Xorshift::new(0x5EED);
        ReadArray {
            words: (0..(bytes / 8).max(1))
                .map(|_| rng.next_u64() | 1)
                .collect(),
        }
    }

    /// An array of `bytes` bytes holding one random cycle through all its words (Sattolo's
    /// algorithm), for the dependent pointer chase.
    pub(crate) fn cycle(bytes: usize) -> Self {
        let len = (bytes / 8).max(1);
        let mut order: Vec<u64> = (0..len as u64).collect();
        let mut rng = Xorshift::new(0xC4A5E);
        for i in (1..len).rev() {
            let j = rng.below(i);
            order.swap(i, j);
        }
        // `order` is now a single cycle read as a permutation: word i points to order[i].
        ReadArray { words: order }
    }

    /// Reads every word once in order, so the array is as warm in the caches as a filter table
    /// that was just filled (returns the sum, for `black_box`).
    pub(crate) fn warm(&self) -> u64 {
        self.words
            .iter()
            .fold(0u64, |sum, &word| sum.wrapping_add(word))
    }

    /// Bytes of the array.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// `count` independent random 8-byte reads: each index comes from the generator, never from
    /// a value read, so the processor may overlap as many misses as it can. Returns the sum of the
    /// words read, which callers pass to `black_box` so the reads cannot be elided.
    #[inline(never)]
    pub(crate) fn random_reads(&self, rng: &mut Xorshift, count: usize) -> u64 {
        let words = &self.words[..];
        let mut sum = 0u64;
        for _ in 0..count {
            sum = sum.wrapping_add(words[rng.below(words.len())]);
        }
        sum
    }

    /// `count` dependent reads along the cycle built by [`cycle`](Self::cycle), starting at
    /// word `start`: each index is the value just read, so the misses cannot overlap. Returns
    /// the last index.
    #[inline(never)]
    pub(crate) fn chase(&self, start: usize, count: usize) -> usize {
        let words = &self.words[..];
        let mut at = start % words.len();
        for _ in 0..count {
            at = words[at] as usize;
        }
        at
    }
}

/// An array of atomic 8-byte words as large as a filter's table: the physical limit of an
/// insert's write. Each of [`random_rmws`](Self::random_rmws) is a `fetch_or` of one bit into
/// a random word, the read-modify-write an `AtomicBloomFilter` insert makes four of and a
/// quotient filter's insert one or more. Its rate on two threads against one says what the
/// machine lets concurrent writes to random memory make at that moment: on this project's VM
/// it came and went between about 2x and 1x for minutes at a time, while random reads kept
/// scaling (performance history, 2026-12-01).
pub(crate) struct RmwArray {
    words: Vec<std::sync::atomic::AtomicU64>,
}

impl RmwArray {
    /// An array of `bytes` bytes (at least one word), its words written once (not a zero page).
    pub(crate) fn new(bytes: usize) -> Self {
        let mut rng = Xorshift::new(0xB175);
        RmwArray {
            words: (0..(bytes / 8).max(1))
                .map(|_| std::sync::atomic::AtomicU64::new(rng.next_u64() & 1))
                .collect(),
        }
    }

    /// `count` independent random read-modify-writes (`fetch_or` of a random bit, `Relaxed`:
    /// an `AcqRel` one compiles to the same `lock or` on x86). Returns the last word's old
    /// value, for `black_box`.
    #[inline(never)]
    pub(crate) fn random_rmws(&self, rng: &mut Xorshift, count: usize) -> u64 {
        let words = &self.words[..];
        let mut last = 0;
        for _ in 0..count {
            let bits = rng.next_u64();
            let word = &words[(bits % words.len() as u64) as usize];
            last = word.fetch_or(1 << (bits >> 58), std::sync::atomic::Ordering::Relaxed);
        }
        last
    }
}

/// `count` independent random read-modify-writes split over `threads` threads, over `array`.
pub(crate) fn parallel_random_rmws(array: &RmwArray, count: usize, threads: usize) -> Duration {
    split_random_accesses(count, threads, 0xFACE, |rng, n| array.random_rmws(rng, n))
}

/// One interface over the single-threaded tables, so the sequential experiments are written
/// once for `SequentialQf` and `qfilter`. The names differ from the inherent methods on purpose.
pub(crate) trait SeqTable: Send + 'static {
    /// Inserts a prehashed key; `Err` only when the table is full.
    fn table_insert(&mut self, hash: u64) -> Result<bool, Error>;
    /// Looks a prehashed key up.
    fn table_contains(&self, hash: u64) -> bool;
    /// Stored fingerprints.
    fn table_len(&self) -> usize;
    /// Items that fit at the table's maximum fill.
    fn table_capacity(&self) -> usize;
    /// Bytes of the table.
    fn table_bytes(&self) -> usize;
    /// The table's own estimate of its false-positive rate now.
    fn table_fpr(&self) -> f64;
}

impl SeqTable for SequentialQf {
    #[inline]
    fn table_insert(&mut self, hash: u64) -> Result<bool, Error> {
        self.insert_hash(hash)
    }
    #[inline]
    fn table_contains(&self, hash: u64) -> bool {
        self.contains_hash(hash)
    }
    fn table_len(&self) -> usize {
        self.len()
    }
    fn table_capacity(&self) -> usize {
        self.capacity()
    }
    fn table_bytes(&self) -> usize {
        self.memory_bytes()
    }
    fn table_fpr(&self) -> f64 {
        self.false_positive_rate()
    }
}

/// Removal for the single-threaded tables that have it (the quotient filters and `qfilter`).
pub(crate) trait SeqRemove {
    /// Removes one copy of a prehashed key; whether there was one.
    fn table_remove(&mut self, hash: u64) -> bool;
}

impl SeqRemove for SequentialQf {
    #[inline]
    fn table_remove(&mut self, hash: u64) -> bool {
        // A `SequentialQf` removal has no failure other than an absent key.
        self.remove_hash(hash).unwrap_or(false)
    }
}

impl SeqRemove for qfilter::Filter {
    #[inline]
    fn table_remove(&mut self, hash: u64) -> bool {
        self.remove_fingerprint(hash)
    }
}

impl<F: Remove + 'static> SeqRemove for Direct<F> {
    #[inline]
    fn table_remove(&mut self, hash: u64) -> bool {
        self.0.remove_hash(hash).unwrap_or(false)
    }
}

/// `qfilter` takes a 64-bit hash directly (`*_fingerprint` methods use its low bits), so it gets
/// the same xxh3 hashes as our filters and hashing stays out of both timed loops.
impl SeqTable for qfilter::Filter {
    #[inline]
    fn table_insert(&mut self, hash: u64) -> Result<bool, Error> {
        self.insert_fingerprint(false, hash)
            .map_err(|_| Error::Full)
    }
    #[inline]
    fn table_contains(&self, hash: u64) -> bool {
        self.contains_fingerprint(hash)
    }
    fn table_len(&self) -> usize {
        self.len() as usize
    }
    fn table_capacity(&self) -> usize {
        self.capacity() as usize
    }
    fn table_bytes(&self) -> usize {
        self.memory_usage()
    }
    fn table_fpr(&self) -> f64 {
        self.current_error_ratio()
    }
}

/// A single-threaded table behind one global `Mutex`: the simplest correct concurrent filter,
/// and how `qfilter` joins the thread-scaling figure.
pub(crate) struct Locked<T>(Mutex<T>);

impl<T: SeqTable> Locked<T> {
    /// Wraps a table.
    pub(crate) fn new(table: T) -> Self {
        Locked(Mutex::new(table))
    }

    fn table(&self) -> std::sync::MutexGuard<'_, T> {
        // A panic while holding the lock is already reported by the thread that panicked; the
        // measurement goes on with whatever the table holds.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: SeqTable> Filter for Locked<T> {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        self.table().table_insert(hash)
    }
    fn contains_hash(&self, hash: u64) -> bool {
        self.table().table_contains(hash)
    }
    fn len(&self) -> usize {
        self.table().table_len()
    }
    fn capacity(&self) -> usize {
        self.table().table_capacity()
    }
    fn memory_bytes(&self) -> usize {
        self.table().table_bytes()
    }
    fn false_positive_rate(&self) -> f64 {
        self.table().table_fpr()
    }
}

impl<T: SeqTable + SeqRemove> Remove for Locked<T> {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        Ok(self.table().table_remove(hash))
    }
}

/// A concurrent filter called from one thread through the single-threaded interface, so the
/// sequential experiments (paper 000 Figure 3) take the concurrent filters too.
pub(crate) struct Direct<F>(pub(crate) F);

impl<F: Filter + 'static> SeqTable for Direct<F> {
    #[inline]
    fn table_insert(&mut self, hash: u64) -> Result<bool, Error> {
        self.0.insert_hash(hash)
    }
    #[inline]
    fn table_contains(&self, hash: u64) -> bool {
        self.0.contains_hash(hash)
    }
    fn table_len(&self) -> usize {
        self.0.len()
    }
    fn table_capacity(&self) -> usize {
        self.0.capacity()
    }
    fn table_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
    fn table_fpr(&self) -> f64 {
        self.0.false_positive_rate()
    }
}

/// The `fastbloom` crate's concurrent Bloom filter (`fastbloom::AtomicBloomFilter`, one
/// `fetch_or` per bit), the Bloom filter users reach for, as a `conqf::Filter` peer.
///
/// It takes our 64-bit xxh3 hashes directly (`insert_hash`, `contains_hash` derive its `k` bit
/// positions from them), so hashing stays out of the timed loops as for every other filter.
/// It keeps no item count (a shared counter would be a contended write on every insert), so
/// [`len`](Filter::len) estimates the number of distinct keys from the bits set, `X` of `m`:
/// `n = -(m / k) ln(1 - X / m)` (Swamidass and Baldi), which is what bits per item is computed
/// from. It is read only after the fill, when it costs one pass over the table.
pub(crate) struct FastBloom(fastbloom::AtomicBloomFilter);

impl FastBloom {
    /// A filter of `bytes` bytes (whole 64-bit words, at least one) with `hash_functions` hash
    /// functions: the same memory and `k` as `conqf::AtomicBloomFilter::with_memory`.
    pub(crate) fn with_memory(bytes: usize, hash_functions: u32) -> Self {
        let bits = (bytes / 8).max(1) * 64;
        FastBloom(fastbloom::AtomicBloomFilter::with_num_bits(bits).hashes(hash_functions))
    }

    /// Hash functions per key.
    pub(crate) fn hash_functions(&self) -> u32 {
        self.0.num_hashes()
    }
}

impl Filter for FastBloom {
    #[inline]
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        // `fastbloom` answers whether every bit was already set.
        Ok(!self.0.insert_hash(hash))
    }
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.0.contains_hash(hash)
    }
    fn len(&self) -> usize {
        let m = self.0.num_bits() as f64;
        let set: u64 = self.0.iter().map(|word| u64::from(word.count_ones())).sum();
        let k = f64::from(self.0.num_hashes());
        let estimate = -(m / k) * (-(set as f64) / m).ln_1p();
        if estimate.is_finite() {
            estimate.round() as usize
        } else {
            usize::MAX
        }
    }
    fn capacity(&self) -> usize {
        // As `conqf::AtomicBloomFilter`: where `k` is the optimal count, half the bits set.
        (self.0.num_bits() as f64 * std::f64::consts::LN_2 / f64::from(self.0.num_hashes()))
            as usize
    }
    fn memory_bytes(&self) -> usize {
        self.0.num_bits() / 8
    }
    fn false_positive_rate(&self) -> f64 {
        self.0.expected_false_pos(self.len())
    }
}

/// The `index`-th of `parts` nearly equal contiguous pieces of `items`.
pub(crate) fn piece<T>(items: &[T], index: usize, parts: usize) -> &[T] {
    let start = items.len() * index / parts;
    let end = items.len() * (index + 1) / parts;
    &items[start..end]
}

/// Runs `work(i)` on `threads` threads at once and returns the wall time from the first thread's
/// start to the last thread's end, together with their results in thread order.
///
/// The threads wait at a barrier, so thread start-up is not timed, and each one reads the clock
/// itself: the spawning thread may be descheduled (with as many workers as cores), so its own
/// clock readings would not bracket the work.
pub(crate) fn parallel<R: Send>(
    threads: usize,
    work: impl Fn(usize) -> R + Sync,
) -> (Duration, Vec<R>) {
    let threads = threads.max(1);
    let ready = Barrier::new(threads);
    let spans: Vec<(Instant, Instant, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (ready, work) = (&ready, &work);
                scope.spawn(move || {
                    ready.wait();
                    let start = Instant::now();
                    let result = work(index);
                    (start, Instant::now(), result)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a benchmark thread panicked"))
            .collect()
    });
    let first_start = spans.iter().map(|span| span.0).min();
    let last_end = spans.iter().map(|span| span.1).max();
    let elapsed = match (first_start, last_end) {
        (Some(start), Some(end)) => end.saturating_duration_since(start),
        _ => Duration::ZERO,
    };
    (elapsed, spans.into_iter().map(|span| span.2).collect())
}

/// Inserts every hash; returns how many inserts failed (`Full`).
#[inline(never)]
pub(crate) fn insert_all<F: Filter + ?Sized>(filter: &F, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| filter.insert_hash(hash).is_err())
        .count()
}

/// Looks every hash up; returns how many were found.
#[inline(never)]
pub(crate) fn count_hits<F: Filter + ?Sized>(filter: &F, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| filter.contains_hash(black_box(hash)))
        .count()
}

/// Inserts every hash into a single-threaded table; returns how many inserts failed.
#[inline(never)]
pub(crate) fn table_insert_all<T: SeqTable>(table: &mut T, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| table.table_insert(hash).is_err())
        .count()
}

/// Removes every hash; returns how many removals found nothing.
#[inline(never)]
pub(crate) fn remove_all<F: Remove + ?Sized>(filter: &F, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| filter.remove_hash(hash) != Ok(true))
        .count()
}

/// Removes every hash from a single-threaded table; returns how many were not found.
#[inline(never)]
pub(crate) fn table_remove_all<T: SeqRemove>(table: &mut T, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| !table.table_remove(hash))
        .count()
}

/// Looks every hash up in a single-threaded table; returns how many were found.
#[inline(never)]
pub(crate) fn table_count_hits<T: SeqTable>(table: &T, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| table.table_contains(black_box(hash)))
        .count()
}

/// What one run of the Figure 2 workload measured: fill to 72%, then unsuccessful and successful
/// lookups.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fig2Run {
    /// Wall time of the fill.
    pub(crate) insert: Duration,
    /// Wall time of the lookups of keys never inserted.
    pub(crate) negative: Duration,
    /// Wall time of the lookups of the inserted keys.
    pub(crate) positive: Duration,
    /// Inserts that returned an error.
    pub(crate) failed_inserts: usize,
    /// Negative lookups that answered `true`.
    pub(crate) false_positives: usize,
    /// Positive lookups that answered `false` (a bug unless the insert failed).
    pub(crate) false_negatives: usize,
    /// Bytes of the filled table.
    pub(crate) bytes: usize,
    /// Fingerprints stored after the fill.
    pub(crate) len: usize,
}

/// The Figure 2 workload with `threads` threads on any concurrent filter: each thread inserts
/// its own contiguous piece of `positives`, then looks up its piece of `negatives`, then of
/// `positives`.
pub(crate) fn fig2_concurrent<F: Filter>(
    filter: &F,
    positives: &[u64],
    negatives: &[u64],
    threads: usize,
) -> Fig2Run {
    let (insert, failed) = parallel(threads, |i| {
        insert_all(filter, piece(positives, i, threads))
    });
    let (negative, false_positives) = parallel(threads, |i| {
        count_hits(filter, piece(negatives, i, threads))
    });
    let (positive, hits) = parallel(threads, |i| {
        count_hits(filter, piece(positives, i, threads))
    });
    let hits: usize = hits.iter().sum();
    Fig2Run {
        insert,
        negative,
        positive,
        failed_inserts: failed.iter().sum(),
        false_positives: false_positives.iter().sum(),
        false_negatives: positives.len() - hits,
        bytes: filter.memory_bytes(),
        len: filter.len(),
    }
}

/// The Figure 2 workload on one thread, calling a single-threaded table directly (no lock, no
/// thread): the baseline every speedup is measured against.
pub(crate) fn fig2_sequential<T: SeqTable>(
    table: &mut T,
    positives: &[u64],
    negatives: &[u64],
) -> Fig2Run {
    let start = Instant::now();
    let failed_inserts = table_insert_all(table, positives);
    let insert = start.elapsed();
    let start = Instant::now();
    let false_positives = table_count_hits(table, negatives);
    let negative = start.elapsed();
    let start = Instant::now();
    let hits = table_count_hits(table, positives);
    let positive = start.elapsed();
    Fig2Run {
        insert,
        negative,
        positive,
        failed_inserts,
        false_positives,
        false_negatives: positives.len() - hits,
        bytes: table.table_bytes(),
        len: table.table_len(),
    }
}

/// `count` independent random reads split over `threads` threads, over `array`.
pub(crate) fn parallel_random_reads(array: &ReadArray, count: usize, threads: usize) -> Duration {
    split_random_accesses(count, threads, 0xABCD, |rng, n| array.random_reads(rng, n))
}

/// `count` random accesses split over `threads` threads, each running `access(rng, n)` for its
/// share `n` with a generator seeded from `seed` and its index; the results go to `black_box`.
fn split_random_accesses(
    count: usize,
    threads: usize,
    seed: u64,
    access: impl Fn(&mut Xorshift, usize) -> u64 + Sync,
) -> Duration {
    let (elapsed, results) = parallel(threads, |i| {
        let mut rng = Xorshift::new(seed ^ ((i as u64 + 1) << 32));
        access(&mut rng, count * (i + 1) / threads - count * i / threads)
    });
    black_box(results);
    elapsed
}

/// Operations per second.
pub(crate) fn per_second(ops: usize, time: Duration) -> f64 {
    ops as f64 / time.as_secs_f64().max(1e-9)
}

/// The median of some durations (the upper one of the middle two for an even count).
pub(crate) fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// The median of `repetitions` timed runs of `run`.
pub(crate) fn median_of(repetitions: usize, run: impl FnMut() -> Duration) -> Duration {
    median(std::iter::repeat_with(run).take(repetitions).collect())
}
