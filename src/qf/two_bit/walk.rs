//! The run logic of the 2-status-bit quotient filter (paper 000 §2.2): find a run from its
//! supercluster start by counting occupied and new-run bits, search it, and plan and write inserts
//! and removals.
//!
//! The 3-bit walk in [`super::super::walk`] finds cluster starts with the `shifted` bit, which
//! this table does not have, so the 2-bit walk is its own module over the same [`Cursor`] and
//! [`Rewriter`]; the word-at-a-time slot search ([`seek_lane`]) and the run search
//! ([`search_run_by`]) are shared, with this table's own slot decoders. As there, every function
//! reads through a cursor, so the same code serves the locked paths (an unbounded cursor over a
//! stretch the caller has locked), the lock-elided fast paths (a cursor bounded to one
//! atomically loaded group: a walk that would leave the group returns `None`), and a query's walk
//! without locks over several groups, which may read a half-shifted table: the walks then must
//! neither panic nor run off the table, and give up (`None`) on counts no consistent table has.
//! A locked empty slot reads as empty everywhere here.

use crate::hash::low_mask;
use crate::qf::rank_select::popcount;
use crate::storage::{shift_lanes_up, Commit, Cursor, GroupSource, Rewriter};

pub(crate) use super::super::walk::RunSearch;
use super::super::walk::{search_run_by, seek_lane};

use super::table::{
    continues_run, element, is_filled, is_occupied, remainder_of, starts_run, NEW_RUN, OCCUPIED,
};

/// Moves a cursor on a filled slot left to the nearest slot that is not filled (empty or
/// locked): the slot just left of the supercluster, found a word at a time. Returns its index;
/// `None` if the cursor cannot move (a bounded cursor at its group's edge).
#[inline]
pub(crate) fn back_to_boundary<S: GroupSource>(cursor: &mut Cursor<'_, S>) -> Option<usize> {
    let lsb = cursor.lane_lsb();
    let bits = cursor.slot_bits();
    // The lanes at or below the cursor's.
    let mut below = cursor.shift() + bits;
    loop {
        let unfilled = !filled_lanes(cursor.word(), lsb, bits) & lsb & low_mask(below);
        if unfilled != 0 {
            cursor.jump_to_bit(63 - unfilled.leading_zeros());
            return Some(cursor.index());
        }
        if !cursor.enter_previous_group() {
            return None;
        }
        below = 64;
    }
}

/// Where the run of a canonical slot starts, found by [`seek_run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunStart {
    /// The canonical slot as read.
    pub(crate) canonical: u64,
    /// Whether the canonical slot has a run (its occupied bit).
    pub(crate) exists: bool,
}

