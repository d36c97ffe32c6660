//! A striped counter for `len()`: writers add to one of several cache-padded stripes, so threads
//! inserting into different parts of a table rarely bounce the same cache line, and readers of the
//! table never touch it (DESIGN.md, "Concurrency rules").

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicUsize, Ordering};

/// Stripes per counter: a power of two, about the thread counts this crate is measured at.
const STRIPES: usize = 16;

/// A count of stored items, split into stripes chosen by the caller (e.g. by slot index).
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

    /// Adds one, on the stripe that `hint` picks.
    #[inline]
    pub(crate) fn increment(&self, hint: usize) {
        // Relaxed: the count orders nothing; `len` is a statistic that may lag concurrent
        // operations (documented on `Filter::len`).
        self.stripes[hint % STRIPES].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` spread evenly over all stripes (the remainder one each from the stripe `hint`
    /// picks on), so that [`estimate`](Self::estimate) stays close to the sum for every hint,
    /// e.g. after a migration copied a whole block of items at once.
    pub(crate) fn add_spread(&self, hint: usize, n: usize) {
        let (share, extra) = (n / STRIPES, n % STRIPES);
        for offset in 0..STRIPES {
            let add = share + usize::from(offset < extra);
            if add > 0 {
                // Relaxed: as in `increment`.
                self.stripes[(hint + offset) % STRIPES].fetch_add(add, Ordering::Relaxed);
            }
        }
    }

    /// The stripe that `hint` picks, times the number of stripes: an estimate of the sum from
    /// one cache line, for callers that only need to notice when the count passes a threshold.
    #[inline]
    pub(crate) fn estimate(&self, hint: usize) -> usize {
        // Relaxed: as in `increment`.
        self.stripes[hint % STRIPES]
            .load(Ordering::Relaxed)
            .wrapping_mul(STRIPES)
    }

    /// Subtracts one, on the stripe that `hint` picks (stripes may wrap; the sum does not).
    #[inline]
    pub(crate) fn decrement(&self, hint: usize) {
        // Relaxed: as in `increment`.
        self.stripes[hint % STRIPES].fetch_sub(1, Ordering::Relaxed);
    }

    /// The sum of the stripes.
    pub(crate) fn sum(&self) -> usize {
        self.stripes
            .iter()
            // Relaxed: as in `increment`.
            .fold(0usize, |sum, stripe| {
                sum.wrapping_add(stripe.load(Ordering::Relaxed))
            })
    }

    /// Sets the count (exclusive access, e.g. when converting a sequential filter), spread
    /// evenly over the stripes like [`add_spread`](Self::add_spread), so that
    /// [`estimate`](Self::estimate) stays close to it for every hint.
    pub(crate) fn reset(&self, value: usize) {
        for stripe in self.stripes.iter() {
            // Relaxed: called before the counter is shared.
            stripe.store(0, Ordering::Relaxed);
        }
        self.add_spread(0, value);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{StripedCounter, STRIPES};

    /// After a bulk add or a reset, every stripe's estimate is within one stripe's weight of
    /// the sum.
    #[test]
    fn a_spread_add_keeps_every_estimate_near_the_sum() {
        for n in [0, 5, STRIPES, 37, 4096] {
            let counter = StripedCounter::new();
            counter.add_spread(3, n);
            let reset = StripedCounter::new();
            reset.increment(1);
            reset.reset(n);
            assert_eq!(reset.sum(), n);
            for hint in 0..STRIPES {
                assert!(
                    reset.estimate(hint).abs_diff(n) <= STRIPES,
                    "reset {n}, hint {hint}"
                );
            }
            assert_eq!(counter.sum(), n);
            for hint in 0..STRIPES {
                let estimate = counter.estimate(hint);
                assert!(
                    estimate.abs_diff(n) < STRIPES,
                    "n {n}: stripe {hint} estimates {estimate}"
                );
            }
        }
    }
}
