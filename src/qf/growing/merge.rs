//! [`Merge`] for `GrowableQf`: the union of two growable filters' current tables (paper 000
//! §2.1: bounded growing keeps a fingerprint's length, so filters started with the same
//! fingerprint length stay mergeable however often each doubled).
//!
//! Each input's current table is read as [`GrowableQf::snapshot`] reads it, one cluster at a
//! time under its read lock, beside a doubling under way (the proof is `snapshot`'s module
//! doc), and the union is built by [`LocallyLockedQf`](crate::LocallyLockedQf)'s merge: the
//! larger table's quotient bits, plus one for each time the union would pass 90% of the slots
//! (as [`SequentialQf`](crate::SequentialQf)'s merge sizes it).
//!
//! The union keeps growing as the first input would have: with its `delta_grow` and migration
//! block size, and its doublings done and left counted on from that input's table, so a union
//! that needed a larger table has used up that many of its doublings. A union that needs more
//! doublings than the first input has left is `Full`, as that input would be with those keys:
//! `max_doublings` bounds the memory a filter may grow to, and a merge keeps to it.

use super::{reclaim, GrowableQf};
use crate::filter::{Error, Merge};

/// The union of two growable filters whose fingerprints have the same length, growing on as
/// the first would have: with its `delta_grow` and migration block size, and its doublings done
/// and left counted on from that input's table (a union that needed a larger table has used up
/// that many doublings; one that needs more than the first input has left is
/// [`Error::Full`], as `max_doublings` bounds the memory a filter may grow to).
///
/// Other threads may keep inserting, removing and growing both inputs meanwhile: the union
/// holds every key stored in either before the merge began and not removed during it (as
/// [`GrowableQf::snapshot`]).
///
/// ```
/// use conqf::{Filter, LocallyLockedQf, Merge};
///
/// let a = LocallyLockedQf::growable(100, 0.01).build()?;
/// let b = LocallyLockedQf::growable(100, 0.01).build()?;
/// for k in 0..1000u64 {
///     a.insert(&k)?; // doubles a few times
/// }
/// b.insert(&"pear")?;
/// let union = a.merge(&b)?;
/// assert!((0..1000u64).all(|k| union.contains(&k)) && union.contains(&"pear"));
/// assert_eq!(union.doublings(), a.doublings());
/// union.insert(&"more")?; // and it keeps growing
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for GrowableQf {
    /// # Errors
    /// [`Error::Incompatible`] if the fingerprint lengths differ; [`Error::Full`] if the union
    /// needs a larger table than the first input may still double to
    /// ([`doublings_possible`](GrowableQf::doublings_possible)); [`Error::OutOfMemory`]
    /// if the union's memory cannot be allocated.
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        let guard = reclaim::pin();
        let (mine, theirs) = (self.generation(&guard), other.generation(&guard));
        let union = mine.filter.merge(&theirs.filter)?;
        // No underflow: the union has at least the larger input's quotient bits
        // (`sizing::union_quotient_bits`).
        let grown = union.quotient_bits() - mine.filter.quotient_bits();
        if grown > mine.doublings_possible() {
            return Err(Error::Full);
        }
        Ok(GrowableQf::from_parts(
            union.into_sequential(),
            self.delta_grow,
            mine.doublings_done + grown,
            mine.doublings_left - grown,
            self.block_slots,
        ))
    }
}
