//! `TwoBitQf` from one thread against the exact model: every fast path and locked path must
//! leave a valid 2-status-bit table holding exactly the model's fingerprints (a zero remainder
//! counts as 1), and growing must keep every key.

mod common;

use std::collections::BTreeSet;

use common::{hash_of, ops, ops_at_every_width, run_model, Op, UnderTest};
use conqf::{Error, Filter, Fingerprint, Remove, TwoBitQf};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dense_small_table_matches_the_model(sequence in ops(4, 3, 16, 8, 120)) {
        run_model::<TwoBitQf>(4, 3, &sequence)?;
    }

    #[test]
    fn few_canonical_slots_make_long_superclusters(sequence in ops(6, 5, 6, 32, 200)) {
        run_model::<TwoBitQf>(6, 5, &sequence)?;
    }

    #[test]
    fn wide_remainders_across_group_boundaries(sequence in ops(5, 20, 12, 1 << 20, 150)) {
        run_model::<TwoBitQf>(5, 20, &sequence)?;
    }

    #[test]
    fn every_slot_width_matches_the_model((r, sequence) in ops_at_every_width(5, 12, 16, 120)) {
        run_model::<TwoBitQf>(5, r, &sequence)?;
    }

    #[test]
    fn widths_walked_by_compiled_walks_match_the_model(sequence in ops(5, 10, 12, 8, 200)) {
        // 12-bit slots (5 per group), a width `with_fixed_width!` compiles the walk without
        // locks for; 12 quotients of 32 make superclusters span groups.
        run_model::<TwoBitQf>(5, 10, &sequence)?;
    }

    #[test]
    fn one_slot_per_group(sequence in ops(3, 50, 8, 4, 100)) {
        run_model::<TwoBitQf>(3, 50, &sequence)?;
    }

    #[test]
    fn one_remainder_bit(sequence in ops(4, 1, 16, 2, 80)) {
        run_model::<TwoBitQf>(4, 1, &sequence)?;
    }

    /// Growing keeps every key and stores exactly the grown model: the set of the keys'
    /// fingerprints at the new parameters.
    #[test]
    fn growing_keeps_every_key(sequence in ops(5, 6, 20, 64, 120), grows in 1u32..4) {
        let (q, r) = (5, 6);
        let (mut filter, _) = run_model::<TwoBitQf>(q, r, &sequence)?;
        // The hashes the filter still holds (a later remove of an equal fingerprint drops them).
        let mut held: Vec<u64> = Vec::new();
        for op in &sequence {
            match *op {
                Op::Insert(h) => held.push(h),
                Op::Remove(h) => {
                    let f = TwoBitQf::fingerprint(h, q, r);
                    held.retain(|&k| TwoBitQf::fingerprint(k, q, r) != f);
                }
                Op::Contains(_) => {}
            }
        }
        // Inserts that hit `Full` stored nothing.
        held.retain(|&k| filter.contains_hash(k));
        for step in 1..=grows {
            filter.grow().map_err(|e| TestCaseError::fail(format!("{e}")))?;
            let (q, r) = (q + step, r - step);
            filter.check_invariants().map_err(TestCaseError::fail)?;
            let expected: BTreeSet<Fingerprint> =
                held.iter().map(|&k| TwoBitQf::fingerprint(k, q, r)).collect();
            prop_assert_eq!(Filter::len(&filter), expected.len());
            prop_assert_eq!(
                filter.fingerprints().collect::<Vec<_>>(),
                expected.iter().copied().collect::<Vec<_>>()
            );
            for &k in &held {
                prop_assert!(filter.contains_hash(k));
            }
        }
    }
}

