//! Unit tests of [`ExpandableQf`](super::ExpandableQf) that need its private state: level
//! hashing, level shapes and sizing, sealing, removal's choice of copy, and a model proptest of
//! both insert modes against per-level fingerprint sets.

use super::{ExpandableQf, LevelHashes};
use crate::filter::{Filter, Remove};

/// With a large bound, the keys that reach a level spread over all its canonical slots:
/// each full level of `2^12` slots or more has as many distinct quotients as its keys
/// would take uniformly, `2^q (1 - e^(-n / 2^q))`. With one hash shared by every level (the
/// older files), the prefixes stored on the lower levels are blocks of canonical slots no
/// key of a higher level can have, and the keys crowd the others: those levels measured
/// 17% short of uniform (0.1% with a hash per level), which made `new(1, 0.5)` take 8 µs an
/// insert after a million keys.
#[test]
fn keys_reaching_a_level_spread_over_all_its_canonical_slots() {
    // Distinct quotients over the uniform expectation, summed over the full large levels.
    let spread = |level_hashes| {
        let mut filter = ExpandableQf::new(1, 0.5).unwrap();
        filter.level_hashes = level_hashes;
        for k in 0..100_000u64 {
            filter.insert(&k).unwrap();
        }
        let fingerprints = filter.level_fingerprints();
        let (mut distinct, mut uniform) = (0.0, 0.0);
        for level in 1..filter.levels() - 1 {
            let q = filter.level(level).quotient_bits();
            if q < 12 {
                continue;
            }
            let mut quotients: Vec<u64> = fingerprints
                .iter()
                .filter(|&&(l, _)| l == level)
                .map(|(_, fingerprint)| fingerprint.quotient)
                .collect();
            let keys = quotients.len() as f64;
            quotients.dedup(); // in quotient order already
            let slots = (1u64 << q) as f64;
            distinct += quotients.len() as f64;
            uniform += slots * (1.0 - (-keys / slots).exp());
        }
        distinct / uniform
    };
    let remixed = spread(LevelHashes::PerLevel);
    let shared = spread(LevelHashes::Shared);
    assert!(remixed > 0.97, "a hash per level: {remixed} of uniform");
    assert!(shared < 0.9, "one shared hash: {shared} of uniform");
}

/// Without cascading inserts a new level opens when `len` reaches `capacity()`, the sum of
/// every level's `delta_grow` share of its final slots (by at most the sampled check's
/// slack), and `capacity()` then grows by the new level's share. Fails where `capacity()`
/// counted every level at 90% of its final slots: `new(1000, 0.01)` said 1,843 and opened
/// its second level at 1,536 keys.
#[test]
fn a_new_level_opens_where_capacity_says() {
    for (capacity, delta_grow) in [(1000, 0.75), (5000, 0.5), (300, 0.9)] {
        let filter = ExpandableQf::builder(capacity, 0.01)
            .delta_grow(delta_grow)
            .build()
            .unwrap();
        let mut planned = filter.capacity();
        assert!(planned >= capacity, "{planned} < {capacity}");
        let mut levels = filter.levels();
        for key in 0u64.. {
            filter.insert(&key).unwrap();
            if filter.levels() == levels {
                continue;
            }
            // `capacity()` or a little more: the fill is checked on a sample of inserts.
            let len = filter.len();
            assert!(
                (planned..=planned + 128).contains(&len),
                "({capacity}, {delta_grow}): level {levels} opened at {len} keys, \
                 capacity() said {planned}"
            );
            // Level `i` ends with `2^(q_0 + i)` slots ([`ExpandableQf::level_shape`]).
            let final_slots = 1u64 << (filter.q0 + levels as u32);
            let share = (final_slots as f64 * delta_grow) as usize;
            assert_eq!(filter.capacity(), planned + share);
            planned = filter.capacity();
            levels = filter.levels();
            if levels == 4 {
                break;
            }
        }
    }
}

