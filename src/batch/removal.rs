//! Batch removals a cluster at a time (paper 004 §IV-D, on CPU threads).
//!
//! A removal moves only the elements after it, left, up to the end of its cluster (the next
//! empty slot or cluster start), so clusters are independent regions, as in the paper's
//! supercluster deletes. On the GPU a thread per element removes one element per region in each
//! round, and the regions are labelled again between rounds, so a batch takes as many rounds as
//! the most removals one region gets. A CPU thread instead takes every key of the batch that
//! falls in a cluster at once. Where the batch removes at least one key per
//! [`ONE_BY_ONE_SLOTS`] slots of the cluster, it reads the cluster's fingerprints in order,
//! drops the removed ones and writes the rest back where the bulk build would put them
//! (`max(previous + 1, quotient)`, see [`layout`](super::layout)): one pass however many keys
//! go. From a cluster with fewer, it removes the keys one at a time, as `remove_hash` does (each
//! a walk and a shift a group at a time, cheaper than decoding and writing every slot).
//!
//! The sorted batch is cut into one chunk per thread, and the cuts are moved so that no cluster
//! has keys in two chunks ([`chunks`]). Neighbouring chunks may still write clusters that share
//! a 64-bit group, so when there are several chunks each group is published with a
//! compare-and-swap that keeps the other lanes ([`Guarded`]); a lone chunk stores it
//! ([`Exclusive`]).

use std::ops::Range;

use crate::hash::low_mask;
use crate::qf::scan::Fingerprints;
use crate::qf::slot::{Slot, OCCUPIED};
use crate::qf::table::QfTable;
use crate::qf::walk::{self, slot_at};
use crate::storage::{Commit, Exclusive, Guarded, Rewriter, SlotArray};
use crate::sync::Ordering;

use super::par;

/// A cluster is rewritten whole when the batch removes at least one key per this many of its
/// slots, and its keys are removed one by one otherwise: a removal walks and shifts a group at a
/// time, where the rewrite decodes and writes every slot. In the cases of the performance
/// history's entry on one thread (`2^14` to `2^22` slots, 72% to 95% full, one cluster of
/// 8,000 keys; a build that still found a cluster's keys by binary search), 4 and 8 measured
/// alike and within 6% of the best value in each; 1 (almost always one by one) was up to 65
/// times slower on dense clusters (16.84 against 0.26 ms), and rewriting every cluster 1.8
/// times slower where the batch took one key in twenty (66.79 against 36.15 ms).
const ONE_BY_ONE_SLOTS: usize = 8;

/// Removes sorted, distinct fingerprint keys from `table`. Returns how many were stored (and
/// are now removed).
pub(crate) fn remove(table: &mut QfTable, keys: &[u64]) -> usize {
    let chunk = par::chunk_len(keys.len(), par::MIN_PARALLEL / 4);
    remove_in_chunks(table, keys, chunk, ONE_BY_ONE_SLOTS)
}

/// [`remove`] with the batch cut into chunks of about `chunk` keys, each swept by a thread of
/// its own, and the clusters with fewer than one key per `one_by_one_slots` slots removed from
/// one key at a time.
pub(crate) fn remove_in_chunks(
    table: &mut QfTable,
    keys: &[u64],
    chunk: usize,
    one_by_one_slots: usize,
) -> usize {
    let table = &*table;
    let chunks = chunks(table, keys, chunk);
    if chunks.len() == 1 {
        return sweep(table, keys, chunks[0].clone(), one_by_one_slots, Exclusive);
    }
    par::map(&chunks, |range| {
        sweep_beside_others(table, keys, range.clone(), one_by_one_slots)
    })
    .into_iter()
    .sum()
}

