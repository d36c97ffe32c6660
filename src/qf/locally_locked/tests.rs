//! Unit tests of `LocallyLockedQf`'s fast paths and lock releases (the protocol's interleavings
//! are model-checked in `tests/loom/`).

use super::locks::Locked;
use super::*;
use crate::qf::slot::{Slot, STATUS_MASK};
use crate::qf::walk::KEEP_OCCUPIED;
use crate::storage::Rewriter;

fn key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << 13) | remainder) << (64 - 16)
}

/// Slots of 16 bits, 4 per group; quotient 2's run fills slots 2-4 and quotient 5 starts a
/// cluster at slot 5, so slot 6 ends the supercluster.
fn filter() -> LocallyLockedQf {
    filter_with(&[key(2, 1), key(2, 2), key(2, 3), key(5, 1)])
}

/// A table of 8 slots of 16 bits (4 per group) holding `keys`.
fn filter_with(keys: &[u64]) -> LocallyLockedQf {
    let mut sequential = SequentialQf::with_bits(3, 13).unwrap();
    for &k in keys {
        sequential.insert_hash(k).unwrap();
    }
    LocallyLockedQf::from_sequential(sequential)
}

/// A query's walk without locks over a half-committed shift: level 0 of the loom model
/// `insert_if_absent_ignores_a_hit_misread_during_a_lower_level_removal`, with the removal
/// of `(2,2)` committed in group 0 (slots 0-3) but not yet in group 1. The walk for `(4,7)`
/// misreads the stale `(3,7)` in slot 4 as quotient 4's run, and must say it read more than
/// one group; a walk inside one group is exact.
#[test]
fn a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact() {
    let torn = half_committed_removal();
    let (_, misread) = torn.walk_without_locks(4, 7);
    assert!(misread.found, "the stale copy reads as quotient 4's run");
    assert!(!misread.one_group);
    assert_eq!(misread.start, Some(3));
    let (_, inside) = torn.walk_without_locks(2, 1);
    assert!(inside.found && inside.one_group);
    let (_, unoccupied) = torn.walk_without_locks(1, 7);
    assert!(!unoccupied.found && unoccupied.one_group);
}

/// The table of [`a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact`]:
/// `(2,1), (2,2), (3,7), (4,9)` with the removal of `(2,2)` committed in group 0 only.
fn half_committed_removal() -> LocallyLockedQf {
    let before = filter_with(&[key(2, 1), key(2, 2), key(3, 7), key(4, 9)]);
    let after = filter_with(&[key(2, 1), key(3, 7), key(4, 9)]);
    let group_0 = after.table.slots.load_group(0, Ordering::Relaxed);
    before
        .table
        .slots
        .store_group(0, group_0, Ordering::Relaxed);
    before
}

/// In the torn table above, the walk for the stored `(4,9)` misses over two groups, and cannot
/// tell: so its miss stands only if no locked shift of the region was in flight at any moment
/// of it. Counted in flight (as the removal that tore it would be) before the walk, or started
/// during it, the shift makes the miss go to the locked query.
#[test]
fn a_miss_stands_only_if_no_locked_shift_was_in_flight_during_the_walk() {
    let torn = half_committed_removal();
    let layout = torn.table.slots.layout();
    let (quiet, walk) = torn.walk_without_locks(4, 9);
    assert!(!walk.found && !walk.one_group, "a miss over two groups");
    assert!(
        torn.shifts.walk_stands(quiet, &walk),
        "no shift counted: the miss stands"
    );

    let shifting = torn.shifting(layout, 2, 6);
    let (quiet, walk) = torn.walk_without_locks(4, 9);
    assert!(
        !torn.shifts.walk_stands(quiet, &walk),
        "a shift in flight before the walk"
    );
    drop(shifting);

    let (quiet, walk) = torn.walk_without_locks(4, 9);
    drop(torn.shifting(layout, 2, 6));
    assert!(
        !torn.shifts.walk_stands(quiet, &walk),
        "a shift started during the walk"
    );
}

