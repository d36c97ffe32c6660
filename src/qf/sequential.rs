//! `SequentialQf`: the basic single-threaded quotient filter with 3 status bits (paper 000 §2.1,
//! paper 003). It is the baseline every concurrent speedup is measured against, and the result
//! of growing and merging.

use std::hash::Hash;

use crate::batch::{self, BuildMethod};
use crate::filter::{Error, Merge};
use crate::hash::{hash_key, Fingerprint};
use crate::sizing;
use crate::storage::{with_fixed_width, AtRest, Cursor, Exclusive, GroupSource};
use crate::sync::Ordering;

use super::load_cap::refuse_unless_stored;
use super::scan::Fingerprints;
pub(crate) use super::table::MAX_LOAD;
use super::table::{self, QfTable};
use super::usual_slots;
use super::walk;

/// A quotient filter for one thread: writes take `&mut self`.
///
/// Stores `2^q` canonical slots (plus a small overflow tail) of `r + 3` bits packed into 64-bit
/// groups. A key's fingerprint is the top `q + r` bits of its hash; the filter stores each
/// fingerprint once (set semantics), so it answers exactly for fingerprints and has false
/// positives only through fingerprint collisions: about `n / 2^(q + r)`.
///
/// ```
/// use conqf::SequentialQf;
/// let mut filter = SequentialQf::new(1000, 0.01)?;
/// assert_eq!(filter.insert("apple")?, true);
/// assert_eq!(filter.insert("apple")?, false); // already there
/// assert!(filter.contains("apple"));
/// assert_eq!(filter.remove("apple")?, true);
/// assert!(!filter.contains("apple"));
/// # Ok::<(), conqf::Error>(())
/// ```
pub struct SequentialQf {
    pub(crate) table: QfTable,
    pub(crate) len: usize,
}

