//! Batch inserts in rounds over independent regions of the table (paper 004 §IV-B). Batch
//! removals, whose regions are clusters, take every element of a cluster at once instead
//! ([`removal`](super::removal)).
//!
//! A *supercluster* is a stretch of the table ending in an empty slot: an insert whose canonical
//! slot lies in it shifts elements at most into that empty slot, so inserts into different
//! superclusters touch disjoint slots. Each round, every supercluster takes at most one element
//! of the (sorted) batch, all superclusters are written in parallel, and the rest of the batch
//! waits for the next round, after which the superclusters are found again.
//!
//! On the GPU the paper labels the regions with a prefix sum over the whole table each round. On
//! CPU threads a cheaper labelling does the same: the batch is sorted, so the elements of one
//! region are consecutive, and the walk that plans an insert already finds the region's end (the
//! first empty slot from the canonical slot on); the following elements whose canonical slot lies
//! before that end belong to the same region and wait. Neighbouring regions can share a 64-bit
//! group, so the writes publish each group with a CAS that keeps the other lanes
//! ([`Guarded`]).

use crate::filter::Error;
use crate::hash::low_mask;
use crate::qf::table::QfTable;
use crate::qf::walk::{self, InsertPlan, InsertStep, KEEP_OCCUPIED};
use crate::storage::{Guarded, Rewriter, SlotArray};
use crate::sync::Ordering;

use super::{insertion, par};

/// What planning one element of the batch decided.
pub(crate) enum Claim<P> {
    /// Nothing to write for this element: it is stored already.
    Done,
    /// The element writes this plan in the supercluster that ends at `region`. Later elements
    /// of the batch whose canonical slot is at or before `region` lie in that supercluster too:
    /// they wait for the next round without being planned.
    Write { region: usize, plan: P },
}

/// Inserts sorted, distinct fingerprint keys into `table` by supercluster rounds, adding to
/// `stored` the number newly stored.
///
/// # Errors
/// [`Error::Full`] if an insert would reach the table's last slot or `stored` would pass the
/// table's load cap ([`QfTable::load_cap`]): the elements of earlier rounds stay inserted (and
/// counted), the rest of the batch is not. The keys left when `stored` reaches the cap go
/// through [`insertion::insert_in_order`], which takes those already stored (as one by one
/// inserts do at the cap) and stops at the first new one.
pub(crate) fn insert(table: &mut QfTable, keys: &[u64], stored: &mut usize) -> Result<(), Error> {
    let table = &*table;
    let (r, cap) = (table.remainder_bits, table.load_cap());
    let left = rounds(
        keys,
        |key| plan_insertion(table, key),
        |key| (key >> r) as usize,
        (stored, cap),
        |plan| write_insertion(&table.slots, &plan),
    )?;
    insertion::insert_in_order(table, &left, stored, cap)
}

/// Plans the insert of one key: done if stored already, else a write in the supercluster that
/// ends at `plan.end`.
pub(crate) fn plan_insertion(table: &QfTable, key: u64) -> Result<Claim<InsertPlan>, Error> {
    let (r, array) = (table.remainder_bits, &table.slots);
    let quotient = (key >> r) as usize;
    // Relaxed: the previous round's join orders its writes before these reads.
    let mut cursor = array.cursor(quotient, Ordering::Relaxed);
    match walk::plan_insert(&mut cursor, quotient, key & low_mask(r)) {
        Some(InsertStep::Duplicate { .. }) => Ok(Claim::Done),
        // An element waits if its canonical slot lies in the supercluster claimed before it,
        // i.e. at or before that supercluster's end.
        Some(InsertStep::Place(plan)) if plan.end + 1 < array.len() => Ok(Claim::Write {
            region: plan.end,
            plan,
        }),
        _ => Err(Error::Full),
    }
}

/// Writes a planned insert, keeping the lanes of other superclusters in shared groups.
pub(crate) fn write_insertion(array: &SlotArray, plan: &InsertPlan) {
    // Relaxed: reads of this supercluster, which only this thread writes during the round.
    let mut read = array.cursor(plan.position, Ordering::Relaxed);
    let mut rewriter = Rewriter::new(array, Guarded, KEEP_OCCUPIED);
    walk::shift_in(&mut read, &mut rewriter, plan, None);
    rewriter.finish();
}

/// The round loop of the inserts: plan the pending elements (in parallel chunks, skipping those
/// whose canonical slot, `quotient_of` them, lies within the region of the chunk's last claim),
/// keep one claim per region, write the claims in parallel, repeat with the elements that
/// waited. Adds the claims written to `written` and writes no claim once it reaches `limit` (the
/// load cap); returns the keys left unwritten for that reason (in order), none if all went in.
fn rounds<P: Send + Sync, E: Send>(
    keys: &[u64],
    plan: impl Fn(u64) -> Result<Claim<P>, E> + Sync,
    quotient_of: impl Fn(u64) -> usize + Sync,
    (written, limit): (&mut usize, usize),
    write: impl Fn(P) + Sync + Send,
) -> Result<Vec<u64>, E> {
    let mut pending = keys.to_vec();
    while !pending.is_empty() {
        if *written >= limit {
            return Ok(pending);
        }
        let chunks = par::map_chunks(pending.len(), 1024, |range| {
            let mut claims = Vec::new();
            let mut last_region = None;
            for index in range {
                let key = pending[index];
                if last_region.is_some_and(|region| quotient_of(key) <= region) {
                    continue;
                }
                match plan(key)? {
                    Claim::Done => claims.push((index, None)),
                    Claim::Write { region, plan } => {
                        last_region = Some(region);
                        claims.push((index, Some((region, plan))));
                    }
                }
            }
            Ok(claims)
        });
        let mut finished = vec![false; pending.len()];
        let mut writes = Vec::new();
        let mut last_region = None;
        for chunk in chunks {
            for (index, claim) in chunk? {
                match claim {
                    None => finished[index] = true,
                    // A region claimed by an earlier chunk (or earlier in this one) waits.
                    Some((region, _)) if last_region == Some(region) => {}
                    Some((region, plan)) => {
                        last_region = Some(region);
                        if writes.len() < limit - *written {
                            finished[index] = true;
                            writes.push(plan);
                        }
                    }
                }
            }
        }
        *written += writes.len();
        par::for_each(writes, &write);
        let mut index = 0;
        pending.retain(|_| {
            index += 1;
            !finished[index - 1]
        });
    }
    Ok(pending)
}
