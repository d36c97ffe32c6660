//! A striped counter for `len()`: each thread adds to its own cache-padded stripe, so writers
//! on different threads do not bounce one cache line, and readers of the table never touch it.
//!
//! The stripes used to be picked by slot index. With random keys every thread then wrote every
//! stripe, so about every other increment missed on a line the other thread had just written:
//! removing the increment from the 3-bit filters raised their 2-thread inserts in Figure 2 from
//! 21.3 / 18.2 to 24.5 / 22.4 M/s (`LocallyLockedQf`) and from 19.0 / 18.1 to 23.1 / 23.6
//! (`ExternallyLockedQf`), in two alternated runs of `figures --only fig2`.
//!
//! # Owned stripes
//!
//! A thread that counts first claims one of [`OWNED_STRIPES`] process-wide stripe numbers and
//! keeps it until it exits. While it holds number `k`, it is the only thread that writes stripe
//! `k` of *any* counter, so it adds with a plain load and store instead of a read-modify-write:
//! on x86 a `lock xadd` costs about as much as a cache hit and stops later loads from passing
//! it, which is a large share of a one-group insert (see `docs/performance-history.md`,
//! "`len` without a read-modify-write"). Threads that find every number taken (more than
//! [`OWNED_STRIPES`] counting threads alive at once) add to one of [`SHARED_STRIPES`] other
//! stripes with `fetch_add`, as every thread did before.
//!
//! A number passes from an exiting thread to a new one through the claim word: the release is a
//! `Release` RMW and the claim an `Acquire` one, so the new owner's first load of stripe `k` sees
//! the old owner's last store. Under loom the filters' counters own no stripe: every add is a
//! `fetch_add` on the one shared stripe, and no protocol the filters' models check depends on the
//! counter; `tests/loom/counter.rs` checks the hand-over itself, on a claim word of its own.

use crossbeam_utils::CachePadded;

#[cfg(not(loom))]
use crate::sync::thread_index;
use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// Stripe numbers threads can own (bits of the claim word): about the thread counts this crate
/// is measured at. One under loom, for the model of the hand-over (`tests/loom/counter.rs`);
/// the filters' own counters use no owned stripe there (module doc).
#[cfg(not(loom))]
const OWNED_STRIPES: usize = 16;
#[cfg(loom)]
const OWNED_STRIPES: usize = 1;

/// Stripes for threads that own none, added to with `fetch_add`; a thread picks one by its
/// [`thread_index`]. One under loom, where threads have no index: each stripe is an atomic the
/// model checker tracks, and a growing filter sums the stripes after its inserts.
#[cfg(not(loom))]
const SHARED_STRIPES: usize = 8;
#[cfg(loom)]
const SHARED_STRIPES: usize = 1;

/// A count of stored items, split into one stripe per thread.
pub(crate) struct StripedCounter {
    /// [`OWNED_STRIPES`] owned stripes, then [`SHARED_STRIPES`] shared ones (an array, so an
    /// index below [`OWNED_STRIPES`] needs no bounds check).
    stripes: Box<[CachePadded<AtomicUsize>; OWNED_STRIPES + SHARED_STRIPES]>,
}

