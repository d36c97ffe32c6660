//! [`Rewriter`] and [`Commit`]: writing a shift's slots in increasing order, one publication per
//! group (paper 000 §3.2, Block E), and [`shift_lanes_up`], the insert shift for every slot
//! format.

use super::{Cursor, GroupSource, SlotArray, SlotLayout};
use crate::hash::low_mask;
use crate::sync::Ordering;

/// How a [`Rewriter`] publishes a group it changed.
///
/// The sequential filter stores the new word; concurrent filters compare-and-exchange it,
/// keeping the slots outside the rewritten lanes as other threads left them, and wait out locks.
pub(crate) trait Commit {
    /// Publishes group `group`: `compose` maps the word as it is now to the new word, and
    /// `range` masks the lanes it rewrites.
    fn commit(&self, array: &SlotArray, group: usize, range: u64, compose: impl Fn(u64) -> u64);
}

/// [`Commit`] for an array only this thread can see (`&mut` access to its owner).
#[derive(Clone, Copy)]
pub(crate) struct Exclusive;

impl Commit for Exclusive {
    #[inline]
    fn commit(&self, array: &SlotArray, group: usize, _range: u64, compose: impl Fn(u64) -> u64) {
        // Relaxed: the owner holds `&mut`, so no other thread accesses the array.
        let word = array.load_group(group, Ordering::Relaxed);
        array.store_group(group, compose(word), Ordering::Relaxed);
    }
}

/// [`Commit`] for lanes that this thread alone may write in an array that other threads write
/// elsewhere, even inside the same group: a CAS loop that keeps every other lane as it is now.
/// Serves the status-bit locked filters (the thread holds the locks that guard its lanes) and
/// the parallel batch inserts and removes (paper 004 §IV-B, §IV-D: each thread rewrites its own
/// superclusters or clusters, and neighbouring ones may share a group).
#[derive(Clone, Copy)]
pub(crate) struct Guarded;

impl Commit for Guarded {
    #[inline]
    fn commit(&self, array: &SlotArray, group: usize, _range: u64, compose: impl Fn(u64) -> u64) {
        // Relaxed load and failure: `compose` reads nothing but the word, and the CAS succeeds
        // only against the word as it is now, so what it carries over (lanes outside `range`,
        // and bits inside it that `compose` keeps, such as occupied bits, which may come from
        // earlier holders of the lock) is current without any ordering; nothing else is read
        // from the word.
        // Release on success: publishes the rewritten lanes to readers of the group.
        let mut word = array.load_group(group, Ordering::Relaxed);
        loop {
            match array.compare_exchange_group(
                group,
                word,
                compose(word),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }
}

/// [`Commit`] that only computes the new word of one group from a snapshot, for lock-elided fast
/// paths, which then publish it with a single CAS against that snapshot (paper 000 §3.2,
/// "Avoiding locks").
pub(crate) struct Preview {
    group: usize,
    snapshot: u64,
    result: std::cell::Cell<u64>,
}

impl Preview {
    /// A preview of changes to `group`, whose word was `snapshot`.
    pub(crate) fn new(group: usize, snapshot: u64) -> Self {
        Preview {
            group,
            snapshot,
            result: std::cell::Cell::new(snapshot),
        }
    }

    /// The snapshot with every committed change applied.
    pub(crate) fn result(&self) -> u64 {
        self.result.get()
    }
}

impl Commit for &Preview {
    fn commit(&self, _array: &SlotArray, group: usize, _range: u64, compose: impl Fn(u64) -> u64) {
        debug_assert_eq!(group, self.group, "a fast-path write stays in its group");
        self.result.set(compose(self.snapshot));
    }
}

/// Rewrites slots in increasing index order, publishing each group once.
///
/// The shifts of a quotient filter (insert moves a stretch of slots one place right, remove one
/// place left) are written slot by slot as `put(index, value)` in increasing order; the rewriter
/// gathers the new values of one group and hands them to its [`Commit`] when the writes move on
/// to the next group, so every group changes in one step (paper 000 §3.2, Block E: "keep groups
/// consistent"). [`put`](Rewriter::put) leaves the bits under the `keep` pattern as they are in
/// the group when it is committed: the status bits that belong to a slot position rather than to
/// the element stored there. [`put_whole`](Rewriter::put_whole) sets every bit.
pub(crate) struct Rewriter<'a, C: Commit> {
    array: &'a SlotArray,
    /// The array's layout, possibly a constant one ([`FixedWidth`](super::FixedWidth)), so that
    /// locating the written slots folds into the instructions.
    layout: &'a SlotLayout,
    commit: C,
    keep: u64,
    group: usize,
    /// New bits of the rewritten lanes (kept bits clear where `put` wrote).
    values: u64,
    /// Lanes rewritten in the current group.
    range: u64,
    /// Bits of the current word that survive in rewritten lanes (kept bits of `put` lanes).
    survive: u64,
    active: bool,
}

impl<'a, C: Commit> Rewriter<'a, C> {
    /// A rewriter over `array` whose [`put`](Rewriter::put) keeps the bits of `keep_pattern`.
    #[inline]
    pub(crate) fn new(array: &'a SlotArray, commit: C, keep_pattern: u64) -> Self {
        Self::laid_out(array, &array.layout, commit, keep_pattern)
    }

    /// [`new`](Self::new), locating slots with `layout`, which must be the array's: taken
    /// from a [`GroupSource`] view of the array, such as a [`FixedWidth`](super::FixedWidth) one.
    #[inline]
    pub(crate) fn laid_out(
        array: &'a SlotArray,
        layout: &'a SlotLayout,
        commit: C,
        keep_pattern: u64,
    ) -> Self {
        debug_assert_eq!(*layout, array.layout, "a layout that is not the array's");
        Rewriter {
            array,
            layout,
            commit,
            keep: keep_pattern,
            group: 0,
            values: 0,
            range: 0,
            survive: 0,
            active: false,
        }
    }

