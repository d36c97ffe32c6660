//! `LinearProbingQf` against an exact linear probing model (proptest), the overflow tail, the
//! load cap, bad parameters, the measured false-positive rate against Corollary 1 of paper 000,
//! and real threads.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::{hash_of, ops, Op};
use conqf::{linear_probing_fpr, Error, Filter, Fingerprint, LinearProbingQf};
use proptest::prelude::*;

/// A plain array simulation of linear probing over `(quotient, non-zero remainder)` pairs: what
/// the filter must do, slot for slot.
struct LinearProbingModel {
    q: u32,
    r: u32,
    slots: Vec<u64>,
    cap: usize,
    len: usize,
}

impl LinearProbingModel {
    fn like(filter: &LinearProbingQf) -> Self {
        LinearProbingModel {
            q: filter.quotient_bits(),
            r: filter.remainder_bits(),
            slots: vec![0; filter.slot_count()],
            cap: filter.capacity(),
            len: 0,
        }
    }

    /// The fingerprint, for hashes whose remainder is non-zero (so no re-mix happens).
    fn fingerprint(&self, hash: u64) -> (usize, u64) {
        let f = Fingerprint::split(hash, self.q, self.r);
        assert_ne!(f.remainder, 0, "the generator must avoid the re-mix");
        (f.quotient as usize, f.remainder)
    }

    /// The first empty slot from `quotient`, or `Err(())` if `remainder` comes first.
    fn probe(&self, quotient: usize, remainder: u64) -> Result<usize, ()> {
        let mut i = quotient;
        while self.slots[i] != 0 {
            if self.slots[i] == remainder {
                return Err(());
            }
            i += 1;
        }
        Ok(i)
    }

    fn insert(&mut self, hash: u64) -> Result<bool, Error> {
        let (quotient, remainder) = self.fingerprint(hash);
        let Ok(empty) = self.probe(quotient, remainder) else {
            return Ok(false);
        };
        if empty == self.slots.len() - 1 || self.len == self.cap {
            return Err(Error::Full);
        }
        self.slots[empty] = remainder;
        self.len += 1;
        Ok(true)
    }

    fn contains(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.fingerprint(hash);
        self.probe(quotient, remainder).is_err()
    }
}

/// The hash with remainder 1 instead of 0, so that `Fingerprint::nonzero` keeps it as it is.
fn nonzero(hash: u64, q: u32, r: u32) -> u64 {
    let f = Fingerprint::split(hash, q, r);
    if f.remainder == 0 {
        hash_of(f.quotient, 1, q, r, hash)
    } else {
        hash
    }
}

/// Runs `sequence` (removals become queries: the filter cannot remove) on `filter` and the model
/// side by side; every answer, the count and the invariants must agree after every step, and at
/// the end every fingerprint of a small space answers as the model does.
fn run_model(filter: &LinearProbingQf, sequence: &[Op]) -> Result<(), TestCaseError> {
    let mut model = LinearProbingModel::like(filter);
    let (q, r) = (model.q, model.r);
    for &op in sequence {
        match op {
            Op::Insert(h) => {
                let h = nonzero(h, q, r);
                prop_assert_eq!(filter.insert_hash(h), model.insert(h), "insert {:x}", h);
            }
            Op::Remove(h) | Op::Contains(h) => {
                let h = nonzero(h, q, r);
                prop_assert_eq!(filter.contains_hash(h), model.contains(h), "query {:x}", h);
            }
        }
        filter.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(filter.len(), model.len);
    }
    let remainders = (1u64 << r).min(64);
    for quotient in 0..1u64 << q {
        for remainder in 1..remainders {
            let h = hash_of(quotient, remainder, q, r, 0);
            prop_assert_eq!(filter.contains_hash(h), model.contains(h), "final {:x}", h);
        }
    }
    Ok(())
}

