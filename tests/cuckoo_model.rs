//! Exact-model property tests of both cuckoo filters: random operation sequences on a tiny table
//! (8 buckets of 4 entries) with fingerprints from a small space, so fingerprints collide, the
//! same fingerprint is stored several times, relocation chains get long and the table fills up
//! (`Full`). The model is a multiset of `(fingerprint, bucket pair)`: a cuckoo filter is exact
//! in those, so every answer must equal the model's, and after every step the stored entries
//! must be exactly the model's. Merges of two such filters must hold both multisets.

mod common;

use std::collections::BTreeMap;

use common::cuckoo::CuckooUnderTest as Cuckoo;
use conqf::{Error, LockFreeCuckooFilter, LockedCuckooFilter, Merge};
use proptest::prelude::*;

const BUCKET_BITS: u32 = 3;

#[derive(Debug, Clone, Copy)]
enum Op {
    Insert(u64),
    Remove(u64),
    Contains(u64),
    Count(u64),
    /// `insert_count_hash`: up to 10 copies, so some ask for more than a fingerprint's 8
    /// entries.
    InsertCount(u64, u64),
    /// `insert_if_absent_hash`: stores a copy only if none is stored.
    InsertIfAbsent(u64),
}

/// Hashes from a small space: `keys` distinct top-bit patterns (bucket and fingerprint bits).
fn ops(fingerprint_bits: u32, keys: u64, len: usize) -> impl Strategy<Value = Vec<Op>> {
    let shift = 64 - BUCKET_BITS - fingerprint_bits;
    let hash = (0..keys, any::<u64>()).prop_map(move |(k, noise)| {
        // Spread the key index over the bucket and fingerprint bits, keep random low bits.
        let top = k.wrapping_mul(0x9E37_79B9) & ((1u64 << (BUCKET_BITS + fingerprint_bits)) - 1);
        (top << shift) | (noise >> (BUCKET_BITS + fingerprint_bits))
    });
    let op = prop_oneof![
        5 => hash.clone().prop_map(Op::Insert),
        2 => hash.clone().prop_map(Op::Remove),
        2 => hash.clone().prop_map(Op::Contains),
        2 => hash.clone().prop_map(Op::Count),
        1 => (hash.clone(), 0..=10u64).prop_map(|(h, n)| Op::InsertCount(h, n)),
        2 => hash.prop_map(Op::InsertIfAbsent),
    ];
    proptest::collection::vec(op, 1..len)
}

