//! A [`TwoBitQf`]'s queries: the walk without locks, when its answer stands (one group, a
//! hit, or a quiet shift region), and the query under the left lock (the module doc of
//! [`two_bit`](super), "contains").

use super::walk::{self, RunSearch};
use super::TwoBitQf;
use crate::hash::hash_key;
use crate::qf::shift_regions::QuietRegion;
use crate::qf::walk::UnlockedWalk;
use crate::storage::{with_fixed_width, Cursor, GroupSource, Recorder};
use crate::sync::Ordering;
use std::hash::Hash;

impl TwoBitQf {
    /// The whole lookup walked without locks (locks read as empty). Its answer is exact if the
    /// walk read only the canonical slot's group, which it loaded once: a consistent piece of
    /// the table. A walk over several groups that overlaps a shift may count a stale or doubled
    /// slot into the wrong run: its `true` is then at worst a false positive (about as likely
    /// as a fingerprint collision in that run), and its `false` proves nothing, since the shift
    /// may have carried the element past the walk.
    ///
    /// So the word of the canonical slot's shift region is read before the walk: its answer is
    /// exact also if the walk stayed in that region and no locked shift was in flight there at
    /// any moment of it
    /// ([`ShiftRegions::walk_stands`](crate::qf::shift_regions::ShiftRegions::walk_stands);
    /// `qf::shift_regions` has the argument).
    ///
    /// `recorder` keeps the words the walk read, for [`locked_query`](Self::locked_query) to
    /// confirm a miss without walking again. The walk is compiled per slot width
    /// ([`with_fixed_width!`]), so it locates slots with constants.
    #[inline]
    pub(super) fn walk_without_locks(
        &self,
        recorder: &Recorder<'_>,
        quotient: usize,
        remainder: u64,
    ) -> (QuietRegion, UnlockedWalk) {
        with_fixed_width!(recorder => {
            // The layout is a constant here: locating the group takes an instruction or two.
            let quiet = self.shifts.read_begin(recorder.layout().locate(quotient).0);
            // Acquire: pairs with the Release of the writers that published the groups; and
            // `ShiftRegions::walk_stands` needs it.
            let mut cursor = Cursor::over(&recorder, quotient, Ordering::Acquire);
            let canonical_group = cursor.group();
            let lookup = walk::lookup(&mut cursor, quotient, remainder);
            (quiet, UnlockedWalk::new(lookup, canonical_group, &cursor))
        })
    }

    /// The query: the walk without locks answers if it read one group, if it stands on its
    /// shift region
    /// ([`ShiftRegions::walk_stands`](crate::qf::shift_regions::ShiftRegions::walk_stands)), or
    /// if it found the remainder and `unlocked_hits` trusts that; otherwise the locked query does.
    #[inline(always)]
    pub(crate) fn contains_trusting(
        &self,
        quotient: usize,
        remainder: u64,
        unlocked_hits: bool,
    ) -> bool {
        loop {
            let recorder = Recorder::new(&self.table.slots);
            let (quiet, walk) = self.walk_without_locks(&recorder, quotient, remainder);
            if walk.one_group
                || (walk.found && unlocked_hits)
                || self.shifts.walk_stands(quiet, &walk)
            {
                return walk.found;
            }
            let seen = walk.start.map(|boundary| (boundary, &recorder, walk.found));
            if let Some(found) = self.locked_query(quotient, remainder, seen) {
                return found;
            }
        }
    }

    /// [`contains_hash`](crate::Filter::contains_hash) without trusting a hit of a walk without
    /// locks: `true` only if the fingerprint was stored at some moment of the call, never from
    /// a run misread during a concurrent shift (crate docs, "Consistency"). For callers that
    /// act on a `true`. It costs a lock whenever the answer is not in the canonical slot's
    /// group and the walk cannot stand on its shift region (a locked shift was in flight in
    /// its region of 1,024 groups, the walk crossed into another region, or it gave up on what
    /// it read), hit or miss.
    ///
    /// ```
    /// use conqf::{Filter, Remove, TwoBitQf};
    ///
    /// let filter = TwoBitQf::new(1_000, 0.01)?;
    /// filter.insert(&42u64)?;
    /// assert!(filter.contains_hash_locked(conqf::hash_key(&42u64)));
    /// filter.remove(&42u64)?;
    /// assert!(!filter.contains_locked(&42u64));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    pub fn contains_hash_locked(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.table.fingerprint(hash);
        self.contains_trusting(quotient, remainder, false)
    }

    /// [`contains_hash_locked`](Self::contains_hash_locked) for a key.
    pub fn contains_locked<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash_locked(hash_key(key))
    }

    /// The query under the left lock. `None`: the supercluster changed; restart.
    ///
    /// `seen`: what a walk without locks just saw: the boundary, the words it read and its
    /// answer. The boundary is locked if it is still empty and unlocked, which saves the walk
    /// back to it. If then every group that walk read still holds the word it read (apart from
    /// the new lock), a walk under the lock would read those words and give the same answer,
    /// so that answer is returned without walking again. Otherwise the walk under the lock
    /// checks that every slot from the lock to `quotient` is filled, so the lock is the
    /// boundary (else: restart).
    pub(super) fn locked_query(
        &self,
        quotient: usize,
        remainder: u64,
        seen: Option<(usize, &Recorder<'_>, bool)>,
    ) -> Option<bool> {
        let hinted = seen.filter(|&(left, _, _)| self.try_lock(left));
        if let Some((left, recorder, found)) = hinted {
            let layout = self.table.slots.layout();
            let (group, offset) = layout.locate(left);
            let lock_bits = layout.slot_mask() << (offset * layout.bits());
            // Acquire: as for the walk under the lock this replaces.
            if recorder.unchanged(group, lock_bits, Ordering::Acquire) {
                self.unlock(left);
                return Some(found);
            }
        }
        let left = match hinted {
            Some((left, _, _)) => left,
            None => self.lock_left(quotient),
        };
        if left == quotient {
            self.unlock(left);
            return Some(false);
        }
        // Acquire: as in `plan_locked`.
        let mut cursor = self.table.slots.cursor(left, Ordering::Acquire);
        let answer = walk::seek_run(&mut cursor, quotient).and_then(|run| {
            if run.exists {
                walk::search_run(&mut cursor, remainder)
                    .map(|found| matches!(found, RunSearch::Found(_)))
            } else {
                Some(false)
            }
        });
        self.unlock(left);
        answer
    }
}