fn with_bits(q: u32, r: u32) -> LinearProbingQf {
    // No cap below the table: the model tests reach the overflow tail.
    LinearProbingQf::builder()
        .max_load(1.0)
        .build_with_bits(q, r)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dense_small_table_matches_the_model(sequence in ops(4, 3, 16, 8, 120)) {
        // 7 remainders: many inserts meet their remainder in a neighbour's stretch.
        run_model(&with_bits(4, 3), &sequence)?;
    }

    #[test]
    fn two_stretches_run_into_the_overflow_tail(sequence in ops(8, 10, 1, 1 << 10, 400)) {
        // Every key goes to slot 0 or slot 255; the second stretch fills the tail.
        run_model(&with_bits(8, 10), &sequence)?;
    }

    #[test]
    fn wide_slots_cross_group_boundaries(sequence in ops(5, 21, 12, 1 << 21, 150)) {
        // 3 slots per group: most stretches span groups.
        run_model(&with_bits(5, 21), &sequence)?;
    }

    #[test]
    fn widths_scanned_by_compiled_walks_match_the_model(sequence in ops(5, 13, 12, 6, 150)) {
        // 13-bit slots, 4 per group, one of the widths `with_fixed_width!` compiles: stretches
        // span groups, and 6 remainders put equal ones in neighbouring stretches.
        run_model(&with_bits(5, 13), &sequence)?;
    }

    #[test]
    fn odd_lane_counts_match_the_model(sequence in ops(5, 11, 12, 6, 150)) {
        // 11-bit slots, 5 per group with 9 unused bits on top, also compiled per width.
        run_model(&with_bits(5, 11), &sequence)?;
    }

    #[test]
    fn one_slot_per_group(sequence in ops(3, 40, 8, 4, 100)) {
        run_model(&with_bits(3, 40), &sequence)?;
    }

    #[test]
    fn the_load_cap_matches_the_model(sequence in ops(4, 6, 16, 64, 120)) {
        let filter = LinearProbingQf::builder().max_load(0.5).build_with_bits(4, 6).unwrap();
        prop_assert_eq!(filter.capacity(), 8);
        run_model(&filter, &sequence)?;
    }
}

#[test]
fn full_at_the_tail_leaves_the_filter_unchanged() {
    // 2^7 = 128 addressable slots; every key lands in slot 127, so the stretch fills the whole
    // overflow tail except its last slot.
    let (q, r) = (7, 13);
    let filter = with_bits(q, r);
    let tail = filter.slot_count() - (1 << q);
    let mut stored = Vec::new();
    let full_at = loop {
        let h = hash_of(127, stored.len() as u64 + 1, q, r, 0);
        match filter.insert_hash(h) {
            Ok(true) => stored.push(h),
            Err(Error::Full) => break h,
            other => panic!("unexpected {other:?}"),
        }
    };
    // Slots 127 ..= 127 + tail - 1 take keys; the last slot, 127 + tail, stays empty.
    assert_eq!(stored.len(), tail);
    assert_eq!(filter.len(), tail);
    filter.check_invariants().unwrap();
    assert!(stored.iter().all(|&h| filter.contains_hash(h)));
    assert!(!filter.contains_hash(full_at));
    // Still usable: a stored key is recognised, and other stretches take new keys.
    assert_eq!(filter.insert_hash(stored[3]), Ok(false));
    assert_eq!(filter.insert_hash(full_at), Err(Error::Full));
    let elsewhere = hash_of(5, 9, q, r, 0);
    assert_eq!(filter.insert_hash(elsewhere), Ok(true));
    assert!(filter.contains_hash(elsewhere));
    filter.check_invariants().unwrap();
}

