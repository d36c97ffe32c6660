//! The block layout of the rank-and-select quotient filter (paper 004 §III-B, paper 000 §2.2):
//! slots in blocks of 64, each block an `occupieds` word, a `runends` word and 64 remainders of
//! `r` bits packed into `r` words, plus an 8-bit offset per block (2.125 metadata bits per slot).
//!
//! The offset is kept in a separate array, eight blocks to a word, so a block stays exactly
//! `2 + r` aligned words and the offsets of a whole region share a cache line. Our offset of
//! block `b` is its *spill*: how many slots from the block's first slot `64 b` on are used by
//! runs of quotients below `64 b` (Pandey et al.'s offset, without the ambiguity at 0). It
//! saturates at [`SPILL_SATURATED`]; the exact value is then recomputed from the block before
//! (see `runs::spill`).
//!
//! [`View`] is how every algorithm reads and writes the table. A view made for a window of
//! blocks (the regions an operation holds, or the one it reads optimistically) records the
//! lowest and highest block it touched outside that window (the *reach*), so the concurrent
//! filter can check that an operation stayed in the regions it has locked; touching a block
//! inside the window costs one comparison and records nothing. All accesses are `Relaxed`
//! atomics; what orders them is the region lock (see `locks`), or exclusive access
//! (`&mut self`).
//!
//! A view reads any [`BlockSource`]: the live atomic [`Blocks`], or the little-endian words of a
//! serialised table ([`LeBlocks`], the zero-copy `CountingQfRef`), so the one lookup code serves
//! both; writes exist only on views of [`Blocks`]. A [`BlockReader`] reads one block of any
//! source without recording a reach, for the lookup's fast path, whose reach is that block; a
//! [`BlockWriter`] reads and writes one block of [`Blocks`] the same way, for the writes' fast
//! path and as the step every write of a view is made of.

use std::cell::Cell;

use crate::filter::Error;
use crate::hash::{low_mask_below_64, low_mask_nonzero};
use crate::storage::le_word;
use crate::sync::{AtomicU64, Ordering};

/// Where a [`View`] reads the table from: the blocks' words (block `b` is words
/// `b (2 + r) .. (b + 1)(2 + r)`: `occupieds`, `runends`, then the remainders) and the spill
/// words (eight 8-bit spills each, block `b` in byte `b % 8` of word `b / 8`).
pub(crate) trait BlockSource {
    /// Number of blocks.
    fn blocks(&self) -> usize;
    /// Remainder bits per slot.
    fn remainder_bits(&self) -> u32;
    /// Word `index` of the blocks' words.
    fn load_word(&self, index: usize) -> u64;
    /// Spill word `index`.
    fn load_spill_word(&self, index: usize) -> u64;

    /// The stored (possibly saturated) spill of block `block`: byte `block % 8` of its word.
    #[inline(always)]
    fn stored_spill(&self, block: usize) -> u64 {
        (self.load_spill_word(block / 8) >> (8 * (block % 8))) & 0xFF
    }

    /// Number of slots (`64` per block).
    #[inline]
    fn slots(&self) -> usize {
        self.blocks() * BLOCK_SLOTS
    }
}

/// Words per block of `remainder_bits`-bit remainders: `occupieds`, `runends`, `r` words of
/// remainders.
#[inline]
pub(crate) const fn block_words(remainder_bits: u32) -> usize {
    2 + remainder_bits as usize
}

/// Spill words of `blocks` blocks.
#[inline]
pub(crate) const fn spill_words(blocks: usize) -> usize {
    blocks.div_ceil(8)
}

/// Slots per block.
pub(crate) const BLOCK_SLOTS: usize = 64;
/// The most words [`Blocks::prefetch`] asks for: eight cache lines, two blocks of `r = 30`.
const PREFETCH_WORDS: usize = 64;
/// A stored spill of this value means "255 or more: recompute".
pub(crate) const SPILL_SATURATED: u64 = 255;

/// The table: blocks of `2 + r` words, and the spills.
pub(crate) struct Blocks {
    words: Box<[AtomicU64]>,
    spills: Box<[AtomicU64]>,
    remainder_bits: u32,
    block_words: usize,
    blocks: usize,
}

