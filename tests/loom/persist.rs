//! Loom models of the concurrent snapshots of issue 10 (`to_bytes` while other threads insert),
//! each named after the hazard it checks. The snapshot is decoded with `from_bytes`, so every
//! interleaving also checks that the decoder accepts what a racing writer produced.
//!
//! `ExternallyLockedQf` takes every region lock for its copy: the snapshot must be the table
//! between two operations, never a half-shifted cluster. `LinearProbingQf` copies groups one by
//! one without locks: the copy may tear between groups, but it must decode, and it must hold
//! every insert that returned before the snapshot began.
//!
//! Only the read-modify-write pass (`CONQF_LOOM_RMW_LOADS=1`) catches a snapshot that forgets
//! the region locks (checked by removing them): with plain loads loom never schedules the
//! copy's loads between the insert's two group writes.
//!
//! `AtomicBloomFilter` writes its count before its bits: the count must not run ahead of the
//! bits the copy then reads (its decoder rejects a count above the bits set), which needs the
//! fences between an insert's bits and its count and between the snapshot's count and its
//! copy; loom's relaxed loads find the stale bit without them. Its merge reads both tables with
//! relaxed loads, which see every insert that happens before the merge.

use conqf::{AtomicBloomFilter, ExternallyLockedQf, Filter, LinearProbingQf, Merge, SequentialQf};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The hash of fingerprint `(quotient, remainder)` for `q` quotient and `r` remainder bits.
fn key(quotient: u64, remainder: u64, q: u32, r: u32) -> u64 {
    ((quotient << r) | remainder) << (64 - q - r)
}

/// 8 canonical slots of 13-bit remainders (4 slots per group), one region per group: a
/// cluster from slot 2 runs into region 1, so the insert below shifts across two regions.
#[test]
fn region_locked_snapshot_holds_whole_operations() {
    let k = |quotient, remainder| key(quotient, remainder, 3, 13);
    super::check(None, move || {
        let mut sequential = SequentialQf::with_bits(3, 13).unwrap();
        for h in [k(2, 50), k(2, 60), k(3, 50)] {
            sequential.insert_hash(h).unwrap();
        }
        let filter =
            Arc::new(ExternallyLockedQf::from_sequential_with_region(sequential, 4).unwrap());
        let writer = filter.clone();
        let t = thread::spawn(move || {
            writer.insert_hash(k(2, 10)).unwrap();
            writer.insert_hash(k(3, 20)).unwrap();
        });
        let snapshot = ExternallyLockedQf::from_bytes(&filter.to_bytes()).unwrap();
        snapshot.check_invariants().unwrap();
        let (first, second) = (
            snapshot.contains_hash(k(2, 10)),
            snapshot.contains_hash(k(3, 20)),
        );
        // Between operations: none, the first, or both of the thread's inserts.
        assert!(first || !second, "the second insert without the first");
        assert_eq!(snapshot.len(), 3 + first as usize + second as usize);
        t.join().unwrap();
        assert!(filter.contains_hash(k(2, 10)) && filter.contains_hash(k(3, 20)));
    });
}

/// A linear-probing filter of `2^3` addressable 16-bit slots (groups 0 and 1; the overflow
/// tail starts in group 2) without a load cap, holding `first`.
fn linear_probing_holding(first: u64) -> Arc<LinearProbingQf> {
    let filter = LinearProbingQf::builder()
        .max_load(1.0)
        .build_with_bits(3, 16)
        .unwrap();
    filter.insert_hash(first).unwrap();
    Arc::new(filter)
}

/// Two inserts by one thread collide at slot 2 (already full): the first lands in slot 3
/// (group 0), the second in slot 4 (group 1). The copy reads the tail end first (groups 2 and
/// 1), then group 0, so it may hold the first without the second but never the second alone.
/// It must decode, and once the thread's flag says both returned (read before the snapshot)
/// both must be found.
#[test]
fn linear_probing_snapshot_holds_finished_inserts() {
    let k = |quotient, remainder| key(quotient, remainder, 3, 16);
    super::check(None, move || {
        let filter = linear_probing_holding(k(2, 1));
        let done = Arc::new(AtomicBool::new(false));
        let (writer, flag) = (filter.clone(), done.clone());
        let t = thread::spawn(move || {
            writer.insert_hash(k(2, 2)).unwrap();
            writer.insert_hash(k(2, 3)).unwrap();
            // Release: a snapshot that reads the flag with Acquire happens after both inserts.
            flag.store(true, Ordering::Release);
        });
        // Acquire: pairs with the Release above.
        let finished = done.load(Ordering::Acquire);
        let snapshot = LinearProbingQf::from_bytes(&filter.to_bytes()).unwrap();
        assert!(snapshot.contains_hash(k(2, 1)));
        if finished {
            assert!(snapshot.contains_hash(k(2, 2)) && snapshot.contains_hash(k(2, 3)));
        }
        t.join().unwrap();
    });
}

/// One insert racing a snapshot of a one-word Bloom filter, as bytes and as a clone: whatever
/// count the snapshot read, the bits it copied back it up, so the decoder accepts the snapshot
/// (it failed without the insert's Release fence and the snapshot's Acquire fence, checked).
#[test]
fn bloom_snapshot_count_never_runs_ahead_of_its_bits() {
    super::check(None, || {
        let filter = Arc::new(AtomicBloomFilter::with_memory(8, 2).unwrap());
        super::race(
            &filter,
            |writer| assert_eq!(writer.insert_hash(0x1234_5678_9abc_def0), Ok(true)),
            |reader| {
                for bytes in [reader.to_bytes(), reader.clone().to_bytes()] {
                    let back = AtomicBloomFilter::from_bytes(&bytes).unwrap();
                    assert!(back.len() <= 1);
                }
            },
        );
    });
}

