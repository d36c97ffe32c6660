//! One block of a concurrent migration (paper 000 §3.2, "Growing concurrently"): copying the
//! superclusters that start in a range of the old table into the doubled table, after
//! migration-locking every empty slot on the way so no insert or removal can change what was
//! copied.
//!
//! # Why the copy is exact
//!
//! An insert or a removal changes slots only between a supercluster's start and its end, the
//! first empty slot after it, and it holds the write lock on that end while it does (the
//! lock-free fast paths of inserts and removals instead compare-and-exchange one group whose
//! snapshot held no lock and an empty slot at or after every slot they change). [`freeze`]
//! migration-locks the end `e` of the supercluster containing a filled slot `i` (waiting while
//! an operation holds it) and then re-reads `i..e`: if all of it is still filled, no operation
//! can change those slots any more, because every operation that would has to lock or fill `e`
//! (a migration lock for ever), or, lock-free, find an empty, unlocked slot after them in their
//! group: inside `i..e` there is none left, and one beyond `e` puts `e`'s lock in the group.
//! Operations in flight finish first: the migration waits for their write lock, and their
//! writes happen before the lock's release, which the migration's CAS reads.
//!
//! The re-read matters when a removal held the end while the migration scanned and emptied a
//! slot before it: that slot is then the stretch's real end, still unlocked, and an insert that
//! started before the migration could fill it after the copy. The re-read goes right to left:
//! left to right, a second removal could empty a slot the re-read had passed and an insert
//! refill the emptied end of the first before the re-read reached it (the race
//! `LocallyLockedQf`'s locked paths had), and a later insert fill the slot the second removal
//! emptied, never copied. Through `GrowableQf` these cases take a thread per operation that
//! started before the migration (three such threads did not finish in ten minutes under loom);
//! the loom model `a_removal_behind_the_freeze_scan_hides_an_empty_slot` runs a block directly
//! against such operations on one thread (`loom_hooks.rs`), and loses that
//! insert with a left-to-right re-read.
//!
//! The supercluster's *start* can still move left: an insert left of it may fill the empty slot
//! before it. So a block decides whether a supercluster at its first slot `lo` is its own only
//! after migration-locking slot `lo - 1` too ([`fence`]): if that slot is a migration lock, the
//! supercluster starts at `lo` for good; if it is filled after `lo`'s supercluster was frozen, it
//! belongs to that frozen stretch and the supercluster started in an earlier block. Every other
//! supercluster a block meets starts right after a migration lock it saw itself.
//!
//! # Why the target needs no atomics
//!
//! A supercluster of old slots `from..to` holds fingerprints whose quotients lie in `from..to`;
//! in the doubled table their canonical slots lie in `2 from..2 to`, and placing them in order
//! puts the `j`-th element at most at `2 p_j + 1 < 2 to`, where `p_j` is its old position
//! (induction: `P_j <= max(2 q_j + 1, P_{j-1} + 1) <= max(2 p_j + 1, 2 p_{j-1} + 2)`). Every target
//! slot thus has exactly one writer, the owner of the supercluster whose range covers it, and
//! since the target starts zeroed, a group owned entirely by one range is written with one plain
//! (`Relaxed`) store; only the group shared with a neighbouring range at each end gets a
//! `fetch_or`, which composes with the neighbour's bits whatever the order.

use std::cell::Cell;

use crate::hash::Fingerprint;
use crate::qf::locally_locked::LocallyLockedQf;
use crate::qf::scan::{place_sorted, Fingerprints};
use crate::qf::sequential::refine;
use crate::qf::slot::{LockView, MIGRATION_LOCK};
use crate::qf::table::QfTable;
use crate::storage::GroupWriter;
use crate::sync::{Ordering, Waiter};

/// Migration-locks the empty, unlocked slots from `index` on (before `hi`, inside the group of
/// `index`, up to the first other slot) with one CAS. Returns how many it locked: 0 if slot
/// `index` is not empty and unlocked any more.
fn lock_empty_run(old: &LocallyLockedQf, index: usize, hi: usize) -> usize {
    let slots = &old.table.slots;
    let layout = *slots.layout();
    let (group, offset) = layout.locate(index);
    let hi = hi.min(slots.len());
    // One CAS of the group, like taking any write lock (see `LocallyLockedQf::update_slot`).
    slots
        .update_group(group, |word| {
            let (mut new, mut locked) = (word, 0);
            while index + locked < hi
                && layout.locate(index + locked).0 == group
                && layout.get(word, offset + locked as u32) == 0
            {
                new = layout.set(new, offset + locked as u32, MIGRATION_LOCK);
                locked += 1;
            }
            (locked > 0).then_some((new, locked))
        })
        .unwrap_or(0)
}