impl Blocks {
    /// An empty table of `blocks` blocks of `remainder_bits`-bit remainders (`2 <= r <= 62`).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the memory cannot be allocated.
    pub(crate) fn new(blocks: usize, remainder_bits: u32) -> Result<Self, Error> {
        let block_words = block_words(remainder_bits);
        let words = blocks
            .checked_mul(block_words)
            .ok_or_else(|| Error::InvalidParameters(format!("{blocks} blocks is too many")))?;
        Ok(Blocks {
            words: zeroed_words(words)?,
            spills: zeroed_words(spill_words(blocks))?,
            remainder_bits,
            block_words,
            blocks,
        })
    }

    /// Empties every block, as [`new`](Self::new) made them (`&mut self`: no other thread).
    pub(crate) fn clear(&mut self) {
        for word in self.words.iter().chain(self.spills.iter()) {
            // Relaxed: `&mut self`; sharing the table again orders this.
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Copies a table of the same shape into this one (fresh, not shared yet): a serialised
    /// one, or a filter's table whose writers the caller keeps out (holds every region).
    pub(crate) fn fill_from<S: BlockSource>(&self, source: &S) {
        debug_assert_eq!(
            (source.blocks(), source.remainder_bits()),
            (self.blocks, self.remainder_bits)
        );
        for (i, word) in self.words.iter().enumerate() {
            // Relaxed: the table is not shared yet; handing it to other threads orders this.
            word.store(source.load_word(i), Ordering::Relaxed);
        }
        for (i, word) in self.spills.iter().enumerate() {
            // Relaxed: as above.
            word.store(source.load_spill_word(i), Ordering::Relaxed);
        }
    }

    /// The number of words [`copy_words_into`](Self::copy_words_into) gives.
    pub(crate) fn word_count(&self) -> usize {
        self.words.len() + self.spills.len()
    }

    /// Appends the blocks' words, then the spill words, as stored, to `out`. The caller keeps
    /// writers out (holds every region, or has `&mut` access).
    pub(crate) fn copy_words_into(&self, out: &mut Vec<u64>) {
        // Relaxed: no thread writes the table meanwhile, and whatever keeps them out (the
        // region locks' Acquire, or the `&mut` borrow) ordered their stores before these loads.
        out.extend(
            self.words
                .iter()
                .chain(&self.spills)
                .map(|word| word.load(Ordering::Relaxed)),
        );
    }

    /// Asks the CPU to start loading every cache line of `slot`'s block and of the block after
    /// it (at most [`PREFETCH_WORDS`] words), so an operation's misses on them overlap with each
    /// other and with taking its lock instead of following one another. A hint only: a no-op
    /// where there is no prefetch instruction (and under loom).
    ///
    /// Why that far: the quotient's run starts after the block's spill and the runs before it,
    /// so at high fill it lies lines away from the canonical slot (and often in the next block),
    /// a remainder is read as a pair of words that may straddle two lines, and a write shifts
    /// into the following slots. Measured at `2^22` slots, r = 11 (`docs/performance-history.md`,
    /// "Prefetching the whole block"): against the metadata line and the canonical slot's
    /// remainder word alone, eight comparisons with `qfilter` of lookups and inserts at 30% to
    /// 90% fill gained between 0% and 44%.
    #[inline]
    pub(crate) fn prefetch(&self, slot: usize) {
        use crate::storage::{prefetch_index, WORDS_PER_LINE};
        let first = slot / BLOCK_SLOTS * self.block_words;
        let end = first + (2 * self.block_words).min(PREFETCH_WORDS);
        // No bounds checks: an index past the table prefetches some other address, which is
        // harmless, and a canonical slot's block is inside the table anyway.
        let mut word = first;
        while word < end {
            prefetch_index(&self.words, word);
            word += WORDS_PER_LINE;
        }
        // The last line, when the stretch does not end on a line boundary.
        prefetch_index(&self.words, end - 1);
    }

    /// Every word and spill word, for comparing two tables bit for bit in tests.
    #[cfg(test)]
    pub(crate) fn raw(&self) -> (Vec<u64>, Vec<u64>) {
        // Relaxed: single-threaded tests.
        let load = |words: &[AtomicU64]| words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
        (load(&self.words), load(&self.spills))
    }

    /// Heap bytes of the words and spills.
    pub(crate) fn memory_bytes(&self) -> usize {
        (self.words.len() + self.spills.len()) * 8
    }
}

impl BlockSource for Blocks {
    #[inline]
    fn blocks(&self) -> usize {
        self.blocks
    }
    #[inline]
    fn remainder_bits(&self) -> u32 {
        self.remainder_bits
    }
    #[inline]
    fn load_word(&self, index: usize) -> u64 {
        // Relaxed: ordered by the region lock or exclusive access (module doc).
        crate::sync::load_word(&self.words[index], Ordering::Relaxed)
    }
    #[inline]
    fn load_spill_word(&self, index: usize) -> u64 {
        // Relaxed: as in `load_word`; a spill word's other bytes may change concurrently (other
        // regions' blocks), and readers use only their own byte.
        crate::sync::load_word(&self.spills[index], Ordering::Relaxed)
    }
}

/// A table stored as little-endian words in borrowed bytes (a serialised `CountingQf`, e.g.
/// memory-mapped): the blocks' words, then the spill words, read in place on any alignment and
/// any host byte order.
#[derive(Clone, Copy)]
pub(crate) struct LeBlocks<'a> {
    words: &'a [u8],
    spills: &'a [u8],
    remainder_bits: u32,
    blocks: usize,
}

impl<'a> LeBlocks<'a> {
    /// The `blocks` blocks of `remainder_bits`-bit remainders in `bytes`; `None` unless `bytes`
    /// holds exactly their words and spill words.
    pub(crate) fn new(bytes: &'a [u8], blocks: usize, remainder_bits: u32) -> Option<Self> {
        let words = blocks.checked_mul(block_words(remainder_bits))?;
        let total = words.checked_add(spill_words(blocks))?.checked_mul(8)?;
        if bytes.len() != total {
            return None;
        }
        let (words, spills) = bytes.split_at(words * 8);
        Some(LeBlocks {
            words,
            spills,
            remainder_bits,
            blocks,
        })
    }

