//! Batch lookups (paper 004 §IV-A): a lookup is one dependent chain of cache misses, so a batch
//! answered one by one waits for memory once per query. Two ways around it, picked by
//! [`BatchLookup`]:
//!
//! * **prefetch**: each query first asks the CPU to prefetch the group of the canonical slot of
//!   the query a window ahead, so up to a window of misses are in flight at once and lookups run
//!   at the memory's bandwidth rather than its latency;
//! * **sorted** (the paper's way): the queries are radix-partitioned by their top hash bits,
//!   which are the quotient's top bits, so they visit the table in order, region by region; the
//!   lines of a region are then reused by the queries that follow, and the prefetch window runs
//!   over the sorted order too. The answers are written back in the caller's order.
//!
//! Each thread takes one contiguous chunk of the batch (and of the answers), so no two threads
//! write the same answer.
//!
//! The same loops serve the cuckoo filters and the Bloom filter ([`BatchTable`] gives each
//! filter's own "what a lookup reads first": a key's two buckets, the words of its bits); their
//! sorted order follows only the primary bucket, or the first bit, of each key.

use std::convert::Infallible;

use crate::bloom::AtomicBloomFilter;
use crate::cuckoo::table::{CuckooTable, ENTRIES_PER_BUCKET};
use crate::filter::Error;
use crate::qf::expandable::ExpandableQf;
use crate::qf::growing::{self, GrowableQf};
use crate::qf::linear_probing::LinearProbingQf;
use crate::qf::table::QfTable;
use crate::qf::two_bit::table::TwoBitTable;

use super::par;

/// How many queries ahead the canonical slot's group is prefetched: enough misses in flight to
/// cover the memory latency, few enough that the lines are still cached when their turn comes.
pub(crate) const PREFETCH_DISTANCE: usize = 16;

/// At most this many top hash bits partition a sorted batch: 4096 buckets, few enough that the
/// scatter's write streams stay cached.
const MAX_BUCKET_BITS: u32 = 12;

/// How a batch lookup orders its queries (paper 004 §IV-A).
///
/// ```
/// use conqf::{BatchLookup, SequentialQf};
/// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
/// let filter = SequentialQf::bulk_build(12, 8, &hashes, Default::default())?;
/// let mut found = vec![false; hashes.len()];
/// filter.contains_batch_with(&hashes, &mut found, BatchLookup::Sorted)?;
/// assert!(found.iter().all(|&f| f));
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BatchLookup {
    /// The order measured fastest on this project's machine at every batch size tried:
    /// [`Prefetch`](BatchLookup::Prefetch). Measured with
    /// `N=16384,131072,1048576,1677721 R=7 T=2 cargo run --release --example bulk_probe`
    /// (2^24 one-byte slots, 70% full, unsuccessful lookups, medians of 7 interleaved runs on 2
    /// busy cores), in Mops/s, prefetch / sorted: 31.9 / 29.8 at 2^14 queries, 33.0 / 40.6 at
    /// 2^17, 18.7 / 18.0 at 2^20, 20.7 / 17.3 at 1.68M; at 2^26 slots, with a first version that
    /// sorted each thread's whole chunk at once, 15.2 / 12.7 (2^20 queries), 16.7 / 11.0 (2^22),
    /// 16.9 / 6.4 (2^24). The prefetch window already overlaps
    /// the misses; sorting adds two passes over the queries and scatters the answers, and the
    /// table (16 MiB) fits this CPU's 32 MiB L3, so there is little locality left to gain.
    /// `Sorted` stays available for machines with less cache or more latency.
    #[default]
    Auto,
    /// In the caller's order, prefetching a window of queries ahead.
    Prefetch,
    /// Radix-partitioned by quotient, a few thousand queries at a time, and read in table order
    /// (with the prefetch window); answers written back in the caller's order.
    Sorted,
}

/// What a batch operation needs of a filter's table: what a hash tells the operation (its
/// [`Key`](Self::Key): a quotient filter's quotient and remainder, or the whole hash for the
/// filters that derive several positions from it), a prefetch of what the operation on a key
/// reads first, and how many slots there are (how finely a sorted batch is partitioned).
pub(crate) trait BatchTable: Sync {
    /// What the operation on one hash needs of it.
    type Key: Copy;
    /// The key of `hash`.
    fn split(&self, hash: u64) -> Self::Key;
    /// Prefetches what an operation on `key` reads first.
    fn prefetch_key(&self, key: Self::Key);
    /// The number of slots.
    fn slot_count(&self) -> usize;
    /// The most consecutive operations of a batch one [`hold`](Self::hold) spans.
    const HOLD_SPAN: usize = usize::MAX;
    /// Runs `span`, a stretch of at most [`HOLD_SPAN`](Self::HOLD_SPAN) consecutive operations
    /// of a batch, with what each operation would otherwise take for itself held once around
    /// it: the growing filters pin their epoch here, so the pins of the operations and
    /// prefetches inside nest in it (a nested pin is a counter increment; a first pin is a
    /// fence). The others hold nothing, and their batches run as one span.
    #[inline(always)]
    fn hold<R>(&self, span: impl FnOnce() -> R) -> R {
        span()
    }
}

