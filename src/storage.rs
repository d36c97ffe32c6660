//! Packed-slot group storage (paper 000 §3, "Concurrent Slot Storage").
//!
//! Every filter stores fixed-width slots of `bits` bits (3 to 64), packed as
//! `per_group = floor(64 / bits)` slots into each 64-bit word, a *group*. A whole group is read
//! and written with one atomic operation, so a reader that loads a group sees a consistent state
//! of all its slots, and a writer can change several neighbouring slots with one CAS.
//!
//! ```text
//!  group g (one AtomicU64), here bits = 13, per_group = 4, 12 bits unused
//!  63      52 51        39 38        26 25        13 12         0
//! +----------+------------+------------+------------+------------+
//! |  unused  |  slot 4g+3 |  slot 4g+2 |  slot 4g+1 |  slot 4g   |
//! +----------+------------+------------+------------+------------+
//! ```
//!
//! Slot `i` is in group `i / per_group` at bit `(i % per_group) * bits`. The division by the
//! small constant `per_group` is a multiply by a precomputed reciprocal (see [`SlotLayout`]), not
//! a hardware division. Slot contents are opaque here; each filter gives them meaning.
//!
//! The pieces, one job each: [`SlotLayout`] (where a slot sits in its group), [`LaneFields`]
//! (comparing every lane at once), [`SlotArray`] (the atomic groups), [`GroupSource`] (where a
//! walk loads groups from), [`Cursor`] (the walk), [`Rewriter`] and [`shift_lanes_up`] (writing
//! a shift one group at a time), [`GroupWriter`] (filling an array from several threads), and
//! the prefetch hints.

mod alloc;
mod array;
mod cursor;
mod group_writer;
mod lanes;
mod layout;
mod prefetch;
mod rewrite;
mod source;

pub(crate) use alloc::{abort_for_bytes, try_boxed, try_reserve, try_zeroed_words};
pub(crate) use array::SlotArray;
pub(crate) use cursor::Cursor;
pub(crate) use group_writer::GroupWriter;
pub(crate) use lanes::LaneFields;
pub(crate) use layout::{SlotLayout, MAX_SLOTS};
pub(crate) use prefetch::{prefetch_index, prefetch_word, WORDS_PER_LINE};
pub(crate) use rewrite::{shift_lanes_up, Commit, Exclusive, Guarded, Preview, Rewriter};
pub(crate) use source::{
    le_word, with_fixed_width, AtRest, FixedWidth, GroupSource, LeWords, Recorder,
};

#[cfg(test)]
pub(crate) mod test_arrays;

#[cfg(test)]
mod tests;