    /// The words of `blocks` blocks and their spills, as [`LeBlocks::new`] expects them.
    pub(crate) fn words_for(blocks: usize, remainder_bits: u32) -> Option<usize> {
        blocks
            .checked_mul(block_words(remainder_bits))?
            .checked_add(spill_words(blocks))
    }
}

impl BlockSource for LeBlocks<'_> {
    #[inline]
    fn blocks(&self) -> usize {
        self.blocks
    }
    #[inline]
    fn remainder_bits(&self) -> u32 {
        self.remainder_bits
    }
    #[inline]
    fn load_word(&self, index: usize) -> u64 {
        le_word(self.words, index)
    }
    #[inline]
    fn load_spill_word(&self, index: usize) -> u64 {
        le_word(self.spills, index)
    }
}

/// `count` zeroed atomic words, allocated fallibly.
fn zeroed_words(count: usize) -> Result<Box<[AtomicU64]>, Error> {
    crate::storage::try_zeroed_words(count)
}

/// Reads and writes of a table that record the range of blocks touched outside a window; reads
/// from any [`BlockSource`], writes only to a live [`Blocks`].
pub(crate) struct View<'a, S: BlockSource = Blocks> {
    table: &'a S,
    /// The first block of the window.
    window_first: usize,
    /// How many blocks after `window_first` the window holds (it ends at `window_first +
    /// window_span`).
    window_span: usize,
    /// The lowest and highest block touched outside the window (`usize::MAX` and 0 while none).
    lowest: Cell<usize>,
    highest: Cell<usize>,
}

impl<'a, S: BlockSource> View<'a, S> {
    /// A view of the whole table, which records no reach: for code that has the table to
    /// itself or reads a snapshot.
    #[inline]
    pub(crate) fn new(table: &'a S) -> Self {
        Self::window(table, 0, usize::MAX)
    }

    /// A view that records the blocks it touches outside `first..=last`.
    #[inline]
    pub(crate) fn window(table: &'a S, first: usize, last: usize) -> Self {
        debug_assert!(first <= last);
        View {
            table,
            window_first: first,
            window_span: last - first,
            lowest: Cell::new(usize::MAX),
            highest: Cell::new(0),
        }
    }

