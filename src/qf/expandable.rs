//! `ExpandableQf`: the fully expandable quotient filter of paper 000 §4, levels of growable
//! locally locked filters whose false-positive rate stays below a bound however many keys come.
//!
//! What users need (the level sizes, capped levels, cascading inserts and their races) is in
//! [`ExpandableQf`]'s own docs; this module doc is about how it stays correct and fast.
//!
//! # Removals and lock-free reads of lower levels
//!
//! A removal shifts the elements after the removed one left, and a reader walking a run
//! without any synchronisation could miss an element that moves past it. Lower levels are
//! still read without locks ([`level_reads`](crate::qf::level_reads)): a level is sealed one
//! epoch grace period after the next level opened (no ordinary insert can be shifting it any
//! more), and every removal counts itself in flight on its level, so a lock-free walk of a sealed
//! level keeps its answer only if no removal ran meanwhile (a sequence lock written only by
//! removals). Otherwise, and on the newest level, the query is the locally locked filter's own: a
//! walk without locks whose answer stands if it read one 64-bit group or found the key, else a read
//! lock on the cluster. A hit of that walk can be a misread during a shift (a false positive), so
//! inserts and removals, which act on a hit, ask the level with `contains_hash_locked`, which
//! trusts only one-group answers and locked walks. Removals use the locally locked filter's
//! removal (lock-free inside one group, else locked), on the level that holds the fingerprint
//! (the newest first with cascading inserts, else the oldest: the copy that is the key's own,
//! see `remove_hash`), counted in flight either way. Cascading inserts change lower levels only
//! by CASes into empty slots, which move nothing.
//!
//! A removal can also empty a canonical slot, which would make the cascading early stop wrong
//! (a key stored higher up because that slot was taken). So a level that has seen a removal
//! stops answering early: the removal sets the level's flag before it changes the table, and a
//! query that reads the emptied slot therefore reads the flag as set.
//!
//! # Query order
//!
//! A query first prefetches the canonical slot's group on every level, so the levels' cache
//! misses overlap, and then probes the levels oldest first. The lower levels are the small ones,
//! often still in cache, so their walks hide the wait for the larger levels' groups; with
//! cascading inserts an empty canonical slot on a lower level also ends the query before the
//! larger levels are walked. Newest first (the newest level holds about half the keys) finds a
//! present key after fewer walks but starts every query by waiting for the largest level's
//! group. Measured with one thread after fig4's inserts (start at `2^16` slots, 50 x `2^17`
//! keys), newest first made absent lookups about 25% slower and present ones about 30% faster,
//! and a 50/50 mix slower, with or without cascading inserts.

use std::fmt;
use std::hash::Hash;

use crate::filter::{Error, Filter, Remove};
use crate::hash::{hash_key, remix};
use crate::qf::growing::{self, quotient_bits_below_threshold, GrowableBuilder, GrowableQf, Guard};
use crate::qf::level_reads::LevelReads;
use crate::qf::slot::STATUS_BITS;
use crate::qf::usual_slots;
use crate::sizing;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, Waiter};

/// How a level's hash comes from the key's: what decides which canonical slots of a level the
/// keys that reach it can have ([`ExpandableQf`], "A hash per level").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LevelHashes {
    /// Every level splits the key's hash itself: what cascading inserts need (their early stop
    /// counts on a higher level's fingerprint extending a lower level's), and what every file
    /// written before per-level hashes holds.
    Shared,
    /// Level 0 splits the key's hash, every later level the hash times an odd constant of its
    /// own ([`LEVEL_MULTIPLIERS`]), so the lower levels' fingerprints are no blocks of a higher
    /// level's canonical slots. Filters without cascading inserts.
    PerLevel,
}

impl LevelHashes {
    /// How a new filter hashes its levels: once for all with cascading inserts, else a hash
    /// per level.
    pub(crate) fn for_new(cascading: bool) -> Self {
        if cascading {
            LevelHashes::Shared
        } else {
            LevelHashes::PerLevel
        }
    }

    /// The hash level `level` stores and looks up for a key of hash `hash`.
    #[inline(always)]
    pub(crate) fn of(self, level: usize, hash: u64) -> u64 {
        match self {
            LevelHashes::PerLevel => hash.wrapping_mul(LEVEL_MULTIPLIERS[level & (MAX_LEVELS - 1)]),
            _ => hash,
        }
    }
}

/// Level `i`'s hash is the key's times `LEVEL_MULTIPLIERS[i]`: 1 for level 0, an odd constant
/// of random-looking bits for the others (`remix(i) | 1`). An odd multiplier is a bijection of
/// the 64-bit hashes (keys with different hashes keep different level hashes, what capped
/// levels' rate bound counts on), and the top bits of a product depend on every bit of the
/// hash: keys sharing a prefix of one level's hash spread over all of another level's
/// canonical slots. One multiplication per level and operation.
const LEVEL_MULTIPLIERS: [u64; MAX_LEVELS] = {
    let mut multipliers = [1u64; MAX_LEVELS];
    let mut level = 1;
    while level < MAX_LEVELS {
        multipliers[level] = remix(level as u64) | 1;
        level += 1;
    }
    multipliers
};

/// A level and a key's hash for it ([`ExpandableQf::level_for`]).
type LevelKey<'a> = (&'a GrowableQf, u64);

/// The most levels a filter can have: level 31 has `2^31` times level 0's slots, past any
/// memory for all but the smallest level 0 ([`ExpandableQf`], "Capped levels").
pub(crate) const MAX_LEVELS: usize = 32;

/// `((q_0, r_0), delta_grow, cascading)`: what fixes every level's shape.
pub(crate) type LevelParameters = ((u32, u32), f64, bool);

/// Doublings from a level's start to its final size (paper 000 §4.1: it starts at 1/8).
const LEVEL_DOUBLINGS: u32 = 3;

/// Options of an [`ExpandableQf`]; see [`ExpandableQf::builder`].
#[derive(Debug, Clone)]
pub struct ExpandableBuilder {
    capacity: usize,
    fpr_bound: f64,
    delta_grow: f64,
    cascading: bool,
}

impl ExpandableBuilder {
    /// The fill at which a level grows or, at its final size, the next level opens, in
    /// `(0, 0.9]` (default 0.75).
    pub fn delta_grow(mut self, delta_grow: f64) -> Self {
        self.delta_grow = delta_grow;
        self
    }

    /// Cascading inserts (paper 000 §4.2; default off): insert on the lowest level whose
    /// canonical slot is empty, and let queries stop at an empty canonical slot. Lower levels
    /// then fill past `delta_grow`, so level 0 may get one remainder bit more to keep the
    /// bound ([`ExpandableQf`]'s docs, "Levels").
    pub fn cascading(mut self, on: bool) -> Self {
        self.cascading = on;
        self
    }

    /// The filter.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, the bound is not in `(0, 1)`,
    /// `delta_grow` is not in `(0, 0.9]`, level 0 would be too large, or its fingerprints so
    /// long (a tiny bound at a large capacity) that no second level fits a 64-bit hash.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn build(self) -> Result<ExpandableQf, Error> {
        sizing::check_capacity_and_fpr(self.capacity, self.fpr_bound)?;
        if !(self.delta_grow > 0.0 && self.delta_grow <= 0.9) {
            return Err(Error::InvalidParameters(format!(
                "delta_grow {} is not in (0, 0.9]",
                self.delta_grow
            )));
        }
        // m_0: the first power of two with delta * m_0 > c (in whole keys, as a level counts).
        let q0 = quotient_bits_below_threshold(self.capacity, self.delta_grow)?;
        // r_0: the fewest bits with 2 f 2^-r_0 < bound, where f is the most a level can be
        // filled: delta without cascading inserts, but up to every slot with them, overflow
        // tails included (type doc, "Levels").
        let fill = if self.cascading {
            ExpandableQf::most_fill_with_cascading(q0)
        } else {
            self.delta_grow
        };
        let r0 = (1..=61u32.min(64 - q0))
            .find(|&r| 2.0 * fill * (-(r as f64)).exp2() < self.fpr_bound)
            .ok_or_else(|| {
                Error::InvalidParameters(format!(
                    "false-positive bound {:e} needs too many remainder bits",
                    self.fpr_bound
                ))
            })?;
        if !ExpandableQf::fingerprints_grow_to_64_bits((q0, r0)) {
            return Err(Error::InvalidParameters(format!(
                "false-positive bound {:e} needs {r0} remainder bits at {q0} quotient bits, which \
                 leaves no room in a 64-bit hash for the longer fingerprints of later levels",
                self.fpr_bound
            )));
        }
        let level0 = GrowableQf::builder_for_level(self.delta_grow, 0).build_with_bits(q0, r0)?;
        let levels: Box<[AtomicPtr<GrowableQf>]> = (0..MAX_LEVELS)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        // Relaxed: the filter is not shared yet; handing it to other threads orders this.
        levels[0].store(Box::into_raw(Box::new(level0)), Ordering::Relaxed);
        Ok(ExpandableQf {
            levels,
            removed: (0..MAX_LEVELS).map(|_| AtomicBool::new(false)).collect(),
            reads: LevelReads::new(MAX_LEVELS),
            active: AtomicUsize::new(0),
            opening: AtomicBool::new(false),
            q0,
            r0,
            delta_grow: self.delta_grow,
            cascading: self.cascading,
            level_hashes: LevelHashes::for_new(self.cascading),
        })
    }
}