#[test]
fn fast_path_insert_refuses_a_group_holding_a_write_lock() {
    let filter = filter();
    // As if a locked insert into quotient 2 held the supercluster's end.
    assert!(filter.update_slot(6, |now| (now == 0).then_some(WRITE_LOCK)));
    assert_eq!(filter.insert_in_group(&filter.table.slots, 5, 9), None);
    assert_eq!(filter.table.slots.get(6, Ordering::Relaxed), WRITE_LOCK);
    filter.unlock_write(6);
    assert_eq!(
        filter.insert_in_group(&filter.table.slots, 5, 9),
        Some(Ok(true))
    );
    filter.check_invariants().unwrap();
}

/// A walk whose cluster crosses from one shift region into the next reads groups that another
/// region's word counts shifts of, so its miss never stands on its own region's word.
#[test]
fn a_miss_read_across_two_shift_regions_goes_to_the_locked_query() {
    use crate::qf::shift_regions::REGION_GROUPS;
    // Two regions of `REGION_GROUPS` groups of 4 slots.
    let q = (2 * REGION_GROUPS * 4).trailing_zeros();
    let key = |quotient: usize, remainder: u64| ((quotient as u64) << 13 | remainder) << (51 - q);
    let boundary = REGION_GROUPS * 4;
    let mut sequential = SequentialQf::with_bits(q, 13).unwrap();
    // Quotient `boundary - 3`'s run fills the last three slots of region 0; quotient
    // `boundary - 2`'s element is shifted into the first slot of region 1.
    for k in [(3, 1), (3, 2), (3, 3), (2, 1)] {
        sequential.insert_hash(key(boundary - k.0, k.1)).unwrap();
    }
    let filter = LocallyLockedQf::from_sequential(sequential);
    let (quiet, walk) = filter.walk_without_locks(boundary - 2, 9);
    let (last_region_0, first_region_1) = (REGION_GROUPS - 1, REGION_GROUPS);
    assert_eq!(walk.groups, Some((last_region_0, first_region_1)));
    assert!(!walk.found && !quiet.shift_in_flight());
    assert!(!filter.shifts.walk_stands(quiet, &walk));
    assert!(filter.contains_hash(key(boundary - 2, 1)));
    assert!(!filter.contains_hash(key(boundary - 2, 9)));
}

#[test]
fn fast_path_insert_refuses_a_group_holding_a_read_lock() {
    let filter = filter();
    assert_eq!(filter.lock_cluster_start(5), Some(5));
    assert_eq!(filter.insert_in_group(&filter.table.slots, 5, 9), None);
    // Queries still answer from the group, reading through the lock.
    let (_, walk) = filter.walk_without_locks(5, 1);
    assert!(walk.found && walk.one_group);
    filter.unlock_read(5);
    filter.check_invariants().unwrap();
}

/// Quotient 1's run fills slots 1-3, the rest of group 0: an insert there would shift into
/// group 1, so the one-group path answers only duplicates and leaves the rest to the locked
/// path, changing nothing.
#[test]
fn fast_path_insert_into_a_group_without_room_answers_only_duplicates() {
    let filter = filter_with(&[key(1, 1), key(1, 2), key(1, 3)]);
    let slots = &filter.table.slots;
    let before = slots.load_group(0, Ordering::Relaxed);
    assert_eq!(filter.insert_in_group(slots, 1, 2), Some(Ok(false)));
    assert_eq!(filter.insert_in_group(slots, 1, 9), None);
    assert_eq!(filter.insert_in_group(slots, 2, 5), None);
    assert_eq!(slots.load_group(0, Ordering::Relaxed), before);
    // Slot 0 is empty, so quotient 0 still inserts inside the group.
    assert_eq!(filter.insert_in_group(slots, 0, 5), Some(Ok(true)));
    assert_eq!(filter.insert_hash(key(1, 9)), Ok(true));
    assert!(filter.contains_hash(key(1, 9)) && filter.contains_hash(key(0, 5)));
    filter.check_invariants().unwrap();
}

/// The one-group removal: slots 2-4 hold quotient 2's run and slot 5 quotient 5's, slots
/// 6 and 7 are empty. Group 1 (slots 4-7) holds a cluster start with room after it, so
/// quotient 5 removes there (the canonical slot loses its occupied bit) and answers an
/// absent key; quotient 2's walk leaves group 0 (its run ends in group 1), so it takes the
/// locked path.
#[test]
fn fast_path_removal_acts_inside_one_group_only() {
    let filter = filter();
    let slots = &filter.table.slots;
    assert_eq!(filter.remove_in_group(slots, 2, 3), None);
    assert_eq!(filter.remove_in_group(slots, 5, 9), Some(false));
    assert_eq!(filter.remove_in_group(slots, 6, 9), Some(false));
    assert_eq!(filter.remove_in_group(slots, 5, 1), Some(true));
    assert_eq!(filter.len(), 3);
    assert!(!filter.contains_hash(key(5, 1)));
    assert!((1..=3).all(|r| filter.contains_hash(key(2, r))));
    filter.check_invariants().unwrap();
    assert_eq!(filter.remove_hash(key(2, 3)), Ok(true));
    assert_eq!(filter.len(), 2);
    filter.check_invariants().unwrap();
}

