//! Packed-slot group storage (paper 000 §3, "Concurrent Slot Storage").
//!
//! Every filter stores fixed-width slots of `bits` bits (3 to 64), packed as
//! `per_group = floor(64 / bits)` slots into each 64-bit word, a *group*. A whole group is read
//! and written with one atomic operation, so a reader that loads a group sees a consistent state
//! of all its slots, and a writer can change several neighbouring slots with one CAS.
//!
//! ```text
//!  group g (one AtomicU64), here bits = 13, per_group = 4, 12 bits unused
//!  63      52 51        39 38        26 25        13 12         0
//! +----------+------------+------------+------------+------------+
//! |  unused  |  slot 4g+3 |  slot 4g+2 |  slot 4g+1 |  slot 4g   |
//! +----------+------------+------------+------------+------------+
//! ```
//!
//! Slot `i` is in group `i / per_group` at bit `(i % per_group) * bits`. The division by the
//! small constant `per_group` is a multiply by a precomputed reciprocal (see [`SlotLayout`]), not
//! a hardware division. Slot contents are opaque here; each filter gives them meaning.

use crate::filter::Error;
use crate::hash::low_mask;
use crate::sync::{AtomicU64, Ordering};

/// Where slots of a given width live inside groups, and the word-level operations on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotLayout {
    /// Width of one slot in bits, `1..=64`.
    bits: u32,
    /// Slots per 64-bit group: `floor(64 / bits)`.
    per_group: u32,
    /// `ceil(2^64 / per_group)`: `i / per_group == (i * magic) >> 64` for `i < 2^58`. 0 when
    /// `per_group` is a power of two, which [`locate`](Self::locate) divides by a shift.
    magic: u64,
    /// `log2(per_group)` when `per_group` is a power of two (1, 2, 4, 8, 16, 32 or 64 slots: every
    /// width from 13 to 16 bits, the 3-status-bit filter's with 10 to 13 remainder bits), else
    /// unused.
    group_shift: u32,
    /// Bit 0 of every lane: precomputed, since every walk starts from it and [`lanes`](Self::lanes)
    /// multiplies by it.
    lane_lsb: u64,
    /// `ceil(2^16 / bits)`: the lane holding bit `b < 64` of a word is `(b * lane_magic) >> 16`
    /// (exact: the rounding error, `b * (bits - 1) / 2^16 / bits`, stays below the `1 / bits`
    /// gap to the next multiple). Precomputed, so no cursor divides.
    lane_magic: u32,
}

/// The largest slot index [`SlotLayout::locate`] divides exactly (see `magic`).
pub(crate) const MAX_SLOTS: usize = 1 << 58;

impl SlotLayout {
    /// The layout for slots of `bits` bits. Panics (a bug, not user input) outside `1..=64`.
    pub(crate) const fn new(bits: u32) -> Self {
        assert!(bits >= 1 && bits <= 64, "slot width out of range");
        let per_group = 64 / bits;
        // ceil(2^64 / d) for d >= 2 is floor((2^64 - 1) / d) + 1. Powers of two (d == 1 among
        // them, whose reciprocal would be 2^64) are divided by a shift instead.
        let magic = if per_group.is_power_of_two() {
            0
        } else {
            u64::MAX / per_group as u64 + 1
        };
        let mut lane_lsb = 0;
        let mut lane = 0;
        while lane < per_group {
            lane_lsb |= 1 << (lane * bits);
            lane += 1;
        }
        SlotLayout {
            bits,
            per_group,
            magic,
            group_shift: per_group.trailing_zeros(),
            lane_lsb,
            lane_magic: (1u32 << 16).div_ceil(bits),
        }
    }

    /// Width of one slot in bits.
    #[inline]
    pub(crate) const fn bits(&self) -> u32 {
        self.bits
    }

    /// Slots per group.
    #[inline]
    pub(crate) const fn per_group(&self) -> u32 {
        self.per_group
    }

    /// The mask of one slot's bits, right-aligned.
    #[inline]
    pub(crate) const fn slot_mask(&self) -> u64 {
        low_mask(self.bits)
    }

    /// The group holding slot `index` and the slot's position inside it.
    ///
    /// `index / per_group` is computed as the high half of `index * ceil(2^64 / per_group)`:
    /// writing `magic = (2^64 + e) / d` with `0 < e <= d`, the product is
    /// `index / d + e * index / (d * 2^64)`, and the error term stays below the distance to the
    /// next integer (`1 / d`) as long as `e * index < 2^64`, which `index < 2^58` and `d <= 64`
    /// guarantee.
    #[inline]
    pub(crate) fn locate(&self, index: usize) -> (usize, u32) {
        debug_assert!(index < MAX_SLOTS);
        if self.magic == 0 {
            // A power of two: one shift and one mask, shorter than the multiply on the path from
            // the hash to the first load of every operation.
            let offset = index as u32 & (self.per_group - 1);
            return (index >> self.group_shift, offset);
        }
        let group = ((index as u128 * self.magic as u128) >> 64) as usize;
        let offset = (index - group * self.per_group as usize) as u32;
        (group, offset)
    }

    /// How many groups hold `slots` slots.
    #[inline]
    pub(crate) const fn groups_for(&self, slots: usize) -> usize {
        slots.div_ceil(self.per_group as usize)
    }

    /// The groups of an array of `len` slots all of whose slots lie in `slots` (the array's
    /// end closes the last group): the groups a writer of exactly those slots owns alone, for
    /// [`GroupWriter`]. Divides; not for hot paths.
    pub(crate) fn groups_inside(
        &self,
        slots: std::ops::Range<usize>,
        len: usize,
    ) -> std::ops::Range<usize> {
        let per_group = self.per_group as usize;
        let first = slots.start.div_ceil(per_group);
        let end = if slots.end >= len {
            self.groups_for(len)
        } else {
            slots.end / per_group
        };
        first..end.max(first)
    }

    /// The slot at `offset` inside `word`.
    #[inline]
    pub(crate) fn get(&self, word: u64, offset: u32) -> u64 {
        debug_assert!(offset < self.per_group);
        (word >> (offset * self.bits)) & self.slot_mask()
    }

