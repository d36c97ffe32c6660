//! A sequence word for many writers: the optimistic-read half of a sequence lock whose writers do
//! not exclude each other (they hold locks of their own). A reader reads without locks and keeps
//! what it read only if no writer was in flight at any moment of its read. Shared by
//! `ExpandableQf`'s lock-free reads of its lower levels ([`level_reads`](super::level_reads)) and
//! the lock-free misses of `LocallyLockedQf` and `TwoBitQf`
//! ([`shift_regions`](super::shift_regions)); none is in the papers, whose queries lock.
//!
//! ```text
//!  63                  32 31                   0
//! +----------------------+----------------------+
//! |   writers started    |  writers in flight   |
//! |     (wrapping)       |                      |
//! +----------------------+----------------------+
//! ```
//!
//! A writer adds one to both halves before its first write under the word and takes one from the
//! low half after its last. A reader loads the word before its read and after it: if the first load
//! showed no writer in flight and the second equals the first, no writer was in flight during the
//! read. One in flight at the first load shows there; one that started later changed the started
//! count (unless exactly `2^32` writers started during the read, which the wrap would hide).

use crate::sync::{fence, AtomicU64, Ordering};

/// One start of a writer, in the high half.
const STARTED: u64 = 1 << 32;
/// One writer in flight, in the low half.
const IN_FLIGHT: u64 = 1;
const IN_FLIGHT_MASK: u64 = STARTED - 1;

/// A sequence word (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct SeqWord(AtomicU64);

impl SeqWord {
    /// A word with no writer started.
    pub(crate) fn new() -> Self {
        SeqWord(AtomicU64::new(0))
    }

    /// A word that shows a writer in flight, for a reader with no word to read: no read stands
    /// on it ([`in_flight`](Self::in_flight)).
    pub(crate) const NEVER_STANDS: u64 = IN_FLIGHT;

    /// The word to hand to [`read_stands`](Self::read_stands) after an optimistic read that
    /// starts now; `None` if a writer is in flight (the read would not stand).
    #[inline]
    pub(crate) fn read_begin(&self) -> Option<u64> {
        let before = self.begin();
        (!Self::in_flight(before)).then_some(before)
    }

    /// The word before an optimistic read that starts now, whether or not it shows a writer
    /// in flight: for a reader that reads anyway, and then keeps what it read only if the word
    /// showed none ([`in_flight`](Self::in_flight)) and [`read_stands`](Self::read_stands).
    #[inline]
    pub(crate) fn begin(&self) -> u64 {
        // Acquire: pairs with the Release decrement of the writers that finished, so their
        // writes are visible to the read.
        self.0.load(Ordering::Acquire)
    }

    /// Whether the word `before` shows a writer in flight.
    #[inline]
    pub(crate) const fn in_flight(before: u64) -> bool {
        before & IN_FLIGHT_MASK != 0
    }

    /// Whether the optimistic read since [`read_begin`](Self::read_begin) gave `before` stands:
    /// no writer started since. The read's own loads must be `Acquire`.
    #[inline]
    pub(crate) fn read_stands(&self, before: u64) -> bool {
        // What orders this load after the read is the read's own Acquire loads: if one of them
        // read a writer's write (made after the writer's increment and Release fence), that
        // increment happens before everything after the load, this load included, which so sees
        // it. Relaxed would therefore do here (it passed every model of the level reads when
        // mutation-tested, 2026-11-29); Acquire costs nothing on x86.
        self.0.load(Ordering::Acquire) == before
    }
}

/// A writer in flight on some sequence words, from [`Writing::start`] (or, word by word, from
/// [`Writing::count_first`]) until dropped (also when unwinding: a panicking writer must not turn
/// the readers away for ever).
#[must_use = "the writer is in flight only until this is dropped"]
pub(crate) struct Writing<'a> {
    words: &'a [SeqWord],
    /// How many of `words`, from the first, the writer is counted on.
    counted: usize,
}

