//! The load cap of the shifting quotient filters: from `2^10` slots on, `SequentialQf`,
//! `LocallyLockedQf`, `ExternallyLockedQf`, `TwoBitQf` (and so `GrowableQf` at its last size)
//! and `CountingQf` refuse inserts with `Full` once their entries take 31/32 of their `2^q`
//! slots, instead of taking keys into a cluster that spans the table. One thread and the batch
//! writes stop at the cap exactly; concurrent inserts sample the count and may stop a little
//! past it.

mod common;

use common::{distinct_hashes, hash_of};
use conqf::{
    BatchInsert, BuildMethod, Count, CountingQf, Error, ExternallyLockedQf, Filter,
    LocallyLockedQf, Merge, Remove, SequentialQf, TwoBitQf,
};

const Q: u32 = 12;
const R: u32 = 10;

/// The documented cap: 31/32 of the `2^q` slots.
fn cap(q: u32) -> usize {
    (1 << q) - (1 << q) / 32
}

/// How far past the cap concurrent inserts may go in these tests: a quarter of the room above
/// it (the sampled check lets a few keys per thread past it).
fn slack(q: u32) -> usize {
    ((1 << q) / 32) / 4
}

/// Inserts `hashes` one by one until the first `Full`; returns how many went in.
fn fill_until_full(filter: &impl Filter, hashes: &[u64]) -> usize {
    for (index, &hash) in hashes.iter().enumerate() {
        match filter.insert_hash(hash) {
            Ok(true) => {}
            Ok(false) => panic!("the hashes have distinct fingerprints"),
            Err(Error::Full) => return index,
            Err(other) => panic!("{other}"),
        }
    }
    panic!("{} keys went into 2^{Q} slots", hashes.len());
}

/// What an insert of a key already stored answers at the cap: `Ok(false)` in a set filter (set
/// semantics hold there too), `Full` in `CountingQf`, where it would add a copy.
const STORED_KEY_AT_THE_CAP_SET: Result<bool, Error> = Ok(false);
const STORED_KEY_AT_THE_CAP_COUNTING: Result<bool, Error> = Err(Error::Full);

/// One thread fills the filter until it refuses: the refusal comes at the cap, leaves the
/// filter unchanged (every key found, the same length, the invariants hold), answers an
/// insert of every stored key with `stored_key`, and lifts once removals bring the count
/// below the cap.
fn one_thread_stops_at_the_cap<F: Filter + Remove>(
    make: impl Fn(u32, u32) -> F,
    check: impl Fn(&F) -> Result<(), String>,
    stored_key: Result<bool, Error>,
) {
    let filter = make(Q, R);
    let hashes = distinct_hashes(Q, R, 1 << Q, 1 << Q, 7);
    let stored = fill_until_full(&filter, &hashes);
    assert_eq!(stored, cap(Q), "one thread stops exactly at the cap");
    assert_eq!(filter.len(), stored);
    assert_eq!(filter.insert_hash(hashes[stored + 1]), Err(Error::Full));
    for &hash in &hashes[..stored] {
        assert_eq!(filter.insert_hash(hash), stored_key, "a stored key");
    }
    assert_eq!(filter.insert_hash(hashes[stored + 1]), Err(Error::Full));
    assert_eq!(filter.len(), stored);
    assert!(hashes[..stored].iter().all(|&h| filter.contains_hash(h)));
    check(&filter).unwrap();
    assert_eq!(filter.remove_hash(hashes[0]), Ok(true));
    assert_eq!(
        filter.insert_hash(hashes[stored]),
        Ok(true),
        "below the cap again"
    );
    check(&filter).unwrap();
}

#[test]
fn locally_locked_stops_at_the_cap() {
    one_thread_stops_at_the_cap(
        |q, r| LocallyLockedQf::with_bits(q, r).unwrap(),
        LocallyLockedQf::check_invariants,
        STORED_KEY_AT_THE_CAP_SET,
    );
}

#[test]
fn externally_locked_stops_at_the_cap() {
    one_thread_stops_at_the_cap(
        |q, r| ExternallyLockedQf::with_bits(q, r).unwrap(),
        ExternallyLockedQf::check_invariants,
        STORED_KEY_AT_THE_CAP_SET,
    );
}

/// Keys inserted once take a slot each, so `CountingQf` stops at the cap of the others.
#[test]
fn counting_stops_at_the_cap() {
    one_thread_stops_at_the_cap(
        |q, r| CountingQf::with_bits(q, r).unwrap(),
        CountingQf::check_invariants,
        STORED_KEY_AT_THE_CAP_COUNTING,
    );
}