impl GrowableQf {
    /// The builder of an expandable filter's level: `doublings` from its start to its final
    /// size, growing at `delta_grow`.
    pub(crate) fn builder_for_level(delta_grow: f64, doublings: u32) -> GrowableBuilder {
        GrowableBuilder::new(1, 0.5)
            .delta_grow(delta_grow)
            .max_doublings(doublings)
    }
}

/// A concurrent quotient filter that grows without bound at a false-positive rate below a
/// bound you choose: levels of growable locally locked filters (paper 000 §4; below: the level
/// sizes, capped levels and cascading inserts).
///
/// ```
/// use conqf::{ExpandableQf, Filter, Remove};
///
/// let filter = ExpandableQf::new(1000, 0.01)?; // expected capacity, FPR bound
/// for k in 0..50_000u64 {
///     filter.insert(&k)?; // levels are added as needed
/// }
/// assert!((0..50_000u64).all(|k| filter.contains(&k)));
/// assert!(filter.levels() > 1);
/// assert!(filter.false_positive_rate() < 0.01);
/// assert!(filter.remove(&7u64)?);
/// # Ok::<(), conqf::Error>(())
/// ```
///
/// # Levels (paper 000 §4.1)
///
/// Level 0 has `m_0 = 2^q_0` slots, the first power of two with `δ_grow · m_0 > c` in whole keys
/// (`⌊δ_grow · m_0⌋ > c`, so `c` keys never open a second level) for the expected capacity `c`,
/// and `r_0` remainder bits, the fewest with `2 δ_grow 2^-r_0 < p̄`
/// for the bound `p̄`. Level `i > 0` has twice the final slots of level `i - 1` and fingerprints
/// of `k_i = k_{i-1} + 2` bits; it starts at 1/8 of its final size (three remainder bits more)
/// and reaches it by three bounded-growing doublings ([`GrowableQf`]), so the structure is
/// always at least `2/3 δ_grow` full. Only the newest level takes ordinary inserts; when it is at
/// its final size and `δ_grow` full, the next level opens. A level holds at most
/// `n̄_i = δ_grow m_i` fingerprints of `k_i` bits, so its rate is at most `p_i = n̄_i 2^-k_i`,
/// which halves from level to level, and the union bound gives Theorem 2:
/// `p+ <= Σ p_i < 2 p_0 <= p̄`. [`false_positive_rate`](Filter::false_positive_rate) reports that
/// sum at the current fills.
///
/// Cascading inserts (below) break one premise of that bound: they keep adding fingerprints to
/// lower levels past `n̄_i`, into every empty canonical slot, while the keys a level took as the
/// newest may sit in its overflow tail; so a level can hold up to all its slots, tail included,
/// which is more than `m_i` (a level of 8 canonical slots that started at 2 and doubled twice has
/// 48). With cascading on, `r_0` is the fewest bits with `2 f 2^-r_0 < p̄`, where `f` is the
/// largest ratio of a level's slots to its canonical slots (1.26 for `m_0 = 2^10`, 1.03 for
/// `2^16`, 6 for the smallest filters), which keeps `Σ n_i 2^-k_i < 2 f 2^-r_0 < p̄` however
/// full the lower levels get; `f` costs `log2 f` bits more than a fill counted as 1, so at most
/// one remainder bit per slot where level 0 has `2^12` slots or more, up to three for the
/// smallest filters.
/// (With the `δ_grow` rule alone, a cascading filter for `p̄ = 0.0008` reaches about
/// `0.93 · 2 · 2^-11 ≈ 9e-4`; with `f` counted as 1, `builder(1, 0.13).cascading(true)`
/// reached 0.167 after 3,000 keys, its levels of 4 to 128 canonical slots filled 1.5 to 1.03
/// times over.)
///
/// # A hash per level
///
/// A key reaches level `i` only if no lower level matched it, and a lower level's fingerprint is
/// a prefix of the hash that level splits. Were every level to split one hash, each such prefix
/// would be a block of consecutive canonical slots of level `i` (`2^(q_i - k_j)` of them for
/// level `j`'s `k_j`-bit fingerprints) that no key reaching level `i` can have: the blocks
/// cover about the lower levels' rate, a large share with a large bound, and the keys would
/// crowd the other slots past `δ_grow`, lengthening their clusters. So, without cascading
/// inserts, level 0 splits the key's hash and every later level the hash times an odd constant
/// of its own: a bijection (keys with different hashes stay apart) whose top bits depend on
/// every bit of the hash, which spreads each lower level's prefixes over all of a level's
/// canonical slots. A removal then takes the copy on the oldest level holding the key's
/// fingerprint, the key's own: a key stored with `Ok(true)` has none below it (its insert asked
/// those levels, and they take no inserts later), while a higher level's copy may be another
/// key's that matches it there only. (A race can still pick another key's copy: an insert
/// that lands on a level just after the next one opened may store there a key that matches, on
/// that level, a key the new level took meanwhile, whose insert had already asked that level.)
/// Measured on one thread with a million keys inserted one by one (2026-12-01, the performance
/// history's "Every level its own hash" has the program): `new(1, 0.5)` took 0.43 µs per
/// insert and 0.26 per absent lookup, where one shared hash took 8.0 and 4.1; `new(1000, 0.01)`
/// 0.346 and 0.207 against 0.337 and 0.203 (2-3%, the multiplication per level; best of five
/// runs each, alternating, on a quiet hour).
///
/// Cascading filters keep one hash for every level, because their early stop (below) counts on
/// it: a key whose fingerprint another key stores on a higher level shares that key's canonical
/// slot on every lower level, so an empty canonical slot below proves the fingerprint absent
/// above. With a hash per level a key matching another's fingerprint only on a higher level
/// would pass the early stop, be stored again below with `Ok(true)`, and removing it would take
/// the other key's copy. They suffer the blocks less: the cascading rule gives level 0 longer
/// fingerprints, so the blocks are short (`builder(1, 0.5).cascading(true)`: 0.63 µs per insert
/// and 0.39 per absent lookup at a million keys, rate 0.063; same program).
///
/// Files written before per-level hashes (whose level-hashing field, reserved then, is 0) keep
/// one hash and answer as they did; [`clear`](Self::clear) gives such a filter without
/// cascading inserts a hash per level (level 0 hashes as before, and the other levels go).
///
/// # Capped levels
///
/// The hash has 64 bits, so after about `(64 - k_0) / 2` levels a fingerprint two bits longer
/// would not fit. For most bounds that level is far beyond any memory, but not for a small
/// capacity with a tiny bound (`new(1000, 1e-9)` has `k_0 = 42`, so level 11, of `2^22` slots,
/// is the last one whose fingerprint grows). From there on each new level is *capped*: it still
/// doubles, but keeps 64-bit fingerprints (its quotient takes one bit more, its remainder one
/// fewer, than the capped level before it; the constructor refuses the few tiny-bound
/// parameters whose remainders would outgrow a slot before the fingerprints reach 64 bits), so
/// the filter keeps taking keys until memory runs out (or 32 levels, or `2^40` slots, whichever
/// comes first; then inserts return [`Error::Full`]). A capped level holding `n_i` keys adds
/// `n_i 2^-64` to the rate instead of a halving share, so with `N` keys in capped levels the
/// rate is below `p̄ + N 2^-64` (`p̄ + 5.4e-10` at ten billion keys), and
/// [`false_positive_rate`](Filter::false_positive_rate) reports it. No hash of 64 bits can do
/// better: two keys with the same hash are never told apart.
///
/// # Cascading inserts (paper 000 §4.2)
///
/// With [`cascading`](ExpandableBuilder::cascading) on, an insert stores the fingerprint in the
/// lowest level whose canonical slot is empty, with one CAS that moves nothing. Every insert
/// (cascading or not) first asks the lower levels whether the key is there (insert-if-absent,
/// the set semantics of [`Filter::insert`]), so cascading costs one extra CAS only when it
/// succeeds. A query that meets an empty canonical slot on a lower level stops there, the key
/// would have been stored in that slot, unless a removal has touched that level (a removal may
/// have emptied the slot after the key went higher up).
///
/// Two threads inserting the same new key may both store it (one per level) and both get
/// `Ok(true)` in two races: while the next level opens, and, with cascading inserts, when a
/// removal on a lower level empties the key's canonical slot there between the two inserts (the
/// one that found the slot taken goes on to the newest level, the other stores the key in the
/// emptied slot before the first reaches the newest level). A later removal then takes one copy
/// and the key still answers `true` until the second removal; `len` counts both. No copy an
/// insert reported is lost (a loom model of the repository's `tests/loom/expandable.rs`,
/// `racing_inserts_of_a_new_key_around_a_removal_keep_every_reported_copy`, checks it).
/// Everything else is as in [`Filter`].
///
/// A removal can empty a lower level's canonical slot after a key went higher up because that
/// slot was taken. So a cascading insert that finds the slot empty on a level that has seen a
/// removal (a flag each removal sets) first asks the higher levels, and stores nothing if one
/// holds the key.
pub struct ExpandableQf {
    /// Level `i`, or null if it does not exist yet. Levels are never freed before the filter.
    levels: Box<[AtomicPtr<GrowableQf>]>,
    /// Whether a removal ever touched level `i` (turns off the cascading early stop there).
    removed: Box<[AtomicBool]>,
    /// Which lower levels can be queried without locks ([`LevelReads`]).
    reads: LevelReads,
    /// The newest level.
    active: AtomicUsize,
    /// A thread is opening the next level.
    opening: AtomicBool,
    q0: u32,
    r0: u32,
    delta_grow: f64,
    cascading: bool,
    level_hashes: LevelHashes,
}