    /// The table.
    #[inline]
    pub(crate) fn table(&self) -> &'a S {
        self.table
    }

    /// The lowest and highest block touched outside the window so far (`None` if none).
    #[inline]
    pub(crate) fn reach(&self) -> Option<(usize, usize)> {
        let lowest = self.lowest.get();
        (lowest != usize::MAX).then(|| (lowest, self.highest.get()))
    }

    #[inline(always)]
    fn touch(&self, block: usize) {
        // One comparison: a block below the window wraps around to a large difference.
        if block.wrapping_sub(self.window_first) > self.window_span {
            self.record_outside(block);
        }
    }

    #[cold]
    fn record_outside(&self, block: usize) {
        self.lowest.set(self.lowest.get().min(block));
        self.highest.set(self.highest.get().max(block));
    }

    /// Word `index` of block `block`.
    #[inline]
    fn load(&self, block: usize, index: usize) -> u64 {
        self.touch(block);
        let r = self.table.remainder_bits();
        self.table.load_word(block * block_words(r) + index)
    }

    /// The `occupieds` word of a block: bit `i` is set if quotient `64 b + i` has a run.
    #[inline]
    pub(crate) fn occupieds(&self, block: usize) -> u64 {
        self.load(block, 0)
    }

    /// The `runends` word of a block: bit `i` is set if slot `64 b + i` ends a run.
    #[inline]
    pub(crate) fn runends(&self, block: usize) -> u64 {
        self.load(block, 1)
    }

    /// Whether slot `slot` ends a run (for tests, which compare tables slot by slot).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_runend(&self, slot: usize) -> bool {
        self.runends(slot / BLOCK_SLOTS) >> (slot % BLOCK_SLOTS) & 1 == 1
    }

    /// The remainder in slot `slot`.
    #[inline]
    pub(crate) fn remainder(&self, slot: usize) -> u64 {
        let block = slot / BLOCK_SLOTS;
        let r = self.table.remainder_bits();
        packed_remainder(slot % BLOCK_SLOTS, r, |index| self.load(block, index))
    }

    /// The stored (possibly saturated) spill of a block.
    #[inline]
    pub(crate) fn stored_spill(&self, block: usize) -> u64 {
        self.touch(block);
        self.table.stored_spill(block)
    }
}

/// Remainder `i` (`< 64`) of a block of `r`-bit remainders, reading the block's words with
/// `load` (word `2 + k` holds remainder bits `64 k..64 k + 64`).
///
/// Branch-free: it always reads the word after the first too (the same word again for the
/// block's last one, where no remainder straddles), since a lookup cannot predict which
/// remainders straddle two words.
#[inline(always)]
fn packed_remainder(i: usize, r: u32, load: impl Fn(usize) -> u64) -> u64 {
    packed_bits(i, r, load) & low_mask_below_64(r)
}

/// The 64 remainder bits of a block from the first bit of slot `i` (`< 64`) on: slots `i`,
/// `i + 1`, ... in `r`-bit lanes, lowest first, as far as they are in the block (the bits past
/// the block's last remainder are meaningless). Reads as [`packed_remainder`] does.
#[inline(always)]
fn packed_bits(i: usize, r: u32, load: impl Fn(usize) -> u64) -> u64 {
    let bit = i * r as usize;
    let (index, offset) = (2 + bit / 64, bit % 64);
    let last = block_words(r) - 1;
    let pair = u128::from(load((index + 1).min(last))) << 64 | u128::from(load(index));
    (pair >> offset) as u64
}

/// One block's words, read without recording a reach: for the lookup's fast path
/// (`lookup::count_in_block`), which reads nothing outside the block, so its reach is known.
pub(crate) struct BlockReader<'a, S: BlockSource> {
    table: &'a S,
    block: usize,
    first_word: usize,
}

// Not derived: a derive would ask `S: Copy`, where only the reference is copied.
impl<S: BlockSource> Clone for BlockReader<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: BlockSource> Copy for BlockReader<'_, S> {}

impl<'a, S: BlockSource> BlockReader<'a, S> {
    /// A reader of block `block` (`< table.blocks()`).
    #[inline(always)]
    pub(crate) fn new(table: &'a S, block: usize) -> Self {
        let first_word = block * block_words(table.remainder_bits());
        BlockReader {
            table,
            block,
            first_word,
        }
    }

    /// The block's `occupieds` word.
    #[inline(always)]
    pub(crate) fn occupieds(&self) -> u64 {
        self.table.load_word(self.first_word)
    }

    /// The block's `runends` word.
    #[inline(always)]
    pub(crate) fn runends(&self) -> u64 {
        self.table.load_word(self.first_word + 1)
    }

    /// The block's stored (possibly saturated) spill.
    #[inline(always)]
    pub(crate) fn stored_spill(&self) -> u64 {
        self.table.stored_spill(self.block)
    }

    /// The remainder of the block's slot `i` (`< 64`).
    #[inline(always)]
    pub(crate) fn remainder(&self, i: usize) -> u64 {
        let r = self.table.remainder_bits();
        packed_remainder(i, r, |index| self.table.load_word(self.first_word + index))
    }