/// Level 0's remainder bits: the fewest with `2 f 2^-r_0 < p̄`, `f = δ_grow` without
/// cascading inserts and with them the most a level can be filled, overflow tail included
/// ([`ExpandableQf`], "Levels"). The loom models rely on these sizes.
#[test]
fn level_zero_remainder_follows_the_sizing_rule() {
    let r0 = |capacity, bound, delta, cascading| {
        ExpandableQf::builder(capacity, bound)
            .delta_grow(delta)
            .cascading(cascading)
            .build()
            .unwrap()
            .r0
    };
    // Figure 4: 2^-10 at delta 0.75.
    assert_eq!(r0(49_151, 1.0 / 1024.0, 0.75, false), 11);
    assert_eq!(r0(49_151, 1.0 / 1024.0, 0.75, true), 12);
    // 0.0008: the delta rule alone would give 11 bits, whose full levels reach 9.8e-4.
    assert_eq!(r0(1000, 0.0008, 0.75, false), 11);
    assert_eq!(r0(1000, 0.0008, 0.75, true), 12);
    // The loom models' filters (tests/loom/expandable.rs): f = 6 at 8 slots.
    assert_eq!(ExpandableQf::most_fill_with_cascading(3), 6.0);
    assert_eq!(r0(1, 0.03, 0.25, true), 9);
    assert_eq!(r0(3, 0.015, 0.5, true), 10);
    // f counted as 1 gave 9 bits at 0.004, where a level's tail let the rate pass the bound.
    assert_eq!(r0(1, 0.004, 0.25, true), 12);
}

/// A bound so small that level 0's fingerprints leave no room for a second level is an
/// error, not a filter that reports `Full` after a dozen keys; one bit larger bounds work.
#[test]
fn a_bound_leaving_no_room_for_a_second_level_is_an_error() {
    for cascading in [false, true] {
        for bound in [1e-18, (-60f64).exp2()] {
            let built = ExpandableQf::builder(1, bound).cascading(cascading).build();
            assert!(
                matches!(built, Err(crate::Error::InvalidParameters(_))),
                "bound {bound:e}, cascading {cascading}"
            );
        }
    }
    let filter = ExpandableQf::new(1, 1e-12).unwrap();
    for key in 0..1000u64 {
        filter.insert(&key).unwrap();
    }
    assert!(filter.levels() > 1);
}

/// A tiny bound at a tiny capacity: level 0 takes 53 fingerprint bits, so levels 1 to 5 grow
/// their fingerprints by two bits each and the later ones are capped at the hash's 64 bits.
/// The filter keeps taking keys past the level where it used to return `Full`, finds them
/// all, and reports the rate below `p̄ + N 2^-64`.
#[test]
fn capped_levels_keep_taking_keys_at_64_bit_fingerprints() {
    let bound = 1e-15;
    let filter = ExpandableQf::new(1, bound).unwrap();
    let (q0, r0) = (filter.q0, filter.r0);
    assert_eq!((q0, r0), (2, 51), "the shape this test was written for");
    let mut uncapped = 0;
    for level in 1..super::MAX_LEVELS {
        let Some((q, r, d)) = ExpandableQf::level_shape((q0, r0), level, 0) else {
            break;
        };
        let final_q = q + d;
        assert_eq!(final_q, q0 + level as u32);
        if ExpandableQf::is_uncapped((q0, r0), level) {
            uncapped = level;
            assert!(q + r <= 64);
        } else {
            assert_eq!(q + r, 64, "level {level}");
        }
    }
    assert_eq!(uncapped, 5);
    let keys = 60_000u64;
    for key in 0..keys {
        filter.insert(&key).unwrap();
    }
    assert!(filter.levels() > uncapped + 2, "{} levels", filter.levels());
    assert!((0..keys).all(|key| filter.contains(&key)));
    assert!(filter.false_positive_rate() < bound + keys as f64 * (-64f64).exp2());
    filter.check_invariants().unwrap();
}