/// The cluster that holds slot `index`, as `start..end` (`end` is the next empty slot or
/// cluster start); `None` if the slot is empty, where no fingerprint has its canonical slot.
fn cluster_of(array: &SlotArray, index: usize) -> Option<Range<usize>> {
    // Relaxed: the caller holds `&mut` to the table, or (the sweeps) reads a cluster no other
    // thread writes while it runs, and the slot after it: a cluster start or an empty slot,
    // whose continuation and shifted bits stay clear whatever the neighbouring sweep removes
    // (its start stays where it is or becomes empty), so it ends the cluster either way.
    let mut cursor = array.cursor(index, Ordering::Relaxed);
    if slot_at(&cursor).is_empty() {
        return None;
    }
    let mut back = cursor.clone();
    walk::back_to_cluster_start(&mut back)?;
    let last = walk::cluster_end(&mut cursor)?;
    Some(back.index()..last + 1)
}

/// Cuts the sorted `keys` into ranges of about `chunk` keys, moving each cut past the keys of
/// the cluster the key before it falls in, so that every cluster's keys lie in one range (a
/// cluster belongs to the range of the first key whose canonical slot it holds).
pub(crate) fn chunks(table: &QfTable, keys: &[u64], chunk: usize) -> Vec<Range<usize>> {
    let r = table.remainder_bits;
    let quotient = |i: usize| (keys[i] >> r) as usize;
    let mut cuts = vec![0];
    let mut cut = chunk.max(1);
    while cut < keys.len() {
        // The cluster of the slot of the key before the cut also holds the key at the cut:
        // the cut moves to the first key past that cluster.
        let shared = cluster_of(&table.slots, quotient(cut - 1))
            .filter(|cluster| cluster.contains(&quotient(cut)));
        if let Some(cluster) = shared {
            cut += keys[cut..].partition_point(|&key| ((key >> r) as usize) < cluster.end);
        }
        if cut < keys.len() {
            cuts.push(cut);
        }
        cut += chunk.max(1);
    }
    cuts.push(keys.len());
    cuts.windows(2).map(|pair| pair[0]..pair[1]).collect()
}

/// [`sweep`] for one of several chunks swept at once: neighbouring chunks may write clusters
/// that share a group, so each is published with a compare-and-swap that keeps the other lanes.
pub(crate) fn sweep_beside_others(
    table: &QfTable,
    keys: &[u64],
    range: Range<usize>,
    one_by_one_slots: usize,
) -> usize {
    sweep(table, keys, range, one_by_one_slots, Guarded)
}

/// Removes the keys of `range`, cluster by cluster: from a cluster with fewer than one key per
/// `one_by_one_slots` slots one key at a time, from any other by rewriting it whole. Publishes
/// each group it changes with `commit`; returns how many were stored.
fn sweep(
    table: &QfTable,
    keys: &[u64],
    range: Range<usize>,
    one_by_one_slots: usize,
    commit: impl Commit + Copy,
) -> usize {
    let r = table.remainder_bits;
    let mut kept = Vec::new();
    let mut removed = 0;
    let mut next = range.start;
    while next < range.end {
        let Some(cluster) = cluster_of(&table.slots, (keys[next] >> r) as usize) else {
            next += 1;
            continue;
        };
        // A cluster holds few of the batch's keys: a scan finds their end sooner than a binary
        // search over the rest of the chunk.
        let inside = keys[next..range.end]
            .iter()
            .position(|&key| (key >> r) as usize >= cluster.end)
            .unwrap_or(range.end - next);
        let cluster_keys = &keys[next..next + inside];
        if inside * one_by_one_slots < cluster.len() {
            for &key in cluster_keys {
                let (quotient, remainder) = ((key >> r) as usize, key & low_mask(r));
                removed += usize::from(table.remove_at_rest(quotient, remainder, commit));
            }
        } else {
            removed += rewrite_cluster(table, cluster, cluster_keys, commit, &mut kept);
        }
        next += inside;
    }
    removed
}