    /// The block's remainder bits from slot `i` (`< 64`) on: slots `i`, `i + 1`, ... in `r`-bit
    /// lanes, lowest first, as far as they lie in the block and in 64 bits.
    #[inline(always)]
    pub(crate) fn remainders_from(&self, i: usize) -> u64 {
        let r = self.table.remainder_bits();
        packed_bits(i, r, |index| self.table.load_word(self.first_word + index))
    }

    /// The remainder of slot `i < 128` counted from the block's first: of the block, or for
    /// `i >= 64` of the next one (whose words follow this block's; it must exist).
    #[inline(always)]
    pub(crate) fn remainder_or_next(&self, i: usize) -> u64 {
        let r = self.table.remainder_bits();
        let first_word = self.first_word + i / BLOCK_SLOTS * block_words(r);
        packed_remainder(i % BLOCK_SLOTS, r, |index| {
            self.table.load_word(first_word + index)
        })
    }
}

impl<'a> View<'a, Blocks> {
    /// Block `block`, to write.
    #[inline]
    fn block(&self, block: usize) -> BlockWriter<'a> {
        self.touch(block);
        BlockWriter::new(self.table, block)
    }

    /// Replaces the `occupieds` word of a block.
    #[inline]
    pub(crate) fn set_occupieds(&self, block: usize, word: u64) {
        self.block(block).set_occupieds(word);
    }

    /// Replaces the `runends` word of a block.
    #[inline]
    pub(crate) fn set_runends(&self, block: usize, word: u64) {
        self.block(block).set_runends(word);
    }

    /// Sets or clears the occupied bit of `quotient`.
    #[inline]
    pub(crate) fn set_occupied(&self, quotient: usize, value: bool) {
        let block = quotient / BLOCK_SLOTS;
        let bit = 1u64 << (quotient % BLOCK_SLOTS);
        let word = self.occupieds(block);
        self.set_occupieds(block, if value { word | bit } else { word & !bit });
    }

    /// Sets or clears the runend bit of `slot`.
    #[inline]
    pub(crate) fn set_runend(&self, slot: usize, value: bool) {
        let block = slot / BLOCK_SLOTS;
        let bit = 1u64 << (slot % BLOCK_SLOTS);
        let word = self.runends(block);
        self.set_runends(block, if value { word | bit } else { word & !bit });
    }

    /// Stores `value` (`< 2^r`) as the remainder of slot `slot`.
    #[inline]
    pub(crate) fn set_remainder(&self, slot: usize, value: u64) {
        self.block(slot / BLOCK_SLOTS)
            .set_remainder(slot % BLOCK_SLOTS, value);
    }

    /// Moves the remainders and runend bits of slots `from..to` one slot up, to
    /// `from + 1..=to` (`from < to`), across blocks: slot `to`'s old content is overwritten,
    /// slot `from` keeps its own. Block by block from the highest, each block one
    /// [`BlockWriter::shift_up`] whose slot 0, when the shift crosses into it, takes the block
    /// below's slot 63 (read before that block moves).
    pub(crate) fn shift_up(&self, from: usize, to: usize) {
        debug_assert!(from < to && to < self.table.slots());
        let first_block = from / BLOCK_SLOTS;
        let mut block = to / BLOCK_SLOTS;
        let mut hi = to % BLOCK_SLOTS;
        while block > first_block {
            let below = self.block(block - 1).top_edge();
            self.block(block).shift_up(0, hi, below);
            block -= 1;
            hi = BLOCK_SLOTS - 1;
        }
        let first = from % BLOCK_SLOTS + 1;
        if first <= hi {
            self.block(block).shift_up(first, hi, Edge::NONE);
        }
    }

    /// Moves the remainders and runend bits of slots `from + 1..=to` one slot down, to
    /// `from..to` (`from < to`), across blocks: slot `from`'s old content is overwritten, slot
    /// `to` keeps its own. Block by block from the lowest, each block one
    /// [`BlockWriter::shift_down`] whose slot 63, when the shift crosses out of it, takes the
    /// block above's slot 0 (read before that block moves).
    pub(crate) fn shift_down(&self, from: usize, to: usize) {
        debug_assert!(from < to && to < self.table.slots());
        let last_block = (to - 1) / BLOCK_SLOTS;
        let mut block = from / BLOCK_SLOTS;
        let mut lo = from % BLOCK_SLOTS;
        while block < last_block {
            let above = self.block(block + 1).bottom_edge();
            self.block(block).shift_down(lo, BLOCK_SLOTS - 1, above);
            block += 1;
            lo = 0;
        }
        // The last destination slot is `to - 1`; slot `to` is in this block or, when `to - 1`
        // is the block's slot 63, it is the next block's slot 0.
        let last = (to - 1) % BLOCK_SLOTS;
        let above = if last == BLOCK_SLOTS - 1 {
            self.block(block + 1).bottom_edge()
        } else {
            Edge::NONE
        };
        self.block(block).shift_down(lo, last, above);
    }

    /// Stores the spill of a block, saturated at [`SPILL_SATURATED`].
    #[inline]
    pub(crate) fn set_spill(&self, block: usize, spill: usize) {
        let new = (spill as u64).min(SPILL_SATURATED);
        let old = self.stored_spill(block);
        if new != old {
            // Relaxed: an atomic XOR changes only this block's byte, so writers of the other
            // blocks sharing the word (other regions) are not disturbed; the region lock orders
            // this write before the next reader of the block.
            self.table.spills[block / 8]
                .fetch_xor((old ^ new) << (8 * (block % 8)), Ordering::Relaxed);
        }
    }
}

