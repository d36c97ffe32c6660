//! The one place the crate takes its atomics and thread primitives from.
//!
//! Under `--cfg loom` every atomic and every spin-wait comes from `loom`, so the model checker
//! sees each shared access of the locking protocols (paper 000 §3.2); otherwise they are the
//! standard library's. No other module names `std::sync::atomic` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};

/// Waits politely for another thread to release a status-bit lock.
///
/// Outside loom this is [`crossbeam_utils::Backoff`]: it spins with exponential backoff and then
/// yields the time slice. Under loom every wait is a `yield_now`, which tells the model checker
/// that this thread cannot make progress until another one runs.
pub(crate) struct Waiter {
    #[cfg(not(loom))]
    backoff: crossbeam_utils::Backoff,
}

impl Waiter {
    /// A fresh waiter, starting with the shortest spin.
    #[inline]
    pub(crate) fn new() -> Self {
        Waiter {
            #[cfg(not(loom))]
            backoff: crossbeam_utils::Backoff::new(),
        }
    }

    /// Waits one step; later steps wait longer.
    #[inline]
    pub(crate) fn wait(&self) {
        #[cfg(not(loom))]
        self.backoff.snooze();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
}

/// A number of the calling thread, different for every thread (dealt in turn when a thread
/// first asks), for spreading per-thread counters over stripes
/// ([`StripedCounter`](crate::counter::StripedCounter), the cap budget of `LinearProbingQf`).
/// Not under loom, where those use one stripe or pick stripes by hint: the stripes only keep
/// threads off each other's cache lines, no protocol depends on them.
#[cfg(not(loom))]
#[inline]
pub(crate) fn thread_index() -> usize {
    /// The next index to deal. A plain `std` atomic: it is not part of any protocol the model
    /// checker should see.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    std::thread_local! {
        // Relaxed: only the dealt values' distinctness matters, which the RMW gives.
        static INDEX: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    INDEX.with(|index| *index)
}

/// Whether loom models read and write table words with read-modify-write operations only
/// (environment variable `CONQF_LOOM_RMW_LOADS`), through [`load_word`] and [`store_word`]
/// (`SlotArray`'s groups and `CountingQf`'s blocks).
///
/// Reads are `fetch_or(0)`: loom's partial-order reduction compares a pending plain load only
/// with the last write, so it skips some load-then-CAS races (loom issues #166, #392), while an
/// RMW is dependent on every access. Writes that are plain stores elsewhere are `swap`s here:
/// loom 0.7 does not apply RMW atomicity to a plain store (loom issues #254, #389; pull request
/// #391), so a store racing another thread's `fetch_or(0)` stays unordered with that RMW's
/// write-back, and a later RMW read, even one that happens after the store (e.g. after taking
/// the lock the storing thread released), may read the stale write-back. That made
/// `ExternallyLockedQf`'s lock holder, which commits groups with plain stores, lose inserts in
/// loom only. On a real machine an RMW reads the newest value in the location's single
/// modification order, so `fetch_or(0)` racing a store can only land before it (and be
/// overwritten) or after it (and write back the stored value). With every group write an RMW the
/// order loom keeps is total, as the hardware's is; a swap whose result is dropped has the
/// effect of the store.
///
/// Public (hidden) for the loom models that bound their preemptions per mode.
#[cfg(loom)]
pub fn loom_loads_as_rmw() -> bool {
    static RMW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RMW.get_or_init(|| std::env::var_os("CONQF_LOOM_RMW_LOADS").is_some())
}

/// Loads a table word: a plain load, or in loom's RMW mode (`loom_loads_as_rmw`) a
/// `fetch_or(0)` with the same or a stronger ordering. It writes back exactly the value it
/// read, atomically, so it cannot lose a concurrent write, and loom counts it dependent on
/// every other access to the word, so it explores the load-then-store races a plain load
/// hides.
#[inline(always)]
pub(crate) fn load_word(word: &AtomicU64, order: Ordering) -> u64 {
    #[cfg(loom)]
    if loom_loads_as_rmw() {
        let order = if order == Ordering::Relaxed {
            Ordering::Relaxed
        } else {
            Ordering::Acquire
        };
        return word.fetch_or(0, order);
    }
    word.load(order)
}

/// Stores a table word: a plain store, or in loom's RMW mode a `swap` whose result is dropped
/// (see `loom_loads_as_rmw` for why a plain store racing an RMW read misleads loom).
#[inline(always)]
pub(crate) fn store_word(word: &AtomicU64, value: u64, order: Ordering) {
    #[cfg(loom)]
    if loom_loads_as_rmw() {
        word.swap(value, order);
        return;
    }
    word.store(value, order)
}

/// The reader/writer lock of the striped filters: `parking_lot`'s, or loom's under `--cfg loom`.
///
/// `parking_lot::RwLock` is task-fair: a reader blocks while a writer waits, even if the lock is
/// read-locked, so a stream of readers cannot starve writers (the open problem of paper 001
/// §4), and its eventual fairness hands the lock to waiting threads in turn.
#[cfg(not(loom))]
pub(crate) type RwLock = parking_lot::RwLock<()>;
#[cfg(loom)]
pub(crate) type RwLock = loom::sync::RwLock<()>;

/// A shared guard of a [`RwLock`].
#[cfg(not(loom))]
pub(crate) type ReadGuard<'a> = parking_lot::RwLockReadGuard<'a, ()>;
#[cfg(loom)]
pub(crate) type ReadGuard<'a> = loom::sync::RwLockReadGuard<'a, ()>;

/// An exclusive guard of a [`RwLock`].
#[cfg(not(loom))]
pub(crate) type WriteGuard<'a> = parking_lot::RwLockWriteGuard<'a, ()>;
#[cfg(loom)]
pub(crate) type WriteGuard<'a> = loom::sync::RwLockWriteGuard<'a, ()>;

/// Read-locks `lock` (loom's lock cannot be poisoned here: nothing panics while holding it).
#[inline]
pub(crate) fn read(lock: &RwLock) -> ReadGuard<'_> {
    #[cfg(not(loom))]
    return lock.read();
    #[cfg(loom)]
    return lock.read().unwrap();
}

/// Write-locks `lock`.
#[inline]
pub(crate) fn write(lock: &RwLock) -> WriteGuard<'_> {
    #[cfg(not(loom))]
    return lock.write();
    #[cfg(loom)]
    return lock.write().unwrap();
}
