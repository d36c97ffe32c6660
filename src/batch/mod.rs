//! Batch operations of the 3-status-bit quotient filters, after paper 004 (Geil, Farach-Colton,
//! Owens), §IV: data-parallel algorithms written for the GPU, run here on CPU threads (rayon,
//! behind the default `parallel` feature; without it the same steps run as plain loops).
//!
//! * bulk build from a batch of hashes, by three methods ([`BuildMethod`], §IV-C): sort the
//!   fingerprints ([`keys`]), compute every element's slot with the saturating scan
//!   ([`layout`]), write them all at once ([`scatter`]). The table equals, bit for bit, the one
//!   inserting the same hashes one by one produces;
//! * batch inserts into a non-empty table: supercluster rounds (§IV-B, [`supercluster`]), a
//!   sweep in table order, one stretch of the table per thread ([`insertion`]), or
//!   merge-inserts (extract, merge, rebuild, §IV-E), picked by [`BatchInsert`];
//! * batch removes a cluster at a time, the clusters split over the threads (§IV-D's regions,
//!   [`removal`]);
//! * batch lookups that prefetch the groups a window ahead, after sorting the queries by quotient
//!   when the batch is dense in the table ([`lookup`], §IV-A);
//! * the API on [`SequentialQf`](crate::SequentialQf) and
//!   [`LocallyLockedQf`](crate::LocallyLockedQf) ([`api`]), and the `&self` batch writes and
//!   lookups of the concurrent 3- and 2-status-bit filters ([`shared_api`]).
//!
//! The rank-select layout of paper 004 §III-B ([`CountingQf`](crate::CountingQf)) is built by
//! [`counting`]: its elements sit in the same slots as here (§V-C), so it reuses [`keys`]
//! (counting repeats instead of dropping them) and the scan of [`layout`], whose run heads then
//! count slots rather than elements (an entry with a counter takes several), and brings its own
//! writer in place of [`scatter`] (run-end bits, occupied bits and block offsets instead of
//! status bits, entries encoded by the filter's own counter code).

mod api;
mod counting;
#[cfg(test)]
mod counting_tests;
mod insertion;
pub(crate) mod keys;
pub(crate) mod layout;
pub(crate) mod lookup;
#[cfg(loom)]
pub mod loom_hooks;
pub(crate) mod par;
mod removal;
pub(crate) mod scatter;
mod shared_api;
pub(crate) mod supercluster;
#[cfg(test)]
mod tests;

pub use lookup::BatchLookup;

use crate::filter::Error;
use crate::qf::table::QfTable;
use keys::KeyWord;

/// How a bulk build computes where each element goes (paper 004 §IV-C). All three give the same
/// table; they differ in how much parallel work they do and how many rounds they need.
///
/// ```
/// use conqf::{BuildMethod, SequentialQf};
/// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
/// let a = SequentialQf::bulk_build(12, 20, &hashes, BuildMethod::ParallelMerging)?;
/// let b = SequentialQf::bulk_build(12, 20, &hashes, BuildMethod::SegmentedLayouts)?;
/// assert!(a.fingerprints().eq(b.fingerprints()));
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BuildMethod {
    /// Runs start as segments that merge pairwise, `log2(runs)` rounds whatever the fill
    /// (§IV-C1): the paper's choice for very full tables.
    ParallelMerging,
    /// Each round every run that overlaps its predecessor shifts past it; as many rounds as runs
    /// in the longest cluster (§IV-C2): cheap for emptier tables.
    SequentialShifting,
    /// The table is cut into segments laid out serially, overflows passed on until none changes
    /// (§IV-C3): the paper's fastest method overall, and the default. The paper's segments are
    /// `q` slots, for thousands of GPU threads; the 3-bit build here cuts one segment per CPU
    /// thread's chunk of the input, passes the overflows in one sweep over those few segments,
    /// and writes the elements while laying each segment out again (no per-run arrays),
    /// skipping repeated keys on the way with [`Dedupe::On`] (no separate dedupe pass). The
    /// counting build keeps `q`-slot segments.
    #[default]
    SegmentedLayouts,
}