#[test]
fn the_default_cap_is_seventy_percent() {
    let filter = LinearProbingQf::with_bits(8, 13).unwrap();
    assert_eq!(filter.capacity(), 179); // floor(0.7 * 256)
    let mut key = 0u64;
    while filter.len() < 179 {
        filter.insert(&key).unwrap();
        key += 1;
    }
    let fresh = (key..).find(|k| !filter.contains(k)).unwrap();
    assert_eq!(filter.insert(&fresh), Err(Error::Full));
    assert_eq!(filter.len(), 179);
    assert!(!filter.contains(&fresh));
    filter.check_invariants().unwrap();
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let bad = [
        LinearProbingQf::new(0, 0.01),
        LinearProbingQf::new(100, 0.0),
        LinearProbingQf::new(100, 1.0),
        LinearProbingQf::new(100, -0.5),
        LinearProbingQf::new(100, f64::NAN),
        LinearProbingQf::new(100, f64::INFINITY),
        LinearProbingQf::new(100, 1e-300),
        LinearProbingQf::new(usize::MAX, 0.01),
        LinearProbingQf::with_bits(0, 13),
        LinearProbingQf::with_bits(41, 13),
        LinearProbingQf::with_bits(10, 0),
        LinearProbingQf::with_bits(10, 55),
        LinearProbingQf::builder().max_load(0.0).build(100, 0.01),
        LinearProbingQf::builder().max_load(1.5).build(100, 0.01),
        LinearProbingQf::builder()
            .max_load(-0.3)
            .build_with_bits(10, 13),
        LinearProbingQf::builder()
            .max_load(f64::NAN)
            .build_with_bits(10, 13),
        LinearProbingQf::builder()
            .max_load(f64::INFINITY)
            .build_with_bits(10, 13),
        // 2 slots at 40% leave room for no key.
        LinearProbingQf::builder()
            .max_load(0.4)
            .build_with_bits(1, 13),
    ];
    for result in bad {
        assert!(
            matches!(result, Err(Error::InvalidParameters(_))),
            "{result:?}"
        );
    }
    // A tiny load cap asks for a table too large: the message names the fill, not only the
    // capacity, which on its own is small.
    match LinearProbingQf::builder()
        .max_load(1e-300)
        .build(1000, 0.01)
    {
        Err(Error::InvalidParameters(message)) => assert!(message.contains("fill of 1e-300")),
        other => panic!("{other:?}"),
    }
    // The extremes that are valid.
    assert!(LinearProbingQf::with_bits(1, 1).is_ok());
    assert!(LinearProbingQf::with_bits(4, 60).is_ok());
    assert!(LinearProbingQf::builder()
        .max_load(1.0)
        .build_with_bits(3, 8)
        .is_ok());
}

#[test]
fn new_meets_its_capacity_and_rate() {
    let filter = LinearProbingQf::new(10_000, 0.001).unwrap();
    assert!(filter.capacity() >= 10_000);
    for i in 0..10_000u64 {
        filter.insert(&i).unwrap();
    }
    assert!(filter.false_positive_rate() <= 0.001);
    assert!((0..10_000u64).all(|i| filter.contains(&i)));
    filter.check_invariants().unwrap();
}

/// The measured false-positive rate at 30%, 50% and 70% fill against Corollary 1 of paper 000.
///
/// Corollary 1 counts Knuth's expected probes of an unsuccessful search, `½(1 + 1/(1-δ)²)`,
/// which include the final empty slot; an empty slot never matches (remainders are non-zero), so
/// the true rate is about one comparison lower: `(½(1 + 1/(1-δ)²) - 1) / (2^r - 1)`. The test
/// asserts the measured rate is at most Corollary 1 (plus 5 sigma) and at least 80% of the
/// sharper estimate (minus 5 sigma).
#[test]
fn measured_false_positive_rate_follows_corollary_1() {
    let (q, r) = (16, 10);
    let slots = (1u64 << q) as f64;
    let queries = 400_000u64;
    let filter = LinearProbingQf::builder()
        .max_load(0.75)
        .build_with_bits(q, r)
        .unwrap();
    let mut key = 0u64;
    for load in [0.3, 0.5, 0.7] {
        while (filter.len() as f64) < load * slots {
            filter.insert(&key).unwrap();
            key += 1;
        }
        let delta = filter.len() as f64 / slots;
        let corollary = linear_probing_fpr(delta, r);
        assert!((filter.false_positive_rate() - corollary).abs() < 1e-12);
        // Keys from a range never inserted.
        let positives = (0..queries)
            .filter(|i| filter.contains(&(u64::MAX - i)))
            .count() as f64;
        let measured = positives / queries as f64;
        let sigma = (corollary * (1.0 - corollary) / queries as f64).sqrt();
        let probes = 0.5 * (1.0 + 1.0 / ((1.0 - delta) * (1.0 - delta)));
        let sharper = (probes - 1.0) / ((1u64 << r) as f64 - 1.0);
        println!(
            "fill {delta:.3}: measured {measured:.6}, Corollary 1 {corollary:.6}, \
             without the empty-slot probe {sharper:.6}"
        );
        assert!(
            measured <= corollary * 1.05 + 5.0 * sigma,
            "fill {delta}: measured {measured} above Corollary 1's {corollary}"
        );
        assert!(
            measured >= 0.8 * sharper - 5.0 * sigma,
            "fill {delta}: measured {measured} implausibly far below {sharper}"
        );
    }
}

