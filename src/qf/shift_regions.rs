//! Shift regions (beyond paper 000 §3.2, whose queries lock their cluster or supercluster): a
//! [`SeqWord`] per region of [`REGION_GROUPS`] groups that every locked shift counts itself in,
//! so that a query's walk without locks over several groups can tell that no locked shift wrote
//! its region while it walked, and keep its answer without a lock. `LocallyLockedQf` and
//! `TwoBitQf` use them; why a walk so read is exact differs between their tables, so each has
//! its section below.
//!
//! # The regions
//!
//! A locked insert or removal shifts elements across groups, one group commit at a time, so a
//! walk that overlaps it can read some groups before it and some after it and miss an element
//! that is in flight between two groups. Each one counts itself in flight on every region its
//! group commits lie in, from after it holds its locks until after its last commit
//! ([`ShiftRegions::shifting`]); one that does not know beforehand where its shift stops (a
//! `TwoBitQf` removal) counts itself on each region as its writes reach it, before the first
//! there ([`ShiftRegions::reaching`]). Every other write changes one group with one CAS.
//!
//! A query loads its canonical slot's region word before its walk ([`ShiftRegions::read_begin`])
//! and, if the walk went over several groups and missed (or hit, for `contains_locked`), again
//! after it ([`ShiftRegions::walk_stands`]); the answer stands if no shift was in flight in the
//! region at the first load, none counted itself there before the second, and the walk read only
//! groups of that region. Then every locked-shift write the walk read is one of a shift that
//! finished before the first load, which (Acquire, against the shift's Release decrement) makes the
//! walk see all of that shift's writes: a shift not yet counted on the region by the second load
//! had made no write there that the walk could read (it counts itself there before its first write
//! there, and the walk would see that count in its second load: see [`SeqWord`]). What is left are
//! the one-CAS writes, which the sections below show cannot make a walk over several groups answer
//! wrong.
//!
//! A locked shift that panics halfway (only debug assertions can) leaves its locks held and its
//! stretch torn. Its count ends as it unwinds ([`Writing`]'s drop), so queries of its region may
//! then answer from the torn stretch where, before the regions, they waited on its lock for
//! ever: the filter is broken either way.
//!
//! The first load comes before every walk, also the many that end in the canonical slot's group
//! and need no word. A build of `LocallyLockedQf` that loaded the word only after a first walk
//! missed over several groups, and then walked again between two loads, made absent lookups at
//! 72% fill 6-12% slower than the read lock and second walk it replaced (2026-11-29), where this
//! one made them faster.
//!
//! # `LocallyLockedQf`
//!
//! Its locked inserts and removals count themselves from their cluster start's group to their
//! write lock's group (every group they commit lies there). Its one-CAS writes each change one
//! group in a way that group alone decides: a lock-free insert or removal changes a cluster that
//! starts in that group and ends before an empty slot of it, and an insert into an empty
//! canonical slot (under that slot's write lock, or a cascading insert's) fills just that slot.
//! None of them writes another group, or changes, makes or extends a cluster that reaches into
//! another group. One may make or extend a cluster that ends at its group's last slot; the slot
//! after it, the next group's first, stays empty or a cluster start under all of them (only a
//! shift out of the group before, a counted locked shift, makes it a shifted one).
//!
//! A walk reads more than one group only if its cluster reaches into another group (it went back
//! past its group's first slot, or forward past the last) or ends at its group's last slot. In
//! the first case none of those writes changes the cluster's slots, and the slot after the
//! cluster stays empty or a cluster start. In the second the walk read its own group once, as one
//! load, and then only the next group's first slot, which tells it the cluster ended whatever
//! those writes do. So while no locked shift is in flight, such a walk answers, hit or miss, as
//! the table was at one moment: its answer is exact.
//!
//! # `TwoBitQf`
//!
//! Every removal is locked. A locked insert that shifts counts itself from its left lock's group to
//! its right lock's group; a removal counts itself on each region it writes from before its first
//! write there until after its last commit (where its shift stops, at the next unfilled slot or run
//! in its own canonical slot, it learns only by getting there; its left lock's region, if it writes
//! nothing there, it does not count). Taking or releasing a lock changes nothing a walk reads (a
//! locked slot reads as empty). The one-CAS writes are an insert whose supercluster lies in one
//! group with both its boundary slots (a lock-free insert: it moves elements inside that
//! supercluster and fills its right boundary), and an insert into an empty canonical slot
//! (lock-free, or into the slot an insert locked as its left lock), which fills just that slot.
//! Neither empties a slot, or moves an element of a supercluster that does not lie in one group
//! with both its boundary slots. Superclusters only grow meanwhile, so one that does not keeps
//! every element where it is while no locked shift is in flight in its region: it can gain an
//! element at its right end (a run in its own canonical slot, so any run before it still ends where
//! it did; the supercluster after it may join it there, which changes nothing before that slot) or
//! be joined on its left by a filled boundary (the runs on the left all end at or before that slot,
//! so counting runs from the slot after it still finds the same run).
//!
//! A walk goes back from the canonical slot to the boundary, the first slot on its left that is not
//! filled, and then forward from the boundary to the end of the run. It loads a group on entering
//! it, so it reads more than one group only if it went back past the canonical group's first slot
//! or forward past its last. Then the first load of the canonical group already showed a
//! supercluster that does not lie in that group with both its boundary slots (filled from the
//! group's first slot to the canonical slot, or up to its last slot), and no write but a locked
//! shift changes any slot of that supercluster from that load on, whichever group the walk reads it
//! from later; besides those slots the walk may read an element gained at the end, or a filled
//! boundary with the supercluster it joined, as just described. So while no locked shift is in
//! flight in the region, such a walk answers, hit or miss, as the table was at one moment: its
//! answer is exact.
//!
//! Counting a shift on its left lock's region alone would not do, although a walk that reads a
//! shift's stretch from the start finds that lock as its boundary. A walk reads its boundary once,
//! first; an insert into that empty slot (a one-CAS write, counted nowhere) may fill it afterwards
//! and join the walk's supercluster to the one on its left, whose boundary may lie in the region
//! before, and a locked shift that then takes that boundary as its left lock writes groups the
//! walk has still to read. Only its count on the regions it writes turns the walk away (loom:
//! `two_bit_query_whose_boundary_a_merge_fills_beside_a_removal_from_the_region_before`, and the
//! same beside an insert). Conversely, a walk that reads groups of the region before its own is
//! turned away by that alone: a shift there need not touch, or count itself on, the walk's
//! region (loom: `two_bit_query_reaching_back_into_the_region_before_beside_a_removal_there`).

