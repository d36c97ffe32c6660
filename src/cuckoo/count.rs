//! [`Count`] for both cuckoo filters: how many copies of a fingerprint its two buckets hold
//! (paper 001 §1.1 stores a copy per insert), and adding `n` copies at once.
//!
//! # Counting copies that may be moving
//!
//! By the same-index rule a copy in entry `i` only ever moves to entry `i` of its other bucket,
//! so the copies of a fingerprint at index `i` are in the pair `(b1[i], b2[i])`. Under the
//! locked filter's read locks every entry is `Stable` and each one holding the fingerprint is
//! a copy. The lock-free filter's moves (`lock_free`'s module docs) pass through states in
//! which one copy shows in both entries, so a pair is counted as follows:
//!
//! ```text
//!  either entry In                     1  the move's copy (its source is Out or Vacated)
//!  otherwise, for each entry:
//!    Stable, Out                       1  (an Out beside a Stable is a move about to fail)
//!    Vacated                           0  (the copy is In or Stable in the other entry)
//! ```
//!
//! which is exact for the pair as it is at any one instant. The two buckets are loaded one
//! after the other, so the lock-free count loads the relocation counters of both buckets'
//! stripes before and after and retries if either changed. Then:
//!
//! - A copy stored throughout is never missed: to hide from both loads it must have moved into
//!   the bucket loaded first, between the loads, and that move's counter increment lies
//!   between the loads of that bucket's counter (the two-round find's argument, `lock_free`'s
//!   module docs). That is the only counter correctness needs.
//! - The `In` rule never hides a second copy stored throughout: two copies stored throughout
//!   at one index each keep their own entry (a move needs the other entry empty, so neither gets
//!   past its step 1), so an `In` beside another copy means that copy came in after the move
//!   ended, and was not stored throughout.
//! - A copy may count twice: when a move of it made its increment before the final attempt
//!   loaded the counters and its steps 3-4 while that attempt read, it is seen `Out` in the
//!   first bucket and `Stable` in the second. Checking the second bucket's counter as well
//!   narrows the double counts to that case (a whole move from the first bucket into the second
//!   between the two bucket loads would count twice too). The [`Count`] contract allows the
//!   overcount (a count may exceed the inserts; it never falls short), and the docs of
//!   `count_hash` say so.

use crate::filter::{Count, Error, Remove};
use crate::sync::Ordering;

use super::lock_free::LockFreeCuckooFilter;
use super::locked::LockedCuckooFilter;
use super::table::{BucketWords, CuckooTable, Entry, Placement, State, ENTRIES_PER_BUCKET};

/// The most copies of one fingerprint a table holds: every entry of its two buckets.
const MAX_COPIES: u64 = 2 * ENTRIES_PER_BUCKET as u64;

/// The copies of `fingerprint` that one index of its two buckets holds, `one` and `other`
/// being the entries there, by the rule in the module docs.
fn copies_at(one: Entry, other: Entry, fingerprint: u64) -> u64 {
    let state = |entry: Entry| (entry.fingerprint() == fingerprint).then(|| entry.state());
    match (state(one), state(other)) {
        (Some(State::In), _) | (_, Some(State::In)) => 1,
        (one, other) => [one, other]
            .into_iter()
            .filter(|&state| matches!(state, Some(State::Stable | State::Out)))
            .count() as u64,
    }
}

/// The copies of `place`'s fingerprint in its two buckets as loaded (the module docs' rule).
fn copies_in(
    table: &CuckooTable,
    primary: &BucketWords,
    alternate: &BucketWords,
    place: Placement,
) -> u64 {
    let layout = table.entries.layout();
    (0..ENTRIES_PER_BUCKET)
        .map(|index| {
            let (one, other) = (primary.entry(layout, index), alternate.entry(layout, index));
            copies_at(one, other, place.fingerprint)
        })
        .sum()
}

/// Adds `n` copies with `insert`, one at a time; if one does not fit, takes those it added back
/// with `remove` and returns its error. More than [`MAX_COPIES`] never fit: `Full` at once.
fn insert_copies(
    n: u64,
    mut insert: impl FnMut() -> Result<(), Error>,
    mut remove: impl FnMut(),
) -> Result<(), Error> {
    if n > MAX_COPIES {
        return Err(Error::Full);
    }
    for added in 0..n {
        if let Err(error) = insert() {
            (0..added).for_each(|_| remove());
            return Err(error);
        }
    }
    Ok(())
}

