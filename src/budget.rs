//! A load cap that concurrent inserts share without contending on one counter: the places under
//! the cap of [`LinearProbingQf`](crate::LinearProbingQf) (paper 000 §3.1, whose inserts must
//! stop at a fill where Corollary 1 still bounds the false-positive rate).
//!
//! One shared `len` counter that every insert increments serialises all inserts on one cache
//! line: with two threads, the lock-free filter inserted more slowly than with one. Here the cap
//! is split up front into [`STRIPES`] cache-padded stripes of places not yet handed out. A thread
//! takes a place from the first non-empty stripe at or after its home stripe, so threads on
//! different homes write different cache lines until the stripes run dry near the cap.
//!
//! ```text
//!   stripes:  [ 12 ][ 12 ][ 12 ][ 12 ] ... [ 11 ]   only ever decrease while shared
//!   returned: [  0 ]                                places given back by inserts that stored
//!                                                   nothing
//! ```
//!
//! # Why "full" is exact
//!
//! [`take`](CapBudget::take) answers `false` only after it has seen every stripe at 0 and then
//! `returned` at 0. A stripe only decreases while the budget is shared, and a stripe's 0 is
//! therefore final: when `take` reads `returned` at 0, every stripe it passed is still 0, so at
//! that moment no place is left anywhere and every place is held by a take that has not been
//! given back. This is the guarantee a single counter gives (it too counts takes in flight), and
//! the reason give-backs go to `returned` and never back into a stripe: a place given back into a
//! stripe that a concurrent `take` had already passed at 0 could be missed, and `take` could
//! answer "full" while a place was free.
//!
//! # Orderings
//!
//! The count itself needs only the modification order of each counter, which every ordering
//! has: the argument above uses nothing else, and a read-modify-write reads the newest value of
//! its counter, so two takes never hand out the same place. What needs more is the filter's
//! `Full` (`LinearProbingQf`'s module doc): a refused insert must then see every key stored
//! before a place it counted as taken was taken. So a take's CAS is `Release` and the load that
//! finds a stripe at 0 is `Acquire`. Every write to a stripe after the first is a
//! read-modify-write, so the value 0 ends the release sequence of every earlier take of that
//! stripe, and reading it synchronises with all of them. The dry mask hands this on: a thread
//! marks a stripe (`Release`) after reading its 0 (`Acquire`), and a thread that skips the
//! stripe read the mark with `Acquire`. Give-backs are `Release` and takes from `returned`
//! `Acquire`, for the same reason. [`used`](CapBudget::used) is a statistic and `Relaxed`.
//! On x86 all of this compiles to the same instructions as `Relaxed`.

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicUsize, Ordering};

/// Stripes per budget: a power of two, at least the thread counts the crate is measured at.
/// Under loom two, so models stay small and can still make a thread steal from another stripe.
#[cfg(not(loom))]
pub(crate) const STRIPES: usize = 16;
#[cfg(loom)]
pub(crate) const STRIPES: usize = 2;

/// The places left under a fixed cap, striped so concurrent takers rarely share a cache line.
pub(crate) struct CapBudget {
    cap: usize,
    /// Places never handed out, `cap` spread evenly; each only decreases while shared.
    stripes: Box<[CachePadded<AtomicUsize>]>,
    /// Places handed out and given back unused.
    returned: CachePadded<AtomicUsize>,
    /// Bit `i` is set once a taker has seen stripe `i` at 0, which is final: takers skip the
    /// stripes it marks instead of reading each of them.
    dry: CachePadded<AtomicUsize>,
}

/// The [`CapBudget::dry`] mask with every stripe marked.
const ALL_DRY: usize = usize::MAX >> (usize::BITS as usize - STRIPES);