    /// `word` with the slot at `offset` replaced by `value` (which must fit the slot).
    #[inline]
    pub(crate) fn set(&self, word: u64, offset: u32, value: u64) -> u64 {
        (word & !self.place(offset, self.slot_mask())) | self.place(offset, value)
    }

    /// A word holding `value` (which must fit a slot) in the slot at `offset` and zeros
    /// elsewhere: what [`set`](Self::set) writes, and what a writer that gathers a group's
    /// slots before storing it ([`GroupWriter`]) ORs together.
    #[inline]
    pub(crate) fn place(&self, offset: u32, value: u64) -> u64 {
        debug_assert!(offset < self.per_group);
        debug_assert!(value & !self.slot_mask() == 0, "value wider than a slot");
        value << (offset * self.bits)
    }

    /// `pattern` (one slot's worth of bits) copied into every slot lane of a word: a
    /// multiplication by `lane_lsb`, without carries between lanes since the pattern fits one.
    ///
    /// With the lane mask of a status bit, a word operation touches that bit in all slots at once.
    #[inline]
    pub(crate) const fn lanes(&self, pattern: u64) -> u64 {
        debug_assert!(
            pattern & !self.slot_mask() == 0,
            "the pattern must fit one slot"
        );
        pattern.wrapping_mul(self.lane_lsb)
    }

    /// The lane holding bit `bit < 64` of a group, from `lane_magic`: a multiply and a shift
    /// instead of `bit / bits`. The cursors and the cuckoo table's search use it.
    #[inline(always)]
    pub(crate) const fn lane_of_bit(&self, bit: u32) -> u32 {
        (bit * self.lane_magic) >> 16
    }

    /// The mask of the slots at offsets `from..to` inside a group (`to <= per_group`).
    #[cfg(test)]
    pub(crate) fn range_mask(&self, from: u32, to: u32) -> u64 {
        debug_assert!(from <= to && to <= self.per_group);
        low_mask(to * self.bits) & !low_mask(from * self.bits)
    }
}

/// Word constants that compare a value with the same field of every slot lane of a group at
/// once (broadword, or SWAR: "SIMD within a register"). The field is a slot's bits from
/// `field_shift` up to its top; the slot's top bit is the lane's *flag*, where answers come
/// back. The cuckoo table finds its fingerprints with it, and a quotient filter lookup its
/// remainder in a run.
///
/// ```text
///  one lane of `bits` bits (here field_shift = 3)
///  +------+--------------------------+-----------+
///  | flag |  rest of the field       |  low bits |
///  +------+--------------------------+-----------+
///   bits-1  bits-2 ... field_shift     field_shift-1 ... 0
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaneFields {
    /// `1` in the lowest bit of every lane.
    ones: u64,
    /// The field of every lane.
    fields: u64,
    /// The field of every lane without its flag.
    rests: u64,
    /// The flag of every lane.
    flags: u64,
}

impl LaneFields {
    /// The constants for the field from bit `field_shift` of every slot of `layout` up to the
    /// slot's top bit (`field_shift < bits`).
    #[inline]
    pub(crate) fn new(layout: &SlotLayout, field_shift: u32) -> Self {
        debug_assert!(field_shift < layout.bits);
        let field = layout.slot_mask() & !low_mask(field_shift);
        let flag = 1u64 << (layout.bits - 1);
        LaneFields {
            ones: layout.lane_lsb,
            fields: layout.lanes(field),
            rests: layout.lanes(field & !flag),
            flags: layout.lanes(flag),
        }
    }

    /// `value` (which must fit the field) in the field of every lane.
    #[inline]
    pub(crate) fn pattern(&self, value: u64, field_shift: u32) -> u64 {
        debug_assert!((value << field_shift) >> field_shift == value);
        // `SlotLayout::lanes`, with the layout's `lane_lsb` kept here.
        (value << field_shift).wrapping_mul(self.ones)
    }

    /// The flag of every lane.
    #[inline]
    pub(crate) fn flags(&self) -> u64 {
        self.flags
    }

    /// The flags of the lanes of `word` whose field equals `pattern`'s, exactly: `x` is zero in
    /// the field of an equal lane; adding `rests` to the field's lower bits carries into the
    /// flag exactly when one of them is set, and the carry never leaves the lane (each addend
    /// is at most `rests`), so `t`'s flag is clear only in lanes where all of `x`'s field is
    /// zero.
    #[inline]
    pub(crate) fn equal(&self, word: u64, pattern: u64) -> u64 {
        let x = (word ^ pattern) & self.fields;
        let t = ((x & self.rests) + self.rests) | x;
        !t & self.flags
    }
}

/// Reserves room for exactly `count` more elements, or reports [`Error::InvalidParameters`]
/// instead of aborting when the memory cannot be had (issue 10): every table allocation whose
/// size comes from the user or from bytes read goes through here.
pub(crate) fn try_reserve<T>(vec: &mut Vec<T>, count: usize) -> Result<(), Error> {
    vec.try_reserve_exact(count).map_err(|_| {
        Error::InvalidParameters(format!(
            "cannot allocate {} bytes",
            count.saturating_mul(std::mem::size_of::<T>())
        ))
    })
}

/// Little-endian 64-bit word `index` of `bytes` (any alignment, any host byte order): how
/// serialised tables are read, in place or when copied.
#[inline]
pub(crate) fn le_word(bytes: &[u8], index: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[index * 8..index * 8 + 8]);
    u64::from_le_bytes(word)
}

/// `count` values made by `make`, in a boxed slice whose allocation failure is an error
/// rather than an abort: how every table, lock array and counter array of the crate is made.
///
/// # Errors
/// [`Error::InvalidParameters`] if the memory cannot be allocated.
pub(crate) fn try_boxed<T>(count: usize, mut make: impl FnMut() -> T) -> Result<Box<[T]>, Error> {
    let mut values = Vec::new();
    try_reserve(&mut values, count)?;
    values.extend((0..count).map(|_| make()));
    Ok(values.into_boxed_slice())
}

