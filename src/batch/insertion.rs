//! Batch inserts in table order, one stretch of the table per thread
//! ([`BatchInsert::Sweep`](super::BatchInsert::Sweep)): the CPU counterpart of paper 004 §IV-B's
//! supercluster inserts.
//!
//! An insert reads nothing left of its cluster's start and shifts elements right only up to the
//! first empty slot after its run, so stretches of the table between two empty slots (their
//! *fences*) are independent as long as no insert fills a fence. The sorted batch is cut into
//! one chunk per thread at fences ([`stretches`]): each thread inserts its chunk's keys one by
//! one, in table order, and leaves for later any key whose insert would fill its right fence
//! (and so join the next stretch) or whose canonical slot is a fence. The calling thread then
//! inserts the keys left over, one by one. Neighbouring stretches may share a 64-bit group, so
//! with several chunks each group is published with a compare-and-swap that keeps the other
//! lanes ([`Guarded`]).
//!
//! The paper's rounds give each supercluster one insert per round and find the superclusters
//! again after every round, which suits thousands of GPU threads; with a few CPU threads that
//! bookkeeping cost more than it saved ([`supercluster`](super::supercluster), and the
//! performance history, "Batch inserts in table order").

use std::ops::Range;

use crate::filter::{Error, Full};
use crate::hash::low_mask;
use crate::qf::load_cap::refuse_unless_stored;
use crate::qf::table::QfTable;
use crate::qf::walk;
use crate::storage::{Commit, Exclusive, Guarded};
use crate::sync::Ordering;

use super::par;

/// Inserts sorted, distinct fingerprint keys into `table`, adding to `stored` the number newly
/// stored.
///
/// # Errors
/// [`Error::Full`] if an insert would reach the table's last slot or `stored` would pass the
/// table's load cap ([`QfTable::load_cap`]). What was inserted stays (and is counted): the keys
/// before the one that found no room, and in a run of several chunks possibly keys after it
/// (those of later stretches, inserted while the keys left over waited); the others are not
/// inserted.
pub(crate) fn insert(table: &mut QfTable, keys: &[u64], stored: &mut usize) -> Result<(), Error> {
    let chunk = par::chunk_len(keys.len(), par::MIN_PARALLEL / 4);
    insert_in_chunks(table, keys, stored, chunk)
}

/// [`insert`] with the batch cut into chunks of about `chunk` keys.
pub(crate) fn insert_in_chunks(
    table: &mut QfTable,
    keys: &[u64],
    stored: &mut usize,
    chunk: usize,
) -> Result<(), Error> {
    let table = &*table;
    let cap = table.load_cap();
    // The chunks do not count against the load cap, so they run only where the whole batch
    // fits under it; otherwise one thread inserts every key in order, counting.
    if stored.saturating_add(keys.len()) > cap {
        return insert_in_order(table, keys, stored, cap);
    }
    let stretches = stretches(table, keys, chunk);
    if stretches.len() == 1 {
        return insert_in_order(table, keys, stored, cap);
    }
    let swept = par::map(&stretches, |stretch| {
        sweep_beside_others(table, keys, stretch)
    });
    let mut left_over = Vec::new();
    for (newly_stored, waiting) in swept {
        *stored += newly_stored;
        left_over.extend(waiting);
    }
    insert_in_order(table, &left_over, stored, cap)
}

/// The keys of one chunk: those of `keys` lie between the chunk's left fence (the previous
/// chunk's `fence`, or the table's start) and `fence`, an empty slot; those of `at_fence`
/// have their canonical slot at `fence` and wait for the calling thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stretch {
    pub(crate) keys: Range<usize>,
    pub(crate) at_fence: Range<usize>,
    pub(crate) fence: usize,
}

/// Cuts the sorted `keys` into chunks of about `chunk` keys at fences: the first empty slot at
/// or after the canonical slot of the key at each cut. The last chunk's fence is the table's
/// last slot, which stays empty.
pub(crate) fn stretches(table: &QfTable, keys: &[u64], chunk: usize) -> Vec<Stretch> {
    let r = table.remainder_bits;
    let last = table.slots.len() - 1;
    let quotient = |key: &u64| (key >> r) as usize;
    let mut stretches = Vec::new();
    let mut start = 0;
    let mut cut = chunk.max(1);
    while cut < keys.len() {
        // Relaxed: the caller holds `&mut` to the table.
        let mut cursor = table.slots.cursor(quotient(&keys[cut]), Ordering::Relaxed);
        let fence = match walk::seek_empty(&mut cursor) {
            Some(fence) if fence < last => fence,
            _ => break,
        };
        let below = start + keys[start..].partition_point(|key| quotient(key) < fence);
        let above = below + keys[below..].partition_point(|key| quotient(key) == fence);
        stretches.push(Stretch {
            keys: start..below,
            at_fence: below..above,
            fence,
        });
        start = above;
        cut = above + chunk.max(1);
    }
    stretches.push(Stretch {
        keys: start..keys.len(),
        at_fence: keys.len()..keys.len(),
        fence: last,
    });
    stretches
}

/// [`sweep`] for one of several stretches swept at once: neighbouring stretches may share a
/// group, so each is published with a compare-and-swap that keeps the other lanes.
pub(crate) fn sweep_beside_others(
    table: &QfTable,
    keys: &[u64],
    stretch: &Stretch,
) -> (usize, Vec<u64>) {
    sweep(table, keys, stretch, Guarded)
}

