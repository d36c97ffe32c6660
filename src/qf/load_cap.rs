//! The load cap of the quotient filters that shift: past about 31/32 of the `2^q` slots they
//! refuse inserts with `Full` instead of taking keys up to the table's last slot.
//!
//! Clusters grow as `1 / (1 - fill)^2` (paper 000 §2.1), and so do lookups and inserts: the
//! table ends in one cluster, where a lookup walks much of the table and an insert that finds no
//! room has walked it first. [`LinearProbingQf`](crate::LinearProbingQf) stops at its own cap
//! ([`CapBudget`](crate::budget::CapBudget)); the filters here stop at [`load_cap`].
//!
//! The 3-status-bit filters count fingerprints, one slot each. [`CountingQf`](crate::CountingQf)
//! counts the slots its entries take (a fingerprint's copies take one slot each up to two, then
//! the few slots of a counter): an update adds what its entry grew by, a removal subtracts what
//! it shrank by. At the cap it refuses only the inserts whose entry would grow; a count that
//! stays within its counter's digits still goes up.
//!
//! # Sampled, not exact
//!
//! An exact cap needs every insert to take a place from a shared budget before it writes: a
//! read-modify-write that the 3-status-bit filters' inserts do not pay today (their `len` is a
//! [`StripedCounter`] a thread adds to with a plain store). [`LoadCap`] samples instead: an
//! insert sums the counter when the stripe it added to reaches a multiple of the check
//! interval, and a sum at the cap raises a flag that every insert reads first (one load of a
//! line that is only written when the flag flips). While the flag is up, each insert sums again
//! and is refused unless the sum has dropped below the cap (keys were removed meanwhile), which
//! lowers the flag. The sum is not a snapshot (it may read one stripe before a removal and
//! another after a later insert), so inserts racing removals near the cap may be refused a few
//! keys below it or let a few past it; inserts alone are never refused below it.
//!
//! A sum reads a cache line per stripe, some of them just written by other threads, so it is
//! done rarely while the count is far below the cap: each check sets the interval to the
//! largest power of two at most a [`SPREAD`]th of the room left under the cap (at most
//! [`MAX_CHECK_EVERY`]). The threads add at most one interval each before they check again, so
//! up to [`SPREAD`] `/ 2` threads cannot carry the count past the cap between two checks unless
//! the interval is down to one insert; one thread stops exactly at the cap (a `CountingQf`
//! insert admitted just below it may add an entry's few slots), many stop a few inserts per
//! thread past it. [`SequentialQf`](crate::SequentialQf) counts exactly and stops
//! at the cap itself.
//!
//! The cap is a guard against a cliff, not part of any synchronisation: its orderings are all
//! `Relaxed`, and a late flag or interval only lets a few more keys in.
//!
//! # Stored keys at the cap
//!
//! A set filter refuses only the keys it would have to store: an insert at the cap looks its
//! key up ([`refuse_unless_stored`]) and answers `Ok(false)` if it is there, as below the cap,
//! so inserting a key twice never fails the second time. The concurrent filters look with the
//! queries that never trust a misread hit (`contains_hash_locked`, or the region locks); a hit
//! is the key stored at that instant, where the insert takes effect. `CountingQf` counts
//! repeats, so an insert of a stored key is a write like any other and is refused as one.

use crate::counter::StripedCounter;
use crate::filter::Full;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// The answer of a set filter's insert that the cap refuses room: `Ok(false)` if `stored()`
/// finds the key (set semantics at the cap as below it, module docs), `Full` if not. Out of the
/// inserts' way: with the error built in line, `SequentialQf`'s insert stopped inlining its
/// shift (+30% instructions per insert, callgrind).
#[cold]
#[inline(never)]
pub(crate) fn refuse_unless_stored<E: From<Full>>(
    stored: impl FnOnce() -> bool,
) -> Result<bool, E> {
    if stored() {
        Ok(false)
    } else {
        Err(Full.into())
    }
}

/// Tables with fewer quotient bits are not capped: a walk of the whole table (512 slots or
/// fewer, a few kilobytes) is the worst a lookup or a failed insert can cost there, and small
/// tables filled past the cap exist in tests and in the golden files of the portable format
/// (`tests/golden`: a 256-slot filter holding 300 keys in its overflow tail), as well as the
/// 8-32-slot tables of the loom models, which thus never touch the cap's flag.
pub(crate) const MIN_CAPPED_QUOTIENT_BITS: u32 = 10;

