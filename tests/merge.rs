//! `Merge` of the concurrent quotient filters, all through `&self` beside other threads:
//! `ExternallyLockedQf` (under all its region locks), `LocallyLockedQf` and `GrowableQf` (one
//! cluster at a time under its read lock) and `TwoBitQf` (one supercluster at a time under its
//! left lock). The
//! 3-status-bit ones give the table `SequentialQf`'s merge gives for the same contents,
//! `TwoBitQf` the table its own inserts of both inputs' keys give, and a merge that runs while
//! other threads shift the filters' runs keeps every key stored before it.

mod common;

use common::{churn, distinct_hashes, Churning};
use conqf::{
    Error, ExternallyLockedQf, Filter, GrowableQf, LocallyLockedQf, Merge, Remove, SequentialQf,
    TwoBitQf,
};
use proptest::prelude::*;

/// The stored fingerprints as `quotient << r | remainder`, in order.
fn keys(fingerprints: impl Iterator<Item = conqf::Fingerprint>, r: u32) -> Vec<u64> {
    fingerprints
        .map(|f| (f.quotient << r) | f.remainder)
        .collect()
}

proptest! {
    /// Random hash sets in filters of random shapes with the same fingerprint length: the
    /// concurrent filters' merges hold exactly the fingerprints of `SequentialQf`'s merge, in
    /// the same table shape.
    #[test]
    fn concurrent_merges_equal_the_sequential_merge(
        a in proptest::collection::vec(any::<u64>(), 0..400),
        b in proptest::collection::vec(any::<u64>(), 0..400),
        qa in 6u32..10,
        qb in 6u32..10,
    ) {
        let bits = 22;
        let sequential = |q: u32, hashes: &[u64]| {
            let mut filter = SequentialQf::with_bits(q, bits - q).unwrap();
            for &h in hashes {
                let _ = filter.insert_hash(h);
            }
            filter
        };
        let (sa, sb) = (sequential(qa, &a), sequential(qb, &b));
        let expected = sa.merge(&sb).unwrap();
        let r = expected.remainder_bits();
        let expected_keys = keys(expected.fingerprints(), r);

        let external = |filter: &SequentialQf| {
            let copy = SequentialQf::from_bytes(&filter.to_bytes()).unwrap();
            ExternallyLockedQf::from_sequential_with_region(copy, 64).unwrap()
        };
        let first = external(&sa);
        let union = first.merge(&external(&sb)).unwrap();
        union.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(union.quotient_bits(), expected.quotient_bits());
        let shaped = ExternallyLockedQf::from_sequential_with_region(
            SequentialQf::from_bytes(&expected.to_bytes()).unwrap(),
            first.region_slots(),
        )
        .unwrap();
        prop_assert_eq!(union.region_slots(), shaped.region_slots(), "the first filter's regions");
        prop_assert_eq!(keys(union.fingerprints(), r), expected_keys.clone());

        let locally = |filter: &SequentialQf| {
            LocallyLockedQf::from_sequential(SequentialQf::from_bytes(&filter.to_bytes()).unwrap())
        };
        let union = locally(&sa).merge(&locally(&sb)).unwrap();
        union.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(union.quotient_bits(), expected.quotient_bits());
        prop_assert_eq!(union.len(), expected.len());
        prop_assert_eq!(keys(union.fingerprints(), r), expected_keys);
    }
}

proptest! {
    /// `TwoBitQf`'s merge of random sets in filters of random shapes with the same fingerprint
    /// length holds exactly the fingerprints that inserting both sets' keys into a filter of
    /// the union's shape stores (so refining and storing a zero remainder as 1 commute), at a
    /// quotient no smaller than either input's.
    #[test]
    fn two_bit_merge_equals_inserting_both_sets(
        a in proptest::collection::vec(any::<u64>(), 0..400),
        b in proptest::collection::vec(any::<u64>(), 0..400),
        qa in 5u32..10,
        qb in 5u32..10,
    ) {
        let bits = 16;
        let filled = |q: u32, hashes: &[u64]| {
            let filter = TwoBitQf::with_bits(q, bits - q).unwrap();
            let stored: Vec<u64> =
                hashes.iter().copied().filter(|&h| filter.insert_hash(h).is_ok()).collect();
            (filter, stored)
        };
        let ((fa, stored_a), (fb, stored_b)) = (filled(qa, &a), filled(qb, &b));
        let union = fa.merge(&fb).unwrap();
        union.check_invariants().map_err(TestCaseError::fail)?;
        let q = union.quotient_bits();
        prop_assert!(q >= qa.max(qb) && q + union.remainder_bits() == bits);
        let expected = TwoBitQf::with_bits(q, bits - q).unwrap();
        for &h in stored_a.iter().chain(&stored_b) {
            expected.insert_hash(h).unwrap();
        }
        prop_assert_eq!(
            union.fingerprints().collect::<Vec<_>>(),
            expected.fingerprints().collect::<Vec<_>>()
        );
        prop_assert_eq!(union.len(), expected.len());
    }
}

