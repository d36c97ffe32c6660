//! The run and cluster logic of the 3-status-bit quotient filter, written once (paper 000 §2.1;
//! the walk-throughs of paper 003, "Lookup" and "Insertion", and paper 002).
//!
//! Everything here reads slots through a [`Cursor`] and decodes them with [`Slot::unlocked`]
//! (unless the cursor's source says it holds no locks, `GroupSource::MAY_HOLD_LOCKS`, as the
//! sequential table and [`LocksReadThrough`], which decodes each group once as it loads it, say),
//! so the same code serves the sequential filter (which never holds locks), the queries and locked
//! paths of the concurrent filter (which read through its own locks), and the lock-elision fast
//! paths (a cursor bounded to one atomically loaded group: a walk that would leave the group
//! returns `None` and the caller takes the locked path). Writes go through a [`Rewriter`], so
//! shifting is also written once. [`UnlockedWalk`] is what a concurrent query may conclude from
//! such a walk without locks, for both concurrent filters whose queries walk first (this table's
//! and the 2-bit one's).
//!
//! The walks step a group at a time where they can: the search back to the cluster start and
//! over whole runs tests one status bit in every lane with one mask, and a lookup compares its
//! remainder with every lane of a run at once ([`run_holds`], with the broadword comparison of
//! [`LaneFields`] that the cuckoo table also uses).

use crate::hash::{low_mask, low_mask_below_64, low_mask_nonzero};
use crate::qf::rank_select::popcount;
use crate::storage::{
    shift_lanes_up, Commit, Cursor, GroupSource, LaneFields, Rewriter, SlotLayout,
};
use crate::sync::Ordering;

use super::slot::{Slot, CONTINUATION, OCCUPIED, READ_LOCK, SHIFTED, STATUS_BITS};

/// The slot under a cursor, read as the table at rest would hold it.
#[inline]
pub(crate) fn slot_at<S: GroupSource>(cursor: &Cursor<'_, S>) -> Slot {
    decode::<S>(cursor.slot())
}

/// A raw slot of `S` read as the table at rest would hold it: [`Slot::unlocked`], or the slot
/// as it is if `S` cannot hold locks.
#[inline]
fn decode<S: GroupSource>(raw: u64) -> Slot {
    if S::MAY_HOLD_LOCKS {
        Slot::unlocked(raw)
    } else {
        Slot::from_raw(raw)
    }
}

/// A whole group of `S` with its locks read through, as [`Slot::unlocked`] does for one slot:
/// in every lane whose continuation bit is set without the shifted bit, the two low bits flip.
/// The word itself if `S` cannot hold locks.
#[inline]
fn unlocked_word<S: GroupSource>(word: u64, lane_lsb: u64) -> u64 {
    if !S::MAY_HOLD_LOCKS {
        return word;
    }
    read_locks_through(word, lane_lsb)
}

/// [`unlocked_word`] for a word that may hold locks.
#[inline(always)]
fn read_locks_through(word: u64, lane_lsb: u64) -> u64 {
    let locks = (word >> 1) & !(word >> 2) & lane_lsb;
    word ^ (locks | (locks << 1))
}

/// The groups of `S` read as the table at rest would hold them: every group has its locks read
/// through once, as it is loaded ([`unlocked_word`]), so the walks over it, which then see no
/// lock, decode nothing more (a walk over `S` itself reads the locks through at every step,
/// several times per group). Only for walks that read: the words it gives are not the
/// table's, so a compare-and-swap built from one would fail or, worse, erase a lock. A cursor
/// bounded to a word already seen to hold no lock ([`Cursor::in_group`], the one-group insert
/// and removal) loads nothing; over this source it only skips the decoding, which that word does
/// not need.
#[derive(Clone, Copy)]
pub(crate) struct LocksReadThrough<S>(pub(crate) S);

impl<S: GroupSource> GroupSource for LocksReadThrough<S> {
    const MAY_HOLD_LOCKS: bool = false;

    #[inline(always)]
    fn layout(&self) -> &SlotLayout {
        self.0.layout()
    }
    #[inline(always)]
    fn slot_count(&self) -> usize {
        self.0.slot_count()
    }
    #[inline(always)]
    fn load_group(&self, group: usize, order: Ordering) -> u64 {
        let word = self.0.load_group(group, order);
        if S::MAY_HOLD_LOCKS {
            read_locks_through(word, self.0.layout().lanes(1))
        } else {
            word
        }
    }
    #[inline(always)]
    fn prefetch_lines_around(&self, group: usize) {
        self.0.prefetch_lines_around(group);
    }
}

/// What [`back_to_cluster_start`] counted on its way from a slot `x` to the start `c` of its
/// cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClusterCounts {
    /// Occupied canonical slots in `c..x`: the runs of the cluster that belong to quotients
    /// before `x`.
    pub(crate) runs_before: usize,
    /// Run starts (filled slots whose continuation bit is clear) in `c..=x`: runs of the
    /// cluster that start at or before `x`.
    pub(crate) run_starts: usize,
}

/// Moves a cursor on a filled slot left to the start of its cluster, counting occupied bits and
/// run starts on the way ([`ClusterCounts`]). `None` if the cursor cannot move (bounded cursor,
/// or a corrupt table).
///
/// Works a group at a time: the cluster start is the highest lane at or below the current one
/// whose shifted bit is clear, and the bits in between are one popcount each.
#[inline(always)]
pub(crate) fn back_to_cluster_start<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
) -> Option<ClusterCounts> {
    let lsb = cursor.lane_lsb();
    let shifted_lanes = lsb << 2;
    // Occupied bits are counted in the lanes below the current one (`count_lanes`); the start
    // is searched, and run starts are counted, at or below it (`search_lanes`). Every lane of
    // the groups further left.
    let mut count_lanes = low_mask_below_64(cursor.shift());
    let mut search_lanes = low_mask_nonzero(cursor.shift() + cursor.slot_bits());
    let mut counts = ClusterCounts {
        runs_before: 0,
        run_starts: 0,
    };
    loop {
        let word = unlocked_word::<S>(cursor.word(), lsb);
        // Every lane in the walk is filled, so a clear continuation bit marks a run start.
        let run_starts = !(word >> 1) & lsb;
        let unshifted = !word & shifted_lanes & search_lanes;
        if unshifted != 0 {
            let start_bit = 63 - unshifted.leading_zeros();
            let from_start = !low_mask_below_64(start_bit - 2);
            let occupied = word & lsb & count_lanes & from_start;
            let starts = run_starts & search_lanes & from_start;
            counts.runs_before += popcount(occupied) as usize;
            counts.run_starts += popcount(starts) as usize;
            cursor.jump_to_bit(start_bit);
            return Some(counts);
        }
        counts.runs_before += popcount(word & lsb & count_lanes) as usize;
        counts.run_starts += popcount(run_starts & search_lanes) as usize;
        if !cursor.enter_previous_group() {
            return None;
        }
        count_lanes = u64::MAX;
        search_lanes = u64::MAX;
    }
}

