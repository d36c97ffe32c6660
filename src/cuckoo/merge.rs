//! [`Merge`] for both cuckoo filters: the union of two tables of one shape, without rehashing.
//!
//! Partial-key cuckoo hashing (paper 001 §1.1) makes this possible: a stored fingerprint and
//! the bucket it sits in give its other bucket (`b xor offset(fp)`), so every copy of one filter
//! can be inserted into the other as its key's insert would store it. A cuckoo filter stores a
//! copy per insert, so the union holds the copies of both inputs: a key inserted once into each
//! is stored twice, as if inserted twice into one filter (and one `remove` takes one copy).
//!
//! The union starts as a copy of the first input's table, read the way each filter reads
//! itself whole (the lock-free one with its relocations paused, the locked one under every
//! stripe's read lock); the second input is copied the same way, on its own (one filter's locks
//! are never held while waiting for the other's, so two merges in opposite directions cannot
//! wait for each other), and each of its copies is inserted into the union, relocating as an
//! insert does. The inputs only wait for the copies, not for the inserts. A merge so holds
//! three tables at once for a moment (the union, the second input's copy, and the input); and
//! as with back-to-back snapshots, back-to-back merges of a lock-free filter keep its
//! relocating inserts waiting (`cuckoo/pause.rs`).
//!
//! The union has the inputs' shape: a fingerprint's bucket comes from hash bits a filter does
//! not keep, so a table with more buckets cannot place it. The inputs must therefore be sized
//! for the union's keys; a union that does not fit is [`Error::Full`] (a cuckoo table fills to
//! about 80% before the first insert fails; see the table's module docs).

use crate::filter::{Error, Merge};
use crate::sync::Ordering;

use super::lock_free::LockFreeCuckooFilter;
use super::locked::LockedCuckooFilter;
use super::table::{CuckooTable, Placement, ENTRIES_PER_BUCKET};

/// `Err(Incompatible)` unless both tables have the same bucket and fingerprint bits.
fn check_shapes(a: &CuckooTable, b: &CuckooTable) -> Result<(), Error> {
    let shape = |t: &CuckooTable| (t.bucket_bits(), t.fingerprint_bits());
    if shape(a) == shape(b) {
        return Ok(());
    }
    Err(Error::Incompatible(format!(
        "cuckoo filters of 2^{} buckets with {}-bit fingerprints and of 2^{} buckets with \
         {}-bit fingerprints",
        a.bucket_bits(),
        a.fingerprint_bits(),
        b.bucket_bits(),
        b.fingerprint_bits()
    )))
}

/// Inserts every copy stored in `from`, a table no thread writes, with `insert(seed, place)`:
/// the copy's own bucket and its other one, and its entry index as the seed, so it tries its
/// own index first.
fn insert_every_copy(
    from: &CuckooTable,
    mut insert: impl FnMut(u64, Placement) -> Result<(), Error>,
) -> Result<(), Error> {
    for bucket in 0..from.buckets() {
        for index in 0..ENTRIES_PER_BUCKET {
            // Relaxed: no thread writes `from`, a private copy.
            let entry = from.entry(bucket, index, Ordering::Relaxed);
            if entry.is_empty() {
                continue;
            }
            let fingerprint = entry.fingerprint();
            let place = Placement {
                primary: bucket,
                alternate: from.alternate(bucket, fingerprint),
                fingerprint,
            };
            insert(index as u64, place)?;
        }
    }
    Ok(())
}

/// The union of two lock-free filters of the same shape, holding the copies of both.
///
/// Other threads may keep using both inputs meanwhile: each is copied in one pass while its
/// relocations wait ([`LockFreeCuckooFilter::snapshot`]), so the union holds every copy stored
/// in an input before the merge began and not removed during it; copies inserted or removed
/// during the merge may or may not be in it.
///
/// ```
/// use conqf::{Filter, LockFreeCuckooFilter, Merge, Remove};
///
/// let (a, b) = (LockFreeCuckooFilter::new(1000, 0.01)?, LockFreeCuckooFilter::new(1000, 0.01)?);
/// a.insert(&"left")?;
/// b.insert(&"right")?;
/// b.insert(&"left")?;
/// let union = a.merge(&b)?;
/// assert_eq!(union.len(), 3);
/// assert!(union.contains(&"left") && union.contains(&"right"));
/// assert!(union.remove(&"left")? && union.contains(&"left")); // the second copy
///
/// let larger = LockFreeCuckooFilter::new(2000, 0.01)?;
/// assert!(matches!(a.merge(&larger), Err(conqf::Error::Incompatible(_))));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for LockFreeCuckooFilter {
    /// # Errors
    /// [`Error::Incompatible`] if the bucket or fingerprint bits differ; [`Error::Full`] if
    /// the union does not fit in one table of that shape (the inputs are unchanged);
    /// [`Error::OutOfMemory`] if the copies cannot be allocated.
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        check_shapes(&self.table, &other.table)?;
        let union = self.snapshot()?;
        let theirs = other.snapshot()?;
        insert_every_copy(&theirs.table, |seed, place| {
            union.insert_placed(seed, place)
        })?;
        Ok(union)
    }
}

/// The union of two striped filters of the same shape, holding the copies of both; it has the
/// first input's stripe count.
///
/// Other threads may keep using both inputs meanwhile: each is copied under all its stripes'
/// read locks (the table between two steps, as its `to_bytes` reads it), one after the other,
/// so the union holds every copy stored in an input before the merge began and not removed
/// during it.
///
/// ```
/// use conqf::{Filter, LockedCuckooFilter, Merge};
///
/// let (a, b) = (LockedCuckooFilter::new(1000, 0.01)?, LockedCuckooFilter::new(1000, 0.01)?);
/// a.insert(&1u64)?;
/// b.insert(&2u64)?;
/// let union = a.merge(&b)?;
/// assert!(union.contains(&1u64) && union.contains(&2u64));
/// assert_eq!(union.stripes(), a.stripes());
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for LockedCuckooFilter {
    /// # Errors
    /// As [`LockFreeCuckooFilter`]'s merge.
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        check_shapes(&self.table, &other.table)?;
        let union = self.copy()?;
        let theirs = other.copy()?;
        insert_every_copy(&theirs.table, |seed, place| {
            union.insert_placed(seed, place)
        })?;
        Ok(union)
    }
}
