//! Entry points for the loom models in `tests/loom/batch.rs` (compiled only with `--cfg loom`,
//! hidden from the docs): one round of supercluster inserts (paper 004 §IV-B), a batch insert's
//! sweeps of its stretches, a batch removal's sweeps of its chunks of clusters (§IV-D), and the
//! write pass of a segmented bulk
//! build (§IV-C3), whose writes run on loom threads instead of rayon's, so the model checker
//! explores every interleaving of the lane-preserving group writes of neighbours.

use std::sync::Arc;

use crate::qf::sequential::SequentialQf;

use crate::qf::table::QfTable;

use super::keys::{sorted_keys, sorted_keys_with_repeats};
use super::scatter::{plan_segments, write_segment};
use super::supercluster::{plan_insertion, write_insertion, Claim};
use super::Dedupe;
use super::{insertion, removal};

/// Plans the insert of every hash against `filter` as one round would (each must claim its own
/// supercluster: the caller picks them so), then writes all of them at once, one loom thread
/// each. Returns the filter and how many were stored.
///
/// # Panics
/// If two hashes share a supercluster, a hash is stored already or the table is full: the model
/// is built wrong.
pub fn racing_supercluster_inserts(filter: SequentialQf, hashes: &[u64]) -> (SequentialQf, usize) {
    let SequentialQf { table, len } = filter;
    let keys = sorted_keys(hashes, table.quotient_bits + table.remainder_bits);
    let mut regions = Vec::new();
    let plans: Vec<_> = keys
        .iter()
        .map(|&key| match plan_insertion(&table, key) {
            Ok(Claim::Write { region, plan, .. }) => {
                regions.push(region);
                plan
            }
            _ => panic!("the model's inserts must each write"),
        })
        .collect();
    regions.dedup();
    assert_eq!(regions.len(), plans.len(), "one supercluster per insert");
    let table = Arc::new(table);
    let threads: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let table = Arc::clone(&table);
            loom::thread::spawn(move || write_insertion(&table.slots, &plan))
        })
        .collect();
    for thread in threads {
        thread.join().expect("a writer panicked");
    }
    let written = keys.len();
    let table = Arc::into_inner(table).expect("the writers are joined");
    (
        SequentialQf {
            table,
            len: len + written,
        },
        written,
    )
}

/// Inserts `hashes` into `filter` as a batch insert's sweep cut into chunks of `chunk` keys
/// would ([`insertion`](super::insertion)): each chunk's stretch swept by its own loom thread,
/// then the keys left over inserted on the calling thread. Returns the filter and how many
/// were stored.
///
/// # Panics
/// If the keys do not fit.
pub fn racing_insert_sweeps(
    filter: SequentialQf,
    hashes: &[u64],
    chunk: usize,
) -> (SequentialQf, usize) {
    let SequentialQf { table, len } = filter;
    let keys = sorted_keys(hashes, table.quotient_bits + table.remainder_bits);
    let stretches = insertion::stretches(&table, &keys, chunk);
    let (table, keys) = (Arc::new(table), Arc::new(keys));
    let threads: Vec<_> = stretches
        .into_iter()
        .map(|stretch| {
            let (table, keys) = (Arc::clone(&table), Arc::clone(&keys));
            loom::thread::spawn(move || insertion::sweep_beside_others(&table, &keys, &stretch))
        })
        .collect();
    let mut stored = 0;
    let mut left_over = Vec::new();
    for thread in threads {
        let (newly_stored, waiting) = thread.join().expect("a sweep panicked");
        stored += newly_stored;
        left_over.extend(waiting);
    }
    let table = Arc::into_inner(table).expect("the sweeps are joined");
    insertion::insert_in_order(&table, &left_over, &mut stored, usize::MAX).expect("the keys fit");
    (
        SequentialQf {
            table,
            len: len + stored,
        },
        stored,
    )
}

/// Removes `hashes` from `filter` as a batch removal cut into chunks of `chunk` keys would
/// ([`removal`](super::removal): the cuts are moved so that no cluster has keys in two chunks),
/// each chunk swept by its own loom thread, and the clusters with fewer than one key per
/// `one_by_one_slots` slots removed from one key at a time (0: every cluster; a large number:
/// none). Returns the filter and how many were removed.
///
/// # Panics
/// If the parameters are invalid.
pub fn racing_cluster_sweeps(
    filter: SequentialQf,
    hashes: &[u64],
    chunk: usize,
    one_by_one_slots: usize,
) -> (SequentialQf, usize) {
    let SequentialQf { table, len } = filter;
    let keys = sorted_keys(hashes, table.quotient_bits + table.remainder_bits);
    let chunks = removal::chunks(&table, &keys, chunk);
    let (table, keys) = (Arc::new(table), Arc::new(keys));
    let threads: Vec<_> = chunks
        .into_iter()
        .map(|range| {
            let (table, keys) = (Arc::clone(&table), Arc::clone(&keys));
            loom::thread::spawn(move || {
                removal::sweep_beside_others(&table, &keys, range, one_by_one_slots)
            })
        })
        .collect();
    let removed = threads
        .into_iter()
        .map(|thread| thread.join().expect("a sweep panicked"))
        .sum();
    let table = Arc::into_inner(table).expect("the sweeps are joined");
    (
        SequentialQf {
            table,
            len: len - removed,
        },
        removed,
    )
}

/// Bulk builds `hashes` into a new filter of `2^quotient_bits` slots by segmented layouts, cut
/// into segments of `segment` keys, each segment written by its own loom thread: the build's
/// write pass, whose plain stores into the groups a segment owns alone the model checks.
///
/// # Panics
/// If the parameters are invalid or the keys do not fit.
pub fn racing_segmented_build(
    quotient_bits: u32,
    remainder_bits: u32,
    hashes: &[u64],
    segment: usize,
) -> SequentialQf {
    let table = QfTable::with_bits(quotient_bits, remainder_bits).expect("valid parameters");
    let keys: Vec<u64> = sorted_keys_with_repeats(hashes, quotient_bits + remainder_bits);
    let plan = plan_segments(&keys, remainder_bits, segment, Dedupe::On);
    assert!(
        plan.last_slot < table.slots.len() as i64 - 1,
        "the keys fit"
    );
    let (table, keys) = (Arc::new(table), Arc::new(keys));
    let threads: Vec<_> = plan
        .segments
        .into_iter()
        .map(|segment| {
            let (table, keys) = (Arc::clone(&table), Arc::clone(&keys));
            loom::thread::spawn(move || {
                write_segment(
                    &table.slots,
                    &keys,
                    table.remainder_bits,
                    segment,
                    Dedupe::On,
                )
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a writer panicked");
    }
    let table = Arc::into_inner(table).expect("the writers are joined");
    SequentialQf {
        table,
        len: plan.stored,
    }
}