impl BuildMethod {
    /// The three methods, in the paper's order.
    pub const ALL: [BuildMethod; 3] = [
        BuildMethod::ParallelMerging,
        BuildMethod::SequentialShifting,
        BuildMethod::SegmentedLayouts,
    ];

    /// A short name, for benchmarks and figures.
    pub fn name(self) -> &'static str {
        match self {
            BuildMethod::ParallelMerging => "parallel merging",
            BuildMethod::SequentialShifting => "sequential shifting",
            BuildMethod::SegmentedLayouts => "segmented layouts",
        }
    }
}

/// Whether a bulk build stores a repeated fingerprint once or as often as it occurs (paper 004
/// §IV-C, "Duplicates": the paper makes deduplication a switch, as inserting everything at once
/// does not need it).
///
/// With [`On`](Dedupe::On) the table is exactly the one inserting the hashes one by one gives.
/// With [`Off`](Dedupe::Off) every copy of a fingerprint gets its own slot (next to the others
/// in its run), so the filter holds a multiset: `len` counts copies, removing a hash takes away
/// one copy, lookups answer as before. Keys whose fingerprints collide then each keep a copy,
/// so removing one of them does not make the others look absent. One-by-one and batch inserts
/// into such a filter (a merge-insert, [`BatchInsert::Merge`], too) keep its copies and still
/// store a fingerprint only when it is absent; a merge of two filters ([`Merge`](crate::Merge))
/// stores each fingerprint once.
/// [`CountingQf::bulk_build`](crate::CountingQf::bulk_build) has no such switch: it counts
/// repeats, as its one-by-one inserts do.
///
/// ```
/// use conqf::{BuildMethod, Dedupe, SequentialQf};
/// let hashes = [conqf::hash_key(&1u64), conqf::hash_key(&1u64), conqf::hash_key(&2u64)];
/// let (q, r, method) = (8, 8, BuildMethod::default());
/// let mut set = SequentialQf::bulk_build_with(q, r, &hashes, method, Dedupe::On)?;
/// let mut multiset = SequentialQf::bulk_build_with(q, r, &hashes, method, Dedupe::Off)?;
/// assert_eq!((set.len(), multiset.len()), (2, 3));
/// assert!(set.remove(&1u64)? && !set.contains(&1u64));
/// assert!(multiset.remove(&1u64)? && multiset.contains(&1u64)); // one copy left
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dedupe {
    /// Store each fingerprint once, as one-by-one inserts do.
    #[default]
    On,
    /// Store every copy: no deduplication step.
    Off,
}

impl Dedupe {
    /// Whether key `i` of sorted `keys` is a repeat this build skips.
    #[inline]
    pub(crate) fn skips<K: PartialEq>(self, keys: &[K], i: usize) -> bool {
        self == Dedupe::On && i > 0 && keys[i] == keys[i - 1]
    }
}

