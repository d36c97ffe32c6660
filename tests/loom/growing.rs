//! Loom models of `GrowableQf`'s concurrent migration (paper 000 §3.2, "Growing concurrently"),
//! each named after the hazard it checks.
//!
//! The table starts with 16 canonical slots of 13-bit remainders (16-bit slots, 4 per group) and
//! grows once: its fill threshold is 4 keys, three are stored before the threads start, and one
//! thread's insert reaches the threshold and starts the migration while the other thread inserts,
//! queries or removes in the same cluster. Migration blocks are 8 slots, so both threads can
//! share the migration. One model narrows the remainders to 7 bits so that the copies of two
//! blocks meet in one group of the doubled table. After every interleaving: no key lost or
//! resurrected, the doubled table's invariants hold, and (loom checks this itself) nobody
//! deadlocks.
//!
//! One model's table cannot double at all (one remainder bit, so `QfTable::doubled` refuses):
//! `a_failed_doubling_ends_every_insert` races two inserts into its last free slot, so that both
//! try to grow and the growth fails, and checks that both return, `Ok` or `Full`, with nothing
//! lost or added, and that later inserts into the full table return `Full` at once.
//!
//! One model runs one migration block directly against a `LocallyLockedQf` (through
//! `conqf::migration_loom`), so that one thread can play several operations that started before
//! the migration: the freeze's re-read case of `migration.rs`'s module doc, which takes three
//! threads or more through `GrowableQf`. Another runs three threads (an insert that migrates, a
//! locked removal and a query), at one preemption: the tables' shift regions, which let a
//! query's miss stand without the read lock, must count the removal's shift on the old table.
//!
//! Resting on argument only, not on these models: reclamation (under loom replaced tables are
//! kept until the filter drops, see `reclaim.rs`, so the epoch collector is not modelled) and
//! chained migrations (no model doubles more than once).

use conqf::migration_loom::BlockMigration;
use conqf::{Error, Filter, Fingerprint, GrowableQf, LocallyLockedQf, Merge, Remove};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;

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
    let hashes: Vec<u64> = keys.iter().map(|&(q, r)| key(q, r)).collect();
    filter_of(R, &hashes)
}

/// A filter of `remainder_bits`-bit remainders holding `hashes` (three: one short of growing).
fn filter_of(remainder_bits: u32, hashes: &[u64]) -> Arc<GrowableQf> {
    Arc::new(growable_of(remainder_bits, hashes))
}

