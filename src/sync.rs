//! The one place the crate takes its atomics and thread primitives from.
//!
//! Under `--cfg loom` every atomic and every spin-wait comes from [`loom`], so the model checker
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

/// Whether loom models read groups with read-modify-write operations (environment variable
/// `CONQF_LOOM_RMW_LOADS`); see [`SlotArray::load_group`](crate::storage::SlotArray).
#[cfg(loom)]
pub(crate) fn loom_loads_as_rmw() -> bool {
    static RMW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RMW.get_or_init(|| std::env::var_os("CONQF_LOOM_RMW_LOADS").is_some())
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
