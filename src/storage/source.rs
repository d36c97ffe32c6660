//! [`GroupSource`]: where walks load groups from (the live array, the array at rest, a recorder
//! of the words a walk read, a table of fixed width, serialised bytes).

use super::{Cursor, SlotArray, SlotLayout, MAX_SLOTS};
use crate::sync::Ordering;

/// Where a [`Cursor`] loads groups from: the live atomic [`SlotArray`], or words borrowed from
/// serialised bytes ([`LeWords`]), so the one walk serves both.
pub(crate) trait GroupSource {
    /// Whether the groups may hold the lock statuses that the concurrent quotient filters store
    /// in slots (paper 000 §3.2). The walks read locks through, a few operations per group
    /// loaded; sources that cannot hold locks ([`AtRest`]) say `false`, and the walks skip that.
    const MAY_HOLD_LOCKS: bool = true;
    /// The slot layout.
    fn layout(&self) -> &SlotLayout;
    /// Number of slots.
    fn slot_count(&self) -> usize;
    /// Loads group `group` (`order` matters only for atomic sources).
    fn load_group(&self, group: usize, order: Ordering) -> u64;
    /// Asks the CPU to start loading the cache lines around group `group`'s
    /// ([`SlotArray::prefetch_neighbour_lines`]); nothing by default.
    #[inline]
    fn prefetch_lines_around(&self, _group: usize) {}
}

impl GroupSource for SlotArray {
    #[inline]
    fn layout(&self) -> &SlotLayout {
        &self.layout
    }
    #[inline]
    fn slot_count(&self) -> usize {
        self.slots
    }
    #[inline]
    fn load_group(&self, group: usize, order: Ordering) -> u64 {
        SlotArray::load_group(self, group, order)
    }
    #[inline]
    fn prefetch_lines_around(&self, group: usize) {
        SlotArray::prefetch_lines_around(self, group);
    }
}

impl<S: GroupSource + ?Sized> GroupSource for &S {
    const MAY_HOLD_LOCKS: bool = S::MAY_HOLD_LOCKS;

    #[inline(always)]
    fn layout(&self) -> &SlotLayout {
        (**self).layout()
    }
    #[inline(always)]
    fn slot_count(&self) -> usize {
        (**self).slot_count()
    }
    #[inline(always)]
    fn load_group(&self, group: usize, order: Ordering) -> u64 {
        (**self).load_group(group, order)
    }
    #[inline(always)]
    fn prefetch_lines_around(&self, group: usize) {
        (**self).prefetch_lines_around(group);
    }
}

/// A [`SlotArray`] that holds no lock statuses: the table of a filter whose writers take
/// `&mut self` or lock outside the table (`SequentialQf`, `ExternallyLockedQf`), so that walks
/// over it skip reading locks through (see [`GroupSource::MAY_HOLD_LOCKS`]). Only the locking
/// filters ever store a lock, and only in their own tables.
#[derive(Clone, Copy)]
pub(crate) struct AtRest<'a>(pub(crate) &'a SlotArray);

impl<'a> AtRest<'a> {
    /// [`SlotArray::cursor`], over this source.
    #[inline]
    pub(crate) fn cursor(&self, index: usize, order: Ordering) -> Cursor<'_, Self> {
        Cursor::over(self, index, order)
    }
}

impl GroupSource for AtRest<'_> {
    const MAY_HOLD_LOCKS: bool = false;

    #[inline]
    fn layout(&self) -> &SlotLayout {
        &self.0.layout
    }
    #[inline]
    fn slot_count(&self) -> usize {
        self.0.slots
    }
    #[inline]
    fn load_group(&self, group: usize, order: Ordering) -> u64 {
        self.0.load_group(group, order)
    }
    #[inline]
    fn prefetch_lines_around(&self, group: usize) {
        self.0.prefetch_lines_around(group);
    }
}

/// The source `S` seen as one whose slots are exactly `BITS` bits wide, known when the walk is
/// compiled: its [`layout`](GroupSource::layout) is a constant, so a walk through it computes
/// no lane mask, slot mask or group index from fields loaded at run time (the shifts and masks
/// fold into the instructions). [`with_fixed_width!`] picks it for the common widths; what
/// that gained is measured in `docs/performance-history.md`, "Walks compiled per slot width".
#[derive(Clone, Copy)]
pub(crate) struct FixedWidth<S, const BITS: u32>(pub(crate) S);

impl<S: GroupSource, const BITS: u32> GroupSource for FixedWidth<S, BITS> {
    const MAY_HOLD_LOCKS: bool = S::MAY_HOLD_LOCKS;

    #[inline(always)]
    fn layout(&self) -> &SlotLayout {
        debug_assert_eq!(
            self.0.layout().bits,
            BITS,
            "a fixed width that is not the table's"
        );
        const { &SlotLayout::new(BITS) }
    }
    #[inline(always)]
    fn slot_count(&self) -> usize {
        self.0.slot_count()
    }
    #[inline(always)]
    fn load_group(&self, group: usize, order: Ordering) -> u64 {
        self.0.load_group(group, order)
    }
    #[inline(always)]
    fn prefetch_lines_around(&self, group: usize) {
        self.0.prefetch_lines_around(group);
    }
}

