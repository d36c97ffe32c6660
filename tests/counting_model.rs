//! `CountingQf` against an exact multiset model: proptests on random operation sequences from a
//! small fingerprint space (long runs and clusters, counters next to each other, the overflow
//! tail), keys inserted thousands of times and removed again, growth, and iteration.

mod common;

use std::collections::BTreeMap;

use common::hash_of;
use conqf::{Count, CountingQf, Error, Filter, Fingerprint, Remove};
use proptest::prelude::*;

/// One operation on the filter and the model.
#[derive(Debug, Clone, Copy)]
enum Op {
    Insert(u64),
    InsertCount(u64, u64),
    /// `insert_if_absent_hash`: a count of 0 becomes 1, any other stays.
    InsertIfAbsent(u64),
    /// `insert_batch_if_absent` of four hashes (repeats among them too).
    InsertBatchIfAbsent([u64; 4]),
    Remove(u64),
    RemoveAll(u64),
    Count(u64),
    Grow,
}

/// The exact model: the count of every fingerprint.
#[derive(Default)]
struct Model {
    counts: BTreeMap<Fingerprint, u64>,
}

impl Model {
    fn get(&self, f: Fingerprint) -> u64 {
        self.counts.get(&f).copied().unwrap_or(0)
    }

    fn set(&mut self, f: Fingerprint, count: u64) {
        if count == 0 {
            self.counts.remove(&f);
        } else {
            self.counts.insert(f, count);
        }
    }
}

/// Hashes from `quotients` canonical slots at both ends of the table and `remainders` values,
/// including remainder 0 and the largest remainder.
fn hashes(q: u32, r: u32, quotients: u64, remainders: u64) -> impl Strategy<Value = u64> + Clone {
    let slots = 1u64 << q;
    let top = (1u64 << r) - 1;
    let quotient = prop_oneof![
        3 => 0..quotients.min(slots),
        1 => (slots - quotients.min(slots))..slots,
        1 => 60..70u64.min(slots),
    ];
    let remainder = prop_oneof![
        3 => 0..remainders.min(top + 1),
        1 => Just(0u64),
        1 => Just(top),
        1 => (top - remainders.min(top))..=top,
    ];
    (quotient, remainder, any::<u64>())
        .prop_map(move |(qu, re, noise)| hash_of(qu, re, q, r, noise))
}

fn ops(
    q: u32,
    r: u32,
    quotients: u64,
    remainders: u64,
    len: usize,
) -> impl Strategy<Value = Vec<Op>> {
    let hash = hashes(q, r, quotients, remainders);
    let count = prop_oneof![
        4 => 1..20u64,
        2 => 20..5000u64,
        1 => Just(u64::MAX / 3),
    ];
    let op = prop_oneof![
        8 => hash.clone().prop_map(Op::Insert),
        3 => (hash.clone(), count).prop_map(|(h, n)| Op::InsertCount(h, n)),
        3 => hash.clone().prop_map(Op::InsertIfAbsent),
        2 => proptest::array::uniform4(hash.clone()).prop_map(Op::InsertBatchIfAbsent),
        5 => hash.clone().prop_map(Op::Remove),
        1 => hash.clone().prop_map(Op::RemoveAll),
        3 => hash.prop_map(Op::Count),
        1 => Just(Op::Grow),
    ];
    proptest::collection::vec(op, 1..len)
}