/// A removal inside group 1 whose shift left moves the next run's head into its canonical
/// slot, which starts a new cluster there: written as a plain cluster start (`100`), not
/// read-locked as the locked removal writes it, since one CAS leaves nothing to unlock.
#[test]
fn fast_path_removal_lands_a_run_head_home_unlocked() {
    let filter = filter_with(&[key(4, 1), key(4, 2), key(5, 3)]);
    assert_eq!(
        filter.remove_in_group(&filter.table.slots, 4, 2),
        Some(true)
    );
    let slot_5 = Slot::from_raw(filter.table.slots.get(5, Ordering::Relaxed));
    assert!(slot_5.is_cluster_start() && slot_5.raw() & READ_LOCK == 0);
    assert!(filter.contains_hash(key(4, 1)) && filter.contains_hash(key(5, 3)));
    filter.check_invariants().unwrap();
}

/// A group with a lock in it is left to the locked path, even with room for the shift: a
/// read lock on the cluster start (a locked query or writer of that cluster) or a write
/// lock at the end of the supercluster (a locked writer whose plan may cover these slots).
/// Absent keys are still answered, reading through the locks.
#[test]
fn fast_path_removal_refuses_a_group_holding_a_lock() {
    let filter = filter_with(&[key(4, 1), key(4, 2)]);
    let slots = &filter.table.slots;
    assert_eq!(filter.lock_cluster_start(4), Some(4));
    assert_eq!(filter.remove_in_group(slots, 4, 2), None);
    assert_eq!(filter.remove_in_group(slots, 4, 3), Some(false));
    filter.unlock_read(4);
    assert!(filter.update_slot(6, |now| (now == 0).then_some(WRITE_LOCK)));
    assert_eq!(filter.remove_in_group(slots, 4, 2), None);
    assert_eq!(filter.remove_in_group(slots, 4, 3), Some(false));
    filter.unlock_write(6);
    assert_eq!(filter.len(), 2);
    filter.check_invariants().unwrap();
    assert_eq!(filter.remove_in_group(slots, 4, 2), Some(true));
    filter.check_invariants().unwrap();
}

/// Group 1 full from the canonical slot on (slots 4-7 of one run): the shift left would
/// have to pull in slot 8, so the one-group path refuses, changing nothing.
#[test]
fn fast_path_removal_refuses_a_group_without_an_empty_slot_after_it() {
    let filter = LocallyLockedQf::with_bits(4, 13).unwrap();
    let key = |quotient: u64, remainder: u64| ((quotient << 13) | remainder) << (64 - 17);
    for r in 1..=5 {
        assert_eq!(filter.insert_hash(key(4, r)), Ok(true));
    }
    let slots = &filter.table.slots;
    let before = slots.load_group(1, Ordering::Relaxed);
    assert_eq!(filter.remove_in_group(slots, 4, 2), None);
    assert_eq!(slots.load_group(1, Ordering::Relaxed), before);
    assert_eq!(filter.remove_hash(key(4, 2)), Ok(true));
    assert!([1, 3, 4, 5]
        .iter()
        .all(|&r| filter.contains_hash(key(4, r))));
    filter.check_invariants().unwrap();
}

