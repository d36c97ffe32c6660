//! Loom models of `GrowableQf`'s concurrent migration (paper 000 §3.2, "Growing concurrently"),
//! each named after the hazard it checks.
//!
//! The table starts with 16 canonical slots of 13-bit remainders (16-bit slots, 4 per group) and
//! grows once: its fill threshold is 4 keys, three are stored before the threads start, and one
//! thread's insert reaches the threshold and starts the migration while the other thread inserts,
//! queries or removes in the same cluster. Migration blocks are 8 slots, so both threads can
//! share the migration. After every interleaving: no key lost or resurrected, the doubled table's
//! invariants hold, and (loom checks this itself) nobody deadlocks.
//!
//! Resting on argument only, not on these models: reclamation (under loom replaced tables are
//! kept until the filter drops, see `reclaim.rs`, so the epoch collector is not modelled),
//! chained migrations (every model doubles once), and the three-thread re-read case in
//! `migration.rs`'s module doc.

use conqf::{Filter, GrowableQf, LocallyLockedQf, Remove};
use loom::sync::Arc;
use loom::thread;

const Q: u32 = 4;
const R: u32 = 13;

/// The hash of fingerprint `(quotient, remainder)`.
fn key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << R) | remainder) << (64 - Q - R)
}

/// Keys stored before the threads start: a cluster over slots 6-8 that crosses from group 1
/// into group 2.
const STORED: [(u64, u64); 3] = [(6, 1), (6, 2), (7, 1)];

fn stored(i: usize) -> u64 {
    let (quotient, remainder) = STORED[i];
    key(quotient, remainder)
}

/// A filter holding the `STORED` keys, one key short of growing.
fn filter() -> Arc<GrowableQf> {
    filter_holding(&STORED)
}

/// A filter holding `keys` (three of them: one key short of growing).
fn filter_holding(keys: &[(u64, u64)]) -> Arc<GrowableQf> {
    let filter = LocallyLockedQf::growable(1, 0.5)
        .delta_grow(0.25)
        .max_doublings(1)
        .migration_block_slots(8)
        .build_with_bits(Q, R)
        .unwrap();
    for &(quotient, remainder) in keys {
        assert!(filter.insert_hash(key(quotient, remainder)).unwrap());
    }
    assert_eq!(filter.doublings(), 0);
    Arc::new(filter)
}

/// Inserts `k` and checks, before the thread ends, that the inserting thread finds it.
fn insert_and_find(filter: &GrowableQf, k: u64) -> bool {
    let stored = filter.insert_hash(k).unwrap();
    assert!(
        filter.contains_hash(k),
        "the inserting thread misses its key"
    );
    stored
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    super::check(Some(2), f);
}

/// An insert into the cluster the migration is copying: it lands either in the old table before
/// its supercluster is frozen (and is copied) or in the new table, never in between.
#[test]
fn insert_racing_a_migration_is_not_lost() {
    model(|| {
        let filter = filter();
        let (x, y) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || insert_and_find(&x, key(3, 7)));
        let u = thread::spawn(move || insert_and_find(&y, key(6, 3)));
        assert!(t.join().unwrap() && u.join().unwrap());
        assert_eq!(filter.doublings(), 1);
        for k in [key(3, 7), key(6, 3), stored(0), stored(1), stored(2)] {
            assert!(filter.contains_hash(k));
        }
        assert_eq!(filter.len(), 5);
        filter.check_invariants().unwrap();
    });
}

/// Queries of stored keys while another thread's insert grows the table: they read the old
/// table during the migration and the new one after it, and find the keys in both.
#[test]
fn query_during_a_migration_never_misses() {
    model(|| {
        let filter = filter();
        let (x, y) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || x.insert_hash(key(6, 9)).unwrap());
        let u = thread::spawn(move || {
            assert!(y.contains_hash(stored(2)));
            assert!(y.contains_hash(stored(0)));
        });
        assert!(t.join().unwrap());
        u.join().unwrap();
        assert_eq!(filter.doublings(), 1);
        filter.check_invariants().unwrap();
    });
}

/// A removal racing the migration: the removed key must not come back through the copy.
#[test]
fn removal_racing_a_migration_is_not_undone() {
    model(|| {
        let filter = filter();
        let (x, y) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || x.insert_hash(key(2, 5)).unwrap());
        let u = thread::spawn(move || y.remove_hash(stored(1)).unwrap());
        assert!(t.join().unwrap() && u.join().unwrap());
        assert!(!filter.contains_hash(stored(1)));
        for k in [key(2, 5), stored(0), stored(2)] {
            assert!(filter.contains_hash(k));
        }
        assert_eq!(filter.len(), 3);
        filter.check_invariants().unwrap();
    });
}

/// The start of a block's first supercluster moving left while the block is migrated: slot 7
/// (`lo - 1` of the block starting at slot 8) is empty, so the block's helper migration-locks
/// it through `fence`'s empty branch, unless the racing insert at quotient 7 fills it between
/// the freeze of slot 8's supercluster and the fence; then the supercluster starting at 7
/// belongs to block 0. Either thread may start the migration and both help with it.
#[test]
fn insert_filling_the_slot_before_a_block_is_not_lost() {
    const HELD: [(u64, u64); 3] = [(8, 1), (8, 2), (2, 1)];
    model(|| {
        let filter = filter_holding(&HELD);
        let (x, y) = (filter.clone(), filter.clone());
        let t = thread::spawn(move || insert_and_find(&x, key(1, 4)));
        let u = thread::spawn(move || insert_and_find(&y, key(7, 3)));
        assert!(t.join().unwrap() && u.join().unwrap());
        assert_eq!(filter.doublings(), 1);
        for (quotient, remainder) in HELD.into_iter().chain([(1, 4), (7, 3)]) {
            assert!(filter.contains_hash(key(quotient, remainder)));
        }
        assert_eq!(filter.len(), 5);
        filter.check_invariants().unwrap();
    });
}