// SAFETY: the level pointers are owned boxes of `GrowableQf` (`Send + Sync`), published with
// Release and read with Acquire, freed only in `drop`.
unsafe impl Send for ExpandableQf {}
// SAFETY: as above.
unsafe impl Sync for ExpandableQf {}

impl ExpandableQf {
    /// A filter expecting about `expected_capacity` keys whose false-positive rate stays below
    /// `fpr_bound`. It takes keys until memory runs out, adding levels each twice the last; once
    /// the fingerprints fill the 64-bit hash (only for small capacities with tiny bounds) the
    /// rate may pass the bound by `N 2^-64` for the `N` keys stored from then on ("Capped
    /// levels" in the [type's docs](ExpandableQf)).
    ///
    /// ```
    /// use conqf::{ExpandableQf, Filter};
    /// let filter = ExpandableQf::new(100, 1e-4)?;
    /// for k in 0..10_000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// assert!(filter.levels() > 1 && filter.false_positive_rate() < 1e-4);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`ExpandableBuilder::build`].
    pub fn new(expected_capacity: usize, fpr_bound: f64) -> Result<Self, Error> {
        Self::builder(expected_capacity, fpr_bound).build()
    }

    /// A builder with the options of [`ExpandableBuilder`].
    ///
    /// ```
    /// use conqf::{ExpandableQf, Filter};
    /// let filter = ExpandableQf::builder(1000, 0.001).cascading(true).build()?;
    /// filter.insert(&"apple")?;
    /// assert!(filter.contains(&"apple"));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn builder(expected_capacity: usize, fpr_bound: f64) -> ExpandableBuilder {
        ExpandableBuilder {
            capacity: expected_capacity,
            fpr_bound,
            delta_grow: GrowableBuilder::DEFAULT_DELTA_GROW,
            cascading: false,
        }
    }

    /// A filter of the given levels (level 0 first, the last one active) and parameters, as a
    /// persisted one had them; `removed` has bit `i` set if level `i` has seen a removal.
    pub(crate) fn from_parts(
        levels: Vec<GrowableQf>,
        removed: u32,
        (q0, r0): (u32, u32),
        delta_grow: f64,
        cascading: bool,
        level_hashes: LevelHashes,
    ) -> Self {
        debug_assert!((1..=MAX_LEVELS).contains(&levels.len()));
        let active = levels.len() - 1;
        let mut levels = levels.into_iter();
        ExpandableQf {
            levels: (0..MAX_LEVELS)
                .map(|_| {
                    let level = levels
                        .next()
                        .map_or(std::ptr::null_mut(), |level| Box::into_raw(Box::new(level)));
                    AtomicPtr::new(level)
                })
                .collect(),
            removed: (0..MAX_LEVELS)
                .map(|i| AtomicBool::new(removed >> i & 1 == 1))
                .collect(),
            active: AtomicUsize::new(active),
            opening: AtomicBool::new(false),
            q0,
            r0,
            delta_grow,
            cascading,
            level_hashes,
            // Built whole: no operation can be in flight on a lower level.
            reads: LevelReads::with_sealed(MAX_LEVELS, active),
        }
    }

    /// The parameters `((q_0, r_0), delta_grow, cascading)`, the removal flags (bit `i`: level
    /// `i`) and the levels, for a snapshot of a filter no thread works on.
    pub(crate) fn parts(&self) -> (LevelParameters, u32, Vec<&GrowableQf>) {
        let levels: Vec<&GrowableQf> = (0..self.levels()).map(|i| self.level(i)).collect();
        let removed = (0..levels.len())
            // Relaxed: the caller has the filter to itself.
            .filter(|&i| self.removed[i].load(Ordering::Relaxed))
            .fold(0u32, |mask, i| mask | 1 << i);
        (
            ((self.q0, self.r0), self.delta_grow, self.cascading),
            removed,
            levels,
        )
    }

    /// A copy of the filter, taken while other threads keep inserting, removing, growing and
    /// opening levels: every level that exists when the call starts, each read as
    /// [`GrowableQf::snapshot`] reads it, with the filter's parameters. It holds every key
    /// stored before the call and not removed during it; keys inserted or removed meanwhile
    /// may or may not be in it, and a level opened meanwhile is not (crate docs,
    /// "Consistency").
    ///
    /// The levels are read one after another, so a cascading filter's copy may hold a key on
    /// a higher level whose canonical slot a lower level's copy has empty (a key inserted
    /// beside the read of the lower level). So that a query of the copy never stops early at
    /// such a slot, a cascading filter's copy treats every level below its newest as one that
    /// has seen a removal (the early stop of [`cascading`](ExpandableBuilder::cascading) is off
    /// there, as after any removal).
    ///
    /// Persist a live filter with `filter.snapshot()?.to_bytes()`.
    ///
    /// ```
    /// use conqf::{ExpandableQf, Filter};
    /// let filter = ExpandableQf::new(100, 0.01)?;
    /// for k in 0..2000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// let mut copy = std::thread::scope(|s| {
    ///     s.spawn(|| (2000..4000u64).for_each(|k| drop(filter.insert(&k)))); // may be in it
    ///     filter.snapshot()
    /// })?;
    /// let back = ExpandableQf::from_bytes(&copy.to_bytes())?;
    /// assert!(back.levels() >= 2);
    /// assert!((0..2000u64).all(|k| back.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`GrowableQf::snapshot`], for any level.
    pub fn snapshot(&self) -> Result<ExpandableQf, Error> {
        // Acquire: as in `levels`.
        let active = self.active.load(Ordering::Acquire);
        let levels = (0..=active)
            .map(|i| self.level(i).snapshot())
            .collect::<Result<Vec<_>, _>>()?;
        // The flags only matter with cascading inserts (the early stop), where every lower level
        // of the copy is flagged below anyway; a non-cascading filter's are copied as read.
        // Acquire: pairs with the removal's Release store, as every reader of the flags.
        let mut removed = (0..=active)
            .filter(|&i| self.removed[i].load(Ordering::Acquire))
            .fold(0u32, |mask, i| mask | 1 << i);
        if self.cascading {
            removed |= (1u32 << active) - 1;
        }
        Ok(Self::from_parts(
            levels,
            removed,
            (self.q0, self.r0),
            self.delta_grow,
            self.cascading,
            self.level_hashes,
        ))
    }

    /// The most fingerprints per canonical slot any level of a cascading filter with
    /// `2^q0` slots on level 0 can hold: its slots, overflow tail included, over its `2^q`
    /// canonical slots, at its final size. Cascading inserts fill empty canonical slots of the
    /// lower levels, while the keys a level took as the newest may sit in its tail: level 0 has
    /// `usual_slots(q_0)`, a later level started `d` doublings smaller and doubled its tail with
    /// its slots, `2^d usual_slots(q - d)`. The ratio is about `1 + 4 / 2^(q_s / 2)` for a start
    /// of `q_s` quotient bits, so it matters for small filters only: 6 up to `q_0 = 3` (level 1
    /// starts at 2 slots with 10 in the tail), 1.26 at `q_0 = 10`, 1.03 at `q_0 = 16`.
    pub(crate) fn most_fill_with_cascading(q0: u32) -> f64 {
        (0..MAX_LEVELS)
            .map_while(|level| {
                let q = q0 + level as u32;
                let doublings = Self::level_doublings(level, q);
                (q <= sizing::MAX_QUOTIENT_BITS).then(|| {
                    let slots = (usual_slots(q - doublings) as f64) * f64::from(doublings).exp2();
                    slots / f64::from(q).exp2()
                })
            })
            .fold(1.0, f64::max)
    }

    /// The doublings level `level`, of `q` quotient bits at its final size, goes through: none
    /// for level 0 (built at its final size), [`LEVEL_DOUBLINGS`] for later ones, fewer where
    /// the start would have no quotient bit left.
    fn level_doublings(level: usize, q: u32) -> u32 {
        if level == 0 {
            0
        } else {
            LEVEL_DOUBLINGS.min(q - 1)
        }
    }

    /// The quotient and remainder bits of level `level` after `doublings_done` doublings, and
    /// the doublings it has in all; `None` past the last level, or for a level above 0 whose
    /// slots could not be addressed (no such level is opened; level 0's shape is the
    /// constructor's to check).
    ///
    /// Level `i` has `q_0 + i` quotient bits at its final size and `r_0 + i` remainder bits,
    /// until the fingerprint would pass the hash's 64 bits: from then on it takes
    /// `64 - q_0 - i` (a *capped* level, see the type doc), and no more than a slot of 64 bits
    /// holds at the level's start.
    pub(crate) fn level_shape(
        (q0, r0): (u32, u32),
        level: usize,
        doublings_done: u32,
    ) -> Option<(u32, u32, u32)> {
        let q = q0 + level as u32;
        if level >= MAX_LEVELS || (level > 0 && q > sizing::MAX_QUOTIENT_BITS) {
            return None;
        }
        let r = if level == 0 {
            r0
        } else {
            (r0 + level as u32)
                .min(64 - q)
                .min(64 - STATUS_BITS - LEVEL_DOUBLINGS)
        };
        if r == 0 {
            return None;
        }
        let doublings = Self::level_doublings(level, q);
        (doublings_done <= doublings).then(|| {
            (
                q - doublings + doublings_done,
                r + doublings - doublings_done,
                doublings,
            )
        })
    }

    /// Whether level `level` has the fingerprint of the paper's rule, `q_0 + r_0 + 2 level`
    /// bits, rather than a capped one ([`level_shape`](Self::level_shape)).
    fn is_uncapped((q0, r0): (u32, u32), level: usize) -> bool {
        Self::level_shape((q0, r0), level, 0)
            .is_some_and(|(q, r, _)| q + r == q0 + r0 + 2 * level as u32)
    }

    /// Whether levels built from `(q_0, r_0)` keep Theorem 2's bound until their fingerprints
    /// fill the hash: level 1's fingerprint is two bits longer than level 0's, and so is every
    /// later one's while it fits 64 bits (and its slots can be addressed). Otherwise the bound
    /// fails after a few keys: a level whose remainder would pass 58 bits (then its slots could
    /// not start at 1/8 of its size) would get a fingerprint of fewer bits, and a rate share
    /// above its half of the last. The constructor and the decoder refuse such parameters; past
    /// them, every capped level has 64-bit fingerprints (type doc, "Capped levels").
    pub(crate) fn fingerprints_grow_to_64_bits((q0, r0): (u32, u32)) -> bool {
        let fits = |level: usize| {
            q0 + r0 + 2 * level as u32 <= 64 && q0 + level as u32 <= sizing::MAX_QUOTIENT_BITS
        };
        q0 + r0 + 2 <= 64
            && (1..MAX_LEVELS)
                .take_while(|&level| fits(level))
                .all(|level| Self::is_uncapped((q0, r0), level))
    }

    /// How many levels exist.
    pub fn levels(&self) -> usize {
        // Acquire: pairs with the Release that opened the newest level.
        self.active.load(Ordering::Acquire) + 1
    }

    /// The canonical slots of all levels at their current sizes: the denominator of the
    /// structure's fill (paper 000 §4.1: at least `2/3 δ_grow` once level 0 is full).
    pub fn canonical_slots(&self) -> usize {
        (0..self.levels())
            .map(|i| 1usize << self.level(i).quotient_bits())
            .sum()
    }

    /// Whether cascading inserts are on.
    pub fn is_cascading(&self) -> bool {
        self.cascading
    }

    /// How the levels hash keys (for persistence).
    pub(crate) fn level_hashes(&self) -> LevelHashes {
        self.level_hashes
    }

    /// Asks the CPU to start loading the canonical slot's group of `hash` on every level up to
    /// `active`, so the levels' cache misses overlap instead of following one another.
    #[inline]
    pub(crate) fn prefetch_levels(&self, hash: u64, active: usize, guard: &Guard) {
        for i in 0..=active {
            let (level, hash) = self.level_for(i, hash);
            level.prefetch(hash, guard);
        }
    }

    /// The index of the newest level (one less than [`levels`](Self::levels)).
    pub(crate) fn active(&self) -> usize {
        // Acquire: pairs with the Release that opened the newest level.
        self.active.load(Ordering::Acquire)
    }

    /// Every level's stored fingerprints with the level's index, level by level; for tests that
    /// compare two filters. Only meaningful while no thread writes.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn level_fingerprints(&self) -> Vec<(usize, crate::Fingerprint)> {
        (0..self.levels())
            .flat_map(|i| {
                self.level(i).with_quiescent(|level, _| {
                    level.fingerprints().map(|f| (i, f)).collect::<Vec<_>>()
                })
            })
            .collect()
    }

    /// Level `i`, which exists, with the hash it stores for a key of hash `hash`: every
    /// operation on a level's keys goes through here, once per level and operation.
    #[inline(always)]
    fn level_for(&self, i: usize, hash: u64) -> LevelKey<'_> {
        (self.level(i), self.level_hashes.of(i, hash))
    }

    /// Level `i`, which exists.
    #[inline]
    fn level(&self, i: usize) -> &GrowableQf {
        // Acquire: pairs with the Release that published the level.
        let ptr = self.levels[i].load(Ordering::Acquire);
        debug_assert!(!ptr.is_null());
        // SAFETY: levels up to `active` are published before `active` moves and live until
        // the filter is dropped.
        unsafe { &*ptr }
    }

    /// Whether level `i` holds the fingerprint of a key, given as the level and the key's hash
    /// for it ([`level_for`](Self::level_for)): without locks if `i` is a lower level that
    /// [`LevelReads`] lets be read so, else with the level's own (locally locked) query.
    /// That query may answer `true` from a walk without locks that misread a run during a
    /// shift (a rare false positive), which only a query may risk: inserts and removes act on
    /// the answer, so they ask [`level_holds`](Self::level_holds).
    #[inline]
    fn level_contains(&self, i: usize, active: usize, at: LevelKey<'_>, guard: &Guard) -> bool {
        self.level_query(i, active, at, guard, GrowableQf::contains_pinned)
    }

    /// [`level_contains`](Self::level_contains) whose `true` never comes from a misread run:
    /// an insert-if-absent that believed a misread would drop its key, and a removal would
    /// mark a level it does not change as removed from.
    fn level_holds(&self, i: usize, active: usize, at: LevelKey<'_>, guard: &Guard) -> bool {
        self.level_query(i, active, at, guard, GrowableQf::contains_locked_pinned)
    }

    /// A level query: lock-free where [`LevelReads`] allows it, else `locked`.
    #[inline(always)]
    fn level_query(
        &self,
        i: usize,
        active: usize,
        (level, hash): LevelKey<'_>,
        guard: &Guard,
        locked: impl Fn(&GrowableQf, u64, &Guard) -> bool,
    ) -> bool {
        if i < active {
            if let Some(found) = self
                .reads
                .read(i, || level.contains_unlocked_pinned(hash, guard))
            {
                return found;
            }
        }
        locked(level, hash, guard)
    }

    /// Whether level `level` is sealed for lock-free reads (`--cfg loom` only, for the models
    /// of the grace period).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn level_is_sealed(&self, level: usize) -> bool {
        self.reads.is_sealed(level)
    }

    /// [`contains_hash`](Filter::contains_hash) without trusting a hit of a walk without
    /// locks: `true` only if the fingerprint was stored at some moment of the call, never from
    /// a run misread during a concurrent shift (crate docs, "Consistency"). Levels read without
    /// locks (sealed, with no removal meanwhile) answer as for `contains_hash`; the others as
    /// [`LocallyLockedQf::contains_hash_locked`](crate::LocallyLockedQf::contains_hash_locked).
    /// This is the query the filter's own inserts and removals ask. For callers that act on a
    /// `true`.
    ///
    /// ```
    /// use conqf::{ExpandableQf, Filter, Remove};
    ///
    /// let filter = ExpandableQf::new(100, 0.01)?;
    /// filter.insert(&42u64)?;
    /// assert!(filter.contains_hash_locked(conqf::hash_key(&42u64)));
    /// filter.remove(&42u64)?;
    /// assert!(!filter.contains_locked(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn contains_hash_locked(&self, hash: u64) -> bool {
        self.query(hash, Self::level_holds)
    }

    /// [`contains_hash_locked`](Self::contains_hash_locked) for a key.
    pub fn contains_locked<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_locked(hash_key(key))
    }

    /// A query over all levels, each asked with `level_query` (`level_contains` or
    /// `level_holds`).
    #[inline(always)]
    fn query(
        &self,
        hash: u64,
        level_query: impl Fn(&Self, usize, usize, LevelKey<'_>, &Guard) -> bool,
    ) -> bool {
        let guard = growing::pin();
        // Acquire: as in `levels`.
        let active = self.active.load(Ordering::Acquire);
        self.prefetch_levels(hash, active, &guard);
        // Oldest first (module doc, "Query order"): the small lower levels are walked while the
        // larger levels' prefetched groups arrive, and with cascading inserts an empty canonical
        // slot on a lower level ends the query before the larger levels are walked.
        for i in 0..=active {
            let (level, level_hash) = self.level_for(i, hash);
            // Acquire on the flag: pairs with the removal's Release store, made before its first
            // change to the table (module doc).
            if self.cascading
                && i < active
                && level.canonical_is_empty(level_hash, &guard)
                && !self.removed[i].load(Ordering::Acquire)
            {
                return false;
            }
            if level_query(self, i, active, (level, level_hash), &guard) {
                return true;
            }
        }
        false
    }

    /// Removes every key and every level but the first, which is emptied: the filter is as
    /// [`new`](Self::new) or its builder made it (level 0's memory only, the levels' flags and
    /// read states reset, and the levels hashed as a new filter's: "A hash per level" in the
    /// type docs). `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{ExpandableQf, Filter};
    /// let mut filter = ExpandableQf::new(100, 0.01)?;
    /// for k in 0..2000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// assert!(filter.levels() > 1);
    /// filter.clear();
    /// assert_eq!(filter.levels(), 1);
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        for (index, level) in self.levels.iter().enumerate() {
            // Relaxed (this load and the stores below): `&mut self`, no other thread; sharing
            // the filter again orders them.
            let ptr = level.load(Ordering::Relaxed);
            if ptr.is_null() {
                continue;
            }
            if index == 0 {
                // SAFETY: level 0 is a box the filter owns for its whole life, and `&mut self`
                // rules out every other access to it.
                unsafe { &mut *ptr }.clear();
            } else {
                level.store(std::ptr::null_mut(), Ordering::Relaxed);
                // SAFETY: each level came from `Box::into_raw` and is freed once: here, its
                // pointer now null, so `drop` passes it by.
                drop(unsafe { Box::from_raw(ptr) });
            }
        }
        for removed in self.removed.iter() {
            removed.store(false, Ordering::Relaxed);
        }
        // A new state, not the old one reset: a sealing deferred before the clear (it holds
        // the old state) could otherwise seal level 0 before its grace period once level 1
        // opens again.
        self.reads = LevelReads::new(self.levels.len());
        self.active.store(0, Ordering::Relaxed);
        self.opening.store(false, Ordering::Relaxed);
        // A filter read from an older file takes the hashing a new one gets: level 0 hashes
        // the same either way, and no other level is left.
        self.level_hashes = LevelHashes::for_new(self.cascading);
    }

    /// Checks every level's invariants. Only meaningful while no thread writes.
    pub fn check_invariants(&self) -> Result<(), String> {
        (0..self.levels()).try_for_each(|i| {
            self.level(i)
                .check_invariants()
                .map_err(|e| format!("level {i}: {e}"))
        })
    }

    /// Opens level `active + 1` if nobody is opening one. Returns whether the caller should
    /// retry (a level is or was being opened, or opened now); `false` if no level can follow.
    /// A loser waits one step of the caller's `waiter`, so its backoff escalates over the
    /// caller's retries.
    fn open_next_level(&self, active: usize, waiter: &Waiter, guard: &Guard) -> bool {
        let next = active + 1;
        let Some((q, r, doublings)) = Self::level_shape((self.q0, self.r0), next, 0) else {
            return false;
        };
        // Acquire on success: pairs with the previous claimant's Release store of `false`, so
        // the check of `active` below sees the level it published. Relaxed on failure: a loser
        // reads nothing through `opening`; its caller retries and loads `active` with Acquire.
        if self
            .opening
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            waiter.wait();
            return true;
        }
        // Acquire: as in `levels`.
        if self.active.load(Ordering::Acquire) == active {
            let level =
                GrowableQf::builder_for_level(self.delta_grow, doublings).build_with_bits(q, r);
            match level {
                Ok(level) => {
                    // Release: the level is complete before anyone can load it.
                    self.levels[next].store(Box::into_raw(Box::new(level)), Ordering::Release);
                    // SeqCst: an operation that pins after the sealing below is deferred must
                    // load the new level as the newest (the epoch's pin is a SeqCst fence).
                    self.active.store(next, Ordering::SeqCst);
                    self.reads.seal_after_grace_period(active, guard);
                }
                Err(_) => {
                    // Release: pairs with the Acquire of the next claimant.
                    self.opening.store(false, Ordering::Release);
                    return false;
                }
            }
        }
        // Release: pairs with the Acquire of the next claimant.
        self.opening.store(false, Ordering::Release);
        true
    }
}