/// For every level-0 shape the constructor accepts, every level's fingerprint is two bits
/// longer than the one before until it reaches 64 bits, and exactly 64 bits after that: the
/// premise of the rate bound in the type doc. A review found `new(1, 1.05e-17)` (`r_0 =
/// 57`) with levels of 61 to 63 bits between; it is refused now.
#[test]
fn accepted_shapes_grow_their_fingerprints_to_exactly_64_bits() {
    let mut accepted = 0;
    use crate::qf::slot::STATUS_BITS;
    use crate::sizing::MAX_QUOTIENT_BITS;
    for q0 in 1..=MAX_QUOTIENT_BITS {
        for r0 in 1..=61u32.min(64 - q0) {
            if !ExpandableQf::fingerprints_grow_to_64_bits((q0, r0)) {
                continue;
            }
            accepted += 1;
            for level in 1..super::MAX_LEVELS {
                let Some((q, r, d)) = ExpandableQf::level_shape((q0, r0), level, 0) else {
                    break;
                };
                let expected = (q0 + r0 + 2 * level as u32).min(64);
                assert_eq!(q + r, expected, "q0 {q0}, r0 {r0}, level {level}");
                assert!(r + STATUS_BITS <= 64 && (1..=MAX_QUOTIENT_BITS).contains(&(q + d)));
            }
        }
    }
    assert!(accepted > 1000, "{accepted}");
    assert!(matches!(
        ExpandableQf::new(1, 1.05e-17),
        Err(crate::Error::InvalidParameters(_))
    ));
}

/// Lower levels get sealed for lock-free reads once the grace period after the next level's
/// opening has passed (pinning again lets the epoch advance); the newest level never is.
#[test]
fn lower_levels_are_sealed_after_a_grace_period() {
    let filter = ExpandableQf::new(1000, 0.01).unwrap();
    let mut k = 0u64;
    while filter.levels() < 3 {
        filter.insert(&k).unwrap();
        k += 1;
    }
    let sealed = |i| filter.reads.is_sealed(i);
    // Pinning lets the epoch advance, unless another test's thread is descheduled while
    // pinned: yield, and give up only after a long bound (a hang guard, not a timing test).
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !(sealed(0) && sealed(1)) && std::time::Instant::now() < give_up {
        drop(crate::qf::growing::pin());
        std::thread::yield_now();
    }
    assert!(sealed(0) && sealed(1) && !sealed(2));
    assert!((0..k).all(|key| filter.contains(&key)));
}

/// `most_fill_with_cascading` computes the levels' slots from how they are built; this
/// checks it against the slots the levels of real filters have: no level has more slots per
/// canonical slot than the bound, and a level at its final size reaches it.
#[test]
fn the_cascading_fill_bound_counts_every_slot_the_levels_have() {
    for capacity in [1usize, 5, 100, 3000] {
        let filter = ExpandableQf::builder(capacity, 0.01)
            .cascading(true)
            .build()
            .unwrap();
        for k in 0..(capacity as u64 * 64).max(5000) {
            filter.insert(&k).unwrap();
        }
        assert!(filter.levels() >= 4, "{} levels", filter.levels());
        let bound = ExpandableQf::most_fill_with_cascading(filter.q0);
        let mut reached = false;
        for i in 0..filter.levels() {
            let slots = filter.level(i).with_quiescent(|f, _| f.table.slots.len());
            let ratio = slots as f64 / (1u64 << (filter.q0 + i as u32)) as f64;
            assert!(
                ratio <= bound,
                "capacity {capacity}, level {i}: {ratio} > {bound}"
            );
            reached |= ratio == bound;
        }
        assert!(
            reached,
            "capacity {capacity}: no level has {bound} slots per canonical slot"
        );
    }
}

/// Level 0 has the first power of two of slots with `δ_grow m_0 > c` in whole keys.
#[test]
fn level_zero_slots_follow_the_sizing_rule() {
    let q0 = |capacity| ExpandableQf::new(capacity, 0.01).unwrap().q0;
    assert_eq!(q0(49_151), 16); // 0.75 * 65536 = 49152 > 49151
    assert_eq!(q0(49_152), 17); // not strictly larger any more
    assert_eq!(q0(3), 3); // 0.75 * 8 = 6 > 3, 0.75 * 4 = 3 is not

    // 0.7 * 1024 = 716.8 > 716, but a level counts whole keys: its 716th would open level 1.
    let q0_at = |capacity, delta| {
        let filter = ExpandableQf::builder(capacity, 0.01).delta_grow(delta);
        filter.build().unwrap().q0
    };
    assert_eq!(q0_at(715, 0.7), 10);
    assert_eq!(q0_at(716, 0.7), 11);
}

