//! Safe reclamation of replaced tables: epoch-based with [`crossbeam_epoch`], so an operation
//! pays a thread-local pin and touches no shared counter (DESIGN.md, "Concurrency rules").
//!
//! Also a grace period for anything else ([`defer`]): an expandable filter seals a level once no
//! operation that saw it as the newest can still run.
//!
//! Under `--cfg loom` the epoch collector's thread-locals and atomics are invisible to the model
//! checker, so replaced tables are kept until the filter is dropped instead, and deferred work
//! runs at once; the models check the migration and lower-level protocols, not the collector.

#[cfg(not(loom))]
mod imp {
    /// Keeps every table loaded while it lives from being freed.
    pub(crate) struct Guard(crossbeam_epoch::Guard);

    /// Pins the current thread.
    #[inline]
    pub(crate) fn pin() -> Guard {
        Guard(crossbeam_epoch::pin())
    }

    /// Frees replaced tables once no guard can still see them.
    pub(crate) struct Reclaimer;

    impl Reclaimer {
        /// A reclaimer.
        pub(crate) fn new() -> Self {
            Reclaimer
        }

        /// Frees `ptr` once every guard pinned now is gone.
        ///
        /// # Safety
        /// `ptr` came from `Box::into_raw`, is no longer reachable from shared memory, and is
        /// retired once.
        pub(crate) unsafe fn retire<T>(&self, guard: &Guard, ptr: *mut T) {
            // SAFETY: the caller unlinked `ptr`, so only threads pinned now can hold it, and the
            // collector runs the destructor after all of them unpinned; it runs once.
            unsafe { guard.0.defer_unchecked(move || drop(Box::from_raw(ptr))) };
            // The deferred free sits in this thread's bag, which crossbeam flushes to the global
            // queue only at 64 entries or thread exit: a replaced table would stay allocated for
            // the thread's life. One flush per doubling is cheap.
            guard.0.flush();
        }
    }

    /// Runs `f` once every guard pinned now is gone (an epoch grace period).
    pub(crate) fn defer(guard: &Guard, f: impl FnOnce() + Send + 'static) {
        guard.0.defer(f);
        // As in `retire`: without the flush the closure could wait for the thread's exit.
        guard.0.flush();
    }
}

#[cfg(loom)]
mod imp {
    /// Nothing to pin under loom: nothing is freed before the filter.
    pub(crate) struct Guard;

    /// Pins nothing.
    #[inline]
    pub(crate) fn pin() -> Guard {
        Guard
    }

    /// Keeps replaced tables until it is dropped.
    pub(crate) struct Reclaimer {
        retired: std::sync::Mutex<Vec<Retired>>,
    }

    /// A replaced table and its destructor.
    struct Retired {
        ptr: *mut (),
        free: unsafe fn(*mut ()),
    }

    // SAFETY: the pointee is a table of the filter, which is `Send`; it is only freed in `drop`.
    unsafe impl Send for Retired {}

    impl Reclaimer {
        /// A reclaimer holding nothing.
        pub(crate) fn new() -> Self {
            Reclaimer {
                retired: std::sync::Mutex::new(Vec::new()),
            }
        }

        /// Frees `ptr` when the reclaimer is dropped.
        ///
        /// # Safety
        /// As the epoch-based version: `ptr` came from `Box::into_raw` and is retired once.
        pub(crate) unsafe fn retire<T>(&self, _guard: &Guard, ptr: *mut T) {
            unsafe fn free<T>(ptr: *mut ()) {
                // SAFETY: `retire`'s contract: a `Box<T>` pointer retired once.
                drop(unsafe { Box::from_raw(ptr.cast::<T>()) });
            }
            let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
            retired.push(Retired {
                ptr: ptr.cast(),
                free: free::<T>,
            });
        }
    }

    /// Runs `f` at once. The grace period is not modelled: sound only when no operation is in
    /// flight, which holds for every loom model (they open levels before their threads start).
    pub(crate) fn defer(_guard: &Guard, f: impl FnOnce() + Send + 'static) {
        f();
    }

    impl Drop for Reclaimer {
        fn drop(&mut self) {
            let retired = self.retired.get_mut().unwrap_or_else(|e| e.into_inner());
            for r in retired.drain(..) {
                // SAFETY: each pointer was retired once and nobody uses it after the filter.
                unsafe { (r.free)(r.ptr) };
            }
        }
    }
}

pub(crate) use imp::{defer, pin, Guard, Reclaimer};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{pin, Reclaimer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops.
    struct Table(Arc<AtomicUsize>);

    impl Drop for Table {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A retired table is freed while the retiring thread lives on and only pins (the
    /// collector collects from its global queue every so many pins), not kept in the thread's
    /// local bag until 64 retirements or thread exit.
    #[test]
    fn a_retired_table_is_freed_while_the_thread_lives() {
        let drops = Arc::new(AtomicUsize::new(0));
        let reclaimer = Reclaimer::new();
        {
            let guard = pin();
            let table = Box::into_raw(Box::new(Table(Arc::clone(&drops))));
            // SAFETY: `table` came from `Box::into_raw`, is shared with nobody, retired once.
            unsafe { reclaimer.retire(&guard, table) };
        }
        for _ in 0..100_000 {
            if drops.load(Ordering::SeqCst) == 1 {
                break;
            }
            drop(pin());
            std::thread::yield_now();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
