//! Lock-free queries of an expandable filter's lower levels (paper 000 §4.1: "within the lower
//! levels queries do not need any locks, because the elements there are finalized"), kept
//! correct although removals still shift elements there.
//!
//! # What can change a lower level
//!
//! * Ordinary inserts that loaded the level as the newest one just before the next level opened
//!   and are still shifting. A level is *sealed* only after every operation pinned when the next
//!   level opened has finished (an epoch grace period, [`defer`]); operations that pin later load
//!   the new newest level and never insert ordinarily here again.
//! * Removals. Each one counts itself in [`LevelReads::writers`] for as long as it may change
//!   the table, and a lock-free reader keeps its answer only if no removal was in flight when it
//!   started and none started before it finished (a [`SeqWord`]: a sequence lock with many
//!   writers).
//! * Cascading inserts: one CAS turns an empty canonical slot into a one-element cluster and
//!   moves nothing, so a reader's walk, which passes only filled slots, reads each slot either
//!   before or after it and answers as one of the two states (paper 000 §4.2).
//! * Read locks of queries that fell back to the locked path: the walk decodes them.
//!
//! A reader that finds its level unsealed, a removal in flight, or its answer overtaken by a
//! removal falls back to the level's locked query.

use std::sync::Arc;

use crate::qf::growing::{defer, Guard};
use crate::qf::seq_word::{SeqWord, Writing};
use crossbeam_utils::CachePadded;

use crate::sync::{AtomicBool, Ordering};

/// The lock-free read state of every level of one filter.
pub(crate) struct LevelReads {
    /// Whether level `i` is sealed. Shared with the deferred sealing, which may outlive the
    /// filter.
    sealed: Arc<[AtomicBool]>,
    /// Per level: the removals started and in flight. Padded: a removal on one level must not
    /// bounce the line the readers of the others load.
    writers: Box<[CachePadded<SeqWord>]>,
}

impl LevelReads {
    /// The heap memory of the per-level flags and words.
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.sealed) + std::mem::size_of_val(&*self.writers)
    }

    /// The state of `levels` levels, none sealed.
    pub(crate) fn new(levels: usize) -> Self {
        Self::with_sealed(levels, 0)
    }

    /// The state of `levels` levels with the first `sealed` sealed already: for a filter built
    /// whole (read back from bytes), where no operation can be in flight on any level.
    pub(crate) fn with_sealed(levels: usize, sealed: usize) -> Self {
        LevelReads {
            sealed: (0..levels).map(|i| AtomicBool::new(i < sealed)).collect(),
            writers: (0..levels)
                .map(|_| CachePadded::new(SeqWord::new()))
                .collect(),
        }
    }

    /// Seals level `level` once every operation pinned now has finished. Call it after the next
    /// level became the newest.
    pub(crate) fn seal_after_grace_period(&self, level: usize, guard: &Guard) {
        let sealed = Arc::clone(&self.sealed);
        defer(guard, move || {
            // Release: pairs with the reader's Acquire; the grace period ordered the last
            // ordinary inserts on the level before this store.
            sealed[level].store(true, Ordering::Release);
        });
    }

    /// `query`'s answer on level `level` if it could be read without locks: the level is sealed,
    /// and no removal was in flight or started while `query` ran. `None`: use the locked query.
    #[inline]
    pub(crate) fn read(&self, level: usize, query: impl FnOnce() -> bool) -> Option<bool> {
        // Acquire: pairs with the sealing's Release store.
        if !self.sealed[level].load(Ordering::Acquire) {
            return None;
        }
        let writers = &self.writers[level];
        let before = writers.read_begin()?;
        // `query`'s loads are Acquire, as `read_stands` needs.
        let answer = query();
        writers.read_stands(before).then_some(answer)
    }

    /// Whether level `level` is sealed.
    #[cfg(any(test, loom))]
    pub(crate) fn is_sealed(&self, level: usize) -> bool {
        // Acquire: as in `read`.
        self.sealed[level].load(Ordering::Acquire)
    }

    /// Runs `remove` on level `level`, counted as a removal in flight (until it returns or
    /// unwinds: a panicking removal must not leave its level read-locked for ever).
    pub(crate) fn removing<T>(&self, level: usize, remove: impl FnOnce() -> T) -> T {
        let _in_flight = Writing::start(std::slice::from_ref(&*self.writers[level]));
        remove()
    }
}
