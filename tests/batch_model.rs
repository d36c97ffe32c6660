//! The batch operations of paper 004 §IV (bulk build, batch insert and remove, batch lookups)
//! against the exact model, through the public API of `SequentialQf` and `LocallyLockedQf`, and
//! `LocallyLockedQf::contains_batch` while other threads insert (no false negatives).
//! Bit-for-bit comparisons with one-by-one inserts are unit tests in `src/batch/tests.rs`.

mod common;

use std::collections::BTreeSet;

use common::{hash_of, Model};
use conqf::{BatchInsert, BuildMethod, Error, Filter, Fingerprint, LocallyLockedQf, SequentialQf};
use proptest::prelude::*;

const Q: u32 = 6;
const R: u32 = 5;

/// Batches of hashes from a small fingerprint space (the first and last few canonical slots, few
/// remainders), so batches repeat fingerprints, runs collide and clusters reach the tail.
fn batches() -> impl Strategy<Value = Vec<(bool, Vec<u64>)>> {
    let slots = 1u64 << Q;
    let hash = (
        prop_oneof![0..12u64, (slots - 6)..slots],
        0..8u64,
        any::<u64>(),
    )
        .prop_map(|(q, r, noise)| hash_of(q, r, Q, R, noise));
    let batch = (any::<bool>(), proptest::collection::vec(hash, 0..40));
    proptest::collection::vec(batch, 1..8)
}

fn strategies() -> impl Strategy<Value = BatchInsert> {
    prop_oneof![
        Just(BatchInsert::Auto),
        Just(BatchInsert::Superclusters),
        Just(BatchInsert::Sweep),
        proptest::sample::select(BuildMethod::ALL.to_vec()).prop_map(BatchInsert::Merge),
    ]
}

