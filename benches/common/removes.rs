//! The removal workload, shared by `examples/figures.rs` (its `removes` figure) and
//! `benches/thread_scaling.rs`: fill `2^q` slots to Figure 2's 72% (untimed, with the threads of
//! the run), then remove every inserted key once, each thread the piece it inserted, in the
//! order it inserted them; the removals are timed. Written once over `conqf::Filter + Remove`
//! for the concurrent filters and over [`SeqTable`] + [`SeqRemove`] for the single-threaded
//! tables called directly.
//!
//! Every run checks itself: removing every inserted key once must leave the filter empty, and
//! only the keys whose insert found their fingerprint already stored may find nothing to
//! remove (a set-semantics filter stores such a fingerprint once; a counting one counts it, so
//! all its removals find something).

use std::time::{Duration, Instant};

use conqf::{Filter, Remove};

use super::{parallel, piece, SeqRemove, SeqTable};

/// What one run of the removal workload measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RemoveRun {
    /// Wall time of the removals.
    pub(crate) time: Duration,
    /// Removals timed (every inserted key, whether or not its insert was refused).
    pub(crate) removals: usize,
    /// Inserts refused as full.
    pub(crate) failed_inserts: usize,
    /// Inserts that answered `Ok(false)`: the fingerprint was already stored.
    pub(crate) duplicates: usize,
    /// Removals that found nothing to remove.
    pub(crate) not_found: usize,
    /// Fingerprints left after every removal.
    pub(crate) left: usize,
}

impl RemoveRun {
    /// What went wrong, if anything: fingerprints left behind although every insert succeeded,
    /// or more removals that found nothing than inserts of stored fingerprints.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.failed_inserts == 0 && self.left != 0 {
            return Some(format!(
                "fingerprints left after removing every inserted key: {}",
                self.left
            ));
        }
        if self.not_found > self.duplicates + self.failed_inserts {
            return Some(format!(
                "{} removals found nothing, but only {} inserts found their fingerprint stored \
                 and {} were refused",
                self.not_found, self.duplicates, self.failed_inserts
            ));
        }
        None
    }
}

/// Counts `(refused, duplicate)` inserts: `Err` and `Ok(false)` answers.
fn tally(answers: impl Iterator<Item = Result<bool, conqf::Error>>) -> (usize, usize) {
    answers.fold((0, 0), |(refused, duplicate), answer| match answer {
        Err(_) => (refused + 1, duplicate),
        Ok(false) => (refused, duplicate + 1),
        Ok(true) => (refused, duplicate),
    })
}

/// Removes every hash; returns how many removals found nothing.
#[inline(never)]
pub(crate) fn remove_all<F: Remove + ?Sized>(filter: &F, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .filter(|&&hash| filter.remove_hash(hash) != Ok(true))
        .count()
}

/// The workload on a concurrent filter with `threads` threads; `filter` must be empty.
pub(crate) fn removes_concurrent<F: Filter + Remove>(
    filter: &F,
    keys: &[u64],
    threads: usize,
) -> RemoveRun {
    let (_, fills) = parallel(threads, |i| {
        tally(
            piece(keys, i, threads)
                .iter()
                .map(|&hash| filter.insert_hash(hash)),
        )
    });
    let (time, not_found) = parallel(threads, |i| remove_all(filter, piece(keys, i, threads)));
    RemoveRun {
        time,
        removals: keys.len(),
        failed_inserts: fills.iter().map(|fill| fill.0).sum(),
        duplicates: fills.iter().map(|fill| fill.1).sum(),
        not_found: not_found.iter().sum(),
        left: filter.len(),
    }
}

/// The workload on a single-threaded table called directly on this thread; `table` must be
/// empty.
pub(crate) fn removes_sequential<T: SeqTable + SeqRemove>(
    table: &mut T,
    keys: &[u64],
) -> RemoveRun {
    let (failed_inserts, duplicates) = tally(keys.iter().map(|&hash| table.table_insert(hash)));
    let start = Instant::now();
    let not_found = super::table_remove_all(table, keys);
    let time = start.elapsed();
    RemoveRun {
        time,
        removals: keys.len(),
        failed_inserts,
        duplicates,
        not_found,
        left: table.table_len(),
    }
}