/// [`BatchTable::HOLD_SPAN`] of the growing filters: long enough that a pin's cost is spread
/// thin, short enough that their epoch is never held back for long (a pinned thread delays the
/// freeing of replaced tables and the sealing of `ExpandableQf`'s levels).
const GROWING_HOLD_SPAN: usize = 256;

/// [`BatchTable`] for a table with a `fingerprint` split and a `slots` array: the
/// 3-status-bit and the 2-status-bit tables, and the linear probing filter.
macro_rules! batch_table_over_slots {
    ($($table:ty),*) => {$(
        impl BatchTable for $table {
            type Key = (usize, u64);

            fn split(&self, hash: u64) -> (usize, u64) {
                self.fingerprint(hash)
            }

            fn prefetch_key(&self, (quotient, _): (usize, u64)) {
                self.slots.prefetch(quotient);
            }

            fn slot_count(&self) -> usize {
                self.slots.len()
            }
        }
    )*};
}

batch_table_over_slots!(QfTable, TwoBitTable, LinearProbingQf);

/// The cuckoo filters' table: a key's two buckets come from the whole hash.
impl BatchTable for CuckooTable {
    type Key = u64;

    fn split(&self, hash: u64) -> u64 {
        hash
    }

    fn prefetch_key(&self, hash: u64) {
        let place = self.placement(hash);
        for bucket in [place.primary, place.alternate] {
            // A bucket's first and last entries: for widths whose words do not hold a whole
            // number of buckets, a bucket may span two words (and two cache lines).
            let first = bucket * ENTRIES_PER_BUCKET;
            self.entries.prefetch(first);
            self.entries.prefetch(first + ENTRIES_PER_BUCKET - 1);
        }
    }

    fn slot_count(&self) -> usize {
        self.entries.len()
    }
}

/// [`BatchTable`] for the growing filters: a key is the whole hash (the split depends on the
/// table or level it lands in, which may double during the batch), `$prefetch` reads the
/// current table (every level's) under a pin, and a span of the batch is pinned once
/// ([`BatchTable::hold`]).
macro_rules! batch_table_of_growing {
    ($(
        $filter:ty: |$this:ident, $hash:ident, $guard:ident| $prefetch:expr, slots: $slots:expr;
    )*) => {$(
        impl BatchTable for $filter {
            type Key = u64;
            const HOLD_SPAN: usize = GROWING_HOLD_SPAN;

            fn split(&self, hash: u64) -> u64 {
                hash
            }

            fn prefetch_key(&self, $hash: u64) {
                let ($this, $guard) = (self, &growing::pin());
                $prefetch
            }

            fn slot_count(&self) -> usize {
                let $this = self;
                $slots
            }

            fn hold<R>(&self, span: impl FnOnce() -> R) -> R {
                let _pinned = growing::pin();
                span()
            }
        }
    )*};
}

batch_table_of_growing!(
    GrowableQf: |filter, hash, guard| filter.prefetch(hash, guard),
        slots: 1 << filter.quotient_bits();
    ExpandableQf: |filter, hash, guard| filter.prefetch_levels(hash, filter.active(), guard),
        slots: filter.canonical_slots();
);

/// The Bloom filter: a key's bits come from the whole hash.
impl BatchTable for AtomicBloomFilter {
    type Key = u64;

    fn split(&self, hash: u64) -> u64 {
        hash
    }

    fn prefetch_key(&self, hash: u64) {
        self.prefetch(hash);
    }

    fn slot_count(&self) -> usize {
        self.words.len() * 64
    }
}

/// Answers whether each `hashes[i]` is stored in `table` into `out[i]`, in the order `order`
/// picks; `contains(key)` is the filter's own lookup of one hash's key.
///
/// # Errors
/// [`Error::InvalidParameters`] if the slices differ in length; `out` is then unchanged.
pub(crate) fn contains_batch<T: BatchTable>(
    table: &T,
    hashes: &[u64],
    out: &mut [bool],
    order: BatchLookup,
    contains: impl Fn(T::Key) -> bool + Sync,
) -> Result<(), Error> {
    if hashes.len() != out.len() {
        return Err(Error::InvalidParameters(format!(
            "{} hashes but {} answers",
            hashes.len(),
            out.len()
        )));
    }
    let chunk = hashes.len().div_ceil(par::threads()).max(4096);
    let pieces: Vec<_> = hashes.chunks(chunk).zip(out.chunks_mut(chunk)).collect();
    let contains = |hash| contains(table.split(hash));
    par::for_each(pieces, |(hashes, out)| match order {
        BatchLookup::Sorted => sorted(hashes, out, table, &contains),
        BatchLookup::Prefetch | BatchLookup::Auto => prefetched(hashes, out, table, &contains),
    });
    Ok(())
}