/// A removal's release of its read locks, on the configuration a review found the bug in:
/// removing `(0,0)` from slots 0-6 holding `(0,0) (0,1) (0,2) (1,3) (2,4) (3,5) (3,6)`
/// leaves slots 0-5 as one cluster read-locked at slot 0. At every step of the release,
/// each slot still to visit must lie in a cluster whose start the removal still holds:
/// otherwise another removal could lock that start and write new read-locked cluster
/// starts there, which the release would then take for its own (it did, left to right).
#[test]
fn a_removal_releases_its_read_locks_so_no_other_writer_can_lock_ahead_of_it() {
    let filter = LocallyLockedQf::with_bits(4, 13).unwrap();
    let key = |quotient: u64, remainder: u64| ((quotient << 13) | remainder) << (64 - 17);
    for (q, r) in [(0, 0), (0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (3, 6)] {
        assert_eq!(filter.insert_hash(key(q, r)), Ok(true));
    }
    // The removal of (0, 0) as `remove_locked` makes it, up to its release.
    let end = filter
        .lock_supercluster_end(&filter.table.slots, 0)
        .unwrap();
    let start = filter.lock_cluster_start(0).unwrap();
    assert_eq!((start, end), (0, 7));
    let mut cursor = filter.table.slots.cursor(0, Ordering::Acquire);
    let plan = walk::plan_remove(&mut cursor, 0, 0).unwrap().unwrap();
    let mut read = filter
        .table
        .slots
        .cursor(plan.position + 1, Ordering::Acquire);
    let mut occupied = filter.table.slots.cursor(0, Ordering::Acquire);
    let commit = Locked::new(&filter, filter.table.slots.layout(), start);
    let mut rewriter = Rewriter::new(&filter.table.slots, commit, KEEP_OCCUPIED);
    let emptied = walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, true);
    rewriter.finish();
    assert_eq!(emptied, 6);
    let slots = &filter.table.slots;
    let cluster_start_of = |mut index: usize| {
        while Slot::unlocked(slots.get(index, Ordering::Relaxed)).is_shifted() {
            index -= 1;
        }
        index
    };
    let mut to_visit: Vec<usize> = (start..emptied).collect();
    filter.unlock_reads_in_observed(start, emptied - 1, |released| {
        to_visit.retain(|i| !released.contains(i));
        for &ahead in &to_visit {
            let held = cluster_start_of(ahead);
            assert_eq!(
                slots.get(held, Ordering::Relaxed) & STATUS_MASK,
                READ_LOCK,
                "after releasing slots {released:?}, slot {ahead} still to visit lies in the \
                 cluster of slot {held}, which another writer could now lock"
            );
        }
    });
    filter.unlock_write(end);
    filter.len.decrement();
    filter.check_invariants().unwrap();
    assert!(!filter.contains_hash(key(0, 0)));
    assert!(filter.contains_hash(key(3, 6)));
}

#[test]
fn a_frozen_plan_read_locks_only_an_unlocked_cluster_start() {
    let filter = filter();
    // Slot 2 starts the cluster of quotient 2, slot 3 holds a continuation, slot 7 is empty.
    assert!(filter.read_lock_frozen(2));
    assert_eq!(
        filter.table.slots.get(2, Ordering::Relaxed) & STATUS_MASK,
        READ_LOCK
    );
    filter.unlock_read(2);
    assert!(!filter.read_lock_frozen(3));
    assert!(!filter.read_lock_frozen(7));
    filter.check_invariants().unwrap();
}

/// The lock-free insert keeps the table's last slot empty, as the locked insert and the
/// sequential one do (every walk and scan relies on it to stop). Only a table whose last slot
/// shares a group with a canonical slot lets a one-group insert reach it: `q = 2`, `r = 1`
/// gives 4-bit slots, 16 per group, so all 14 slots (4 canonical, 10 overflow) lie in group 0.
/// Thirteen copies of `(0,0)` (a build without dedupe) fill slots 0-12; inserting `(0,1)`
/// would end at slot 13, the last, so it must answer `Full`. Catches the fast path's bound
/// written `plan.end >= len` instead of `plan.end + 1 >= len`, which fills slot 13.
#[test]
fn fast_path_insert_never_fills_the_last_slot() {
    let key = |quotient: u64, remainder: u64| ((quotient << 1) | remainder) << (64 - 3);
    let filter = LocallyLockedQf::bulk_build_with(
        2,
        1,
        &[key(0, 0); 13],
        crate::BuildMethod::default(),
        crate::Dedupe::Off,
    )
    .unwrap();
    assert_eq!(filter.table.slots.len(), 14);
    assert_eq!(filter.len(), 13);
    assert!(matches!(filter.insert_hash(key(0, 1)), Err(Error::Full)));
    assert!(filter.contains_hash(key(0, 0)) && !filter.contains_hash(key(0, 1)));
    filter.check_invariants().unwrap();
}