/// The check interval is at most the room under the cap over this: twice the 16 threads whose
/// stripes the counter keeps apart.
const SPREAD: usize = 32;

/// At most this many inserts of one thread between two checks of the sum, which loads the
/// counter's two dozen stripes: fewer than one load per 40 inserts (arithmetic, not timed).
const MAX_CHECK_EVERY: usize = 1024;

/// How many fingerprints a quotient filter with `2^quotient_bits` canonical slots takes before
/// it refuses inserts: `2^q - 2^q / 32` (96.9% of the slots), or no limit below
/// [`MIN_CAPPED_QUOTIENT_BITS`] (the overflow tail still ends such a table).
pub(crate) fn load_cap(quotient_bits: u32) -> usize {
    if quotient_bits < MIN_CAPPED_QUOTIENT_BITS {
        return usize::MAX;
    }
    let slots = 1usize << quotient_bits;
    slots - slots / 32
}

/// The sampled cap of a concurrent filter (module doc).
pub(crate) struct LoadCap {
    /// [`load_cap`] of the table.
    cap: usize,
    /// An insert checks the sum when its stripe's new value has none of these bits set: the
    /// check interval less one, set by each check from the room it found.
    check_mask: AtomicUsize,
    /// Raised by a sum at or above the cap, lowered by one below it.
    reached: AtomicBool,
}

impl LoadCap {
    /// The cap of a table with `2^quotient_bits` canonical slots holding the `len` counts.
    pub(crate) fn new(quotient_bits: u32, len: &StripedCounter) -> Self {
        let cap = load_cap(quotient_bits);
        let load_cap = LoadCap {
            cap,
            check_mask: AtomicUsize::new(MAX_CHECK_EVERY - 1),
            reached: AtomicBool::new(false),
        };
        load_cap.recount(len);
        load_cap
    }

    /// A counter holding `len` and the cap of a table with `2^quotient_bits` canonical slots
    /// over it: what a concurrent filter keeps of its count.
    pub(crate) fn with_counter(quotient_bits: u32, len: usize) -> (StripedCounter, Self) {
        let counter = StripedCounter::new();
        counter.reset(len);
        let cap = Self::new(quotient_bits, &counter);
        (counter, cap)
    }

    /// Sets the count to `count` (exclusive access: `&mut` to the filter, or one not shared
    /// yet, as [`StripedCounter::reset`] needs), and the flag and the interval from it
    /// ([`recount`](Self::recount)).
    pub(crate) fn set_count(&self, len: &StripedCounter, count: usize) {
        len.reset(count);
        self.recount(len);
    }

    /// Sets the flag and the interval from the sum, after `len` was set rather than counted
    /// insert by insert (a batch write with `&mut` access, a migration's bulk count). Nothing
    /// to do for an uncapped table, whose flag stays down (and the loom models' tables, all
    /// uncapped, touch no atomic here).
    pub(crate) fn recount(&self, len: &StripedCounter) {
        if self.cap == usize::MAX {
            return;
        }
        let sum = len.sum();
        // Relaxed: as in `admits`.
        self.reached.store(sum >= self.cap, Ordering::Relaxed);
        self.set_interval(sum);
    }

    /// Whether an insert may go ahead; `false` means the filter is at its cap and the insert
    /// must return `Full` without writing.
    #[inline(always)]
    pub(crate) fn admits(&self, len: &StripedCounter) -> bool {
        if cfg!(loom) && self.cap == usize::MAX {
            // The loom models' tables are all uncapped: they explore no load of the flag.
            return true;
        }
        // Relaxed: a hint (module doc); the sum below decides.
        !self.reached.load(Ordering::Relaxed) || self.admits_after_sum(len)
    }

    /// [`admits`](Self::admits) while the flag is up.
    #[cold]
    fn admits_after_sum(&self, len: &StripedCounter) -> bool {
        let sum = len.sum();
        let below = sum < self.cap;
        if below {
            // Relaxed: as in `admits`.
            self.reached.store(false, Ordering::Relaxed);
            self.set_interval(sum);
        }
        below
    }

    /// Counts a stored fingerprint in `len` ([`count_added`](Self::count_added) of one).
    #[inline(always)]
    pub(crate) fn count_insert(&self, len: &StripedCounter) {
        self.count_added(len, 1);
    }

