//! Every batch algorithm against one-by-one operations on the same table, compared group by
//! group (bit for bit), on random, skewed and duplicate-heavy hashes at fills from 1% to 95%.

use proptest::prelude::*;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeSet;

use crate::filter::Error;
use crate::hash::Fingerprint;
use crate::qf::sequential::SequentialQf;
use crate::sync::Ordering;

use super::layout::tests::serial_positions;
use super::{BatchInsert, BatchLookup, BuildMethod, Dedupe};

/// The raw groups of a filter's table.
fn raw(filter: &SequentialQf) -> Vec<u64> {
    let slots = &filter.table.slots;
    let groups = slots.layout().groups_for(slots.len());
    // Relaxed: single-threaded test.
    (0..groups)
        .map(|g| slots.load_group(g, Ordering::Relaxed))
        .collect()
}

/// One-by-one inserts into `filter`; `Err(Full)` if any insert found no room.
fn insert_each(filter: &mut SequentialQf, hashes: &[u64]) -> Result<usize, Error> {
    let mut full = false;
    let mut stored = 0;
    for &hash in hashes {
        match filter.insert_hash(hash) {
            Ok(new) => stored += new as usize,
            Err(Error::Full) => full = true,
            Err(other) => return Err(other),
        }
    }
    if full {
        Err(Error::Full)
    } else {
        Ok(stored)
    }
}

/// Inserts `batch` into a copy of `filter` by the sweep in chunks of `chunk` keys, and one by one
/// in the same (sorted) order into another copy: `Ok` exactly when every key fits, then the same
/// table and count; either way never past the load cap, and the invariants (`len` included) hold.
pub(super) fn sweep_equals_one_by_one(
    filter: &SequentialQf,
    batch: &[u64],
    chunk: usize,
) -> Result<(), TestCaseError> {
    let (q, r) = (filter.table.quotient_bits, filter.table.remainder_bits);
    let keys = super::keys::sorted_keys(batch, q + r);
    let mut expected = filter.clone_table();
    let mut one_by_one = Ok(());
    for &key in &keys {
        if expected.insert_hash(key << (64 - q - r)).is_err() {
            one_by_one = Err(Error::Full);
        }
    }
    let mut swept = filter.clone_table();
    let result = super::insertion::insert_in_chunks(&mut swept.table, &keys, &mut swept.len, chunk);
    prop_assert_eq!(&result, &one_by_one);
    if result.is_ok() {
        prop_assert_eq!(swept.len, expected.len);
        prop_assert_eq!(raw(&swept), raw(&expected));
    }
    let cap = swept.table.load_cap();
    prop_assert!(
        swept.len <= cap,
        "{} stored past the cap of {}",
        swept.len,
        cap
    );
    swept.check_invariants().map_err(TestCaseError::fail)
}

/// How the test hashes are drawn.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Uniform over all 64-bit hashes.
    Random,
    /// Canonical slots crowded into the first eighth of the table: long clusters, overflow.
    Skewed,
    /// Drawn from a pool of a tenth as many distinct hashes: many repeats.
    Duplicates,
}