/// Runs `ops` on a fresh filter and the model, checking every answer, the invariants after every
/// write, and the iteration at the end.
fn run(q: u32, r: u32, region_blocks: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut filter = CountingQf::with_bits_and_region(q, r, region_blocks).unwrap();
    let mut model = Model::default();
    for (step, &op) in ops.iter().enumerate() {
        let (q, r) = (filter.quotient_bits(), filter.remainder_bits());
        let fp = |h: u64| Fingerprint::split(h, q, r);
        match op {
            Op::Insert(h) => match filter.insert_hash(h) {
                Ok(first) => {
                    let old = model.get(fp(h));
                    prop_assert_eq!(first, old == 0, "step {}", step);
                    model.set(fp(h), old.saturating_add(1));
                }
                Err(Error::Full) => {}
                Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
            },
            Op::InsertCount(h, n) => match filter.insert_count_hash(h, n) {
                Ok(()) => model.set(fp(h), model.get(fp(h)).saturating_add(n)),
                Err(Error::Full) => {}
                Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
            },
            Op::InsertIfAbsent(h) => {
                let old = model.get(fp(h));
                match filter.insert_if_absent_hash(h) {
                    Ok(stored) => {
                        prop_assert_eq!(stored, old == 0, "step {}", step);
                        model.set(fp(h), old.max(1));
                    }
                    Err(Error::Full) => prop_assert_eq!(old, 0, "Full for a stored key"),
                    Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                }
            }
            Op::InsertBatchIfAbsent(batch) => {
                let mut fingerprints: Vec<Fingerprint> = batch.iter().map(|&h| fp(h)).collect();
                fingerprints.sort();
                fingerprints.dedup();
                let absent = fingerprints.iter().filter(|&&f| model.get(f) == 0);
                match filter.insert_batch_if_absent(&batch) {
                    Ok(stored) => {
                        prop_assert_eq!(stored, absent.count(), "step {}", step);
                        for &f in &fingerprints {
                            model.set(f, model.get(f).max(1));
                        }
                    }
                    // One range, updated in table order up to the first that does not fit.
                    Err(Error::Full) => {
                        let absent: Vec<Fingerprint> = absent.copied().collect();
                        let count_of = |f: Fingerprint| {
                            let hash = common::hash_of(f.quotient, f.remainder, q, r, 0);
                            filter.count_hash(hash)
                        };
                        let fitted = absent.iter().take_while(|&&f| count_of(f) == 1).count();
                        prop_assert!(fitted < absent.len(), "Full, yet every key went in");
                        for &f in &absent[fitted..] {
                            prop_assert_eq!(count_of(f), 0, "stored past the first refused");
                        }
                        for &f in &absent[..fitted] {
                            model.set(f, 1);
                        }
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                }
            }
            Op::Remove(h) => {
                let old = model.get(fp(h));
                prop_assert_eq!(filter.remove_hash(h).unwrap(), old > 0, "step {}", step);
                model.set(fp(h), old.saturating_sub(1));
            }
            Op::RemoveAll(h) => {
                prop_assert_eq!(filter.remove_all_hash(h).unwrap(), model.get(fp(h)));
                model.set(fp(h), 0);
            }
            Op::Count(h) => {
                prop_assert_eq!(filter.count_hash(h), model.get(fp(h)), "step {}", step);
                prop_assert_eq!(filter.contains_hash(h), model.get(fp(h)) > 0);
            }
            Op::Grow => {
                if filter.grow().is_ok() {
                    let (q2, r2) = (filter.quotient_bits(), filter.remainder_bits());
                    model.counts = model
                        .counts
                        .iter()
                        .map(|(f, &c)| {
                            let quotient = (f.quotient << 1) | (f.remainder >> (r2));
                            let remainder = f.remainder & ((1 << r2) - 1);
                            prop_assert!(quotient < 1 << q2);
                            Ok((
                                Fingerprint {
                                    quotient,
                                    remainder,
                                },
                                c,
                            ))
                        })
                        .collect::<Result<_, TestCaseError>>()?;
                }
            }
        }
        if let Err(why) = filter.check_invariants() {
            return Err(TestCaseError::fail(format!("step {step} {op:?}: {why}")));
        }
    }
    let listed: Vec<(Fingerprint, u64)> = filter.counts().collect();
    let expected: Vec<(Fingerprint, u64)> = model.counts.iter().map(|(&f, &c)| (f, c)).collect();
    prop_assert_eq!(listed, expected);
    // `len` saturates at `usize::MAX` (the type's doc); huge counts reach past it.
    let copies: u128 = model.counts.values().map(|&c| u128::from(c)).sum();
    prop_assert_eq!(filter.len(), usize::try_from(copies).unwrap_or(usize::MAX));
    prop_assert_eq!(filter.distinct(), model.counts.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Few quotients and remainders: long runs with counters side by side, clusters across block
    /// boundaries, the overflow tail.
    #[test]
    fn crowded_runs_match_the_model(ops in ops(7, 4, 6, 6, 300)) {
        run(7, 4, 1, &ops)?;
    }

    /// Two-bit remainders: counters in base 3, the smallest the encoding allows.
    #[test]
    fn two_bit_remainders_match_the_model(ops in ops(6, 3, 4, 8, 200)) {
        run(6, 3, 1, &ops)?;
    }

    /// Remainders of 18 bits, crowded: short runs read three lanes to a word, longer ones and
    /// counters take the entry walk.
    #[test]
    fn crowded_runs_of_wide_remainders_match_the_model(ops in ops(7, 18, 6, 6, 300)) {
        run(7, 18, 1, &ops)?;
    }

    /// Wider remainders and a bigger table.
    #[test]
    fn spread_keys_match_the_model(ops in ops(10, 9, 200, 40, 400)) {
        run(10, 9, 2, &ops)?;
    }
}

/// A key inserted thousands of times one by one takes a few slots, counts exactly, and goes away
/// after as many removals; its neighbours keep their counts.
#[test]
fn thousands_of_copies_cost_a_few_slots_and_remove_exactly() {
    let (q, r) = (8, 6);
    let filter = CountingQf::with_bits(q, r).unwrap();
    let hot = hash_of(5, 9, q, r, 0);
    let neighbours = [
        hash_of(5, 3, q, r, 0),
        hash_of(5, 20, q, r, 0),
        hash_of(6, 0, q, r, 0),
    ];
    for &h in &neighbours {
        filter.insert_hash(h).unwrap();
    }
    for i in 0..5000u64 {
        assert_eq!(filter.insert_hash(hot).unwrap(), i == 0);
    }
    assert_eq!(filter.count_hash(hot), 5000);
    filter.check_invariants().unwrap();
    // The run of quotient 5 and its neighbours fit comfortably in one block.
    let used: usize = filter.counts().count();
    assert_eq!(used, 4);
    for i in (0..5000u64).rev() {
        assert!(filter.remove_hash(hot).unwrap());
        if i % 997 == 0 {
            assert_eq!(filter.count_hash(hot), i);
            filter.check_invariants().unwrap();
        }
    }
    assert!(!filter.remove_hash(hot).unwrap());
    assert_eq!(filter.count_hash(hot), 0);
    for &h in &neighbours {
        assert_eq!(filter.count_hash(h), 1);
    }
    filter.check_invariants().unwrap();
}

/// Counts near `u64::MAX` on several keys: `len` saturates instead of wrapping (it read 0, and
/// `is_empty` said true, with two keys stored), in the filter, its merge and its bytes; and it
/// comes back exactly when the huge count goes.
#[test]
fn len_saturates_past_u64_max_copies() {
    use conqf::{CountingQfRef, Merge};
    let (q, r) = (10, 8);
    let (huge, small) = (hash_of(3, 5, q, r, 0), hash_of(700, 9, q, r, 0));
    let filter = CountingQf::with_bits(q, r).unwrap();
    filter.insert_count_hash(huge, u64::MAX).unwrap();
    filter.insert_count_hash(small, 2).unwrap();
    assert_eq!(
        (filter.count_hash(huge), filter.count_hash(small)),
        (u64::MAX, 2)
    );
    assert_eq!(filter.len(), usize::MAX);
    assert!(!filter.is_empty());
    filter.check_invariants().unwrap();
    let bytes = filter.to_bytes();
    let view = CountingQfRef::from_bytes(&bytes).unwrap();
    assert_eq!((view.len(), view.is_empty()), (usize::MAX, false));
    assert_eq!(CountingQf::from_bytes(&bytes).unwrap().len(), usize::MAX);
    // A second input with more copies of both keys: the union's counts saturate per key.
    let other = CountingQf::with_bits(q, r).unwrap();
    other.insert_count_hash(huge, 5).unwrap();
    other.insert_count_hash(small, 1).unwrap();
    let union = filter.merge(&other).unwrap();
    assert_eq!(
        (union.count_hash(huge), union.count_hash(small)),
        (u64::MAX, 3)
    );
    assert_eq!(union.len(), usize::MAX);
    union.check_invariants().unwrap();
    assert_eq!(filter.remove_all_hash(huge).unwrap(), u64::MAX);
    assert_eq!(filter.len(), 2);
    filter.check_invariants().unwrap();
}

/// A million copies at once, then many distinct keys: a full table is reported as `Full` and the
/// filter stays usable.
#[test]
fn full_table_reports_full_and_stays_usable() {
    let (q, r) = (6, 8);
    let filter = CountingQf::with_bits(q, r).unwrap();
    filter
        .insert_count_hash(hash_of(63, 1, q, r, 0), 1_000_000)
        .unwrap();
    let mut stored = Vec::new();
    let mut full = false;
    for i in 0..10_000u64 {
        let h = hash_of(63, (i * 7 + 2) % 256, q, r, i);
        match filter.insert_hash(h) {
            Ok(_) => stored.push(h),
            Err(Error::Full) => {
                full = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        full,
        "all keys of one quotient must overflow a 64-slot table"
    );
    filter.check_invariants().unwrap();
    assert_eq!(filter.count_hash(hash_of(63, 1, q, r, 0)), 1_000_000);
    assert!(stored.iter().all(|&h| filter.contains_hash(h)));
    assert!(filter.remove_hash(stored[0]).unwrap());
    filter.insert_hash(stored[0]).unwrap();
    filter.check_invariants().unwrap();
}

#[test]
fn constructors_validate() {
    assert!(CountingQf::with_bits(0, 8).is_err());
    assert!(CountingQf::with_bits(10, 1).is_err());
    assert!(CountingQf::with_bits(41, 8).is_err());
    assert!(CountingQf::with_bits(10, 63).is_err());
    assert!(CountingQf::with_bits_and_region(10, 8, 0).is_err());
    assert!(CountingQf::new(0, 0.01).is_err());
    assert!(CountingQf::new(100, 1.5).is_err());
    let filter = CountingQf::new(1000, 0.01).unwrap();
    assert!(filter.capacity() >= 1000);
    assert!(
        conqf::qf_fpr(
            1000.0 / (1u64 << filter.quotient_bits()) as f64,
            filter.remainder_bits()
        ) <= 0.01
    );
    let mut small = CountingQf::with_bits(4, 2).unwrap();
    assert!(small.grow().is_err());
}

/// One run of about 800 slots makes the offsets of the next blocks saturate (255 or more): lookups
/// there recompute them from the blocks before, and inserts and removes keep them exact.
#[test]
fn saturated_offsets_are_recomputed_exactly() {
    let (q, r) = (10, 9);
    let mut model = Model::default();
    let filter = CountingQf::with_bits_and_region(q, r, 1).unwrap();
    let mut keys = Vec::new();
    for x in 0..400u64 {
        keys.push(hash_of(3, x, q, r, x));
    }
    for quotient in [64u64, 65, 130, 200, 330, 400, 700, 1023] {
        for x in [0, 7, 300] {
            keys.push(hash_of(quotient, x, q, r, quotient));
        }
    }
    for (i, &h) in keys.iter().enumerate() {
        let n = 1 + (i as u64 % 3);
        filter.insert_count_hash(h, n).unwrap();
        let f = Fingerprint::split(h, q, r);
        model.set(f, model.get(f) + n);
    }
    filter.check_invariants().unwrap();
    for &h in &keys {
        assert_eq!(filter.count_hash(h), model.get(Fingerprint::split(h, q, r)));
    }
    // Remove every other key of the long run, then everything.
    for &h in keys.iter().step_by(2) {
        filter.remove_all_hash(h).unwrap();
        model.set(Fingerprint::split(h, q, r), 0);
        filter.check_invariants().unwrap();
    }
    for &h in &keys {
        assert_eq!(filter.count_hash(h), model.get(Fingerprint::split(h, q, r)));
        filter.remove_all_hash(h).unwrap();
    }
    filter.check_invariants().unwrap();
    assert_eq!(filter.len(), 0);
}
