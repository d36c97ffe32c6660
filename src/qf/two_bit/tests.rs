//! Unit tests of [`TwoBitQf`](super::TwoBitQf)'s protocol on hand-built tables: torn walks,
//! shift regions, the locks and the paths that take them.

use super::table::{element, LOCK, OCCUPIED};
use super::*;
use crate::qf::shift_regions::QuietRegion;
use crate::qf::walk::UnlockedWalk;
use crate::storage::Recorder;

/// The hash of fingerprint `(quotient, remainder)` in a table of `2^3` slots and 14-bit
/// remainders (16-bit slots, 4 per group).
fn key(quotient: u64, remainder: u64) -> u64 {
    ((quotient << 14) | remainder) << (64 - 17)
}

fn filter(keys: &[u64]) -> TwoBitQf {
    let filter = TwoBitQf::with_bits(3, 14).unwrap();
    for &k in keys {
        assert_eq!(filter.insert_hash(k), Ok(true));
    }
    filter.check_invariants().unwrap();
    filter
}

/// A query's walk without locks over a half-committed removal: the removal of `(1,2)` from
/// the supercluster in slots 2-5 committed in group 0 (slots 0-3) but not yet in group 1.
/// The walk for `(3,7)` (canonical slot 4) counts the moved `(2,7)` in slot 3 as a run that
/// is passed, then takes its stale copy in slot 4 for quotient 3's run: a misread hit, which
/// must not be called exact. Walks inside one group are.
#[test]
fn a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact() {
    let torn = half_committed_removal();
    let (_, misread) = walk_without_locks(&torn, 4, 7);
    assert!(misread.found, "the stale copy reads as quotient 3's run");
    assert!(!misread.one_group);
    assert_eq!(misread.start, Some(1));
    let (_, inside) = walk_without_locks(&torn, 2, 1);
    assert!(inside.found && inside.one_group);
    let (_, unoccupied) = walk_without_locks(&torn, 6, 7);
    assert!(!unoccupied.found && unoccupied.one_group);
}

/// The table of [`a_walk_over_a_half_committed_shift_may_misread_and_is_not_called_exact`]:
/// `(1,1), (1,2), (2,7), (3,9)` with the removal of `(1,2)` committed in group 0 only.
fn half_committed_removal() -> TwoBitQf {
    half_committed(
        &[key(1, 1), key(1, 2), key(2, 7), key(3, 9)],
        &[key(1, 1), key(2, 7), key(3, 9)],
    )
}

/// The table holding `before`, with group 0 (slots 0-3) replaced by that of the table
/// holding `after`: a shift committed in group 0 but not yet in group 1.
fn half_committed(before: &[u64], after: &[u64]) -> TwoBitQf {
    let (torn, after) = (filter(before), filter(after));
    let group_0 = after.table.slots.load_group(0, Ordering::Relaxed);
    torn.table.slots.store_group(0, group_0, Ordering::Relaxed);
    torn
}

fn walk_without_locks(
    filter: &TwoBitQf,
    quotient: usize,
    remainder: u64,
) -> (QuietRegion, UnlockedWalk) {
    filter.walk_without_locks(&Recorder::new(&filter.table.slots), quotient, remainder)
}

/// In the torn table [`half_committed_removal`], the walk for the stored `(3,9)` (canonical
/// slot 4) counts the moved `(2,7)` as a run and takes the stale copy in slot 4 for quotient
/// 3's run: a miss over two groups that cannot tell. So it stands only if no locked shift of
/// the region was in flight at any moment of the walk. Counted in flight (as the removal
/// that tore it would be) before the walk, or started during it, the shift makes the miss
/// go to the locked query.
#[test]
fn a_miss_stands_only_if_no_locked_shift_was_in_flight_during_the_walk() {
    let torn = half_committed_removal();
    let (quiet, walk) = walk_without_locks(&torn, 4, 9);
    assert!(!walk.found && !walk.one_group, "a miss over two groups");
    assert!(
        torn.shifts.walk_stands(quiet, &walk),
        "no shift counted: the miss stands"
    );

    let shifting = torn.shifting(1, 6);
    let (quiet, walk) = walk_without_locks(&torn, 4, 9);
    assert!(
        !torn.shifts.walk_stands(quiet, &walk),
        "a shift in flight before the walk"
    );
    drop(shifting);

    let (quiet, walk) = walk_without_locks(&torn, 4, 9);
    drop(torn.shifting(1, 6));
    assert!(
        !torn.shifts.walk_stands(quiet, &walk),
        "a shift started during the walk"
    );
}

