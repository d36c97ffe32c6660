//! [`ExpandableBuilder`]: the options of an [`ExpandableQf`] and the checks that turn them into
//! level 0's shape (paper 000 §4.1).

use super::shape::MAX_LEVELS;
use super::{ExpandableQf, LevelHashes};
use crate::filter::Error;
use crate::qf::growing::{quotient_bits_below_threshold, GrowableBuilder, GrowableQf};
use crate::qf::level_reads::LevelReads;
use crate::sizing;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Options of an [`ExpandableQf`]; see [`ExpandableQf::builder`].
#[derive(Debug, Clone)]
pub struct ExpandableBuilder {
    capacity: usize,
    fpr_bound: f64,
    delta_grow: f64,
    cascading: bool,
}

impl ExpandableBuilder {
    /// The defaults: `delta_grow` as a growable filter's, no cascading inserts.
    pub(super) fn new(capacity: usize, fpr_bound: f64) -> Self {
        ExpandableBuilder {
            capacity,
            fpr_bound,
            delta_grow: GrowableBuilder::DEFAULT_DELTA_GROW,
            cascading: false,
        }
    }

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