/// How a batch insert into a non-empty filter proceeds.
///
/// ```
/// use conqf::{BatchInsert, SequentialQf};
/// let mut filter = SequentialQf::with_bits(12, 20)?;
/// let hashes: Vec<u64> = (0..100u64).map(|k| conqf::hash_key(&k)).collect();
/// assert_eq!(filter.insert_batch_with(&hashes, BatchInsert::Superclusters)?, 100);
/// assert!(hashes.iter().all(|&h| filter.contains_hash(h)));
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BatchInsert {
    /// [`Sweep`](BatchInsert::Sweep), or [`Merge`](BatchInsert::Merge) for a large batch into
    /// a nearly empty table (see [`BatchInsert::choose`]) or for a batch crowded into long
    /// clusters of its own, which the sweep would insert in time quadratic in their length
    /// (64,000 keys in 64 canonical slots of a `2^20`-slot table: 1.4 s swept, 2.7 ms merged);
    /// `CountingQf` takes its parallel ranges but for such a crowded batch (see its
    /// [`insert_batch_with`](crate::CountingQf::insert_batch_with)).
    #[default]
    Auto,
    /// Rounds in which each supercluster (a stretch of the table ending in an empty slot) takes
    /// one element of the batch, all superclusters in parallel (§IV-B). Work grows with the
    /// batch per supercluster, so it suits small batches; on this crate's 2-core machine
    /// [`Sweep`](BatchInsert::Sweep) was faster at every batch size measured.
    Superclusters,
    /// Each thread inserts its part of the sorted batch one by one, in table order, into a
    /// stretch of the table between two empty slots; the keys whose inserts would fill the empty
    /// slot that ends their stretch are inserted afterwards by the calling thread. Its work
    /// grows with the batch (a merge's with the table), times the length of the clusters it
    /// inserts into, as each insert walks its cluster from the start: what `Auto` picks but for
    /// a large batch into a nearly empty table or a crowded one. `CountingQf` takes its parallel
    /// ranges, as for [`Superclusters`](BatchInsert::Superclusters).
    Sweep,
    /// Extract the stored fingerprints, merge the sorted batch in, and bulk build a new table
    /// with this method (§IV-E): work proportional to the table, whatever the batch. As the
    /// sweep, it adds only the fingerprints not stored and keeps the copies a build without
    /// deduplication stored.
    Merge(BuildMethod),
}

impl BatchInsert {
    /// The strategy [`Auto`](BatchInsert::Auto) picks for `batch` hashes into a table of
    /// `slots` canonical slots holding `len` fingerprints: a merge-insert when the batch is at
    /// least a quarter of the slots and eight times what the table holds, the sweep otherwise.
    /// A merge rewrites the whole table, so it costs about the same whatever the batch; the
    /// sweep's work grows with the batch alone, and only a large batch into a nearly empty
    /// table, where a merge is a bulk build, costs it more.
    ///
    /// Measured on the project's 2-core machine (paper 004 Figure 10's axes) with
    /// `W=insert Q=22 R=3 T=2 FILLS=0,0.1,0.3,0.5,0.7,0.9 F=80,20,14 cargo run --release
    /// --example bulk_probe` (2026-12-01; the probe times `benches/common/bulk.rs`'s
    /// `insert_batch_time`, median of 3, ms as superclusters / sweep / merge; batch as a share
    /// of the empty slots, at most `2^21` keys, so at 0% and 10% the last two columns are
    /// `2^21` keys or about it):
    ///
    /// | fill | 1/8 | 1/2 | 0.71 |
    /// | --- | --- | --- | --- |
    /// | 0% | 35.2 / 4.4 / 10.0 | 125.2 / 26.5 / 23.8 | 126.9 / 26.7 / 24.1 |
    /// | 10% | 11.5 / 4.5 / 21.2 | 110.8 / 25.1 / 31.7 | 140.8 / 32.0 / 35.1 |
    /// | 30% | 9.7 / 4.9 / 36.0 | 90.1 / 25.1 / 47.3 | 155.9 / 47.5 / 62.8 |
    /// | 50% | 9.7 / 4.8 / 48.4 | 67.3 / 22.8 / 63.8 | 110.6 / 38.4 / 70.3 |
    /// | 70% | 7.7 / 4.7 / 55.8 | 34.2 / 19.4 / 61.9 | 53.5 / 33.5 / 64.3 |
    /// | 90% | 4.9 / 3.0 / 66.0 | 22.4 / 15.9 / 67.3 | 41.3 / 33.8 / 68.8 |
    ///
    /// A merge won only into the empty table with half of its slots or more; at 10% fill, with
    /// batches of 4.5 and 5 times what the table held, the sweep was still ahead.
    ///
    /// ```
    /// use conqf::BatchInsert;
    /// assert_eq!(BatchInsert::choose(1000, 700_000, 1 << 20), BatchInsert::Sweep);
    /// assert_eq!(BatchInsert::choose(300_000, 100_000, 1 << 20), BatchInsert::Sweep);
    /// assert!(matches!(BatchInsert::choose(600_000, 50_000, 1 << 20), BatchInsert::Merge(_)));
    /// assert_eq!(BatchInsert::choose(0, 0, 2), BatchInsert::Sweep); // nothing to insert
    /// ```
    pub fn choose(batch: usize, len: usize, slots: usize) -> BatchInsert {
        // Exact: a quarter of the slots, eight times `len`, with no rounding or overflow.
        if batch.saturating_mul(4) >= slots && batch / 8 >= len {
            BatchInsert::Merge(BuildMethod::default())
        } else {
            BatchInsert::Sweep
        }
    }