impl CapBudget {
    /// The heap memory of the stripes (a cache line each).
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.stripes)
    }

    /// A budget of `cap` places, none used.
    pub(crate) fn new(cap: usize) -> Self {
        let budget = CapBudget {
            cap,
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            returned: CachePadded::new(AtomicUsize::new(0)),
            dry: CachePadded::new(AtomicUsize::new(0)),
        };
        budget.set_used(0);
        budget
    }

    /// The cap.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Takes one place; `false` if every place is taken (module doc, "Why 'full' is exact").
    /// `hint` is any number that varies between calls, e.g. the key's quotient: it picks the
    /// stripe to move to when this thread's stripe is contended or dry (and, under loom only,
    /// the stripe to start from).
    #[inline]
    pub(crate) fn take(&self, hint: usize) -> bool {
        let stripe = preferred_stripe(hint);
        match try_take(&self.stripes[stripe]) {
            Attempt::Taken => true,
            miss => self.take_after_miss(stripe, miss, hint),
        }
    }

    /// The slow path of [`take`](Self::take): `stripe` was dry or contended. Moves to another
    /// stripe that is not marked dry, chosen from `hint`, marking the ones found at 0, until a
    /// take succeeds or every stripe is marked; then takes from the places given back.
    ///
    /// Lock-free: a contended attempt means another thread's take succeeded, and each dry
    /// attempt marks one more of the [`STRIPES`] stripes.
    #[cold]
    fn take_after_miss(&self, mut stripe: usize, mut miss: Attempt, hint: usize) -> bool {
        // Acquire: a mark stands for a 0 another thread read, whose takes this thread must see
        // as well (module doc, "Orderings"). A bit is set only after its stripe was seen at 0,
        // so a stale mask only sends this thread to a stripe that it will find dry and mark.
        let mut dry = self.dry.load(Ordering::Acquire);
        for attempt in 1usize.. {
            let bit = 1 << stripe;
            if matches!(miss, Attempt::Dry) && dry & bit == 0 {
                // AcqRel: Release hands on the takes this thread saw when it read the 0, Acquire
                // takes the other marks' (module doc, "Orderings"). Each bit is set about once,
                // so the mask's cache line is read-mostly.
                dry = self.dry.fetch_or(bit, Ordering::AcqRel) | bit;
            }
            if dry == ALL_DRY {
                break;
            }
            stripe = nth_live_stripe(dry, mix(hint, attempt));
            miss = try_take(&self.stripes[stripe]);
            if matches!(miss, Attempt::Taken) {
                prefer_stripe(stripe);
                return true;
            }
        }
        take_one(&self.returned)
    }

    /// Gives back a place that was taken and not used.
    #[inline]
    pub(crate) fn give_back(&self) {
        // Release: the place joins `returned`'s release sequence for the take that gets it or
        // finds `returned` at 0 later (module doc, "Orderings").
        self.returned.fetch_add(1, Ordering::Release);
    }

    /// Places taken and not given back. While takers run, a statistic: it counts takes in
    /// flight, and a place taken from a stripe after the sum read that stripe and given back
    /// before it read `returned` is counted free twice, so the result may briefly be a little
    /// low. Never above the cap.
    pub(crate) fn used(&self) -> usize {
        // Relaxed: module doc; no answer depends on this sum.
        let left = self.stripes.iter().fold(0usize, |sum, stripe| {
            sum.saturating_add(stripe.load(Ordering::Relaxed))
        });
        let left = left.saturating_add(self.returned.load(Ordering::Relaxed));
        self.cap.saturating_sub(left)
    }

    /// Sets the places used, spreading the rest evenly over the stripes. Only before the budget
    /// is shared (when a filter is built or read from bytes); `used` must not exceed the cap.
    pub(crate) fn set_used(&self, used: usize) {
        debug_assert!(used <= self.cap);
        let left = self.cap.saturating_sub(used);
        let (share, extra) = (left / STRIPES, left % STRIPES);
        for (index, stripe) in self.stripes.iter().enumerate() {
            // Relaxed: the budget is not shared yet; handing it to other threads orders this.
            stripe.store(share + usize::from(index < extra), Ordering::Relaxed);
        }
        // Relaxed: as above.
        self.returned.store(0, Ordering::Relaxed);
        // Relaxed: as above.
        self.dry.store(0, Ordering::Relaxed);
    }
}