/// Moves a cursor over `runs` run boundaries to the right: onto the `runs`-th slot after it
/// whose continuation bit is clear (a run start, or the empty slot that ends the cluster). On
/// a run start, that is the slot after the `runs` whole runs that follow it.
#[inline(always)]
pub(crate) fn skip_runs<S: GroupSource>(cursor: &mut Cursor<'_, S>, runs: usize) -> Option<()> {
    if runs == 0 {
        return Some(());
    }
    let lsb = cursor.lane_lsb();
    let continuation_lanes = lsb << 1;
    let mut remaining = runs as u32;
    // The lanes after the cursor's, then every lane of the groups further right.
    let mut after = !low_mask_nonzero(cursor.shift() + cursor.slot_bits());
    loop {
        let word = unlocked_word::<S>(cursor.word(), lsb);
        let boundaries = !word & continuation_lanes & after;
        let found = popcount(boundaries);
        if found >= remaining {
            cursor.jump_to_nth_bit(boundaries, remaining);
            return Some(());
        }
        remaining -= found;
        if !cursor.enter_next_group() {
            return None;
        }
        after = u64::MAX;
    }
}

/// Moves a cursor on the filled canonical slot `quot` to where the run of `quot` starts, or
/// would start if `quot` has no run yet (the slot after the runs of the canonical slots before
/// it in the cluster). Returns the index of the cluster start it passed.
///
/// The runs of a cluster lie in the order of their quotients and none starts before its
/// canonical slot, so the run of `quot` is the cluster's `runs_before + 1`-th, and the
/// `run_starts` runs that start in `cluster_start..=quot` come before it: the walk goes on from
/// `quot`, not from the cluster start, and reads no group twice.
///
/// Not inlined: inlined, it made `SequentialQf::insert_hash` too large to take the insert
/// planner inline, and inserts slowed by 5-9% (scratch probe and `figures --only fig2`).
#[inline(never)]
pub(crate) fn seek_run<S: GroupSource>(cursor: &mut Cursor<'_, S>) -> Option<usize> {
    seek_run_inlined(cursor)
}

/// [`seek_run`], always inlined: for the lookup, where the call and the spilled cursor cost
/// more than the walk.
#[inline(always)]
fn seek_run_inlined<S: GroupSource>(cursor: &mut Cursor<'_, S>) -> Option<usize> {
    let canonical = cursor.clone();
    let counts = back_to_cluster_start(cursor)?;
    let cluster_start = cursor.index();
    *cursor = canonical;
    // At most `runs_before + 1` runs start in `cluster_start..=quot`: those of the quotients
    // before `quot`, and the run of `quot` only if it starts at `quot`, the cluster start. So
    // this does not underflow on a consistent table; a torn read of a table that other threads
    // change gets `None`, as does any walk that cannot finish.
    let runs_after = (counts.runs_before + 1).checked_sub(counts.run_starts)?;
    skip_runs(cursor, runs_after)?;
    Some(cluster_start)
}

/// Where a remainder is, or belongs, in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunSearch {
    /// Stored at this slot.
    Found(usize),
    /// Not stored; it belongs at this slot (the first larger element, or the slot after the run),
    /// and `at_head` says whether that is the run's first slot.
    Absent {
        /// Where the remainder belongs.
        position: usize,
        /// Whether that is the first slot of the run.
        at_head: bool,
    },
}

/// Searches the sorted run that starts under the cursor for `remainder`; the cursor ends on the
/// slot the answer names.
#[inline]
pub(crate) fn search_run<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    remainder: u64,
) -> Option<RunSearch> {
    search_run_by(
        cursor,
        remainder,
        |raw| decode::<S>(raw).remainder(),
        |raw| decode::<S>(raw).is_continuation(),
    )
}

/// [`search_run`] for any slot format: `remainder_of` and `continues_run` decode a raw slot
/// (generic, so each table's search compiles to its own loop).
#[inline]
pub(crate) fn search_run_by<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    remainder: u64,
    remainder_of: impl Fn(u64) -> u64,
    continues_run: impl Fn(u64) -> bool,
) -> Option<RunSearch> {
    let mut at_head = true;
    loop {
        let stored = remainder_of(cursor.slot());
        if stored == remainder {
            return Some(RunSearch::Found(cursor.index()));
        }
        if stored > remainder {
            break;
        }
        if !cursor.advance() {
            return None;
        }
        at_head = false;
        if !continues_run(cursor.slot()) {
            break;
        }
    }
    Some(RunSearch::Absent {
        position: cursor.index(),
        at_head,
    })
}

/// Whether `(quot, remainder)` is stored, reading from a cursor on slot `quot`; with it, the
/// start of the cluster the walk went through (`None` if `quot` has no run).
#[inline(always)]
pub(crate) fn lookup<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    remainder: u64,
) -> Option<(bool, Option<usize>)> {
    let canonical = slot_at(cursor);
    if !canonical.is_occupied() {
        return Some((false, None));
    }
    // Fast path: the cluster starts here, so the run does too.
    let cluster_start = if canonical.is_cluster_start() {
        cursor.index()
    } else {
        seek_run_inlined(cursor)?
    };
    let found = run_holds(cursor, remainder)?;
    Some((found, Some(cluster_start)))
}