impl SequentialQf {
    /// A filter that holds `capacity` keys at an expected false-positive rate of at most `fpr`.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, or the table
    /// would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        Ok(SequentialQf {
            table: QfTable::new(capacity, fpr)?,
            len: 0,
        })
    }

    /// A filter with `2^quotient_bits` slots of `remainder_bits` remainder bits each.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] unless `1 <= quotient_bits <= 40`, `remainder_bits >= 1`,
    /// `quotient_bits + remainder_bits <= 64` and `remainder_bits + 3 <= 64`;
    /// [`Error::OutOfMemory`] if the table cannot be allocated.
    pub fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        Ok(SequentialQf {
            table: QfTable::with_bits(quotient_bits, remainder_bits)?,
            len: 0,
        })
    }

    /// Quotient bits `q`: the table has `2^q` canonical slots.
    pub fn quotient_bits(&self) -> u32 {
        self.table.quotient_bits
    }

    /// Remainder bits `r` stored per slot.
    pub fn remainder_bits(&self) -> u32 {
        self.table.remainder_bits
    }

    /// Number of stored fingerprints.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many fingerprints fit at the planned maximum fill (90% of the canonical slots).
    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// Bytes of the table.
    pub fn memory_bytes(&self) -> usize {
        self.table.slots.memory_bytes()
    }

    /// The expected false-positive rate at the current fill: `n / 2^(q + r)`.
    pub fn false_positive_rate(&self) -> f64 {
        self.table.false_positive_rate(self.len)
    }

    /// The table's slots, which hold no locks: only `&mut self` writes them.
    #[inline]
    fn slots(&self) -> AtRest<'_> {
        AtRest(&self.table.slots)
    }

    fn fingerprint(&self, hash: u64) -> Fingerprint {
        let (quotient, remainder) = self.table.fingerprint(hash);
        Fingerprint {
            quotient: quotient as u64,
            remainder,
        }
    }

    /// Inserts the fingerprint of `hash`: `Ok(true)` if stored, `Ok(false)` if already present.
    ///
    /// # Errors
    /// [`Error::Full`] if the filter holds its load cap (31/32 of the `2^q` slots, from `2^10`
    /// slots on; see [`Filter::capacity`](crate::Filter::capacity)) and the fingerprint is not
    /// stored (a stored one answers `Ok(false)` there too), or if the run would reach past the
    /// overflow tail; the filter is unchanged.
    pub fn insert_hash(&mut self, hash: u64) -> Result<bool, Error> {
        if self.len >= self.table.load_cap() {
            return refuse_unless_stored(|| self.contains_hash(hash));
        }
        let fingerprint = self.fingerprint(hash);
        self.insert_fingerprint(fingerprint)
    }

    /// Whether the fingerprint of `hash` is stored.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.table.fingerprint(hash);
        // At 72% fill about half of the quotients an absent key asks for have no run
        // (`e^-0.72`): answered here, with one load, they skip the walk's set-up in
        // `contains_in_run` (`peer_probe`, 2026-11-29, two runs each: absent lookups 4% and 6%
        // faster at `2^16` slots, 10% and 6% at `2^22`; decoding the slot through a lock, as a
        // concurrent filter would, lost it).
        // Relaxed: reads of a table no other thread writes (`&mut self` for every write).
        if !self.table.is_occupied_at_rest(quotient, Ordering::Relaxed) {
            return false;
        }
        self.contains_in_run(quotient, remainder)
    }

    /// [`contains_hash`](Self::contains_hash) of a quotient whose canonical slot has a run.
    #[inline(never)]
    fn contains_in_run(&self, quotient: usize, remainder: u64) -> bool {
        // Relaxed: reads of a table no other thread writes (`&mut self` for every write).
        let slots = self.slots();
        with_fixed_width!(slots => Self::found(
            Cursor::over_prefetching(&slots, quotient, Ordering::Relaxed),
            remainder,
        ))
    }

    /// Whether `(quotient, remainder)` is stored: [`contains_hash`](Self::contains_hash) after
    /// the split and without asking for the neighbouring cache lines, for a batch lookup whose
    /// window already prefetched the canonical slot's line.
    #[inline]
    pub(crate) fn contains_fingerprint(&self, quotient: usize, remainder: u64) -> bool {
        // `&mut self` for every write: no other thread writes the table.
        self.table.contains_at_rest(quotient, remainder)
    }

    /// Whether `remainder` is in the run of the canonical slot under `cursor`.
    #[inline(always)]
    fn found<S: GroupSource>(mut cursor: Cursor<'_, S>, remainder: u64) -> bool {
        walk::lookup(&mut cursor, remainder).is_some_and(|(found, _)| found)
    }

    /// Removes the fingerprint of `hash`: `Ok(true)` if it was stored.
    ///
    /// # Errors
    /// Never today; the `Result` matches [`Remove`](crate::Remove).
    pub fn remove_hash(&mut self, hash: u64) -> Result<bool, Error> {
        let Fingerprint {
            quotient,
            remainder,
        } = self.fingerprint(hash);
        // `&mut self`: no other thread touches the table.
        let removed = self
            .table
            .remove_at_rest(quotient as usize, remainder, Exclusive);
        self.len -= usize::from(removed);
        Ok(removed)
    }

    /// Inserts a key; see [`insert_hash`](Self::insert_hash).
    ///
    /// # Errors
    /// [`Error::Full`] as for [`insert_hash`](Self::insert_hash).
    pub fn insert<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool, Error> {
        self.insert_hash(hash_key(key))
    }

    /// Whether a key may be present.
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(hash_key(key))
    }

    /// Removes a key; see [`remove_hash`](Self::remove_hash).
    ///
    /// # Errors
    /// As [`remove_hash`](Self::remove_hash).
    pub fn remove<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool, Error> {
        self.remove_hash(hash_key(key))
    }

    #[inline]
    pub(crate) fn insert_fingerprint(&mut self, fingerprint: Fingerprint) -> Result<bool, Error> {
        let quotient = fingerprint.quotient as usize;
        // `&mut self`: no other thread touches the table. The last slot stays empty.
        let last = self.table.slots.len() - 1;
        let inserted =
            self.table
                .insert_at_rest(quotient, fingerprint.remainder, last, Exclusive)?;
        self.len += usize::from(inserted);
        Ok(inserted)
    }

    /// The stored fingerprints in increasing `(quotient, remainder)` order.
    pub fn fingerprints(&self) -> Fingerprints<'_> {
        // Relaxed: reads of a table no other thread writes.
        self.table.fingerprints(Ordering::Relaxed)
    }

    /// Doubles the number of slots without rehashing (bounded growing, paper 000 §2.1): the top
    /// remainder bit moves into the quotient. The fingerprints, and so the false-positive rate
    /// for the stored keys, stay the same; each doubling halves the fill.
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let mut filter = SequentialQf::with_bits(8, 10)?;
    /// for k in 0..200u64 {
    ///     filter.insert(&k)?;
    /// }
    /// let stored = filter.len();
    /// filter.grow()?;
    /// assert_eq!((filter.quotient_bits(), filter.remainder_bits()), (9, 9));
    /// assert_eq!(filter.len(), stored);
    /// assert!((0..200u64).all(|k| filter.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if only one remainder bit is left or the quotient would
    /// exceed 40 bits; [`Error::OutOfMemory`] if the larger table cannot be allocated; the
    /// filter is then unchanged.
    pub fn grow(&mut self) -> Result<(), Error> {
        // The doubled table has at least twice the slots, and every fingerprint lands at most at
        // twice its old position plus one (see `growing::migration`), so the move never fails.
        self.move_into(self.table.doubled()?)
    }

    /// Moves every stored fingerprint into `table`, a table of the same fingerprint length
    /// (`q + r`) split otherwise, and makes it the filter's, without rehashing: a fingerprint
    /// key does not change when a bit moves between remainder and quotient. For
    /// [`grow`](Self::grow) and [`shrink_to_fit`](Self::shrink_to_fit).
    ///
    /// # Errors
    /// [`Error::Full`] if the keys do not fit `table`; the filter is then unchanged.
    fn move_into(&mut self, table: QfTable) -> Result<(), Error> {
        // Relaxed: `&mut self`, so no other thread touches the table.
        let keys = batch::keys::table_keys(&self.table, Ordering::Relaxed);
        // `Off` keeps the copies a build without dedupe stored; other tables have none.
        let len = batch::build(&table, keys, BuildMethod::default(), batch::Dedupe::Off)?;
        *self = SequentialQf { table, len };
        Ok(())
    }

    /// Halves the table as often as the stored fingerprints still fit the smaller one at its
    /// planned fill ([`capacity`](Self::capacity), 90% of the canonical slots), moving a
    /// quotient bit back into the remainder each time: the reverse of [`grow`](Self::grow),
    /// without rehashing. The fingerprints, and so the false-positive rate for the stored keys,
    /// stay the same; the fill goes up and the memory down (qfilter's `shrink_to_fit`). A table
    /// already that small, or of one quotient bit, stays as it is. For a `LocallyLockedQf`,
    /// shrink its [`into_sequential`](crate::LocallyLockedQf::into_sequential) and take it back
    /// with `from_sequential` (neither copies).
    ///
    /// ```
    /// use conqf::SequentialQf;
    /// let mut filter = SequentialQf::with_bits(12, 10)?;
    /// for k in 0..3000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// for k in 200..3000u64 {
    ///     filter.remove(&k)?;
    /// }
    /// filter.shrink_to_fit()?;
    /// // 200 keys fit 2^8 slots at 90% (230), not 2^7 (115).
    /// assert_eq!((filter.quotient_bits(), filter.remainder_bits()), (8, 14));
    /// assert!((0..200u64).all(|k| filter.contains(&k)));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the smaller table cannot be allocated;
    /// [`Error::InvalidParameters`] if its remainders would be too wide for a slot;
    /// [`Error::Full`] if a cluster at the table's end would pass the smaller table's overflow
    /// tail. The filter is then unchanged.
    pub fn shrink_to_fit(&mut self) -> Result<(), Error> {
        let (q, r) = (self.table.quotient_bits, self.table.remainder_bits);
        let mut target = q;
        while target > 1 && self.len <= table::capacity_of(target - 1) {
            target -= 1;
        }
        if target == q {
            return Ok(());
        }
        self.move_into(QfTable::with_bits(target, r + (q - target))?)
    }

    /// Removes every key, keeping its table (size and memory) and parameters: the filter
    /// answers as a new one of its shape. `&mut self`, so no other thread is using it.
    ///
    /// ```
    /// use conqf::{SequentialQf};
    /// let mut filter = SequentialQf::new(1000, 0.01)?;
    /// filter.insert(&1u64)?;
    /// filter.clear();
    /// assert!(filter.is_empty() && !filter.contains(&1u64));
    /// filter.insert(&2u64)?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.table.slots.clear();
        self.len = 0;
    }

    /// Checks the table's invariants (status bits, run order, the count); for tests and
    /// debugging.
    ///
    /// # Errors
    /// A description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.table.check(self.len)
    }
}