/// Moves a cursor from the empty slot `boundary` just left of a supercluster to where the run of
/// the filled canonical slot `quotient` starts, or where it would start if it has none yet (the
/// first slot after the runs of the canonical slots before it).
///
/// The run of `quotient` is run number `k + 1` of the supercluster, where `k` counts the
/// occupied slots in `boundary + 1 .. quotient`: runs appear in the order of their canonical
/// slots. `None` if a slot up to `quotient` is not filled (the caller's picture of the
/// supercluster is stale) or if the cursor cannot move.
///
/// Both stretches are read a word at a time: the counts are popcounts of the occupied and
/// new-run bits of the filled lanes, and the run start is the `k + 1 - s`-th new-run lane from
/// `quotient` on (`s` runs start before it), unless an unfilled lane ends the supercluster
/// first.
#[inline]
pub(crate) fn seek_run<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    quotient: usize,
) -> Option<RunStart> {
    debug_assert!(cursor.index() < quotient);
    let lsb = cursor.lane_lsb();
    let bits = cursor.slot_bits();
    let (quotient_group, quotient_offset) = cursor.layout().locate(quotient);
    let quotient_bit = quotient_offset * bits;
    let mut occupied_before = 0usize;
    let mut runs_before = 0usize;
    // The lanes after the boundary, up to and including `quotient`, must all be filled.
    let mut from = cursor.shift() + bits;
    loop {
        let word = cursor.word();
        let at_quotient = cursor.group() == quotient_group;
        let up_to = if at_quotient {
            low_mask(quotient_bit + bits)
        } else {
            u64::MAX
        };
        let lanes = lsb & !low_mask(from) & up_to;
        if lanes & !filled_lanes(word, lsb, bits) != 0 {
            return None;
        }
        let before = if at_quotient {
            lanes & low_mask(quotient_bit)
        } else {
            lanes
        };
        // Bit 0 of a lane is its occupied bit, bit 1 its new-run bit; every lane here is filled.
        occupied_before += popcount(word & before) as usize;
        runs_before += popcount((word >> 1) & before) as usize;
        if at_quotient {
            cursor.jump_to_bit(quotient_bit);
            break;
        }
        if !cursor.enter_next_group() {
            return None;
        }
        from = 0;
    }
    let canonical = cursor.slot();
    let exists = is_occupied(canonical);
    // Runs that start left of `quotient` belong to canonical slots left of it, so in a
    // consistent table at least one run is left to pass; a walk without locks over a
    // half-shifted table may count otherwise, and gives up.
    let mut runs_to_pass = (occupied_before + 1)
        .checked_sub(runs_before)
        .filter(|&runs| runs > 0)?;
    let mut from = cursor.shift();
    loop {
        let word = cursor.word();
        let window = lsb & !low_mask(from);
        let unfilled = window & !filled_lanes(word, lsb, bits);
        // The filled lanes of the window before the supercluster ends.
        let filled = if unfilled == 0 {
            window
        } else {
            window & low_mask(unfilled.trailing_zeros())
        };
        let starts = (word >> 1) & filled;
        let found = popcount(starts) as usize;
        if found >= runs_to_pass {
            // At most `found <= 64` here, so the count fits.
            cursor.jump_to_nth_bit(starts, runs_to_pass as u32);
            return Some(RunStart { canonical, exists });
        }
        if unfilled != 0 {
            // The supercluster ends: a new run goes here; an existing one cannot be missing.
            cursor.jump_to_bit(unfilled.trailing_zeros());
            return (!exists).then_some(RunStart { canonical, exists });
        }
        runs_to_pass -= found;
        if !cursor.enter_next_group() {
            return None;
        }
        from = 0;
    }
}

/// Searches the sorted run that starts under the cursor for `remainder` ([`search_run_by`] with
/// this table's decoders); the cursor ends on the slot the answer names.
#[inline]
pub(crate) fn search_run<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    remainder: u64,
) -> Option<RunSearch> {
    search_run_by(cursor, remainder, remainder_of, continues_run)
}

/// Whether `(quotient, remainder)` is stored, reading from a cursor on the canonical slot
/// `quotient`, and the boundary the walk went back to (`None` if the canonical slot has no run,
/// which answers at once). `None` if the cursor cannot move.
#[inline]
pub(crate) fn lookup<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    quotient: usize,
    remainder: u64,
) -> Option<(bool, Option<usize>)> {
    if !is_occupied(cursor.slot()) {
        return Some((false, None));
    }
    let boundary = back_to_boundary(cursor)?;
    // The occupied bit as the walk from the boundary read it, as a walk under a lock would;
    // only a half-shifted read can make it differ from the one read above.
    let found = seek_run(cursor, quotient)?.exists
        && matches!(search_run(cursor, remainder)?, RunSearch::Found(_));
    Some((found, Some(boundary)))
}

/// Moves the cursor to the first slot at or after it that is not filled (empty or locked) and
/// returns its index, a word at a time ([`seek_lane`]). `None` if the cursor cannot move.
#[inline]
pub(crate) fn seek_empty(cursor: &mut Cursor<'_>) -> Option<usize> {
    let bits = cursor.slot_bits();
    seek_lane(cursor, |word, lsb| !filled_lanes(word, lsb, bits) & lsb)
}

