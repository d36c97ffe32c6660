//! The removal workload, shared by `examples/figures.rs` (its `removes` figure) and
//! `benches/thread_scaling.rs`: fill `2^q` slots to Figure 2's 72% (untimed, with the threads of
//! the run), then remove every inserted key once, each thread the piece it inserted, in the
//! order it inserted them; the removals are timed. Written once over `conqf::Filter + Remove`
//! for the concurrent filters and over [`SeqTable`] + [`SeqRemove`] for the single-threaded
//! tables called directly.
//!
//! Every run checks itself: it reads how many fingerprints (copies, for a counting filter) the
//! fill stored, and removing every inserted key once must find exactly that many and leave the
//! filter empty. A refused insert changes nothing, and a key whose fingerprint was already stored
//! finds nothing to remove in a set-semantics filter once another key took it, so neither
//! breaks the count.

use std::time::{Duration, Instant};

use conqf::Remove;

use super::{
    insert_all, parallel, piece, remove_all, table_insert_all, table_remove_all, SeqRemove,
    SeqTable,
};

/// What one run of the removal workload measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RemoveRun {
    /// Wall time of the removals.
    pub(crate) time: Duration,
    /// Removals timed (every inserted key, whether or not its insert was refused).
    pub(crate) removals: usize,
    /// Inserts refused as full.
    pub(crate) failed_inserts: usize,
    /// What the filter's `len` counted after the fill: the removals that must find something.
    pub(crate) stored: usize,
    /// Removals that found nothing to remove.
    pub(crate) not_found: usize,
    /// What the filter's `len` counted after every removal.
    pub(crate) left: usize,
}

impl RemoveRun {
    /// What went wrong, if anything: fingerprints left behind, or removals that found more or
    /// fewer than the fill stored.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.left != 0 {
            return Some(format!(
                "fingerprints left after removing every inserted key: {}",
                self.left
            ));
        }
        let found = self.removals - self.not_found;
        if found != self.stored {
            return Some(format!(
                "{found} removals found a fingerprint, but the fill stored {}",
                self.stored
            ));
        }
        None
    }
}

/// The workload on a concurrent filter with `threads` threads; `filter` must be empty.
pub(crate) fn removes_concurrent<F: Remove>(filter: &F, keys: &[u64], threads: usize) -> RemoveRun {
    let (_, refused) = parallel(threads, |i| insert_all(filter, piece(keys, i, threads)));
    let stored = filter.len();
    let (time, not_found) = parallel(threads, |i| remove_all(filter, piece(keys, i, threads)));
    RemoveRun {
        time,
        removals: keys.len(),
        failed_inserts: refused.iter().sum(),
        stored,
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
    let failed_inserts = table_insert_all(table, keys);
    let stored = table.table_len();
    let start = Instant::now();
    let not_found = table_remove_all(table, keys);
    let time = start.elapsed();
    RemoveRun {
        time,
        removals: keys.len(),
        failed_inserts,
        stored,
        not_found,
        left: table.table_len(),
    }
}
