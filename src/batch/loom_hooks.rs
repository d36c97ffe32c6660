//! Entry points for the loom models in `tests/loom/batch.rs` (compiled only with `--cfg loom`,
//! hidden from the docs): one round of supercluster inserts or cluster removes (paper 004 §IV-B,
//! §IV-D) whose writes run on loom threads instead of rayon's, so the model checker explores
//! every interleaving of the lane-preserving group CASes of neighbouring regions.

use std::sync::Arc;

use crate::qf::sequential::SequentialQf;

use super::keys::sorted_keys;
use super::supercluster::{plan_insertion, plan_removal, write_insertion, write_removal, Claim};

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
            Ok(Claim::Write { region, plan }) => {
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

/// [`racing_supercluster_inserts`] for removals: each hash must be stored, each in its own
/// cluster.
///
/// # Panics
/// If two hashes share a cluster or a hash is not stored.
pub fn racing_cluster_removes(filter: SequentialQf, hashes: &[u64]) -> SequentialQf {
    let SequentialQf { table, len } = filter;
    let keys = sorted_keys(hashes, table.quotient_bits + table.remainder_bits);
    let mut regions = Vec::new();
    let plans: Vec<_> = keys
        .iter()
        .map(|&key| match plan_removal(&table, key) {
            Claim::Write { region, plan } => {
                regions.push(region);
                plan
            }
            Claim::Done => panic!("the model removes stored keys only"),
        })
        .collect();
    regions.dedup();
    assert_eq!(regions.len(), plans.len(), "one cluster per removal");
    let table = Arc::new(table);
    let threads: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let table = Arc::clone(&table);
            loom::thread::spawn(move || write_removal(&table.slots, &plan))
        })
        .collect();
    for thread in threads {
        thread.join().expect("a writer panicked");
    }
    let removed = keys.len();
    let table = Arc::into_inner(table).expect("the writers are joined");
    SequentialQf {
        table,
        len: len - removed,
    }
}
