//! `GrowableQf` (paper 000 §2.1 bounded growing, §3.2 "Growing concurrently"): threads insert,
//! query and remove across several doublings against an exact model. No key may be lost by a
//! migration, no query may miss a key whose insert returned, and afterwards the table holds
//! exactly the model's fingerprints. Bounded to a few seconds.

mod common;

use std::collections::BTreeSet;

use conqf::{Error, Filter, GrowableQf, LocallyLockedQf, Remove};
use rand::{Rng, SeedableRng};

/// The fingerprint of `hash` as one number: its top `bits` bits. Growing moves bits from the
/// remainder to the quotient but never changes this.
fn top_bits(hash: u64, bits: u32) -> u64 {
    hash >> (64 - bits)
}

/// The stored fingerprints of a quiescent filter, as top-bits numbers.
fn stored(filter: GrowableQf) -> (BTreeSet<u64>, u32) {
    filter.check_invariants().unwrap();
    let inner = filter.into_inner();
    let r = inner.remainder_bits();
    let bits = inner.quotient_bits() + r;
    let set = inner
        .fingerprints()
        .map(|f| (f.quotient << r) | f.remainder)
        .collect();
    (set, bits)
}

fn random_hashes(count: usize, seed: u64) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count).map(|_| rng.random()).collect()
}

#[test]
fn one_thread_grows_and_keeps_every_key() {
    let filter = LocallyLockedQf::growable(100, 0.01)
        .max_doublings(5)
        .migration_block_slots(64)
        .build()
        .unwrap();
    let start_q = filter.quotient_bits();
    assert_eq!(filter.doublings_possible(), 5);
    let hashes = random_hashes(6000, 1);
    for (i, &h) in hashes.iter().enumerate() {
        filter.insert_hash(h).unwrap();
        assert_eq!(filter.doublings() + filter.doublings_possible(), 5);
        // Every key so far, after each growth step too.
        if i % 97 == 0 {
            assert!(hashes[..=i].iter().all(|&k| filter.contains_hash(k)));
        }
    }
    assert_eq!(filter.doublings(), 5);
    assert_eq!(filter.doublings_possible(), 0);
    assert_eq!(filter.quotient_bits(), start_q + 5);
    assert!(hashes.iter().all(|&k| filter.contains_hash(k)));
    let (set, bits) = stored(filter);
    let expected: BTreeSet<u64> = hashes.iter().map(|&h| top_bits(h, bits)).collect();
    assert_eq!(set, expected);
}

/// A growing filter's tables have shift regions, as a fixed-size filter's (so its queries'
/// misses over several groups stand without the read lock where no locked shift overlapped
/// them): the same memory, words included, as a fixed-size filter of the same table, both for
/// the first table (against one built directly) and after doublings (against the bytes of the
/// table `into_inner` hands out read back, since a doubled table keeps a longer overflow tail).
#[test]
fn a_growing_filter_s_tables_have_shift_regions() {
    let filter = LocallyLockedQf::growable(1 << 14, 0.01).build().unwrap();
    let (q, r) = (filter.quotient_bits(), filter.remainder_bits());
    let direct = LocallyLockedQf::with_bits(q, r).unwrap();
    assert_eq!(filter.memory_bytes(), direct.memory_bytes());
    for h in random_hashes(40_000, 7) {
        filter.insert_hash(h).unwrap();
    }
    assert!(filter.doublings() > 0);
    let growing_memory = filter.memory_bytes();
    let mut inner = filter.into_inner();
    assert_eq!(inner.memory_bytes(), growing_memory);
    let read_back = LocallyLockedQf::from_bytes(&inner.to_bytes()).unwrap();
    assert_eq!(read_back.memory_bytes(), growing_memory);
}

#[test]
fn growth_keeps_the_fill_between_half_and_delta_grow() {
    fill_stays_between_half_and_delta_grow(0);
}