/// [`filter_of`], not shared yet.
fn growable_of(remainder_bits: u32, hashes: &[u64]) -> GrowableQf {
    let filter = LocallyLockedQf::growable(1, 0.5)
        .delta_grow(0.25)
        .max_doublings(1)
        .migration_block_slots(8)
        .build_with_bits(Q, remainder_bits)
        .unwrap();
    for &hash in hashes {
        assert!(filter.insert_hash(hash).unwrap());
    }
    assert_eq!(filter.doublings(), 0);
    filter
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

/// A filter and how many of one thread's inserts have returned.
struct Watched {
    filter: GrowableQf,
    returned: AtomicUsize,
}

/// A `&self` snapshot racing an insert that grows the table (it stores its key, then starts and
/// runs the migration): the snapshot reads whichever table is current when it starts, the old
/// one even while the migration freezes it, and must be a valid table holding the stored keys,
/// and the insert's key if the insert returned before it began.
#[test]
fn snapshot_racing_a_doubling_holds_every_finished_insert() {
    copy_racing_a_doubling(|filter| filter.snapshot().unwrap());
}

/// [`snapshot_racing_a_doubling_holds_every_finished_insert`] with a merge of the growing filter
/// and an empty one of its shape, which reads the growing filter's current table as the
/// snapshot does.
#[test]
fn merge_racing_a_doubling_holds_every_finished_insert() {
    copy_racing_a_doubling(|filter| filter.merge(&growable_of(R, &[])).unwrap());
}

/// Races `copy` of a filter holding [`STORED`] against an insert that grows it: the copy must
/// be a valid table holding the stored keys, and the insert's key if the insert returned before
/// the copy began.
fn copy_racing_a_doubling(copy: fn(&GrowableQf) -> GrowableQf) {
    const INSERTED: [(u64, u64); 1] = [(6, 3)];
    // One preemption: the sweep, the migration and the build make millions of executions at two.
    super::check(Some(1), move || {
        let hashes: Vec<u64> = STORED.iter().map(|&(q, r)| key(q, r)).collect();
        let watched = Arc::new(Watched {
            filter: growable_of(R, &hashes),
            returned: AtomicUsize::new(0),
        });
        super::race(
            &watched,
            |w| {
                for (i, (q, r)) in INSERTED.into_iter().enumerate() {
                    assert!(w.filter.insert_hash(key(q, r)).unwrap());
                    // Release: the copy that reads this count happens after the insert.
                    w.returned.store(i + 1, Ordering::Release);
                }
            },
            move |w| {
                // Acquire: pairs with the Release above.
                let returned = w.returned.load(Ordering::Acquire);
                let copied = copy(&w.filter);
                copied.check_invariants().unwrap();
                // The copy's growth state is its table's: every doubling moved one remainder
                // bit into the quotient, and it may double as often as that table still could.
                assert_eq!(copied.quotient_bits(), Q + copied.doublings());
                assert_eq!(copied.doublings_possible(), 1 - copied.doublings());
                for k in hashes.iter().copied() {
                    assert!(copied.contains_hash(k), "a stored key is missing");
                }
                for &(q, r) in &INSERTED[..returned] {
                    assert!(
                        copied.contains_hash(key(q, r)),
                        "a finished insert is missing"
                    );
                }
                assert!((3 + returned..=4).contains(&copied.len()));
            },
        );
        assert_eq!(watched.filter.doublings(), 1);
    });
}

/// An insert into the cluster the migration is copying: it lands either in the old table before
/// its supercluster is frozen (and is copied) or in the new table, never in between.
#[test]
fn insert_racing_a_migration_is_not_lost() {
    model(|| {
        let filter = filter();
        let (first, second) = super::race(
            &filter,
            |x| insert_and_find(x, key(3, 7)),
            |y| insert_and_find(y, key(6, 3)),
        );
        assert!(first && second);
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
        let (inserted, ()) = super::race(
            &filter,
            |x| x.insert_hash(key(6, 9)).unwrap(),
            |y| {
                assert!(y.contains_hash(stored(2)));
                assert!(y.contains_hash(stored(0)));
            },
        );
        assert!(inserted);
        assert_eq!(filter.doublings(), 1);
        filter.check_invariants().unwrap();
    });
}

/// A removal racing the migration: the removed key must not come back through the copy.
#[test]
fn removal_racing_a_migration_is_not_undone() {
    model(|| {
        let filter = filter();
        let (inserted, removed) = super::race(
            &filter,
            |x| x.insert_hash(key(2, 5)).unwrap(),
            |y| y.remove_hash(stored(1)).unwrap(),
        );
        assert!(inserted && removed);
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
        let (first, second) = super::race(
            &filter,
            |x| insert_and_find(x, key(1, 4)),
            |y| insert_and_find(y, key(7, 3)),
        );
        assert!(first && second);
        assert_eq!(filter.doublings(), 1);
        for (quotient, remainder) in HELD.into_iter().chain([(1, 4), (7, 3)]) {
            assert!(filter.contains_hash(key(quotient, remainder)));
        }
        assert_eq!(filter.len(), 5);
        filter.check_invariants().unwrap();
    });
}

/// Remainder bits of the model whose copies share a group of the doubled table: after the
/// doubling remainders have 6 bits, so slots 9 and a group holds 7 (slots 14-20 form group 2).
/// With 16-bit slots (4 per group) two copies never share one: a supercluster of old slots
/// `from..to` writes target slots `2 from..2 to`, the next starts at `2 to + 2` at the earliest,
/// and a 4-slot group cannot hold both `2 to - 1` and `2 to + 2`.
const NARROW_R: u32 = 7;

/// The hash of fingerprint `(quotient, remainder)` with `NARROW_R` remainder bits.
fn narrow_key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << NARROW_R) | remainder) << (64 - Q - NARROW_R)
}