#[test]
fn grow_stops_at_one_remainder_bit_and_stays_usable() {
    let mut filter = TwoBitQf::with_bits(4, 2).unwrap();
    let keys: Vec<u64> = (0..8).map(|i| hash_of(i, i % 4, 4, 2, 0)).collect();
    for &k in &keys {
        filter.insert_hash(k).unwrap();
    }
    filter.grow().unwrap();
    assert!(matches!(filter.grow(), Err(Error::InvalidParameters(_))));
    assert_eq!((filter.quotient_bits(), filter.remainder_bits()), (5, 1));
    assert!(keys.iter().all(|&k| filter.contains_hash(k)));
    filter.check_invariants().unwrap();
}

#[test]
fn two_fingerprints_that_grow_into_one_are_stored_once() {
    // (3, 0b100) and (3, 0b101) at r = 3 both become (7, 1) at r = 2.
    let mut filter = TwoBitQf::with_bits(4, 3).unwrap();
    let (a, b) = (hash_of(3, 0b100, 4, 3, 0), hash_of(3, 0b101, 4, 3, 0));
    assert!(filter.insert_hash(a).unwrap() && filter.insert_hash(b).unwrap());
    filter.grow().unwrap();
    assert_eq!(Filter::len(&filter), 1);
    assert!(filter.contains_hash(a) && filter.contains_hash(b));
    assert_eq!(filter.remove_hash(a), Ok(true));
    filter.check_invariants().unwrap();
}