/// What a query's walk without locks saw, for the concurrent filters whose queries walk first
/// and lock only if they must (`LocallyLockedQf`, which walks back to a cluster start, and
/// `TwoBitQf`, which walks back to the empty slot left of a supercluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnlockedWalk {
    /// Whether the walk found the remainder in what it read as the run of the quotient.
    pub(crate) found: bool,
    /// Whether the walk read only the canonical slot's group, loaded once, so `found` is exact.
    pub(crate) one_group: bool,
    /// Where the walk went back to (cluster start or boundary), if it got that far.
    pub(crate) start: Option<usize>,
    /// The first and the last group the walk read, if it finished.
    pub(crate) groups: Option<(usize, usize)>,
}

impl UnlockedWalk {
    /// The walk whose lookup gave `lookup` (the answer and where it went back to, `None` if it
    /// could not finish), from a cursor that started in `canonical_group` and ended at `cursor`.
    /// The walk went back no further than its start and forward no further than where it
    /// stopped, and a cursor loads a group only on entering it: so it read one group if both
    /// lie in the canonical one (or it never left the canonical slot).
    #[inline(always)]
    pub(crate) fn new<S: GroupSource>(
        lookup: Option<(bool, Option<usize>)>,
        canonical_group: usize,
        cursor: &Cursor<'_, S>,
    ) -> Self {
        let Some((found, start)) = lookup else {
            return UnlockedWalk {
                found: false,
                one_group: false,
                start: None,
                groups: None,
            };
        };
        let first = start.map_or(canonical_group, |start| cursor.layout().locate(start).0);
        let last = cursor.group();
        let one_group = start.is_none() || (first == canonical_group && last == canonical_group);
        UnlockedWalk {
            found,
            one_group,
            start,
            groups: Some((first, last)),
        }
    }
}

/// Whether the run that starts under the cursor holds `remainder`. The cursor is left in the
/// group where the search stopped, on no particular slot (a lookup needs nothing after it).
/// `None` where [`search_run`] gives `None`: the run reaches the end of a bounded cursor's group
/// or of the table.
///
/// A lookup needs only the answer, not the place, so all lanes of the run in a group are
/// compared with the remainder at once ([`LaneFields::equal`]). A run then costs a few mask
/// operations per group, not a step per slot.
#[inline(always)]
pub(crate) fn run_holds<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    remainder: u64,
) -> Option<bool> {
    let lsb = cursor.lane_lsb();
    let bits = cursor.slot_bits();
    let remainders = LaneFields::new(cursor.layout(), STATUS_BITS);
    let wanted = remainders.pattern(remainder, STATUS_BITS);
    let continuation_lanes = lsb << 1;
    // Lanes of the run start at the cursor's (`from`); its end is searched from the next lane
    // on (`after`; a run's first slot has its continuation bit clear). Every lane of the groups
    // further right.
    let mut from = !low_mask_below_64(cursor.shift());
    let mut after = !low_mask_nonzero(cursor.shift() + bits);
    loop {
        let word = unlocked_word::<S>(cursor.word(), lsb);
        let matches = remainders.equal(word, wanted) & from;
        let ends = !word & continuation_lanes & after;
        if ends != 0 {
            // The run's last lane is the one below the lane of the first clear continuation
            // bit, which starts one bit below that bit.
            let end_lane_start = ends.trailing_zeros() - 1;
            return Some(matches & low_mask_below_64(end_lane_start) != 0);
        }
        if matches != 0 {
            return Some(true);
        }
        if !cursor.enter_next_group() {
            return None;
        }
        from = u64::MAX;
        after = u64::MAX;
    }
}

/// Bit 0 of every lane of `word` that holds an empty slot (status `000`, a write lock read
/// through as the empty slot it locks); `lane_lsb` is bit 0 of every lane.
#[inline(always)]
fn empty_lanes<S: GroupSource>(word: u64, lane_lsb: u64) -> u64 {
    let word = unlocked_word::<S>(word, lane_lsb);
    !(word | (word >> 1) | (word >> 2)) & lane_lsb
}

/// Moves the cursor to the first empty slot at or after it and returns its index.
#[inline]
pub(crate) fn seek_empty<S: GroupSource>(cursor: &mut Cursor<'_, S>) -> Option<usize> {
    seek_lane(cursor, empty_lanes::<S>)
}

/// Moves the cursor to the first filled slot (an element, or a read-locked cluster start) at or
/// after it and returns its index; `None` if every slot from there on is empty.
pub(crate) fn seek_filled<S: GroupSource>(cursor: &mut Cursor<'_, S>) -> Option<usize> {
    seek_lane(cursor, |word, lsb| !empty_lanes::<S>(word, lsb))
}

/// The last slot of the cluster that starts at the cursor: the slot before the first one after
/// it that is not shifted (empty, or another cluster's start; a lock of either kind is not
/// shifted either). Leaves the cursor on that first slot. The table's last slot is always
/// empty, so the cluster ends before it; `None` only for a bounded cursor.
pub(crate) fn cluster_end<S: GroupSource>(cursor: &mut Cursor<'_, S>) -> Option<usize> {
    if !cursor.advance() {
        return None;
    }
    let unshifted = |word: u64, _lsb: u64| !(word >> SHIFTED.trailing_zeros());
    seek_lane(cursor, unshifted).map(|after| after - 1)
}

/// Whether the cursor's group, as loaded, has an empty slot at or after the cursor's slot: if
/// not, an insert there shifts into the next group, so it cannot finish inside this one.
#[inline]
pub(crate) fn group_has_empty_from<S: GroupSource>(cursor: &Cursor<'_, S>) -> bool {
    empty_lanes::<S>(cursor.word(), cursor.lane_lsb()) & !low_mask_below_64(cursor.shift()) != 0
}