    /// Sets slot `index` to `value`, except for the kept bits. Indices must increase.
    #[inline]
    pub(crate) fn put(&mut self, index: usize, value: u64) {
        self.write(index, value, self.keep);
    }

    /// Sets all of slot `index` to `value`, kept bits included. Indices must increase.
    #[inline]
    pub(crate) fn put_whole(&mut self, index: usize, value: u64) {
        self.write(index, value, 0);
    }

    #[inline]
    fn write(&mut self, index: usize, value: u64, keep: u64) {
        let layout = self.layout;
        let (group, offset) = layout.locate(index);
        let shift = offset * layout.bits();
        let lane = layout.slot_mask() << shift;
        self.merge(
            group,
            lane,
            value << shift,
            (keep & layout.slot_mask()) << shift,
        );
    }

    /// Sets the lanes of `group` under `range` (a mask of whole lanes) to `values` at once,
    /// except for the kept bits, as [`put`](Self::put) on each of them would, and the lanes
    /// under `whole` (inside `range`) entirely, as [`put_whole`](Self::put_whole) would. The
    /// lanes must lie after every slot written before: a shift writes a group's worth of
    /// slots with one call.
    #[inline]
    pub(crate) fn put_lanes(&mut self, group: usize, range: u64, values: u64, whole: u64) {
        let keep = self.layout.lanes(self.keep) & range & !whole;
        self.merge(group, range, values, keep);
    }

    /// Adds `values` in the lanes of `range` of `group` to the pending changes, keeping the
    /// bits of `keep` (inside `range`) as the group holds them when it is committed.
    #[inline]
    fn merge(&mut self, group: usize, range: u64, values: u64, keep: u64) {
        if !self.active || group != self.group {
            debug_assert!(
                !self.active || group > self.group,
                "rewrites go left to right"
            );
            self.flush();
            self.group = group;
            self.values = 0;
            self.range = 0;
            self.survive = 0;
            self.active = true;
        }
        debug_assert!(self.range & range == 0, "each slot is written once");
        self.range |= range;
        self.survive |= keep;
        self.values |= values & range & !keep;
    }

    /// Publishes the group being written, if any.
    #[inline]
    fn flush(&mut self) {
        if self.active {
            let (range, survive, values) = (self.range, self.survive, self.values);
            self.commit
                .commit(self.array, self.group, range, move |now| {
                    (now & !range) | (now & survive) | values
                });
            self.active = false;
        }
    }

    /// Publishes the last group.
    #[inline]
    pub(crate) fn finish(mut self) {
        self.flush();
    }
}

/// Moves the slots `from..end` one slot right, a group at a time: `read` is a cursor on `from`
/// over the old contents, and the new ones go through `rewriter`, slot `end` (an empty slot
/// the move fills) written whole and the others with the rewriter's kept bits left as they
/// are. `moved` maps a group's snapshot to what each of its lanes' slots becomes one lane up
/// (the slot format's changes to a moved element, the same in every lane); `edit_first` then
/// edits the first snapshot's result, where the slot at `from` is. This is the shift of a
/// quotient filter insert (paper 000 §2.1), for every slot format and width.
///
/// Every lane of a snapshot moves up one lane with one shift of the word, and the top lane's
/// slot is carried into lane 0 of the next group:
///
/// ```text
///  group g                    group g + 1
///  | d | c | b | a |          | f | e | . | x |    from: a, end: x (empty)
///  | c | b | a | . |          | f | e | . | d |    after (`from` keeps its old content)
///   lane 3      lane 0
/// ```
///
/// A group after the first is loaded only if a slot before `end` lies in it. Groups are
/// written in increasing order, each once, after every group before it was loaded.
#[inline]
pub(crate) fn shift_lanes_up<S: GroupSource, C: Commit>(
    read: &mut Cursor<'_, S>,
    rewriter: &mut Rewriter<'_, C>,
    end: usize,
    moved: impl Fn(u64) -> u64,
    edit_first: impl FnOnce(u64) -> u64,
) {
    let from = read.index();
    debug_assert!(from < end, "nothing to move");
    let layout = *read.layout();
    let (bits, per_group) = (layout.bits(), layout.per_group());
    let mut sources = edit_first(moved(read.word()));
    let mut group = read.group();
    // The first slot still to write, and its lane in `group`.
    let mut next = from + 1;
    let mut lane = read.shift() / bits + 1;
    // The slot leaving the previous group's top lane, for lane 0 of this one.
    let mut carried = 0;
    loop {
        if lane == per_group {
            carried = (sources >> ((per_group - 1) * bits)) & layout.slot_mask();
            group += 1;
            lane = 0;
            sources = if next < end {
                let entered = read.enter_next_group();
                debug_assert!(entered, "the end is inside the array");
                moved(read.word())
            } else {
                0
            };
        }
        let count = (per_group - lane).min((end - next + 1) as u32);
        let range = low_mask(count * bits) << (lane * bits);
        // Lane k takes the slot of lane k - 1; lane 0 the carried one.
        let up = if bits < 64 { sources << bits } else { 0 };
        let values = if lane == 0 { up | carried } else { up };
        next += count as usize;
        if next > end {
            let whole = layout.slot_mask() << ((lane + count - 1) * bits);
            rewriter.put_lanes(group, range, values, whole);
            return;
        }
        rewriter.put_lanes(group, range, values, 0);
        lane += count;
    }
}