/// A half-committed removal can also show more run starts than occupied slots before the
/// canonical slot, which no consistent table has: the removal of `(1,2)` moved `(2,5)` into
/// slot 3 in group 0, and group 1 still holds its old copy in slot 4. The walk for
/// `(4,6)` must give up (not panic on the count, not be called exact).
#[test]
fn a_walk_counting_more_runs_than_occupied_slots_gives_up() {
    let torn = half_committed(
        &[key(1, 1), key(1, 2), key(2, 5), key(4, 6)],
        &[key(1, 1), key(2, 5), key(4, 6)],
    );
    let (quiet, walk) = walk_without_locks(&torn, 5, 6);
    assert!(!walk.found && !walk.one_group);
    assert!(
        !torn.shifts.walk_stands(quiet, &walk),
        "a walk that gave up"
    );
}

/// A removal counts itself on each shift region its shift writes, also those it reaches
/// only on its way: here regions 0 and 1 of 1,024 one-slot groups, and no other.
#[test]
fn a_removal_shifting_into_the_next_region_counts_itself_there() {
    use crate::qf::shift_regions::REGION_GROUPS;
    // 34-bit slots, one per group: region `k` is slots `1,024 k..1,024 (k + 1)`, and
    // quotient `x` lives at slot `x + 1`.
    let filter = TwoBitQf::with_bits(12, 32).unwrap();
    let key = |quotient: usize, remainder: u64| ((quotient as u64) << 32 | remainder) << 20;
    let boundary = REGION_GROUPS;
    // Quotient `run`'s five elements fill slots `boundary - 3..=boundary + 1`, and quotient
    // 5's two stay far inside region 0.
    let run = boundary - 4;
    for remainder in 1..=5 {
        filter.insert_hash(key(run, remainder)).unwrap();
    }
    filter.insert_hash(key(5, 1)).unwrap();
    filter.insert_hash(key(5, 2)).unwrap();
    let quiet = |group: usize| (group, filter.shifts.read_begin(group));
    let stands = |(group, quiet)| filter.shifts.read_stands(quiet, group, group);
    let before = [quiet(0), quiet(boundary), quiet(2 * boundary)];

    assert_eq!(filter.remove_hash(key(5, 1)), Ok(true));
    assert!(
        !stands(before[0]),
        "the removal in region 0 counted itself there"
    );
    assert!(stands(before[1]) && stands(before[2]));

    let before = [quiet(0), quiet(boundary), quiet(2 * boundary)];
    assert_eq!(filter.remove_hash(key(run, 1)), Ok(true));
    assert!(!stands(before[0]), "the shift starts in region 0");
    assert!(!stands(before[1]), "and reaches into region 1");
    assert!(stands(before[2]), "but not region 2");
    assert!(
        !filter.shifts.read_begin(boundary).shift_in_flight(),
        "it ended"
    );
    assert!((2..=5).all(|r| filter.contains_hash(key(run, r))));

    // Now the run fills slots `boundary - 3..=boundary`: the shift's only write in region
    // 1 empties its first slot.
    let before = [quiet(0), quiet(boundary)];
    assert_eq!(filter.remove_hash(key(run, 2)), Ok(true));
    assert!(!stands(before[0]) && !stands(before[1]));

    // A removal whose canonical slot is region 1's first (its left lock, slot
    // `boundary - 4`, lies in region 0) writes nothing in region 0.
    filter.insert_hash(key(boundary - 1, 1)).unwrap();
    let before = [quiet(0), quiet(boundary)];
    assert_eq!(filter.remove_hash(key(boundary - 1, 1)), Ok(true));
    assert!(stands(before[0]) && !stands(before[1]));
    assert!((3..=5).all(|r| filter.contains_hash(key(run, r))));
    filter.check_invariants().unwrap();
}

#[test]
fn memory_counts_the_shift_regions_words() {
    // 2^20 canonical slots of 12 bits, 5 per group: 210,535 groups with the guard and the
    // overflow tail, so 206 regions of 1,024 groups, 8 bytes each.
    let filter = TwoBitQf::with_bits(20, 10).unwrap();
    let table = filter.table.slots.memory_bytes();
    let groups = filter
        .table
        .slots
        .layout()
        .groups_for(filter.table.slots.len());
    let count = filter.len.memory_bytes();
    assert_eq!(
        filter.memory_bytes(),
        table + 8 * groups.div_ceil(1024) + count
    );
    assert!(filter.memory_bytes() > table);
}