/// A growable filter's fingerprints, as `quotient << r | remainder` (a fingerprint's value
/// whatever the table's shape), read from a snapshot.
fn growable_keys(filter: &GrowableQf) -> Vec<u64> {
    let table = filter.snapshot().unwrap().into_inner();
    keys(table.fingerprints(), table.remainder_bits())
}

proptest! {
    /// Growable filters of random start sizes and doubling limits, filled with random sets
    /// (most double on the way): the union holds exactly the fingerprints of both, counts its
    /// doublings on from the first input's table, and keeps growing; or, if it needs more
    /// doublings than the first input has left, is `Full`.
    #[test]
    fn growable_merge_holds_both_sets_and_grows_on(
        a in proptest::collection::vec(any::<u64>(), 0..600),
        b in proptest::collection::vec(any::<u64>(), 0..600),
        (qa, qb) in (5u32..9, 5u32..9),
        (limit_a, limit_b) in (0u32..7, 0u32..7),
        more in proptest::collection::vec(any::<u64>(), 0..600),
    ) {
        let bits = 22;
        let filled = |q: u32, limit: u32, hashes: &[u64]| {
            let filter = LocallyLockedQf::growable(1, 0.5)
                .max_doublings(limit)
                .build_with_bits(q, bits - q)
                .unwrap();
            for &h in hashes {
                match filter.insert_hash(h) {
                    Ok(_) | Err(Error::Full) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            filter
        };
        let (fa, fb) = (filled(qa, limit_a, &a), filled(qb, limit_b, &b));
        let union = match fa.merge(&fb) {
            Ok(union) => union,
            Err(Error::Full) => {
                // Refused only if the largest table `fa` may double to is smaller than `fb`'s
                // or than the union's keys take at the merge's 90% (both inputs' counts).
                let largest = fa.quotient_bits() + fa.doublings_possible();
                let keys = (fa.len() + fb.len()) as f64;
                prop_assert!(fb.quotient_bits() > largest || keys > 0.9 * (1u64 << largest) as f64);
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        union.check_invariants().map_err(TestCaseError::fail)?;
        let mut expected = [growable_keys(&fa), growable_keys(&fb)].concat();
        expected.sort_unstable();
        expected.dedup();
        prop_assert_eq!(growable_keys(&union), expected.clone());
        prop_assert_eq!(union.len(), expected.len());
        let grown = union.quotient_bits() - fa.quotient_bits();
        prop_assert!(union.quotient_bits() >= fa.quotient_bits().max(fb.quotient_bits()));
        prop_assert_eq!(union.quotient_bits() + union.remainder_bits(), bits);
        prop_assert_eq!(union.doublings(), fa.doublings() + grown);
        prop_assert_eq!(union.doublings_possible(), fa.doublings_possible() - grown);
        prop_assert_eq!(union.delta_grow(), fa.delta_grow());
        let stored: Vec<u64> = more
            .iter()
            .copied()
            .filter(|&h| union.insert_hash(h).is_ok())
            .collect();
        prop_assert!(stored.iter().all(|&h| union.contains_hash(h)));
        union.check_invariants().map_err(TestCaseError::fail)?;
    }
}

#[test]
fn fingerprints_of_other_lengths_are_incompatible() {
    let a = TwoBitQf::with_bits(10, 10).unwrap();
    let b = TwoBitQf::with_bits(10, 11).unwrap();
    assert!(matches!(a.merge(&b), Err(Error::Incompatible(_))));
    let a = ExternallyLockedQf::with_bits(10, 10).unwrap();
    let b = ExternallyLockedQf::with_bits(10, 11).unwrap();
    assert!(matches!(a.merge(&b), Err(Error::Incompatible(_))));
    let a = LocallyLockedQf::with_bits(10, 10).unwrap();
    let b = LocallyLockedQf::with_bits(11, 10).unwrap();
    assert!(matches!(a.merge(&b), Err(Error::Incompatible(_))));
    let growable = |q, r| {
        LocallyLockedQf::growable(1, 0.5)
            .build_with_bits(q, r)
            .unwrap()
    };
    assert!(matches!(
        growable(10, 10).merge(&growable(10, 11)),
        Err(Error::Incompatible(_))
    ));
    // Fingerprints of one length, tables of different sizes: mergeable.
    assert!(growable(10, 10).merge(&growable(12, 8)).is_ok());
}

/// A union is sized by its distinct fingerprints, not by the inputs' counts added up: 600 keys
/// in 2^10 slots (59%) merged with a copy of themselves stay in 2^10 slots, where the sum (1,200
/// at 90% fill) had doubled the table to 29% fill; half of them overlapping another 600 (900
/// distinct, 88%) stay too, and 1,000 distinct (98%) double it.
#[test]
fn a_union_is_sized_by_its_distinct_fingerprints() {
    let hashes = distinct_hashes(10, 10, 1 << 10, 1100, 7);
    let (first, second, third) = (&hashes[..600], &hashes[300..900], &hashes[600..1000]);
    fn filled<F: Filter>(filter: F, hashes: &[u64]) -> F {
        for &h in hashes {
            filter.insert_hash(h).unwrap();
        }
        filter
    }
    let cases = [(first, first, 10), (first, second, 10), (first, third, 11)];
    for (left, right, union_q) in cases {
        let seq = |hashes: &[u64]| {
            let mut filter = SequentialQf::with_bits(10, 10).unwrap();
            for &h in hashes {
                filter.insert_hash(h).unwrap();
            }
            filter
        };
        let union = seq(left).merge(&seq(right)).unwrap();
        assert_eq!(union.quotient_bits(), union_q, "SequentialQf");
        let locally = |h| filled(LocallyLockedQf::with_bits(10, 10).unwrap(), h);
        let union = locally(left).merge(&locally(right)).unwrap();
        assert_eq!(union.quotient_bits(), union_q, "LocallyLockedQf");
        let external = |h| filled(ExternallyLockedQf::with_bits(10, 10).unwrap(), h);
        let union = external(left).merge(&external(right)).unwrap();
        assert_eq!(union.quotient_bits(), union_q, "ExternallyLockedQf");
        let two_bit = |h| filled(TwoBitQf::with_bits(10, 10).unwrap(), h);
        let union = two_bit(left).merge(&two_bit(right)).unwrap();
        assert_eq!(union.quotient_bits(), union_q, "TwoBitQf");
        let growable = |h| {
            let builder = LocallyLockedQf::growable(1, 0.5).max_doublings(3);
            filled(builder.build_with_bits(10, 10).unwrap(), h)
        };
        let union = growable(left).merge(&growable(right)).unwrap();
        assert_eq!(union.quotient_bits(), union_q, "GrowableQf");
    }
}

/// Stores `stable.0` in `a` and `stable.1` in `b`, then merges `a` with `b` at least `rounds`
/// times (and until the churners made some thousands of pairs, [`Churning::keep_checking`])
/// while each of `churners` keeps inserting and removing its keys in its filter ([`churn`]),
/// shifting the runs of the stable keys; `check` sees every union and the stable keys. Ends
/// with `a` and `b` checked by `check_filter`.
fn merge_beside_churn<F: Filter + Remove + Merge + Sync>(
    (a, b): (&F, &F),
    stable: (&[u64], &[u64]),
    churners: &[(&F, &[u64])],
    rounds: usize,
    check: impl Fn(&F, &[u64]),
    check_filter: impl Fn(&F),
) {
    for (filter, keys) in [(a, stable.0), (b, stable.1)] {
        for &h in keys {
            filter.insert_hash(h).unwrap();
        }
    }
    let all_stable = [stable.0, stable.1].concat();
    let churning = Churning::default();
    std::thread::scope(|s| {
        for &(filter, keys) in churners {
            let churning = &churning;
            s.spawn(move || churn(filter, keys, churning));
        }
        let _stop = churning.stopper();
        let mut round = 0;
        while churning.keep_checking(round, rounds) {
            let union = a.merge(b).unwrap();
            for &h in &all_stable {
                assert!(union.contains_hash(h), "a merge lost a stored key");
            }
            check(&union, &all_stable);
            round += 1;
        }
    });
    check_filter(a);
    check_filter(b);
}

/// `merge` through `&self` while other threads keep inserting and removing other keys of both
/// filters, shifting their runs: every merge holds every fingerprint stored in either before it
/// began and still stored. (Read without the region locks, the merge loses keys here.)
#[test]
fn external_merges_during_writes_keep_every_stored_key() {
    let (q, r) = (8, 8);
    let a = ExternallyLockedQf::with_bits_and_region(q, r, 16).unwrap();
    let b = ExternallyLockedQf::with_bits_and_region(q, r, 16).unwrap();
    let all = distinct_hashes(q, r, 200, 400, 23);
    let (stable, churned) = all.split_at(200);
    let (churn_a, churn_b) = churned.split_at(100);
    merge_beside_churn(
        (&a, &b),
        stable.split_at(100),
        &[(&a, churn_a), (&b, churn_b)],
        300,
        |union, stable| {
            union.check_invariants().unwrap();
            // Each writer holds at most one of its churned keys at a time, and each filter is
            // read whole at one moment.
            let extra = union.len() - stable.len();
            assert!(extra <= 2, "{extra} keys beside the stable ones");
        },
        |filter| filter.check_invariants().unwrap(),
    );
}

/// `LocallyLockedQf`'s merge while two threads keep inserting and removing other keys of the
/// first filter (shifting its runs right and left across clusters and groups) and one those of
/// the second: every merge holds every fingerprint stored in either before it began and still
/// stored. (Read without the clusters' read locks, the merge loses keys here.)
#[test]
fn locally_locked_merges_during_writes_keep_every_stored_key() {
    let make = || LocallyLockedQf::with_bits(8, 8).unwrap();
    merges_beside_three_churners((&make(), &make()), 29, |filter| filter.check_invariants());
}

/// `TwoBitQf::merge` beside three churning threads, as above: a supercluster at a time under
/// its left lock, so every merge holds every key stored in either filter throughout.
#[test]
fn two_bit_merges_during_writes_keep_every_stored_key() {
    let make = || TwoBitQf::with_bits(8, 8).unwrap();
    merges_beside_three_churners((&make(), &make()), 37, |filter| filter.check_invariants());
}

/// `GrowableQf::merge` beside three churning threads, as above, on tables that start at 2^6
/// slots: the 120 stable keys take the first to 2^8 slots with its threshold at 121, so its
/// churners' first inserts double it once more while the merges run. Every merge holds every
/// key stored in either filter throughout.
#[test]
fn growable_merges_during_writes_and_doublings_keep_every_stored_key() {
    let make = || {
        LocallyLockedQf::growable(1, 0.5)
            .delta_grow(121.5 / 256.0)
            .build_with_bits(6, 10)
            .unwrap()
    };
    let (a, b) = (make(), make());
    merges_beside_three_churners((&a, &b), 41, |filter| filter.check_invariants());
    assert_eq!(
        (a.quotient_bits(), b.quotient_bits()),
        (9, 8),
        "a doubled beside the merges"
    );
}

/// [`merge_beside_churn`] of two empty filters of `q = r = 8` whose locks sit in the table: 180
/// stable keys (120 in `a`), two threads churning 60 keys each in `a` and one 60 in `b`, keys
/// from few quotients so clusters are long and cross groups (`seed` picks them). Each union and
/// each filter at the end must pass `check`; a union is not one instant's read, so it may hold
/// churned keys read before their removal, but never more keys than exist.
fn merges_beside_three_churners<F: Filter + Remove + Merge + Sync>(
    (a, b): (&F, &F),
    seed: u64,
    check: impl Fn(&F) -> Result<(), String>,
) {
    let all = distinct_hashes(8, 8, 100, 360, seed);
    let (stable, churned) = all.split_at(180);
    let (churn_a, rest) = churned.split_at(60);
    let (churn_a2, churn_b) = rest.split_at(60);
    merge_beside_churn(
        (a, b),
        stable.split_at(120),
        &[(a, churn_a), (a, churn_a2), (b, churn_b)],
        20_000,
        |union, _| {
            check(union).unwrap();
            assert!(
                union.len() <= all.len(),
                "{} keys in the union",
                union.len()
            );
        },
        |filter| check(filter).unwrap(),
    );
}