/// A fixed-size array of packed slots in atomic groups, zeroed at creation.
pub(crate) struct SlotArray {
    layout: SlotLayout,
    slots: usize,
    groups: Box<[AtomicU64]>,
}

impl SlotArray {
    /// An array of `slots` zeroed slots of `bits` bits each.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if the width is not in `1..=64`, the count exceeds
    /// [`MAX_SLOTS`], or the memory cannot be allocated.
    pub(crate) fn new(bits: u32, slots: usize) -> Result<Self, Error> {
        if !(1..=64).contains(&bits) {
            return Err(Error::InvalidParameters(format!(
                "slot width {bits} is not between 1 and 64 bits"
            )));
        }
        if slots == 0 || slots > MAX_SLOTS {
            return Err(Error::InvalidParameters(format!(
                "{slots} slots is outside 1..=2^58"
            )));
        }
        let layout = SlotLayout::new(bits);
        let group_count = layout.groups_for(slots);
        Ok(SlotArray {
            layout,
            slots,
            groups: try_boxed(group_count, || AtomicU64::new(0))?,
        })
    }

    /// The slot layout.
    #[inline]
    pub(crate) fn layout(&self) -> &SlotLayout {
        &self.layout
    }

    /// Number of slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slots
    }

    /// Bytes of memory the groups take.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.groups.len() * std::mem::size_of::<u64>()
    }

    /// Loads group `group`.
    #[inline]
    pub(crate) fn load_group(&self, group: usize, order: Ordering) -> u64 {
        // A read-modify-write in loom's RMW mode, which CI runs beside the plain one: see
        // `crate::sync::load_word`.
        crate::sync::load_word(&self.groups[group], order)
    }

    /// Stores group `group` (callers that share the array use [`compare_exchange_group`]).
    ///
    /// [`compare_exchange_group`]: SlotArray::compare_exchange_group
    #[inline]
    pub(crate) fn store_group(&self, group: usize, word: u64, order: Ordering) {
        // A swap in loom's RMW mode: see `crate::sync::store_word`.
        crate::sync::store_word(&self.groups[group], word, order)
    }

    /// Compare-and-exchange of a whole group.
    #[inline]
    pub(crate) fn compare_exchange_group(
        &self,
        group: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.groups[group].compare_exchange(current, new, success, failure)
    }

    /// Changes slot `index` with `change` (old slot -> new slot, or `None` to give up) in one
    /// CAS of its group, retrying while other slots of the group change. Returns whether it
    /// changed. This is how the status-bit locks of the concurrent filters are taken and
    /// released.
    pub(crate) fn update_slot(&self, index: usize, change: impl Fn(u64) -> Option<u64>) -> bool {
        let (group, offset) = self.layout.locate(index);
        self.update_group(group, |word| {
            let slot = change(self.layout.get(word, offset))?;
            Some((self.layout.set(word, offset, slot), ()))
        })
        .is_some()
    }

    /// Changes group `group` with `change` (old word -> new word and a result, or `None` to give
    /// up) in one CAS, retrying with the fresh word while the CAS fails. Returns the result of
    /// the `change` that was written, or `None` if it gave up. For several slots of one group at
    /// once, e.g. migration-locking a run of empty slots.
    #[inline]
    pub(crate) fn update_group<T>(
        &self,
        group: usize,
        change: impl Fn(u64) -> Option<(u64, T)>,
    ) -> Option<T> {
        // Acquire: the decision is based on the group's current value.
        let mut word = self.load_group(group, Ordering::Acquire);
        loop {
            let (new, result) = change(word)?;
            // AcqRel: callers both take locks (Acquire: see everything the previous holder
            // wrote before releasing) and release them (Release: publish their writes).
            // Acquire on failure: the next attempt decides on the fresh word.
            match self.compare_exchange_group(group, word, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(result),
                Err(now) => word = now,
            }
        }
    }

    /// ORs `bits` into group `group`: how the bulk build and the migration of
    /// [`growing`](crate::qf::growing) write a zeroed array from several threads, each owning
    /// some lanes of a group its neighbours share.
    #[inline]
    pub(crate) fn or_group(&self, group: usize, bits: u64, order: Ordering) {
        self.groups[group].fetch_or(bits, order);
    }

    /// Asks the CPU to start loading the group of slot `index` into the cache, so a lookup
    /// issued a little later finds it there (batch lookups, paper 004 §IV-A). A hint only:
    /// a no-op where there is no prefetch instruction (and under loom).
    #[inline]
    pub(crate) fn prefetch(&self, index: usize) {
        let (group, _) = self.layout.locate(index.min(self.slots - 1));
        prefetch_word(&self.groups[group]);
    }

    /// Asks the CPU to start loading the two cache lines before and the two after the one of
    /// slot `index`'s group (a hint, as [`prefetch`](Self::prefetch)). A quotient-filter walk
    /// from a canonical slot goes left to its cluster start and right through the runs (and an
    /// insert shifts on to the next empty slot), so at high fill it often leaves the canonical
    /// line; loading the neighbours alongside the canonical line overlaps those misses instead
    /// of chaining them (measured in `docs/performance-history.md`, "after prefetching the
    /// neighbouring cache lines" for one line on each side, "Two lines on each side" for two).
    #[inline]
    pub(crate) fn prefetch_neighbour_lines(&self, index: usize) {
        let (group, _) = self.layout.locate(index.min(self.slots - 1));
        self.prefetch_lines_around(group);
    }

    /// Asks the CPU to start loading the cache line after the one of slot `index`'s group (a
    /// hint): for a walk that only goes right, such as linear probing.
    #[inline]
    pub(crate) fn prefetch_next_line(&self, index: usize) {
        let (group, _) = self.layout.locate(index);
        prefetch_index(&self.groups, group + WORDS_PER_LINE);
    }

    /// [`prefetch_neighbour_lines`](Self::prefetch_neighbour_lines) of a located group.
    #[inline]
    fn prefetch_lines_around(&self, group: usize) {
        // No bounds checks: near either end of the array these name other addresses (a group
        // "before" 0 wraps to a huge index, whose pointer wraps to just before the array),
        // and a prefetch of any address is harmless.
        for lines in 1..=2 {
            let distance = lines * WORDS_PER_LINE;
            prefetch_index(&self.groups, group.wrapping_sub(distance));
            prefetch_index(&self.groups, group + distance);
        }
    }

    /// Reads slot `index` with the given ordering.
    #[inline]
    pub(crate) fn get(&self, index: usize, order: Ordering) -> u64 {
        let (group, offset) = self.layout.locate(index);
        self.layout.get(self.load_group(group, order), offset)
    }

    /// Writes slot `index` when no other thread can touch the array (`&mut self`).
    pub(crate) fn set_exclusive(&mut self, index: usize, value: u64) {
        let (group, offset) = self.layout.locate(index);
        // Relaxed: `&mut self` means no other thread can observe the array right now; the
        // synchronisation that later hands the array to other threads orders this store.
        let word = self.groups[group].load(Ordering::Relaxed);
        self.groups[group].store(self.layout.set(word, offset, value), Ordering::Relaxed);
    }

    /// A cursor on slot `index`, holding a snapshot of its group.
    #[inline]
    pub(crate) fn cursor(&self, index: usize, order: Ordering) -> Cursor<'_> {
        Cursor::over(self, index, order)
    }

    /// A cursor on slot `index` that reads only the given snapshot `word` of the slot's group
    /// and refuses to leave that group: the lock-elision fast paths of paper 000 §3.2 answer from
    /// one atomically loaded group or not at all.
    #[inline]
    pub(crate) fn cursor_in_group(&self, index: usize, word: u64) -> Cursor<'_> {
        Cursor::in_group(self, index, word)
    }
}

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