impl StripedCounter {
    /// The heap memory of the stripes (a cache line each).
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.stripes)
    }

    /// A counter at zero.
    pub(crate) fn new() -> Self {
        StripedCounter {
            stripes: Box::new(std::array::from_fn(|_| {
                CachePadded::new(AtomicUsize::new(0))
            })),
        }
    }

    /// Adds one; returns the new value of the stripe it added to (not the sum), which a caller
    /// may use to act on every `k`-th add of a thread ([`LoadCap`](crate::qf::load_cap::LoadCap)).
    #[inline]
    pub(crate) fn increment(&self) -> usize {
        self.add(1)
    }

    /// Subtracts one (a stripe may wrap below zero when another thread's stripe holds the
    /// item; the sum does not).
    #[inline]
    pub(crate) fn decrement(&self) {
        self.add(usize::MAX);
    }

    /// Adds `n`, wrapping (so adding `usize::MAX` subtracts one); returns the stripe's new value.
    #[inline]
    pub(crate) fn add(&self, n: usize) -> usize {
        match ownership::owned_stripe() {
            Some(own) => self.add_owned(own, n),
            None => self.add_shared(n),
        }
    }

    /// Adds `n` to stripe `own`, whose number the calling thread holds ([`StripeClaims`]).
    #[inline]
    fn add_owned(&self, own: usize, n: usize) -> usize {
        let stripe = &self.stripes[own];
        // Relaxed load and store, no read-modify-write: while this thread holds the stripe's
        // number no other thread writes the stripe, and the claim's Acquire ordered the
        // previous holder's last store before this load (module doc). Readers only sum a
        // statistic (`Filter::len` may lag).
        let value = stripe.load(Ordering::Relaxed).wrapping_add(n);
        stripe.store(value, Ordering::Relaxed);
        value
    }

    /// Adds `n` to the calling thread's shared stripe, with a read-modify-write.
    #[inline]
    fn add_shared(&self, n: usize) -> usize {
        // Relaxed: the count orders nothing; `len` is a statistic that may lag concurrent
        // operations (documented on `Filter::len`).
        self.stripes[shared_stripe()]
            .fetch_add(n, Ordering::Relaxed)
            .wrapping_add(n)
    }

    /// The sum of the stripes, or 0 if it is below zero. A removal can count itself before the
    /// insert it undid has (a filter counts an insert after releasing its locks and a removal
    /// while holding them, and a reader may read the inserter's stripe before its add and the
    /// remover's after its subtraction), so a sum read meanwhile wraps below zero; clamped, it
    /// is a count the filter could have had. (Found in review: `len()` of a nearly empty
    /// filter returned `usize::MAX`.)
    pub(crate) fn sum(&self) -> usize {
        let sum = self
            .stripes
            .iter()
            // Relaxed: as in `add`.
            .fold(0usize, |sum, stripe| {
                sum.wrapping_add(stripe.load(Ordering::Relaxed))
            });
        // A true count never reaches half the address space (every item takes memory), so a
        // sum that large is a negative one.
        if sum > isize::MAX as usize {
            0
        } else {
            sum
        }
    }

    /// Sets the count (exclusive access, e.g. when converting a sequential filter).
    pub(crate) fn reset(&self, value: usize) {
        for stripe in self.stripes.iter() {
            // Relaxed: called before the counter is shared.
            stripe.store(0, Ordering::Relaxed);
        }
        self.add(value);
    }
}

/// The shared stripe of a thread that owns none, by its [`thread_index`].
#[cfg(not(loom))]
#[inline]
fn shared_stripe() -> usize {
    OWNED_STRIPES + thread_index() % SHARED_STRIPES
}

/// Under loom, the one shared stripe.
#[cfg(loom)]
#[inline]
fn shared_stripe() -> usize {
    OWNED_STRIPES
}

/// Who holds which stripe number: bit `k` of the claim word is set while a thread holds number
/// `k` (module doc, "Owned stripes"). The process has one, in [`ownership`]; the loom model of
/// the hand-over makes its own.
pub(crate) struct StripeClaims {
    claimed: AtomicU64,
}

const _: () = assert!(OWNED_STRIPES <= 64, "one claim bit per stripe number");

impl StripeClaims {
    /// No number held.
    #[cfg(not(loom))]
    const fn new() -> Self {
        StripeClaims {
            claimed: AtomicU64::new(0),
        }
    }

    /// No number held.
    #[cfg(loom)]
    fn new() -> Self {
        StripeClaims {
            claimed: AtomicU64::new(0),
        }
    }

    /// Claims the lowest free stripe number, if any.
    fn claim(&self) -> Option<usize> {
        let all = u64::MAX >> (64 - OWNED_STRIPES);
        // Relaxed: a first guess; the compare-exchange decides.
        let mut seen = self.claimed.load(Ordering::Relaxed);
        loop {
            let free = !seen & all;
            if free == 0 {
                return None;
            }
            let own = free.trailing_zeros();
            // Acquire on success: pairs with the Release of the number's last holder (see
            // `release`), so its stores to the stripes happen before ours. Relaxed on failure:
            // only the next guess.
            match self.claimed.compare_exchange_weak(
                seen,
                seen | 1 << own,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(own as usize),
                Err(now) => seen = now,
            }
        }
    }