/// Moves the cursor to the first filled slot at or after it and returns its index, a word at a
/// time. `None` if every slot from there on is empty or locked.
pub(crate) fn seek_filled(cursor: &mut Cursor<'_>) -> Option<usize> {
    let bits = cursor.slot_bits();
    seek_lane(cursor, |word, lsb| filled_lanes(word, lsb, bits))
}

/// The lowest bit of every lane of `word` (lanes of `bits >= 3` bits, lowest bits `lsb`) that
/// holds an element: a non-zero remainder above the two status bits.
#[inline]
fn filled_lanes(word: u64, lsb: u64, bits: u32) -> u64 {
    let top = lsb << (bits - 1);
    // Every bit of each lane but its top one; `top - lsb` borrows nowhere since `bits >= 2`.
    let below_top = top - lsb;
    let remainders = word & !(lsb | (lsb << 1));
    // Adding `below_top` carries into a lane's top bit iff its lower bits are non-zero, and
    // never out of the lane (at most `2 * below_top`, which fits below the next lane).
    let nonzero = (((remainders & below_top) + below_top) | remainders) & top;
    nonzero >> (bits - 1)
}

/// Everything an insert will write, decided before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InsertPlan {
    /// The canonical slot, whose occupied bit the insert sets.
    pub(crate) quotient: usize,
    /// The canonical slot as it was read.
    pub(crate) canonical: u64,
    /// Where the new element goes.
    pub(crate) position: usize,
    /// The first slot at or after `position` that is not filled; the elements in
    /// `position..end` move one slot right.
    pub(crate) end: usize,
    /// The new element (occupied bit clear).
    pub(crate) element: u64,
    /// The new element becomes the head of an existing run, so the old head, moving to
    /// `position + 1`, continues it.
    pub(crate) old_head_continues: bool,
}

/// What inserting a fingerprint needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InsertStep {
    /// The fingerprint is stored already.
    Duplicate,
    /// Apply this plan.
    Place(InsertPlan),
}

/// The plan for putting `remainder` into the canonical slot `quotient` when that slot is empty.
#[inline]
pub(crate) fn plan_into_empty(quotient: usize, canonical: u64, remainder: u64) -> InsertPlan {
    InsertPlan {
        quotient,
        canonical,
        position: quotient,
        end: quotient,
        element: element(remainder, true),
        old_head_continues: false,
    }
}

/// Plans the insert of `(quotient, remainder)` from a cursor on the empty slot `boundary` left of
/// the supercluster holding the filled canonical slot `quotient`. The caller checks the plan's
/// `end` against the table's limit. `None` as for [`seek_run`].
#[inline]
pub(crate) fn plan_insert(
    cursor: &mut Cursor<'_>,
    quotient: usize,
    remainder: u64,
) -> Option<InsertStep> {
    let run = seek_run(cursor, quotient)?;
    let (position, new_run, old_head_continues) = if run.exists {
        match search_run(cursor, remainder)? {
            RunSearch::Found(_) => return Some(InsertStep::Duplicate),
            RunSearch::Absent { position, at_head } => (position, at_head, at_head),
        }
    } else {
        (cursor.index(), true, false)
    };
    let end = seek_empty(cursor)?;
    Some(InsertStep::Place(InsertPlan {
        quotient,
        canonical: run.canonical,
        position,
        end,
        element: element(remainder, new_run),
        old_head_continues,
    }))
}