    /// What [`Auto`](BatchInsert::Auto) does with the sorted, distinct fingerprint `keys` of
    /// `remainder_bits`-bit remainders: [`choose`](Self::choose), except that a batch crowded
    /// into long clusters of its own is merged. The sweep inserts one key at a time, and each
    /// insert walks its cluster from the cluster's start, so `n` keys in one cluster cost about
    /// `n^2 / 2` slots walked (64,000 keys in 64 canonical slots of a `2^20`-slot table: 1.4 s
    /// by the sweep, 2.7 ms by a merge, whose work follows the table). Only the batch's own
    /// clusters are counted: a long cluster the table already holds makes the sweep slow too.
    pub(crate) fn choose_for(keys: &[u64], remainder_bits: u32, len: usize, slots: usize) -> Self {
        match Self::choose(keys.len(), len, slots) {
            BatchInsert::Sweep
                if crowded(keys, remainder_bits, slots + len, WALK_PER_SLOT_FOR_MERGE) =>
            {
                BatchInsert::Merge(BuildMethod::default())
            }
            chosen => chosen,
        }
    }
}

/// How many slots the sweep may walk per slot a merge rewrites before `Auto` merges: the sweep
/// walked about 0.67 ns a slot and a merge rewrote about 2.6 ns a slot in the measurement of
/// [`BatchInsert::choose_for`] (a merge of a fuller table costs up to about 16 ns a slot,
/// `BatchInsert::choose`'s table), so a merge wins from about 4 slots walked per slot; 16
/// leaves ordinary batches, whose keys sit a slot or two from their clusters' starts, to the
/// sweep.
pub(crate) const WALK_PER_SLOT_FOR_MERGE: u64 = 16;

/// Whether the sorted, distinct fingerprint `keys` crowd into clusters so long that inserting
/// them one at a time in table order would walk more than `walk_per_slot` slots for each of
/// the `rewritten` slots and entries a merge rewrites.
pub(crate) fn crowded(
    keys: &[u64],
    remainder_bits: u32,
    rewritten: usize,
    walk_per_slot: u64,
) -> bool {
    let rewritten = rewritten.saturating_add(keys.len()) as u64;
    sweep_walk(keys, remainder_bits) > walk_per_slot.saturating_mul(rewritten)
}

/// About how many slots the sweep walks to insert the sorted, distinct fingerprint `keys` into
/// an empty table: each key's distance from the start of its cluster when the batch alone is
/// laid out (runs in quotient order, each from its canonical slot or the end of the one
/// before).
fn sweep_walk(keys: &[u64], remainder_bits: u32) -> u64 {
    let (mut cluster_start, mut next_free, mut walk) = (0u64, 0u64, 0u64);
    for &key in keys {
        let quotient = key >> remainder_bits;
        if quotient >= next_free {
            (cluster_start, next_free) = (quotient, quotient);
        }
        walk = walk.saturating_add(next_free - cluster_start);
        next_free += 1;
    }
    walk
}