/// One block of a live table, read and written in place without recording a reach: the
/// word-level steps every write of a [`View`] is made of, and the whole of a change that stays
/// inside one block (`update::update_in_block`), whose reach is that block.
///
/// All accesses are `Relaxed`: only the holder of the block's region writes it (see `locks`),
/// or the owner of `&mut` to the filter.
#[derive(Clone, Copy)]
pub(crate) struct BlockWriter<'a> {
    /// The block's `2 + r` words.
    words: &'a [AtomicU64],
    remainder_bits: u32,
}

impl<'a> BlockWriter<'a> {
    /// A writer of block `block` (`< table.blocks()`).
    #[inline(always)]
    pub(crate) fn new(table: &'a Blocks, block: usize) -> Self {
        let first = block * table.block_words;
        BlockWriter {
            words: &table.words[first..first + table.block_words],
            remainder_bits: table.remainder_bits,
        }
    }

    #[inline(always)]
    fn load(&self, index: usize) -> u64 {
        // Relaxed: see the type's doc.
        crate::sync::load_word(&self.words[index], Ordering::Relaxed)
    }

    #[inline(always)]
    fn store(&self, index: usize, word: u64) {
        // Relaxed: see the type's doc.
        crate::sync::store_word(&self.words[index], word, Ordering::Relaxed);
    }

    /// The block's `occupieds` word.
    #[inline(always)]
    pub(crate) fn occupieds(&self) -> u64 {
        self.load(0)
    }

    /// The block's `runends` word.
    #[inline(always)]
    pub(crate) fn runends(&self) -> u64 {
        self.load(1)
    }

    /// Replaces the block's `occupieds` word.
    #[inline(always)]
    pub(crate) fn set_occupieds(&self, word: u64) {
        self.store(0, word);
    }

    /// Replaces the block's `runends` word.
    #[inline(always)]
    pub(crate) fn set_runends(&self, word: u64) {
        self.store(1, word);
    }

    /// The remainder of the block's slot `i` (`< 64`).
    #[inline(always)]
    pub(crate) fn remainder(&self, i: usize) -> u64 {
        packed_remainder(i, self.remainder_bits, |index| self.load(index))
    }

    /// The block's remainder bits from slot `i` (`< 64`) on, as
    /// [`BlockReader::remainders_from`] reads them.
    #[inline(always)]
    pub(crate) fn remainders_from(&self, i: usize) -> u64 {
        packed_bits(i, self.remainder_bits, |index| self.load(index))
    }

    /// Stores `value` (`< 2^r`) as the remainder of the block's slot `i` (`< 64`).
    #[inline]
    pub(crate) fn set_remainder(&self, i: usize, value: u64) {
        let r = self.remainder_bits;
        let bit = i * r as usize;
        let (index, offset) = (2 + bit / 64, (bit % 64) as u32);
        let mask = low_mask_below_64(r);
        let old = self.load(index);
        self.store(index, (old & !(mask << offset)) | (value << offset));
        if offset + r > 64 {
            let spilled = 64 - offset;
            let old = self.load(index + 1);
            self.store(index + 1, (old & !(mask >> spilled)) | (value >> spilled));
        }
    }