/// Two helpers copying superclusters that start in different blocks into one group of the
/// doubled table: the supercluster of old slots 6-7 (block 0, ended by the empty slot 8) goes to
/// target slots 12-15, its second element (top remainder bit set) to slot 15; the one at old
/// slot 9 (block 1) to slot 19. Both copies write group 2, so each must OR its lanes into it:
/// a plain load and store by either could wipe the other's bits.
#[test]
fn helpers_sharing_a_target_group_lose_no_bit() {
    let high = 1 << (NARROW_R - 1);
    let held = [
        narrow_key(6, 1),
        narrow_key(7, high | 1),
        narrow_key(9, high | 2),
    ];
    model(move || {
        let filter = filter_of(NARROW_R, &held);
        let (first, second) = super::race(
            &filter,
            |x| insert_and_find(x, narrow_key(2, 5)),
            |y| insert_and_find(y, narrow_key(12, 3)),
        );
        assert!(first && second);
        assert_eq!(filter.doublings(), 1);
        for k in held
            .into_iter()
            .chain([narrow_key(2, 5), narrow_key(12, 3)])
        {
            assert!(filter.contains_hash(k));
        }
        assert_eq!(filter.len(), 5);
        filter.check_invariants().unwrap();
    });
}

/// Migration blocks of 6 slots, which do not line up with the 4-slot groups: the second block
/// starts at slot 6, in the same group as slot 5, the slot its fence locks. A removal shortens
/// the cluster of slots 4-6 across that boundary while an insert triggers the migration: every
/// supercluster must be copied exactly once, the removed key must be gone and the others kept.
#[test]
fn removal_at_a_migration_block_boundary_inside_a_group_copies_each_key_once() {
    model(|| {
        let filter = LocallyLockedQf::growable(1, 0.5)
            .delta_grow(0.25)
            .max_doublings(1)
            .migration_block_slots(6)
            .build_with_bits(Q, R)
            .unwrap();
        for (q, r) in [(4, 1), (4, 2), (5, 1)] {
            assert!(filter.insert_hash(key(q, r)).unwrap());
        }
        let filter = Arc::new(filter);
        let (inserted, removed) = super::race(
            &filter,
            |x| insert_and_find(x, key(5, 7)),
            |y| y.remove_hash(key(4, 2)).unwrap(),
        );
        assert!(inserted && removed);
        // The insert makes the fourth key, the growth threshold, unless the removal came first.
        assert!(!filter.contains_hash(key(4, 2)));
        for k in [key(4, 1), key(5, 1), key(5, 7)] {
            assert!(filter.contains_hash(k));
        }
        assert_eq!(filter.len(), 3);
        filter.check_invariants().unwrap();
    });
}

/// Quotient bits of the model whose doubling fails (`a_failed_doubling_ends_every_insert`). Its
/// remainders have one bit, none left to move into the quotient, so `QfTable::doubled` refuses
/// although `max_doublings(1)` still allows a doubling, and the thread that claimed the growth
/// stores `FAILED`. The table must report `Full` before its fill reaches the growth threshold:
/// otherwise an insert of the setup would claim (and fail) the growth before the threads start.
/// An insert is `Full` when its run would reach the last slot, `2 + 4 * 2^ceil(q / 2)` slots past
/// the `2^q` canonical ones, and a quotient has only two one-bit fingerprints, so the cluster
/// that gets there holds at least `2 * (2 + 4 * 2^ceil(q / 2)) - 2` keys; the threshold is at
/// most `0.9 * 2^q`. Eight quotient bits is the smallest table where that cluster stays below
/// the threshold (130 keys against at most 230; with seven, 130 against at most 115).
const FAILING_Q: u32 = 8;

/// The hash of fingerprint `(quotient, remainder)` in a table of `FAILING_Q` quotient bits and
/// `remainder_bits` remainder bits.
fn failing_q_key(remainder_bits: u32, quotient: u64, remainder: u64) -> u64 {
    ((quotient << remainder_bits) | remainder) << (64 - FAILING_Q - remainder_bits)
}

/// A growable table of `FAILING_Q` quotient bits and `remainder_bits` remainder bits that may
/// double once, at 132 keys, filled to one key short of that ([`one_short_of_full`]), and two
/// inserts racing for its last free slot, the two fingerprints of quotient 255 (with
/// `preemptions` and `max_branches` for loom): `check` gets the filter, the two keys and what
/// each insert returned.
fn race_for_the_last_free_slot(
    remainder_bits: u32,
    (preemptions, max_branches): (usize, usize),
    check: impl Fn(Arc<GrowableQf>, [u64; 2], [Result<bool, Error>; 2]) + Sync + Send + 'static,
) {
    let keys = [0, 1].map(|remainder| failing_q_key(remainder_bits, 255, remainder));
    super::check_with_branches(Some(preemptions), Some(max_branches), move || {
        let filter = LocallyLockedQf::growable(1, 0.5)
            // A threshold of 132 keys (exact in binary): one more than the setup stores.
            .delta_grow(132.0 / 256.0)
            .max_doublings(1)
            .build_with_bits(FAILING_Q, remainder_bits)
            .unwrap();
        for (quotient, remainder) in one_short_of_full() {
            let key = failing_q_key(remainder_bits, quotient, remainder);
            assert!(filter.insert_hash(key).unwrap());
        }
        assert_eq!(filter.len(), 131);
        let filter = Arc::new(filter);
        let [first_key, second_key] = keys;
        let (first, second) = super::race(
            &filter,
            move |x| x.insert_hash(first_key),
            move |y| y.insert_hash(second_key),
        );
        check(filter, keys, [first, second]);
    });
}