/// Walks slots left or right across groups, loading each group once.
///
/// The cursor keeps the word it loaded: slots of the current group are read from that snapshot,
/// and the next group is loaded (with the cursor's ordering) only when the walk enters it. It
/// tracks the slot index and the slot's bit position incrementally, so a step costs a shift, a
/// mask and a compare: this is the inner loop of every quotient filter walk. The layout (slot
/// width, lane masks) is not copied into the cursor but asked of the source at each use: through
/// a [`FixedWidth`] source it is a constant, even in a walk compiled out of line that takes the
/// cursor by reference, and the cursor stays small to build and to clone.
pub(crate) struct Cursor<'a, S: GroupSource = SlotArray> {
    array: &'a S,
    /// Number of slots of `array`.
    slots: usize,
    word: u64,
    index: usize,
    group: usize,
    /// Bit position of the current slot in `word`.
    shift: u32,
    order: Ordering,
    /// Whether the cursor stays inside its group (see [`SlotArray::cursor_in_group`]).
    bounded: bool,
}

// Manual, not derived: a derive would require `S: Clone`, and a cursor only borrows `S`.
impl<S: GroupSource> Clone for Cursor<'_, S> {
    #[inline]
    fn clone(&self) -> Self {
        Cursor { ..*self }
    }
}

impl<'a, S: GroupSource> Cursor<'a, S> {
    /// A cursor on slot `index` of `array`, holding a snapshot of its group.
    #[inline]
    pub(crate) fn over(array: &'a S, index: usize, order: Ordering) -> Self {
        let located = array.layout().locate(index);
        let word = array.load_group(located.0, order);
        Cursor::located(array, index, located, word, order, false)
    }

    /// [`over`](Self::over) after asking the source to prefetch the cache lines around the
    /// slot's group ([`SlotArray::prefetch_neighbour_lines`]), locating the slot once for both:
    /// how a walk from a canonical slot starts.
    #[inline]
    pub(crate) fn over_prefetching(array: &'a S, index: usize, order: Ordering) -> Self {
        let located = array.layout().locate(index);
        array.prefetch_lines_around(located.0);
        let word = array.load_group(located.0, order);
        Cursor::located(array, index, located, word, order, false)
    }

    /// A cursor on slot `index` that reads only the snapshot `word` of the slot's group and
    /// refuses to leave it (see [`SlotArray::cursor_in_group`]).
    #[inline]
    pub(crate) fn in_group(array: &'a S, index: usize, word: u64) -> Self {
        let located = array.layout().locate(index);
        // The ordering is never used: a bounded cursor loads nothing.
        Cursor::located(array, index, located, word, Ordering::Relaxed, true)
    }

    /// A cursor on slot `index`, which is at `offset` in `group`, whose snapshot is `word`.
    #[inline]
    fn located(
        array: &'a S,
        index: usize,
        (group, offset): (usize, u32),
        word: u64,
        order: Ordering,
        bounded: bool,
    ) -> Self {
        Cursor {
            array,
            slots: array.slot_count(),
            word,
            index,
            group,
            shift: offset * array.layout().bits,
            order,
            bounded,
        }
    }
}

