//! Entry points for the loom models in `tests/loom/batch.rs` (compiled only with `--cfg loom`,
//! hidden from the docs): one round of supercluster inserts (paper 004 §IV-B), a batch insert's
//! sweeps of its stretches, a batch removal's sweeps of its chunks of clusters (§IV-D), and the
//! write passes of a segmented bulk build (§IV-C3) and of a `CountingQf` bulk build, whose
//! writes run on loom threads instead of rayon's, so the model checker explores every
//! interleaving of the lane-preserving group writes of neighbours and of the block writers'
//! shared spill words.

use std::sync::Arc;

use crate::qf::counting::blocks::BlockSource;
use crate::qf::counting::CountingQf;
use crate::qf::sequential::SequentialQf;

use crate::qf::table::QfTable;

use super::counting::BuildLayout;
use super::keys::{counted_keys, sorted_keys, sorted_keys_with_repeats};
use super::scatter::{plan_segments, write_segment};
use super::supercluster::{plan_insertion, write_insertion, Claim};
use super::{insertion, removal};
use super::{BuildMethod, Dedupe};

/// Runs `each` on every item, each on a loom thread of its own, all at once; returns the
/// results in the items' order once every thread has ended.
fn on_loom_threads<T, R>(items: Vec<T>, each: impl Fn(T) -> R + Clone + Send + 'static) -> Vec<R>
where
    T: Send + 'static,
    R: Send + 'static,
{
    let threads: Vec<_> = items
        .into_iter()
        .map(|item| {
            let each = each.clone();
            loom::thread::spawn(move || each(item))
        })
        .collect();
    threads
        .into_iter()
        .map(|thread| thread.join().expect("a writer panicked"))
        .collect()
}

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
    let shared = Arc::clone(&table);
    on_loom_threads(plans, move |plan| write_insertion(&shared.slots, &plan));
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
    let table = Arc::new(table);
    let shared = Arc::clone(&table);
    let swept = on_loom_threads(stretches, move |stretch| {
        insertion::sweep_beside_others(&shared, &keys, &stretch)
    });
    let mut stored = 0;
    let mut left_over = Vec::new();
    for (newly_stored, waiting) in swept {
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
    let table = Arc::new(table);
    let shared = Arc::clone(&table);
    let removed = on_loom_threads(chunks, move |range| {
        removal::sweep_beside_others(&shared, &keys, range, one_by_one_slots)
    })
    .into_iter()
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
    let table = Arc::new(table);
    let shared = Arc::clone(&table);
    on_loom_threads(plan.segments, move |segment| {
        let r = shared.remainder_bits;
        write_segment(&shared.slots, &keys, r, segment, Dedupe::On)
    });
    let table = Arc::into_inner(table).expect("the writers are joined");
    SequentialQf {
        table,
        len: plan.stored,
    }
}

/// Bulk builds `hashes` (with their repeats, as counts) into a new [`CountingQf`] of
/// `2^quotient_bits` slots and one block per region, its blocks written in ranges of
/// `chunk_blocks` blocks, each range by its own loom thread: the build's write pass, whose
/// plain read-modify-writes of a block's words only that range's thread may make, and whose
/// spills of neighbouring blocks share words.
///
/// # Panics
/// If the parameters are invalid or the entries do not fit.
pub fn racing_counting_build(
    quotient_bits: u32,
    remainder_bits: u32,
    hashes: &[u64],
    chunk_blocks: usize,
) -> CountingQf {
    let filter = CountingQf::with_bits_and_region(quotient_bits, remainder_bits, 1)
        .expect("valid parameters");
    let (keys, counts) = counted_keys(hashes, quotient_bits + remainder_bits);
    // Each thread plans for itself (the plan reads no atomics and borrows the keys, which
    // loom's threads could not).
    fn plan<'k>(filter: &CountingQf, keys: &'k [u64], counts: &'k [u64]) -> BuildLayout<'k> {
        BuildLayout::plan(filter, keys, counts, BuildMethod::default())
            .expect("the entries fit")
            .expect("some keys")
    }
    let blocks = filter.table.blocks();
    let ranges: Vec<_> = (0..blocks)
        .step_by(chunk_blocks)
        .map(|start| start..(start + chunk_blocks).min(blocks))
        .collect();
    let shared = Arc::new((filter, keys, counts));
    let writers = Arc::clone(&shared);
    on_loom_threads(ranges, move |blocks| {
        let (filter, keys, counts) = &*writers;
        plan(filter, keys, counts).write_blocks(&filter.table, blocks);
    });
    let (filter, keys, counts) = Arc::into_inner(shared).expect("the writers are joined");
    plan(&filter, &keys, &counts).finish(&filter);
    filter
}