/// The keys stored before the threads of `a_failed_doubling_ends_every_insert` start: both
/// fingerprints of quotients 189 to 253 and the first of 254, 131 keys filling slots 189-319 in
/// order. Slot 320 is the last that may be filled (the table has 256 + 66 slots and the last
/// stays empty), so one more key fits and the next is `Full`.
fn one_short_of_full() -> impl Iterator<Item = (u64, u64)> {
    (189..254)
        .flat_map(|quotient| [(quotient, 0), (quotient, 1)])
        .chain([(254, 0)])
}

/// Two inserts into a table one key short of both its growth threshold (132 keys) and of full,
/// whose doubling fails: the insert that takes the last slot reaches the threshold and tries to
/// grow, the other finds the table full and tries to grow too. Either may claim the growth;
/// whoever claims it finds that the table cannot double and stores `FAILED`. The other either
/// meets `FAILED` and gives up, or meets `CLAIMED` before the failure is stored, with no
/// migration published, and must wait and retry until it meets `FAILED`: with the table full,
/// an insert that waited for a migration that never comes would spin for ever (loom reports it
/// when the execution passes its branch limit). After every interleaving: exactly one insert
/// stored its key and the other returned `Full`, the table holds exactly the keys it held plus
/// that one, its length says so, it did not double, and a third insert that finds it full
/// returns `Full` at once instead of waiting for a growth that will never happen.
///
/// The setup of 131 inserts makes thousands of atomic accesses before the threads start, hence
/// the raised branch limit.
#[test]
fn a_failed_doubling_ends_every_insert() {
    race_for_the_last_free_slot(
        1,
        (2, 100_000),
        |filter, [first_key, second_key], outcomes| {
            // Both keys belong in slot 320, the last free one: one insert gets it.
            let (stored, refused) = match outcomes {
                [Ok(true), Err(Error::Full)] => (first_key, second_key),
                [Err(Error::Full), Ok(true)] => (second_key, first_key),
                outcomes => panic!("the inserts returned {outcomes:?}"),
            };
            assert!(filter.contains_hash(stored), "a stored key is missing");
            assert!(!filter.contains_hash(refused), "a refused key was stored");
            assert_eq!(filter.doublings(), 0);
            assert_eq!(filter.len(), 132);
            filter.check_invariants().unwrap();
            // The other fingerprint of quotient 254 would shift quotient 255's run into the last
            // slot: the table is full, and with the growth failed the insert must say so.
            assert_eq!(
                filter.insert_hash(failing_q_key(1, 254, 1)),
                Err(Error::Full)
            );
            assert_eq!(filter.len(), 132);
            // Every fingerprint, not only the ones queried: the failed claim and the refused
            // inserts changed nothing else.
            let table = Arc::try_unwrap(filter)
                .unwrap_or_else(|_| panic!("the threads still hold the filter"))
                .into_inner();
            let mut expected: Vec<Fingerprint> = one_short_of_full()
                .map(|(quotient, remainder)| Fingerprint {
                    quotient,
                    remainder,
                })
                .chain([Fingerprint {
                    quotient: 255,
                    remainder: u64::from(stored == second_key),
                }])
                .collect();
            expected.sort_unstable();
            assert_eq!(table.fingerprints().collect::<Vec<_>>(), expected);
        },
    );
}