impl<S: GroupSource> Cursor<'_, S> {
    /// The slot index under the cursor.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The group under the cursor.
    #[inline]
    pub(crate) fn group(&self) -> usize {
        self.group
    }

    /// The slot under the cursor, from the group snapshot.
    #[inline]
    pub(crate) fn slot(&self) -> u64 {
        (self.word >> self.shift) & self.array.layout().slot_mask()
    }

    /// Moves one slot right. Returns `false` (and stays) at the last slot.
    #[inline]
    pub(crate) fn advance(&mut self) -> bool {
        if self.index + 1 >= self.slots {
            return false;
        }
        if self.shift == self.last_shift() {
            if self.bounded {
                return false;
            }
            self.shift = 0;
            self.group += 1;
            self.word = self.array.load_group(self.group, self.order);
        } else {
            self.shift += self.slot_bits();
        }
        self.index += 1;
        true
    }

    /// Reloads the current group (after the caller changed it or waited for another thread).
    #[inline]
    pub(crate) fn reload(&mut self) {
        self.word = self.array.load_group(self.group, self.order);
    }

    // ----- Word-level stepping: a walk that tests many lanes with one mask operation --------

    /// The snapshot of the current group.
    #[inline]
    pub(crate) fn word(&self) -> u64 {
        self.word
    }

    /// Bit position of the current slot in [`word`](Cursor::word).
    #[inline]
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// Bit 0 of every slot lane of a group.
    #[inline]
    pub(crate) fn lane_lsb(&self) -> u64 {
        self.array.layout().lane_lsb
    }

    /// The layout of the array the cursor walks.
    #[inline]
    pub(crate) fn layout(&self) -> &SlotLayout {
        self.array.layout()
    }

    /// Width of a slot in bits.
    #[inline]
    pub(crate) fn slot_bits(&self) -> u32 {
        self.array.layout().bits
    }

    /// Bit position of the last slot of a group.
    #[inline]
    fn last_shift(&self) -> u32 {
        let layout = self.array.layout();
        (layout.per_group - 1) * layout.bits
    }

    /// The lane holding bit `bit < 64` of the current group.
    #[inline]
    fn lane_of_bit(&self, bit: u32) -> u32 {
        self.array.layout().lane_of_bit(bit)
    }

    /// Moves to the slot whose lane holds bit `bit` of the current group.
    #[inline]
    pub(crate) fn jump_to_bit(&mut self, bit: u32) {
        let lane = self.lane_of_bit(bit);
        debug_assert!(lane < self.layout().per_group && lane == bit / self.slot_bits());
        let shift = lane * self.slot_bits();
        let current = self.lane_of_bit(self.shift);
        self.index = self.index - current as usize + lane as usize;
        self.shift = shift;
    }

    /// Moves to the lane of the `n`-th lowest set bit of `bits` (`n` counts from 1), a mask of
    /// the current group with at least `n` bits set.
    #[inline]
    pub(crate) fn jump_to_nth_bit(&mut self, mut bits: u64, n: u32) {
        debug_assert!(n >= 1 && bits.count_ones() >= n);
        for _ in 1..n {
            bits &= bits - 1;
        }
        self.jump_to_bit(bits.trailing_zeros());
    }

    /// Moves to the last slot of the previous group. Returns `false` (and stays) in group 0 or
    /// for a bounded cursor.
    #[inline]
    pub(crate) fn enter_previous_group(&mut self) -> bool {
        if self.group == 0 || self.bounded {
            return false;
        }
        let lane = self.lane_of_bit(self.shift);
        self.index -= lane as usize + 1;
        self.group -= 1;
        self.shift = self.last_shift();
        self.word = self.array.load_group(self.group, self.order);
        true
    }

    /// Moves to the first slot of the next group. Returns `false` (and stays) if that slot is
    /// past the end of the array or the cursor is bounded.
    #[inline]
    pub(crate) fn enter_next_group(&mut self) -> bool {
        let lane = self.lane_of_bit(self.shift);
        let next = self.index - lane as usize + self.layout().per_group as usize;
        if self.bounded || next >= self.slots {
            return false;
        }
        self.index = next;
        self.group += 1;
        self.shift = 0;
        self.word = self.array.load_group(self.group, self.order);
        true
    }
}

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
/// the parallel rounds of the batch inserts and removes (paper 004 §IV-B, §IV-D: each thread
/// rewrites its own supercluster, and neighbouring superclusters may share a group).
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
    /// The array's layout, possibly a constant one ([`FixedWidth`]), so that locating the
    /// written slots folds into the instructions.
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
    /// from a [`GroupSource`] view of the array, such as a [`FixedWidth`] one.
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

/// Fills a zeroed array from several threads at once, each writing its slots in increasing
/// order (the bulk build's scatter, the migration of a growing filter): the bits of one group
/// are gathered and written once, with a plain load and store in the groups the writer owns
/// alone, and with an atomic OR in the groups it shares with a neighbouring writer (whose bits
/// are in other lanes). Slots are only ever OR-ed in, so a writer may pass over a group twice.
/// Nothing here publishes the writes: the caller's join or release does.
pub(crate) struct GroupWriter<'a> {
    array: &'a SlotArray,
    group: usize,
    bits: u64,
    exclusive: std::ops::Range<usize>,
}

impl<'a> GroupWriter<'a> {
    /// A writer that owns the groups in `exclusive` alone: no other thread writes them until
    /// the caller publishes the array.
    pub(crate) fn new(array: &'a SlotArray, exclusive: std::ops::Range<usize>) -> Self {
        GroupWriter {
            array,
            group: 0,
            bits: 0,
            exclusive,
        }
    }

    /// ORs `value` (which must fit a slot) into slot `index`, which is at or after the slots
    /// written before.
    #[inline]
    pub(crate) fn or(&mut self, index: usize, value: u64) {
        let (group, offset) = self.array.layout.locate(index);
        if group != self.group {
            self.flush();
            self.group = group;
        }
        self.bits |= self.array.layout.place(offset, value);
    }

    /// Writes the last group gathered.
    pub(crate) fn finish(mut self) {
        self.flush();
    }

    fn flush(&mut self) {
        if self.bits == 0 {
            return;
        }
        if self.exclusive.contains(&self.group) {
            // Relaxed: no other thread writes this group before the caller publishes the
            // array, which orders these writes before any read. In the segmented bulk build a
            // locked OR here cost about a tenth of the write sweep.
            let word = self.array.load_group(self.group, Ordering::Relaxed);
            self.array
                .store_group(self.group, word | self.bits, Ordering::Relaxed);
        } else {
            // Relaxed: published by the caller as above; the OR cannot lose a neighbour's bits.
            self.array
                .or_group(self.group, self.bits, Ordering::Relaxed);
        }
        self.bits = 0;
    }
}

/// 64-bit words (a group each, in a [`SlotArray`]) per 64-byte cache line: how far apart the
/// prefetches of neighbouring lines are.
pub(crate) const WORDS_PER_LINE: usize = 64 / std::mem::size_of::<AtomicU64>();

/// Asks the CPU to start loading the cache line of `word`, so an access issued a little later
/// finds it there. A hint only: a no-op where there is no prefetch instruction (and under loom).
/// Every prefetch of the crate goes through this or [`prefetch_index`]: batch lookups, writers
/// that overlap a miss with taking a lock, and walks that load the canonical slot's
/// neighbouring lines.
#[inline]
pub(crate) fn prefetch_word(word: &AtomicU64) {
    prefetch_address(std::ptr::from_ref(word));
}