/// Copies the superclusters that start in old slots `lo..hi` into `target` and migration-locks
/// every empty slot in `lo..hi` (and the ends of the superclusters it copies). Returns how many
/// fingerprints it copied. `buffer` is scratch space reused between calls.
pub(super) fn migrate_block(
    old: &LocallyLockedQf,
    target: &QfTable,
    lo: usize,
    hi: usize,
    buffer: &mut Vec<u64>,
) -> usize {
    let slots = &old.table.slots;
    let waiter = Waiter::new();
    let mut copied = 0;
    let mut index = lo;
    while index < hi {
        // Acquire: what the slot holds decides what the migration does with it; pairs with the
        // Release of the operation that wrote it.
        match LockView::of(slots.get(index, Ordering::Acquire)) {
            LockView::MigrationLocked => index += 1,
            LockView::Empty => index += lock_empty_run(old, index, hi),
            LockView::WriteLocked => waiter.wait(),
            LockView::Filled => {
                let Some(end) = freeze(old, index) else {
                    // A removal emptied a slot of the stretch meanwhile: look again.
                    continue;
                };
                // The slot before `index` is a migration lock we saw, unless `index` is the
                // block's first slot.
                if index > lo || lo == 0 || fence(old, lo - 1) {
                    copied += copy_supercluster(old, index, end, target, buffer);
                }
                index = end + 1;
            }
        }
    }
    copied
}

/// Migration-locks the end of the supercluster holding the filled slot `from` and checks that
/// `from..end` is still all filled. Returns the end, or `None` if a removal emptied a slot of the
/// stretch meanwhile (the end stays locked; it is an empty slot either way).
fn freeze(old: &LocallyLockedQf, from: usize) -> Option<usize> {
    // The end: the first empty slot from `from` on, migration-locked now, or a migration lock
    // met before it (that slot ends the stretch for good as well).
    let (Ok(end) | Err(end)) = old.lock_first_empty(from, MIGRATION_LOCK);
    // Right to left, as the locked inserts and removals check their stretch: a check left to
    // right can pass while a removal empties a slot it has read and an insert refills the slot
    // it has still to read (see `LocallyLockedQf::stretch_is_filled`).
    old.stretch_is_filled(from, end).then_some(end)
}

/// Makes old slot `index`, just left of a block whose first slot belongs to a frozen
/// supercluster, final: migration-locks it if it is empty. Returns whether it is a migration lock
/// (the supercluster starts right after it) rather than an element (it started earlier).
fn fence(old: &LocallyLockedQf, index: usize) -> bool {
    let waiter = Waiter::new();
    loop {
        // One CAS through the shared slot update: it locks an empty slot, or gives up and
        // leaves what it saw in `seen` (its load is Acquire, as in `migrate_block`).
        let seen = Cell::new(LockView::Empty);
        let locked = old.update_slot(index, |now| {
            seen.set(LockView::of(now));
            (now == 0).then_some(MIGRATION_LOCK)
        });
        match seen.get() {
            _ if locked => return true,
            LockView::MigrationLocked => return true,
            LockView::Filled => return false,
            // An insert is filling it, or a removal will release it: wait for the outcome.
            LockView::WriteLocked => waiter.wait(),
            LockView::Empty => unreachable!("the update gives up only on a slot that is not empty"),
        }
    }
}

/// Copies the frozen supercluster in old slots `from..to` into target slots `2 from..2 to`
/// (see the module doc). Returns how many fingerprints it copied.
fn copy_supercluster(
    old: &LocallyLockedQf,
    from: usize,
    to: usize,
    target: &QfTable,
    buffer: &mut Vec<u64>,
) -> usize {
    let (base, len) = (2 * from, 2 * (to - from));
    buffer.clear();
    buffer.resize(len, 0);
    let (old_r, new_r) = (old.table.remainder_bits, target.remainder_bits);
    // Acquire: the stretch is frozen; the freeze's loads already ordered its contents.
    let refined = Fingerprints::range(&old.table.slots, from, to, Ordering::Acquire)
        .map(|f: Fingerprint| refine(f, old_r, new_r));
    let placed = place_sorted(refined, base, base + len, |index, bits| {
        buffer[index - base] |= bits;
    });
    // The module doc shows every element lands below `2 to`.
    let Ok(copied) = placed else {
        unreachable!("a supercluster's copy fits in twice its slots")
    };
    write_owned(target, base, buffer);
    copied
}

/// Writes `values` into target slots `base..base + values.len()`, which only this thread writes
/// and which are still zero: the groups inside the range with a plain store, a group shared with
/// a neighbouring range with an atomic OR ([`GroupWriter`]). The migration's completion counter
/// (Release/Acquire) publishes the whole target before anyone reads it.
fn write_owned(target: &QfTable, base: usize, values: &[u64]) {
    let array = &target.slots;
    let end = base + values.len();
    let owned = array.layout().groups_inside(base..end, array.len());
    let mut writer = GroupWriter::new(array, owned);
    for (index, &value) in (base..end).zip(values) {
        writer.or(index, value);
    }
    writer.finish();
}