/// Moves the cursor to the first slot at or after it whose lane `wanted` marks, a word at a
/// time, and returns its index. `wanted(word, lane_lsb)` returns the lowest bit of every lane of
/// `word` to stop at (other bits clear); each table decodes its own status bits there, so the
/// scan is written once for both slot formats. `None` if a bounded cursor would leave its group.
#[inline(always)]
pub(crate) fn seek_lane<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    wanted: impl Fn(u64, u64) -> u64,
) -> Option<usize> {
    let lsb = cursor.lane_lsb();
    // The lanes from the cursor's on, then every lane of the groups further right.
    let mut from = !low_mask_below_64(cursor.shift());
    loop {
        let found = wanted(cursor.word(), lsb) & lsb & from;
        if found != 0 {
            cursor.jump_to_bit(found.trailing_zeros());
            return Some(cursor.index());
        }
        if !cursor.enter_next_group() {
            return None;
        }
        from = u64::MAX;
    }
}

/// Everything an insert will write, decided before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InsertPlan {
    /// The canonical slot, whose occupied bit the insert sets.
    pub(crate) quotient: usize,
    /// The canonical slot as it was read (locks read through).
    pub(crate) canonical: Slot,
    /// The start of the cluster the new element joins (`quotient` if that slot was empty).
    pub(crate) cluster_start: usize,
    /// Where the new element goes.
    pub(crate) position: usize,
    /// The first empty slot at or after `position`; the elements in `position..end` move one
    /// slot right.
    pub(crate) end: usize,
    /// The new element (occupied bit clear).
    pub(crate) element: Slot,
    /// The new element becomes the head of an existing run, so the old head, moving to
    /// `position + 1`, becomes a continuation.
    pub(crate) old_head_continues: bool,
}

/// What inserting a fingerprint needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InsertStep {
    /// The fingerprint is stored already, in the cluster that starts here.
    Duplicate {
        /// The start of the cluster the walk went through.
        cluster_start: usize,
    },
    /// Apply this plan.
    Place(InsertPlan),
}

/// Plans the insert of `(quotient, remainder)` from a cursor on slot `quotient`.
///
/// The plan's `end` is the first empty slot at or after the insert position; the caller checks
/// it against the table's limit. `None` if the cursor could not move.
///
/// Always inlined: once `LocallyLockedQf`'s locked insert was compiled per slot width too, the
/// compiler kept one out-of-line copy per width for it and the one-group insert, which then
/// took 21% more instructions (callgrind, `W=inserts F=locally-locked Q=16`).
#[inline(always)]
pub(crate) fn plan_insert<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    quotient: usize,
    remainder: u64,
) -> Option<InsertStep> {
    let canonical = slot_at(cursor);
    if canonical.is_empty() {
        return Some(InsertStep::Place(InsertPlan {
            quotient,
            canonical,
            cluster_start: quotient,
            position: quotient,
            end: quotient,
            element: Slot::element(remainder, false, false),
            old_head_continues: false,
        }));
    }
    let cluster_start = seek_run(cursor)?;
    let (position, continuation, old_head_continues) = if canonical.is_occupied() {
        match search_run(cursor, remainder)? {
            RunSearch::Found(_) => return Some(InsertStep::Duplicate { cluster_start }),
            RunSearch::Absent { position, at_head } => (position, !at_head, at_head),
        }
    } else {
        (cursor.index(), false, false)
    };
    let end = seek_empty(cursor)?;
    Some(InsertStep::Place(InsertPlan {
        quotient,
        canonical,
        cluster_start,
        position,
        end,
        element: Slot::element(remainder, continuation, position != quotient),
        old_head_continues,
    }))
}

/// Writes an insert plan: the new element at `position`, the elements of `position..end` one
/// slot right (each now shifted), the old run head marked as a continuation if the new element
/// displaced it, and the canonical slot's occupied bit. Occupied bits otherwise stay with their
/// positions.
///
/// The canonical slot's occupied bit is written with the first group, or before it when the
/// canonical slot lies in an earlier group, so no group ever shows a run without its occupied
/// bit. `read` is a cursor on `position` that loads the old contents. If `locked_start` names
/// the insert position, the new element (then a cluster start) is written read-locked, since
/// the concurrent filter holds the read lock on that cluster start.
///
/// The moved elements are written a group at a time ([`shift_lanes_up`]).
#[inline]
pub(crate) fn shift_in<S: GroupSource, C: Commit>(
    read: &mut Cursor<'_, S>,
    rewriter: &mut Rewriter<'_, C>,
    plan: &InsertPlan,
    locked_start: Option<usize>,
) {
    let needs_occupied = !plan.canonical.is_occupied();
    if needs_occupied && plan.quotient < plan.position {
        // The canonical slot holds another run's element; only its occupied bit changes.
        rewriter.put_whole(plan.quotient, plan.canonical.raw() | OCCUPIED);
    }
    let new = plan.element.raw();
    if plan.position == plan.end {
        // Nothing moves: the new element fills the empty (or write-locked) end slot, whose
        // occupied bit is clear unless it is the canonical slot itself.
        let occupied = if plan.end == plan.quotient {
            OCCUPIED
        } else {
            0
        };
        rewriter.put_whole(plan.end, new | occupied);
        return;
    }
    if Some(plan.position) == locked_start {
        rewriter.put_whole(plan.position, new | READ_LOCK);
    } else {
        rewriter.put(plan.position, new);
    }
    shift_right(read, rewriter, plan.end, plan.old_head_continues);
}

/// Moves the elements from the cursor's slot up to `end` one slot right, marking each shifted
/// (and the one under the cursor a continuation if `continues`), a group at a time
/// ([`shift_lanes_up`]). Occupied bits stay with their positions, except at `end` (an empty or
/// write-locked slot that is not a canonical slot being filled), which is written whole with
/// its occupied bit clear.
#[inline]
fn shift_right<S: GroupSource, C: Commit>(
    read: &mut Cursor<'_, S>,
    rewriter: &mut Rewriter<'_, C>,
    end: usize,
    continues: bool,
) {
    let layout = *read.layout();
    let (occupied_lanes, shifted_lanes) = (layout.lanes(OCCUPIED), layout.lanes(SHIFTED));
    let lane_lsb = read.lane_lsb();
    let continuation = if continues {
        CONTINUATION << read.shift()
    } else {
        0
    };
    shift_lanes_up(
        read,
        rewriter,
        end,
        |word| (unlocked_word::<S>(word, lane_lsb) & !occupied_lanes) | shifted_lanes,
        |moved| moved | continuation,
    );
}

