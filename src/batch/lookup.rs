//! Batch lookups (paper 004 §IV-A): a lookup is one dependent chain of cache misses, so a batch
//! answered one by one waits for memory once per query. Here each query first asks the CPU to
//! prefetch the group of the canonical slot of the query a window ahead, so up to a window of
//! misses are in flight at once and lookups run at the memory's bandwidth rather than its
//! latency. (The paper sorts the queries instead, which gives the same overlap on a GPU's many
//! threads; on a CPU the prefetch window needs no sort.) Chunks of the batch run in parallel.

use crate::filter::Error;
use crate::storage::SlotArray;

use super::par;

/// How many queries ahead the canonical slot's group is prefetched: enough misses in flight to
/// cover the memory latency, few enough that the lines are still cached when their turn comes.
pub(crate) const PREFETCH_DISTANCE: usize = 16;

/// Answers `contains(hashes[i])` into `out[i]` for every `i`, prefetching the group of
/// `canonical(hashes[i + PREFETCH_DISTANCE])` first.
///
/// # Errors
/// [`Error::InvalidParameters`] if the slices differ in length; `out` is then unchanged.
pub(crate) fn contains_batch(
    array: &SlotArray,
    hashes: &[u64],
    out: &mut [bool],
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
    let chunk = hashes.len().div_ceil(par::threads()).max(4096);
    let answer = |(hashes, out): (&[u64], &mut [bool])| {
        for &hash in hashes.iter().take(PREFETCH_DISTANCE) {
            array.prefetch(canonical(hash));
        }
        for (i, answer) in out.iter_mut().enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_DISTANCE) {
                array.prefetch(canonical(ahead));
            }
            *answer = contains(hashes[i]);
        }
    };
    let pieces: Vec<_> = hashes.chunks(chunk).zip(out.chunks_mut(chunk)).collect();
    par::for_each(pieces, answer);
    Ok(())
}