use crate::qf::seq_word::{SeqWord, Writing};
use crate::qf::walk::UnlockedWalk;
use crate::storage::{SlotArray, SlotLayout};

/// The groups of one region, as a power of two: 1,024 groups (4,096 slots of 13 to 16 bits). A
/// walk over several groups rarely crosses a region's boundary, and a table of `2^22` slots has
/// 1,024 regions (8 KiB of words).
const REGION_GROUP_BITS: u32 = 10;

/// The groups of one region.
pub(crate) const REGION_GROUPS: usize = 1 << REGION_GROUP_BITS;

/// The shift regions of one table.
pub(crate) struct ShiftRegions {
    words: Box<[SeqWord]>,
    /// The groups of a region as a power of two: [`REGION_GROUP_BITS`], but under loom also a
    /// region of a few groups, so that a model's small table holds several
    /// ([`ShiftRegions::of_small`]).
    #[cfg(loom)]
    group_bits: u32,
}

/// What [`ShiftRegions::read_begin`] read: the region of the canonical slot's group and its
/// word then.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QuietRegion {
    region: usize,
    word: u64,
}

#[cfg(all(test, not(loom)))]
impl QuietRegion {
    /// Whether the word showed a locked shift in flight (or there was none to read).
    pub(crate) fn shift_in_flight(&self) -> bool {
        SeqWord::in_flight(self.word)
    }
}

/// A locked shift counted on each region from before its first write there
/// ([`ShiftRegions::reaching`]).
pub(crate) struct Reach<'a> {
    writing: Writing<'a>,
    /// The region of the shift's first slot: the writer's first word.
    first_region: usize,
    slots_per_region: usize,
    /// The first slot of the first region the shift is not counted on.
    uncounted_from: usize,
}

impl Reach<'_> {
    /// Counts the shift in flight on the region of `slot` (and any between the first and it)
    /// if it is not yet; call it before writing `slot`. Slots must not decrease.
    #[inline]
    pub(crate) fn before_write(&mut self, slot: usize) {
        if slot >= self.uncounted_from {
            self.count_through(slot);
        }
    }

    /// Whether the shift is counted on the region of `slot`.
    pub(crate) fn counts(&self, slot: usize) -> bool {
        slot < self.uncounted_from
    }

    #[inline(never)]
    fn count_through(&mut self, slot: usize) {
        let region = slot / self.slots_per_region;
        debug_assert!(
            region >= self.first_region,
            "a write before the shift's first slot"
        );
        self.writing.count_first(region - self.first_region + 1);
        self.uncounted_from = (region + 1) * self.slots_per_region;
    }
}

impl ShiftRegions {
    /// The regions of the table `slots`.
    pub(crate) fn of(slots: &SlotArray) -> Self {
        Self::new(slots.layout().groups_for(slots.len()))
    }