/// Everything a removal will write, decided by [`plan_remove`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RemovePlan {
    /// The canonical slot of the removed fingerprint.
    pub(crate) quotient: usize,
    /// The canonical slot as it was read (locks read through).
    pub(crate) canonical: Slot,
    /// The start of the cluster holding the removed element.
    pub(crate) cluster_start: usize,
    /// Where the removed element is.
    pub(crate) position: usize,
    /// Whether the removed element was the head of its run.
    pub(crate) was_head: bool,
    /// Whether it was the only element of its run (the canonical slot loses its occupied bit).
    pub(crate) was_alone: bool,
}

/// Finds `(quotient, remainder)` from a cursor on slot `quotient`, for removal.
///
/// `Some(None)` if it is not stored; `None` if the cursor could not move.
#[inline]
pub(crate) fn plan_remove<S: GroupSource>(
    cursor: &mut Cursor<'_, S>,
    quotient: usize,
    remainder: u64,
) -> Option<Option<RemovePlan>> {
    let canonical = slot_at(cursor);
    if !canonical.is_occupied() {
        return Some(None);
    }
    let cluster_start = seek_run(cursor)?;
    let head = cursor.index();
    let RunSearch::Found(position) = search_run(cursor, remainder)? else {
        return Some(None);
    };
    let was_head = position == head;
    let next_continues = cursor.advance() && slot_at(cursor).is_continuation();
    Some(Some(RemovePlan {
        quotient,
        canonical,
        cluster_start,
        position,
        was_head,
        was_alone: was_head && !next_continues,
    }))
}

/// Writes a removal: the element at `position` goes, the shifted elements after it (up to the
/// next empty slot or cluster start) move one slot left, and the canonical slot loses its
/// occupied bit if its run is now empty (in the same group write as the element, or before it
/// when the canonical slot lies in an earlier group). An element that lands in its
/// canonical slot loses its shifted bit and starts a new cluster; `lock_new_cluster_start` says
/// whether such a slot is written read-locked (the concurrent filter does, paper 000 §3.2
/// "Deletions"). Other occupied bits stay with their positions.
///
/// `read` is a cursor on `position + 1`, `occupied` one on `quotient`; returns the index of the
/// slot that became empty.
///
/// Only a run head can land in its canonical slot (a continuation moves to a slot after its
/// run's head), and the run heads take the occupied slots after `quotient` as their canonical
/// slots, in order. So the shift counts the occupied slots it has passed that no run head has
/// taken yet (`ahead`): a run head lands home only if none is left and its new slot is
/// occupied. Where a group's moving slots hold no more run heads than that count, none of them
/// lands home, every moving slot keeps its bits, and the group's slots move with one shift of
/// the word; otherwise the slots move one at a time.
#[inline]
pub(crate) fn shift_out<S: GroupSource, C: Commit>(
    read: &mut Cursor<'_, S>,
    occupied: &mut Cursor<'_, S>,
    rewriter: &mut Rewriter<'_, C>,
    plan: &RemovePlan,
    lock_new_cluster_start: bool,
) -> usize {
    let clears_canonical = plan.was_alone;
    if clears_canonical && plan.quotient < plan.position {
        rewriter.put_whole(plan.quotient, plan.canonical.raw() & !OCCUPIED);
    }
    // `ahead`: occupied slots after the current run's canonical slot and before `target`,
    // whose runs start later; `target_occupied`: the occupied bit of `target`.
    let (mut ahead, mut target_occupied) = if plan.position > plan.quotient {
        occupied_up_to(occupied, plan.position)
    } else {
        (0, false)
    };
    let lsb = read.lane_lsb();
    let bits = read.slot_bits();
    let (continuation_lanes, shifted_lanes) = (lsb << 1, lsb << 2);
    let all_lanes = low_mask(read.layout().per_group() * bits);
    let mut target = plan.position;
    let mut first = true;
    loop {
        if !first {
            // The slots of this group from the cursor on, up to the first that does not move.
            let word = read.word();
            let from = all_lanes & !low_mask_below_64(read.shift());
            let stop = !word & shifted_lanes & from;
            let moving = if stop == 0 {
                from
            } else {
                from & low_mask_below_64(stop.trailing_zeros() - 2)
            };
            let moves = popcount(moving & lsb);
            let heads = popcount(!word & continuation_lanes & moving);
            if moves >= 2 && heads as usize <= ahead {
                let top = 63 - (moving & lsb).leading_zeros();
                let passed = popcount(word & lsb & moving & low_mask_below_64(top)) as usize;
                ahead = ahead - heads as usize + passed + usize::from(target_occupied);
                target_occupied = (word >> top) & 1 == 1;
                let values = word & moving & !lsb;
                let (group, lanes) = if read.shift() == 0 {
                    // The first slot goes to the last lane of the group before.
                    rewriter.put(target, values & low_mask(bits));
                    (read.group(), moving & !low_mask(bits))
                } else {
                    (read.group(), moving)
                };
                if lanes != 0 {
                    rewriter.put_lanes(group, lanes >> bits, (values & lanes) >> bits, 0);
                }
                target += moves as usize;
                let moved_on = if stop == 0 {
                    read.enter_next_group()
                } else {
                    read.jump_to_bit(stop.trailing_zeros() - 2);
                    true
                };
                if !moved_on {
                    break;
                }
                continue;
            }
        }
        let raw = read.slot();
        let next = slot_at(read);
        if !next.is_shifted() {
            break;
        }
        let mut moved = Slot::from_raw(next.element_bits());
        let lands_home = if first && plan.was_head && moved.is_continuation() {
            // The removed element headed this run: its successor heads it now.
            moved = moved.with_continuation(false);
            target == plan.quotient
        } else if !moved.is_continuation() && ahead == 0 {
            // A new run whose canonical slot is the next occupied one: this slot, if occupied.
            debug_assert!(
                target_occupied,
                "slot {target}: a run head before its canonical slot"
            );
            target_occupied
        } else {
            ahead -= usize::from(!moved.is_continuation());
            false
        };
        if !lands_home {
            // A canonical slot of a run still to come (the removal's own canonical slot only
            // reaches here unoccupied: `target_occupied` starts clear there).
            ahead += usize::from(target_occupied);
        }
        moved = moved.with_shifted(!lands_home);
        if lands_home && lock_new_cluster_start {
            // The whole slot, occupied bit included: `010` replaces the start's `100`.
            rewriter.put_whole(target, moved.raw() | READ_LOCK);
        } else if clears_canonical && target == plan.quotient {
            rewriter.put_whole(target, moved.raw());
        } else {
            rewriter.put(target, moved.raw());
        }
        // A moving slot is shifted, so it holds no lock: its occupied bit is as stored.
        target_occupied = raw & OCCUPIED != 0;
        target += 1;
        first = false;
        if !read.advance() {
            break;
        }
    }
    if clears_canonical && target == plan.quotient {
        rewriter.put_whole(target, Slot::EMPTY.raw());
    } else {
        rewriter.put(target, Slot::EMPTY.raw());
    }
    target
}

