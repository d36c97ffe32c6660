//! [`GrowableBuilder`]: the options of a [`GrowableQf`] and the sizing of its first table (the
//! paper 000 §4.1 rule `delta_grow m > capacity`, which `ExpandableQf`'s level 0 shares).

use super::reclaim::Reclaimer;
use super::{Generation, GrowableQf};
use crate::filter::Error;
use crate::qf::table::QfTable;
use crate::sizing;
use crate::sync::AtomicPtr;

/// Slots per migration block (paper 000 §3.2).
const DEFAULT_BLOCK_SLOTS: usize = 4096;

/// How [`GrowableQf`] grows; see [`LocallyLockedQf::growable`](crate::LocallyLockedQf::growable).
///
/// ```
/// use conqf::{Filter, LocallyLockedQf};
///
/// let filter = LocallyLockedQf::growable(1000, 0.001)
///     .delta_grow(0.8)
///     .max_doublings(6)
///     .build()?;
/// for k in 0..10_000u64 {
///     filter.insert(&k)?;
/// }
/// assert!(filter.doublings() >= 3);
/// assert!((0..10_000u64).all(|k| filter.contains(&k)));
/// # Ok::<(), conqf::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GrowableBuilder {
    capacity: usize,
    fpr: f64,
    /// The keys the rate is planned for, if more than `capacity`.
    max_capacity: Option<usize>,
    delta_grow: f64,
    max_doublings: u32,
    block_slots: usize,
}

impl GrowableBuilder {
    /// The default fill at which the table doubles.
    pub const DEFAULT_DELTA_GROW: f64 = 0.75;
    /// The default number of doublings.
    pub const DEFAULT_MAX_DOUBLINGS: u32 = 8;

    pub(crate) fn new(capacity: usize, fpr: f64) -> Self {
        GrowableBuilder {
            capacity,
            fpr,
            max_capacity: None,
            delta_grow: Self::DEFAULT_DELTA_GROW,
            max_doublings: Self::DEFAULT_MAX_DOUBLINGS,
            block_slots: DEFAULT_BLOCK_SLOTS,
        }
    }

    /// The fill (stored fingerprints over `2^q`) at which the table doubles, in `(0, 0.9]`.
    /// The initial table is the smallest power of two of slots whose threshold lies above
    /// `capacity`, so `capacity` keys never double it (the paper's `delta_grow 2^q > capacity`;
    /// `capacity` 768 at the default 0.75 starts at 2,048 slots, as 768 of 1,024 would double on
    /// the 768th key), with the remainder chosen so the false-positive rate at `capacity` keys
    /// is at most `fpr`.
    pub fn delta_grow(mut self, delta_grow: f64) -> Self {
        self.delta_grow = delta_grow;
        self
    }

    /// How many times the table may double (also never below one remainder bit:
    /// [`GrowableQf::doublings_possible`] says how many are left). After the last doubling the
    /// table fills like a fixed-size one and returns [`Error::Full`] when full.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let filter = LocallyLockedQf::growable(100, 0.01).max_doublings(2).build()?;
    /// let mut k = 0u64;
    /// while filter.insert(&k).is_ok() {
    ///     k += 1;
    /// }
    /// assert_eq!(filter.doublings(), 2);
    /// assert!((0..k).all(|key| filter.contains(&key))); // a `Full` keeps what it had
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn max_doublings(mut self, max_doublings: u32) -> Self {
        self.max_doublings = max_doublings;
        self
    }

