//! The 3-status-bit table (paper 000 §2.1) with its parameters: what `SequentialQf`,
//! `LocallyLockedQf` and `ExternallyLockedQf` share, so the three differ only in how they
//! synchronise, and convert into each other without copying.

use crate::filter::{Error, Full};
use crate::hash::Splitter;
use crate::sizing;
use crate::storage::{with_fixed_width, AtRest, Commit, Cursor, GroupSource, Rewriter, SlotArray};
use crate::sync::Ordering;

use super::scan::{check_table, Fingerprints};
use super::slot::{OCCUPIED, STATUS_BITS};
use super::usual_slots;
use super::walk::{self, InsertStep, KEEP_OCCUPIED};

/// The fill up to which the `new` constructors plan: beyond it clusters grow long.
pub(crate) const MAX_LOAD: f64 = 0.9;

/// How many fingerprints `2^quotient_bits` canonical slots hold at [`MAX_LOAD`] (saturating).
pub(crate) fn capacity_of(quotient_bits: u32) -> usize {
    let slots = 1u64
        .checked_shl(quotient_bits)
        .map_or(f64::MAX, |slots| slots as f64);
    (slots * MAX_LOAD) as usize
}

/// `2^q` canonical slots plus the overflow tail, each of `r + 3` bits.
pub(crate) struct QfTable {
    pub(crate) slots: SlotArray,
    pub(crate) quotient_bits: u32,
    pub(crate) remainder_bits: u32,
    splitter: Splitter,
    /// [`load_cap`](super::load_cap::load_cap) of the table, kept so the sequential insert's
    /// check is one compare.
    load_cap: usize,
}

impl QfTable {
    /// An empty table with `2^quotient_bits` canonical slots of `remainder_bits` remainders.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] unless `1 <= quotient_bits <= 40`, `remainder_bits >= 1`,
    /// `quotient_bits + remainder_bits <= 64` and `remainder_bits + 3 <= 64`;
    /// [`Error::OutOfMemory`] if the table cannot be allocated.
    pub(crate) fn with_bits(quotient_bits: u32, remainder_bits: u32) -> Result<Self, Error> {
        Self::with_slots(quotient_bits, remainder_bits, 0)
    }

    /// As [`with_bits`](Self::with_bits) with at least `min_slots` slots in all: the usual `2^q`
    /// and overflow tail, or more (a grown table, see [`doubled`](Self::doubled)). The
    /// parameters are checked before the slot count is derived from them.
    pub(crate) fn with_slots(
        quotient_bits: u32,
        remainder_bits: u32,
        min_slots: usize,
    ) -> Result<Self, Error> {
        sizing::check_bits(quotient_bits, remainder_bits, STATUS_BITS, 1)?;
        let slot_count = usual_slots(quotient_bits).max(min_slots);
        Ok(QfTable {
            slots: SlotArray::new(remainder_bits + STATUS_BITS, slot_count)?,
            quotient_bits,
            remainder_bits,
            splitter: Splitter::new(quotient_bits, remainder_bits),
            load_cap: super::load_cap::load_cap(quotient_bits),
        })
    }