    /// The block's top edge, for a shift up into the next block: its runend bits and its last
    /// remainder word, whose top `r` bits are slot 63 (a block's `64 r` remainder bits fill its
    /// `r` words exactly).
    #[inline(always)]
    pub(crate) fn top_edge(&self) -> Edge {
        Edge {
            runends: self.runends(),
            remainder_word: self.load(1 + self.remainder_bits as usize),
        }
    }

    /// The block's bottom edge, for a shift down into the previous block: its runend bits and
    /// its first remainder word, whose bottom `r` bits are slot 0.
    #[inline(always)]
    pub(crate) fn bottom_edge(&self) -> Edge {
        Edge {
            runends: self.runends(),
            remainder_word: self.load(2),
        }
    }

    /// Moves the remainders and runend bits of the block's slots `first - 1..hi` one slot up,
    /// to `first..=hi` (`first <= hi < 64`): slot `hi`'s old content is overwritten. If `first`
    /// is 0, slot 0 takes slot 63 of the block below, whose [`top_edge`](Self::top_edge) is
    /// `below`; otherwise `below` is not read ([`Edge::NONE`] will do).
    ///
    /// A word at a time, highest first so every word is read before it is overwritten: the
    /// remainders are one run of `64 r` bits, so moving slots up is a shift by `r` bits, each
    /// word taking the top `r` bits of the word below (for word 0, the block below's last
    /// word, whose top `r` bits are its slot 63).
    #[inline]
    pub(crate) fn shift_up(&self, first: usize, hi: usize, below: Edge) {
        debug_assert!(first <= hi && hi < BLOCK_SLOTS);
        let runends = self.runends();
        let moved = runends << 1 | below.runends >> (BLOCK_SLOTS - 1);
        self.set_runends(blend(runends, moved, bit_range(first, hi + 1)));
        let r = self.remainder_bits as usize;
        let (start, end) = (first * r, (hi + 1) * r);
        let (first_word, last_word) = (start / 64, (end - 1) / 64);
        let (start_mask, end_mask) = word_masks(start, end);
        let word_below = |w: usize| {
            if w > 0 {
                self.load(2 + w - 1)
            } else {
                below.remainder_word
            }
        };
        let mut current = self.load(2 + last_word);
        if first_word == last_word {
            let shifted = (current << r) | (word_below(first_word) >> (64 - r));
            self.store(
                2 + first_word,
                blend(current, shifted, start_mask & end_mask),
            );
            return;
        }
        // The top word (in part), the words between (whole), then the bottom word (in part).
        let mut lower = self.load(2 + last_word - 1);
        let shifted = (current << r) | (lower >> (64 - r));
        self.store(2 + last_word, blend(current, shifted, end_mask));
        for w in (first_word + 1..last_word).rev() {
            current = lower;
            lower = self.load(2 + w - 1);
            self.store(2 + w, (current << r) | (lower >> (64 - r)));
        }
        current = lower;
        let shifted = (current << r) | (word_below(first_word) >> (64 - r));
        self.store(2 + first_word, blend(current, shifted, start_mask));
    }

    /// Moves the remainders and runend bits of the block's slots `lo + 1..=last + 1` one slot
    /// down, to `lo..=last` (`lo <= last < 64`): slot `lo`'s old content is overwritten. If
    /// `last` is 63, slot 63 takes slot 0 of the block above, whose
    /// [`bottom_edge`](Self::bottom_edge) is `above`; otherwise `above` is not read
    /// ([`Edge::NONE`] will do). A word at a time, lowest first, as [`shift_up`](Self::shift_up)
    /// in the other direction.
    #[inline]
    pub(crate) fn shift_down(&self, lo: usize, last: usize, above: Edge) {
        debug_assert!(lo <= last && last < BLOCK_SLOTS);
        let runends = self.runends();
        let moved = runends >> 1 | above.runends << (BLOCK_SLOTS - 1);
        self.set_runends(blend(runends, moved, bit_range(lo, last + 1)));
        let r = self.remainder_bits as usize;
        let (start, end) = (lo * r, (last + 1) * r);
        let (first_word, last_word) = (start / 64, (end - 1) / 64);
        let (start_mask, end_mask) = word_masks(start, end);
        let word_above = |w: usize| {
            if w + 1 < r {
                self.load(2 + w + 1)
            } else {
                above.remainder_word
            }
        };
        let mut current = self.load(2 + first_word);
        if first_word == last_word {
            let shifted = (current >> r) | (word_above(last_word) << (64 - r));
            self.store(
                2 + last_word,
                blend(current, shifted, start_mask & end_mask),
            );
            return;
        }
        // The bottom word (in part), the words between (whole), then the top word (in part).
        let mut upper = self.load(2 + first_word + 1);
        let shifted = (current >> r) | (upper << (64 - r));
        self.store(2 + first_word, blend(current, shifted, start_mask));
        for w in first_word + 1..last_word {
            current = upper;
            upper = self.load(2 + w + 1);
            self.store(2 + w, (current >> r) | (upper << (64 - r)));
        }
        current = upper;
        let shifted = (current >> r) | (word_above(last_word) << (64 - r));
        self.store(2 + last_word, blend(current, shifted, end_mask));
    }
}