/// The freeze of one migration block against operations that started before the migration
/// (run directly on a `LocallyLockedQf` through `conqf::migration_loom`, so one thread can run
/// what would be three threads' operations). The block's freeze scans the stretch from slot 0:
/// table 0:(0,10) 1:(1,1) 2:(1,2) 3:(1,3) 4:(4,7). The other thread removes (4,7) (with one
/// CAS of group 1 while that group holds no lock, emptying slot 4 behind the scan, which then
/// puts its migration lock on slot 5; before the lock-free removal it held slot 5, where the
/// scan waited), removes (1,1) (emptying slot 3, behind a re-read of the stretch that went left
/// to right), inserts (4,9) (refilling slot 4 before such a re-read got there, which then
/// passed and the block went on after slot 5) and inserts (1,4) into slot 3, which nothing had
/// locked: that key was stored and not copied. The
/// copy must hold exactly the keys the old table held once both threads were done, whichever
/// operations got in before the migration locks.
#[test]
fn a_removal_behind_the_freeze_scan_hides_an_empty_slot() {
    model(|| {
        let old = LocallyLockedQf::with_bits(Q, R).unwrap();
        let stored = [(0, 10), (1, 1), (1, 2), (1, 3), (4, 7)];
        for (q, r) in stored {
            assert!(old.insert_hash(key(q, r)).unwrap());
        }
        let migration = Arc::new(BlockMigration::new(old));
        let (_, outcomes) = super::race(
            &migration,
            |m| m.migrate(),
            |t| {
                [
                    t.remove(key(4, 7)),
                    t.remove(key(1, 1)),
                    t.insert(key(4, 9)),
                    t.insert(key(1, 4)),
                ]
            },
        );
        // What the old table held once both threads were done: an operation that met a
        // migration lock changed nothing.
        let mut held: Vec<u64> = stored.iter().map(|&(q, r)| key(q, r)).collect();
        let [first, second, third, fourth] = outcomes;
        if first == Some(true) {
            held.retain(|&k| k != key(4, 7));
        }
        if second == Some(true) {
            held.retain(|&k| k != key(1, 1));
        }
        if third == Some(true) {
            held.push(key(4, 9));
        }
        if fourth == Some(true) {
            held.push(key(1, 4));
        }
        assert!(outcomes.iter().all(|&o| o != Some(false)), "{outcomes:?}");
        migration.check_copy(&held).unwrap();
    });
}

/// [`a_failed_doubling_ends_every_insert`] with two remainder bits, so the doubling succeeds:
/// the insert that takes the last free slot reaches the threshold and grows the table, the
/// other finds the table full and tries to grow too. If it meets the growth claimed but no
/// migration published yet (the claimant is still allocating the doubled table), it must wait
/// and retry, not return `Full`: the table is about to double, and both inserts must store
/// their keys.
#[test]
fn an_insert_that_finds_the_table_full_while_it_doubles_is_not_refused() {
    race_for_the_last_free_slot(
        2,
        (1, 1_000_000),
        |filter, [first_key, second_key], outcomes| {
            assert_eq!(outcomes, [Ok(true), Ok(true)]);
            assert_eq!(filter.doublings(), 1);
            assert!(filter.contains_hash(first_key) && filter.contains_hash(second_key));
            assert_eq!(filter.len(), 133);
        },
    );
}

/// A query for `stored(2)` (canonical slot 7 in group 1, stored in slot 8 in group 2: a walk
/// over two groups) while a locked removal of `stored(1)` shifts it from slot 8 into slot 7 and
/// an insert on a third thread reaches the growth threshold and migrates if it lands before the
/// removal (the migration waits at the removal's write lock while the removal is in flight).
/// The query's miss may stand on the old table's shift region, so it must never miss the key:
/// the one model in which a growing table's locked shift, left uncounted in its region, makes a
/// query lose a key (from a review of the regions in growing tables, which measured it failing
/// with the removal's count dropped).
#[test]
fn a_query_beside_a_removal_finishing_on_the_old_table_during_a_migration_never_misses() {
    super::check_with_branches(Some(1), Some(100_000), || {
        let filter = filter();
        let (a, b, c) = (filter.clone(), filter.clone(), filter.clone());
        let insert = loom::thread::spawn(move || a.insert_hash(key(2, 5)).unwrap());
        let remove = loom::thread::spawn(move || b.remove_hash(stored(1)).unwrap());
        let query = loom::thread::spawn(move || c.contains_hash(stored(2)));
        assert!(insert.join().unwrap() && remove.join().unwrap());
        assert!(query.join().unwrap(), "a false negative beside the removal");
        for k in [key(2, 5), stored(0), stored(2)] {
            assert!(filter.contains_hash(k));
        }
        assert!(!filter.contains_hash(stored(1)));
        assert_eq!(filter.len(), 3);
        filter.check_invariants().unwrap();
    });
}
