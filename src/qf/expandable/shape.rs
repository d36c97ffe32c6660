//! The shape of an [`ExpandableQf`]'s levels (paper 000 §4.1): each level's
//! quotient and remainder bits at every doubling, capped levels, and how full a cascading
//! filter's levels can get.

use super::ExpandableQf;
use crate::qf::slot::STATUS_BITS;
use crate::qf::usual_slots;
use crate::sizing;

/// The most levels a filter can have: level 31 has `2^31` times level 0's slots, past any
/// memory for all but the smallest level 0 ([`ExpandableQf`], "Capped levels").
pub(crate) const MAX_LEVELS: usize = 32;

/// `((q_0, r_0), delta_grow, cascading)`: what fixes every level's shape.
pub(crate) type LevelParameters = ((u32, u32), f64, bool);

/// Doublings from a level's start to its final size (paper 000 §4.1: it starts at 1/8).
const LEVEL_DOUBLINGS: u32 = 3;

impl ExpandableQf {
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
    pub(super) fn is_uncapped((q0, r0): (u32, u32), level: usize) -> bool {
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
}