/// The fill check samples inserts by hash; hashes that share their low bits must not escape
/// the sample (which would leave growth to the table running full).
#[test]
fn growth_keeps_the_fill_below_delta_grow_for_hashes_sharing_their_low_bits() {
    fill_stays_between_half_and_delta_grow(0x3f);
}

/// Inserts hashes with the bits of `set_low_bits` forced on and checks the fill after each.
fn fill_stays_between_half_and_delta_grow(set_low_bits: u64) {
    let filter = LocallyLockedQf::growable(1000, 1e-6)
        .delta_grow(0.8)
        .max_doublings(6)
        .build()
        .unwrap();
    for &h in &random_hashes(60_000, 2) {
        filter.insert_hash(h | set_low_bits).unwrap();
        let slots = (1u64 << filter.quotient_bits()) as f64;
        let fill = filter.len() as f64 / slots;
        // Growth starts after a sampled insert at or past the threshold: allow the sample's
        // gap (at most a thousandth of the threshold on average) and a little more.
        assert!(fill <= 0.81, "fill {fill} passed delta_grow");
        if filter.doublings() > 0 {
            assert!(
                fill >= 0.39,
                "fill {fill} below half of delta_grow after a doubling"
            );
        }
    }
    assert_eq!(filter.doublings(), 6);
}