    /// Plans the false-positive rate for `max_capacity` keys instead of `capacity`: the filter
    /// still starts sized for `capacity`, but with one more remainder bit for every doubling it
    /// takes to hold `max_capacity` keys, so that, as a doubling moves a remainder bit into the
    /// quotient, the fingerprints stay as long as those of a table sized for `max_capacity` at
    /// `fpr`, and the rate stays at most `fpr` up to `max_capacity` keys (qfilter's
    /// `new_resizeable`). It costs those bits in every slot of the smaller tables before. If
    /// [`max_doublings`](Self::max_doublings) allows fewer doublings than `max_capacity` needs,
    /// it is raised to them; past `max_capacity` keys the filter doubles on as far as
    /// `max_doublings` allows, its rate rising as without this option.
    ///
    /// ```
    /// use conqf::{Filter, LocallyLockedQf};
    /// let filter = LocallyLockedQf::growable(1000, 0.01).max_capacity(50_000).build()?;
    /// for k in 0..50_000u64 {
    ///     filter.insert(&k)?;
    /// }
    /// assert!(filter.false_positive_rate() <= 0.01);
    /// let false_positives = (50_000..150_000u64).filter(|k| filter.contains(k)).count();
    /// assert!(false_positives < 1_200, "{false_positives} of 100,000");
    ///
    /// // Without it, the rate is planned for the first 1,000 keys only.
    /// let unplanned = LocallyLockedQf::growable(1000, 0.01).build()?;
    /// for k in 0..50_000u64 {
    ///     unplanned.insert(&k)?;
    /// }
    /// assert!(unplanned.false_positive_rate() > 0.1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn max_capacity(mut self, max_capacity: usize) -> Self {
        self.max_capacity = Some(max_capacity);
        self
    }

    /// Old slots per block of the migration (default 4096): each helping thread claims one
    /// block at a time. At least 1.
    ///
    /// ```
    /// use conqf::LocallyLockedQf;
    /// let builder = LocallyLockedQf::growable(1000, 0.01);
    /// assert!(builder.clone().migration_block_slots(512).build().is_ok());
    /// assert!(builder.migration_block_slots(0).build().is_err());
    /// ```
    pub fn migration_block_slots(mut self, slots: usize) -> Self {
        self.block_slots = slots;
        self
    }

    /// The filter.
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `capacity` is 0, `fpr` is not in `(0, 1)`, `delta_grow`
    /// is not in `(0, 0.9]`, the block size is 0, `max_capacity` is below `capacity`, or the
    /// table (the last one `max_capacity` needs, or its remainder bits) would be too large.
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub fn build(mut self) -> Result<GrowableQf, Error> {
        if !(self.delta_grow > 0.0 && self.delta_grow <= 0.9) {
            return Err(Error::InvalidParameters(format!(
                "delta_grow {} is not in (0, 0.9]",
                self.delta_grow
            )));
        }
        sizing::check_capacity_and_fpr(self.capacity, self.fpr)?;
        let q = quotient_bits_below_threshold(self.capacity, self.delta_grow)?;
        let Some(max_capacity) = self.max_capacity else {
            let r = sizing::qf_remainder_bits(self.capacity, self.fpr, q)?;
            return self.build_with_bits(q, r);
        };
        if max_capacity < self.capacity {
            return Err(Error::InvalidParameters(format!(
                "max_capacity {max_capacity} is below capacity {}",
                self.capacity
            )));
        }
        // The table a filter built for `max_capacity` would start with; its fingerprint length
        // is kept from the start, so each doubling on the way to it leaves it unchanged.
        let name = |error: Error| match error {
            Error::InvalidParameters(why) => {
                Error::InvalidParameters(format!("max_capacity: {why}"))
            }
            other => other,
        };
        let last_q = quotient_bits_below_threshold(max_capacity, self.delta_grow).map_err(name)?;
        let last_r = sizing::qf_remainder_bits(max_capacity, self.fpr, last_q).map_err(name)?;
        let doublings = last_q - q;
        self.max_doublings = self.max_doublings.max(doublings);
        // The start's remainder may be too wide for a slot (62 bits and more).
        self.build_with_bits(q, last_r + doublings).map_err(name)
    }

    /// The filter, starting with `2^quotient_bits` slots of `remainder_bits` remainder bits
    /// (ignoring the capacity and rate given to
    /// [`LocallyLockedQf::growable`](crate::LocallyLockedQf::growable)).
    ///
    /// # Errors
    /// As [`build`](Self::build), and as
    /// [`LocallyLockedQf::with_bits`](crate::LocallyLockedQf::with_bits).
    pub fn build_with_bits(
        self,
        quotient_bits: u32,
        remainder_bits: u32,
    ) -> Result<GrowableQf, Error> {
        if !(self.delta_grow > 0.0 && self.delta_grow <= 0.9) {
            return Err(Error::InvalidParameters(format!(
                "delta_grow {} is not in (0, 0.9]",
                self.delta_grow
            )));
        }
        if self.block_slots == 0 {
            return Err(Error::InvalidParameters(
                "migration blocks need at least one slot".into(),
            ));
        }
        let table = QfTable::with_bits(quotient_bits, remainder_bits)?;
        // Each doubling moves a remainder bit into the quotient, so no more than `r - 1` can
        // ever happen; kept to that, the count also stays within what a persisted filter may
        // hold (a `max_doublings(100)` filter once wrote bytes its reader refused).
        let doublings = self.max_doublings.min(remainder_bits.saturating_sub(1));
        let first = Generation::new(table, self.delta_grow, doublings, 0);
        Ok(GrowableQf {
            current: AtomicPtr::new(Box::into_raw(Box::new(first))),
            delta_grow: self.delta_grow,
            block_slots: self.block_slots,
            reclaimer: Reclaimer::new(),
        })
    }
}

/// The fill at which a table of `2^quotient_bits` slots doubles (or, with no doubling left,
/// is saturated): `delta_grow` of its slots, at least 1.
pub(crate) fn growth_threshold(quotient_bits: u32, delta_grow: f64) -> usize {
    (((1u64 << quotient_bits) as f64 * delta_grow) as usize).max(1)
}

/// The quotient bits of the smallest table whose [`growth_threshold`] lies above `capacity`
/// (the paper's first power of two `m` with `delta_grow m > capacity`, in whole keys): it stores
/// `capacity` keys without reaching its threshold.
///
/// # Errors
/// [`Error::InvalidParameters`] if that table would pass [`sizing::MAX_QUOTIENT_BITS`].
pub(crate) fn quotient_bits_below_threshold(
    capacity: usize,
    delta_grow: f64,
) -> Result<u32, Error> {
    let mut q = sizing::quotient_bits_for(capacity, delta_grow)?;
    while growth_threshold(q, delta_grow) <= capacity {
        q += 1;
        if q > sizing::MAX_QUOTIENT_BITS {
            return Err(Error::InvalidParameters(format!(
                "capacity {capacity} at a fill of {delta_grow:?} needs more than \
                 2^{} slots",
                sizing::MAX_QUOTIENT_BITS
            )));
        }
    }
    Ok(q)
}