    /// The regions of a table of `groups` groups.
    pub(crate) fn new(groups: usize) -> Self {
        Self::with_group_bits(groups, REGION_GROUPS.trailing_zeros())
    }

    /// The regions of the table `slots`, each of `2^group_bits` groups (loom models only: a
    /// model's table of a few groups then holds several regions, and its shifts cross them).
    #[cfg(loom)]
    pub(crate) fn of_small(slots: &SlotArray, group_bits: u32) -> Self {
        Self::with_group_bits(slots.layout().groups_for(slots.len()), group_bits)
    }

    fn with_group_bits(groups: usize, group_bits: u32) -> Self {
        let regions = groups.div_ceil(1 << group_bits).max(1);
        ShiftRegions {
            words: (0..regions).map(|_| SeqWord::new()).collect(),
            #[cfg(loom)]
            group_bits,
        }
    }

    /// No regions: no query's walk stands on a word, every miss over several groups takes the
    /// lock (see `LocallyLockedQf::locking_every_miss`, for loom models).
    #[cfg(any(test, loom))]
    pub(crate) fn none() -> Self {
        ShiftRegions {
            words: Box::new([]),
            #[cfg(loom)]
            group_bits: REGION_GROUP_BITS,
        }
    }

    /// The memory the words take.
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.words)
    }

    /// The groups of a region, as a power of two.
    #[inline]
    fn group_bits(&self) -> u32 {
        #[cfg(loom)]
        return self.group_bits;
        #[cfg(not(loom))]
        REGION_GROUP_BITS
    }

    #[inline]
    fn region(&self, group: usize) -> usize {
        group >> self.group_bits()
    }

    /// A locked shift that commits groups in `first..=last`, in flight until the result drops.
    /// Start it after taking the locks and before the first commit.
    pub(crate) fn shifting(&self, first: usize, last: usize) -> Writing<'_> {
        // `get`: none at all without regions (`none`).
        let words = self.words.get(self.region(first)..=self.region(last));
        debug_assert!(
            words.is_some() || self.words.is_empty(),
            "a shift of groups {first}..={last} past the last region"
        );
        Writing::start(words.unwrap_or_default())
    }

    /// A locked shift that writes slots left to right, none before slot `first`, and does not
    /// know beforehand where it stops (a `TwoBitQf` removal): it counts itself in flight on
    /// each region with [`Reach::before_write`], until the result drops. Make it holding the
    /// locks.
    pub(crate) fn reaching(&self, layout: &SlotLayout, first: usize) -> Reach<'_> {
        let slots_per_region = (layout.per_group() as usize) << self.group_bits();
        let first_region = first / slots_per_region;
        // `get`: none at all without regions (`none`).
        let words = self.words.get(first_region..);
        debug_assert!(
            words.is_some_and(|words| !words.is_empty()) || self.words.is_empty(),
            "a shift from slot {first}, past the last region"
        );
        Reach {
            writing: Writing::pending(words.unwrap_or_default()),
            first_region,
            slots_per_region,
            uncounted_from: first_region * slots_per_region,
        }
    }

    /// The word of `group`'s region before a walk from it, whatever it shows: a word with a
    /// locked shift in flight (or none at all, without regions: `none`) only makes
    /// [`walk_stands`](Self::walk_stands) say no. Every query loads it, so it is a plain load
    /// with no test; most walks never ask.
    #[inline]
    pub(crate) fn read_begin(&self, group: usize) -> QuietRegion {
        let region = self.region(group);
        let word = match self.words.get(region) {
            Some(word) => word.begin(),
            None => SeqWord::NEVER_STANDS,
        };
        QuietRegion { region, word }
    }

    /// Whether a walk that read groups `first..=last` (with `Acquire` loads) after
    /// [`read_begin`](Self::read_begin) gave `quiet` read a consistent table: those groups lie
    /// in `quiet`'s region, no locked shift was in flight there at the first load, and none
    /// counted itself there since.
    #[inline]
    pub(crate) fn read_stands(&self, quiet: QuietRegion, first: usize, last: usize) -> bool {
        // The word first: without regions it is `NEVER_STANDS`, and the region no index.
        !SeqWord::in_flight(quiet.word)
            && self.region(first) == quiet.region
            && self.region(last) == quiet.region
            && self.words[quiet.region].read_stands(quiet.word)
    }

    /// Whether `walk`, made after [`read_begin`](Self::read_begin) gave `quiet` for its
    /// canonical group, finished and read a consistent table: it read only groups of that
    /// region, and no locked shift was in flight there at any moment of the walk.
    #[inline]
    pub(crate) fn walk_stands(&self, quiet: QuietRegion, walk: &UnlockedWalk) -> bool {
        match walk.groups {
            Some((first, last)) => self.read_stands(quiet, first, last),
            None => false,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_shift_turns_away_the_walks_of_every_region_it_spans_and_no_other() {
        let regions = ShiftRegions::new(4 * REGION_GROUPS);
        assert_eq!(regions.words.len(), 4);
        let g = |region: usize, offset: usize| region * REGION_GROUPS + offset;
        let quiet: Vec<QuietRegion> = (0..4).map(|r| regions.read_begin(g(r, 5))).collect();
        // A shift from the last group of region 1 into region 2.
        let shift = regions.shifting(g(1, REGION_GROUPS - 1), g(2, 0));
        assert!(regions.read_begin(g(1, 0)).shift_in_flight());
        assert!(regions.read_begin(g(2, 9)).shift_in_flight());
        assert!(!regions.read_begin(g(0, 0)).shift_in_flight());
        assert!(!regions.read_begin(g(3, 0)).shift_in_flight());
        drop(shift);
        assert!(regions.read_stands(quiet[0], g(0, 0), g(0, REGION_GROUPS - 1)));
        assert!(regions.read_stands(quiet[3], g(3, 1), g(3, 2)));
        assert!(!regions.read_stands(quiet[1], g(1, 3), g(1, 6)));
        assert!(!regions.read_stands(quiet[2], g(2, 3), g(2, 6)));
    }

    #[test]
    fn a_reaching_shift_counts_itself_on_a_region_from_its_first_write_there_until_it_ends() {
        // Four slots per group: a region is 4,096 slots.
        let layout = SlotLayout::new(16);
        let slots = REGION_GROUPS * 4;
        let regions = ShiftRegions::new(3 * REGION_GROUPS);
        let mut shift = regions.reaching(&layout, 7);
        assert!(
            !regions.read_begin(1).shift_in_flight(),
            "nothing written yet"
        );
        shift.before_write(7);
        shift.before_write(slots - 1);
        assert!(regions.read_begin(0).shift_in_flight());
        let quiet = regions.read_begin(REGION_GROUPS + 3);
        assert!(!quiet.shift_in_flight(), "no write in region 1 yet");
        shift.before_write(slots);
        assert!(regions.read_begin(REGION_GROUPS).shift_in_flight());
        assert!(shift.counts(slots + 1) && !shift.counts(2 * slots));
        shift.before_write(slots + 1);
        assert!(!regions.read_begin(2 * REGION_GROUPS).shift_in_flight());
        assert!(!regions.read_stands(quiet, REGION_GROUPS + 3, REGION_GROUPS + 4));
        drop(shift);
        let after = regions.read_begin(REGION_GROUPS + 3);
        assert!(!after.shift_in_flight() && !regions.read_begin(0).shift_in_flight());
        assert_ne!(after.word, quiet.word, "region 1 counted the shift's start");
        assert_eq!(
            after.word,
            regions.read_begin(0).word,
            "once, as region 0 did"
        );
        assert_eq!(
            regions.read_begin(2 * REGION_GROUPS).word,
            0,
            "region 2 saw no shift"
        );
    }

    #[test]
    fn a_walk_made_wholly_inside_one_shift_s_flight_does_not_stand() {
        let regions = ShiftRegions::new(REGION_GROUPS);
        let shift = regions.shifting(3, 4);
        // The word does not change while the shift is in flight: only the first load's
        // in-flight count turns the walk away.
        let quiet = regions.read_begin(5);
        assert!(quiet.shift_in_flight());
        assert!(!regions.read_stands(quiet, 5, 5));
        drop(shift);
        assert!(!regions.read_stands(quiet, 5, 5));
    }

    #[test]
    fn without_regions_no_walk_stands() {
        let regions = ShiftRegions::none();
        let quiet = regions.read_begin(7);
        assert!(quiet.shift_in_flight());
        assert!(!regions.read_stands(quiet, 7, 7));
    }

    #[test]
    fn a_walk_that_leaves_its_region_does_not_stand() {
        let regions = ShiftRegions::new(2 * REGION_GROUPS + 1);
        assert_eq!(regions.words.len(), 3);
        let quiet = regions.read_begin(REGION_GROUPS);
        assert!(regions.read_stands(quiet, REGION_GROUPS, 2 * REGION_GROUPS - 1));
        assert!(!regions.read_stands(quiet, REGION_GROUPS - 1, REGION_GROUPS));
        assert!(!regions.read_stands(quiet, REGION_GROUPS, 2 * REGION_GROUPS));
        // A table smaller than one region has one.
        assert_eq!(ShiftRegions::new(3).words.len(), 1);
    }
}