/// Merging without rehashing (paper 003 "Merging", paper 004 §IV-E): extract both tables'
/// fingerprints in sorted order, merge them, and bulk build the result
/// ([`BuildMethod::default`]). The result has the larger quotient of the two, doubled until the
/// union (each fingerprint once) fits at 90% fill (a bit moves from the remainder to the
/// quotient each time, as in [`grow`](SequentialQf::grow)).
///
/// Both filters must have the same fingerprint length `q + r`, or the merge returns
/// [`Error::Incompatible`]. Cutting the longer fingerprints down to the shorter length would keep
/// "no false negatives", but would silently raise the false-positive rate of the keys that
/// filter's owner sized for; so that choice is left to the caller (rebuild the longer filter from
/// its keys with the shorter parameters).
///
/// ```
/// use conqf::{Merge, SequentialQf};
/// let mut a = SequentialQf::with_bits(10, 10)?;
/// let mut b = SequentialQf::with_bits(10, 10)?;
/// a.insert(&1u64)?;
/// b.insert(&2u64)?;
/// let union = a.merge(&b)?;
/// assert!(union.contains(&1u64) && union.contains(&2u64));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for SequentialQf {
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        // `&self` excludes `&mut` writers.
        merge_at_rest(&self.table, &other.table)
    }
}