    /// Gives number `own` back.
    fn release(&self, own: usize) {
        // Release: the next holder of the number, whose claim acquires this, sees every store
        // this thread made to its stripes.
        self.claimed.fetch_and(!(1 << own), Ordering::Release);
    }
}

/// Each thread's claim on the process's stripe numbers, given back when it exits.
#[cfg(not(loom))]
mod ownership {
    use std::cell::Cell;

    use super::{StripeClaims, OWNED_STRIPES};

    /// The process's claims. Its atomic comes from `crate::sync` like every other, but it is
    /// only ever used outside loom (the filters' counters own no stripe under loom).
    static CLAIMS: StripeClaims = StripeClaims::new();

    /// [`STRIPE`] before the thread first asked.
    const UNASKED: u8 = u8::MAX;
    /// [`STRIPE`] of a thread that found every number taken, or whose claim was given back as
    /// it exits.
    const NONE: u8 = u8::MAX - 1;

    std::thread_local! {
        /// The calling thread's stripe number, [`UNASKED`] or [`NONE`]. Read on every add: a
        /// `const`-initialised local without a destructor is one load at a fixed offset from
        /// the thread pointer, with no registration state to check first (the local with the
        /// destructor that gives the number back, [`RELEASE`], is touched only when claiming).
        static STRIPE: Cell<u8> = const { Cell::new(UNASKED) };
        /// Gives the thread's number back when it exits; registered by the claim.
        static RELEASE: Release = const { Release };
    }

    /// The destructor of a thread that claimed a number.
    struct Release;

    impl Drop for Release {
        fn drop(&mut self) {
            // With native thread-locals `STRIPE`, which has no destructor, is there while
            // others run. Where thread-locals sit behind OS keys it may be gone: the number is
            // then not given back (one fewer to own), which loses no count.
            let own = STRIPE
                .try_with(|stripe| stripe.replace(NONE))
                .unwrap_or(NONE) as usize;
            if own < OWNED_STRIPES {
                CLAIMS.release(own);
            }
        }
    }

    /// The stripe number the calling thread holds (claiming one on its first call), or `None`
    /// if every number was taken then, or the thread is exiting.
    #[inline]
    pub(super) fn owned_stripe() -> Option<usize> {
        // `try_with`: as cheap as `with` for a local without a destructor on native
        // thread-locals; elsewhere it may be gone during the thread's destructors.
        let own = STRIPE.try_with(Cell::get).unwrap_or(NONE);
        if (own as usize) < OWNED_STRIPES {
            Some(own as usize)
        } else if own == UNASKED {
            claim()
        } else {
            None
        }
    }

    /// The first call of a thread: registers [`RELEASE`] and claims a number. (A first call
    /// from another thread-local's destructor registers it too, on Linux; should a platform
    /// refuse, the thread claims none and adds to a shared stripe, as it does if `STRIPE` is
    /// gone.)
    #[cold]
    fn claim() -> Option<usize> {
        let registered = RELEASE.try_with(|_| ()).is_ok();
        let claimed = registered.then(|| CLAIMS.claim()).flatten();
        let noted = STRIPE.try_with(|stripe| stripe.set(claimed.map_or(NONE, |k| k as u8)));
        match (claimed, noted) {
            (Some(own), Err(_)) => {
                // Not noted, so never released by `RELEASE`: give it back now.
                CLAIMS.release(own);
                None
            }
            _ => claimed,
        }
    }
}

/// Under loom the filters' counters own no stripe (module doc).
#[cfg(loom)]
mod ownership {
    #[inline]
    pub(super) fn owned_stripe() -> Option<usize> {
        None
    }
}

/// The entry points of the loom model of the stripe hand-over (`tests/loom/counter.rs`).
#[cfg(loom)]
pub mod loom_hooks {
    use super::{StripeClaims, StripedCounter};

    /// A counter with its own claim word of one stripe number.
    pub struct OwnedStripes {
        claims: StripeClaims,
        counter: StripedCounter,
    }

    impl OwnedStripes {
        /// A counter at zero, its number free.
        #[allow(clippy::new_without_default)]
        pub fn new() -> Self {
            OwnedStripes {
                claims: StripeClaims::new(),
                counter: StripedCounter::new(),
            }
        }