/// `(q, r, hashes)`: a table of `2^q` slots and hashes for a fill from 1% to 95% of it, with
/// fingerprints of 6 to 21 bits or (`wide`) of 26 to 41, so the bulk builds' 32-bit and 64-bit
/// keys both come up.
pub(super) fn workload() -> impl Strategy<Value = (u32, u32, Vec<u64>)> {
    let params = (
        4u32..10,
        2u32..12,
        any::<bool>(),
        1u32..=95,
        any::<u64>(),
        0..3u8,
    );
    params.prop_map(|(q, r, wide, fill, seed, shape)| {
        let r = if wide { r + 20 } else { r };
        let shape = [Shape::Random, Shape::Skewed, Shape::Duplicates][shape as usize];
        let count = ((1usize << q) * fill as usize).div_ceil(100);
        let mut state = seed;
        let mut next = move || {
            state = crate::hash::remix(state);
            state
        };
        let pool: Vec<u64> = (0..count.div_ceil(10)).map(|_| next()).collect();
        let hashes = (0..count)
            .map(|_| match shape {
                Shape::Random => next(),
                Shape::Skewed => next() >> 3,
                Shape::Duplicates => pool[(next() % pool.len() as u64) as usize],
            })
            .collect();
        (q, r, hashes)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_build_method_equals_one_by_one_inserts((q, r, hashes) in workload()) {
        let mut expected = SequentialQf::with_bits(q, r).unwrap();
        let one_by_one = insert_each(&mut expected, &hashes);
        for method in BuildMethod::ALL {
            match (SequentialQf::bulk_build(q, r, &hashes, method), &one_by_one) {
                (Ok(built), Ok(stored)) => {
                    prop_assert_eq!(built.len(), *stored);
                    prop_assert_eq!(raw(&built), raw(&expected), "{:?}", method);
                    built.check_invariants().map_err(TestCaseError::fail)?;
                }
                (Err(Error::Full), Err(Error::Full)) => {}
                (built, _) => prop_assert!(false, "{method:?}: {:?} vs {one_by_one:?}", built.map(|f| f.len())),
            }
        }
    }

    #[test]
    fn batch_inserts_equal_one_by_one_inserts((q, r, hashes) in workload(), split in 0.0f64..1.0) {
        let (first, second) = hashes.split_at((hashes.len() as f64 * split) as usize);
        let mut expected = SequentialQf::with_bits(q, r).unwrap();
        prop_assume!(insert_each(&mut expected, first).is_ok());
        let start = expected.clone_table();
        let one_by_one = insert_each(&mut expected, second);
        for strategy in [
            BatchInsert::Superclusters,
            BatchInsert::Sweep,
            BatchInsert::Merge(BuildMethod::ParallelMerging),
            BatchInsert::Merge(BuildMethod::SequentialShifting),
            BatchInsert::Merge(BuildMethod::SegmentedLayouts),
            BatchInsert::Auto,
        ] {
            let mut filter = start.clone_table();
            match (filter.insert_batch_with(second, strategy), &one_by_one) {
                (Ok(stored), Ok(expected_stored)) => {
                    prop_assert_eq!(stored, *expected_stored);
                    prop_assert_eq!(raw(&filter), raw(&expected), "{:?}", strategy);
                }
                (Err(Error::Full), Err(Error::Full)) => {}
                (result, _) => prop_assert!(false, "{strategy:?}: {result:?} vs {one_by_one:?}"),
            }
            filter.check_invariants().map_err(TestCaseError::fail)?;
        }
    }

    /// The sweeps of a batch insert cut into chunks of 1 to 24 keys (so that inserts reach the
    /// fences and wait, and neighbouring stretches write shared groups from rayon's threads),
    /// bit for bit against one-by-one inserts, and the load cap and the last slot respected
    /// (where the batch may not fit, one thread inserts it in order, as one by one).
    #[test]
    fn batch_inserts_in_any_chunks_equal_one_by_one_inserts(
        (q, r, hashes) in workload(),
        split in 0.0f64..1.0,
        chunk in 1usize..24,
    ) {
        let (first, second) = hashes.split_at((hashes.len() as f64 * split) as usize);
        let mut filter = SequentialQf::with_bits(q, r).unwrap();
        prop_assume!(insert_each(&mut filter, first).is_ok());
        sweep_equals_one_by_one(&filter, second, chunk)?;
    }

    #[test]
    fn batch_removes_equal_one_by_one_removes((q, r, hashes) in workload(), seed: u64) {
        let mut expected = SequentialQf::with_bits(q, r).unwrap();
        prop_assume!(insert_each(&mut expected, &hashes).is_ok());
        let mut filter = expected.clone_table();
        // Remove every other stored hash, plus hashes never inserted.
        let mut gone: Vec<u64> = hashes.iter().step_by(2).copied().collect();
        gone.extend((0..hashes.len() as u64 / 4).map(|i| crate::hash::remix(seed ^ i)));
        let removed_each = gone.iter().filter(|&&h| expected.remove_hash(h).unwrap()).count();
        prop_assert_eq!(filter.remove_batch(&gone), removed_each);
        prop_assert_eq!(raw(&filter), raw(&expected));
        filter.check_invariants().map_err(TestCaseError::fail)?;
    }

    /// The sweeps of a batch removal cut into chunks of 1 to 24 keys (so that clusters fall
    /// across the cuts, and neighbouring chunks write shared groups from rayon's threads), on
    /// sets and on multisets (a build without dedupe: one copy per named key goes), with every
    /// cluster removed from one key at a time, every one rewritten, or each as the batch picks.
    #[test]
    fn batch_removes_in_any_chunks_equal_one_by_one_removes(
        (q, r, hashes) in workload(),
        seed: u64,
        chunk in 1usize..24,
        copies: bool,
        one_by_one_slots in prop_oneof![Just(0usize), Just(8), Just(1 << 20)],
    ) {
        let dedupe = if copies { Dedupe::Off } else { Dedupe::On };
        let built = SequentialQf::bulk_build_with(q, r, &hashes, BuildMethod::default(), dedupe);
        let Ok(mut expected) = built else {
            return Err(TestCaseError::reject("the hashes do not fit"));
        };
        let mut filter = expected.clone_table();
        let mut gone: Vec<u64> = hashes.iter().step_by(3).copied().collect();
        gone.extend((0..hashes.len() as u64 / 4).map(|i| crate::hash::remix(seed ^ i)));
        let keys = super::keys::sorted_keys(&gone, q + r);
        // One removal per distinct fingerprint, as the batch names each once.
        let removed_each = keys
            .iter()
            .filter(|&&key| expected.remove_hash(key << (64 - q - r)).unwrap())
            .count();
        let removed =
            super::removal::remove_in_chunks(&mut filter.table, &keys, chunk, one_by_one_slots);
        prop_assert_eq!(removed, removed_each);
        prop_assert_eq!(raw(&filter), raw(&expected));
        filter.len -= removed;
        filter.check_invariants().map_err(TestCaseError::fail)?;
    }

    #[test]
    fn concurrent_batch_writes_equal_one_by_one_writes((q, r, hashes) in workload(), seed: u64) {
        // One thread: the same table as the one-by-one operations, up to the first `Full`.
        let mut expected = SequentialQf::with_bits(q, r).unwrap();
        let filter = crate::LocallyLockedQf::with_bits(q, r).unwrap();
        let mut stored = 0;
        let mut full_at = None;
        for (i, &hash) in hashes.iter().enumerate() {
            match expected.insert_hash(hash) {
                Ok(new) => stored += usize::from(new),
                Err(Error::Full) => {
                    full_at = Some(i);
                    break;
                }
                Err(other) => return Err(TestCaseError::fail(other.to_string())),
            }
        }
        let batch = filter.insert_batch_concurrent(&hashes);
        match full_at {
            None => prop_assert_eq!(batch, Ok(stored)),
            Some(_) => prop_assert_eq!(batch, Err(Error::Full)),
        }
        let expected = crate::LocallyLockedQf::from_sequential(expected);
        let same = |a: &crate::LocallyLockedQf, b: &crate::LocallyLockedQf| {
            a.fingerprints().collect::<Vec<_>>() == b.fingerprints().collect::<Vec<_>>()
        };
        prop_assert!(same(&filter, &expected));
        let mut gone: Vec<u64> = hashes.iter().step_by(2).copied().collect();
        gone.extend((0..hashes.len() as u64 / 4).map(|i| crate::hash::remix(seed ^ i)));
        let removed_each = gone
            .iter()
            .filter(|&&h| crate::Remove::remove_hash(&expected, h).unwrap())
            .count();
        prop_assert_eq!(filter.remove_batch_concurrent(&gone), Ok(removed_each));
        prop_assert!(same(&filter, &expected));
        filter.check_invariants().map_err(TestCaseError::fail)?;
    }

    #[test]
    fn contains_batch_equals_contains((q, r, hashes) in workload(), seed: u64) {
        let mut filter = SequentialQf::with_bits(q, r).unwrap();
        let _ = insert_each(&mut filter, &hashes);
        batch_lookups_equal_lookups(
            &hashes,
            seed,
            |queries, found, order| filter.contains_batch_with(queries, found, order),
            |query| filter.contains_hash(query),
        )?;
    }
}

/// Asks `batch` (a filter's `contains_batch_with`) about `stored` and 200 hashes drawn from
/// `seed`, in every [`BatchLookup`] order, and compares every answer with `contains`; a batch
/// with one answer too few must be refused.
pub(super) fn batch_lookups_equal_lookups(
    stored: &[u64],
    seed: u64,
    batch: impl Fn(&[u64], &mut [bool], BatchLookup) -> Result<(), Error>,
    contains: impl Fn(u64) -> bool,
) -> Result<(), TestCaseError> {
    let mut queries = stored.to_vec();
    queries.extend((0..200u64).map(|i| crate::hash::remix(seed ^ i)));
    for order in [
        BatchLookup::Auto,
        BatchLookup::Prefetch,
        BatchLookup::Sorted,
    ] {
        let mut found = vec![false; queries.len()];
        batch(&queries, &mut found, order).unwrap();
        for (&query, &answer) in queries.iter().zip(&found) {
            prop_assert_eq!(answer, contains(query), "{:?}", order);
        }
    }
    let mut short = vec![false; queries.len() - 1];
    prop_assert!(matches!(
        batch(&queries, &mut short, BatchLookup::Auto),
        Err(Error::InvalidParameters(_))
    ));
    Ok(())
}

/// The raw slots of the table a build without dedupe must give for `hashes`, computed apart
/// from the build: the sorted fingerprints (copies included) placed by the serial definition
/// ([`serial_positions`]); `None` if the last one lands on the last slot.
fn multiset_slots(q: u32, r: u32, hashes: &[u64]) -> Option<Vec<u64>> {
    use crate::qf::slot::{Slot, OCCUPIED};
    let mut fingerprints: Vec<Fingerprint> = hashes
        .iter()
        .map(|&h| Fingerprint::split(h, q, r))
        .collect();
    fingerprints.sort_unstable();
    let quotients: Vec<usize> = fingerprints.iter().map(|f| f.quotient as usize).collect();
    let positions = serial_positions(&quotients);
    let table_slots = SequentialQf::with_bits(q, r).unwrap().table.slots.len();
    if positions
        .last()
        .is_some_and(|&last| last + 1 >= table_slots)
    {
        return None;
    }
    let mut slots = vec![0u64; table_slots];
    for (i, (&quotient, &position)) in quotients.iter().zip(&positions).enumerate() {
        let continuation = i > 0 && quotients[i - 1] == quotient;
        slots[quotient] |= OCCUPIED;
        let element = Slot::element(
            fingerprints[i].remainder,
            continuation,
            position != quotient,
        );
        slots[position] |= element.raw();
    }
    Some(slots)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A build without dedupe stores every copy: all three methods give the table of the serial
    /// placement of the sorted multiset, and the filter then behaves as a multiset.
    #[test]
    fn builds_without_dedupe_store_every_copy((q, r, hashes) in workload(), seed: u64) {
        let expected = multiset_slots(q, r, &hashes);
        for method in BuildMethod::ALL {
            let built = SequentialQf::bulk_build_with(q, r, &hashes, method, Dedupe::Off);
            let (mut filter, slots) = match (built, &expected) {
                (Ok(filter), Some(slots)) => (filter, slots),
                (Err(Error::Full), None) => continue,
                (built, _) => {
                    return Err(TestCaseError::fail(format!(
                        "{method:?}: {:?}, expected {}",
                        built.map(|f| f.len()),
                        if expected.is_some() { "a table" } else { "Full" }
                    )))
                }
            };
            prop_assert_eq!(filter.len(), hashes.len());
            for (index, &slot) in slots.iter().enumerate() {
                // Relaxed: single-threaded test.
                let got = filter.table.slots.get(index, Ordering::Relaxed);
                prop_assert_eq!(got, slot, "{:?}: slot {}", method, index);
            }
            filter.check_invariants().map_err(TestCaseError::fail)?;
            // Remove every hash once, in an order drawn from `seed`: each removal succeeds, and
            // a fingerprint stays visible while a copy of it is left.
            let mut order = hashes.clone();
            order.shuffle(&mut StdRng::seed_from_u64(seed));
            let (gone, kept) = order.split_at(order.len() / 2);
            for &hash in gone {
                prop_assert!(filter.remove_hash(hash).unwrap());
            }
            for &hash in kept {
                prop_assert!(filter.contains_hash(hash), "{:?}: a kept copy is missing", method);
            }
            filter.check_invariants().map_err(TestCaseError::fail)?;
            for &hash in kept {
                prop_assert!(filter.remove_hash(hash).unwrap());
            }
            prop_assert_eq!(filter.len(), 0);
            prop_assert!(raw(&filter).iter().all(|&group| group == 0));
        }
    }

    /// Inserts into a filter holding copies count only the fingerprints they add and keep the
    /// copies, whatever the strategy (a merge-insert once stored each fingerprint once).
    #[test]
    fn batch_inserts_into_a_multiset_count_what_they_add(
        (q, r, hashes) in workload(),
        split in 0.0f64..1.0,
    ) {
        let (first, second) = hashes.split_at((hashes.len() as f64 * split) as usize);
        let method = BuildMethod::default();
        let Ok(start) = SequentialQf::bulk_build_with(q, r, first, method, Dedupe::Off) else {
            return Ok(());
        };
        let fingerprints = |hashes: &[u64]| -> BTreeSet<Fingerprint> {
            hashes.iter().map(|&h| Fingerprint::split(h, q, r)).collect()
        };
        let distinct = fingerprints(first);
        let added: Vec<Fingerprint> = fingerprints(second).difference(&distinct).copied().collect();
        for strategy in [BatchInsert::Superclusters, BatchInsert::Sweep, BatchInsert::Merge(method)] {
            let mut filter = SequentialQf::bulk_build_with(q, r, first, method, Dedupe::Off).unwrap();
            match filter.insert_batch_with(second, strategy) {
                Ok(stored) => {
                    prop_assert!(hashes.iter().all(|&h| filter.contains_hash(h)));
                    prop_assert_eq!(stored, added.len(), "{:?}", strategy);
                    prop_assert_eq!(filter.len(), start.len() + added.len(), "{:?}", strategy);
                }
                Err(Error::Full) => prop_assert!(first.iter().all(|&h| filter.contains_hash(h))),
                Err(other) => return Err(TestCaseError::fail(format!("{strategy:?}: {other:?}"))),
            }
            filter.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn growing_a_multiset_keeps_its_copies() {
    let hashes: Vec<u64> = (0..300u64)
        .map(|k| crate::hash::hash_key(&(k % 100)))
        .collect();
    let mut filter =
        SequentialQf::bulk_build_with(9, 12, &hashes, BuildMethod::default(), Dedupe::Off).unwrap();
    filter.grow().unwrap();
    assert_eq!(filter.len(), 300);
    filter.check_invariants().unwrap();
    for &hash in &hashes {
        assert!(filter.contains_hash(hash));
        assert!(filter.remove_hash(hash).unwrap());
    }
    assert_eq!(filter.len(), 0);
}

#[test]
fn large_batches_take_the_parallel_paths() {
    // Above the parallel thresholds of `par`, at 90% fill.
    let q = 17;
    let hashes: Vec<u64> = (0..((1u64 << q) * 9 / 10))
        .map(crate::hash::remix)
        .collect();
    // Fingerprints of 24 bits (32-bit keys) and of 40 bits (64-bit keys).
    for r in [7, 23] {
        let mut expected = SequentialQf::with_bits(q, r).unwrap();
        insert_each(&mut expected, &hashes).unwrap();
        for method in BuildMethod::ALL {
            let built = SequentialQf::bulk_build(q, r, &hashes, method).unwrap();
            assert!(raw(&built) == raw(&expected), "r {r} {method:?}");
        }
    }
    let mut expected = SequentialQf::with_bits(q, 7).unwrap();
    insert_each(&mut expected, &hashes).unwrap();
    let (first, second) = hashes.split_at(hashes.len() / 2);
    let mut filter = SequentialQf::bulk_build(q, 7, first, BuildMethod::default()).unwrap();
    filter
        .insert_batch_with(second, BatchInsert::Superclusters)
        .unwrap();
    assert!(raw(&filter) == raw(&expected));
    let mut removed_each = filter.clone_table();
    let count = second
        .iter()
        .filter(|&&h| removed_each.remove_hash(h).unwrap())
        .count();
    assert_eq!(filter.remove_batch(second), count);
    assert!(raw(&filter) == raw(&removed_each));
    // Queries past the inserted ones too, so some answers are `false` (removed and never
    // inserted), in both orders, split over the threads.
    let queries: Vec<u64> = (0..hashes.len() as u64 * 2)
        .map(crate::hash::remix)
        .collect();
    for order in [BatchLookup::Prefetch, BatchLookup::Sorted] {
        let mut found = vec![false; queries.len()];
        filter
            .contains_batch_with(&queries, &mut found, order)
            .unwrap();
        for (&hash, &answer) in queries.iter().zip(&found) {
            assert_eq!(answer, filter.contains_hash(hash), "{order:?}");
        }
    }
}

/// A supercluster insert that would take the table's last slot is `Full`, as the one-by-one
/// insert is, and the last slot stays empty: every key here has the last canonical slot, so
/// their run fills the overflow tail and, with one key more than fits, reaches the last slot.
#[test]
fn supercluster_inserts_leave_the_last_slot_empty() {
    let (q, r) = (4, 8);
    let fitting = crate::qf::usual_slots(q) - 1 - ((1 << q) - 1);
    let key = |remainder: u64| ((((1 << q) - 1) << r) | remainder) << (64 - q - r);
    let hashes: Vec<u64> = (1..=fitting as u64 + 1).map(key).collect();
    let mut expected = SequentialQf::with_bits(q, r).unwrap();
    assert_eq!(insert_each(&mut expected, &hashes), Err(Error::Full));
    assert_eq!(expected.len(), fitting);
    let mut filter = SequentialQf::with_bits(q, r).unwrap();
    assert_eq!(
        filter.insert_batch_with(&hashes, BatchInsert::Superclusters),
        Err(Error::Full)
    );
    assert!(raw(&filter) == raw(&expected));
    assert_eq!(filter.len(), fitting);
    filter.check_invariants().unwrap();
}

#[test]
fn mismatched_answer_slice_is_an_error() {
    let filter = SequentialQf::with_bits(4, 4).unwrap();
    let mut out = [false; 2];
    assert!(matches!(
        filter.contains_batch(&[1, 2, 3], &mut out),
        Err(Error::InvalidParameters(_))
    ));
    // More answers than hashes is as wrong as fewer.
    let mut out = [false; 4];
    assert!(matches!(
        filter.contains_batch(&[1, 2, 3], &mut out),
        Err(Error::InvalidParameters(_))
    ));
}

/// The hash of fingerprint `(quotient, remainder)` of a 12-bit fingerprint with 5 quotient bits.
fn key12(quotient: u64, remainder: u64) -> u64 {
    ((quotient << 7) | remainder) << (64 - 12)
}

/// A table grown from `with_bits(4, 8)`, so it has 68 slots where `with_bits(5, 7)` makes 66,
/// holding `(0, 1)` and the 36 keys `(31, 1..=36)`, whose run fills its overflow tail.
fn grown_with_a_long_run() -> SequentialQf {
    let mut filter = SequentialQf::with_bits(4, 8).unwrap();
    filter.insert_hash(key12(0, 1)).unwrap();
    filter.grow().unwrap();
    for remainder in 1..=36 {
        filter.insert_hash(key12(31, remainder)).unwrap();
    }
    let default_slots = crate::qf::table::QfTable::with_bits(5, 7)
        .unwrap()
        .slots
        .len();
    assert!(filter.table.slots.len() > default_slots);
    filter
}

/// A merge-insert into a grown table whose overflow tail is in use rebuilds a table just as
/// large: it used to rebuild with the default slots, reporting `Full` for a key that fits (and
/// shrinking the table when it did not).
#[test]
fn merge_inserts_keep_the_slots_of_a_grown_table() {
    let filter = grown_with_a_long_run();
    let slots = filter.table.slots.len();
    let mut merged = crate::LocallyLockedQf::from_sequential(filter);
    let strategy = BatchInsert::Merge(BuildMethod::default());
    assert_eq!(merged.insert_batch_with(&[key12(3, 5)], strategy), Ok(1));
    let filter = merged.into_sequential();
    assert_eq!(filter.table.slots.len(), slots);
    assert!(filter.contains_hash(key12(3, 5)) && filter.contains_hash(key12(31, 36)));
    filter.check_invariants().unwrap();
}

/// `SequentialQf::merge` of a grown table with a small one: the union of 38 keys takes a sixth
/// quotient bit, which puts the 36 keys of quotient 31 into one run from slot 62, more than
/// `with_bits(6, 6)`'s overflow tail holds. The merge keeps the grown input's slots, doubled
/// for the new bit, in either order (it returned `Full` before).
#[test]
fn sequential_merges_keep_the_slots_of_a_grown_input() {
    use crate::Merge;
    let grown = grown_with_a_long_run();
    let mut other = SequentialQf::with_bits(5, 7).unwrap();
    other.insert_hash(key12(3, 5)).unwrap();
    for merged in [grown.merge(&other).unwrap(), other.merge(&grown).unwrap()] {
        assert_eq!(merged.table.quotient_bits, 6);
        assert_eq!(merged.table.slots.len(), 2 * grown.table.slots.len());
        assert_eq!(merged.len(), 38);
        assert!(merged.contains_hash(key12(3, 5)) && merged.contains_hash(key12(31, 36)));
        merged.check_invariants().unwrap();
    }
}

/// A merge of tables of the usual size is the union's usual size: a small input's overflow
/// tail is not doubled up to the union's quotient (which once asked for 6x the slots; 3 GiB
/// for `with_bits(1, 30)` with `with_bits(30, 1)`).
#[test]
fn sequential_merges_of_usual_tables_take_the_usual_slots() {
    use crate::Merge;
    let mut small = SequentialQf::with_bits(1, 20).unwrap();
    small.insert_hash(5 << 40).unwrap();
    let large = SequentialQf::with_bits(12, 9).unwrap();
    for merged in [small.merge(&large).unwrap(), large.merge(&small).unwrap()] {
        assert_eq!(merged.table.quotient_bits, 12);
        assert_eq!(merged.table.slots.len(), crate::qf::usual_slots(12));
        assert!(merged.contains_hash(5 << 40));
    }
}

impl SequentialQf {
    /// A copy of the filter (tests only; the filter is not `Clone` to keep copies explicit).
    pub(super) fn clone_table(&self) -> SequentialQf {
        let keys = super::keys::table_keys(&self.table, Ordering::Relaxed);
        let (table, len) = super::build_table(
            self.table.quotient_bits,
            self.table.remainder_bits,
            self.table.slots.len(),
            keys,
            BuildMethod::default(),
        )
        .unwrap();
        SequentialQf { table, len }
    }
}

/// `count` distinct fingerprints of `(q, r)` bits in the 16 canonical slots from `first_quotient`
/// on: one cluster of `count` slots (the `Auto` tests' crowded batch).
pub(super) fn one_cluster_of(q: u32, r: u32, first_quotient: u64, count: u64) -> Vec<u64> {
    (0..count)
        .map(|i| (first_quotient + i % 16) << (64 - q) | (i / 16 + 1) << (64 - q - r))
        .collect()
}

/// `Auto` merges a batch crowded into long clusters of its own, which the sweep would insert
/// in time quadratic in their length, and sweeps a batch as large spread over the table; the
/// crowded batch still stores what one-by-one inserts store.
#[test]
fn auto_merges_a_batch_crowded_into_long_clusters() {
    let (q, r) = (16, 12);
    let crowded = one_cluster_of(q, r, 0, 4096);
    let spread: Vec<u64> = (0..4096u64).map(crate::hash::remix).collect();
    let chosen = |hashes: &[u64]| {
        let keys = super::keys::sorted_keys(hashes, q + r);
        BatchInsert::choose_for(&keys, r, 0, 1 << q)
    };
    assert!(matches!(chosen(&crowded), BatchInsert::Merge(_)));
    assert_eq!(chosen(&spread), BatchInsert::Sweep);
    assert_eq!(
        BatchInsert::choose(crowded.len(), 0, 1 << q),
        BatchInsert::Sweep,
        "the size alone would sweep"
    );
    let mut expected = SequentialQf::with_bits(q, r).unwrap();
    insert_each(&mut expected, &crowded).unwrap();
    let mut filter = SequentialQf::with_bits(q, r).unwrap();
    assert_eq!(filter.insert_batch(&crowded), Ok(4096));
    assert!(raw(&filter) == raw(&expected));
    let make = || SequentialQf::with_bits(q, r).unwrap();
    let insert = SequentialQf::insert_batch_with;
    auto_merges_what_would_not_fit(make, insert, SequentialQf::len, 4096, (q, r));
}

/// What shows which path an `Auto` batch insert took: `count` keys in one cluster at the top
/// end of a table of `(q, r)` bits run past its overflow tail, and a merge then changes nothing
/// where the sweep (or `CountingQf`'s ranges) keeps the keys that fitted. `make` gives an empty
/// filter, `insert` is its `insert_batch_with` and `len` its length.
pub(super) fn auto_merges_what_would_not_fit<F>(
    make: impl Fn() -> F,
    insert: impl Fn(&mut F, &[u64], BatchInsert) -> Result<usize, Error>,
    len: impl Fn(&F) -> usize,
    count: u64,
    (q, r): (u32, u32),
) {
    let at_the_top = one_cluster_of(q, r, 0xFFF0, count);
    let mut swept = make();
    assert_eq!(
        insert(&mut swept, &at_the_top, BatchInsert::Sweep),
        Err(Error::Full)
    );
    assert!(len(&swept) > 0);
    let mut auto = make();
    assert_eq!(
        insert(&mut auto, &at_the_top, BatchInsert::Auto),
        Err(Error::Full)
    );
    assert_eq!(len(&auto), 0);
}

/// A merge-insert keeps the copies a build without deduplication stored and adds only absent
/// keys, as the sweep and one-by-one inserts do: the two leave the same table and count.
#[test]
fn a_merge_insert_keeps_the_copies_of_a_build_without_dedupe() {
    let (q, r) = (10, 8);
    let mut hashes: Vec<u64> = (0..300u64).map(crate::hash::remix).collect();
    hashes.extend([crate::hash::remix(7); 3]);
    let built =
        SequentialQf::bulk_build_with(q, r, &hashes, BuildMethod::default(), Dedupe::Off).unwrap();
    assert_eq!(built.len(), 303);
    let batch: Vec<u64> = (250..400u64).map(crate::hash::remix).collect();
    let mut swept = built.clone_table();
    let mut merged = built.clone_table();
    assert_eq!(swept.insert_batch_with(&batch, BatchInsert::Sweep), Ok(100));
    let merge = BatchInsert::Merge(BuildMethod::default());
    assert_eq!(merged.insert_batch_with(&batch, merge), Ok(100));
    assert_eq!(merged.len(), 403);
    assert!(raw(&merged) == raw(&swept));
}

/// `Auto` merges only a batch that walks *more* than the allowed slots per slot a merge
/// rewrites: five keys of one canonical slot walk 0 + 1 + 2 + 3 + 4 = 10 slots, so at one slot
/// walked per slot, 10 slots rewritten (5 held, 5 of the batch) are not crowded and 9 are.
#[test]
fn a_batch_that_walks_exactly_the_bound_is_not_crowded() {
    // Quotient 0, remainders 0 to 4 of 4 bits.
    let keys: Vec<u64> = (0..5).collect();
    assert!(!super::crowded(&keys, 4, 5, 1));
    assert!(super::crowded(&keys, 4, 4, 1));
    assert!(!super::crowded(&keys, 4, 0, 2));
}
