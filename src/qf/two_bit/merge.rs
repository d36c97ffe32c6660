//! `Merge` for `TwoBitQf` (paper 004 §IV-E's merge: extract both sorted fingerprint streams,
//! merge them, bulk build the result), reading each input through `&self` with the snapshot's
//! sweep (a supercluster at a time under its left lock, `sweep.rs`) so other threads keep
//! using both.

use super::table::{build_sorted, TwoBitTable, MAX_LOAD};
use super::TwoBitQf;
use crate::batch::keys::{merge_sorted, union_len};
use crate::filter::{Error, Merge};
use crate::hash::{low_mask, Fingerprint};
use crate::qf::load_cap::load_cap;
use crate::qf::sequential::refine;
use crate::sizing;

/// A new `TwoBitQf` holding the fingerprints of both, read beside other threads: every
/// fingerprint stored in an input before the merge began and not removed during it is in the
/// union; ones inserted or removed during it may or may not be (crate docs, "Consistency").
/// The union takes the larger quotient of the two, and one bit more for each time the union
/// (each fingerprint once) would pass 90% fill (as [`SequentialQf`](crate::SequentialQf)'s
/// merge and [`grow`](TwoBitQf::grow) do, a remainder bit moves into the quotient; a zero
/// remainder is stored as 1 there too, so every key is still found).
///
/// ```
/// use conqf::{Filter, Merge, TwoBitQf};
/// let a = TwoBitQf::with_bits(10, 10)?;
/// let b = TwoBitQf::with_bits(11, 9)?;
/// a.insert(&1u64)?;
/// b.insert(&2u64)?;
/// let union = std::thread::scope(|s| {
///     s.spawn(|| a.insert(&3u64)); // may or may not be in the union
///     a.merge(&b)
/// })?;
/// assert!(union.contains(&1u64) && union.contains(&2u64));
/// assert_eq!(union.quotient_bits(), 11);
/// # Ok::<(), conqf::Error>(())
/// ```
///
/// # Errors
/// [`Error::Incompatible`] if the fingerprint lengths `q + r` differ; [`Error::Full`] if the
/// union does not fit (not even with the remainder down to one bit); [`Error::OutOfMemory`]
/// if the memory cannot be allocated.
impl Merge for TwoBitQf {
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        let (a, b) = (&self.table, &other.table);
        let bits = sizing::merged_fingerprint_bits(
            (a.quotient_bits, a.remainder_bits),
            (b.quotient_bits, b.remainder_bits),
        )?;
        let (from_a, from_b) = (self.swept_fingerprints(), other.swept_fingerprints());
        // Sized from what was read (a concurrent filter's count may have moved since), each
        // fingerprint once: both inputs' fingerprints have `bits` bits, so as whole
        // fingerprints they are in one order whatever the split. The union may store fewer (a
        // zero remainder of the new split stored as 1 can meet a 1), never more.
        let total = union_len(
            from_a
                .iter()
                .map(|f| (f.quotient << a.remainder_bits) | f.remainder),
            from_b
                .iter()
                .map(|f| (f.quotient << b.remainder_bits) | f.remainder),
        );
        let q =
            sizing::union_quotient_bits((a.quotient_bits, b.quotient_bits), bits, total, MAX_LOAD);
        let r = bits - q;
        // As `quotient << r | remainder` keys in the union's split: refining keeps each input's
        // order, and so does storing a zero remainder as 1.
        let keys = |fingerprints: Vec<Fingerprint>, from_r: u32| -> Vec<u64> {
            fingerprints
                .into_iter()
                .map(|f| {
                    let f = refine(f, from_r, r);
                    (f.quotient << r) | f.remainder.max(1)
                })
                .collect()
        };
        // The merge path of paper 004 §IV-E (in parallel with the `parallel` feature); equal
        // keys are kept once.
        let union = merge_sorted(
            &keys(from_a, a.remainder_bits),
            &keys(from_b, b.remainder_bits),
        );
        let union = union.into_iter().map(|key| Fingerprint {
            quotient: key >> r,
            remainder: key & low_mask(r),
        });
        let mut table = TwoBitTable::with_bits(q, r)?;
        let stored = build_sorted(&mut table.slots, union)?;
        if stored > load_cap(q) {
            return Err(Error::Full);
        }
        Ok(TwoBitQf::from_table(table, stored))
    }
}