impl<'a> Writing<'a> {
    /// Counts a writer in flight on every word of `words`; call it before the writer's first
    /// write.
    pub(crate) fn start(words: &'a [SeqWord]) -> Self {
        let mut writing = Self::pending(words);
        writing.count_first(words.len());
        writing
    }

    /// A writer that will write under some of `words`, counted on none of them yet: it counts
    /// itself on each with [`count_first`](Self::count_first) before its first write there.
    pub(crate) fn pending(words: &'a [SeqWord]) -> Self {
        Writing { words, counted: 0 }
    }

    /// Counts the writer in flight on the first `n` words (at most all of them), those it is
    /// not counted on yet; call it before the writer's first write under any of them.
    pub(crate) fn count_first(&mut self, n: usize) {
        let to = n.min(self.words.len());
        if to <= self.counted {
            return;
        }
        for word in &self.words[self.counted..to] {
            // Relaxed, then a Release fence (a sequence-lock writer): every write the writer makes
            // under these words comes after the fence, so a reader that reads one of them with an
            // Acquire load sees this increment in its second load, whatever ordering the writer
            // writes with. (Today's writers commit with Release CASes, which order the increment
            // on their own: without the fence the ten loom models of queries beside shifts that
            // fail when the readers ignore the words pass in plain mode, checked on 2026-11-30.
            // The fence keeps the argument from depending on how a writer commits.)
            word.0.fetch_add(STARTED + IN_FLIGHT, Ordering::Relaxed);
        }
        fence(Ordering::Release);
        self.counted = to;
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        for word in &self.words[..self.counted] {
            // Release: a reader whose first load sees this writer finished sees its writes.
            word.0.fetch_sub(IN_FLIGHT, Ordering::Release);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_read_stands_only_if_no_writer_was_in_flight_during_it() {
        let word = SeqWord::new();
        let before = word.read_begin().unwrap();
        assert!(word.read_stands(before));
        // A writer that starts and finishes during the read.
        drop(Writing::start(std::slice::from_ref(&word)));
        assert!(!word.read_stands(before));
        // A read that starts while a writer is in flight.
        let writing = Writing::start(std::slice::from_ref(&word));
        assert_eq!(word.read_begin(), None);
        drop(writing);
        let after = word.read_begin().unwrap();
        assert!(word.read_stands(after));
    }

    #[test]
    fn a_writer_on_several_words_counts_on_each() {
        let words = [SeqWord::new(), SeqWord::new(), SeqWord::new()];
        let before: Vec<u64> = words.iter().map(|w| w.read_begin().unwrap()).collect();
        let writing = Writing::start(&words[1..]);
        assert!(words[0].read_stands(before[0]));
        assert!(words[1].read_begin().is_none() && words[2].read_begin().is_none());
        drop(writing);
        assert!(!words[1].read_stands(before[1]) && !words[2].read_stands(before[2]));
        assert!(words[1].read_begin().is_some() && words[2].read_begin().is_some());
    }

    #[test]
    fn a_pending_writer_counts_on_each_word_from_its_first_write_there() {
        let words = [SeqWord::new(), SeqWord::new(), SeqWord::new()];
        let before: Vec<u64> = words.iter().map(|w| w.read_begin().unwrap()).collect();
        let mut writing = Writing::pending(&words);
        assert!(words.iter().all(|w| w.read_begin().is_some()));
        writing.count_first(1);
        writing.count_first(1);
        assert!(words[0].read_begin().is_none() && words[1].read_begin().is_some());
        writing.count_first(9);
        assert!(
            words.iter().all(|w| w.read_begin().is_none()),
            "at most all of the words"
        );
        drop(writing);
        // Each word counted the writer's start once and its end once.
        for (word, before) in words.iter().zip(before) {
            assert_eq!(word.begin(), before + STARTED);
        }
    }
}
