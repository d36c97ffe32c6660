//! The 3-status-bit slot of the basic quotient filter (paper 000 §2.1, Table 1), and the two
//! status combinations that never occur in a table at rest, which the locally locked filter uses
//! as locks (paper 000 §3.2).
//!
//! ```text
//!   slot of 3 + r bits (stored in a storage lane, low bits first)
//!  +-----------------------------+---------+--------------+----------+
//!  | remainder (r bits)          | shifted | continuation | occupied |
//!  +-----------------------------+---------+--------------+----------+
//!   bit 3 ...                      bit 2     bit 1          bit 0
//!
//!  occupied, continuation, shifted (the paper writes them in this order)
//!   000  empty              1**  the run of this canonical slot is non-empty
//!   100  cluster start      *01  run start (shifted)     *11  continuation of a run
//!   010  read lock on a cluster start (its real status is 100)
//!   110  write lock on an empty slot (its real status is 000); with a non-zero remainder, a
//!        migration lock (growing, paper 000 §3.2 "Growing concurrently")
//! ```
//!
//! `occupied` belongs to the slot *position* (does canonical slot `i` have a run?), while
//! `continuation`, `shifted` and the remainder belong to the *element* stored there and move with
//! it when runs shift.

/// Status bits per slot.
pub(crate) const STATUS_BITS: u32 = 3;
/// The run of this canonical slot is non-empty.
pub(crate) const OCCUPIED: u64 = 0b001;
/// The element here continues the run of the element to its left.
pub(crate) const CONTINUATION: u64 = 0b010;
/// The element here is not in its canonical slot.
pub(crate) const SHIFTED: u64 = 0b100;
/// All three status bits.
pub(crate) const STATUS_MASK: u64 = 0b111;
/// Read lock: a cluster start (`100`) whose status was replaced by `010`.
pub(crate) const READ_LOCK: u64 = CONTINUATION;
/// Write lock: an empty slot (`000`) whose status was replaced by `110`.
pub(crate) const WRITE_LOCK: u64 = OCCUPIED | CONTINUATION;

/// Migration lock: the write-lock status `110` with remainder 1 on an empty slot that a
/// migration has reached (paper 000 §3.2, "Growing concurrently"). Never released; ordinary write
/// locks have remainder 0, so the two are told apart.
pub(crate) const MIGRATION_LOCK: u64 = (1 << STATUS_BITS) | WRITE_LOCK;

/// What a raw slot is to a thread about to lock it: the one classification the locked scans of
/// [`LocallyLockedQf`](super::locally_locked::LocallyLockedQf) and the growing migration share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockView {
    /// Empty and unlocked: lock it.
    Empty,
    /// Write-locked by an insert or removal in flight: wait for it.
    WriteLocked,
    /// Migration-locked (a write lock with a remainder): the table is being migrated.
    MigrationLocked,
    /// Holds an element (read-locked or not).
    Filled,
}

impl LockView {
    /// The view of raw slot `raw`.
    #[inline]
    pub(crate) fn of(raw: u64) -> LockView {
        if raw == 0 {
            LockView::Empty
        } else if raw & STATUS_MASK == WRITE_LOCK {
            if raw == WRITE_LOCK {
                LockView::WriteLocked
            } else {
                LockView::MigrationLocked
            }
        } else {
            LockView::Filled
        }
    }

    /// Bit 0 of every lane of `word` whose status is empty (`000`) or a write lock (`110`):
    /// shifted clear and occupied equal to continuation. Every lane [`of`](Self::of) does not
    /// call [`Filled`](Self::Filled) is among them, so a scan can skip the other lanes a group
    /// at a time. `lane_lsb` is bit 0 of every lane.
    #[inline]
    pub(crate) fn candidates(word: u64, lane_lsb: u64) -> u64 {
        !(word >> 2) & !(word ^ (word >> 1)) & lane_lsb
    }
}

/// One decoded slot: status bits and remainder.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Slot(u64);

impl Slot {
    /// The empty slot.
    pub(crate) const EMPTY: Slot = Slot(0);

    /// The slot as the table at rest would hold it: a read-locked cluster start reads as the
    /// cluster start it is, a write-locked empty slot as empty. In a table without locks (the
    /// sequential filter) this is the identity.
    #[inline]
    pub(crate) fn unlocked(raw: u64) -> Slot {
        // Both locks have the continuation bit without the shifted bit; flipping their two low
        // bits turns `010` into `001` and `110` (low bits `011`) into `000`. Branch-free, since
        // this runs on every slot of every walk. A write lock's remainder is zero, so it reads as
        // an empty slot.
        let is_lock = (raw >> 1) & !(raw >> 2) & 1;
        Slot(raw ^ (is_lock * (OCCUPIED | CONTINUATION)))
    }

    /// The slot exactly as stored, locks included.
    #[inline]
    pub(crate) const fn raw(self) -> u64 {
        self.0
    }

