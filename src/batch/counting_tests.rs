//! The batch operations of `CountingQf` against one-by-one operations on the same filter,
//! compared block by block (bit for bit), on the workloads of the 3-bit tests (random, skewed and
//! duplicate-heavy hashes at fills from 1% to 95%) and on explicit large counts.

use proptest::prelude::*;

use crate::filter::{Count, Error, Filter, Merge, Remove};
use crate::qf::counting::CountingQf;

use super::tests::{
    auto_merges_what_would_not_fit, batch_lookups_equal_lookups, one_cluster_of, workload,
};
use super::{BatchInsert, BuildMethod};

/// One-by-one inserts; `Err(Full)` if any insert found no room.
fn insert_each(filter: &CountingQf, hashes: &[u64]) -> Result<usize, Error> {
    let mut full = false;
    let mut new = 0;
    for &hash in hashes {
        match filter.insert_hash(hash) {
            Ok(first) => new += first as usize,
            Err(Error::Full) => full = true,
            Err(other) => return Err(other),
        }
    }
    if full {
        Err(Error::Full)
    } else {
        Ok(new)
    }
}

/// Asserts two filters hold the same blocks, spills and counts.
fn same(a: &CountingQf, b: &CountingQf) -> Result<(), TestCaseError> {
    prop_assert!(a.table.raw() == b.table.raw(), "tables differ");
    prop_assert_eq!((a.len(), a.distinct()), (b.len(), b.distinct()));
    a.check_invariants().map_err(TestCaseError::fail)
}

/// Hashes with a few keys repeated `copies` times each (counters of several digits).
fn heavy() -> impl Strategy<Value = (u32, u32, Vec<u64>)> {
    (
        4u32..9,
        2u32..9,
        proptest::collection::vec((any::<u64>(), 1usize..300), 1..12),
        proptest::collection::vec(any::<u64>(), 0..200),
    )
        .prop_map(|(q, r, repeated, single)| {
            let mut hashes = single;
            for (hash, copies) in repeated {
                hashes.extend(std::iter::repeat_n(hash, copies));
            }
            (q, r, hashes)
        })
}