/// The `Count` docs both filters share.
macro_rules! cuckoo_count_docs {
    ($filter:ident, $how:literal) => {
        concat!(
            "How many copies of the hash's fingerprint its two buckets hold (at most 8). ",
            $how,
            "\n\n```\nuse conqf::{Count, Filter, ",
            stringify!($filter),
            ", Remove};\nlet filter = ",
            stringify!($filter),
            "::new(1000, 0.01)?;\nfilter.insert(&\"apple\")?;\n",
            "filter.insert_count(&\"apple\", 2)?;\n",
            "assert_eq!(filter.count(&\"apple\"), 3);\nfilter.remove(&\"apple\")?;\n",
            "assert_eq!(filter.count(&\"apple\"), 2);\n",
            "assert!(filter.insert_count(&\"apple\", 7).is_err()); // 9 copies do not fit\n",
            "assert_eq!(filter.count(&\"apple\"), 2);\n# Ok::<(), conqf::Error>(())\n```"
        )
    };
}

/// [`insert_copies`] into `filter`, taking copies back with its `remove_hash`.
fn insert_copies_into(
    filter: &impl Remove,
    hash: u64,
    n: u64,
    insert: impl FnMut() -> Result<(), Error>,
) -> Result<(), Error> {
    // Never an error (the cuckoo filters' removals always answer `Ok`); `Ok(false)` only where
    // other threads removed the copies meanwhile, which leaves nothing to take back.
    let remove = || {
        let _ = filter.remove_hash(hash);
    };
    insert_copies(n, insert, remove)
}

/// The docs of `insert_count_hash`, shared.
macro_rules! insert_count_doc {
    () => {
        "Stores `n` copies of the hash's fingerprint, one insert at a \
    time. If one does not fit, the copies added are removed again (whichever copies of the \
    fingerprint the removals find: the same contents) and the filter holds what it held \
    before, relocations aside, which may have moved some copies to their other buckets. A \
    fingerprint has eight entries, so `n` above 8 is `Full` at once.\n\nNot atomic beside \
    other threads: until the call returns they may count the copies added so far (also after \
    the failing insert, until the removals are done), an insert of theirs into the same \
    buckets may be `Full` because of them, and two `insert_count` calls of one key that \
    together pass 8 copies may both fail where either alone would fit.\n\n# Errors\n\
    [`Error::Full`] as for [`insert_hash`](crate::Filter::insert_hash)."
    };
}

impl Count for LockFreeCuckooFilter {
    #[doc = cuckoo_count_docs!(
        LockFreeCuckooFilter,
        "Lock-free: it retries only when a relocation moved a copy into a bucket of either \
         bucket's counter stripe meanwhile. \
         Beside other threads it counts every copy stored throughout the call, and may count \
         twice a copy that a relocation is moving (`cuckoo/count.rs` has the argument)."
    )]
    fn count_hash(&self, hash: u64) -> u64 {
        let place = self.table.placement(hash);
        loop {
            let versions = [place.primary, place.alternate].map(|b| self.load_version(b));
            // Acquire: as every load (the module docs of `lock_free` give the argument).
            let primary = self.table.load_bucket(place.primary, Ordering::Acquire);
            let alternate = self.table.load_bucket(place.alternate, Ordering::Acquire);
            let copies = copies_in(&self.table, &primary, &alternate, place);
            if versions == [place.primary, place.alternate].map(|b| self.load_version(b)) {
                return copies;
            }
        }
    }

    #[doc = insert_count_doc!()]
    fn insert_count_hash(&self, hash: u64, n: u64) -> Result<(), Error> {
        let place = self.table.placement(hash);
        insert_copies_into(self, hash, n, || self.insert_placed(hash, place))
    }

    /// `Ok(false)` if a lookup ([`contains_hash`](crate::Filter::contains_hash)'s) finds the
    /// fingerprint, with no lock. Else it takes one of the filter's insert-if-absent locks (one
    /// per stripe of buckets, which no other operation takes), looks again and inserts. Racing calls for one
    /// absent fingerprint thus take turns, and exactly one stores it: the insert of the first
    /// is done before the second, which acquires the lock the first released, looks again, and
    /// a lookup finds every copy stored throughout it (relocations move copies, never drop
    /// one). Lookups, inserts and removes stay lock-free and never wait for these locks; only
    /// `insert_if_absent` calls of absent keys in one stripe wait for each other.
    ///
    /// ```
    /// use conqf::{Count, LockFreeCuckooFilter};
    /// let filter = LockFreeCuckooFilter::new(1000, 0.01)?;
    /// assert!(filter.insert_if_absent(&"apple")?);
    /// assert!(!filter.insert_if_absent(&"apple")?);
    /// assert_eq!(filter.count(&"apple"), 1);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    fn insert_if_absent_hash(&self, hash: u64) -> Result<bool, Error> {
        let place = self.table.placement(hash);
        if self.contains_placed(place) {
            return Ok(false);
        }
        let _turn = self.lock_absent(place);
        if self.contains_placed(place) {
            return Ok(false);
        }
        self.insert_placed(hash, place)?;
        Ok(true)
    }
}