/// [`merge_tables`] of two tables no other thread writes (a `SequentialQf`'s, or a concurrent
/// filter's behind `&mut`).
pub(crate) fn merge_at_rest(a: &QfTable, b: &QfTable) -> Result<SequentialQf, Error> {
    // Relaxed: no other thread writes either table.
    merge_tables(
        (a, || batch::keys::table_keys(a, Ordering::Relaxed)),
        (b, || batch::keys::table_keys(b, Ordering::Relaxed)),
    )
}

/// The merge of two 3-status-bit tables ([`SequentialQf`]'s `Merge`), shared with the
/// concurrent filters over the same table: each side is a table and how to read its sorted
/// fingerprint keys (under whatever locks that filter needs), read first `a`, then `b`, after
/// the parameters are checked.
pub(crate) fn merge_tables(
    (a, a_keys): (&QfTable, impl FnOnce() -> Vec<u64>),
    (b, b_keys): (&QfTable, impl FnOnce() -> Vec<u64>),
) -> Result<SequentialQf, Error> {
    let bits = sizing::merged_fingerprint_bits(
        (a.quotient_bits, a.remainder_bits),
        (b.quotient_bits, b.remainder_bits),
    )?;
    let (a_keys, b_keys) = (a_keys(), b_keys());
    // Sized from what was read (a concurrent filter's count may have moved since), each
    // fingerprint once: a key in both inputs takes one slot.
    let union = batch::keys::merge_sorted(&a_keys, &b_keys);
    let q = sizing::union_quotient_bits(
        (a.quotient_bits, b.quotient_bits),
        bits,
        union.len(),
        MAX_LOAD,
    );
    // A grown or read-back input may have more slots than `with_bits` gives its shape (its
    // overflow tail in use): then at least its slots, doubled for every quotient bit the union
    // gained, since doubling a table's slots keeps every supercluster within twice its old
    // range, as in `QfTable::doubled`, so its keys alone always fit. Inputs of the usual size
    // ask for nothing more than the union's own shape (doubling their overflow tails too once
    // asked for gigabytes more than either input; found in review).
    let min_slots = [a, b]
        .into_iter()
        .filter(|table| table.slots.len() > usual_slots(table.quotient_bits))
        .map(|table| {
            let doublings = q - table.quotient_bits;
            table.slots.len().saturating_mul(1 << doublings)
        })
        .max()
        .unwrap_or(0);
    let (table, len) = batch::build_table(q, bits - q, min_slots, union, BuildMethod::default())?;
    Ok(SequentialQf { table, len })
}

/// Re-splits a fingerprint stored with `from_r` remainder bits for a table with `to_r <= from_r`.
pub(crate) fn refine(f: Fingerprint, from_r: u32, to_r: u32) -> Fingerprint {
    let moved = from_r - to_r;
    Fingerprint {
        quotient: (f.quotient << moved) | (f.remainder >> to_r),
        remainder: f.remainder & crate::hash::low_mask(to_r),
    }
}