/// Moves `cursor` from its slot to slot `to` after it, a group at a time, and returns how many
/// slots strictly between them are occupied (locks read through) and whether `to` is.
#[inline]
fn occupied_up_to<S: GroupSource>(cursor: &mut Cursor<'_, S>, to: usize) -> (usize, bool) {
    let lsb = cursor.lane_lsb();
    let bits = cursor.slot_bits();
    let per_group = cursor.layout().per_group() as usize;
    let mut base = cursor.index() - (cursor.shift() / bits) as usize;
    // The lanes after the cursor's, then every lane of the groups further right.
    let mut after = !low_mask_nonzero(cursor.shift() + bits);
    let mut count = 0;
    loop {
        let word = unlocked_word::<S>(cursor.word(), lsb) & lsb;
        if to < base + per_group {
            let at = (to - base) as u32 * bits;
            let between = word & low_mask_below_64(at) & after;
            return (count + popcount(between) as usize, (word >> at) & 1 == 1);
        }
        count += popcount(word & after) as usize;
        if !cursor.enter_next_group() {
            return (count, false);
        }
        base += per_group;
        after = u64::MAX;
    }
}

/// The occupied-bit mask for [`Rewriter::new`]: the bit that stays with a slot's position.
pub(crate) const KEEP_OCCUPIED: u64 = OCCUPIED;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qf::sequential::SequentialQf;
    use crate::qf::slot::{STATUS_MASK, WRITE_LOCK};
    use crate::storage::test_arrays::{group_words, shift_cases};
    use crate::storage::{AtRest, Exclusive, SlotArray};
    use crate::sync::Ordering;
    use proptest::prelude::*;

    /// [`shift_out`] a slot at a time, as it was written before the group-at-a-time shift: the
    /// reference the lane-parallel one must match.
    fn shift_out_slot_by_slot<S: GroupSource, C: Commit>(
        read: &mut Cursor<'_, S>,
        occupied: &mut Cursor<'_, S>,
        rewriter: &mut Rewriter<'_, C>,
        plan: &RemovePlan,
        lock_new_cluster_start: bool,
    ) -> usize {
        let clears_canonical = plan.was_alone;
        if clears_canonical && plan.quotient < plan.position {
            rewriter.put_whole(plan.quotient, plan.canonical.raw() & !OCCUPIED);
        }
        // The removed element's slot is the canonical one when the run headed by it started there.
        let put = |rewriter: &mut Rewriter<'_, C>, index: usize, raw: u64| {
            if clears_canonical && index == plan.quotient {
                rewriter.put_whole(index, raw);
            } else {
                rewriter.put(index, raw);
            }
        };
        let mut target = plan.position;
        loop {
            let next = slot_at(read);
            if next.is_empty() || !next.is_shifted() {
                break;
            }
            let mut moved = Slot::from_raw(next.element_bits());
            if !moved.is_continuation() {
                // A new run: its canonical slot is the next occupied one after the previous run's.
                loop {
                    if !occupied.advance() {
                        break;
                    }
                    if slot_at(occupied).is_occupied() {
                        break;
                    }
                }
            } else if target == plan.position && plan.was_head {
                // The removed element headed this run: its successor heads it now.
                moved = moved.with_continuation(false);
            }
            let home = occupied.index();
            moved = moved.with_shifted(target != home);
            if target == home && lock_new_cluster_start {
                // The whole slot, occupied bit included: `010` replaces the start's `100`.
                rewriter.put_whole(target, moved.raw() | READ_LOCK);
            } else {
                put(rewriter, target, moved.raw());
            }
            target += 1;
            if !read.advance() {
                break;
            }
        }
        put(rewriter, target, Slot::EMPTY.raw());
        target
    }

    /// [`shift_in`] a slot at a time, as it was written before the group-at-a-time shift: the
    /// reference the lane-parallel one must match.
    fn shift_in_slot_by_slot<S: GroupSource, C: Commit>(
        read: &mut Cursor<'_, S>,
        rewriter: &mut Rewriter<'_, C>,
        plan: &InsertPlan,
        locked_start: Option<usize>,
    ) {
        if !plan.canonical.is_occupied() && plan.quotient < plan.position {
            rewriter.put_whole(plan.quotient, plan.canonical.raw() | OCCUPIED);
        }
        let mut carry = plan.element;
        for index in plan.position..=plan.end {
            let old = slot_at(read);
            if index == plan.end {
                let occupied = if index == plan.quotient { OCCUPIED } else { 0 };
                rewriter.put_whole(index, carry.raw() | occupied);
                break;
            }
            if Some(index) == locked_start {
                rewriter.put_whole(index, carry.raw() | READ_LOCK);
            } else {
                rewriter.put(index, carry.raw());
            }
            carry = Slot::from_raw(old.element_bits()).with_shifted(true);
            if index == plan.position && plan.old_head_continues {
                carry = carry.with_continuation(true);
            }
            read.advance();
        }
    }

    /// Applies `plan` to `array`, reading it through `source` (the array itself, or a view of
    /// it), with the slot-by-slot reference shift or with [`shift_in`].
    fn shift_with<S: GroupSource>(
        source: &S,
        array: &SlotArray,
        plan: &InsertPlan,
        locked_start: Option<usize>,
        slot_by_slot: bool,
    ) {
        let mut read = Cursor::over(source, plan.position, Ordering::Relaxed);
        let mut rewriter = Rewriter::new(array, Exclusive, KEEP_OCCUPIED);
        if slot_by_slot {
            shift_in_slot_by_slot(&mut read, &mut rewriter, plan, locked_start);
        } else {
            shift_in(&mut read, &mut rewriter, plan, locked_start);
        }
        rewriter.finish();
    }

    proptest! {
        /// The group-at-a-time shift writes exactly what the slot-at-a-time one writes, for
        /// every slot width, any slot contents (locks read through or not), any stretch within
        /// or across groups, and each special slot: the canonical slot's occupied bit, a
        /// displaced run head, a read-locked new cluster start and the end slot.
        #[test]
        fn the_lane_parallel_shift_writes_what_a_slot_by_slot_shift_writes(
            case in shift_cases(OCCUPIED),
            lock_position in any::<bool>(),
            through_locks in any::<bool>(),
        ) {
            let plan = InsertPlan {
                quotient: case.quotient,
                canonical: Slot::from_raw(case.canonical),
                cluster_start: case.quotient,
                position: case.position,
                end: case.end,
                element: Slot::from_raw(case.element),
                old_head_continues: case.old_head_continues,
            };
            let locked_start = lock_position.then_some(case.position);
            let (expected, actual) = (case.array(), case.array());
            if through_locks {
                shift_with(&expected, &expected, &plan, locked_start, true);
                shift_with(&actual, &actual, &plan, locked_start, false);
            } else {
                shift_with(&AtRest(&expected), &expected, &plan, locked_start, true);
                shift_with(&AtRest(&actual), &actual, &plan, locked_start, false);
            }
            prop_assert_eq!(group_words(&actual), group_words(&expected));
        }
    }

    /// Slots of the removal tables: `2^7` canonical slots.
    const REMOVAL_QUOTIENT_BITS: u32 = 7;

    /// A sequential table of `remainder_bits`-bit remainders holding, for each `(a, b)` of
    /// `keys`, quotient `(start + a % span) % 128` and remainder `b` (inserts refused as full
    /// are skipped): with a small span, clusters of many runs that reach across groups.
    fn removal_table(
        remainder_bits: u32,
        start: u64,
        span: u64,
        keys: &[(u64, u64)],
    ) -> SequentialQf {
        let q = REMOVAL_QUOTIENT_BITS;
        let mut filter = SequentialQf::with_bits(q, remainder_bits).unwrap();
        for &(a, b) in keys {
            let quotient = (start + a % span) % (1 << q);
            let remainder = b & crate::hash::low_mask(remainder_bits);
            let hash = ((quotient << remainder_bits) | remainder) << (64 - q - remainder_bits);
            let _ = filter.insert_hash(hash);
        }
        filter
    }

    /// The arguments of [`removal_table`]: remainder bits from 1 to 57 (slots of 4 to 60 bits),
    /// any start, spans from 1 to the whole table, up to 119 keys.
    fn removal_tables() -> impl Strategy<Value = (u32, u64, u64, Vec<(u64, u64)>)> {
        (
            1u32..=57,
            0u64..128,
            1u64..=128,
            prop::collection::vec((any::<u64>(), any::<u64>()), 1..120),
        )
    }

    /// Applies the removal `plan` to `array` with the slot-by-slot reference or with
    /// [`shift_out`]; returns the slot that became empty.
    fn remove_with(array: &SlotArray, plan: &RemovePlan, lock: bool, slot_by_slot: bool) -> usize {
        let mut read = Cursor::over(array, plan.position + 1, Ordering::Relaxed);
        let mut occupied = Cursor::over(array, plan.quotient, Ordering::Relaxed);
        let mut rewriter = Rewriter::new(array, Exclusive, KEEP_OCCUPIED);
        let emptied = if slot_by_slot {
            shift_out_slot_by_slot(&mut read, &mut occupied, &mut rewriter, plan, lock)
        } else {
            shift_out(&mut read, &mut occupied, &mut rewriter, plan, lock)
        };
        rewriter.finish();
        emptied
    }

    proptest! {
        /// The removal that moves a group's slots at once writes exactly what the
        /// slot-at-a-time removal writes, on consistent tables of every slot width from 4 to 60
        /// bits, from sparse ones to long clusters of many runs, for any stored fingerprint, with
        /// new cluster starts written read-locked or not; and the table stays valid.
        #[test]
        fn the_lane_parallel_removal_writes_what_a_slot_by_slot_removal_writes(
            (remainder_bits, start, span, keys) in removal_tables(),
            pick in any::<prop::sample::Index>(),
            lock in any::<bool>(),
        ) {
            let (expected, actual) = (
                removal_table(remainder_bits, start, span, &keys),
                removal_table(remainder_bits, start, span, &keys),
            );
            let stored: Vec<_> = expected.fingerprints().collect();
            let victim = stored[pick.index(stored.len())];
            let quotient = victim.quotient as usize;
            let array = &expected.table.slots;
            let mut cursor = Cursor::over(array, quotient, Ordering::Relaxed);
            let plan = plan_remove(&mut cursor, quotient, victim.remainder)
                .flatten()
                .expect("a stored fingerprint can be removed");
            let emptied = remove_with(array, &plan, lock, true);
            prop_assert_eq!(remove_with(&actual.table.slots, &plan, lock, false), emptied);
            prop_assert_eq!(group_words(&actual.table.slots), group_words(array));
            if !lock {
                let mut removed = actual;
                removed.len -= 1;
                prop_assert!(removed.check_invariants().is_ok());
            }
        }
    }

    /// The lookup of the papers' pseudocode, a slot at a time with no masks (paper 003,
    /// "Lookup"): back to the cluster start over shifted slots, then forward one run per
    /// occupied canonical slot passed, then along the run. The oracle the word-at-a-time walks
    /// answer as; `(found, cluster start)` as [`lookup`] gives them.
    fn lookup_slot_by_slot(
        slots: &[Slot],
        quotient: usize,
        remainder: u64,
    ) -> (bool, Option<usize>) {
        if !slots[quotient].is_occupied() {
            return (false, None);
        }
        let mut canonical = quotient;
        while slots[canonical].is_shifted() {
            canonical -= 1;
        }
        let cluster_start = canonical;
        let mut run = canonical;
        while canonical != quotient {
            run += 1;
            while slots[run].is_continuation() {
                run += 1;
            }
            canonical += 1;
            while !slots[canonical].is_occupied() {
                canonical += 1;
            }
        }
        loop {
            if slots[run].remainder() == remainder {
                return (true, Some(cluster_start));
            }
            run += 1;
            if run == slots.len() || !slots[run].is_continuation() {
                return (false, Some(cluster_start));
            }
        }
    }

    proptest! {
        /// The word-at-a-time walks answer as a walk a slot at a time does, on consistent tables
        /// of every slot width from 4 to 60 bits (so groups whose last lane ends at bit 63 and
        /// groups with unused high bits): every lookup (answer and cluster start) against
        /// [`lookup_slot_by_slot`], and the search for an empty slot ([`seek_empty`],
        /// [`group_has_empty_from`]) from every slot against a scan.
        #[test]
        fn the_walks_answer_as_a_walk_a_slot_at_a_time(
            (remainder_bits, start, span, keys) in removal_tables(),
            probes in prop::collection::vec(any::<u64>(), 1..8),
        ) {
            let filter = removal_table(remainder_bits, start, span, &keys);
            let array = &filter.table.slots;
            let at_rest = AtRest(array);
            let slots: Vec<Slot> = (0..array.len())
                .map(|i| Slot::from_raw(array.get(i, Ordering::Relaxed)))
                .collect();
            let mut remainders: Vec<u64> = filter.fingerprints().map(|f| f.remainder).collect();
            remainders.extend(probes.iter().map(|p| p & crate::hash::low_mask(remainder_bits)));
            for quotient in 0..slots.len() - 1 {
                for &remainder in &remainders {
                    let walked =
                        lookup(&mut Cursor::over(&at_rest, quotient, Ordering::Relaxed), remainder);
                    let expected = lookup_slot_by_slot(&slots, quotient, remainder);
                    prop_assert_eq!(walked, Some(expected), "quotient {}", quotient);
                }
            }
            for index in 0..slots.len() {
                let first_empty = (index..slots.len()).find(|&i| slots[i].is_empty());
                let cursor = Cursor::over(&at_rest, index, Ordering::Relaxed);
                prop_assert_eq!(seek_empty(&mut cursor.clone()), first_empty, "from {}", index);
                let per_group = array.layout().per_group() as usize;
                let group_end = (index / per_group + 1) * per_group;
                let in_group = first_empty.is_some_and(|empty| empty < group_end);
                prop_assert_eq!(group_has_empty_from(&cursor), in_group, "from {}", index);
            }
        }
    }

    /// Puts lock statuses into `array` where the concurrent filter puts them: a read lock on each
    /// cluster start whose bit in `read_locks` (by slot, modulo 64) is set, a write lock on each
    /// empty slot whose bit in `write_locks` is set.
    fn lock_some(array: &SlotArray, read_locks: u64, write_locks: u64) {
        for index in 0..array.len() {
            let (read, write) = (
                read_locks >> (index % 64) & 1,
                write_locks >> (index % 64) & 1,
            );
            array.update_slot(index, |slot| {
                if slot & STATUS_MASK == OCCUPIED && read == 1 {
                    Some((slot & !STATUS_MASK) | READ_LOCK)
                } else if slot == 0 && write == 1 {
                    Some(WRITE_LOCK)
                } else {
                    None
                }
            });
        }
    }

    proptest! {
        /// A walk over [`LocksReadThrough`], which reads each group's locks through once as it
        /// loads it, answers every lookup as the same walk over the locked table that reads
        /// them through at every step, and as the walk over the table without the locks: on
        /// tables of every slot width from 4 to 60 bits with read-locked cluster starts and
        /// write-locked empty slots, for stored and absent fingerprints of every quotient.
        #[test]
        fn reading_locks_through_at_load_answers_as_at_every_step(
            (remainder_bits, start, span, keys) in removal_tables(),
            read_locks in any::<u64>(),
            write_locks in any::<u64>(),
            probes in prop::collection::vec(any::<u64>(), 1..8),
        ) {
            let filter = removal_table(remainder_bits, start, span, &keys);
            let at_rest = AtRest(&filter.table.slots);
            let locked = removal_table(remainder_bits, start, span, &keys).table.slots;
            lock_some(&locked, read_locks, write_locks);
            let through = LocksReadThrough(&locked);
            let mut remainders: Vec<u64> = filter.fingerprints().map(|f| f.remainder).collect();
            remainders.extend(probes.iter().map(|p| p & crate::hash::low_mask(remainder_bits)));
            for quotient in 0..filter.table.slots.len() - 1 {
                for &remainder in &remainders {
                    let expected =
                        lookup(&mut Cursor::over(&at_rest, quotient, Ordering::Relaxed), remainder);
                    let per_step =
                        lookup(&mut Cursor::over(&&locked, quotient, Ordering::Relaxed), remainder);
                    let at_load =
                        lookup(&mut Cursor::over(&through, quotient, Ordering::Relaxed), remainder);
                    prop_assert_eq!(per_step, expected, "quotient {}", quotient);
                    prop_assert_eq!(at_load, expected, "quotient {}", quotient);
                }
            }
        }
    }
}
