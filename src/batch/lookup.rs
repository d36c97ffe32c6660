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

use crate::filter::Error;
use crate::storage::SlotArray;

use super::par;

/// How many queries ahead the canonical slot's group is prefetched: enough misses in flight to
/// cover the memory latency, few enough that the lines are still cached when their turn comes.
pub(crate) const PREFETCH_DISTANCE: usize = 16;

/// At most this many top hash bits partition a sorted chunk: 4096 buckets, each a table region
/// of a page or so at 2^24 slots, few enough that the scatter's write streams stay cached.
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
    /// [`Sorted`](BatchLookup::Sorted) for batches dense enough in the table, else
    /// [`Prefetch`](BatchLookup::Prefetch); see [`BatchLookup::choose`].
    #[default]
    Auto,
    /// In the caller's order, prefetching a window of queries ahead.
    Prefetch,
    /// Radix-partitioned by quotient, read in table order (with the prefetch window), answers
    /// written back in the caller's order.
    Sorted,
}

impl BatchLookup {
    /// The order [`Auto`](BatchLookup::Auto) picks for `batch` queries on a table of `bytes`
    /// bytes split over `threads` threads: sorted once every thread's share of the batch has at
    /// least one query per 8 cache lines of the table, so that the partition brings queries
    /// of the same lines together; prefetched otherwise (sorting a sparse batch only adds a
    /// pass).
    pub fn choose(batch: usize, bytes: usize, threads: usize) -> BatchLookup {
        let lines = bytes / 64;
        if batch / threads.max(1) >= lines / 8 {
            BatchLookup::Sorted
        } else {
            BatchLookup::Prefetch
        }
    }
}

/// Answers `contains(hashes[i])` into `out[i]` for every `i`, in the order `order` picks.
///
/// # Errors
/// [`Error::InvalidParameters`] if the slices differ in length; `out` is then unchanged.
pub(crate) fn contains_batch(
    array: &SlotArray,
    hashes: &[u64],
    out: &mut [bool],
    order: BatchLookup,
    canonical: impl Fn(u64) -> usize + Sync,
    contains: impl Fn(u64) -> bool + Sync,
) -> Result<(), Error> {
    if hashes.len() != out.len() {
        return Err(Error::InvalidParameters(format!(
            "{} hashes but {} answers",
            hashes.len(),
            out.len()
        )));
    }
    let threads = par::threads();
    let order = match order {
        BatchLookup::Auto => BatchLookup::choose(hashes.len(), array.memory_bytes(), threads),
        chosen => chosen,
    };
    let chunk = hashes.len().div_ceil(threads).clamp(4096, 1 << 31);
    let pieces: Vec<_> = hashes.chunks(chunk).zip(out.chunks_mut(chunk)).collect();
    let slots = array.len();
    par::for_each(pieces, |(hashes, out)| match order {
        BatchLookup::Sorted => sorted(hashes, out, slots, array, &canonical, &contains),
        _ => prefetched(hashes, out, array, &canonical, &contains),
    });
    Ok(())
}

/// One chunk in the caller's order, prefetching the group of `canonical(hashes[i + window])`.
fn prefetched(
    hashes: &[u64],
    out: &mut [bool],
    array: &SlotArray,
    canonical: &impl Fn(u64) -> usize,
    contains: &impl Fn(u64) -> bool,
) {
    for &hash in hashes.iter().take(PREFETCH_DISTANCE) {
        array.prefetch(canonical(hash));
    }
    for (i, answer) in out.iter_mut().enumerate() {
        if let Some(&ahead) = hashes.get(i + PREFETCH_DISTANCE) {
            array.prefetch(canonical(ahead));
        }
        *answer = contains(hashes[i]);
    }
}

/// One chunk radix-partitioned by the top hash bits (one counting pass, one scatter of the
/// hashes and their positions), then answered in that order with the prefetch window.
fn sorted(
    hashes: &[u64],
    out: &mut [bool],
    slots: usize,
    array: &SlotArray,
    canonical: &impl Fn(u64) -> usize,
    contains: &impl Fn(u64) -> bool,
) {
    let n = hashes.len();
    // A bucket per few queries, and no finer than the table's slots.
    let bucket_bits = n
        .max(2)
        .ilog2()
        .saturating_sub(2)
        .clamp(1, MAX_BUCKET_BITS)
        .min(slots.max(2).ilog2());
    let shift = 64 - bucket_bits;
    let mut next = vec![0u32; (1 << bucket_bits) + 1];
    for &hash in hashes {
        next[(hash >> shift) as usize + 1] += 1;
    }
    for b in 1..next.len() {
        next[b] += next[b - 1];
    }
    let mut sorted = vec![0u64; n];
    let mut position = vec![0u32; n];
    for (i, &hash) in hashes.iter().enumerate() {
        let bucket = (hash >> shift) as usize;
        let at = next[bucket] as usize;
        sorted[at] = hash;
        // A chunk is far below 2^32 queries (see `contains_batch`'s chunking).
        position[at] = i as u32;
        next[bucket] += 1;
    }
    for &hash in sorted.iter().take(PREFETCH_DISTANCE) {
        array.prefetch(canonical(hash));
    }
    for (j, (&hash, &i)) in sorted.iter().zip(&position).enumerate() {
        if let Some(&ahead) = sorted.get(j + PREFETCH_DISTANCE) {
            array.prefetch(canonical(ahead));
        }
        out[i as usize] = contains(hash);
    }
}