    /// Counts `n` more stored fingerprints (or, for [`CountingQf`](crate::CountingQf), slots)
    /// in `len`, and checks the sum when this thread's stripe passes a multiple of the check
    /// interval.
    #[inline(always)]
    pub(crate) fn count_added(&self, len: &StripedCounter, n: usize) {
        if cfg!(loom) && self.cap == usize::MAX {
            // As in `admits`.
            len.add(n);
            return;
        }
        let now = len.add(n);
        // Relaxed: as in `admits`; a stale interval only moves this thread's next check.
        let mask = self.check_mask.load(Ordering::Relaxed);
        // The stripe went from `now - n` to `now`: the two differ above the mask's bits iff a
        // multiple of the interval lies in `(now - n, now]`. For `n = 1` (every insert of the
        // 3-status-bit filters; inlined, so decided at compile time) that is `now & mask == 0`,
        // two instructions fewer per insert (callgrind, `W=inserts F=locally-locked Q=16 R=1
        // peer_probe`: 38.57M -> 38.47M).
        let crossed = if n == 1 {
            now & mask == 0
        } else {
            now ^ now.wrapping_sub(n) > mask
        };
        if crossed {
            self.check(len);
        }
    }

    /// Raises the flag if the sum is at the cap, and sets the interval from the room left.
    #[cold]
    fn check(&self, len: &StripedCounter) {
        if self.cap == usize::MAX {
            return;
        }
        let sum = len.sum();
        if sum >= self.cap {
            // Relaxed: as in `admits`.
            self.reached.store(true, Ordering::Relaxed);
        }
        self.set_interval(sum);
    }

    /// The interval for a count of `sum` (module doc), stored only if it changes, so that the
    /// line every insert reads is rarely written.
    fn set_interval(&self, sum: usize) {
        let mask = self.interval_for(sum) - 1;
        // Relaxed: as in `admits`.
        if self.check_mask.load(Ordering::Relaxed) != mask {
            self.check_mask.store(mask, Ordering::Relaxed);
        }
    }

    /// The check interval at a count of `sum`: a power of two ([`MAX_CHECK_EVERY`] for an
    /// uncapped table, whose room never runs out).
    fn interval_for(&self, sum: usize) -> usize {
        let room = self.cap.saturating_sub(sum) / SPREAD;
        let every = room.clamp(1, MAX_CHECK_EVERY);
        1 << every.ilog2()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_31_32_of_the_slots_from_1024_slots_on() {
        assert_eq!(load_cap(9), usize::MAX);
        assert_eq!(load_cap(10), 992);
        assert_eq!(load_cap(20), (1 << 20) - (1 << 15));
    }

    #[test]
    fn the_interval_is_a_power_of_two_at_most_a_spread_th_of_the_room() {
        let len = StripedCounter::new();
        let cap = LoadCap::new(20, &len);
        assert_eq!(cap.interval_for(0), MAX_CHECK_EVERY);
        for sum in [
            cap.cap - 40_000,
            cap.cap - 1000,
            cap.cap - 64,
            cap.cap - 1,
            cap.cap,
        ] {
            let every = cap.interval_for(sum);
            assert!(every.is_power_of_two());
            assert!(
                every == 1 || every * SPREAD <= cap.cap - sum,
                "{sum}: {every}"
            );
            assert!(every * SPREAD * 2 > (cap.cap - sum).min(MAX_CHECK_EVERY * SPREAD));
        }
    }

    /// One thread counts inserts until the cap refuses: exactly at the cap, since the interval
    /// shrinks to one insert as the count nears it; removals below the cap let inserts in
    /// again, and an uncapped counter never refuses.
    #[test]
    fn one_thread_is_refused_exactly_at_the_cap() {
        for q in [10, 12, 16, 20] {
            let len = StripedCounter::new();
            let cap = LoadCap::new(q, &len);
            let mut counted = 0;
            while cap.admits(&len) {
                cap.count_insert(&len);
                counted += 1;
            }
            assert_eq!(counted, cap.cap, "q = {q}");
            assert!(!cap.admits(&len), "still at the cap");
            len.decrement();
            assert!(cap.admits(&len), "below the cap again");
        }
        let len = StripedCounter::new();
        let uncapped = LoadCap::new(9, &len);
        for _ in 0..10_000 {
            assert!(uncapped.admits(&len));
            uncapped.count_insert(&len);
        }
    }

    #[test]
    fn a_counter_already_at_the_cap_is_refused_from_the_start() {
        let len = StripedCounter::new();
        len.reset(load_cap(10));
        assert!(!LoadCap::new(10, &len).admits(&len));
        len.reset(load_cap(10) - 1);
        assert!(LoadCap::new(10, &len).admits(&len));
    }
}