#[test]
fn after_the_last_doubling_the_table_fills_up_and_reports_full() {
    let filter = LocallyLockedQf::growable(50, 0.1)
        .max_doublings(1)
        .build()
        .unwrap();
    let mut stored_keys = Vec::new();
    let mut full = false;
    for &h in &random_hashes(10_000, 3) {
        match filter.insert_hash(h) {
            Ok(_) => stored_keys.push(h),
            Err(Error::Full) => {
                full = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(full);
    assert_eq!(filter.doublings(), 1);
    assert!(stored_keys.iter().all(|&k| filter.contains_hash(k)));
    filter.check_invariants().unwrap();
}

/// `capacity()` counts only the doublings that can happen: a filter with three remainder bits
/// can double twice (a table keeps one bit), whatever the builder allows. Like a fixed table's
/// capacity (its slots at the maximum load), it is then a little below where the last table
/// reports `Full`, not far above it (it said 471,808 here, for a filter full at about 9,000).
#[test]
fn capacity_counts_only_the_doublings_the_remainder_bits_allow() {
    let filter = LocallyLockedQf::growable(1000, 0.1).build().unwrap();
    let inner_capacity = filter.capacity();
    let mut stored = 0usize;
    for &h in &random_hashes(1_000_000, 7) {
        match filter.insert_hash(h) {
            Ok(true) => stored += 1,
            Ok(false) => {}
            Err(Error::Full) => break,
            Err(e) => panic!("{e}"),
        }
    }
    let table = filter.into_inner();
    assert_eq!(
        table.remainder_bits(),
        1,
        "grew until one remainder bit was left"
    );
    assert!(
        inner_capacity <= stored && stored <= inner_capacity * 3 / 2,
        "{stored} keys stored before Full, capacity() said {inner_capacity}"
    );
}

/// `capacity()` is the last table's capacity from the start: it stays the same while the filter
/// doubles to the end, also from a start of 2 slots (it said 256 there, the start's 1.8 keys at
/// 90% truncated to 1 and scaled by 2^8, for a last table of 512 slots, which holds 460).
#[test]
fn capacity_is_the_last_table_s_from_the_start() {
    for (capacity, rate) in [(1, 1e-9), (3, 1e-6), (100, 0.001)] {
        let filter = LocallyLockedQf::growable(capacity, rate).build().unwrap();
        let promised = filter.capacity();
        for &h in &random_hashes(1_000_000, 11) {
            if filter.doublings_possible() == 0 || filter.insert_hash(h).is_err() {
                break;
            }
        }
        assert_eq!(
            filter.doublings_possible(),
            0,
            "growable({capacity}, {rate})"
        );
        assert_eq!(filter.capacity(), promised, "growable({capacity}, {rate})");
        let last = filter.into_inner();
        assert_eq!(promised, last.capacity(), "growable({capacity}, {rate})");
    }
}

#[test]
fn bad_parameters_are_errors() {
    for delta in [0.0, -1.0, 0.95, f64::NAN] {
        assert!(matches!(
            LocallyLockedQf::growable(100, 0.01)
                .delta_grow(delta)
                .build(),
            Err(Error::InvalidParameters(_))
        ));
    }
    assert!(matches!(
        LocallyLockedQf::growable(100, 0.01)
            .migration_block_slots(0)
            .build(),
        Err(Error::InvalidParameters(_))
    ));
    assert!(LocallyLockedQf::growable(0, 0.01).build().is_err());
    for q in [41, 64, 200] {
        assert!(matches!(
            LocallyLockedQf::growable(1, 0.5).build_with_bits(q, 8),
            Err(Error::InvalidParameters(_))
        ));
    }
}

/// `max_capacity` keeps the rate at most `fpr` up to that many keys: the filter starts at the
/// table `capacity` asks for, with the fingerprint length of one built for `max_capacity`, and
/// doubles as far as it takes. Measured on a million absent keys; without the option, the same
/// keys push the rate past 0.1 (the test fails if the option is ignored).
#[test]
fn max_capacity_keeps_the_rate_up_to_it() {
    let rate = 0.01;
    for (capacity, max_capacity) in [(1, 20_000), (1000, 50_000), (3000, 3001), (5000, 5000)] {
        let name = format!("growable({capacity}, {rate}).max_capacity({max_capacity})");
        let filter = LocallyLockedQf::growable(capacity, rate)
            .max_capacity(max_capacity)
            .build()
            .unwrap();
        let start = LocallyLockedQf::growable(capacity, rate).build().unwrap();
        let last = LocallyLockedQf::growable(max_capacity, rate)
            .build()
            .unwrap();
        assert_eq!(filter.quotient_bits(), start.quotient_bits(), "{name}");
        assert_eq!(
            filter.quotient_bits() + filter.remainder_bits(),
            last.quotient_bits() + last.remainder_bits(),
            "{name}: the fingerprints of a filter built for max_capacity"
        );
        let hashes = random_hashes(max_capacity + 1_000_000, 17);
        let (present, absent) = hashes.split_at(max_capacity);
        for &h in present {
            filter.insert_hash(h).unwrap();
        }
        assert_eq!(filter.quotient_bits(), last.quotient_bits(), "{name}");
        assert!(filter.false_positive_rate() <= rate, "{name}");
        let measured = absent.iter().filter(|&&h| filter.contains_hash(h)).count() as f64 / 1e6;
        // 5 standard deviations above the target on a million draws.
        assert!(
            measured <= rate + 5.0 * (rate / 1e6).sqrt(),
            "{name}: measured {measured}"
        );
        assert!(present.iter().all(|&h| filter.contains_hash(h)), "{name}");
    }
    let unplanned = LocallyLockedQf::growable(1000, rate).build().unwrap();
    let hashes = random_hashes(1_050_000, 17);
    for &h in &hashes[..50_000] {
        unplanned.insert_hash(h).unwrap();
    }
    let measured = hashes[50_000..]
        .iter()
        .filter(|&&h| unplanned.contains_hash(h))
        .count() as f64
        / 1e6;
    assert!(measured > 0.1, "without max_capacity: {measured}");
}

/// `max_capacity` below `capacity`, or one no table holds, is an error; `max_doublings` below
/// what it needs is raised to it.
#[test]
fn max_capacity_errors_and_doublings() {
    let error = LocallyLockedQf::growable(1000, 0.01)
        .max_capacity(999)
        .build()
        .err();
    assert_eq!(
        error,
        Some(Error::InvalidParameters(
            "max_capacity 999 is below capacity 1000".into()
        ))
    );
    // No table that large; fingerprints past the hash; a start whose remainders (62 bits) pass
    // a slot.
    for (capacity, max_capacity, rate) in [
        (1000, usize::MAX / 2, 0.01),
        (1000, 1 << 36, 1e-12),
        (1, 1 << 20, 5.68e-14),
    ] {
        let error = LocallyLockedQf::growable(capacity, rate)
            .max_capacity(max_capacity)
            .build()
            .err();
        assert!(
            matches!(&error, Some(Error::InvalidParameters(why)) if why.starts_with("max_capacity: ")),
            "{error:?}"
        );
    }
    let filter = LocallyLockedQf::growable(1000, 0.01)
        .max_capacity(100_000)
        .max_doublings(2)
        .build()
        .unwrap();
    assert_eq!(filter.doublings_possible(), 7);
}

/// Writers insert disjoint keys (and remove and re-insert some) while the table doubles several
/// times; a checker keeps querying keys whose inserts have returned. Small migration blocks, so
/// several threads share every migration.
#[test]
fn threads_grow_the_table_together_without_losing_a_key() {
    for (seed, threads) in [(4, 3), (5, 4), (6, 2)] {
        grow_together(seed, threads, common::Checker::Queries);
    }
}

/// As above, with a checker that takes `&self` snapshots (`GrowableQf::snapshot`) instead of
/// querying: every snapshot is a valid table holding every key whose insert had returned, also
/// when a doubling starts or is under way during it, and reads back through `from_bytes`. A
/// snapshot starts during a doubling in about one run of three, hence the runs.
#[test]
fn snapshots_during_growth_keep_every_finished_insert() {
    for seed in 7..17 {
        grow_together(seed, 2 + seed as usize % 2, common::Checker::Snapshots);
    }
}

fn grow_together(seed: u64, threads: usize, checker: common::Checker) {
    const PER_THREAD: usize = 12_000;
    let filter = LocallyLockedQf::growable(500, 0.001)
        .max_doublings(6)
        .migration_block_slots(256)
        .build()
        .unwrap();
    // After six doublings only 3 remainder bits are left, and with random keys hundreds would
    // share a fingerprint: removing one then removes the other's too, as it should. So every key
    // gets its own fingerprint, and a query may only miss a key that was removed.
    // Growing keeps the top `q + r` bits of the first table as the fingerprint.
    let (q, r) = (filter.quotient_bits(), filter.remainder_bits());
    let hashes = common::distinct_hashes(q, r, 1 << q, threads * PER_THREAD, seed);
    common::insert_beside_checker(
        &filter,
        (&hashes, PER_THREAD),
        |i, key| {
            // Every 5th key leaves and comes back, so removals race migrations.
            if i % 5 == 0 {
                assert_eq!(filter.remove_hash(key), Ok(true));
                // Its own fingerprint: no thread stores it again until the insert below,
                // however the others shift it or grow the table.
                assert!(!filter.contains_hash_locked(key), "misread after remove");
                filter.insert_hash(key).unwrap();
            }
        },
        (
            checker,
            (
                || filter.snapshot().unwrap(),
                |snapshot: &mut GrowableQf| {
                    snapshot.check_invariants().unwrap();
                    assert!(snapshot.doublings() <= filter.doublings());
                    let back = GrowableQf::from_bytes(&snapshot.to_bytes()).unwrap();
                    assert_eq!(back.len(), snapshot.len());
                },
            ),
        ),
        |i| i % 5 != 0,
        "false negative during growth",
    );
    assert!(
        filter.doublings() >= 4,
        "only {} doublings",
        filter.doublings()
    );
    assert!(hashes.iter().all(|&k| filter.contains_hash(k)));
    let (set, bits) = stored(filter);
    let expected: BTreeSet<u64> = hashes.iter().map(|&h| top_bits(h, bits)).collect();
    assert_eq!(set, expected);
}

mod model {
    //! Random operation sequences from a small hash space (long clusters, collisions, growth
    //! into the overflow tail and past migration-block boundaries) against the exact model: the
    //! set of fingerprints, which growing never changes.

    use std::collections::BTreeSet;

    use super::common::{ops, Op};
    use conqf::{Error, Filter, LocallyLockedQf, Remove};
    use proptest::prelude::*;

    const Q: u32 = 4;
    const R: u32 = 8;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn growing_filter_matches_the_model(ops in ops(Q, R, 6, 40, 300)) {
            let filter = LocallyLockedQf::growable(1, 0.5)
                .delta_grow(0.5)
                .max_doublings(3)
                .migration_block_slots(5)
                .build_with_bits(Q, R)
                .unwrap();
            let mut model = BTreeSet::new();
            let fingerprint = |hash: u64| hash >> (64 - Q - R);
            for op in ops {
                match op {
                    Op::Insert(h) => match filter.insert_hash(h) {
                        Ok(stored) => prop_assert_eq!(stored, model.insert(fingerprint(h))),
                        // Only after the last doubling, and then nothing changed.
                        Err(Error::Full) => prop_assert_eq!(filter.doublings(), 3),
                        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                    },
                    Op::Remove(h) => {
                        prop_assert_eq!(filter.remove_hash(h), Ok(model.remove(&fingerprint(h))));
                    }
                    Op::Contains(h) => {
                        prop_assert_eq!(filter.contains_hash(h), model.contains(&fingerprint(h)));
                    }
                }
            }
            prop_assert_eq!(filter.len(), model.len());
            filter.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}

/// The `&self` batch methods from two threads while the table doubles under them, then batch
/// removals beside batch lookups: no false negative, every key counted
/// ([`common::batches_race_growth`]).
#[test]
fn batches_from_two_threads_grow_the_table_without_losing_a_key() {
    let filter = LocallyLockedQf::growable(500, 1e-6)
        .max_doublings(6)
        .migration_block_slots(256)
        .build()
        .unwrap();
    let (q, r) = (filter.quotient_bits(), filter.remainder_bits());
    let hashes = common::distinct_hashes(q, r, 1 << q, 20_000, 8);
    common::batches_race_growth(
        &filter,
        &hashes,
        common::Batches {
            insert: GrowableQf::insert_batch_concurrent,
            contains: GrowableQf::contains_batch,
            remove: GrowableQf::remove_batch_concurrent,
        },
    );
    assert!(
        filter.doublings() >= 4,
        "only {} doublings",
        filter.doublings()
    );
    filter.check_invariants().unwrap();
}

/// `GrowableQf::new` and `GrowableQf::builder` are `LocallyLockedQf::growable`'s builder: the
/// same first table and the same doublings left, with the defaults and with options.
#[test]
fn growable_qf_constructors_build_what_the_locally_locked_builder_builds() {
    let shape = |filter: &GrowableQf| {
        (
            filter.quotient_bits(),
            filter.remainder_bits(),
            filter.doublings_possible(),
            filter.capacity(),
        )
    };
    for (capacity, fpr) in [(1, 0.5), (1000, 0.01), (100_000, 1e-6)] {
        let expected = LocallyLockedQf::growable(capacity, fpr).build().unwrap();
        let new = GrowableQf::new(capacity, fpr).unwrap();
        assert_eq!(shape(&new), shape(&expected), "new({capacity}, {fpr})");
        let planned = |filter: conqf::GrowableBuilder| filter.max_capacity(capacity * 50);
        let expected = planned(LocallyLockedQf::growable(capacity, fpr)).build();
        let built = planned(GrowableQf::builder(capacity, fpr)).build();
        assert_eq!(
            shape(&built.unwrap()),
            shape(&expected.unwrap()),
            "builder({capacity}, {fpr})"
        );
    }
    assert!(GrowableQf::new(0, 0.01).is_err());
}
