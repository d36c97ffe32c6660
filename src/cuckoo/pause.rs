//! Pausing the lock-free cuckoo filter's relocations while a `&self` snapshot copies the table
//! (paper 001 §2.3 moves, which a copy read bucket after bucket could see on both sides or on
//! neither: the false miss of §2.2, in a copy).
//!
//! Two counters: `pausing` (snapshots under way) and `moving` (relocation paths under way).
//! A relocation path counts itself in `moving` and then checks `pausing`; a snapshot counts
//! itself in `pausing` and then waits for `moving` to read 0. A Dekker-style handshake with
//! two plain loads as the checks would need `SeqCst` (both sides could read the other's counter
//! before the other's increment); here the snapshot's check is a read-modify-write of `moving`
//! (`fetch_add(0)`, `AcqRel`) and the path's increment is one too (`Acquire`), and that is
//! enough. The two RMWs of `moving` are ordered in its modification order, and an RMW reads the
//! value just before it there:
//!
//! * the snapshot's check comes first: the path's increment reads from it (or from a later RMW
//!   of its release sequence), so the snapshot's increment of `pausing`, sequenced before its
//!   check, happens before the path's load of `pausing`, which therefore reads it (or the
//!   snapshot's later decrement): the path sees the pause, takes its count back, and waits;
//! * the path's increment comes first: the check reads a count that includes it, until the
//!   path's decrement (`Release`) is read, which orders all its moves before the snapshot's
//!   copy.
//!
//! So once a snapshot's check has read 0, no move runs until it ends: every entry is empty or
//! `Stable`, and a stored copy stays where it is. (Loom: with both checks plain loads the model
//! `lock_free_cuckoo_snapshot_racing_a_relocation_keeps_the_moved_key` fails.)
//!
//! Lookups and the inserts that find an empty entry never touch the counters; only a relocating
//! insert pays two read-modify-writes and a load per relocation path (not per move), and waits
//! while a snapshot runs. Snapshots that follow each other without a break (overlapping, from
//! several threads) keep relocating inserts waiting for as long; space them out.

use crate::sync::{AtomicUsize, Ordering, Waiter};

/// The two counters of the handshake (module doc).
#[derive(Debug, Default)]
pub(crate) struct RelocationPause {
    /// Snapshots under way.
    pausing: AtomicUsize,
    /// Relocation paths under way.
    moving: AtomicUsize,
}

/// A relocation path's permission to move entries; dropping it ends the path.
pub(crate) struct Moving<'a>(&'a RelocationPause);

/// A snapshot's pause: no entry moves until it is dropped.
pub(crate) struct Paused<'a>(&'a RelocationPause);

impl RelocationPause {
    /// Waits until no snapshot is under way, then counts a relocation path in (module doc).
    pub(crate) fn start_moving(&self) -> Moving<'_> {
        let waiter = Waiter::new();
        loop {
            // Acquire: reading from a snapshot's check makes its increment of `pausing` visible
            // to the load below (module doc).
            self.moving.fetch_add(1, Ordering::Acquire);
            // Relaxed: the ordering comes from the RMWs of `moving` (module doc).
            if self.pausing.load(Ordering::Relaxed) == 0 {
                return Moving(self);
            }
            // Relaxed: this path moved nothing, so it has nothing to publish.
            self.moving.fetch_sub(1, Ordering::Relaxed);
            // Relaxed: only a hint to try again; the next round's check decides.
            while self.pausing.load(Ordering::Relaxed) != 0 {
                waiter.wait();
            }
        }
    }

    /// Counts a snapshot in and waits until no relocation path is under way (module doc).
    pub(crate) fn pause(&self) -> Paused<'_> {
        // Relaxed: the check's Release, sequenced after it, carries it to the paths.
        self.pausing.fetch_add(1, Ordering::Relaxed);
        let paused = Paused(self);
        let waiter = Waiter::new();
        // AcqRel: an RMW reads the last count; Release for the paths that read from it, Acquire
        // for the last path's decrement, so that path's moves happen before the copy's loads.
        while self.moving.fetch_add(0, Ordering::AcqRel) != 0 {
            waiter.wait();
        }
        paused
    }
}

impl Drop for Moving<'_> {
    fn drop(&mut self) {
        // Release: the path's moves happen before a snapshot that sees the count drop.
        self.0.moving.fetch_sub(1, Ordering::Release);
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        // Relaxed: the paths need nothing of the snapshot's, and a path's move cannot be seen by
        // the copy it waited for (the copy's word loads are Acquire and the moves' CASes
        // Release, so a load that saw a move would order the path's check of `pausing` before
        // this decrement, which that check read).
        self.0.pausing.fetch_sub(1, Ordering::Relaxed);
    }
}