/// A filter without cascading inserts gets a hash per level, a cascading one keeps one
/// hash; `clear` gives a filter read from an older file (one hash) what a new one gets.
#[test]
fn cascading_filters_keep_one_hash_and_clear_takes_a_new_filters() {
    let plain = ExpandableQf::new(1000, 0.01).unwrap();
    let mut cascading = ExpandableQf::builder(1000, 0.01)
        .cascading(true)
        .build()
        .unwrap();
    assert_eq!(plain.level_hashes, LevelHashes::PerLevel);
    assert_eq!(cascading.level_hashes, LevelHashes::Shared);
    let mut old = plain;
    old.level_hashes = LevelHashes::Shared;
    for k in 0..5000u64 {
        old.insert(&k).unwrap();
        cascading.insert(&k).unwrap();
    }
    assert!(old.levels() > 2);
    old.clear();
    cascading.clear();
    assert_eq!(old.level_hashes, LevelHashes::PerLevel);
    assert_eq!(cascading.level_hashes, LevelHashes::Shared);
    for k in 0..5000u64 {
        old.insert(&k).unwrap();
    }
    assert!((0..5000u64).all(|k| old.contains(&k)));
}

/// A key hash, other than `hash` for each `low` from 1 on, whose level-1 fingerprint is
/// `hash`'s: its level-1 hash keeps the fingerprint's bits and takes others below them,
/// mapped back through the level's multiplier (its inverse modulo 2^64, by Newton's
/// iteration, which doubles the correct bits each step).
fn with_level_1_fingerprint_of(filter: &ExpandableQf, hash: u64, low: u64) -> u64 {
    let level = filter.level(1);
    let bits = level.quotient_bits() + level.remainder_bits();
    let inverse = match filter.level_hashes {
        LevelHashes::Shared => 1,
        LevelHashes::PerLevel => {
            let multiplier = super::level_hashes::LEVEL_MULTIPLIERS[1];
            let mut inverse = 1u64;
            for _ in 0..6 {
                inverse = inverse.wrapping_mul(2u64.wrapping_sub(multiplier.wrapping_mul(inverse)));
            }
            inverse
        }
    };
    let top = filter.level_hashes.of(1, hash) >> (64 - bits) << (64 - bits);
    let other = (top | low.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> bits).wrapping_mul(inverse);
    assert_eq!(
        filter.level_hashes.of(1, other) >> (64 - bits),
        top >> (64 - bits)
    );
    other
}

/// Set semantics with cascading inserts: a key whose fingerprint on level 1 is another
/// stored key's gets `Ok(false)` from its insert, whatever its lower bits, so removing it
/// (which takes that fingerprint) falls under the documented exception for keys that share a
/// fingerprint. One hash for all levels gives it: the two keys share their canonical slot on
/// level 0, where the stored key found no room. Fails with a hash per level (the early stop
/// passes the key whose level-0 slot is empty, and the insert stores it with `Ok(true)`).
#[test]
fn a_cascading_key_matching_a_higher_level_fingerprint_is_present() {
    let filter = ExpandableQf::builder(64, 0.05)
        .cascading(true)
        .build()
        .unwrap();
    // A key stored on level 1 (its level-0 canonical slot was taken).
    let on_level_1 = |hash: u64| {
        let level_hash = filter.level_hashes.of(1, hash);
        filter.level(1).contains_hash_locked(level_hash)
            && !filter.level(0).contains_hash_locked(hash)
    };
    let mut k = 0u64;
    let stored = loop {
        let hash = crate::hash::hash_key(&k);
        filter.insert_hash(hash).unwrap();
        if filter.levels() >= 2 && on_level_1(hash) {
            break hash;
        }
        k += 1;
    };
    for low in 1..200u64 {
        let other = with_level_1_fingerprint_of(&filter, stored, low);
        assert_ne!(other, stored);
        assert!(filter.contains_hash(other), "low bits {low}");
        assert_eq!(filter.insert_hash(other), Ok(false), "low bits {low}");
    }
}