    /// The table bounded growing migrates this one into (paper 000 §2.1): twice the canonical
    /// slots, one remainder bit less, and at least twice the slots in all, so the copy of every
    /// supercluster (which lands within twice its old slot range) fits without a `Full`.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if only one remainder bit is left or the quotient would
    /// pass the maximum; [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub(crate) fn doubled(&self) -> Result<Self, Error> {
        if self.remainder_bits < 2 {
            return Err(Error::InvalidParameters(
                "cannot grow: only one remainder bit is left".into(),
            ));
        }
        let (q, r) = (self.quotient_bits + 1, self.remainder_bits - 1);
        Self::with_slots(q, r, 2 * self.slots.len())
    }

    /// A copy of a table no thread writes meanwhile ([`SlotArray::copy_at_rest`]).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub(crate) fn copy_at_rest(&self) -> Result<Self, Error> {
        Ok(QfTable {
            slots: self.slots.copy_at_rest()?,
            ..*self
        })
    }

    /// The parameters for `capacity` keys at a false-positive rate of at most `fpr`.
    pub(crate) fn new(capacity: usize, fpr: f64) -> Result<Self, Error> {
        let (q, r) = sizing::qf_parameters(capacity, fpr, MAX_LOAD)?;
        Self::with_bits(q, r)
    }

    /// The canonical slot and remainder of a hash.
    #[inline]
    pub(crate) fn fingerprint(&self, hash: u64) -> (usize, u64) {
        self.splitter.split(hash)
    }

    /// Whether canonical slot `quotient` of a table that holds no lock (the sequential filter's)
    /// is occupied (has a run), with one load.
    #[inline(always)]
    pub(crate) fn is_occupied_at_rest(&self, quotient: usize, order: Ordering) -> bool {
        self.slots.get(quotient, order) & OCCUPIED != 0
    }

    /// How many fingerprints fit at [`MAX_LOAD`].
    pub(crate) fn capacity(&self) -> usize {
        capacity_of(self.quotient_bits)
    }

    /// How many fingerprints the table takes before inserts are refused
    /// ([`load_cap`](super::load_cap::load_cap)).
    #[inline]
    pub(crate) fn load_cap(&self) -> usize {
        self.load_cap
    }

    /// The expected false-positive rate with `len` fingerprints stored: `len / 2^(q + r)`.
    pub(crate) fn false_positive_rate(&self, len: usize) -> f64 {
        let load = len as f64 / (1u64 << self.quotient_bits) as f64;
        sizing::qf_fpr(load, self.remainder_bits)
    }

    /// The stored fingerprints in increasing order (reads with `order`).
    pub(crate) fn fingerprints(&self, order: Ordering) -> Fingerprints<'_> {
        Fingerprints::new(&self.slots, order)
    }

    /// Whether `(quotient, remainder)` is stored in a table that holds no locks and that no
    /// thread writes meanwhile.
    #[inline]
    pub(crate) fn contains_at_rest(&self, quotient: usize, remainder: u64) -> bool {
        let slots = AtRest(&self.slots);
        // Relaxed: no other thread writes the table (the caller's promise).
        with_fixed_width!(slots => {
            let mut cursor = Cursor::over(&slots, quotient, Ordering::Relaxed);
            walk::lookup(&mut cursor, remainder).is_some_and(|(found, _)| found)
        })
    }

    /// Inserts `(quotient, remainder)` into a table that holds no locks: `Ok(true)` if it is
    /// now stored, `Ok(false)` if it was already, and `Err(Full)` if the insert would fill slot
    /// `fence` or one after it (an insert's shift ends in the first empty slot after its run);
    /// nothing is written then. `fence` is at most the last slot, which stays empty.
    ///
    /// Publishes each group it changes with `commit`: [`Exclusive`](crate::storage::Exclusive)
    /// under `&mut`, [`Guarded`](crate::storage::Guarded) where other threads insert beyond the
    /// empty slots that bound this insert's walk meanwhile (a batch insert's sweeps): it reads
    /// and writes only the slots from its cluster's start up to the empty slot its shift fills.
    #[inline]
    pub(crate) fn insert_at_rest(
        &self,
        quotient: usize,
        remainder: u64,
        fence: usize,
        commit: impl Commit,
    ) -> Result<bool, Full> {
        debug_assert!(fence < self.slots.len());
        let slots = AtRest(&self.slots);
        let table = &self.slots;
        with_fixed_width!(slots => insert_into(slots, table, quotient, remainder, fence, commit))
    }

    /// Removes `(quotient, remainder)` from a table that holds no locks, publishing each group
    /// it changes with `commit`: [`Exclusive`](crate::storage::Exclusive) under `&mut`,
    /// [`Guarded`](crate::storage::Guarded) where other threads remove from other clusters of
    /// the table meanwhile (a batch removal's sweeps), as a removal writes only its own cluster
    /// and reads only it and the slot after it. Whether it was stored.
    #[inline(always)]
    pub(crate) fn remove_at_rest(
        &self,
        quotient: usize,
        remainder: u64,
        commit: impl Commit,
    ) -> bool {
        let slots = AtRest(&self.slots);
        with_fixed_width!(slots => remove_from(slots, &self.slots, quotient, remainder, commit))
    }

    /// Checks the table's invariants and that it stores `len` fingerprints.
    pub(crate) fn check(&self, len: usize) -> Result<(), String> {
        let stored = check_table(&self.slots, self.remainder_bits)?;
        if stored != len {
            return Err(format!("{stored} fingerprints stored but len is {len}"));
        }
        Ok(())
    }
}

/// [`QfTable::remove_at_rest`] reading through `slots`, a view of `table`.
#[inline(always)]
fn remove_from<S: GroupSource>(
    slots: S,
    table: &SlotArray,
    quotient: usize,
    remainder: u64,
    commit: impl Commit,
) -> bool {
    // Relaxed: no other thread writes this cluster (see `remove_at_rest`); the walks also read
    // the slot after it, which another thread's removal may empty but never shifts, so it
    // ends the cluster (and the shift) either way.
    let mut cursor = Cursor::over_prefetching(&slots, quotient, Ordering::Relaxed);
    let Some(Some(plan)) = walk::plan_remove(&mut cursor, quotient, remainder) else {
        return false;
    };
    let mut read = Cursor::over(&slots, plan.position + 1, Ordering::Relaxed);
    let mut occupied = Cursor::over(&slots, quotient, Ordering::Relaxed);
    let mut rewriter = Rewriter::laid_out(table, slots.layout(), commit, KEEP_OCCUPIED);
    walk::shift_out(&mut read, &mut occupied, &mut rewriter, &plan, false);
    rewriter.finish();
    true
}

/// [`QfTable::insert_at_rest`] reading through `slots`, a view of `table`.
#[inline(always)]
fn insert_into<S: GroupSource>(
    slots: S,
    table: &SlotArray,
    quotient: usize,
    remainder: u64,
    fence: usize,
    commit: impl Commit,
) -> Result<bool, Full> {
    // Relaxed: no other thread writes the slots this insert reads (see `insert_at_rest`).
    let mut cursor = Cursor::over_prefetching(&slots, quotient, Ordering::Relaxed);
    let plan = match walk::plan_insert(&mut cursor, quotient, remainder) {
        Some(InsertStep::Duplicate { .. }) => return Ok(false),
        Some(InsertStep::Place(plan)) if plan.end < fence => plan,
        _ => return Err(Full),
    };
    let mut read = Cursor::over(&slots, plan.position, Ordering::Relaxed);
    let mut rewriter = Rewriter::laid_out(table, slots.layout(), commit, KEEP_OCCUPIED);
    walk::shift_in(&mut read, &mut rewriter, &plan, None);
    rewriter.finish();
    Ok(true)
}
