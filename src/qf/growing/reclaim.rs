//! Safe reclamation of replaced tables: epoch-based with [`crossbeam_epoch`], so an operation
//! pays a thread-local pin and touches no shared counter.
//!
//! Also a grace period for anything else ([`defer`]): an expandable filter seals a level once no
//! operation that saw it as the newest can still run.
//!
//! Under `--cfg loom` the epoch collector's thread-locals and atomics are invisible to the model
//! checker, so replaced tables are kept until the filter is dropped instead. Deferred work runs
//! at once, unless a model asks for grace periods with `model_grace_periods` (a loom build's
//! function): then every guard is registered, and deferred work runs when the last guard pinned
//! at the time is dropped, with the happens-before edges the epoch collector gives (see its doc).

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
    use std::cell::RefCell;

    use crate::sync::{AtomicUsize, Ordering};

    /// The registry of a model that asked for grace periods: shared by all its threads, which
    /// loom runs on one OS thread, so a thread-local is shared by the model's threads and not
    /// by other tests.
    struct Epochs {
        /// Every pin, unpin and deferral is a read-modify-write of this counter (module doc of
        /// [`model_grace_periods`]).
        clock: std::sync::Arc<AtomicUsize>,
        next_guard: u64,
        pinned: Vec<u64>,
        /// Deferred work and the guards it still waits for.
        deferred: Vec<(Vec<u64>, Work)>,
    }

    /// Work deferred to the end of a grace period.
    type Work = Box<dyn FnOnce() + Send>;

    std::thread_local! {
        static EPOCHS: RefCell<Option<Epochs>> = const { RefCell::new(None) };
    }

    /// While it lives, [`defer`] waits for a grace period (see [`model_grace_periods`]).
    #[must_use = "grace periods are modelled only while this lives"]
    pub struct GracePeriods(());

    /// Turns on grace periods for the rest of this loom execution (until the returned value is
    /// dropped): call it first thing in a model closure, before any filter exists.
    ///
    /// Work deferred while guards are pinned runs when the last of them is dropped, on the
    /// dropping thread, as crossbeam-epoch would at the earliest. The orderings are the
    /// collector's: every pin, unpin and deferral is an `AcqRel` read-modify-write of one
    /// counter. So deferred work happens after everything the guards it waited for did, and a
    /// thread that pins after a deferral (and so is not waited for) sees everything the
    /// deferring thread did before it, as the epoch's `SeqCst` pin fence guarantees.
    pub fn model_grace_periods() -> GracePeriods {
        EPOCHS.with(|epochs| {
            *epochs.borrow_mut() = Some(Epochs {
                clock: std::sync::Arc::new(AtomicUsize::new(0)),
                next_guard: 0,
                pinned: Vec::new(),
                deferred: Vec::new(),
            })
        });
        GracePeriods(())
    }

    impl Drop for GracePeriods {
        fn drop(&mut self) {
            // Deferred work still waiting is dropped unrun; its guards outlived the model.
            let epochs = EPOCHS.with(|epochs| epochs.borrow_mut().take());
            drop(epochs);
        }
    }

    /// Ticks the clock (a modelled read-modify-write) if grace periods are on, then runs
    /// `update` on the registry. `None` if they are off.
    fn with_epochs<T>(update: impl FnOnce(&mut Epochs) -> T) -> Option<T> {
        // The clock is taken out of the registry first: its tick is a point where loom may
        // switch threads, and the others use the registry too.
        let clock = EPOCHS.with(|epochs| {
            let epochs = epochs.borrow();
            epochs
                .as_ref()
                .map(|epochs| std::sync::Arc::clone(&epochs.clock))
        })?;
        // AcqRel: module doc of `model_grace_periods`.
        clock.fetch_add(1, Ordering::AcqRel);
        // No loom operation between the tick and the update, so the registry changes in the
        // clock's modification order.
        Some(EPOCHS.with(|epochs| update(epochs.borrow_mut().as_mut().expect("still on"))))
    }

    /// A registered guard while grace periods are modelled; nothing otherwise.
    pub(crate) struct Guard(Option<u64>);

    /// Pins the current thread: registers a guard if grace periods are modelled.
    #[inline]
    pub(crate) fn pin() -> Guard {
        Guard(with_epochs(|epochs| {
            let id = epochs.next_guard;
            epochs.next_guard += 1;
            epochs.pinned.push(id);
            id
        }))
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            let Some(id) = self.0 else { return };
            let due = with_epochs(|epochs| {
                epochs.pinned.retain(|&pinned| pinned != id);
                let mut due = Vec::new();
                let mut index = 0;
                while index < epochs.deferred.len() {
                    epochs.deferred[index].0.retain(|&waiting| waiting != id);
                    if epochs.deferred[index].0.is_empty() {
                        due.push(epochs.deferred.swap_remove(index).1);
                    } else {
                        index += 1;
                    }
                }
                due
            });
            // Run outside the registry's borrow: the work may pin and unpin itself.
            for work in due.into_iter().flatten() {
                work();
            }
        }
    }

    /// Runs `f` once every guard pinned now is dropped if grace periods are modelled, else at
    /// once: sound then only when no operation is in flight, as in the models that open their
    /// levels before their threads start.
    pub(crate) fn defer(_guard: &Guard, f: impl FnOnce() + Send + 'static) {
        let mut f = Some(f);
        with_epochs(|epochs| {
            // Never empty while the caller's guard is registered.
            if !epochs.pinned.is_empty() {
                let f = f.take().expect("not taken yet");
                epochs.deferred.push((epochs.pinned.clone(), Box::new(f)));
            }
        });
        if let Some(f) = f {
            f();
        }
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
#[cfg(loom)]
pub use imp::{model_grace_periods, GracePeriods};

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