#[test]
fn two_bit_stops_at_the_cap() {
    one_thread_stops_at_the_cap(
        |q, r| TwoBitQf::with_bits(q, r).unwrap(),
        TwoBitQf::check_invariants,
        STORED_KEY_AT_THE_CAP_SET,
    );
}

/// Threads (a parameter: `CONQF_CAP_THREADS`, 4 by default) fill one filter from disjoint key
/// sets until each is refused: the filter then holds at least the cap and at most the slack
/// past it, and every key whose insert returned `Ok(true)` is found.
fn threads_stop_near_the_cap<F: Filter>(make: impl Fn(u32, u32) -> F) {
    let threads: usize = std::env::var("CONQF_CAP_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    let q = 14;
    let filter = make(q, R);
    let hashes = distinct_hashes(q, R, 1 << q, 1 << q, 11);
    let share = hashes.len().div_ceil(threads);
    let stored: Vec<&[u64]> = std::thread::scope(|s| {
        let workers: Vec<_> = hashes
            .chunks(share)
            .map(|mine| {
                let filter = &filter;
                s.spawn(move || &mine[..fill_until_full_or_end(filter, mine)])
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let total: usize = stored.iter().map(|keys| keys.len()).sum();
    assert_eq!(filter.len(), total);
    assert!(
        (cap(q)..=cap(q) + slack(q)).contains(&total),
        "{threads} threads stored {total}, cap {}",
        cap(q)
    );
    assert!(stored
        .iter()
        .flat_map(|keys| keys.iter())
        .all(|&h| filter.contains_hash(h)));
}

/// [`fill_until_full`] that may also run out of keys.
fn fill_until_full_or_end(filter: &impl Filter, hashes: &[u64]) -> usize {
    hashes
        .iter()
        .position(|&hash| match filter.insert_hash(hash) {
            Ok(stored) => {
                assert!(stored, "the hashes have distinct fingerprints");
                false
            }
            Err(error) => {
                assert_eq!(error, Error::Full);
                true
            }
        })
        .unwrap_or(hashes.len())
}

#[test]
fn concurrent_inserts_stop_near_the_cap() {
    threads_stop_near_the_cap(|q, r| LocallyLockedQf::with_bits(q, r).unwrap());
    threads_stop_near_the_cap(|q, r| ExternallyLockedQf::with_bits(q, r).unwrap());
    threads_stop_near_the_cap(|q, r| TwoBitQf::with_bits(q, r).unwrap());
    threads_stop_near_the_cap(|q, r| CountingQf::with_bits(q, r).unwrap());
}

/// `CountingQf` caps the slots its entries take, not its fingerprints: keys with a thousand
/// copies each (an entry of several slots) are refused long before a slot per key would reach
/// the cap. At the cap, a count that stays within its entry's slots still grows, while a new
/// key, or a count needing a slot more, is refused and changes nothing; removing a key lets
/// inserts in again. Growing, saving and loading keep the count of slots (the invariant check
/// compares it with the table).
#[test]
fn counting_caps_the_slots_of_repeated_keys() {
    let filter = CountingQf::with_bits(Q, R).unwrap();
    let hashes = distinct_hashes(Q, R, 1 << Q, 1 << Q, 19);
    let stored = hashes
        .iter()
        .position(|&hash| match filter.insert_count_hash(hash, 1000) {
            Ok(()) => false,
            Err(error) => {
                assert_eq!(error, Error::Full);
                true
            }
        })
        .expect("the cap refuses an insert");
    assert!(
        stored < cap(Q) / 2,
        "{stored} keys of 1000 copies before the cap"
    );
    assert!(stored > cap(Q) / 8, "only {stored} keys of 1000 copies");
    filter.check_invariants().unwrap();
    let new_key = hashes[stored];
    assert_eq!(filter.insert_hash(new_key), Err(Error::Full));
    assert_eq!(filter.count_hash(new_key), 0);
    // 1000 -> 1001 keeps its digits in every remainder width.
    assert_eq!(filter.insert_hash(hashes[0]), Ok(false));
    assert_eq!(filter.count_hash(hashes[0]), 1001);
    assert_eq!(filter.len(), stored * 1000 + 1);
    filter.check_invariants().unwrap();

    let bytes = filter.to_bytes();
    let loaded = CountingQf::from_bytes(&bytes).unwrap();
    loaded.check_invariants().unwrap();
    assert_eq!(
        loaded.insert_hash(new_key),
        Err(Error::Full),
        "loaded at the cap"
    );
    // The last insert may have ended an entry's few slots past the cap: four entries of 1000
    // copies (two slots or more each) bring it below, wherever it ended.
    for &hash in &hashes[1..5] {
        assert_eq!(filter.remove_all_hash(hash), Ok(1000));
    }
    assert_eq!(filter.insert_hash(new_key), Ok(true), "below the cap again");
    filter.check_invariants().unwrap();

    let mut grown = loaded;
    grown.grow().unwrap();
    grown.check_invariants().unwrap();
    assert_eq!(grown.insert_hash(new_key), Ok(true), "room after growing");
}

/// `CountingQf`'s batch writes stop at the cap: a bulk build or a merge-insert whose entries
/// take more slots is `Full` (the filter unchanged), the range inserts keep what fitted, and
/// a merge sizes its result by the slots of the union, so heavy counts double it.
#[test]
fn counting_batch_writes_stop_at_the_cap() {
    let hashes = distinct_hashes(Q, R, 1 << Q, cap(Q) + 10, 23);
    let build = |keys: &[u64], method| CountingQf::bulk_build(Q, R, keys, method);
    for at_cap in bulk_builds_stop_at_the_cap(&hashes, build, CountingQf::len) {
        assert_eq!(
            at_cap.insert_hash(hashes[cap(Q)]),
            Err(Error::Full),
            "a built table at the cap refuses"
        );
        at_cap.check_invariants().unwrap();
    }
    let half = cap(Q) / 2;
    let mut merged = CountingQf::bulk_build(Q, R, &hashes[..half], BuildMethod::default()).unwrap();
    let merge = BatchInsert::Merge(BuildMethod::default());
    assert_eq!(
        merged.insert_batch_with(&hashes[half..], merge),
        Err(Error::Full)
    );
    assert_eq!(merged.len(), half, "a refused merge-insert changes nothing");
    let result = merged.insert_batch_concurrent(&hashes[half..]);
    assert_eq!(result, Err(Error::Full));
    assert!(
        (cap(Q)..=cap(Q) + slack(Q)).contains(&merged.len()),
        "the ranges, a thread each, fill up to the cap: {}",
        merged.len()
    );
    merged.check_invariants().unwrap();

    // Each filter alone fits at q, but the union of their heavy keys does not.
    let (a, b) = (
        CountingQf::with_bits(Q, R).unwrap(),
        CountingQf::with_bits(Q, R).unwrap(),
    );
    let third = cap(Q) / 3;
    for (i, &hash) in hashes[..2 * third].iter().enumerate() {
        let target = if i % 2 == 0 { &a } else { &b };
        target.insert_count_hash(hash, 2).unwrap();
    }
    let union = a.merge(&b).unwrap();
    assert_eq!(union.quotient_bits(), Q + 1, "4/3 of the cap in slots");
    assert_eq!(union.len(), 4 * third);
    union.check_invariants().unwrap();
}

#[test]
fn sequential_stops_at_the_cap_exactly() {
    let mut filter = SequentialQf::with_bits(Q, R).unwrap();
    let hashes = distinct_hashes(Q, R, 1 << Q, cap(Q) + 1, 3);
    for &hash in &hashes[..cap(Q)] {
        assert_eq!(filter.insert_hash(hash), Ok(true));
    }
    assert_eq!(filter.insert_hash(hashes[cap(Q)]), Err(Error::Full));
    for &hash in &hashes[..cap(Q)] {
        assert_eq!(filter.insert_hash(hash), STORED_KEY_AT_THE_CAP_SET);
    }
    assert_eq!(filter.len(), cap(Q));
    filter.remove_hash(hashes[0]).unwrap();
    assert_eq!(filter.insert_hash(hashes[cap(Q)]), Ok(true));
    filter.check_invariants().unwrap();
}

/// Tables below `2^10` slots take keys into their overflow tail, as before the cap.
#[test]
fn small_tables_are_not_capped() {
    let filter = LocallyLockedQf::with_bits(9, R).unwrap();
    let hashes = distinct_hashes(9, R, 1 << 9, 1 << 10, 5);
    let stored = fill_until_full_or_end(&filter, &hashes);
    assert!(stored >= 1 << 9, "only {stored} keys in 512 slots");
}

/// Every build method refuses `hashes` (more distinct keys than the cap) with `Full` and builds
/// the first `cap` of them (`len` counting them all); returns those filters.
fn bulk_builds_stop_at_the_cap<F>(
    hashes: &[u64],
    build: impl Fn(&[u64], BuildMethod) -> Result<F, Error>,
    len: impl Fn(&F) -> usize,
) -> [F; 3] {
    BuildMethod::ALL.map(|method| {
        assert!(matches!(build(hashes, method), Err(Error::Full)));
        let at_cap = build(&hashes[..cap(Q)], method).unwrap();
        assert_eq!(len(&at_cap), cap(Q));
        at_cap
    })
}

/// Batch writes stop at the cap exactly: a bulk build of more distinct keys than the cap and a
/// merge-insert past it are `Full` and change nothing; supercluster rounds and the sweep keep
/// what fitted, which is the cap.
#[test]
fn batch_writes_stop_at_the_cap() {
    let hashes = distinct_hashes(Q, R, 1 << Q, cap(Q) + 10, 9);
    let build = |keys: &[u64], method| SequentialQf::bulk_build(Q, R, keys, method);
    bulk_builds_stop_at_the_cap(&hashes, build, SequentialQf::len);
    let half = cap(Q) / 2;
    let mut merged =
        SequentialQf::bulk_build(Q, R, &hashes[..half], BuildMethod::default()).unwrap();
    let merge = BatchInsert::Merge(BuildMethod::default());
    assert_eq!(
        merged.insert_batch_with(&hashes[half..], merge),
        Err(Error::Full)
    );
    assert_eq!(merged.len(), half, "a refused merge-insert changes nothing");
    for strategy in [BatchInsert::Superclusters, BatchInsert::Sweep] {
        let mut filter =
            LocallyLockedQf::bulk_build(Q, R, &hashes[..half], BuildMethod::default()).unwrap();
        let result = filter.insert_batch_with(&hashes[half..], strategy);
        assert_eq!(result, Err(Error::Full), "{strategy:?}");
        assert_eq!(filter.len(), cap(Q), "{strategy:?} fills up to the cap");
        assert!(hashes.iter().filter(|&&h| filter.contains_hash(h)).count() >= cap(Q));
        filter.check_invariants().unwrap();
        // The flag of the concurrent filter follows the batch: single inserts are refused too.
        let new_key = conqf::hash_key("not in the batch");
        assert!(!filter.contains_hash(new_key));
        assert_eq!(filter.insert_hash(new_key), Err(Error::Full));
        assert_eq!(filter.remove_batch(&hashes[..1]), 1);
        assert!(filter.insert_hash(hashes[0]).is_ok());
    }
}

/// At the cap a batch of stored keys goes in as one-by-one inserts of them do, storing
/// nothing (`Ok(0)`), whatever the strategy, and a batch with a new key among them is `Full`
/// with nothing written.
#[test]
fn batches_of_stored_keys_go_in_at_the_cap() {
    let hashes = distinct_hashes(Q, R, 1 << Q, cap(Q) + 1, 17);
    let (stored, new_key) = (&hashes[..cap(Q)], hashes[cap(Q)]);
    let strategies = [
        BatchInsert::Auto,
        BatchInsert::Sweep,
        BatchInsert::Superclusters,
        BatchInsert::Merge(BuildMethod::default()),
    ];
    for strategy in strategies {
        let mut filter = SequentialQf::bulk_build(Q, R, stored, BuildMethod::default()).unwrap();
        assert_eq!(filter.insert_hash(new_key), Err(Error::Full));
        let some: Vec<u64> = stored.iter().step_by(7).copied().collect();
        assert_eq!(
            filter.insert_batch_with(&some, strategy),
            Ok(0),
            "{strategy:?}"
        );
        let with_new: Vec<u64> = some.iter().copied().chain([new_key]).collect();
        let result = filter.insert_batch_with(&with_new, strategy);
        assert_eq!(result, Err(Error::Full), "{strategy:?}");
        assert_eq!(filter.len(), cap(Q), "{strategy:?}");
        assert!(!filter.contains_hash(new_key), "{strategy:?}");
        filter.check_invariants().unwrap();
        let mut concurrent = LocallyLockedQf::from_sequential(filter);
        assert_eq!(
            concurrent.insert_batch_with(&some, strategy),
            Ok(0),
            "{strategy:?}"
        );
        assert_eq!(
            concurrent.insert_batch_concurrent(&some),
            Ok(0),
            "{strategy:?}"
        );
    }
}

/// Supercluster rounds stop at the cap exactly when a round has more superclusters than room
/// under the cap: one key below the cap fills the first slots as one cluster, and the batch's
/// four keys each start a supercluster of their own in the empty slots after it, so the first
/// round plans four writes and may make one.
#[test]
fn supercluster_rounds_with_more_regions_than_room_stop_at_the_cap() {
    let below: Vec<u64> = (0..cap(Q) as u64 - 1)
        .map(|slot| hash_of(slot, 1, Q, R, 0))
        .collect();
    let batch: Vec<u64> = [0, 5, 10, 15]
        .map(|gap| hash_of(cap(Q) as u64 + 8 + gap, 1, Q, R, 0))
        .to_vec();
    let mut sequential = SequentialQf::bulk_build(Q, R, &below, BuildMethod::default()).unwrap();
    let mut locally = LocallyLockedQf::bulk_build(Q, R, &below, BuildMethod::default()).unwrap();
    let results = [
        sequential.insert_batch_with(&batch, BatchInsert::Superclusters),
        locally.insert_batch_with(&batch, BatchInsert::Superclusters),
    ];
    assert_eq!(results, [Err(Error::Full), Err(Error::Full)]);
    assert_eq!((sequential.len(), Filter::len(&locally)), (cap(Q), cap(Q)));
    let stored = |contains: &dyn Fn(u64) -> bool| batch.iter().filter(|&&h| contains(h)).count();
    assert_eq!(stored(&|h| sequential.contains_hash(h)), 1);
    assert_eq!(stored(&|h| locally.contains_hash(h)), 1);
    sequential.check_invariants().unwrap();
    locally.check_invariants().unwrap();
}

/// A growable filter that may not double any more is capped like its table.
#[test]
fn a_growable_filter_at_its_last_size_stops_at_the_cap() {
    let filter = LocallyLockedQf::growable(2000, 1e-3)
        .max_doublings(0)
        .build()
        .unwrap();
    let (q, r) = (filter.quotient_bits(), filter.remainder_bits());
    assert!(q >= 10, "a table the cap applies to");
    let hashes = distinct_hashes(q, r, 1 << q, 1 << q, 13);
    let stored = fill_until_full(&filter, &hashes);
    assert_eq!(stored, cap(q), "one thread stops exactly at the cap");
    assert!(hashes[..stored].iter().all(|&h| filter.contains_hash(h)));
    for &hash in &hashes[..stored] {
        assert_eq!(filter.insert_hash(hash), STORED_KEY_AT_THE_CAP_SET);
    }
    assert_eq!(filter.insert_hash(hashes[stored]), Err(Error::Full));
    assert_eq!(filter.len(), stored);
}

/// Growing copies a table whatever its fill: a table past the cap of its doubled size (possible
/// for a table grown from one too small to be capped, whose overflow tail doubled with it)
/// still grows, and the grown filter refuses inserts until removals bring it below its cap.
#[test]
fn growing_is_not_capped() {
    let mut filter = SequentialQf::with_bits(4, 30).unwrap();
    for _ in 0..5 {
        filter.grow().unwrap();
    }
    assert_eq!(filter.quotient_bits(), 9);
    let hashes = distinct_hashes(9, 25, 1 << 9, 2000, 17);
    let mut stored = 0;
    for &hash in &hashes {
        if filter.insert_hash(hash).is_err() {
            break;
        }
        stored += 1;
    }
    assert!(
        stored > cap(10),
        "{stored} keys: too few to test growing past the cap"
    );
    filter.grow().unwrap();
    assert_eq!(filter.len(), stored);
    assert!(hashes[..stored].iter().all(|&h| filter.contains_hash(h)));
    assert_eq!(filter.insert_hash(hashes[stored]), Err(Error::Full));
    filter.check_invariants().unwrap();
    let concurrent = LocallyLockedQf::from_sequential(filter);
    assert_eq!(concurrent.insert_hash(hashes[stored]), Err(Error::Full));
}

/// A merge of small tables (below `2^10` slots, so uncapped) sizes its result by the slots of
/// the union too: heavy keys that fit neither table's size are not `Full` but double it.
#[test]
fn counting_merges_of_small_tables_make_room_for_heavy_keys() {
    let (a, b) = (
        CountingQf::with_bits(8, 12).unwrap(),
        CountingQf::with_bits(8, 12).unwrap(),
    );
    let hashes = distinct_hashes(8, 12, 1 << 8, 188, 29);
    for (i, &hash) in hashes.iter().enumerate() {
        let target = if i % 2 == 0 { &a } else { &b };
        target.insert_count_hash(hash, 1_000_000).unwrap();
    }
    let union = a.merge(&b).unwrap();
    assert!(union.quotient_bits() > 8);
    assert!(hashes.iter().all(|&h| union.count_hash(h) == 1_000_000));
    union.check_invariants().unwrap();
}