#[test]
fn fast_path_insert_refuses_a_locked_boundary() {
    // Quotient 1 (slot 2) holds one element; slot 1 is its left boundary, slot 3 its right.
    let filter = filter(&[key(1, 5)]);
    assert_eq!(filter.lock_left(2), 1);
    assert_eq!(filter.insert_in_group(2, 9), None);
    // Queries read through the lock.
    assert_eq!(filter.contains_in_group(2, 5), Some(true));
    filter.unlock(1);
    assert!(filter.try_lock(3));
    assert_eq!(filter.insert_in_group(2, 9), None);
    filter.unlock(3);
    assert_eq!(filter.insert_in_group(2, 9), Some(Ok(true)));
    filter.check_invariants().unwrap();
}

#[test]
fn fast_path_insert_losing_to_another_lane_can_plan_again_on_the_new_word() {
    // Group 1 holds slots 4-7: quotient 4's element at slot 5 (the index the walks take),
    // the insert's stretch 4-6.
    let filter = filter(&[key(4, 5)]);
    let stale = filter.table.slots.load_group(1, Ordering::Relaxed);
    // Another writer fills slot 7 (quotient 6), outside the stretch but in the group.
    assert_eq!(filter.insert_hash(key(6, 1)), Ok(true));
    let Some(Err(lost)) = filter.insert_into_word(5, 9, 1, stale) else {
        panic!("the CAS on the stale word must fail");
    };
    assert_eq!((lost.left, lost.end), (4, 6));
    let slot = |word, index| filter.table.slots.cursor_in_group(index, word).slot();
    assert!((4..=6).all(|i| slot(stale, i) == slot(lost.actual, i)));
    assert_ne!(slot(stale, 7), slot(lost.actual, 7));
    assert_eq!(
        filter.insert_into_word(5, 9, 1, lost.actual),
        Some(Ok(Ok(true)))
    );
    filter.check_invariants().unwrap();
    assert!([key(4, 5), key(4, 9), key(6, 1)]
        .iter()
        .all(|&k| filter.contains_hash(k)));
}

#[test]
fn locked_insert_into_an_empty_canonical_slot_fills_its_lock() {
    let filter = filter(&[]);
    assert_eq!(filter.insert_locked(5, 7), Some(Ok(true)));
    assert_eq!(
        filter.table.slots.get(5, Ordering::Relaxed),
        element(7, true) | OCCUPIED
    );
    filter.check_invariants().unwrap();
}

#[test]
fn insert_waits_for_the_right_lock_held_by_the_next_supercluster() {
    // Slot 2 (quotient 1) and slot 4 (quotient 3) with empty slot 3 between.
    let filter = filter(&[key(1, 5), key(3, 5)]);
    // An operation on quotient 3 holds slot 3 as its left lock.
    assert_eq!(filter.lock_left(4), 3);
    std::thread::scope(|s| {
        let waiting = s.spawn(|| filter.insert_locked(2, 9));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(filter.table.slots.get(3, Ordering::Acquire), LOCK);
        filter.unlock(3);
        assert_eq!(waiting.join().unwrap(), Some(Ok(true)));
    });
    filter.check_invariants().unwrap();
    assert!(filter.contains_hash(key(3, 5)) && filter.contains_hash(key(1, 9)));
}

#[test]
fn locked_walks_fail_when_the_boundary_is_stale() {
    // Slots 2-4 hold quotient 1's run, slot 5 quotient 3's element; slot 1 is the boundary.
    let filter = filter(&[key(1, 1), key(1, 2), key(1, 3), key(3, 4)]);
    assert_eq!(filter.lock_left(4), 1);
    let mut cursor = filter.table.slots.cursor(1, Ordering::Relaxed);
    assert!(walk::seek_run(&mut cursor, 4).is_some());
    filter.unlock(1);
    // A walk from an empty slot further left meets the empty slot 1: the caller restarts.
    let mut cursor = filter.table.slots.cursor(0, Ordering::Relaxed);
    assert!(walk::seek_run(&mut cursor, 4).is_none());
}