/// Calls `visit(i, hashes[i])` for every hash in order, first prefetching what the operation on
/// the hash [`PREFETCH_DISTANCE`] places ahead reads first, so up to a window of cache misses
/// are in flight at once. Stops at the first error.
fn try_each_prefetching<T: BatchTable, E>(
    table: &T,
    hashes: &[u64],
    mut visit: impl FnMut(usize, u64) -> Result<(), E>,
) -> Result<(), E> {
    let mut from = 0;
    while from < hashes.len() {
        let to = hashes.len().min(from.saturating_add(T::HOLD_SPAN));
        table.hold(|| {
            if from == 0 {
                for &hash in hashes.iter().take(PREFETCH_DISTANCE) {
                    prefetch_canonical(table, hash);
                }
            }
            for (offset, &hash) in hashes[from..to].iter().enumerate() {
                let i = from + offset;
                if let Some(&ahead) = hashes.get(i + PREFETCH_DISTANCE) {
                    prefetch_canonical(table, ahead);
                }
                visit(i, hash)?;
            }
            Ok(())
        })?;
        from = to;
    }
    Ok(())
}

/// One chunk in the caller's order, prefetching the canonical group of `hashes[i + window]`.
fn prefetched(
    hashes: &[u64],
    out: &mut [bool],
    table: &impl BatchTable,
    contains: &impl Fn(u64) -> bool,
) {
    let answered = try_each_prefetching(table, hashes, |i, hash| {
        out[i] = contains(hash);
        Ok::<(), Infallible>(())
    });
    let Ok(()) = answered;
}

/// Runs `op` on each hash in order on the calling thread, first prefetching what the operation
/// of the hash [`PREFETCH_DISTANCE`] places ahead reads first, so the cache misses of
/// consecutive operations overlap (the batch writes of a concurrent filter: each write's
/// read-modify-write otherwise waits for its own miss before the next one can start). Returns
/// how many `op`s returned `Ok(true)`; stops at the first error.
pub(crate) fn each_prefetched(
    table: &impl BatchTable,
    hashes: &[u64],
    mut op: impl FnMut(u64) -> Result<bool, Error>,
) -> Result<usize, Error> {
    let mut count = 0;
    try_each_prefetching(table, hashes, |_, hash| {
        count += usize::from(op(hash)?);
        Ok::<(), Error>(())
    })?;
    Ok(count)
}

/// Queries a sorted chunk takes at a time: their answers (and the partition's two arrays)
/// stay in the L2 cache, so writing the answers back in the caller's order costs no misses,
/// and the arrays are allocated once per chunk.
const SORT_BATCH: usize = 1 << 14;

/// One chunk, `SORT_BATCH` queries at a time, each radix-partitioned by the top hash bits (one
/// counting pass, one scatter of the hashes and their positions), then answered in that order
/// with the prefetch window: the table is read in increasing address order, page by page.
fn sorted(
    hashes: &[u64],
    out: &mut [bool],
    table: &impl BatchTable,
    contains: &impl Fn(u64) -> bool,
) {
    let batch = hashes.len().min(SORT_BATCH);
    // A bucket per few queries, and no finer than the table's slots.
    let bucket_bits = batch
        .max(2)
        .ilog2()
        .saturating_sub(2)
        .clamp(1, MAX_BUCKET_BITS)
        .min(table.slot_count().max(2).ilog2());
    let shift = 64 - bucket_bits;
    let mut next = vec![0u32; (1 << bucket_bits) + 1];
    let mut sorted = vec![0u64; batch];
    let mut position = vec![0u32; batch];
    for (hashes, out) in hashes.chunks(SORT_BATCH).zip(out.chunks_mut(SORT_BATCH)) {
        next.fill(0);
        for &hash in hashes {
            next[(hash >> shift) as usize + 1] += 1;
        }
        for b in 1..next.len() {
            next[b] += next[b - 1];
        }
        for (i, &hash) in hashes.iter().enumerate() {
            let bucket = (hash >> shift) as usize;
            let at = next[bucket] as usize;
            sorted[at] = hash;
            // Below `SORT_BATCH`, so it fits.
            position[at] = i as u32;
            next[bucket] += 1;
        }
        let answered = try_each_prefetching(table, &sorted[..hashes.len()], |j, hash| {
            out[position[j] as usize] = contains(hash);
            Ok::<(), Infallible>(())
        });
        let Ok(()) = answered;
    }
}

/// Prefetches what an operation on `hash` reads first.
#[inline]
fn prefetch_canonical(table: &impl BatchTable, hash: u64) {
    table.prefetch_key(table.split(hash));
}