fn build_equals_one_by_one(q: u32, r: u32, hashes: &[u64]) -> Result<(), TestCaseError> {
    let expected = CountingQf::with_bits(q, r).unwrap();
    let one_by_one = insert_each(&expected, hashes);
    for method in BuildMethod::ALL {
        match (CountingQf::bulk_build(q, r, hashes, method), &one_by_one) {
            (Ok(built), Ok(_)) => same(&built, &expected)?,
            (Err(Error::Full), Err(Error::Full)) => {}
            (built, _) => prop_assert!(
                false,
                "{method:?}: {:?} vs {one_by_one:?}",
                built.map(|f| f.len())
            ),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_build_method_equals_one_by_one_inserts((q, r, hashes) in workload()) {
        build_equals_one_by_one(q, r.max(2), &hashes)?;
    }

    #[test]
    fn large_counts_build_as_one_by_one_inserts((q, r, hashes) in heavy()) {
        build_equals_one_by_one(q, r, &hashes)?;
    }

    #[test]
    fn batch_inserts_equal_one_by_one_inserts((q, r, hashes) in workload(), split in 0.0f64..1.0) {
        let r = r.max(2);
        let (first, second) = hashes.split_at((hashes.len() as f64 * split) as usize);
        prop_assume!(CountingQf::bulk_build(q, r, &hashes, BuildMethod::default()).is_ok());
        let expected = CountingQf::with_bits(q, r).unwrap();
        insert_each(&expected, first).unwrap();
        let new = insert_each(&expected, second).unwrap();
        for strategy in [
            BatchInsert::Superclusters,
            BatchInsert::Sweep,
            BatchInsert::Merge(BuildMethod::ParallelMerging),
            BatchInsert::Merge(BuildMethod::SequentialShifting),
            BatchInsert::Merge(BuildMethod::SegmentedLayouts),
            BatchInsert::Auto,
        ] {
            let mut filter = CountingQf::bulk_build(q, r, first, BuildMethod::default()).unwrap();
            prop_assert_eq!(filter.insert_batch_with(second, strategy), Ok(new), "{:?}", strategy);
            same(&filter, &expected)?;
        }
        let filter = CountingQf::bulk_build(q, r, first, BuildMethod::default()).unwrap();
        prop_assert_eq!(filter.insert_batch_concurrent(second), Ok(new), "&self");
        same(&filter, &expected)?;
    }

    #[test]
    fn batch_removals_equal_one_by_one_removals(
        (q, r, hashes) in workload(),
        split in 0.0f64..1.0,
        seed: u64,
    ) {
        let r = r.max(2);
        let Ok(filter) = CountingQf::bulk_build(q, r, &hashes, BuildMethod::default()) else {
            return Ok(());
        };
        // Some stored hashes (repeats included), and some that are likely absent.
        let mut removals = hashes[..(hashes.len() as f64 * split) as usize].to_vec();
        removals.extend((0..50u64).map(|i| crate::hash::remix(seed ^ i)));
        let expected = CountingQf::bulk_build(q, r, &hashes, BuildMethod::default()).unwrap();
        let mut copies = 0;
        for &hash in &removals {
            copies += u64::from(expected.remove_hash(hash).unwrap());
        }
        prop_assert_eq!(filter.remove_batch(&removals), Ok(copies));
        same(&filter, &expected)?;
    }

    #[test]
    fn contains_batch_equals_contains((q, r, hashes) in workload(), seed: u64) {
        let Ok(filter) = CountingQf::bulk_build(q, r.max(2), &hashes, BuildMethod::default()) else {
            return Ok(());
        };
        batch_lookups_equal_lookups(
            &hashes,
            seed,
            |queries, found, order| filter.contains_batch_with(queries, found, order),
            |query| filter.contains_hash(query),
        )?;
    }

    #[test]
    fn merge_sums_the_counts((q, r, hashes) in workload(), split in 0.0f64..1.0) {
        let r = r.max(2);
        let (first, second) = hashes.split_at((hashes.len() as f64 * split) as usize);
        let a = CountingQf::bulk_build(q, r, first, BuildMethod::default());
        let b = CountingQf::bulk_build(q, r, second, BuildMethod::default());
        let (Ok(a), Ok(b)) = (a, b) else { return Ok(()) };
        let merged = a.merge(&b).unwrap();
        // The same quotient while the union fits, so the same table as inserting everything.
        if merged.quotient_bits() == q {
            let expected = CountingQf::with_bits(q, r).unwrap();
            insert_each(&expected, &hashes).unwrap();
            same(&merged, &expected)?;
        }
        merged.check_invariants().map_err(TestCaseError::fail)?;
        for &hash in &hashes {
            prop_assert_eq!(merged.count_hash(hash), a.count_hash(hash) + b.count_hash(hash));
        }
        prop_assert_eq!(merged.len(), hashes.len());
    }
}

#[test]
fn large_builds_take_the_parallel_paths() {
    // Above the parallel thresholds of `par`, at 90% fill, a tenth of the keys repeated.
    let q = 17;
    let mut hashes: Vec<u64> = (0..((1u64 << q) * 8 / 10))
        .map(crate::hash::remix)
        .collect();
    hashes.extend((0..(1u64 << q) / 10).map(|i| crate::hash::remix(i * 7)));
    let expected = CountingQf::with_bits(q, 7).unwrap();
    insert_each(&expected, &hashes).unwrap();
    for method in BuildMethod::ALL {
        let built = CountingQf::bulk_build(q, 7, &hashes, method).unwrap();
        assert!(built.table.raw() == expected.table.raw(), "{method:?}");
        assert_eq!(
            (built.len(), built.distinct()),
            (expected.len(), expected.distinct())
        );
    }
}

/// The union takes the larger quotient of its inputs (of one fingerprint length) whichever
/// comes first, though the keys would fit the smaller one, and holds the copies of both.
#[test]
fn merges_take_the_larger_quotient() {
    let hashes: Vec<u64> = (0..50u64).map(crate::hash::remix).collect();
    let small = CountingQf::bulk_build(6, 10, &hashes[..25], BuildMethod::default()).unwrap();
    let large = CountingQf::bulk_build(8, 8, &hashes[25..], BuildMethod::default()).unwrap();
    for (a, b) in [(&small, &large), (&large, &small)] {
        let union = a.merge(b).unwrap();
        assert_eq!((union.quotient_bits(), union.remainder_bits()), (8, 8));
        union.check_invariants().unwrap();
        for &hash in &hashes {
            assert_eq!(
                union.count_hash(hash),
                a.count_hash(hash) + b.count_hash(hash)
            );
        }
        assert_eq!(union.len(), hashes.len());
    }
}

#[test]
fn a_full_build_is_an_error_and_different_lengths_do_not_merge() {
    let hashes: Vec<u64> = (0..200u64).map(crate::hash::remix).collect();
    assert!(matches!(
        CountingQf::bulk_build(6, 4, &hashes, BuildMethod::default()),
        Err(Error::Full)
    ));
    let (a, b) = (
        CountingQf::with_bits(6, 4).unwrap(),
        CountingQf::with_bits(6, 5).unwrap(),
    );
    assert!(matches!(a.merge(&b), Err(Error::Incompatible(_))));
}

#[test]
#[cfg(feature = "parallel")]
fn large_batch_writes_split_into_concurrent_ranges_as_one_by_one_writes() {
    // A pool of 4 threads (whatever the machine has) splits batches this large into 4 ranges
    // that update the filter at once: the tables must end as one-by-one writes leave them.
    let pool = four_threads();
    let q = 16;
    let stored: Vec<u64> = (0..(1u64 << q) / 2).map(crate::hash::remix).collect();
    // New keys, a tenth of them twice, and stored keys again (their counts grow).
    let mut batch: Vec<u64> = (0..(1u64 << q) / 4)
        .map(|i| crate::hash::remix(i + (1 << 40)))
        .collect();
    batch.extend(batch[..batch.len() / 10].to_vec());
    batch.extend(&stored[..1000]);
    let expected = CountingQf::with_bits(q, 9).unwrap();
    insert_each(&expected, &stored).unwrap();
    let new = insert_each(&expected, &batch).unwrap();
    let mut filter = CountingQf::bulk_build(q, 9, &stored, BuildMethod::default()).unwrap();
    let inserted = pool.install(|| filter.insert_batch_with(&batch, BatchInsert::Superclusters));
    assert_eq!(inserted, Ok(new));
    assert!(filter.table.raw() == expected.table.raw(), "inserts");
    assert_eq!(filter.check_invariants(), Ok(()));
    // Remove the batch again, plus keys never stored.
    let mut removals = batch.clone();
    removals.extend((0..500u64).map(|i| crate::hash::remix(i + (1 << 50))));
    let mut copies = 0;
    for &hash in &removals {
        copies += u64::from(expected.remove_hash(hash).unwrap());
    }
    assert_eq!(pool.install(|| filter.remove_batch(&removals)), Ok(copies));
    assert!(filter.table.raw() == expected.table.raw(), "removals");
    assert_eq!(
        (filter.len(), filter.distinct()),
        (expected.len(), expected.distinct())
    );
    assert_eq!(filter.check_invariants(), Ok(()));
}

/// Two threads insert overlapping batches through `&self` at once (each split into ranges by
/// a pool of 4): the counts add up as one-by-one inserts of both batches, and of the
/// fingerprints both batches hold and the filter did not, exactly one batch counts each as new.
#[test]
#[cfg(feature = "parallel")]
fn racing_concurrent_batch_inserts_count_each_new_fingerprint_once() {
    for round in 0..20 {
        race_overlapping_batch_inserts(round);
    }
}

/// One race of [`racing_concurrent_batch_inserts_count_each_new_fingerprint_once`], on keys
/// drawn for `round`.
#[cfg(feature = "parallel")]
fn race_overlapping_batch_inserts(round: u64) {
    let pool = four_threads();
    let q = 14;
    let keys: Vec<u64> = (0..(1u64 << q) / 2)
        .map(|i| crate::hash::remix(i ^ (round << 32)))
        .collect();
    let (stored, fresh) = keys.split_at(keys.len() / 4);
    let mut a: Vec<u64> = fresh[..fresh.len() * 2 / 3].to_vec();
    let mut b: Vec<u64> = fresh[fresh.len() / 3..].to_vec();
    a.extend(&stored[..1000]);
    b.extend(&stored[500..1500]);
    let expected = CountingQf::with_bits(q, 9).unwrap();
    insert_each(&expected, stored).unwrap();
    // Not `fresh.len()`: a few keys share a fingerprint with another.
    let new = insert_each(&expected, &a).unwrap() + insert_each(&expected, &b).unwrap();
    let filter = CountingQf::bulk_build(q, 9, stored, BuildMethod::default()).unwrap();
    let (new_a, new_b) = std::thread::scope(|s| {
        let filter = &filter;
        let (a, b) = (&a, &b);
        let first = s.spawn(|| pool.install(|| filter.insert_batch_concurrent(a)));
        let second = s.spawn(|| pool.install(|| filter.insert_batch_concurrent(b)));
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_eq!(new_a.unwrap() + new_b.unwrap(), new);
    assert!(filter.table.raw() == expected.table.raw());
    assert_eq!(filter.check_invariants(), Ok(()));
}

#[test]
#[cfg(feature = "parallel")]
fn a_batch_too_large_for_the_table_is_full_in_concurrent_ranges_and_keeps_what_fitted() {
    let pool = four_threads();
    let stored: Vec<u64> = (0..300u64).map(crate::hash::remix).collect();
    let mut filter = CountingQf::bulk_build(10, 6, &stored, BuildMethod::default()).unwrap();
    // Three times the table's 1,024 slots, so every range of the batch runs into `Full`.
    let batch: Vec<u64> = (0..3000u64)
        .map(|i| crate::hash::remix(i + (1 << 40)))
        .collect();
    let result = pool.install(|| filter.insert_batch_with(&batch, BatchInsert::Superclusters));
    assert_eq!(result, Err(Error::Full));
    assert_eq!(filter.check_invariants(), Ok(()));
    assert!(
        filter.distinct() > stored.len(),
        "the ranges stored what fitted"
    );
    assert!(stored.iter().all(|&hash| filter.contains_hash(hash)));
    let inserted = batch
        .iter()
        .filter(|&&hash| filter.contains_hash(hash))
        .count();
    assert!(inserted >= filter.distinct() - stored.len());
}

/// A pool of 4 threads, whatever the machine has, so the batch writes split into 4 ranges.
#[cfg(feature = "parallel")]
fn four_threads() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
}

/// `Auto` merges a batch crowded into long clusters of its own (the ranges would take time
/// quadratic in their length), and the merge stores what one-by-one inserts store; a batch as
/// large spread over the table takes the ranges.
#[test]
fn auto_merges_a_batch_crowded_into_long_clusters() {
    let (q, r) = (16, 12);
    // One cluster of 16,384 slots: about 2^27 slots walked.
    let crowded = one_cluster_of(q, r, 0, 16_384);
    let spread: Vec<u64> = (0..16_384u64).map(crate::hash::remix).collect();
    let empty = CountingQf::with_bits(q, r).unwrap();
    let auto = |hashes: &[u64]| empty.auto_strategy(&super::keys::sorted_keys(hashes, q + r));
    assert!(matches!(auto(&crowded), BatchInsert::Merge(_)));
    assert_eq!(auto(&spread), BatchInsert::Superclusters);
    let expected = CountingQf::with_bits(q, r).unwrap();
    insert_each(&expected, &crowded).unwrap();
    let mut filter = CountingQf::with_bits(q, r).unwrap();
    assert_eq!(filter.insert_batch(&crowded), Ok(16_384));
    assert!(filter.table.raw() == expected.table.raw());
    filter.check_invariants().unwrap();
    let make = || CountingQf::with_bits(q, r).unwrap();
    let (insert, len) = (CountingQf::insert_batch_with, |f: &CountingQf| f.len());
    auto_merges_what_would_not_fit(make, insert, len, 16_384, (q, r));
}

/// A merge whose union does not fit, of filters whose remainders are already at 2 bits (the
/// fewest the counter encoding takes), cannot move a bit to the quotient: it is `Full`, as the
/// merge docs say. 200 distinct 8-bit fingerprints take more than the 128 slots of a table of
/// `2^6` canonical slots; each half fits.
#[test]
fn a_merge_that_cannot_double_past_two_bit_remainders_is_full() {
    let fingerprints: Vec<u64> = (0..200u64).map(|f| f << 56).collect();
    let (low, high) = fingerprints.split_at(100);
    let a = CountingQf::bulk_build(6, 2, low, BuildMethod::default()).unwrap();
    let b = CountingQf::bulk_build(6, 2, high, BuildMethod::default()).unwrap();
    assert!(matches!(a.merge(&b), Err(Error::Full)));
}