/// [`prefetch_word`] of `words[index]`, without a bounds check: an index past the end names
/// some other address, and a prefetch of any address is harmless (it never faults), so a hot
/// path whose index is in bounds by construction does not pay for checking it.
#[inline]
pub(crate) fn prefetch_index(words: &[AtomicU64], index: usize) {
    prefetch_address(words.as_ptr().wrapping_add(index));
}

/// The prefetch instruction itself, for any address.
#[inline(always)]
fn prefetch_address(address: *const AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        // SAFETY: `_mm_prefetch` never faults and reads nothing architecturally, whatever the
        // address; SSE is part of the x86_64 baseline.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                address.cast::<i8>(),
            )
        };
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = address;
}

/// Arrays for the tests of the code that rewrites them (the shifts of both quotient-filter walks).
#[cfg(test)]
pub(crate) mod test_arrays {
    use super::SlotArray;
    use crate::hash::low_mask;
    use crate::sync::Ordering;
    use proptest::prelude::*;

    /// An array of `slots` slots of `bits` bits, every slot holding `seed`-derived bits (any
    /// pattern, locks and impossible status bits included).
    pub(crate) fn noisy(bits: u32, slots: usize, seed: u64) -> SlotArray {
        let mut array = SlotArray::new(bits, slots).unwrap();
        let mut state = seed | 1;
        for index in 0..slots {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            array.set_exclusive(index, state & low_mask(bits));
        }
        array
    }

    /// One insert shift to test: an array of 300 slots of `bits` bits filled by [`noisy`] from
    /// `seed`, the new element's `position`, the `end` the shift stops at, the canonical slot
    /// (`quotient`, with its raw bits when it is not the position), the new `element`, and
    /// whether it displaces a run head.
    #[derive(Debug, Clone)]
    pub(crate) struct ShiftCase {
        pub(crate) bits: u32,
        pub(crate) seed: u64,
        pub(crate) quotient: usize,
        pub(crate) canonical: u64,
        pub(crate) position: usize,
        pub(crate) end: usize,
        pub(crate) element: u64,
        pub(crate) old_head_continues: bool,
    }

    /// Shift cases over every slot width from 3 to 64 bits, stretches inside one group or
    /// across many, canonical slots with and without their occupied bit (`occupied`: the
    /// status bit to set or clear), elements without it.
    pub(crate) fn shift_cases(occupied: u64) -> impl Strategy<Value = ShiftCase> {
        (
            3u32..=64,
            any::<u64>(),
            0usize..SHIFT_SLOTS - 1,
            0usize..SHIFT_SLOTS,
            0usize..4,
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                move |(
                    bits,
                    seed,
                    position,
                    length,
                    back,
                    element,
                    occupied_canonical,
                    continues,
                )| {
                    let end = position + length % (SHIFT_SLOTS - position);
                    let canonical = seed.rotate_left(17) & low_mask(bits);
                    ShiftCase {
                        bits,
                        seed,
                        quotient: position.saturating_sub(back),
                        canonical: if occupied_canonical {
                            canonical | occupied
                        } else {
                            canonical & !occupied
                        },
                        position,
                        end,
                        element: element & low_mask(bits) & !occupied,
                        old_head_continues: continues,
                    }
                },
            )
    }

    /// Slots in the array of a [`ShiftCase`].
    pub(crate) const SHIFT_SLOTS: usize = 300;

    impl ShiftCase {
        /// The case's array, filled by [`noisy`].
        pub(crate) fn array(&self) -> SlotArray {
            noisy(self.bits, SHIFT_SLOTS, self.seed)
        }
    }