/// Without cascading inserts, removing a key takes its own copy, the one on the oldest level
/// holding its fingerprint: a key stored on level 0 and a later key stored on level 1 whose
/// level-1 fingerprint (a hash per level) is the first key's both answer `Ok(true)`, and
/// removing the first leaves the second. Taking the newest level's copy removed the second.
#[test]
fn removal_takes_the_copy_of_the_removed_key() {
    let filter = ExpandableQf::new(64, 0.05).unwrap();
    let first = crate::hash::hash_key(&0u64);
    assert_eq!(filter.insert_hash(first), Ok(true));
    let mut k = 1u64;
    while filter.levels() < 2 {
        filter.insert(&k).unwrap();
        k += 1;
    }
    // A key with the first key's level-1 fingerprint that no level holds yet.
    let second = (1..1000u64)
        .map(|low| with_level_1_fingerprint_of(&filter, first, low))
        .find(|&hash| !filter.contains_hash(hash))
        .unwrap();
    assert_eq!(filter.insert_hash(second), Ok(true));
    assert_eq!(filter.remove_hash(first), Ok(true));
    assert!(filter.contains_hash(second));
}

/// Random inserts, removals and queries against the exact model: one set of fingerprints
/// per level, each the top `q_i + r_i` bits of the level's own hash, and the levels' removal
/// flags. Without cascading inserts a key is present if any level holds its fingerprint;
/// with them, a query also stops at a lower level (not the newest) where the key's canonical
/// slot is empty and no removal ran, which the model finds by laying the level's
/// fingerprints out as a quotient filter places them (runs in quotient order, each from its
/// canonical slot or the end of the run before). An insert answers `Ok(true)` exactly when
/// the query would have answered `false`, and lands where the model says: with cascading
/// inserts on the first lower level whose canonical slot is empty (and, past a removal
/// there, no higher level holds the key), else on the newest level. A removal takes the
/// fingerprint from the newest level holding it with cascading inserts, from the oldest
/// without, and flags that level.
///
/// The hashes are random, drawn from a pool so that keys are inserted again and removed:
/// they collide mostly on level 0's short fingerprints. The filter without cascading inserts
/// hashes each level apart, the cascading one with one hash (as their constructors do).
mod model {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::super::ExpandableQf;
    use crate::filter::{Filter, Remove};

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Insert(u64),
        Remove(u64),
        Contains(u64),
    }

    /// Operations on a pool of random hashes, so keys are inserted again, removed and
    /// looked up after they were inserted; enough of them to open at least three levels
    /// from `builder(4, 0.2)`.
    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let pool = proptest::collection::vec(any::<u64>(), 100..200);
        let picks = proptest::collection::vec((0..10u8, any::<prop::sample::Index>()), 300..500);
        (pool, picks).prop_map(|(pool, picks)| {
            picks
                .into_iter()
                .map(|(kind, index)| {
                    let hash = *index.get(&pool);
                    match kind {
                        0..=4 => Op::Insert(hash),
                        5..=6 => Op::Remove(hash),
                        _ => Op::Contains(hash),
                    }
                })
                .collect()
        })
    }

    struct Model<'a> {
        filter: &'a ExpandableQf,
        levels: Vec<BTreeSet<u64>>,
        removed: Vec<bool>,
    }

    impl Model<'_> {
        /// Level `i`'s fingerprint of `hash`.
        fn fingerprint(&self, i: usize, hash: u64) -> u64 {
            let level = self.filter.level(i);
            let bits = level.quotient_bits() + level.remainder_bits();
            self.filter.level_hashes.of(i, hash) >> (64 - bits)
        }

        fn holds(&self, i: usize, hash: u64) -> bool {
            self.levels[i].contains(&self.fingerprint(i, hash))
        }

        /// Whether level `i`'s canonical slot of `hash` is empty, from its fingerprints.
        fn canonical_is_empty(&self, i: usize, hash: u64) -> bool {
            let r = self.filter.level(i).remainder_bits();
            let canonical = self.fingerprint(i, hash) >> r;
            let mut next_free = 0;
            for fingerprint in &self.levels[i] {
                let slot = next_free.max(fingerprint >> r);
                if slot == canonical {
                    return false;
                }
                next_free = slot + 1;
            }
            true
        }

        /// Where a cascading query stops at level `i` (not the newest): the canonical slot
        /// is empty and the level never saw a removal.
        fn stops_at(&self, i: usize, hash: u64) -> bool {
            self.filter.cascading
                && i + 1 < self.levels.len()
                && self.canonical_is_empty(i, hash)
                && !self.removed[i]
        }

        /// What a query of `hash` answers.
        fn present(&self, hash: u64) -> bool {
            for i in 0..self.levels.len() {
                if self.stops_at(i, hash) {
                    return false;
                }
                if self.holds(i, hash) {
                    return true;
                }
            }
            false
        }

        /// The lower level a cascading insert of an absent `hash` takes, if any.
        fn cascades_to(&self, hash: u64) -> Option<usize> {
            let newest = self.levels.len() - 1;
            (0..newest).find(|&i| {
                self.filter.cascading
                    && self.canonical_is_empty(i, hash)
                    && (!self.removed[i] || !(i + 1..=newest).any(|j| self.holds(j, hash)))
            })
        }
    }

    fn run(cascading: bool, ops: Vec<Op>) -> Result<(), TestCaseError> {
        let filter = ExpandableQf::builder(4, 0.2)
            .cascading(cascading)
            .build()
            .unwrap();
        let mut model = Model {
            filter: &filter,
            levels: vec![BTreeSet::new()],
            removed: vec![false],
        };
        for op in ops {
            match op {
                Op::Insert(hash) => {
                    let present = model.present(hash);
                    let newest = model.levels.len() - 1;
                    let cascades_to = model.cascades_to(hash);
                    prop_assert_eq!(filter.insert_hash(hash), Ok(!present));
                    model.levels.resize(filter.levels(), BTreeSet::new());
                    model.removed.resize(filter.levels(), false);
                    if !present {
                        // The level whose table now holds the fingerprint the model lacks.
                        let landed: Vec<usize> = (0..model.levels.len())
                            .filter(|&i| {
                                let level_hash = filter.level_hashes.of(i, hash);
                                filter.level(i).contains_hash_locked(level_hash)
                                    && !model.holds(i, hash)
                            })
                            .collect();
                        prop_assert_eq!(landed.len(), 1, "landed on {:?}", landed);
                        match cascades_to {
                            Some(i) => prop_assert_eq!(landed[0], i),
                            None => prop_assert!(landed[0] >= newest, "on {}", landed[0]),
                        }
                        let fingerprint = model.fingerprint(landed[0], hash);
                        model.levels[landed[0]].insert(fingerprint);
                    }
                }
                Op::Remove(hash) => {
                    let mut holding = (0..model.levels.len()).filter(|&i| model.holds(i, hash));
                    let taken = if cascading {
                        holding.next_back()
                    } else {
                        holding.next()
                    };
                    prop_assert_eq!(filter.remove_hash(hash), Ok(taken.is_some()));
                    if let Some(i) = taken {
                        let fingerprint = model.fingerprint(i, hash);
                        model.levels[i].remove(&fingerprint);
                        model.removed[i] = true;
                    }
                }
                Op::Contains(hash) => {
                    let present = model.present(hash);
                    prop_assert_eq!(filter.contains_hash(hash), present);
                    prop_assert_eq!(filter.contains_hash_locked(hash), present);
                }
            }
        }
        let len: usize = model.levels.iter().map(BTreeSet::len).sum();
        prop_assert_eq!(filter.len(), len);
        prop_assert!(filter.levels() >= 3, "only {} levels", filter.levels());
        filter.check_invariants().map_err(TestCaseError::fail)?;
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        #[test]
        fn expandable_filter_matches_the_model(ops in ops()) {
            run(false, ops)?;
        }

        #[test]
        fn cascading_expandable_filter_matches_the_model(ops in ops()) {
            run(true, ops)?;
        }
    }
}
