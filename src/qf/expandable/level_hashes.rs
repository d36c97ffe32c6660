//! How each level of an [`ExpandableQf`](super::ExpandableQf) turns a key's hash into the
//! hash it stores: one shared hash, or a hash per level (the type's docs, "A hash per level").

use super::shape::MAX_LEVELS;
use crate::hash::remix;
use crate::qf::growing::GrowableQf;

/// How a level's hash comes from the key's: what decides which canonical slots of a level the
/// keys that reach it can have ([`ExpandableQf`](super::ExpandableQf), "A hash per level").
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
pub(super) const LEVEL_MULTIPLIERS: [u64; MAX_LEVELS] = {
    let mut multipliers = [1u64; MAX_LEVELS];
    let mut level = 1;
    while level < MAX_LEVELS {
        multipliers[level] = remix(level as u64) | 1;
        level += 1;
    }
    multipliers
};

/// A level and a key's hash for it ([`ExpandableQf::level_for`](super::ExpandableQf::level_for)).
pub(super) type LevelKey<'a> = (&'a GrowableQf, u64);