/// Bulk builds sorted fingerprint keys into `table`, which must be empty; a repeated key is
/// stored once or as often as it occurs, as `dedupe` says. Returns how many fingerprints it
/// stored.
///
/// Knows no load cap: growing a table copies what it holds, whatever its fill; the public
/// builds check the cap on the result ([`within_load_cap`]).
///
/// # Errors
/// [`Error::Full`] if the last run would reach the table's last slot (which stays empty); the
/// table is then unchanged.
pub(crate) fn build(
    table: &QfTable,
    mut keys: Vec<u64>,
    method: BuildMethod,
    dedupe: Dedupe,
) -> Result<usize, Error> {
    if keys.is_empty() {
        return Ok(0);
    }
    if method == BuildMethod::SegmentedLayouts {
        return build_segmented(table, &keys, dedupe);
    }
    if dedupe == Dedupe::On {
        keys.dedup();
    }
    let layout = layout::layout(&keys, table.quotient_bits, table.remainder_bits, method);
    let last_run = layout.first.len() - 1;
    let end = layout.first[last_run] + (keys.len() - layout.heads[last_run]);
    if end >= table.slots.len() {
        return Err(Error::Full);
    }
    scatter::scatter(&table.slots, &keys, table.remainder_bits, &layout);
    Ok(keys.len())
}

/// [`build`] by segmented layouts, for keys of either width.
pub(crate) fn build_segmented<K: KeyWord>(
    table: &QfTable,
    keys: &[K],
    dedupe: Dedupe,
) -> Result<usize, Error> {
    scatter::segmented_scatter(
        &table.slots,
        keys,
        table.remainder_bits,
        keys.len().div_ceil(par::threads()).max(par::MIN_PARALLEL),
        dedupe,
    )
    .ok_or(Error::Full)
}

/// `stored`, the count of a build into `table`, if it is within the table's load cap
/// ([`QfTable::load_cap`]), else [`Error::Full`]: a bulk build or merge must not hand out a
/// filter that its own inserts would refuse. Checked after the build, which deduplicates; the
/// caller then drops the table.
pub(crate) fn within_load_cap(table: &QfTable, stored: usize) -> Result<usize, Error> {
    if stored > table.load_cap() {
        return Err(Error::Full);
    }
    Ok(stored)
}

/// A new table with the given parameters and at least `min_slots` slots (those of the table
/// it replaces: a grown or read-back table can have more than `with_bits` gives) holding
/// exactly the sorted `keys`, each as often as it occurs: the callers pass a merged union,
/// which [`keys::merge_sorted`] already deduplicated, so the build does not dedupe it again.
///
/// # Errors
/// [`Error::InvalidParameters`] for bad parameters, [`Error::Full`] if the keys do not fit.
pub(crate) fn build_table(
    quotient_bits: u32,
    remainder_bits: u32,
    min_slots: usize,
    keys: Vec<u64>,
    method: BuildMethod,
) -> Result<(QfTable, usize), Error> {
    let (table, len) =
        build_table_uncapped(quotient_bits, remainder_bits, min_slots, keys, method)?;
    let len = within_load_cap(&table, len)?;
    Ok((table, len))
}

/// [`build_table`] without the load cap, [`Error::Full`] only if the keys do not fit the slots:
/// for a snapshot, which copies whatever its table held, and a lower level of a cascading
/// [`ExpandableQf`](crate::ExpandableQf) holds more than the cap (its inserts into empty
/// canonical slots pass it).
pub(crate) fn build_table_uncapped(
    quotient_bits: u32,
    remainder_bits: u32,
    min_slots: usize,
    keys: Vec<u64>,
    method: BuildMethod,
) -> Result<(QfTable, usize), Error> {
    let table = QfTable::with_slots(quotient_bits, remainder_bits, min_slots)?;
    let len = build(&table, keys, method, Dedupe::Off)?;
    Ok((table, len))
}