fn set_of(hashes: &[u64]) -> BTreeSet<Fingerprint> {
    hashes
        .iter()
        .map(|&h| Model::fingerprint(h, Q, R))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn batches_match_the_model(steps in batches(), strategy in strategies()) {
        let mut sequential = SequentialQf::with_bits(Q, R).unwrap();
        let mut locked = LocallyLockedQf::with_bits(Q, R).unwrap();
        let mut model = Model::default();
        for (insert, hashes) in &steps {
            let batch = set_of(hashes);
            if *insert {
                let new = batch.difference(&model.set).count();
                match sequential.insert_batch_with(hashes, strategy) {
                    Ok(stored) => {
                        prop_assert_eq!(stored, new);
                        prop_assert_eq!(locked.insert_batch_with(hashes, strategy), Ok(new));
                        model.set.extend(batch);
                    }
                    // The sweep and supercluster rounds (and `Auto`, which may pick the sweep)
                    // may keep part of the batch: resynchronise the model and the other filter
                    // with what is stored, which must include the old set.
                    Err(Error::Full) => {
                        let stored: BTreeSet<Fingerprint> = sequential.fingerprints().collect();
                        prop_assert!(stored.is_superset(&model.set));
                        prop_assert!(stored.is_subset(&model.set.union(&batch).copied().collect()));
                        if matches!(strategy, BatchInsert::Merge(_)) {
                            prop_assert_eq!(&stored, &model.set, "a merge-insert leaves the filter unchanged");
                        }
                        model.set = stored;
                        let all: Vec<u64> = model.set.iter().map(|f| hash_of(f.quotient, f.remainder, Q, R, 0)).collect();
                        locked = LocallyLockedQf::bulk_build(Q, R, &all, BuildMethod::default()).unwrap();
                    }
                    Err(other) => prop_assert!(false, "{other}"),
                }
            } else {
                let gone = batch.intersection(&model.set).count();
                prop_assert_eq!(sequential.remove_batch(hashes), gone);
                prop_assert_eq!(locked.remove_batch(hashes), gone);
                for f in &batch {
                    model.set.remove(f);
                }
            }
            sequential.check_invariants().map_err(TestCaseError::fail)?;
            locked.check_invariants().map_err(TestCaseError::fail)?;
            let expected: Vec<Fingerprint> = model.set.iter().copied().collect();
            prop_assert_eq!(sequential.fingerprints().collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(locked.fingerprints().collect::<Vec<_>>(), expected);
            prop_assert_eq!(Filter::len(&locked), model.set.len());
        }
        // Batch lookups equal the model on every fingerprint of the space used.
        let queries: Vec<u64> = (0..1u64 << Q).flat_map(|q| (0..8).map(move |r| hash_of(q, r, Q, R, 7))).collect();
        let mut found = vec![false; queries.len()];
        sequential.contains_batch(&queries, &mut found).unwrap();
        let mut found_locked = vec![false; queries.len()];
        locked.contains_batch(&queries, &mut found_locked).unwrap();
        for (i, &query) in queries.iter().enumerate() {
            let expected = model.set.contains(&Model::fingerprint(query, Q, R));
            prop_assert_eq!(found[i], expected);
            prop_assert_eq!(found_locked[i], expected);
        }
    }

    #[test]
    fn bulk_build_matches_the_model(
        hashes in proptest::collection::vec(any::<u64>(), 0..600),
        method in proptest::sample::select(BuildMethod::ALL.to_vec()),
    ) {
        // 1024 slots: at most 59% full, so it always fits.
        let (q, r) = (Q + 4, R);
        let filter = SequentialQf::bulk_build(q, r, &hashes, method).unwrap();
        filter.check_invariants().map_err(TestCaseError::fail)?;
        let expected: Vec<Fingerprint> = hashes
            .iter()
            .map(|&h| Fingerprint::split(h, q, r))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        prop_assert_eq!(filter.len(), expected.len());
        prop_assert_eq!(filter.fingerprints().collect::<Vec<_>>(), expected);
        prop_assert!(hashes.iter().all(|&h| filter.contains_hash(h)));
    }
}

#[test]
fn bad_parameters_and_full_tables_are_errors() {
    assert!(matches!(
        SequentialQf::bulk_build(0, 8, &[1], BuildMethod::default()),
        Err(Error::InvalidParameters(_))
    ));
    // 2^4 canonical slots and a short overflow tail cannot hold 64 distinct fingerprints.
    let hashes: Vec<u64> = (0..64u64)
        .map(|i| hash_of(i % 16, i / 16, 4, 4, 0))
        .collect();
    for method in BuildMethod::ALL {
        assert_eq!(
            SequentialQf::bulk_build(4, 4, &hashes, method).map(|f| f.len()),
            Err(Error::Full)
        );
    }
    let mut filter = SequentialQf::bulk_build(4, 4, &hashes[..8], BuildMethod::default()).unwrap();
    let merge = BatchInsert::Merge(BuildMethod::ParallelMerging);
    assert_eq!(filter.insert_batch_with(&hashes, merge), Err(Error::Full));
    assert_eq!(filter.len(), 8, "a failed merge-insert changes nothing");
    assert!(hashes[..8].iter().all(|&h| filter.contains_hash(h)));
    assert_eq!(filter.insert_batch(&hashes[8..10]), Ok(2), "still usable");
}

/// Batch lookups of keys inserted before never miss while other threads insert more.
#[test]
fn contains_batch_has_no_false_negatives_under_concurrent_inserts() {
    let filter = LocallyLockedQf::with_bits(14, 10).unwrap();
    let before: Vec<u64> = (0..6000u64).map(|k| conqf::hash_key(&k)).collect();
    for &h in &before {
        filter.insert_hash(h).unwrap();
    }
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let filter = &filter;
            s.spawn(move || {
                for k in 0..4000u64 {
                    filter
                        .insert_hash(conqf::hash_key(&(1_000_000 * (t + 1) + k)))
                        .unwrap();
                }
            });
        }
        let mut found = vec![false; before.len()];
        for _ in 0..20 {
            filter.contains_batch(&before, &mut found).unwrap();
            assert!(found.iter().all(|&f| f));
        }
    });
    filter.check_invariants().unwrap();
}