/// A union in place racing a snapshot of its target, as bytes and as a clone: the count the
/// union adds is backed by the bits it set, whatever the snapshot read of either, so the
/// decoder accepts the snapshot (as for an insert, above; it fails without the union's Release
/// fence before its count, checked: "count 1 exceeds the 0 bits set").
#[test]
fn bloom_union_snapshot_count_never_runs_ahead_of_its_bits() {
    super::check(None, || {
        let source = AtomicBloomFilter::with_memory(8, 2).unwrap();
        assert_eq!(source.insert_hash(0x1234_5678_9abc_def0), Ok(true));
        let filter = Arc::new(AtomicBloomFilter::with_memory(8, 2).unwrap());
        super::race(
            &filter,
            move |writer| writer.union_with(&source).unwrap(),
            |reader| {
                for bytes in [reader.to_bytes(), reader.clone().to_bytes()] {
                    let back = AtomicBloomFilter::from_bytes(&bytes).unwrap();
                    assert!(back.len() <= 1);
                }
            },
        );
    });
}

/// Two one-word Bloom filters, a writer inserting into each and then publishing (Release), and a
/// merge that reads the flag (Acquire) first: the merge's Relaxed word loads happen after every
/// insert the flag publishes, so the union holds both keys then, and its estimated count never
/// runs ahead of its bits (its bytes read back) either way. (A merge that drops the second
/// input's words fails it.)
#[test]
fn bloom_merge_holds_every_insert_published_before_it() {
    const LEFT: u64 = 0x1234_5678_9abc_def0;
    const RIGHT: u64 = 0x0fed_cba9_8765_4321;
    super::check(None, || {
        let filters = Arc::new((
            AtomicBloomFilter::with_memory(8, 2).unwrap(),
            AtomicBloomFilter::with_memory(8, 2).unwrap(),
            AtomicBool::new(false),
        ));
        super::race(
            &filters,
            |(left, right, published)| {
                left.insert_hash(LEFT).unwrap();
                right.insert_hash(RIGHT).unwrap();
                published.store(true, Ordering::Release);
            },
            |(left, right, published)| {
                let both = published.load(Ordering::Acquire);
                let union = left.merge(right).unwrap();
                if both {
                    assert!(union.contains_hash(LEFT) && union.contains_hash(RIGHT));
                }
                let back = AtomicBloomFilter::from_bytes(&union.to_bytes()).unwrap();
                assert_eq!(back.len(), union.len());
            },
        );
    });
}

/// Two inserts of the last canonical slot's quotient while a snapshot is copied: the first
/// lands in slot 7 (the last addressable slot, group 1), the second in slot 8 (the overflow
/// tail, group 2). The copy must never hold slot 8 without slot 7, a tail cut off from the
/// table, which the decoder rejects: it reads the tail end first, last group first. A copy in
/// plain ascending order fails this model in `CONQF_LOOM_RMW_LOADS=1` mode (the plain mode
/// explores 9 executions and misses it). From a review of `LinearProbingQf`.
#[test]
fn linear_probing_snapshot_racing_inserts_into_the_tail_decodes() {
    let k = |quotient, remainder| key(quotient, remainder, 3, 16);
    super::check(None, move || {
        let filter = linear_probing_holding(k(6, 1));
        let (bytes, ()) = super::race(
            &filter,
            |f| f.to_bytes(),
            move |f| {
                f.insert_hash(k(6, 2)).unwrap();
                f.insert_hash(k(6, 3)).unwrap();
            },
        );
        let snapshot = LinearProbingQf::from_bytes(&bytes).unwrap();
        snapshot.check_invariants().unwrap();
        assert!(snapshot.contains_hash(k(6, 1)));
    });
}

/// The tail-first copy of `LinearProbingQf::write_to` under weak memory: a writer stores slot 7
/// (the last addressable slot, group 1) and then slot 8 (the overflow tail, group 2), and only
/// then raises a `Relaxed` flag, which orders nothing; the snapshot waits for the flag, so its
/// loads come after both inserts in loom's schedule but are not ordered after them. It reads
/// group 2 before group 1, but with `Relaxed` loads the read of group 2 that finds slot 8 full
/// does not synchronise with the insert that filled it, so the later read of group 1 may still
/// return the value from before slot 7 was filled (message passing without Acquire; allowed
/// on ARM, where independent loads may be reordered). The copy then holds a tail cut off from
/// the table, which `from_bytes` rejects. Passes only if the copy's tail loads are `Acquire`.
/// (The model above misses this: loom never schedules its copy after both inserts in plain
/// mode, and in RMW mode every load reads the newest value.) The copier also clones the filter,
/// by the same snapshot, and the clone must keep the table's invariants.
#[test]
fn linear_probing_snapshot_after_relaxed_flag_decodes() {
    let k = |quotient, remainder| key(quotient, remainder, 3, 16);
    super::check(None, move || {
        let filter = linear_probing_holding(k(6, 1));
        let done = Arc::new(AtomicBool::new(false));
        let (f, flag) = (filter.clone(), done.clone());
        let copier = thread::spawn(move || {
            super::wait_relaxed(&flag);
            (f.to_bytes(), LinearProbingQf::clone(&f))
        });
        let (f, flag) = (filter.clone(), done.clone());
        let writer = thread::spawn(move || {
            f.insert_hash(k(6, 2)).unwrap();
            f.insert_hash(k(6, 3)).unwrap();
            flag.store(true, Ordering::Relaxed);
        });
        let (bytes, copy) = copier.join().unwrap();
        writer.join().unwrap();
        let snapshot = LinearProbingQf::from_bytes(&bytes).unwrap();
        snapshot.check_invariants().unwrap();
        copy.check_invariants().unwrap();
    });
}