impl Count for LockedCuckooFilter {
    #[doc = cuckoo_count_docs!(
        LockedCuckooFilter,
        "Read-locks the stripes of both buckets, as `contains` does: the count of one instant."
    )]
    fn count_hash(&self, hash: u64) -> u64 {
        let place = self.table.placement(hash);
        let _locks = self.read_both(place.primary, place.alternate);
        // Relaxed: the read locks order these reads after every write made under the locks.
        let primary = self.table.load_bucket(place.primary, Ordering::Relaxed);
        let alternate = self.table.load_bucket(place.alternate, Ordering::Relaxed);
        copies_in(&self.table, &primary, &alternate, place)
    }

    #[doc = insert_count_doc!()]
    fn insert_count_hash(&self, hash: u64, n: u64) -> Result<(), Error> {
        let place = self.table.placement(hash);
        insert_copies_into(self, hash, n, || self.insert_placed(hash, place))
    }

    /// Looks for the fingerprint and stores it under the same write locks of both buckets'
    /// stripes (in every round of the insert, the relocations between rounds done without
    /// them), so of racing calls for one absent fingerprint exactly one answers `Ok(true)`.
    fn insert_if_absent_hash(&self, hash: u64) -> Result<bool, Error> {
        self.store_placed(hash, self.table.placement(hash), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: u64 = 0x2A;

    fn entry(state: Option<State>) -> Entry {
        state.map_or(Entry::EMPTY, |state| Entry::new(FP, state))
    }

    /// Every pair of entry states a single instant can show, with its number of copies: one
    /// copy moving (each step of `lock_free`'s table), two copies where one's move is about to
    /// fail, and a copy of another fingerprint, which never counts.
    #[test]
    fn each_instant_of_a_move_counts_its_copy_once() {
        use State::*;
        let cases = [
            (None, None, 0),
            (Some(Stable), None, 1),
            (Some(Out), None, 1),
            (Some(Out), Some(In), 1),
            (Some(Vacated), Some(In), 1),
            (Some(Vacated), Some(Stable), 1),
            (Some(Vacated), Some(Out), 1),
            (Some(Stable), Some(Stable), 2),
            (Some(Out), Some(Stable), 2),
            (Some(Out), Some(Out), 2),
        ];
        for (one, other, copies) in cases {
            assert_eq!(
                copies_at(entry(one), entry(other), FP),
                copies,
                "{one:?} {other:?}"
            );
            assert_eq!(
                copies_at(entry(other), entry(one), FP),
                copies,
                "{other:?} {one:?}"
            );
        }
        let stranger = Entry::new(FP + 1, State::Stable);
        assert_eq!(copies_at(stranger, entry(Some(State::In)), FP), 1);
        assert_eq!(copies_at(stranger, stranger, FP), 0);
    }

    #[test]
    fn more_copies_than_a_fingerprint_has_entries_never_start() {
        let mut inserts = 0;
        let insert = || {
            inserts += 1;
            Ok(())
        };
        let result = insert_copies(MAX_COPIES + 1, insert, || {});
        assert_eq!((result, inserts), (Err(Error::Full), 0));
    }

    #[test]
    fn a_failed_copy_takes_back_those_added() {
        let (mut stored, mut removed) = (0, 0);
        let result = insert_copies(
            5,
            || {
                if stored == 3 {
                    return Err(Error::Full);
                }
                stored += 1;
                Ok(())
            },
            || removed += 1,
        );
        assert_eq!((result, stored, removed), (Err(Error::Full), 3, 3));
    }

    /// Exactly as many copies as a fingerprint has entries (eight) are inserted, one insert
    /// each: only more are `Full` at once. Through a filter, they fill the two buckets.
    #[test]
    fn as_many_copies_as_a_fingerprint_has_entries_go_in() {
        let mut inserts = 0;
        let insert = || {
            inserts += 1;
            Ok(())
        };
        let result = insert_copies(MAX_COPIES, insert, || {});
        assert_eq!((result, inserts), (Ok(()), MAX_COPIES));
        let filter = LockFreeCuckooFilter::with_bits(6, 16).unwrap();
        let hash = crate::hash_key("eight");
        assert_eq!(filter.insert_count_hash(hash, MAX_COPIES), Ok(()));
        assert_eq!(filter.count_hash(hash), MAX_COPIES);
    }
}
