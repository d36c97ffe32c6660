//! Quotient filters: the shared 3-status-bit slot, run/cluster walk and whole-table scans, and
//! one file per variant.

pub(crate) mod counting;
pub(crate) mod expandable;
pub(crate) mod externally_locked;
pub(crate) mod growing;
pub(crate) mod level_reads;
pub(crate) mod linear_probing;
pub(crate) mod load_cap;
pub(crate) mod locally_locked;
pub(crate) mod rank_select;
pub(crate) mod region_locks;
pub(crate) mod scan;
pub(crate) mod seq_word;
pub(crate) mod sequential;
pub(crate) mod shift_regions;
pub(crate) mod slot;
pub(crate) mod table;
pub(crate) mod two_bit;
pub(crate) mod walk;

/// Slots after the `2^q` addressable ones, so clusters near the end need no wrap-around. About
/// `4 sqrt(2^q)`: far beyond the longest cluster at any sane fill, yet a fraction of a percent of
/// the table. The last slot always stays empty.
pub(crate) fn overflow_slots(quotient_bits: u32) -> usize {
    2 + (4usize << quotient_bits.div_ceil(2))
}

/// The slots of a table with `2^quotient_bits` canonical slots as `with_bits` makes it: those
/// and the overflow tail. A grown or read-back table may have more.
pub(crate) fn usual_slots(quotient_bits: u32) -> usize {
    (1usize << quotient_bits) + overflow_slots(quotient_bits)
}
