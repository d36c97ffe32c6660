//! `clear` on every filter: afterwards the filter holds nothing (no key of those it held, nor any
//! other, is found; `len` is 0; its invariants hold), it writes the same bytes as a new filter of
//! its shape (so no count, flag or level of before is left), it keeps its memory (but for
//! `ExpandableQf`, which drops every level but the first), and it takes the same keys again.

use conqf::{
    AtomicBloomFilter, Count, CountingQf, ExpandableQf, ExternallyLockedQf, Filter,
    LinearProbingQf, LocallyLockedQf, LockFreeCuckooFilter, LockedCuckooFilter, Remove,
    SequentialQf, TwoBitQf,
};

const CAPACITY: usize = 3000;
const FPR: f64 = 0.01;

/// Keys that were inserted, and others, none of which an empty filter may report.
fn probes() -> impl Iterator<Item = u64> {
    0..20_000u64
}

/// Fills `filter` with `0..CAPACITY`, removes every seventh key where it can, clears it and
/// checks it against `fresh`, a new filter of its shape; then inserts the keys again.
fn check<F: Filter>(
    name: &str,
    mut filter: F,
    fresh: F,
    remove: impl Fn(&F, u64),
    clear: impl Fn(&mut F),
    bytes: impl Fn(&mut F) -> Vec<u8>,
    invariants: impl Fn(&F) -> Result<(), String>,
) {
    for k in 0..CAPACITY as u64 {
        filter.insert(&k).unwrap();
    }
    for k in (0..CAPACITY as u64).step_by(7) {
        remove(&filter, k);
    }
    let memory = filter.memory_bytes();
    clear(&mut filter);
    assert_eq!(filter.len(), 0, "{name}");
    assert!(filter.is_empty(), "{name}");
    assert!(
        probes().all(|k| !filter.contains(&k)),
        "{name}: a key after clear"
    );
    invariants(&filter).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut fresh = fresh;
    assert!(
        bytes(&mut filter) == bytes(&mut fresh),
        "{name}: not a new filter's bytes"
    );
    assert_eq!(
        filter.memory_bytes(),
        memory.min(fresh.memory_bytes()),
        "{name}"
    );
    for k in 0..CAPACITY as u64 {
        filter.insert(&k).unwrap();
    }
    assert!((0..CAPACITY as u64).all(|k| filter.contains(&k)), "{name}");
    invariants(&filter).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Filled until it refuses, cleared, it takes as many keys again (a load cap's flag or
    // budget left as it was would refuse them); the growing filters and the Bloom filter never
    // refuse within the bound.
    let fill = |filter: &F| {
        (0..1u64 << 20)
            .take_while(|k| filter.insert(k).is_ok())
            .count()
    };
    clear(&mut filter);
    let stored = fill(&filter);
    clear(&mut filter);
    assert_eq!(fill(&filter), stored, "{name}");
}

fn ignore(_: &impl Filter, _: u64) {}

fn removing<F: Remove>(filter: &F, key: u64) {
    assert!(filter.remove(&key).unwrap());
}

#[test]
fn sequential() {
    let mut filter = SequentialQf::new(CAPACITY, FPR).unwrap();
    for k in 0..CAPACITY as u64 {
        filter.insert(&k).unwrap();
    }
    // Grown, with more slots than a new table of its shape: clear keeps them, so it is an
    // empty filter grown as often.
    filter.grow().unwrap();
    for k in (0..CAPACITY as u64).step_by(7) {
        assert!(filter.remove(&k).unwrap());
    }
    let memory = filter.memory_bytes();
    filter.clear();
    assert!(filter.is_empty() && probes().all(|k| !filter.contains(&k)));
    filter.check_invariants().unwrap();
    let mut fresh = SequentialQf::new(CAPACITY, FPR).unwrap();
    fresh.grow().unwrap();
    assert!(filter.to_bytes() == fresh.to_bytes());
    assert_eq!(filter.memory_bytes(), memory);
    for k in 0..CAPACITY as u64 {
        filter.insert(&k).unwrap();
    }
    assert!((0..CAPACITY as u64).all(|k| filter.contains(&k)));
    filter.check_invariants().unwrap();
}

#[test]
fn locally_locked() {
    let make = || LocallyLockedQf::new(CAPACITY, FPR).unwrap();
    check(
        "LocallyLockedQf",
        make(),
        make(),
        removing,
        LocallyLockedQf::clear,
        LocallyLockedQf::to_bytes,
        LocallyLockedQf::check_invariants,
    );
}

#[test]
fn externally_locked() {
    let make = || ExternallyLockedQf::new(CAPACITY, FPR).unwrap();
    check(
        "ExternallyLockedQf",
        make(),
        make(),
        removing,
        ExternallyLockedQf::clear,
        |f| f.to_bytes(),
        ExternallyLockedQf::check_invariants,
    );
}

#[test]
fn two_bit() {
    let make = || TwoBitQf::new(CAPACITY, FPR).unwrap();
    check(
        "TwoBitQf",
        make(),
        make(),
        removing,
        TwoBitQf::clear,
        TwoBitQf::to_bytes,
        TwoBitQf::check_invariants,
    );
}

#[test]
fn counting() {
    let make = || CountingQf::new(CAPACITY, FPR).unwrap();
    let filter = make();
    // Counts beyond one slot, so the counters and the regions' 128-bit counts are in use.
    filter.insert_count(&"many", u64::MAX).unwrap();
    filter.insert_count(&"more", u64::MAX).unwrap();
    check(
        "CountingQf",
        filter,
        make(),
        removing,
        CountingQf::clear,
        |f| f.to_bytes(),
        CountingQf::check_invariants,
    );
}

#[test]
fn linear_probing() {
    let make = || LinearProbingQf::new(CAPACITY, FPR).unwrap();
    check(
        "LinearProbingQf",
        make(),
        make(),
        ignore,
        LinearProbingQf::clear,
        |f| f.to_bytes(),
        LinearProbingQf::check_invariants,
    );
}

#[test]
fn bloom() {
    let make = || AtomicBloomFilter::new(CAPACITY, FPR).unwrap();
    check(
        "AtomicBloomFilter",
        make(),
        make(),
        ignore,
        AtomicBloomFilter::clear,
        |f| f.to_bytes(),
        |_| Ok(()),
    );
}

#[test]
fn cuckoo() {
    let make = || LockFreeCuckooFilter::new(CAPACITY, FPR).unwrap();
    check(
        "LockFreeCuckooFilter",
        make(),
        make(),
        removing,
        LockFreeCuckooFilter::clear,
        LockFreeCuckooFilter::to_bytes,
        LockFreeCuckooFilter::check_invariants,
    );
    let make = || LockedCuckooFilter::new(CAPACITY, FPR).unwrap();
    check(
        "LockedCuckooFilter",
        make(),
        make(),
        removing,
        LockedCuckooFilter::clear,
        |f| f.to_bytes(),
        LockedCuckooFilter::check_invariants,
    );
}

#[test]
fn growable() {
    let mut filter = LocallyLockedQf::growable(100, FPR).build().unwrap();
    for k in 0..CAPACITY as u64 {
        filter.insert(&k).unwrap();
    }
    let (doublings, memory) = (filter.doublings(), filter.memory_bytes());
    assert!(doublings > 0);
    filter.clear();
    assert!(filter.is_empty() && probes().all(|k| !filter.contains(&k)));
    filter.check_invariants().unwrap();
    assert_eq!(
        (filter.doublings(), filter.memory_bytes()),
        (doublings, memory)
    );
    // It keeps doubling as far as it could before.
    let mut k = 0u64;
    while filter.doublings_possible() > 0 {
        filter.insert(&k).unwrap();
        k += 1;
    }
    assert!((0..k).all(|key| filter.contains(&key)));
    filter.check_invariants().unwrap();
}

#[test]
fn expandable() {
    for cascading in [false, true] {
        let make = || {
            ExpandableQf::builder(200, FPR)
                .cascading(cascading)
                .build()
                .unwrap()
        };
        let filter = make();
        for k in 0..CAPACITY as u64 {
            filter.insert(&k).unwrap();
        }
        assert!(filter.levels() > 2);
        check(
            "ExpandableQf",
            filter,
            make(),
            removing,
            ExpandableQf::clear,
            ExpandableQf::to_bytes,
            ExpandableQf::check_invariants,
        );
    }
}
