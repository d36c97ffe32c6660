//! A striped counter for `len()`: each thread adds to its own cache-padded stripe, so writers
//! on different threads do not bounce one cache line, and readers of the table never touch it
//! (DESIGN.md, "Concurrency rules").
//!
//! The stripes used to be picked by slot index. With random keys every thread then wrote every
//! stripe, so about every other increment missed on a line the other thread had just written:
//! removing the increment from the 3-bit filters raised their 2-thread inserts in Figure 2 from
//! 21.3 / 18.2 to 24.5 / 22.4 M/s (`LocallyLockedQf`) and from 19.0 / 18.1 to 23.1 / 23.6
//! (`ExternallyLockedQf`), in two alternated runs of `figures --only fig2`.

use crossbeam_utils::CachePadded;

use crate::sync::{thread_index, AtomicUsize, Ordering};

/// Stripes per counter: a power of two, about the thread counts this crate is measured at.
/// More threads than stripes share stripes, which stays correct.
const STRIPES: usize = 16;

/// A count of stored items, split into one stripe per thread.
pub(crate) struct StripedCounter {
    stripes: Box<[CachePadded<AtomicUsize>]>,
}

impl StripedCounter {
    /// A counter at zero.
    pub(crate) fn new() -> Self {
        StripedCounter {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }

    /// The calling thread's stripe.
    #[inline]
    fn own(&self) -> &AtomicUsize {
        &self.stripes[thread_index() % STRIPES]
    }

    /// Adds one.
    #[inline]
    pub(crate) fn increment(&self) {
        self.add(1);
    }

    /// Adds `n`.
    #[inline]
    pub(crate) fn add(&self, n: usize) {
        // Relaxed: the count orders nothing; `len` is a statistic that may lag concurrent
        // operations (documented on `Filter::len`).
        self.own().fetch_add(n, Ordering::Relaxed);
    }

    /// Subtracts one (a stripe may wrap below zero when another thread's stripe holds the
    /// item; the sum does not).
    #[inline]
    pub(crate) fn decrement(&self) {
        // Relaxed: as in `add`.
        self.own().fetch_sub(1, Ordering::Relaxed);
    }

    /// The sum of the stripes.
    pub(crate) fn sum(&self) -> usize {
        self.stripes
            .iter()
            // Relaxed: as in `add`.
            .fold(0usize, |sum, stripe| {
                sum.wrapping_add(stripe.load(Ordering::Relaxed))
            })
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::StripedCounter;

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
}