/// Real threads insert disjoint and overlapping key sets while querying keys that other threads
/// have already inserted; at the end every key is present and the counts add up.
#[test]
fn threads_never_lose_a_finished_insert() {
    const THREADS: usize = 4;
    const OWN: usize = 20_000;
    const SHARED: usize = 10_000;
    let filter = LinearProbingQf::with_bits(17, 13).unwrap(); // cap 91_750 > 4 * 20_000 + 10_000
    let own = |t: usize, i: usize| ((t as u64 + 1) << 32) | i as u64;
    let shared = |i: usize| i as u64;
    // progress[t]: how many own keys thread t has inserted so far (a prefix of its sequence).
    let progress: Vec<AtomicUsize> = (0..THREADS).map(|_| AtomicUsize::new(0)).collect();
    // shared_stored[j]: how many inserts of shared key j returned `Ok(true)`.
    let shared_stored: Vec<AtomicUsize> = (0..SHARED).map(|_| AtomicUsize::new(0)).collect();
    let stored_by_thread: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (filter, progress, shared_stored) = (&filter, &progress, &shared_stored);
                s.spawn(move || {
                    let mut stored = 0;
                    for i in 0..OWN {
                        let key = own(t, i);
                        stored += usize::from(filter.insert(&key).unwrap());
                        assert!(filter.contains(&key), "own key {key:x} lost");
                        // Release: publishes "keys 0..=i are inserted" to the checkers.
                        progress[t].store(i + 1, Ordering::Release);
                        if i % 2 == 0 {
                            // Each thread inserts every shared key, in its own order.
                            let j = (i / 2 * 7919 + t * 1013) % SHARED;
                            let new = filter.insert(&shared(j)).unwrap();
                            stored += usize::from(new);
                            // Relaxed: read after the threads are joined.
                            shared_stored[j].fetch_add(usize::from(new), Ordering::Relaxed);
                            assert!(filter.contains(&shared(j)));
                        }
                        // Check a key of the next thread that it has finished inserting.
                        let other = (t + 1) % THREADS;
                        // Acquire: every insert counted in `done` happened before this query.
                        let done = progress[other].load(Ordering::Acquire);
                        if done > 0 {
                            let k = own(other, (i * 31) % done);
                            assert!(filter.contains(&k), "finished key {k:x} missed");
                        }
                    }
                    stored
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    filter.check_invariants().unwrap();
    let stored: usize = stored_by_thread.iter().sum();
    assert_eq!(filter.len(), stored);
    for t in 0..THREADS {
        assert!((0..OWN).all(|i| filter.contains(&own(t, i))));
    }
    assert!((0..SHARED).all(|j| filter.contains(&shared(j))));
    // Set semantics under races: all threads insert every shared key, and exactly one of them
    // stores it (none if its remainder was already in its stretch).
    for (j, count) in shared_stored.iter().enumerate() {
        assert!(
            count.load(Ordering::Relaxed) <= 1,
            "shared key {j} stored twice"
        );
    }
    // Each distinct key is stored at most once, so the count is at
    // most the number of distinct keys (and a little below it through remainder collisions).
    let distinct = THREADS * OWN + SHARED;
    assert!(
        stored <= distinct && stored > distinct * 99 / 100,
        "{stored}"
    );
}

/// Threads insert overlapping keys well past the load cap, so duplicates race each other and
/// the last places (the striped budget's give-backs and steals): at the end exactly `capacity`
/// inserts stored, `len` agrees, and every key whose insert answered `Ok` is present.
#[test]
fn threads_fill_exactly_to_the_cap() {
    const THREADS: usize = 4;
    const KEYS: u64 = 12_000;
    for round in 0..20u64 {
        let filter = LinearProbingQf::with_bits(12, 13).unwrap();
        let cap = filter.capacity();
        assert!(KEYS as usize > 2 * cap);
        let stored: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS as u64)
                .map(|t| {
                    let filter = &filter;
                    s.spawn(move || {
                        let mut stored = 0;
                        for i in 0..KEYS {
                            // Each thread walks the same keys from its own start, so every
                            // key is inserted by several threads at nearly the same time.
                            let key = (i + t * 97 + round * 1_000_003) % KEYS + (round << 40);
                            match filter.insert(&key) {
                                Ok(new) => {
                                    stored += usize::from(new);
                                    assert!(filter.contains(&key), "key {key} answered Ok, absent");
                                }
                                Err(conqf::Error::Full) => {}
                                Err(other) => panic!("unexpected {other:?}"),
                            }
                        }
                        stored
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(stored, cap, "round {round}");
        assert_eq!(filter.len(), cap, "round {round}");
        filter.check_invariants().unwrap();
    }
}

/// Two threads, each waiting for the other before its first insert, insert the same keys in the
/// same order, round after round, so that both often take a place for one key and one of them
/// then finds the other's copy: every place taken for a copy not stored must be given back, so
/// the `Ok(true)` answers, `len` and the full slots agree.
#[test]
fn racing_inserts_of_one_key_give_back_the_place_they_do_not_use() {
    const KEYS: u64 = 200;
    for round in 0..1_500u64 {
        let filter = LinearProbingQf::with_bits(9, 13).unwrap();
        let ready = AtomicUsize::new(0);
        let stored: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let (filter, ready) = (&filter, &ready);
                    s.spawn(move || {
                        // SeqCst: a start line, not a synchronisation of data.
                        ready.fetch_add(1, Ordering::SeqCst);
                        while ready.load(Ordering::SeqCst) < 2 {
                            std::thread::yield_now();
                        }
                        (0..KEYS)
                            .filter(|i| filter.insert(&(round, i)).unwrap())
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(filter.len(), stored, "round {round}");
        filter.check_invariants().unwrap();
    }
}

/// Two threads keep inserting, up to 94% fill, while the filter is cloned: each clone holds
/// every key inserted before it began, keeps the table's invariants (the overflow tail one
/// stretch behind a full last addressable slot) and reads back from its own bytes.
#[test]
fn a_clone_beside_inserters_holds_every_earlier_key() {
    // 2^10 slots of 13 bits, capped at 95% (972 keys; the 960 inserted leave 12 places).
    let filter = LinearProbingQf::builder()
        .max_load(0.95)
        .build_with_bits(10, 13)
        .unwrap();
    let published = [AtomicUsize::new(0), AtomicUsize::new(0)];
    std::thread::scope(|s| {
        for (t, published) in published.iter().enumerate() {
            let filter = &filter;
            s.spawn(move || {
                for i in 0..480u64 {
                    filter.insert(&(t, i)).unwrap();
                    // Release: keys (t, 0..=i) are in the filter.
                    published.store(i as usize + 1, Ordering::Release);
                }
            });
        }
        for round in 0..200 {
            // Acquire: the inserts counted happened before the clone.
            let before = published
                .each_ref()
                .map(|p| p.load(Ordering::Acquire) as u64);
            let copy = filter.clone();
            for (t, &count) in before.iter().enumerate() {
                assert!((0..count).all(|i| copy.contains(&(t, i))), "round {round}");
            }
            copy.check_invariants().unwrap();
            let back = LinearProbingQf::from_bytes(&copy.to_bytes()).unwrap();
            assert_eq!(back.len(), copy.len());
        }
    });
    let copy = filter.clone();
    assert_eq!(copy.to_bytes(), filter.to_bytes());
    assert_eq!(copy.len(), filter.len());
}