impl Filter for ExpandableQf {
    fn insert_hash(&self, hash: u64) -> Result<bool, Error> {
        let guard = growing::pin();
        let waiter = Waiter::new();
        loop {
            // Acquire: as in `levels`.
            let active = self.active.load(Ordering::Acquire);
            self.prefetch_levels(hash, active, &guard);
            for i in 0..active {
                let (level, level_hash) = self.level_for(i, hash);
                // Cascading: try the canonical slot first. If it is empty, the key is not on
                // this level (its run would start there), so the full query is skipped.
                if self.cascading {
                    // The slot may be empty because a removal emptied it after this key went
                    // higher up for want of it: then store here only if no higher level holds
                    // the key. Acquire on the flag, read after the Acquire load that saw the
                    // slot empty: pairs with the removal's Release store, made before it
                    // changed the table (module doc).
                    let absent_above = || {
                        !self.removed[i].load(Ordering::Acquire)
                            || !(i + 1..=active).any(|j| {
                                self.level_holds(j, active, self.level_for(j, hash), &guard)
                            })
                    };
                    if let Some(stored) =
                        level.insert_into_empty_canonical(level_hash, &guard, absent_above)
                    {
                        return Ok(stored);
                    }
                }
                if self.level_holds(i, active, (level, level_hash), &guard) {
                    return Ok(false);
                }
            }
            let (level, level_hash) = self.level_for(active, hash);
            match level.insert_pinned(level_hash, &guard) {
                Ok(stored) => {
                    if stored && level.saturated(level_hash, &guard) {
                        self.open_next_level(active, &waiter, &guard);
                    }
                    return Ok(stored);
                }
                Err(Error::Full) => {
                    if !self.open_next_level(active, &waiter, &guard) {
                        return Err(Error::Full);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.query(hash, Self::level_contains)
    }

    fn len(&self) -> usize {
        (0..self.levels()).map(|i| self.level(i).len()).sum()
    }

    /// The keys the current levels are planned to hold: each takes ordinary inserts until
    /// `delta_grow` of its final slots, where the next level opens. So a new level opens about
    /// when [`len`](Filter::len) reaches `capacity()` (the fill is checked on a sample of the
    /// inserts, as few as one in 64 on large levels), unless removals lowered the count. With
    /// cascading inserts the lower levels take keys past their share, so the next level opens
    /// later.
    fn capacity(&self) -> usize {
        (0..self.levels())
            .map(|i| self.level(i).last_threshold())
            .sum()
    }

    fn memory_bytes(&self) -> usize {
        let levels: usize = (0..self.levels())
            .map(|i| self.level(i).memory_bytes())
            .sum();
        levels
            + std::mem::size_of_val(&*self.levels)
            + std::mem::size_of_val(&*self.removed)
            + self.reads.memory_bytes()
    }

    fn false_positive_rate(&self) -> f64 {
        // Theorem 2's union bound: the sum of the levels' rates, n_i 2^-k_i each.
        (0..self.levels())
            .map(|i| self.level(i).false_positive_rate())
            .sum::<f64>()
    }
}

impl Remove for ExpandableQf {
    fn remove_hash(&self, hash: u64) -> Result<bool, Error> {
        let guard = growing::pin();
        // Acquire: as in `levels`.
        let active = self.active.load(Ordering::Acquire);
        for step in 0..=active {
            // Which copy of a fingerprint several levels hold is the key's own: with cascading
            // inserts the newest (a lower level holding it took a key stored after this one,
            // into a canonical slot a removal emptied); without them the oldest (a key stored
            // with `Ok(true)` on a level had no copy below it, and lower levels take no inserts
            // later; with a hash per level a higher level's copy may be another key's).
            let i = if self.cascading { active - step } else { step };
            let (level, level_hash) = self.level_for(i, hash);
            if self.level_holds(i, active, (level, level_hash), &guard) {
                // Even on the newest level: it may become a lower one before the removal
                // changes it. Release: ordered before the removal's table changes, which a
                // query may read (module doc); the query reads the flag after the slot, which
                // its Acquire load of the group synchronised with.
                self.removed[i].store(true, Ordering::Release);
                // Counted as a removal in flight, so lock-free readers of the level notice it.
                if self
                    .reads
                    .removing(i, || level.remove_pinned(level_hash, &guard))?
                {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

impl Drop for ExpandableQf {
    fn drop(&mut self) {
        for level in self.levels.iter() {
            // Relaxed: `&mut self`, no other thread.
            let ptr = level.load(Ordering::Relaxed);
            if !ptr.is_null() {
                // SAFETY: each level came from `Box::into_raw` and is freed once, here.
                drop(unsafe { Box::from_raw(ptr) });
            }
        }
    }
}

impl fmt::Debug for ExpandableQf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpandableQf")
            .field("levels", &self.levels())
            .field("len", &self.len())
            .field("cascading", &self.cascading)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{ExpandableQf, LevelHashes};
    use crate::filter::{Filter, Remove};

    /// With a large bound, the keys that reach a level spread over all its canonical slots:
    /// each full level of `2^12` slots or more has as many distinct quotients as its keys
    /// would take uniformly, `2^q (1 - e^(-n / 2^q))`. With one hash shared by every level (the
    /// older files), the prefixes stored on the lower levels are blocks of canonical slots no
    /// key of a higher level can have, and the keys crowd the others: those levels measured
    /// 17% short of uniform (0.1% with a hash per level), which made `new(1, 0.5)` take 8 µs an
    /// insert after a million keys.
    #[test]
    fn keys_reaching_a_level_spread_over_all_its_canonical_slots() {
        // Distinct quotients over the uniform expectation, summed over the full large levels.
        let spread = |level_hashes| {
            let mut filter = ExpandableQf::new(1, 0.5).unwrap();
            filter.level_hashes = level_hashes;
            for k in 0..100_000u64 {
                filter.insert(&k).unwrap();
            }
            let fingerprints = filter.level_fingerprints();
            let (mut distinct, mut uniform) = (0.0, 0.0);
            for level in 1..filter.levels() - 1 {
                let q = filter.level(level).quotient_bits();
                if q < 12 {
                    continue;
                }
                let mut quotients: Vec<u64> = fingerprints
                    .iter()
                    .filter(|&&(l, _)| l == level)
                    .map(|(_, fingerprint)| fingerprint.quotient)
                    .collect();
                let keys = quotients.len() as f64;
                quotients.dedup(); // in quotient order already
                let slots = (1u64 << q) as f64;
                distinct += quotients.len() as f64;
                uniform += slots * (1.0 - (-keys / slots).exp());
            }
            distinct / uniform
        };
        let remixed = spread(LevelHashes::PerLevel);
        let shared = spread(LevelHashes::Shared);
        assert!(remixed > 0.97, "a hash per level: {remixed} of uniform");
        assert!(shared < 0.9, "one shared hash: {shared} of uniform");
    }

    /// Without cascading inserts a new level opens when `len` reaches `capacity()`, the sum of
    /// every level's `delta_grow` share of its final slots (by at most the sampled check's
    /// slack), and `capacity()` then grows by the new level's share. Fails where `capacity()`
    /// counted every level at 90% of its final slots: `new(1000, 0.01)` said 1,843 and opened
    /// its second level at 1,536 keys.
    #[test]
    fn a_new_level_opens_where_capacity_says() {
        for (capacity, delta_grow) in [(1000, 0.75), (5000, 0.5), (300, 0.9)] {
            let filter = ExpandableQf::builder(capacity, 0.01)
                .delta_grow(delta_grow)
                .build()
                .unwrap();
            let mut planned = filter.capacity();
            assert!(planned >= capacity, "{planned} < {capacity}");
            let mut levels = filter.levels();
            for key in 0u64.. {
                filter.insert(&key).unwrap();
                if filter.levels() == levels {
                    continue;
                }
                // `capacity()` or a little more: the fill is checked on a sample of inserts.
                let len = filter.len();
                assert!(
                    (planned..=planned + 128).contains(&len),
                    "({capacity}, {delta_grow}): level {levels} opened at {len} keys, \
                     capacity() said {planned}"
                );
                // Level `i` ends with `2^(q_0 + i)` slots ([`ExpandableQf::level_shape`]).
                let final_slots = 1u64 << (filter.q0 + levels as u32);
                let share = (final_slots as f64 * delta_grow) as usize;
                assert_eq!(filter.capacity(), planned + share);
                planned = filter.capacity();
                levels = filter.levels();
                if levels == 4 {
                    break;
                }
            }
        }
    }

    /// Level 0's remainder bits: the fewest with `2 f 2^-r_0 < p̄`, `f = δ_grow` without
    /// cascading inserts and with them the most a level can be filled, overflow tail included
    /// ([`ExpandableQf`], "Levels"). The loom models rely on these sizes.
    #[test]
    fn level_zero_remainder_follows_the_sizing_rule() {
        let r0 = |capacity, bound, delta, cascading| {
            ExpandableQf::builder(capacity, bound)
                .delta_grow(delta)
                .cascading(cascading)
                .build()
                .unwrap()
                .r0
        };
        // Figure 4: 2^-10 at delta 0.75.
        assert_eq!(r0(49_151, 1.0 / 1024.0, 0.75, false), 11);
        assert_eq!(r0(49_151, 1.0 / 1024.0, 0.75, true), 12);
        // 0.0008: the delta rule alone would give 11 bits, whose full levels reach 9.8e-4.
        assert_eq!(r0(1000, 0.0008, 0.75, false), 11);
        assert_eq!(r0(1000, 0.0008, 0.75, true), 12);
        // The loom models' filters (tests/loom/expandable.rs): f = 6 at 8 slots.
        assert_eq!(ExpandableQf::most_fill_with_cascading(3), 6.0);
        assert_eq!(r0(1, 0.03, 0.25, true), 9);
        assert_eq!(r0(3, 0.015, 0.5, true), 10);
        // f counted as 1 gave 9 bits at 0.004, where a level's tail let the rate pass the bound.
        assert_eq!(r0(1, 0.004, 0.25, true), 12);
    }

    /// A bound so small that level 0's fingerprints leave no room for a second level is an
    /// error, not a filter that reports `Full` after a dozen keys; one bit larger bounds work.
    #[test]
    fn a_bound_leaving_no_room_for_a_second_level_is_an_error() {
        for cascading in [false, true] {
            for bound in [1e-18, (-60f64).exp2()] {
                let built = ExpandableQf::builder(1, bound).cascading(cascading).build();
                assert!(
                    matches!(built, Err(crate::Error::InvalidParameters(_))),
                    "bound {bound:e}, cascading {cascading}"
                );
            }
        }
        let filter = ExpandableQf::new(1, 1e-12).unwrap();
        for key in 0..1000u64 {
            filter.insert(&key).unwrap();
        }
        assert!(filter.levels() > 1);
    }

    /// A tiny bound at a tiny capacity: level 0 takes 53 fingerprint bits, so levels 1 to 5 grow
    /// their fingerprints by two bits each and the later ones are capped at the hash's 64 bits.
    /// The filter keeps taking keys past the level where it used to return `Full`, finds them
    /// all, and reports the rate below `p̄ + N 2^-64`.
    #[test]
    fn capped_levels_keep_taking_keys_at_64_bit_fingerprints() {
        let bound = 1e-15;
        let filter = ExpandableQf::new(1, bound).unwrap();
        let (q0, r0) = (filter.q0, filter.r0);
        assert_eq!((q0, r0), (2, 51), "the shape this test was written for");
        let mut uncapped = 0;
        for level in 1..super::MAX_LEVELS {
            let Some((q, r, d)) = ExpandableQf::level_shape((q0, r0), level, 0) else {
                break;
            };
            let final_q = q + d;
            assert_eq!(final_q, q0 + level as u32);
            if ExpandableQf::is_uncapped((q0, r0), level) {
                uncapped = level;
                assert!(q + r <= 64);
            } else {
                assert_eq!(q + r, 64, "level {level}");
            }
        }
        assert_eq!(uncapped, 5);
        let keys = 60_000u64;
        for key in 0..keys {
            filter.insert(&key).unwrap();
        }
        assert!(filter.levels() > uncapped + 2, "{} levels", filter.levels());
        assert!((0..keys).all(|key| filter.contains(&key)));
        assert!(filter.false_positive_rate() < bound + keys as f64 * (-64f64).exp2());
        filter.check_invariants().unwrap();
    }

    /// For every level-0 shape the constructor accepts, every level's fingerprint is two bits
    /// longer than the one before until it reaches 64 bits, and exactly 64 bits after that: the
    /// premise of the rate bound in the type doc. A review found `new(1, 1.05e-17)` (`r_0 =
    /// 57`) with levels of 61 to 63 bits between; it is refused now.
    #[test]
    fn accepted_shapes_grow_their_fingerprints_to_exactly_64_bits() {
        let mut accepted = 0;
        use crate::qf::slot::STATUS_BITS;
        use crate::sizing::MAX_QUOTIENT_BITS;
        for q0 in 1..=MAX_QUOTIENT_BITS {
            for r0 in 1..=61u32.min(64 - q0) {
                if !ExpandableQf::fingerprints_grow_to_64_bits((q0, r0)) {
                    continue;
                }
                accepted += 1;
                for level in 1..super::MAX_LEVELS {
                    let Some((q, r, d)) = ExpandableQf::level_shape((q0, r0), level, 0) else {
                        break;
                    };
                    let expected = (q0 + r0 + 2 * level as u32).min(64);
                    assert_eq!(q + r, expected, "q0 {q0}, r0 {r0}, level {level}");
                    assert!(r + STATUS_BITS <= 64 && (1..=MAX_QUOTIENT_BITS).contains(&(q + d)));
                }
            }
        }
        assert!(accepted > 1000, "{accepted}");
        assert!(matches!(
            ExpandableQf::new(1, 1.05e-17),
            Err(crate::Error::InvalidParameters(_))
        ));
    }

    /// Lower levels get sealed for lock-free reads once the grace period after the next level's
    /// opening has passed (pinning again lets the epoch advance); the newest level never is.
    #[test]
    fn lower_levels_are_sealed_after_a_grace_period() {
        let filter = ExpandableQf::new(1000, 0.01).unwrap();
        let mut k = 0u64;
        while filter.levels() < 3 {
            filter.insert(&k).unwrap();
            k += 1;
        }
        let sealed = |i| filter.reads.is_sealed(i);
        // Pinning lets the epoch advance, unless another test's thread is descheduled while
        // pinned: yield, and give up only after a long bound (a hang guard, not a timing test).
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !(sealed(0) && sealed(1)) && std::time::Instant::now() < give_up {
            drop(crate::qf::growing::pin());
            std::thread::yield_now();
        }
        assert!(sealed(0) && sealed(1) && !sealed(2));
        assert!((0..k).all(|key| filter.contains(&key)));
    }

    /// `most_fill_with_cascading` computes the levels' slots from how they are built; this
    /// checks it against the slots the levels of real filters have: no level has more slots per
    /// canonical slot than the bound, and a level at its final size reaches it.
    #[test]
    fn the_cascading_fill_bound_counts_every_slot_the_levels_have() {
        for capacity in [1usize, 5, 100, 3000] {
            let filter = ExpandableQf::builder(capacity, 0.01)
                .cascading(true)
                .build()
                .unwrap();
            for k in 0..(capacity as u64 * 64).max(5000) {
                filter.insert(&k).unwrap();
            }
            assert!(filter.levels() >= 4, "{} levels", filter.levels());
            let bound = ExpandableQf::most_fill_with_cascading(filter.q0);
            let mut reached = false;
            for i in 0..filter.levels() {
                let slots = filter.level(i).with_quiescent(|f, _| f.table.slots.len());
                let ratio = slots as f64 / (1u64 << (filter.q0 + i as u32)) as f64;
                assert!(
                    ratio <= bound,
                    "capacity {capacity}, level {i}: {ratio} > {bound}"
                );
                reached |= ratio == bound;
            }
            assert!(
                reached,
                "capacity {capacity}: no level has {bound} slots per canonical slot"
            );
        }
    }

    /// Level 0 has the first power of two of slots with `δ_grow m_0 > c` in whole keys.
    #[test]
    fn level_zero_slots_follow_the_sizing_rule() {
        let q0 = |capacity| ExpandableQf::new(capacity, 0.01).unwrap().q0;
        assert_eq!(q0(49_151), 16); // 0.75 * 65536 = 49152 > 49151
        assert_eq!(q0(49_152), 17); // not strictly larger any more
        assert_eq!(q0(3), 3); // 0.75 * 8 = 6 > 3, 0.75 * 4 = 3 is not

        // 0.7 * 1024 = 716.8 > 716, but a level counts whole keys: its 716th would open level 1.
        let q0_at = |capacity, delta| {
            let filter = ExpandableQf::builder(capacity, 0.01).delta_grow(delta);
            filter.build().unwrap().q0
        };
        assert_eq!(q0_at(715, 0.7), 10);
        assert_eq!(q0_at(716, 0.7), 11);
    }

    /// A filter without cascading inserts gets a hash per level, a cascading one keeps one
    /// hash; `clear` gives a filter read from an older file (one hash) what a new one gets.
    #[test]
    fn cascading_filters_keep_one_hash_and_clear_takes_a_new_filters() {
        let plain = ExpandableQf::new(1000, 0.01).unwrap();
        let mut cascading = ExpandableQf::builder(1000, 0.01)
            .cascading(true)
            .build()
            .unwrap();
        assert_eq!(plain.level_hashes, LevelHashes::PerLevel);
        assert_eq!(cascading.level_hashes, LevelHashes::Shared);
        let mut old = plain;
        old.level_hashes = LevelHashes::Shared;
        for k in 0..5000u64 {
            old.insert(&k).unwrap();
            cascading.insert(&k).unwrap();
        }
        assert!(old.levels() > 2);
        old.clear();
        cascading.clear();
        assert_eq!(old.level_hashes, LevelHashes::PerLevel);
        assert_eq!(cascading.level_hashes, LevelHashes::Shared);
        for k in 0..5000u64 {
            old.insert(&k).unwrap();
        }
        assert!((0..5000u64).all(|k| old.contains(&k)));
    }

    /// A key hash, other than `hash` for each `low` from 1 on, whose level-1 fingerprint is
    /// `hash`'s: its level-1 hash keeps the fingerprint's bits and takes others below them,
    /// mapped back through the level's multiplier (its inverse modulo 2^64, by Newton's
    /// iteration, which doubles the correct bits each step).
    fn with_level_1_fingerprint_of(filter: &ExpandableQf, hash: u64, low: u64) -> u64 {
        let level = filter.level(1);
        let bits = level.quotient_bits() + level.remainder_bits();
        let inverse = match filter.level_hashes {
            LevelHashes::Shared => 1,
            LevelHashes::PerLevel => {
                let multiplier = super::LEVEL_MULTIPLIERS[1];
                let mut inverse = 1u64;
                for _ in 0..6 {
                    inverse =
                        inverse.wrapping_mul(2u64.wrapping_sub(multiplier.wrapping_mul(inverse)));
                }
                inverse
            }
        };
        let top = filter.level_hashes.of(1, hash) >> (64 - bits) << (64 - bits);
        let other = (top | low.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> bits).wrapping_mul(inverse);
        assert_eq!(
            filter.level_hashes.of(1, other) >> (64 - bits),
            top >> (64 - bits)
        );
        other
    }

    /// Set semantics with cascading inserts: a key whose fingerprint on level 1 is another
    /// stored key's gets `Ok(false)` from its insert, whatever its lower bits, so removing it
    /// (which takes that fingerprint) falls under the documented exception for keys that share a
    /// fingerprint. One hash for all levels gives it: the two keys share their canonical slot on
    /// level 0, where the stored key found no room. Fails with a hash per level (the early stop
    /// passes the key whose level-0 slot is empty, and the insert stores it with `Ok(true)`).
    #[test]
    fn a_cascading_key_matching_a_higher_level_fingerprint_is_present() {
        let filter = ExpandableQf::builder(64, 0.05)
            .cascading(true)
            .build()
            .unwrap();
        // A key stored on level 1 (its level-0 canonical slot was taken).
        let on_level_1 = |hash: u64| {
            let level_hash = filter.level_hashes.of(1, hash);
            filter.level(1).contains_hash_locked(level_hash)
                && !filter.level(0).contains_hash_locked(hash)
        };
        let mut k = 0u64;
        let stored = loop {
            let hash = crate::hash::hash_key(&k);
            filter.insert_hash(hash).unwrap();
            if filter.levels() >= 2 && on_level_1(hash) {
                break hash;
            }
            k += 1;
        };
        for low in 1..200u64 {
            let other = with_level_1_fingerprint_of(&filter, stored, low);
            assert_ne!(other, stored);
            assert!(filter.contains_hash(other), "low bits {low}");
            assert_eq!(filter.insert_hash(other), Ok(false), "low bits {low}");
        }
    }

    /// Without cascading inserts, removing a key takes its own copy, the one on the oldest level
    /// holding its fingerprint: a key stored on level 0 and a later key stored on level 1 whose
    /// level-1 fingerprint (a hash per level) is the first key's both answer `Ok(true)`, and
    /// removing the first leaves the second. Taking the newest level's copy removed the second.
    #[test]
    fn removal_takes_the_copy_of_the_removed_key() {
        let filter = ExpandableQf::new(64, 0.05).unwrap();
        let first = crate::hash::hash_key(&0u64);
        assert_eq!(filter.insert_hash(first), Ok(true));
        let mut k = 1u64;
        while filter.levels() < 2 {
            filter.insert(&k).unwrap();
            k += 1;
        }
        // A key with the first key's level-1 fingerprint that no level holds yet.
        let second = (1..1000u64)
            .map(|low| with_level_1_fingerprint_of(&filter, first, low))
            .find(|&hash| !filter.contains_hash(hash))
            .unwrap();
        assert_eq!(filter.insert_hash(second), Ok(true));
        assert_eq!(filter.remove_hash(first), Ok(true));
        assert!(filter.contains_hash(second));
    }

    /// Random inserts, removals and queries against the exact model: one set of fingerprints
    /// per level, each the top `q_i + r_i` bits of the level's own hash, and the levels' removal
    /// flags. Without cascading inserts a key is present if any level holds its fingerprint;
    /// with them, a query also stops at a lower level (not the newest) where the key's canonical
    /// slot is empty and no removal ran, which the model finds by laying the level's
    /// fingerprints out as a quotient filter places them (runs in quotient order, each from its
    /// canonical slot or the end of the run before). An insert answers `Ok(true)` exactly when
    /// the query would have answered `false`, and lands where the model says: with cascading
    /// inserts on the first lower level whose canonical slot is empty (and, past a removal
    /// there, no higher level holds the key), else on the newest level. A removal takes the
    /// fingerprint from the newest level holding it with cascading inserts, from the oldest
    /// without, and flags that level.
    ///
    /// The hashes are random, drawn from a pool so that keys are inserted again and removed:
    /// they collide mostly on level 0's short fingerprints. The filter without cascading inserts
    /// hashes each level apart, the cascading one with one hash (as their constructors do).
    mod model {
        use std::collections::BTreeSet;

        use proptest::prelude::*;

        use super::super::ExpandableQf;
        use crate::filter::{Filter, Remove};

        #[derive(Debug, Clone, Copy)]
        enum Op {
            Insert(u64),
            Remove(u64),
            Contains(u64),
        }

        /// Operations on a pool of random hashes, so keys are inserted again, removed and
        /// looked up after they were inserted; enough of them to open at least three levels
        /// from `builder(4, 0.2)`.
        fn ops() -> impl Strategy<Value = Vec<Op>> {
            let pool = proptest::collection::vec(any::<u64>(), 100..200);
            let picks =
                proptest::collection::vec((0..10u8, any::<prop::sample::Index>()), 300..500);
            (pool, picks).prop_map(|(pool, picks)| {
                picks
                    .into_iter()
                    .map(|(kind, index)| {
                        let hash = *index.get(&pool);
                        match kind {
                            0..=4 => Op::Insert(hash),
                            5..=6 => Op::Remove(hash),
                            _ => Op::Contains(hash),
                        }
                    })
                    .collect()
            })
        }

        struct Model<'a> {
            filter: &'a ExpandableQf,
            levels: Vec<BTreeSet<u64>>,
            removed: Vec<bool>,
        }

        impl Model<'_> {
            /// Level `i`'s fingerprint of `hash`.
            fn fingerprint(&self, i: usize, hash: u64) -> u64 {
                let level = self.filter.level(i);
                let bits = level.quotient_bits() + level.remainder_bits();
                self.filter.level_hashes.of(i, hash) >> (64 - bits)
            }

            fn holds(&self, i: usize, hash: u64) -> bool {
                self.levels[i].contains(&self.fingerprint(i, hash))
            }

            /// Whether level `i`'s canonical slot of `hash` is empty, from its fingerprints.
            fn canonical_is_empty(&self, i: usize, hash: u64) -> bool {
                let r = self.filter.level(i).remainder_bits();
                let canonical = self.fingerprint(i, hash) >> r;
                let mut next_free = 0;
                for fingerprint in &self.levels[i] {
                    let slot = next_free.max(fingerprint >> r);
                    if slot == canonical {
                        return false;
                    }
                    next_free = slot + 1;
                }
                true
            }

            /// Where a cascading query stops at level `i` (not the newest): the canonical slot
            /// is empty and the level never saw a removal.
            fn stops_at(&self, i: usize, hash: u64) -> bool {
                self.filter.cascading
                    && i + 1 < self.levels.len()
                    && self.canonical_is_empty(i, hash)
                    && !self.removed[i]
            }

            /// What a query of `hash` answers.
            fn present(&self, hash: u64) -> bool {
                for i in 0..self.levels.len() {
                    if self.stops_at(i, hash) {
                        return false;
                    }
                    if self.holds(i, hash) {
                        return true;
                    }
                }
                false
            }

            /// The lower level a cascading insert of an absent `hash` takes, if any.
            fn cascades_to(&self, hash: u64) -> Option<usize> {
                let newest = self.levels.len() - 1;
                (0..newest).find(|&i| {
                    self.filter.cascading
                        && self.canonical_is_empty(i, hash)
                        && (!self.removed[i] || !(i + 1..=newest).any(|j| self.holds(j, hash)))
                })
            }
        }

        fn run(cascading: bool, ops: Vec<Op>) -> Result<(), TestCaseError> {
            let filter = ExpandableQf::builder(4, 0.2)
                .cascading(cascading)
                .build()
                .unwrap();
            let mut model = Model {
                filter: &filter,
                levels: vec![BTreeSet::new()],
                removed: vec![false],
            };
            for op in ops {
                match op {
                    Op::Insert(hash) => {
                        let present = model.present(hash);
                        let newest = model.levels.len() - 1;
                        let cascades_to = model.cascades_to(hash);
                        prop_assert_eq!(filter.insert_hash(hash), Ok(!present));
                        model.levels.resize(filter.levels(), BTreeSet::new());
                        model.removed.resize(filter.levels(), false);
                        if !present {
                            // The level whose table now holds the fingerprint the model lacks.
                            let landed: Vec<usize> = (0..model.levels.len())
                                .filter(|&i| {
                                    let level_hash = filter.level_hashes.of(i, hash);
                                    filter.level(i).contains_hash_locked(level_hash)
                                        && !model.holds(i, hash)
                                })
                                .collect();
                            prop_assert_eq!(landed.len(), 1, "landed on {:?}", landed);
                            match cascades_to {
                                Some(i) => prop_assert_eq!(landed[0], i),
                                None => prop_assert!(landed[0] >= newest, "on {}", landed[0]),
                            }
                            let fingerprint = model.fingerprint(landed[0], hash);
                            model.levels[landed[0]].insert(fingerprint);
                        }
                    }
                    Op::Remove(hash) => {
                        let mut holding = (0..model.levels.len()).filter(|&i| model.holds(i, hash));
                        let taken = if cascading {
                            holding.next_back()
                        } else {
                            holding.next()
                        };
                        prop_assert_eq!(filter.remove_hash(hash), Ok(taken.is_some()));
                        if let Some(i) = taken {
                            let fingerprint = model.fingerprint(i, hash);
                            model.levels[i].remove(&fingerprint);
                            model.removed[i] = true;
                        }
                    }
                    Op::Contains(hash) => {
                        let present = model.present(hash);
                        prop_assert_eq!(filter.contains_hash(hash), present);
                        prop_assert_eq!(filter.contains_hash_locked(hash), present);
                    }
                }
            }
            let len: usize = model.levels.iter().map(BTreeSet::len).sum();
            prop_assert_eq!(filter.len(), len);
            prop_assert!(filter.levels() >= 3, "only {} levels", filter.levels());
            filter.check_invariants().map_err(TestCaseError::fail)?;
            Ok(())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(150))]

            #[test]
            fn expandable_filter_matches_the_model(ops in ops()) {
                run(false, ops)?;
            }

            #[test]
            fn cascading_expandable_filter_matches_the_model(ops in ops()) {
                run(true, ops)?;
            }
        }
    }
}
