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
//! walk without locks whose answer stands if it read one 64-bit group, found the key, or no locked
//! shift of its region overlapped it (the level's shift regions), else a read lock on the
//! cluster. A hit of that walk can be a misread during a shift (a false positive), so inserts and
//! removals, which act on a hit, ask the level with `contains_hash_locked`, which trusts only
//! one-group answers, walks no locked shift overlapped and locked walks. Removals use the locally
//! locked filter's removal (lock-free inside one group, else locked), on the level that holds the
//! fingerprint (the newest first with cascading inserts, else the oldest: the copy that is the
//! key's own, see `remove_hash`), counted in flight either way. Cascading inserts change lower
//! levels only by CASes into empty slots, which move nothing.
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
use crate::hash::hash_key;
use crate::qf::growing::{self, GrowableQf, Guard};
use crate::qf::level_reads::LevelReads;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, Waiter};

mod builder;
mod level_hashes;
mod shape;
#[cfg(all(test, not(loom)))]
mod tests;

pub use builder::ExpandableBuilder;
pub(crate) use level_hashes::LevelHashes;
use level_hashes::LevelKey;
use shape::LevelParameters;
pub(crate) use shape::MAX_LEVELS;

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
        ExpandableBuilder::new(expected_capacity, fpr_bound)
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
        // `0..active + 1`, not `0..=active`: an inclusive range carries an end flag that the
        // loop tests every step (`active` is below `MAX_LEVELS`, so it cannot overflow).
        for i in 0..active + 1 {
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
        // slot on a lower level ends the query before the larger levels are walked. The range
        // as in `prefetch_levels`.
        for i in 0..active + 1 {
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
    ///
    /// # Errors
    /// A description of the first violation.
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