/// Runs `sequence` on a new filter, checking every step against the model; returns the filter
/// and how many inserts were `Full`.
fn run<F: Cuckoo>(fingerprint_bits: u32, sequence: &[Op]) -> Result<(F, usize), TestCaseError> {
    let filter = F::build(BUCKET_BITS, fingerprint_bits);
    let mut model: BTreeMap<(u64, [usize; 2]), usize> = BTreeMap::new();
    let mut fulls = 0;
    for &op in sequence {
        match op {
            Op::Insert(h) => match filter.insert_hash(h) {
                Ok(stored) => {
                    prop_assert!(stored, "an insert that succeeds stores a copy");
                    *model.entry(filter.place(h)).or_default() += 1;
                }
                Err(Error::Full) => fulls += 1,
                Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
            },
            Op::Remove(h) => {
                let key = filter.place(h);
                let expected = match model.get_mut(&key) {
                    Some(count) => {
                        *count -= 1;
                        if *count == 0 {
                            model.remove(&key);
                        }
                        true
                    }
                    None => false,
                };
                prop_assert_eq!(filter.remove_hash(h), Ok(expected), "remove {:?}", key);
            }
            Op::Contains(h) => {
                let key = filter.place(h);
                prop_assert_eq!(filter.contains_hash(h), model.contains_key(&key));
            }
            Op::Count(h) => {
                let copies = model.get(&filter.place(h)).copied().unwrap_or(0);
                prop_assert_eq!(filter.count_hash(h), copies as u64);
            }
            Op::InsertCount(h, n) => match filter.insert_count_hash(h, n) {
                Ok(()) if n == 0 => {}
                Ok(()) => *model.entry(filter.place(h)).or_default() += n as usize,
                // The model is unchanged, and the check below holds the filter to it.
                Err(Error::Full) => fulls += 1,
                Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
            },
            Op::InsertIfAbsent(h) => {
                let key = filter.place(h);
                match filter.insert_if_absent_hash(h) {
                    Ok(stored) => {
                        prop_assert_eq!(stored, !model.contains_key(&key), "{:?}", key);
                        *model.entry(key).or_default() += usize::from(stored);
                    }
                    Err(Error::Full) => {
                        prop_assert!(!model.contains_key(&key), "Full for a stored {:?}", key);
                        fulls += 1;
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                }
            }
        }
        if let Err(why) = filter.invariants() {
            return Err(TestCaseError::fail(format!("after {op:?}: {why}")));
        }
        let expected: Vec<_> = model
            .iter()
            .flat_map(|(&key, &count)| std::iter::repeat_n(key, count))
            .collect();
        let mut stored = filter.stored();
        stored.sort();
        prop_assert_eq!(stored, expected, "after {:?}", op);
        prop_assert_eq!(filter.len(), model.values().sum::<usize>());
    }
    Ok((filter, fulls))
}

/// Merges the filters `left` and `right` leave: the union must store exactly the copies of
/// both (as a multiset of `(fingerprint, bucket pair)`), pass the invariants and count them;
/// a `Full` merge leaves both inputs as they were. Returns whether the merge fitted.
fn merge<F: Cuckoo + Merge>(
    fingerprint_bits: u32,
    left: &[Op],
    right: &[Op],
) -> Result<bool, TestCaseError> {
    let (a, _) = run::<F>(fingerprint_bits, left)?;
    let (b, _) = run::<F>(fingerprint_bits, right)?;
    let (before_a, before_b) = (a.stored(), b.stored());
    let mut expected = [before_a.clone(), before_b.clone()].concat();
    expected.sort();
    match a.merge(&b) {
        Ok(union) => {
            let mut stored = union.stored();
            stored.sort();
            prop_assert_eq!(stored, expected);
            prop_assert_eq!(union.len(), a.len() + b.len());
            if let Err(why) = union.invariants() {
                return Err(TestCaseError::fail(why));
            }
            Ok(true)
        }
        Err(Error::Full) => {
            prop_assert_eq!((a.stored(), b.stored()), (before_a, before_b));
            Ok(false)
        }
        Err(e) => Err(TestCaseError::fail(format!("{e}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn lock_free_matches_the_model_with_4_bit_fingerprints(seq in ops(4, 40, 120)) {
        run::<LockFreeCuckooFilter>(4, &seq)?;
    }

    #[test]
    fn lock_free_matches_the_model_with_12_bit_fingerprints(seq in ops(12, 60, 120)) {
        run::<LockFreeCuckooFilter>(12, &seq)?;
    }

    /// Every fingerprint width: the lookup is compiled once per entry width for 8 to 19 bits
    /// and generic for the others, so each width is its own code.
    #[test]
    fn lock_free_matches_the_model_at_every_width(
        (bits, seq) in (4u32..=30).prop_flat_map(|bits| (Just(bits), ops(bits, 60, 80)))
    ) {
        run::<LockFreeCuckooFilter>(bits, &seq)?;
    }

    #[test]
    fn locked_matches_the_model_with_4_bit_fingerprints(seq in ops(4, 40, 120)) {
        run::<LockedCuckooFilter>(4, &seq)?;
    }

    #[test]
    fn locked_matches_the_model_with_16_bit_fingerprints(seq in ops(16, 60, 120)) {
        run::<LockedCuckooFilter>(16, &seq)?;
    }

    #[test]
    fn lock_free_merges_hold_both_inputs(left in ops(6, 40, 40), right in ops(6, 40, 40)) {
        merge::<LockFreeCuckooFilter>(6, &left, &right)?;
    }

    #[test]
    fn locked_merges_hold_both_inputs(left in ops(12, 40, 40), right in ops(12, 40, 40)) {
        merge::<LockedCuckooFilter>(12, &left, &right)?;
    }
}

/// The merge sequences above both fit and overflow: inputs of 12 inserts each fit a table of
/// 32 entries, inputs filled until `Full` do not.
#[test]
fn the_merge_sequences_fit_and_overflow() {
    let inserts = |from: u64, count: u64| -> Vec<Op> {
        (from..from + count)
            .map(|k| Op::Insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect()
    };
    for full in [false, true] {
        let count = if full { 200 } else { 12 };
        let (left, right) = (inserts(0, count), inserts(1000, count));
        assert_eq!(
            merge::<LockFreeCuckooFilter>(8, &left, &right).unwrap(),
            !full
        );
        assert_eq!(
            merge::<LockedCuckooFilter>(8, &left, &right).unwrap(),
            !full
        );
    }
}

#[test]
fn merging_cuckoo_filters_of_different_shapes_is_an_error() {
    let base = LockFreeCuckooFilter::with_bits(4, 8).unwrap();
    for other in [
        LockFreeCuckooFilter::with_bits(5, 8).unwrap(),
        LockFreeCuckooFilter::with_bits(4, 9).unwrap(),
    ] {
        assert!(matches!(base.merge(&other), Err(Error::Incompatible(_))));
    }
    let base = LockedCuckooFilter::with_bits(4, 8).unwrap();
    let other = LockedCuckooFilter::with_bits(4, 12).unwrap();
    assert!(matches!(base.merge(&other), Err(Error::Incompatible(_))));
}

/// The sequences above do reach a full table (otherwise the `Full` path would go untested).
#[test]
fn the_model_sequences_reach_full() {
    let inserts: Vec<Op> = (0..200u64)
        .map(|k| Op::Insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
        .collect();
    assert!(run::<LockFreeCuckooFilter>(8, &inserts).unwrap().1 > 0);
    assert!(run::<LockedCuckooFilter>(8, &inserts).unwrap().1 > 0);
}