/// What one attempt on a stripe found.
#[derive(Clone, Copy)]
enum Attempt {
    /// It took a place.
    Taken,
    /// The stripe was 0, for good.
    Dry,
    /// Its CAS lost to another thread's take.
    Contended,
}

/// One attempt to take a place from `stripe`: a load and, unless it reads 0, one CAS.
#[inline]
fn try_take(stripe: &AtomicUsize) -> Attempt {
    // Acquire: a 0 read here decides a refusal, which must see the takes that made it (module
    // doc, "Orderings"). A stale read costs a lost CAS, never a wrong answer: a stripe's 0 is
    // final.
    let left = stripe.load(Ordering::Acquire);
    if left == 0 {
        return Attempt::Dry;
    }
    // Release: the take joins the stripe's release sequence (module doc, "Orderings").
    // Relaxed on failure: the caller moves on to another stripe and reads that one afresh.
    match stripe.compare_exchange(left, left - 1, Ordering::Release, Ordering::Relaxed) {
        Ok(_) => Attempt::Taken,
        Err(_) => Attempt::Contended,
    }
}

/// Takes one from `returned` unless it is 0.
fn take_one(counter: &AtomicUsize) -> bool {
    // AcqRel and Acquire: as a stripe's take (module doc, "Orderings"). A 0 read here is the
    // counter's value at some moment after every stripe was seen at 0, when every place was
    // taken.
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
            left.checked_sub(1)
        })
        .is_ok()
}

/// The `(r mod k)`-th of the `k` stripes not marked in `dry` (`dry` is not [`ALL_DRY`]).
fn nth_live_stripe(dry: usize, r: usize) -> usize {
    let mut live = !dry & ALL_DRY;
    for _ in 0..r % live.count_ones() as usize {
        live &= live - 1;
    }
    live.trailing_zeros() as usize
}