#[test]
fn full_table_returns_full_and_stays_usable() {
    let filter = TwoBitQf::with_bits(2, 8).unwrap();
    let mut stored = Vec::new();
    let mut full = false;
    for i in 0..200u64 {
        let k = hash_of(3, i % 255 + 1, 2, 8, 0);
        match filter.insert_hash(k) {
            Ok(true) => stored.push(k),
            Ok(false) => {}
            Err(Error::Full) => {
                full = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(full, "the overflow tail is finite");
    filter.check_invariants().unwrap();
    assert!(stored.iter().all(|&k| filter.contains_hash(k)));
    assert_eq!(filter.remove_hash(stored[0]), Ok(true));
    assert!(filter.insert_hash(hash_of(0, 1, 2, 8, 0)).unwrap());
    filter.check_invariants().unwrap();
}

#[test]
fn constructors_validate() {
    assert!(matches!(
        TwoBitQf::new(0, 0.01),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        TwoBitQf::new(10, 1.5),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        TwoBitQf::with_bits(41, 8),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        TwoBitQf::with_bits(8, 0),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        TwoBitQf::with_bits(8, 63),
        Err(Error::InvalidParameters(_))
    ));
    let filter = TwoBitQf::new(10_000, 0.001).unwrap();
    assert!(filter.capacity() >= 10_000);
    // Full at the planned capacity, the expected rate is within the target.
    let at_capacity = filter.capacity() as f64 / (1u64 << filter.quotient_bits()) as f64;
    assert!(at_capacity <= 0.9);
}

/// The share of 200,000 keys never inserted (from `2^40` on) that `filter` reports present.
fn measured_rate(filter: &TwoBitQf) -> f64 {
    let queries = 200_000u64;
    let hits = (0..queries)
        .filter(|&i| Filter::contains(filter, &(i + (1 << 40))))
        .count();
    hits as f64 / queries as f64
}

#[test]
fn measured_false_positive_rate_matches_the_folded_formula() {
    // 2^14 canonical slots at 50% fill, 6-bit remainders: expected 0.5 · 66 / 4096 ≈ 0.81%.
    let filter = TwoBitQf::with_bits(14, 6).unwrap();
    let n = 1u64 << 13;
    for k in 0..n {
        Filter::insert(&filter, &k).unwrap();
    }
    let expected = filter.false_positive_rate();
    assert!((expected - 0.5 * 66.0 / 4096.0).abs() < 2e-4, "{expected}");
    // About 1600 expected hits: 15% is more than five standard deviations.
    let measured = measured_rate(&filter);
    assert!(
        (measured - expected).abs() < 0.15 * expected,
        "measured {measured}, expected {expected}"
    );
}

/// `TwoBitQf::grow` keeps the fingerprints' `q + r` bits, but a zero remainder is stored as 1, so
/// the rate for the stored keys, `δ (2^r + 2) / 4^r`, rises by `(2^r + 4) / (2^r + 2)` per
/// doubling: 20/18, 12/10 and 8/6 from `r = 4` down to 1, 16/9 in all (a little less, as two
/// fingerprints that grow into one are stored once). The reported rate says so and the measured
/// one follows it.
#[test]
fn each_doubling_raises_the_rate_as_reported() {
    let mut filter = TwoBitQf::with_bits(12, 4).unwrap();
    for k in 0..2000u64 {
        Filter::insert(&filter, &k).unwrap();
    }
    let mut before = filter.false_positive_rate();
    let at_start = before;
    for doubling in 1..=3 {
        filter.grow().unwrap();
        let reported = filter.false_positive_rate();
        assert!(
            reported > before,
            "doubling {doubling}: {reported} after {before}"
        );
        // Several thousand expected hits: 10% is more than five standard deviations.
        let measured = measured_rate(&filter);
        assert!(
            (measured - reported).abs() < 0.1 * reported,
            "doubling {doubling}: measured {measured}, reported {reported}"
        );
        before = reported;
    }
    let rise = before / at_start;
    assert!((rise - 16.0 / 9.0).abs() < 0.05, "{rise}");
}

/// A run may end in the slot before the last one, and no further: with 3 quotient bits the
/// table has the guard, 8 canonical slots and an overflow tail of 2 + 4 * 2^2 = 18 (slots
/// 0-26), and the last slot stays empty, so quotient 7's run, from its canonical slot 8,
/// takes exactly the 18 slots 8-25. The locked insert's check refuses the 19th key, not the
/// 18th.
#[test]
fn a_run_ends_at_the_slot_before_the_last_and_no_earlier() {
    let filter = TwoBitQf::with_bits(3, 14).unwrap();
    for remainder in 1..=18u64 {
        assert_eq!(
            filter.insert_hash(hash_of(7, remainder, 3, 14, 0)),
            Ok(true),
            "key {remainder} fits in slot {}",
            7 + remainder
        );
    }
    assert_eq!(
        filter.insert_hash(hash_of(7, 19, 3, 14, 0)),
        Err(Error::Full)
    );
    assert_eq!(Filter::len(&filter), 18);
    filter.check_invariants().unwrap();
    assert!((1..=18u64).all(|remainder| filter.contains_hash(hash_of(7, remainder, 3, 14, 0))));
}

/// A merge whose union holds exactly the load cap of the largest table its fingerprints allow
/// (`q + r = 11`, so 10 quotient bits and one remainder bit: cap 992 of 1024 slots) is not
/// `Full`: the cap refuses only what passes it, as an insert past it would be.
#[test]
fn a_merge_whose_union_is_exactly_at_the_cap_is_not_full() {
    use conqf::Merge;
    let (a, b) = (
        TwoBitQf::with_bits(10, 1).unwrap(),
        TwoBitQf::with_bits(10, 1).unwrap(),
    );
    for quotient in 0..992u64 {
        let half = if quotient % 2 == 0 { &a } else { &b };
        assert_eq!(half.insert_hash(hash_of(quotient, 1, 10, 1, 0)), Ok(true));
    }
    let union = a.merge(&b).unwrap();
    assert_eq!((union.quotient_bits(), union.remainder_bits()), (10, 1));
    assert_eq!(Filter::len(&union), 992);
    union.check_invariants().unwrap();
    assert!((0..992u64).all(|quotient| union.contains_hash(hash_of(quotient, 1, 10, 1, 0))));
    // One more key is past the cap.
    assert_eq!(
        union.insert_hash(hash_of(992, 1, 10, 1, 0)),
        Err(Error::Full)
    );
}