    /// A slot from its raw bits, without interpreting locks.
    #[inline]
    pub(crate) const fn from_raw(raw: u64) -> Slot {
        Slot(raw)
    }

    /// An element (occupied bit clear) with these fields.
    #[inline]
    pub(crate) const fn element(remainder: u64, continuation: bool, shifted: bool) -> Slot {
        Slot(
            (remainder << STATUS_BITS)
                | if continuation { CONTINUATION } else { 0 }
                | if shifted { SHIFTED } else { 0 },
        )
    }

    /// The status bits.
    #[inline]
    pub(crate) const fn status(self) -> u64 {
        self.0 & STATUS_MASK
    }

    /// The remainder.
    #[inline]
    pub(crate) const fn remainder(self) -> u64 {
        self.0 >> STATUS_BITS
    }

    /// Whether the run of this canonical slot is non-empty.
    #[inline]
    pub(crate) const fn is_occupied(self) -> bool {
        self.0 & OCCUPIED != 0
    }

    /// Whether the element here continues the run to its left.
    #[inline]
    pub(crate) const fn is_continuation(self) -> bool {
        self.0 & CONTINUATION != 0
    }

    /// Whether the element here is away from its canonical slot.
    #[inline]
    pub(crate) const fn is_shifted(self) -> bool {
        self.0 & SHIFTED != 0
    }

    /// Whether no element is stored here.
    #[inline]
    pub(crate) const fn is_empty(self) -> bool {
        self.0 & STATUS_MASK == 0
    }

    /// Whether an element in its canonical slot is stored here, starting a cluster.
    #[inline]
    pub(crate) const fn is_cluster_start(self) -> bool {
        self.0 & STATUS_MASK == OCCUPIED
    }

    /// The element part: everything but the occupied bit.
    #[inline]
    pub(crate) const fn element_bits(self) -> u64 {
        self.0 & !OCCUPIED
    }

    /// This slot with its continuation bit set to `on`.
    #[inline]
    pub(crate) const fn with_continuation(self, on: bool) -> Slot {
        Slot(if on {
            self.0 | CONTINUATION
        } else {
            self.0 & !CONTINUATION
        })
    }

    /// This slot with its shifted bit set to `on`.
    #[inline]
    pub(crate) const fn with_shifted(self, on: bool) -> Slot {
        Slot(if on {
            self.0 | SHIFTED
        } else {
            self.0 & !SHIFTED
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn element_fields_round_trip(remainder in 0u64..(1 << 61), c: bool, s: bool) {
            let slot = Slot::element(remainder, c, s);
            prop_assert_eq!(slot.remainder(), remainder);
            prop_assert_eq!(slot.is_continuation(), c);
            prop_assert_eq!(slot.is_shifted(), s);
            prop_assert!(!slot.is_occupied());
            prop_assert_eq!(slot.with_continuation(!c).is_continuation(), !c);
            prop_assert_eq!(slot.with_shifted(!s).is_shifted(), !s);
            prop_assert_eq!(slot.with_shifted(!s).remainder(), remainder);
        }

        #[test]
        fn locks_read_as_the_state_they_protect(remainder in 0u64..(1 << 20)) {
            let start = (remainder << STATUS_BITS) | OCCUPIED;
            let locked = (remainder << STATUS_BITS) | READ_LOCK;
            prop_assert_eq!(Slot::unlocked(locked), Slot::from_raw(start));
            prop_assert!(Slot::unlocked(WRITE_LOCK).is_empty());
            // every state a table at rest holds reads as itself
            for status in [0b000, 0b001, 0b100, 0b101, 0b110, 0b111] {
                let raw = (remainder << STATUS_BITS) | status;
                prop_assert_eq!(Slot::unlocked(raw), Slot::from_raw(raw));
            }
        }

        /// `candidates` flags exactly the lanes with status `000` or `110`, which include every
        /// lane `LockView::of` does not call `Filled`, in every lane of a packed word.
        #[test]
        fn lock_view_candidates_are_the_empty_and_write_locked_lanes(
            bits in 4u32..=16,
            lanes in proptest::collection::vec((0u64..8, 0u64..4), 1..=16),
        ) {
            let layout = crate::storage::SlotLayout::new(bits);
            let mut word = 0;
            for (lane, &(status, remainder)) in lanes.iter().enumerate().take(layout.per_group() as usize) {
                let raw = ((remainder << STATUS_BITS) | status) & layout.slot_mask();
                word = layout.set(word, lane as u32, raw);
            }
            let flagged = LockView::candidates(word, layout.lanes(1));
            for lane in 0..layout.per_group() {
                let raw = layout.get(word, lane);
                let status = raw & STATUS_MASK;
                let is_candidate = flagged & layout.place(lane, 1) != 0;
                prop_assert_eq!(is_candidate, status == 0 || status == WRITE_LOCK, "lane {}", lane);
                if LockView::of(raw) != LockView::Filled {
                    prop_assert!(is_candidate);
                }
            }
        }
    }
}