/// Inserts the keys of `stretch` one by one, in order, publishing each group with `commit`.
/// Returns how many it stored and the keys it left for later: those whose insert would fill
/// the fence, then those at the fence.
fn sweep(
    table: &QfTable,
    keys: &[u64],
    stretch: &Stretch,
    commit: impl Commit + Copy,
) -> (usize, Vec<u64>) {
    let r = table.remainder_bits;
    let mut stored = 0;
    let mut waiting = Vec::new();
    for &key in &keys[stretch.keys.clone()] {
        let (quotient, remainder) = ((key >> r) as usize, key & low_mask(r));
        match table.insert_at_rest(quotient, remainder, stretch.fence, commit) {
            Ok(new) => stored += usize::from(new),
            // Its insert would fill the fence.
            Err(Full) => waiting.push(key),
        }
    }
    waiting.extend_from_slice(&keys[stretch.at_fence.clone()]);
    (stored, waiting)
}

/// Inserts `keys` one by one on this thread, counting them in `stored` against `cap`. At the
/// cap a key already stored goes in as it does one by one (stored once, nothing written; the
/// load cap's module docs).
///
/// # Errors
/// [`Error::Full`] at the first key that is not stored and finds `stored` at the cap, or that
/// would reach the last slot.
pub(crate) fn insert_in_order(
    table: &QfTable,
    keys: &[u64],
    stored: &mut usize,
    cap: usize,
) -> Result<(), Error> {
    let (r, last) = (table.remainder_bits, table.slots.len() - 1);
    for &key in keys {
        let (quotient, remainder) = ((key >> r) as usize, key & low_mask(r));
        // The caller holds `&mut` to the table, and the sweeps have ended.
        if *stored >= cap {
            refuse_unless_stored::<Error>(|| table.contains_at_rest(quotient, remainder))?;
            continue;
        }
        let new = table.insert_at_rest(quotient, remainder, last, Exclusive)?;
        *stored += usize::from(new);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::keys::sorted_keys;
    use crate::batch::tests::{sweep_equals_one_by_one, workload};
    use crate::qf::sequential::SequentialQf;
    use proptest::prelude::*;

    /// Every slot of `table` (Relaxed: single-threaded test).
    fn slots_of(table: &QfTable) -> Vec<u64> {
        (0..table.slots.len())
            .map(|slot| table.slots.get(slot, Ordering::Relaxed))
            .collect()
    }

    proptest! {
        /// Tables of `2^10` and `2^11` slots (the smallest with a load cap below their slots,
        /// 31/32 of them) filled to 80-97%, and batches that may pass the cap (`workload`'s
        /// tables, in `batch::tests`, have no cap).
        #[test]
        fn near_the_load_cap_the_sweep_stops_as_one_by_one_inserts_do(
            q in 10u32..12,
            r in 1u32..12,
            fill in 80usize..97,
            more in 1usize..20,
            seed: u64,
            chunk in 1usize..24,
            copies: bool,
        ) {
            let slots = 1usize << q;
            let hash = |i: usize| crate::hash::remix(seed ^ i as u64);
            let stored: Vec<u64> = (0..slots * fill / 100).map(hash).collect();
            let dedupe = if copies { crate::Dedupe::Off } else { crate::Dedupe::On };
            let built =
                SequentialQf::bulk_build_with(q, r, &stored, Default::default(), dedupe);
            let Ok(filter) = built else {
                return Err(TestCaseError::reject("over the cap already"));
            };
            let batch: Vec<u64> = (slots..slots + slots * more / 100).map(hash).collect();
            sweep_equals_one_by_one(&filter, &batch, chunk)?;
        }

        /// Each chunk's sweep, run alone on the table as the batch found it, changes only slots
        /// strictly between its fences: so the sweeps, run at once, never write a slot another
        /// reads or writes (checked on the slots themselves, so without threads: the batch
        /// proptest in `batch::tests` sees a sweep that crosses its fence only when two race).
        #[test]
        fn a_sweep_writes_only_between_its_fences(
            (q, r, hashes) in workload(),
            split in 0.0f64..1.0,
            chunk in 1usize..24,
        ) {
            let (first, second) = hashes.split_at((hashes.len() as f64 * split) as usize);
            let Ok(filter) = SequentialQf::bulk_build(q, r, first, Default::default()) else {
                return Err(TestCaseError::reject("the first part does not fit"));
            };
            let keys = sorted_keys(second, q + r);
            let before = slots_of(&filter.table);
            let mut left = None;
            for stretch in stretches(&filter.table, &keys, chunk) {
                let alone = filter.clone_table();
                sweep(&alone.table, &keys, &stretch, Exclusive);
                for (slot, (&was, &is)) in before.iter().zip(&slots_of(&alone.table)).enumerate() {
                    if was != is {
                        prop_assert!(
                            left.is_none_or(|left| slot > left) && slot < stretch.fence,
                            "slot {} changed by the sweep between {:?} and {}",
                            slot, left, stretch.fence
                        );
                    }
                }
                prop_assert_eq!(before[stretch.fence], 0, "a fence is an empty slot");
                left = Some(stretch.fence);
            }
        }
    }
}