    /// Every group word of `array`, to compare two arrays bit for bit.
    pub(crate) fn group_words(array: &SlotArray) -> Vec<u64> {
        let groups = array.layout().groups_for(array.len());
        (0..groups)
            .map(|group| array.load_group(group, Ordering::Relaxed))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn neighbour_line_prefetches_do_not_panic_near_either_end() {
        // Arrays of one group up to a few lines, at every slot: the prefetches name addresses
        // past either end there, which must neither be indexed (a panic) nor overflow.
        for (bits, slots) in [(13, 1), (13, 4), (13, 33), (13, 200), (64, 9), (3, 1000)] {
            let array = SlotArray::new(bits, slots).unwrap();
            for index in 0..slots {
                array.prefetch_neighbour_lines(index);
            }
        }
    }

    #[test]
    fn a_prefetching_cursor_reads_what_a_plain_cursor_reads() {
        for (bits, slots) in [(13, 1), (13, 4), (13, 33), (13, 200), (64, 9), (3, 1000)] {
            let mut array = SlotArray::new(bits, slots).unwrap();
            let mask = low_mask(bits);
            for index in 0..slots {
                array.set_exclusive(
                    index,
                    (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask,
                );
            }
            for index in 0..slots {
                let plain = array.cursor(index, Ordering::Relaxed);
                let prefetching = Cursor::over_prefetching(&array, index, Ordering::Relaxed);
                assert_eq!(
                    (prefetching.index(), prefetching.group(), prefetching.slot()),
                    (plain.index(), plain.group(), plain.slot()),
                    "bits {bits}, slot {index} of {slots}"
                );
            }
        }
    }

    #[test]
    fn the_lane_of_a_bit_matches_division_for_every_width() {
        for bits in 1..=64 {
            let layout = SlotLayout::new(bits);
            for bit in 0..64 {
                assert_eq!(
                    layout.lane_of_bit(bit),
                    bit / bits,
                    "bit {bit} of {bits}-bit lanes"
                );
            }
        }
    }

    /// [`with_fixed_width!`] views exactly the widths it lists through [`FixedWidth`], and
    /// always at the array's own width (a wrong arm would also trip the debug assertion in
    /// `FixedWidth::layout`).
    #[test]
    fn with_fixed_width_views_the_listed_widths_at_their_own_width() {
        for bits in 1..=64 {
            let array = SlotArray::new(bits, 100).unwrap();
            let source = &array;
            let (layout, fixed) = with_fixed_width!(source => (
                *GroupSource::layout(&source),
                std::any::type_name_of_val(&source).contains("FixedWidth"),
            ));
            assert_eq!(layout, *array.layout(), "width {bits}");
            assert_eq!(fixed, (10..=21).contains(&bits), "width {bits}");
        }
    }

    #[test]
    fn locate_matches_division_for_every_width() {
        for bits in 1..=64 {
            let layout = SlotLayout::new(bits);
            let d = layout.per_group() as usize;
            for index in (0..5000).chain([MAX_SLOTS - 1, MAX_SLOTS - 2, (1 << 40) + 12345]) {
                assert_eq!(
                    layout.locate(index),
                    (index / d, (index % d) as u32),
                    "bits {bits}"
                );
            }
        }
    }

    proptest! {
        /// `LaneFields::equal` flags exactly the lanes whose field equals the value, whatever
        /// the bits below the field and the unused bits above the lanes, for every slot width
        /// and field position.
        #[test]
        fn lane_fields_flag_exactly_the_equal_lanes(
            bits in 1u32..=64,
            shift_seed in any::<u32>(),
            word in any::<u64>(),
            value_seed in any::<u64>(),
            copy_into in any::<u64>(),
        ) {
            let layout = SlotLayout::new(bits);
            let field_shift = shift_seed % bits;
            let fields = LaneFields::new(&layout, field_shift);
            let value = value_seed & low_mask(bits - field_shift);
            // Plant the value (over whatever low bits the lane had) in some lanes.
            let mut word = word;
            for lane in 0..layout.per_group() {
                if copy_into >> lane & 1 == 1 {
                    let low = layout.get(word, lane) & low_mask(field_shift);
                    word = layout.set(word, lane, (value << field_shift) | low);
                }
            }
            let flags = fields.equal(word, fields.pattern(value, field_shift));
            for lane in 0..layout.per_group() {
                let equal = layout.get(word, lane) >> field_shift == value;
                let flag = layout.place(lane, 1 << (bits - 1));
                prop_assert_eq!(flags & flag != 0, equal, "lane {}", lane);
            }
            prop_assert_eq!(flags & !fields.flags(), 0);
        }

        /// `lanes` (a multiplication) is the pattern placed in every lane one by one, and
        /// `lane_lsb` is `lanes(1)`, for every width.
        #[test]
        fn lanes_copies_the_pattern_into_every_lane(bits in 1u32..=64, seed in any::<u64>()) {
            let layout = SlotLayout::new(bits);
            let pattern = seed & layout.slot_mask();
            let one_by_one = (0..layout.per_group()).fold(0, |word, lane| word | layout.place(lane, pattern));
            prop_assert_eq!(layout.lanes(pattern), one_by_one);
            prop_assert_eq!(layout.lane_lsb, (0..layout.per_group()).fold(0, |word, lane| word | layout.place(lane, 1)));
        }

        #[test]
        fn locate_is_exact_on_random_indices(bits in 1u32..=64, index in 0usize..MAX_SLOTS) {
            let layout = SlotLayout::new(bits);
            let d = layout.per_group() as usize;
            prop_assert_eq!(layout.locate(index), (index / d, (index % d) as u32));
        }

        #[test]
        fn groups_inside_hold_only_slots_of_the_range(
            bits in 1u32..=64, len in 1usize..300, a in 0usize..320, b in 0usize..320,
        ) {
            let layout = SlotLayout::new(bits);
            let slots = a.min(b)..a.max(b);
            let inside = layout.groups_inside(slots.clone(), len);
            for group in 0..layout.groups_for(len) {
                let first = group * layout.per_group() as usize;
                let group_slots = first..(first + layout.per_group() as usize).min(len);
                let all_in = group_slots.clone().all(|slot| slots.contains(&slot));
                prop_assert_eq!(inside.contains(&group), all_in, "group {} of {:?}", group, group_slots);
            }
        }

        #[test]
        fn set_then_get_round_trips_and_leaves_neighbours(
            bits in 1u32..=64, word: u64, offset_seed: u32, value: u64,
        ) {
            let layout = SlotLayout::new(bits);
            let offset = offset_seed % layout.per_group();
            let value = value & layout.slot_mask();
            let new = layout.set(word, offset, value);
            prop_assert_eq!(layout.get(new, offset), value);
            for other in (0..layout.per_group()).filter(|&o| o != offset) {
                prop_assert_eq!(layout.get(new, other), layout.get(word, other));
            }
            let used = layout.range_mask(0, layout.per_group());
            prop_assert_eq!(new & !used, word & !used);
        }
    }

    #[test]
    fn cursor_walks_across_groups_both_ways() {
        let mut array = SlotArray::new(13, 50).unwrap();
        for i in 0..50 {
            array.set_exclusive(i, i as u64 * 3);
        }
        let mut cursor = array.cursor(0, Ordering::Relaxed);
        for i in 0..50 {
            assert_eq!((cursor.index(), cursor.slot()), (i, i as u64 * 3));
            assert_eq!(cursor.advance(), i < 49);
        }
        // Back a group at a time, onto the last slot of the group before.
        let per_group = array.layout().per_group() as usize;
        let mut last = 49;
        while cursor.enter_previous_group() {
            last = last / per_group * per_group - 1;
            assert_eq!((cursor.index(), cursor.slot()), (last, last as u64 * 3));
        }
        assert_eq!((cursor.group(), last), (0, per_group - 1));
    }

    proptest! {
        #[test]
        fn le_words_walk_like_the_array_they_were_written_from(
            bits in 1u32..=64, slots in 1usize..200, seed: u64,
        ) {
            let mut array = SlotArray::new(bits, slots).unwrap();
            let mask = SlotLayout::new(bits).slot_mask();
            for i in 0..slots {
                let value = seed.rotate_left(i as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask;
                array.set_exclusive(i, value);
            }
            let groups = array.layout().groups_for(slots);
            let bytes: Vec<u8> = (0..groups)
                .flat_map(|g| array.load_group(g, Ordering::Relaxed).to_le_bytes())
                .collect();
            prop_assert!(LeWords::new(&bytes[1..], bits, slots).is_none());
            prop_assert!(LeWords::new(&bytes, bits, 0).is_none());
            let words = LeWords::new(&bytes, bits, slots).unwrap();
            prop_assert_eq!(words.group_count(), groups);
            let mut from_bytes = Cursor::over(&words, 0, Ordering::Relaxed);
            let mut from_array = array.cursor(0, Ordering::Relaxed);
            loop {
                prop_assert_eq!(from_bytes.index(), from_array.index());
                prop_assert_eq!(from_bytes.slot(), from_array.slot());
                let moved = from_bytes.advance();
                prop_assert_eq!(moved, from_array.advance());
                if !moved {
                    break;
                }
            }
            prop_assert_eq!(from_bytes.index(), slots - 1);
        }
    }

    #[test]
    fn bounded_cursor_stays_in_its_group() {
        let array = SlotArray::new(16, 12).unwrap();
        let word = 0x0004_0003_0002_0001;
        let mut cursor = array.cursor_in_group(5, word);
        assert_eq!(cursor.slot(), 2);
        assert!(cursor.advance() && cursor.advance());
        assert_eq!(cursor.slot(), 4);
        assert!(!cursor.advance());
        assert!(!cursor.enter_previous_group() && !cursor.enter_next_group());
        assert_eq!((cursor.index(), cursor.slot()), (7, 4));
    }

    #[test]
    fn rewriter_writes_each_slot_and_keeps_the_kept_bits() {
        let mut array = SlotArray::new(5, 40).unwrap();
        for i in 0..40 {
            array.set_exclusive(i, (i as u64 % 2) | 0b10100);
        }
        let mut rewriter = Rewriter::new(&array, Exclusive, 0b00001);
        for i in 9..31 {
            rewriter.put(i, 0b11110);
        }
        rewriter.finish();
        for i in 0..40 {
            let expect = if (9..31).contains(&i) {
                0b11110
            } else {
                0b10100
            } | (i as u64 % 2);
            assert_eq!(array.get(i, Ordering::Relaxed), expect, "slot {i}");
        }
    }

    #[test]
    fn update_slot_changes_one_lane_or_gives_up() {
        let array = SlotArray::new(16, 8).unwrap();
        assert!(array.update_slot(5, |now| (now == 0).then_some(7)));
        assert!(!array.update_slot(5, |now| (now == 0).then_some(9)));
        assert_eq!(array.get(5, Ordering::Relaxed), 7);
        assert_eq!(array.get(4, Ordering::Relaxed), 0);
        assert_eq!(array.get(6, Ordering::Relaxed), 0);
    }

    #[test]
    fn guarded_rewrites_keep_other_lanes_as_they_are_at_commit_time() {
        let array = SlotArray::new(16, 8).unwrap();
        let mut rewriter = Rewriter::new(&array, Guarded, 0b1);
        rewriter.put(1, 0b1110);
        // Another thread changes a lane of the same group before the commit.
        assert!(array.update_slot(3, |_| Some(0x55)));
        rewriter.put(4, 0b1010);
        rewriter.finish();
        assert_eq!(array.get(1, Ordering::Relaxed), 0b1110);
        assert_eq!(array.get(3, Ordering::Relaxed), 0x55);
        assert_eq!(array.get(4, Ordering::Relaxed), 0b1010);
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(matches!(
            SlotArray::new(0, 10),
            Err(Error::InvalidParameters(_))
        ));
        assert!(matches!(
            SlotArray::new(65, 10),
            Err(Error::InvalidParameters(_))
        ));
        assert!(matches!(
            SlotArray::new(8, 0),
            Err(Error::InvalidParameters(_))
        ));
        assert!(matches!(
            SlotArray::new(8, MAX_SLOTS + 1),
            Err(Error::InvalidParameters(_))
        ));
    }

    #[test]
    fn a_cursor_jumps_to_the_lane_of_the_nth_set_bit() {
        let array = SlotArray::new(13, 8).unwrap();
        let mut cursor = Cursor::over(&array, 5, Ordering::Relaxed);
        // Bits in lanes 0, 1 and 3 of group 1 (slots 4-7), one at a lane's top bit.
        let bits = 1 | 1 << 25 | 1 << 39;
        for (n, slot) in [(1, 4), (2, 5), (3, 7)] {
            cursor.jump_to_nth_bit(bits, n);
            assert_eq!(cursor.index(), slot, "bit {n}");
        }
    }

    /// A 13-bit array of `groups` groups, every group holding its own index.
    fn recorded_array(groups: usize) -> SlotArray {
        let array = SlotArray::new(13, groups * 4).unwrap();
        for group in 0..groups {
            array.store_group(group, group as u64, Ordering::Relaxed);
        }
        array
    }

    #[test]
    fn a_recorder_confirms_unchanged_groups_apart_from_the_ignored_bits() {
        let array = recorded_array(4);
        let recorder = Recorder::new(&array);
        let mut cursor = Cursor::over(&recorder, 5, Ordering::Relaxed);
        assert!(cursor.enter_next_group());
        assert!(recorder.unchanged(0, 0, Ordering::Relaxed));
        // A change outside the recorded groups does not matter; inside, only in ignored bits.
        array.store_group(3, 99, Ordering::Relaxed);
        assert!(recorder.unchanged(0, 0, Ordering::Relaxed));
        array.store_group(2, 2 | 0b100, Ordering::Relaxed);
        assert!(!recorder.unchanged(1, 0b100, Ordering::Relaxed));
        assert!(recorder.unchanged(2, 0b100, Ordering::Relaxed));
    }

    #[test]
    fn a_recorder_refuses_a_walk_over_more_groups_than_it_remembers() {
        let groups = Recorder::GROUPS + 1;
        let array = recorded_array(groups);
        let recorder = Recorder::new(&array);
        let mut cursor = Cursor::over(&recorder, 0, Ordering::Relaxed);
        for _ in 1..Recorder::GROUPS {
            assert!(cursor.enter_next_group());
        }
        assert!(recorder.unchanged(usize::MAX, 0, Ordering::Relaxed));
        assert!(cursor.enter_next_group());
        assert!(!recorder.unchanged(usize::MAX, 0, Ordering::Relaxed));
    }
}