/// Writes an insert plan: the new element at `position`, the elements of `position..end` one
/// slot right, the old run head marked as a continuation if the new element displaced it, and the
/// canonical slot's occupied bit (with the first group written, or in an earlier group, so no
/// group ever shows a run without its occupied bit). The end slot, empty or locked by the
/// caller, is overwritten whole. `read` is a cursor on `position` that loads the old contents.
#[inline]
pub(crate) fn shift_in<C: Commit>(
    read: &mut Cursor<'_>,
    rewriter: &mut Rewriter<'_, C>,
    plan: &InsertPlan,
) {
    if !is_occupied(plan.canonical) && plan.quotient < plan.position {
        // The canonical slot holds another run's element; only its occupied bit changes.
        rewriter.put_whole(plan.quotient, plan.canonical | OCCUPIED);
    }
    if plan.position == plan.end {
        // Nothing moves. Only the canonical slot itself, when it was empty, is occupied here.
        let occupied = if plan.end == plan.quotient {
            OCCUPIED
        } else {
            0
        };
        rewriter.put_whole(plan.end, plan.element | occupied);
        return;
    }
    rewriter.put(plan.position, plan.element);
    let layout = *read.layout();
    let occupied_lanes = layout.lanes(OCCUPIED);
    // A displaced run head continues the new element's run: its new-run bit goes.
    let new_run = if plan.old_head_continues {
        NEW_RUN << read.shift()
    } else {
        0
    };
    shift_lanes_up(
        read,
        rewriter,
        plan.end,
        |word| word & !occupied_lanes,
        |moved| moved & !new_run,
    );
}

/// Everything a removal will write, decided by [`plan_remove`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RemovePlan {
    /// The canonical slot of the removed fingerprint.
    pub(crate) quotient: usize,
    /// The canonical slot as it was read.
    pub(crate) canonical: u64,
    /// Where the removed element is.
    pub(crate) position: usize,
    /// Whether the removed element was the head of its run.
    pub(crate) was_head: bool,
    /// Whether it was the only element of its run (the canonical slot loses its occupied bit).
    pub(crate) was_alone: bool,
}

/// Finds `(quotient, remainder)` for removal from a cursor on the empty slot left of the
/// supercluster holding the filled canonical slot `quotient`. `Some(None)` if it is not stored;
/// `None` as for [`seek_run`].
#[inline]
pub(crate) fn plan_remove(
    cursor: &mut Cursor<'_>,
    quotient: usize,
    remainder: u64,
) -> Option<Option<RemovePlan>> {
    let run = seek_run(cursor, quotient)?;
    if !run.exists {
        return Some(None);
    }
    let head = cursor.index();
    let RunSearch::Found(position) = search_run(cursor, remainder)? else {
        return Some(None);
    };
    let was_head = position == head;
    let next_continues = cursor.advance() && continues_run(cursor.slot());
    Some(Some(RemovePlan {
        quotient,
        canonical: run.canonical,
        position,
        was_head,
        was_alone: was_head && !next_continues,
    }))
}