/// A copy with the same keys, parameters and bytes; the two then change independently.
///
/// Like `Vec`'s, the clone aborts the process if its memory cannot be had (see
/// [`std::alloc::handle_alloc_error`]); the constructors report that case as an error instead.
///
/// ```
/// use conqf::SequentialQf;
///
/// let mut original = SequentialQf::new(1000, 0.01)?;
/// original.insert("apple")?;
/// let mut copy = original.clone();
/// copy.insert("pear")?;
/// assert!(copy.contains("apple") && copy.contains("pear"));
/// assert!(!original.contains("pear"));
/// assert_eq!(original.clone().to_bytes(), original.to_bytes()); // bit for bit
/// # Ok::<(), conqf::Error>(())
/// ```
impl Clone for SequentialQf {
    fn clone(&self) -> Self {
        match self.table.copy_at_rest() {
            Ok(table) => SequentialQf {
                table,
                len: self.len,
            },
            Err(_) => crate::storage::abort_for_bytes(self.table.slots.memory_bytes()),
        }
    }
}

impl std::fmt::Debug for SequentialQf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequentialQf")
            .field("quotient_bits", &self.table.quotient_bits)
            .field("remainder_bits", &self.table.remainder_bits)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::hash::remix;

    /// A table at rest reads the same to a walk that skips reading locks through ([`AtRest`]) as
    /// to one that reads them through, and to one compiled for its slot width
    /// ([`with_fixed_width!`]): every lookup, insert plan and removal plan agrees over the
    /// sources, for every quotient, on tables of several slot widths (inside and outside the
    /// fixed ones) filled to long clusters.
    #[test]
    fn walks_over_a_table_at_rest_agree_with_walks_that_read_locks_through() {
        for (quotient_bits, remainder_bits, fill) in [
            (6, 5, 0.9),
            (8, 10, 0.72),
            (7, 13, 0.95),
            (7, 7, 0.9),
            (6, 14, 0.9),
        ] {
            let mut filter = SequentialQf::with_bits(quotient_bits, remainder_bits).unwrap();
            let slots = 1usize << quotient_bits;
            let mut hash = 0x9E37_79B9_7F4A_7C15u64;
            while (filter.len() as f64) < fill * slots as f64 {
                hash = remix(hash);
                filter.insert_hash(hash).unwrap();
            }
            let stored: Vec<u64> = filter.fingerprints().map(|f| f.remainder).collect();
            let remainders: Vec<u64> = stored
                .iter()
                .copied()
                .chain((0..32).map(|i| remix(i) >> (64 - remainder_bits)))
                .collect();
            let array = &filter.table.slots;
            let at_rest = filter.slots();
            let mut found = 0;
            for quotient in 0..slots {
                for &remainder in &remainders {
                    // Relaxed: one thread.
                    let plain = || array.cursor(quotient, Ordering::Relaxed);
                    let skipping = || at_rest.cursor(quotient, Ordering::Relaxed);
                    let lookup = walk::lookup(&mut plain(), remainder);
                    assert_eq!(lookup, walk::lookup(&mut skipping(), remainder));
                    found += usize::from(lookup.is_some_and(|(hit, _)| hit));
                    assert_eq!(
                        walk::plan_insert(&mut plain(), quotient, remainder),
                        walk::plan_insert(&mut skipping(), quotient, remainder),
                    );
                    assert_eq!(
                        walk::plan_remove(&mut plain(), quotient, remainder),
                        walk::plan_remove(&mut skipping(), quotient, remainder),
                    );
                    let source = at_rest;
                    let fixed = with_fixed_width!(source => {
                        let fixed = || Cursor::over(&source, quotient, Ordering::Relaxed);
                        (
                            walk::lookup(&mut fixed(), remainder),
                            walk::plan_insert(&mut fixed(), quotient, remainder),
                            walk::plan_remove(&mut fixed(), quotient, remainder),
                        )
                    });
                    assert_eq!(
                        fixed,
                        (
                            lookup,
                            walk::plan_insert(&mut plain(), quotient, remainder),
                            walk::plan_remove(&mut plain(), quotient, remainder),
                        )
                    );
                }
            }
            // Each stored fingerprint is found at least under its own quotient.
            assert!(found >= stored.len());
        }
    }
}