/// Evaluates `$body` with `$source` (a [`GroupSource`] variable) rebound to a
/// [`FixedWidth`] view of itself when its slot width is one of the widths walks are compiled
/// for, and as it is otherwise. The widths are 10 to 21 bits: the 3-status-bit filters with 7
/// to 18 remainder bits (false-positive rates of about 2^-7 to 2^-18 at full load),
/// `LinearProbingQf` with the same slots, `TwoBitQf` with 8 to 19 remainder bits, and
/// `LockFreeCuckooFilter`'s entries of 8- to 19-bit fingerprints (what its `new` picks for any
/// rate down to about 1e-5, and the usual 8, 12 and 16 bits). `$body` is compiled once per
/// width, so keep it to the call of one walk. (Widths 18 to 21 were added later: they cut a
/// `SequentialQf` lookup with 17 remainder bits from 177 to 153 instructions and a
/// 16-bit-fingerprint cuckoo lookup from 286 to 227; performance history, "Walks compiled for
/// wider slots". Widths 8 and 9 made `SequentialQf`'s inserts slower and were left out.)
macro_rules! with_fixed_width {
    ($source:ident => $body:expr) => {
        $crate::storage::with_fixed_width!(
            @widths [10 11 12 13 14 15 16 17 18 19 20 21] $source => $body
        )
    };
    (@widths [$($bits:literal)*] $source:ident => $body:expr) => {
        match $crate::storage::GroupSource::layout(&$source).bits() {
            $($bits => {
                let $source = $crate::storage::FixedWidth::<_, $bits>($source);
                $body
            })*
            _ => $body,
        }
    };
}
pub(crate) use with_fixed_width;

/// A [`GroupSource`] over a live [`SlotArray`] that remembers the word it last loaded of each
/// group, so a walk without locks can later be confirmed: if, under a lock, every group the walk
/// read still holds the word it read last, a walk under the lock would read the same words and
/// reach the same answer. That holds for a walk whose answer depends only on its last load of
/// each group, such as a walk back to a boundary and then forward from it, where the walk under
/// the lock starts at the locked boundary. A walk whose answer also depends on an earlier load
/// of a group it reloads (e.g. one that walks back from the quotient under the lock too) would
/// need each reload compared with the earlier one. It remembers [`Recorder::GROUPS`]
/// consecutive groups; a walk over more cannot be confirmed this way.
pub(crate) struct Recorder<'a> {
    array: &'a SlotArray,
    /// The last word loaded of group `g`, at `g % GROUPS`.
    words: [std::cell::Cell<u64>; Recorder::GROUPS],
    lowest: std::cell::Cell<usize>,
    highest: std::cell::Cell<usize>,
}

impl<'a> Recorder<'a> {
    /// How many consecutive groups a recorder remembers.
    pub(crate) const GROUPS: usize = 8;

    /// A recorder over `array` that has loaded nothing yet.
    #[inline]
    pub(crate) fn new(array: &'a SlotArray) -> Self {
        Recorder {
            array,
            words: Default::default(),
            lowest: std::cell::Cell::new(usize::MAX),
            highest: std::cell::Cell::new(0),
        }
    }

    /// Whether every group loaded so far reads now (with `order`) as it was last loaded, apart
    /// from the bits `ignore` of group `ignore_group` (a lock the caller took since). `false` if
    /// the loads spanned more than [`GROUPS`](Self::GROUPS) groups.
    pub(crate) fn unchanged(&self, ignore_group: usize, ignore: u64, order: Ordering) -> bool {
        let (lowest, highest) = (self.lowest.get(), self.highest.get());
        if lowest > highest || highest - lowest >= Self::GROUPS {
            return false;
        }
        (lowest..=highest).all(|group| {
            let mask = if group == ignore_group { !ignore } else { !0 };
            let now = self.array.load_group(group, order);
            (now ^ self.words[group % Self::GROUPS].get()) & mask == 0
        })
    }
}

impl GroupSource for Recorder<'_> {
    #[inline]
    fn layout(&self) -> &SlotLayout {
        &self.array.layout
    }
    #[inline]
    fn slot_count(&self) -> usize {
        self.array.slots
    }
    #[inline]
    fn load_group(&self, group: usize, order: Ordering) -> u64 {
        let word = self.array.load_group(group, order);
        self.words[group % Self::GROUPS].set(word);
        self.lowest.set(self.lowest.get().min(group));
        self.highest.set(self.highest.get().max(group));
        word
    }
}

/// Groups stored as little-endian 64-bit words in borrowed bytes (a serialised table, e.g.
/// memory-mapped): read in place, on any alignment and any host byte order.
#[derive(Clone, Copy)]
pub(crate) struct LeWords<'a> {
    bytes: &'a [u8],
    layout: SlotLayout,
    slots: usize,
}

impl<'a> LeWords<'a> {
    /// The `slots` slots of `bits` bits in `bytes`; `None` unless `bytes` holds exactly the
    /// groups those slots take and the sizes are in range.
    pub(crate) fn new(bytes: &'a [u8], bits: u32, slots: usize) -> Option<Self> {
        if !(1..=64).contains(&bits) || slots == 0 || slots > MAX_SLOTS {
            return None;
        }
        let layout = SlotLayout::new(bits);
        let expected = layout.groups_for(slots).checked_mul(8)?;
        (bytes.len() == expected).then_some(LeWords {
            bytes,
            layout,
            slots,
        })
    }

    /// Number of groups.
    pub(crate) fn group_count(&self) -> usize {
        self.bytes.len() / 8
    }
}

impl GroupSource for LeWords<'_> {
    #[inline]
    fn layout(&self) -> &SlotLayout {
        &self.layout
    }
    #[inline]
    fn slot_count(&self) -> usize {
        self.slots
    }
    #[inline]
    fn load_group(&self, group: usize, _order: Ordering) -> u64 {
        le_word(self.bytes, group)
    }
}

/// Little-endian 64-bit word `index` of `bytes` (any alignment, any host byte order): how
/// serialised tables are read, in place or when copied.
#[inline]
pub(crate) fn le_word(bytes: &[u8], index: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[index * 8..index * 8 + 8]);
    u64::from_le_bytes(word)
}