/// What a shift that crosses a block boundary needs of the block on the other side: its
/// runend bits and the remainder word next to the boundary ([`BlockWriter::top_edge`],
/// [`BlockWriter::bottom_edge`]).
#[derive(Clone, Copy)]
pub(crate) struct Edge {
    runends: u64,
    remainder_word: u64,
}

impl Edge {
    /// For a shift that does not cross the boundary: the bits it would bring in are masked
    /// off.
    pub(crate) const NONE: Edge = Edge {
        runends: 0,
        remainder_word: 0,
    };
}

/// The bits `lo..hi` of a word, a range that is not empty (`lo < hi <= 64`, so `lo < 64`):
/// built without `low_mask`'s test for 64, as the shifts call it for every word they move.
#[inline]
pub(crate) fn bit_range(lo: usize, hi: usize) -> u64 {
    debug_assert!(lo < hi && hi <= 64);
    low_mask_nonzero(hi as u32) & !low_mask_below_64(lo as u32)
}

/// `new`'s bits where `mask` is set, `old`'s elsewhere.
#[inline(always)]
fn blend(old: u64, new: u64, mask: u64) -> u64 {
    (old & !mask) | (new & mask)
}

/// For the bit range `start..end` (`start < end`) of a block's `64 r` remainder bits: the
/// bits of the range's first word from `start` on and the bits of its last word below `end`
/// (a range inside one word is the two masks' intersection; the words between are whole).
#[inline]
fn word_masks(start: usize, end: usize) -> (u64, u64) {
    debug_assert!(start < end);
    (
        !low_mask_below_64((start % 64) as u32),
        low_mask_nonzero((end - 1) as u32 % 64 + 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view records exactly the blocks it touches outside its window, on both sides and at
    /// both of the window's edges.
    #[test]
    fn a_view_records_only_blocks_outside_its_window() {
        let table = Blocks::new(8, 4).expect("an 8-block table");
        let touched = |first: usize, last: usize, blocks: &[usize]| {
            let view = View::window(&table, first, last);
            for &block in blocks {
                view.occupieds(block);
            }
            view.reach()
        };
        assert_eq!(touched(2, 4, &[2, 3, 4]), None);
        assert_eq!(touched(2, 4, &[3, 1]), Some((1, 1)));
        assert_eq!(touched(2, 4, &[5, 3]), Some((5, 5)));
        assert_eq!(touched(2, 4, &[6, 0, 4]), Some((0, 6)));
        assert_eq!(touched(0, 0, &[0, 1]), Some((1, 1)));
        assert_eq!(touched(7, 7, &[7, 6]), Some((6, 6)));
        // The whole-table view records nothing.
        let view = View::new(&table);
        for block in 0..8 {
            view.occupieds(block);
        }
        assert_eq!(view.reach(), None);
    }

    /// Every slot of a 3-block table gets a distinct-looking value; both readers return it, for
    /// every width (remainders that straddle two words, and blocks whose last remainder ends
    /// exactly at the end of its last word).
    #[test]
    fn remainders_read_back_as_written_by_both_readers() {
        for r in 2..=62 {
            let table = Blocks::new(3, r).expect("a 3-block table");
            let view = View::new(&table);
            let value = |slot: usize| {
                crate::hash::remix(slot as u64 ^ u64::from(r)) & crate::hash::low_mask(r)
            };
            for slot in 0..table.slots() {
                view.set_remainder(slot, value(slot));
            }
            for slot in 0..table.slots() {
                assert_eq!(
                    view.remainder(slot),
                    value(slot),
                    "View, r = {r}, slot {slot}"
                );
                let block = BlockReader::new(&table, slot / BLOCK_SLOTS);
                assert_eq!(
                    block.remainder(slot % BLOCK_SLOTS),
                    value(slot),
                    "BlockReader, r = {r}, slot {slot}"
                );
            }
        }
    }
}