/// Writes a removal: the element at `position` goes and the elements after it move one slot
/// left, up to the next slot that is not filled or the next run that starts in its own canonical
/// slot (which cannot move left of it). The canonical slot loses its occupied bit if its run is
/// now empty. Without a `shifted` bit, each moved run's canonical slot is found as the next
/// occupied slot after the previous run's, by the cursor `occupied` (on `quotient` at the
/// start); `read` is a cursor on `position + 1`. `before_write` is told each slot before it is
/// written, in increasing order, none before `quotient`. Returns the index of the slot that
/// became empty.
#[inline]
pub(crate) fn shift_out<C: Commit>(
    read: &mut Cursor<'_>,
    occupied: &mut Cursor<'_>,
    rewriter: &mut Rewriter<'_, C>,
    plan: &RemovePlan,
    mut before_write: impl FnMut(usize),
) -> usize {
    let clears_canonical = plan.was_alone;
    if clears_canonical && plan.quotient < plan.position {
        before_write(plan.quotient);
        rewriter.put_whole(plan.quotient, plan.canonical & !OCCUPIED);
    }
    // The removed element's slot is the canonical one when its run started there.
    let put = |rewriter: &mut Rewriter<'_, C>, index: usize, raw: u64| {
        if clears_canonical && index == plan.quotient {
            rewriter.put_whole(index, raw);
        } else {
            rewriter.put(index, raw);
        }
    };
    let mut target = plan.position;
    loop {
        let next = read.slot();
        if !is_filled(next) {
            break;
        }
        let mut moved = next & !OCCUPIED;
        if starts_run(next) {
            // A new run: its canonical slot is the next occupied one after the previous run's.
            while occupied.advance() && !is_occupied(occupied.slot()) {}
            if occupied.index() >= read.index() {
                // The run starts in its canonical slot: a cluster start, which stays.
                break;
            }
        } else if target == plan.position && plan.was_head {
            // The removed element headed this run: its successor heads it now.
            moved |= NEW_RUN;
        }
        before_write(target);
        put(rewriter, target, moved);
        target += 1;
        if !read.advance() {
            break;
        }
    }
    before_write(target);
    put(rewriter, target, 0);
    target
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::storage::test_arrays::{group_words, shift_cases};
    use crate::storage::Exclusive;
    use crate::sync::Ordering;
    use proptest::prelude::*;

    /// [`shift_in`] a slot at a time, as it was written before the group-at-a-time shift: the
    /// reference the lane-parallel one must match.
    fn shift_in_slot_by_slot<C: Commit>(
        read: &mut Cursor<'_>,
        rewriter: &mut Rewriter<'_, C>,
        plan: &InsertPlan,
    ) {
        if !is_occupied(plan.canonical) && plan.quotient < plan.position {
            rewriter.put_whole(plan.quotient, plan.canonical | OCCUPIED);
        }
        let mut carry = plan.element;
        for index in plan.position..=plan.end {
            if index == plan.end {
                let occupied = if index == plan.quotient { OCCUPIED } else { 0 };
                rewriter.put_whole(index, carry | occupied);
                break;
            }
            let old = read.slot();
            rewriter.put(index, carry);
            carry = old & !OCCUPIED;
            if index == plan.position && plan.old_head_continues {
                carry &= !NEW_RUN;
            }
            read.advance();
        }
    }

    proptest! {
        /// The group-at-a-time shift writes exactly what the slot-at-a-time one writes, for
        /// every slot width, any slot contents, any stretch within or across groups, the
        /// canonical slot's occupied bit, a displaced run head and the end slot.
        #[test]
        fn the_lane_parallel_shift_writes_what_a_slot_by_slot_shift_writes(
            case in shift_cases(OCCUPIED),
        ) {
            let plan = InsertPlan {
                quotient: case.quotient,
                canonical: case.canonical,
                position: case.position,
                end: case.end,
                element: case.element,
                old_head_continues: case.old_head_continues,
            };
            let (expected, actual) = (case.array(), case.array());
            for (array, slot_by_slot) in [(&expected, true), (&actual, false)] {
                let mut read = array.cursor(plan.position, Ordering::Relaxed);
                let mut rewriter = Rewriter::new(array, Exclusive, OCCUPIED);
                if slot_by_slot {
                    shift_in_slot_by_slot(&mut read, &mut rewriter, &plan);
                } else {
                    shift_in(&mut read, &mut rewriter, &plan);
                }
                rewriter.finish();
            }
            prop_assert_eq!(group_words(&actual), group_words(&expected));
        }
    }

    /// `filled_lanes` agrees with `is_filled` lane by lane, for every slot width and words with
    /// locks, status bits alone, and remainders of one bit anywhere in the lane.
    #[test]
    fn filled_lanes_matches_is_filled_slot_by_slot() {
        for bits in 3..=64u32 {
            let lanes = 64 / bits;
            let lsb = (0..lanes).fold(0u64, |acc, lane| acc | 1 << (lane * bits));
            let mask = crate::hash::low_mask(bits);
            let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(bits);
            for _ in 0..200 {
                let mut word = 0;
                for lane in 0..lanes {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    let slot = match state >> 61 {
                        0 => 0,
                        1 => NEW_RUN,
                        2 => OCCUPIED,
                        3 => 1 << (2 + (state >> 20) as u32 % (bits - 2)),
                        _ => (state >> 7) & mask,
                    };
                    word |= slot << (lane * bits);
                }
                let expected = (0..lanes)
                    .filter(|lane| is_filled((word >> (lane * bits)) & mask))
                    .fold(0u64, |acc, lane| acc | 1 << (lane * bits));
                assert_eq!(filled_lanes(word, lsb, bits), expected, "{bits} {word:#x}");
            }
        }
    }
}