        /// Claims the number, adds `n` to its stripe with a plain load and store, and gives the
        /// number back, as a counting thread does over its life; `false`, adding nothing, if
        /// another thread holds the number.
        pub fn add_while_owning(&self, n: usize) -> bool {
            match self.claims.claim() {
                Some(own) => {
                    self.counter.add_owned(own, n);
                    self.claims.release(own);
                    true
                }
                None => false,
            }
        }

        /// Adds `n` as a thread that owns no stripe does.
        pub fn add_shared(&self, n: usize) {
            self.counter.add_shared(n);
        }

        /// The sum of the stripes.
        pub fn sum(&self) -> usize {
            self.counter.sum()
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{StripedCounter, OWNED_STRIPES};

    /// A removal counted before the insert it undid: the sum in between is 0, not a wrapped
    /// negative number, and the count is exact once both are counted.
    #[test]
    fn a_sum_read_before_the_insert_a_removal_undid_is_zero_not_negative() {
        let counter = StripedCounter::new();
        std::thread::scope(|s| {
            s.spawn(|| counter.decrement());
        });
        assert_eq!(counter.sum(), 0);
        counter.increment();
        assert_eq!(counter.sum(), 0);
        counter.increment();
        assert_eq!(counter.sum(), 1);
    }

    /// Increments and decrements from several threads, each on its own stripe, and removals of
    /// items another thread counted (so stripes wrap), sum to the exact count.
    #[test]
    fn the_sum_is_exact_across_threads_and_wrapping_stripes() {
        let counter = StripedCounter::new();
        counter.reset(1000);
        std::thread::scope(|s| {
            for t in 0..4 {
                let counter = &counter;
                s.spawn(move || {
                    for _ in 0..10_000 {
                        counter.increment();
                    }
                    // More removals than this thread's own increments: its stripe wraps.
                    for _ in 0..(10_000 + 100 * t) {
                        counter.decrement();
                    }
                    counter.add(7);
                });
            }
        });
        assert_eq!(counter.sum(), 1000 - 600 + 28);
        counter.reset(5);
        assert_eq!(counter.sum(), 5);
    }

    /// More counting threads alive at once than there are stripe numbers: the late ones add
    /// with read-modify-writes on the shared stripes, and waves of threads that exit pass their
    /// numbers on; no add is lost either way.
    #[test]
    fn no_add_is_lost_with_more_threads_than_numbers_or_numbers_passed_on() {
        let counter = StripedCounter::new();
        let threads = 2 * OWNED_STRIPES + 3;
        for wave in 0..3 {
            let started = std::sync::Barrier::new(threads);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    let (counter, started) = (&counter, &started);
                    s.spawn(move || {
                        // Every thread of the wave claims (or fails to) before any exits.
                        counter.increment();
                        started.wait();
                        for _ in 0..5_000 {
                            counter.increment();
                        }
                        counter.decrement();
                    });
                }
            });
            assert_eq!(counter.sum(), (wave + 1) * threads * 5_000);
        }
    }

    /// Adds made from thread-locals' destructors, before and after the thread's number is given
    /// back (the order of the destructors is the platform's), and by a thread whose first add
    /// comes from one, are all counted and panic nowhere.
    #[test]
    fn adds_from_thread_local_destructors_are_counted() {
        struct AddOnExit(&'static StripedCounter);
        impl Drop for AddOnExit {
            fn drop(&mut self) {
                self.0.add(10);
            }
        }
        std::thread_local! {
            static ON_EXIT: std::cell::RefCell<Option<AddOnExit>> =
                const { std::cell::RefCell::new(None) };
        }
        let counter: &'static StripedCounter = Box::leak(Box::new(StripedCounter::new()));
        let add_on_exit =
            move || ON_EXIT.with(|slot| *slot.borrow_mut() = Some(AddOnExit(counter)));
        // `join` (not a scope's end) waits for the destructors: the thread has exited.
        let threads = [
            // Registered before the claim's destructor, and after it.
            std::thread::spawn(move || {
                add_on_exit();
                counter.increment();
            }),
            std::thread::spawn(move || {
                counter.increment();
                add_on_exit();
            }),
            // The first add of this thread comes from its destructor.
            std::thread::spawn(add_on_exit),
        ];
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(counter.sum(), 32);
    }
}