/// Removes the stored ones of `keys` (sorted, with their canonical slots in `cluster`) from
/// `cluster` and lays the rest out again; `kept` is scratch space. Returns how many went.
fn rewrite_cluster(
    table: &QfTable,
    cluster: Range<usize>,
    keys: &[u64],
    commit: impl Commit,
    kept: &mut Vec<(usize, u64)>,
) -> usize {
    let (array, r) = (&table.slots, table.remainder_bits);
    kept.clear();
    let mut first_removed = None;
    let mut removed = 0;
    let mut pending = keys.iter().peekable();
    // Relaxed: as in `cluster_of`.
    for fingerprint in Fingerprints::range(array, cluster.start, cluster.end, Ordering::Relaxed) {
        let (quotient, remainder) = (fingerprint.quotient as usize, fingerprint.remainder);
        let key = (fingerprint.quotient << r) | remainder;
        while pending.next_if(|&&wanted| wanted < key).is_some() {}
        // One stored copy per key: a repeated fingerprint (a build without dedupe) keeps the rest.
        if pending.next_if_eq(&&key).is_some() {
            first_removed.get_or_insert(quotient);
            removed += 1;
            continue;
        }
        kept.push((quotient, remainder));
    }
    let Some(from) = first_removed else {
        return 0;
    };
    write_cluster(array, cluster.end, from, kept, commit);
    removed
}

/// Writes slots `from..end` of a cluster from the fingerprints it keeps, in order: each
/// element where the bulk build puts it, empty slots after the last one, and the occupied bit
/// of every canonical slot that keeps a fingerprint. The elements before `from` are where they
/// were (nothing before them went), and no canonical slot before `from` lost its run.
fn write_cluster(
    array: &SlotArray,
    end: usize,
    from: usize,
    kept: &[(usize, u64)],
    commit: impl Commit,
) {
    let mut rewriter = Rewriter::new(array, commit, 0);
    let mut canonical = kept.iter().map(|&(quotient, _)| quotient).peekable();
    let mut occupied = |slot: usize| {
        while canonical.next_if(|&quotient| quotient < slot).is_some() {}
        if canonical.peek() == Some(&slot) {
            OCCUPIED
        } else {
            0
        }
    };
    let mut slot = from;
    let mut previous: Option<(usize, usize)> = None;
    for &(quotient, remainder) in kept {
        let position = previous.map_or(quotient, |(_, at)| quotient.max(at + 1));
        let continuation = previous.is_some_and(|(run, _)| run == quotient);
        previous = Some((quotient, position));
        if position < from {
            continue;
        }
        for empty in slot..position {
            rewriter.put_whole(empty, occupied(empty));
        }
        let element = Slot::element(remainder, continuation, position != quotient);
        rewriter.put_whole(position, element.raw() | occupied(position));
        slot = position + 1;
    }
    for empty in slot..end {
        rewriter.put_whole(empty, occupied(empty));
    }
    rewriter.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::keys::sorted_keys;
    use crate::batch::tests::workload;
    use crate::qf::sequential::SequentialQf;
    use proptest::prelude::*;

    proptest! {
        /// No cluster has keys in two chunks, whatever the chunk length: checked on the cuts
        /// themselves, so without threads (the removal proptest in `batch::tests` sees a cut
        /// that fails this only when two sweeps race).
        #[test]
        fn no_cluster_has_keys_in_two_chunks((q, r, hashes) in workload(), chunk in 1usize..24) {
            let Ok(filter) = SequentialQf::bulk_build(q, r, &hashes, Default::default()) else {
                return Err(TestCaseError::reject("the hashes do not fit"));
            };
            let mut gone: Vec<u64> = hashes.iter().step_by(3).copied().collect();
            gone.extend(hashes.iter().map(|&hash| crate::hash::remix(hash)).take(hashes.len() / 4));
            let keys = sorted_keys(&gone, q + r);
            let table = &filter.table;
            let ranges = chunks(table, &keys, chunk);
            prop_assert_eq!(ranges.first().map(|range| range.start), Some(0));
            prop_assert_eq!(ranges.last().map(|range| range.end), Some(keys.len()));
            for pair in ranges.windows(2) {
                prop_assert_eq!(pair[0].end, pair[1].start);
                let cut = pair[1].start;
                let quotient = |i: usize| (keys[i] >> r) as usize;
                if let Some(cluster) = cluster_of(&table.slots, quotient(cut - 1)) {
                    prop_assert!(
                        !cluster.contains(&quotient(cut)),
                        "keys {} and {} share the cluster {:?}", cut - 1, cut, cluster
                    );
                }
            }
        }
    }
}