/// A pseudo-random number from `hint` and an attempt counter (a splitmix64 step), so that
/// threads whose takes collide move to different stripes.
fn mix(hint: usize, attempt: usize) -> usize {
    let mut z = (hint as u64).wrapping_add((attempt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as usize
}

std::thread_local! {
    /// The stripe this thread takes from first, in every budget; `None` until its first take.
    #[cfg(not(loom))]
    static PREFERRED: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The stripe this thread takes from first.
///
/// Thread `t` (its [`thread_index`](crate::sync::thread_index)) starts at `t % STRIPES` with its
/// bits reversed (0, 8, 4, 12, ... for 16 stripes), so the first threads start far apart. A
/// thread whose stripe runs dry or is contended moves to the stripe where it next succeeds
/// ([`prefer_stripe`]), like a `LongAdder` cell in Java: threads that collide part again.
#[cfg(not(loom))]
#[inline]
fn preferred_stripe(_hint: usize) -> usize {
    PREFERRED.with(|preferred| match preferred.get() {
        Some(stripe) => stripe,
        None => {
            let stripe = reversed_bits(crate::sync::thread_index() % STRIPES);
            preferred.set(Some(stripe));
            stripe
        }
    })
}

/// Makes `stripe` this thread's first choice from now on.
#[cfg(not(loom))]
fn prefer_stripe(stripe: usize) {
    PREFERRED.with(|preferred| preferred.set(Some(stripe)));
}

/// Under loom every modelled thread runs on one OS thread, so thread-local state would be
/// shared between them: the caller's hint picks the stripe instead, which lets a model choose
/// its stripes through its keys.
#[cfg(loom)]
#[inline]
fn preferred_stripe(hint: usize) -> usize {
    hint % STRIPES
}

/// Under loom a thread has no lasting preference (see [`preferred_stripe`]).
#[cfg(loom)]
fn prefer_stripe(_stripe: usize) {}

/// `index < STRIPES` with its `log2(STRIPES)` bits in reverse order.
#[cfg(not(loom))]
fn reversed_bits(index: usize) -> usize {
    let bits = STRIPES.trailing_zeros();
    index.reverse_bits() >> (usize::BITS - bits)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{reversed_bits, Attempt, CapBudget, STRIPES};
    use crate::sync::Ordering;

    #[test]
    fn reversed_homes_are_a_permutation_that_spreads_the_first_threads() {
        let mut homes: Vec<usize> = (0..STRIPES).map(reversed_bits).collect();
        assert_eq!(&homes[..4], &[0, STRIPES / 2, STRIPES / 4, 3 * STRIPES / 4]);
        homes.sort_unstable();
        assert_eq!(homes, (0..STRIPES).collect::<Vec<_>>());
    }

    /// Exactly `cap` takes succeed on one thread, whatever the cap's split over the stripes, and
    /// a place given back can be taken again, once.
    #[test]
    fn one_thread_takes_exactly_the_cap() {
        for cap in [0, 1, STRIPES - 1, STRIPES, 3 * STRIPES + 5] {
            let budget = CapBudget::new(cap);
            let taken = (0..cap + 10).filter(|_| budget.take(0)).count();
            assert_eq!(taken, cap, "cap {cap}");
            assert_eq!(budget.used(), cap);
            if cap > 0 {
                budget.give_back();
                assert_eq!(budget.used(), cap - 1);
                assert!(budget.take(0));
                assert!(!budget.take(0));
            }
            budget.set_used(cap / 2);
            assert_eq!(budget.used(), cap / 2);
            assert_eq!((0..cap).filter(|_| budget.take(0)).count(), cap - cap / 2);
        }
    }

    /// A take that lost a stripe's CAS to another take moves on without marking the stripe dry:
    /// the stripe may still hold places, and a mark would hide them from every take that skips
    /// marked stripes, so the budget could refuse below its cap ("Why 'full' is exact"). The
    /// slow path is entered as after a CAS lost on stripe 0, every place still there.
    #[test]
    fn a_contended_stripe_is_not_marked_dry() {
        let budget = CapBudget::new(2 * STRIPES);
        assert!(budget.take_after_miss(0, Attempt::Contended, 0));
        assert_eq!(budget.dry.load(Ordering::Relaxed), 0, "a stripe marked dry");
        assert_eq!(budget.used(), 1);
    }

    /// Two threads, each waiting for the other before its first take, race for a budget of a
    /// few places per stripe, round after round: exactly the cap is taken between them. A take
    /// that lost a race for a stripe and still counted (its CAS made a plain store: caught
    /// within 2-428 rounds in eight runs), or two takes of one place, would leave more or fewer.
    #[test]
    fn racing_takes_of_a_small_budget_take_exactly_the_cap() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cap = 4 * STRIPES + 3;
        for round in 0..3_000 {
            let budget = CapBudget::new(cap);
            let ready = AtomicUsize::new(0);
            let taken: usize = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..2)
                    .map(|t| {
                        let (budget, ready) = (&budget, &ready);
                        scope.spawn(move || {
                            // SeqCst: a start line, not a synchronisation of data.
                            ready.fetch_add(1, Ordering::SeqCst);
                            while ready.load(Ordering::SeqCst) < 2 {
                                std::thread::yield_now();
                            }
                            // The hints differ between threads and calls, as quotients do.
                            (0..).take_while(|i: &usize| budget.take(i * 2 + t)).count()
                        })
                    })
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).sum()
            });
            assert_eq!(taken, cap, "round {round}");
        }
    }

    /// Threads that take until refused, giving back every third place, end with exactly the cap
    /// taken between them.
    #[test]
    fn threads_together_take_exactly_the_cap() {
        let cap = 100_003;
        let budget = CapBudget::new(cap);
        let kept: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let mut kept = 0;
                        let mut tries = 0usize;
                        while budget.take(0) {
                            tries += 1;
                            if tries % 3 == 0 {
                                budget.give_back();
                            } else {
                                kept += 1;
                            }
                        }
                        kept
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        assert_eq!(kept, cap);
        assert_eq!(budget.used(), cap);
        assert!(!budget.take(0));
    }
}
