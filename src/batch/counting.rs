//! Bulk build, batch insert, removal and lookup, and merge of [`CountingQf`], the rank-and-select
//! layout with counters (paper 004 §III-B and §V-C, the extension point of [`batch`](super)).
//! Batch lookups share [`lookup`]'s prefetching and sorted orders. Batch inserts and removals
//! without a merge are the paper's rank-and-select inserts (§V-B), not supercluster rounds
//! (§VI-d: superclusters sharing a block would race on its metadata words): the sorted batch is
//! cut into regions of the table, here about one range per thread, and each thread makes its
//! range's updates in table order. Where §V-B halts an insert that would leave its region and
//! retries it with larger regions, a range's updates take the filter's own region locks, so the
//! threads work in disjoint stretches of the table and only updates near a range's edge ever
//! wait for each other.
//!
//! The elements sit in the same slots as in the 3-bit layout, except that a fingerprint with
//! count `c` takes the slots of its counter-coded entry (`counter_code`), so the saturating scan
//! of [`layout`](super::layout) runs unchanged over runs whose heads count *slots* before them.
//! All three [`BuildMethod`]s therefore apply as they are. The writer then fills the blocks in
//! parallel, each thread owning a range of whole blocks (so no two threads write the same word
//! but the spill words, each the bytes of eight blocks, which they change with an atomic XOR of
//! their own bytes): remainders from the encoded entries, runend bits at run ends, occupied bits
//! at quotients, and every block's spill (its offset) from the run ends. The loom model
//! `counting_build_writers_of_neighbouring_blocks_lose_no_bit` runs two block writers at once.
//! The result equals, bit for bit, the table the same multiset inserted one by one gives (the
//! layout of a quotient filter depends only on what it holds, and the counter code of a count
//! is unique).

use crate::filter::{Error, Merge};
use crate::hash::low_mask;
use crate::qf::counting::blocks::{BlockSource, Blocks, View, BLOCK_SLOTS};
use crate::qf::counting::counter_code;
use crate::qf::counting::CountingQf;
use crate::qf::load_cap::load_cap;
use crate::sizing::{self, MAX_QUOTIENT_BITS};

use super::keys::{counted_keys, merge_counted};
use super::layout::{run_heads, run_starts};
use super::lookup::{self, BatchTable};
use super::{crowded, par, BatchInsert, BatchLookup, BuildMethod};

/// The fill [`Merge`] sizes the result for (as [`CountingQf::new`]).
const MERGE_LOAD: f64 = 0.95;

/// Writes the sorted, distinct fingerprint `keys` with their `counts` (each at least 1) into
/// `filter`, which must be empty: plans where every run goes, writes the blocks in parallel
/// ranges of whole blocks, then counts each region.
///
/// # Errors
/// [`Error::Full`] if the entries take more slots than the load cap allows or the last run
/// would end past the table's last slot; the filter is then unchanged.
pub(crate) fn build(
    filter: &CountingQf,
    keys: &[u64],
    counts: &[u64],
    method: BuildMethod,
) -> Result<(), Error> {
    let Some(layout) = BuildLayout::plan(filter, keys, counts, method)? else {
        return Ok(());
    };
    par::map_chunks(filter.table.blocks(), 64, |blocks| {
        layout.write_blocks(&filter.table, blocks);
    });
    layout.finish(filter);
    Ok(())
}

/// Where a bulk build puts every run of a counting filter: what each block writer needs,
/// computed once. Run `k` is the fingerprints of one quotient, `keys[entries(k)]`.
pub(crate) struct BuildLayout<'k> {
    keys: &'k [u64],
    counts: &'k [u64],
    remainder_bits: u32,
    /// The index in `keys` of each run's first fingerprint.
    heads: Vec<usize>,
    /// The slots each run's counter-coded entries take.
    lengths: Vec<usize>,
    /// Each run's first slot.
    first: Vec<usize>,
    /// The slots all runs take.
    total: usize,
}

impl<'k> BuildLayout<'k> {
    /// Lays out the sorted, distinct `keys` with their `counts` (each at least 1) for the empty
    /// `filter` with `method`; `None` when there are no keys.
    ///
    /// # Errors
    /// As [`build`].
    pub(crate) fn plan(
        filter: &CountingQf,
        keys: &'k [u64],
        counts: &'k [u64],
        method: BuildMethod,
    ) -> Result<Option<Self>, Error> {
        debug_assert_eq!(keys.len(), counts.len());
        if keys.is_empty() {
            return Ok(None);
        }
        let (q, r) = (filter.quotient_bits(), filter.remainder_bits());
        let mut layout = BuildLayout {
            keys,
            counts,
            remainder_bits: r,
            heads: run_heads(keys, r),
            lengths: Vec::new(),
            first: Vec::new(),
            total: 0,
        };
        let mask = low_mask(r);
        let entry_len = |i: usize| counter_code::entry_len(keys[i] & mask, counts[i], r);
        layout.lengths = par::map_chunks(layout.runs(), par::MIN_PARALLEL, |range| {
            range
                .map(|k| layout.entries(k).map(entry_len).sum::<usize>())
                .collect::<Vec<_>>()
        })
        .concat();
        // The slots before each run.
        let mut slot_heads = Vec::with_capacity(layout.runs());
        for &length in &layout.lengths {
            slot_heads.push(layout.total);
            layout.total += length;
        }
        if layout.total > load_cap(q) {
            return Err(Error::Full);
        }
        layout.first = run_starts(&slot_heads, |k| layout.quotient(k), q, method);
        if layout.end(layout.runs() - 1) >= filter.table.slots() {
            return Err(Error::Full);
        }
        Ok(Some(layout))
    }

    /// How many runs (distinct quotients) there are.
    fn runs(&self) -> usize {
        self.heads.len()
    }

    /// The indices in `keys` of run `k`'s fingerprints.
    fn entries(&self, k: usize) -> std::ops::Range<usize> {
        self.heads[k]..self.heads.get(k + 1).copied().unwrap_or(self.keys.len())
    }

    /// Run `k`'s canonical slot.
    fn quotient(&self, k: usize) -> usize {
        (self.keys[self.heads[k]] >> self.remainder_bits) as usize
    }

    /// Run `k`'s last slot.
    fn end(&self, k: usize) -> usize {
        self.first[k] + self.lengths[k] - 1
    }

    /// The first run for which `before` is false (it must be monotone: true, then false).
    fn first_run_not(&self, before: impl Fn(usize) -> bool) -> usize {
        let (mut low, mut high) = (0, self.runs());
        while low < high {
            let mid = low + (high - low) / 2;
            if before(mid) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// Writes blocks `blocks` of `table` (empty, the one planned for): the remainders and
    /// runend bits of the runs that reach into them, the occupied bits of their quotients and
    /// their spills. Threads that write disjoint ranges of blocks write disjoint words, but for
    /// the spill words (see the module doc).
    pub(crate) fn write_blocks(&self, table: &Blocks, blocks: std::ops::Range<usize>) {
        let view = View::new(table);
        let (r, mask) = (self.remainder_bits, low_mask(self.remainder_bits));
        let (from, to) = (blocks.start * BLOCK_SLOTS, blocks.end * BLOCK_SLOTS);
        let runs = self.runs();
        let mut k = self.first_run_not(|k| self.end(k) < from);
        while k < runs && self.first[k] < to {
            let mut at = self.first[k];
            for i in self.entries(k) {
                let entry = counter_code::encode(self.keys[i] & mask, self.counts[i], r);
                for (slot, &value) in (at..).zip(entry.slots()) {
                    if (from..to).contains(&slot) {
                        view.set_remainder(slot, value);
                    }
                }
                at += entry.len();
                if at >= to {
                    break;
                }
            }
            if (from..to).contains(&self.end(k)) {
                view.set_runend(self.end(k), true);
            }
            k += 1;
        }
        let mut k = self.first_run_not(|k| self.quotient(k) < from);
        while k < runs && self.quotient(k) < to {
            view.set_occupied(self.quotient(k), true);
            k += 1;
        }
        // Spills: the slots past each block's start that runs of lower quotients use.
        let mut below = self.first_run_not(|k| self.quotient(k) < from);
        for block in blocks.filter(|&block| block > 0) {
            let start = block * BLOCK_SLOTS;
            while below < runs && self.quotient(below) < start {
                below += 1;
            }
            if below > 0 {
                view.set_spill(block, (self.end(below - 1) + 1).saturating_sub(start));
            }
        }
    }

    /// Once every block is written: counts each region's copies and distinct fingerprints
    /// (by the block of the quotient, as the one-by-one inserts keep them) and the slots used.
    pub(crate) fn finish(&self, filter: &CountingQf) {
        let (keys, r) = (self.keys, self.remainder_bits);
        let region_slots = filter.region_blocks() * BLOCK_SLOTS;
        let regions = filter.table.blocks().div_ceil(filter.region_blocks());
        let sums = par::map_chunks(regions, 16, |range| {
            range
                .map(|region| {
                    let start =
                        keys.partition_point(|&key| ((key >> r) as usize) < region * region_slots);
                    let stop = keys.partition_point(|&key| {
                        ((key >> r) as usize) < (region + 1) * region_slots
                    });
                    let copies: u128 = self.counts[start..stop]
                        .iter()
                        .map(|&c| u128::from(c))
                        .sum();
                    (region, copies, (stop - start) as u64)
                })
                .collect::<Vec<_>>()
        });
        for (region, copies, distinct) in sums.into_iter().flatten() {
            if distinct > 0 {
                filter
                    .locks
                    .add(region * filter.region_blocks(), copies, distinct);
            }
        }
        filter.set_slots(self.total);
    }
}

/// The stored fingerprints of a filter as keys (`quotient << r | remainder`) with counts, in
/// increasing order (the extraction step of paper 004 §IV-E). The walk holds every region of
/// the filter: without them, a writer shifting a run under it would end the iteration early and
/// drop every later key. A merge reads its two filters one after the other, never holding both,
/// so two merges of the same pair in opposite orders cannot wait for each other.
fn filter_keys(filter: &CountingQf) -> (Vec<u64>, Vec<u64>) {
    let r = filter.remainder_bits();
    filter.locks.with_all_held(|| {
        filter
            .counts()
            .map(|(f, count)| ((f.quotient << r) | f.remainder, count))
            .unzip()
    })
}

/// A new, empty filter like `filter` (same bits and region size) holding `keys` with `counts`.
fn rebuilt(
    quotient_bits: u32,
    remainder_bits: u32,
    region_blocks: usize,
    keys: &[u64],
    counts: &[u64],
    method: BuildMethod,
) -> Result<CountingQf, Error> {
    let filter = CountingQf::with_bits_and_region(quotient_bits, remainder_bits, region_blocks)?;
    build(&filter, keys, counts, method)?;
    Ok(filter)
}

/// How many slots a range insert may walk per slot a merge rewrites before `Auto` merges (see
/// [`crowded`]): the ranges walked about 0.2 ns a slot (64,000 keys in 64 canonical slots of a
/// `2^20`-slot table, 425 ms; a merge 2.0 ms there) and a merge rewrites 20-50 ns a slot of a
/// full table (method doc of `insert_batch_with`), so only a batch whose walk passes 256 slots
/// per slot is merged.
const COUNTING_WALK_PER_SLOT_FOR_MERGE: u64 = 256;

impl CountingQf {
    /// A filter with `2^quotient_bits` slots of `remainder_bits` remainder bits holding the
    /// fingerprints of `hashes` with their multiplicities, built in bulk (paper 004 §IV-C):
    /// sort, count repeats, lay the runs out with `method` (each entry taking the slots of its
    /// counter), and write all blocks in parallel. The table is exactly the one inserting the
    /// hashes one by one gives. All three methods work here, as the layout only needs each run's
    /// length in slots; [`BuildMethod::SegmentedLayouts`] (the default) is the fastest.
    ///
    /// ```
    /// use conqf::{BuildMethod, Count, CountingQf, Filter};
    /// let mut hashes: Vec<u64> = (0..10_000u64).map(|k| conqf::hash_key(&k)).collect();
    /// hashes.extend([conqf::hash_key(&7u64); 99]);
    /// let filter = CountingQf::bulk_build(14, 12, &hashes, BuildMethod::default())?;
    /// assert_eq!(filter.len(), 10_099);
    /// assert_eq!(filter.distinct(), 10_000);
    /// assert_eq!(filter.count(&7u64), 100);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] and [`Error::OutOfMemory`] as for
    /// [`with_bits`](Self::with_bits); [`Error::Full`] if the entries do not fit.
    pub fn bulk_build(
        quotient_bits: u32,
        remainder_bits: u32,
        hashes: &[u64],
        method: BuildMethod,
    ) -> Result<Self, Error> {
        let filter = CountingQf::with_bits(quotient_bits, remainder_bits)?;
        let (keys, counts) = counted_keys(hashes, quotient_bits + remainder_bits);
        build(&filter, &keys, &counts, method)?;
        Ok(filter)
    }

    /// Inserts one copy per hash ([`BatchInsert::Auto`], which on this filter is the parallel
    /// ranges of [`insert_batch_with`](Self::insert_batch_with), or a merge for a batch crowded
    /// into long clusters of its own). Returns how many fingerprints
    /// were not stored before (what the one-by-one [`insert_hash`](crate::Filter::insert_hash)es
    /// would count as `true`).
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let mut filter = CountingQf::with_bits(12, 10)?;
    /// filter.insert(&1u64)?;
    /// let mut hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&k)).collect();
    /// hashes.push(conqf::hash_key(&1u64));
    /// assert_eq!(filter.insert_batch(&hashes)?, 999); // key 1 was there already
    /// assert_eq!(filter.count(&1u64), 3);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] if the entries do not fit. A merge-insert then leaves the filter
    /// unchanged; the range inserts keep the ones that fitted (with several threads, which ones
    /// depends on the threads' timing). [`Error::OutOfMemory`] if a merge-insert cannot
    /// allocate its new table (the filter is then unchanged).
    pub fn insert_batch(&mut self, hashes: &[u64]) -> Result<usize, Error> {
        self.insert_batch_with(hashes, BatchInsert::Auto)
    }

    /// [`insert_batch`](Self::insert_batch) with a chosen strategy. On the rank-and-select
    /// layout, [`BatchInsert::Superclusters`] and [`BatchInsert::Sweep`] take the paper's
    /// inserts by region (§V-B) in
    /// place of supercluster rounds (superclusters sharing a block would race on its metadata
    /// words): it cuts the sorted batch into about one range per thread and inserts each range
    /// in table order (consecutive inserts touch nearby blocks) under the region locks, the
    /// ranges at once, and
    /// [`BatchInsert::Merge`] extracts the stored entries, adds the batch's counts and bulk
    /// builds a new table (paper 004 §IV-E). `Auto` takes the ranges, unlike
    /// [`BatchInsert::choose`]'s rule for the 3-bit filters: at `2^22` slots of r = 11, in
    /// milliseconds as ranges / merge (medians of 3, 2 threads, throwaway program, 2026-11-28;
    /// batch as a share of the empty slots), 30% full: 10 / 118 (1/8), 42 / 157 (0.71); 50%: 6 /
    /// 85, 33 / 150; 70%: 4 / 138, 25 / 168; 90%: 3 / 175, 22 / 210; empty: 35 / 92 (1/2), 68 /
    /// 161 (0.9 of the slots), and on one thread 65 / 113 and 129 / 207. A merge rewrites the
    /// whole table; the ranges' work grows with the batch, times the length of the clusters it
    /// goes into. So `Auto` merges a batch crowded into clusters of its own so long that the
    /// ranges would walk more than 256 slots per slot a merge rewrites (64,000 keys in 64
    /// canonical slots of an empty `2^20`-slot table: 425 ms by the ranges, 2.0 ms merged).
    ///
    /// ```
    /// use conqf::{BatchInsert, BuildMethod, Count, CountingQf};
    /// let mut filter = CountingQf::with_bits(12, 10)?;
    /// let hashes = vec![conqf::hash_key(&5u64); 1000];
    /// let merge = BatchInsert::Merge(BuildMethod::ParallelMerging);
    /// assert_eq!(filter.insert_batch_with(&hashes, merge)?, 1);
    /// assert_eq!(filter.count(&5u64), 1000);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`insert_batch`](Self::insert_batch).
    pub fn insert_batch_with(
        &mut self,
        hashes: &[u64],
        strategy: BatchInsert,
    ) -> Result<usize, Error> {
        let (q, r) = (self.quotient_bits(), self.remainder_bits());
        let (keys, counts) = counted_keys(hashes, q + r);
        let strategy = match strategy {
            BatchInsert::Auto => self.auto_strategy(&keys),
            chosen => chosen,
        };
        let before = self.distinct();
        match strategy {
            BatchInsert::Merge(method) => {
                let (stored, stored_counts) = filter_keys(self);
                let (union, union_counts) =
                    merge_counted((&stored, &stored_counts), (&keys, &counts));
                *self = rebuilt(q, r, self.region_blocks(), &union, &union_counts, method)?;
            }
            BatchInsert::Superclusters | BatchInsert::Sweep | BatchInsert::Auto => {
                self.insert_ranges(&keys, &counts, u64::saturating_add)?;
            }
        }
        Ok(self.distinct() - before)
    }

    /// What [`BatchInsert::Auto`] does with the sorted, distinct fingerprint `keys`: a merge
    /// for a batch crowded into long clusters of its own, which the ranges would insert in time
    /// quadratic in their length, else the ranges, which won at every fill and batch size
    /// measured ([`insert_batch_with`](Self::insert_batch_with)).
    pub(super) fn auto_strategy(&self, keys: &[u64]) -> BatchInsert {
        let slots = 1usize << self.quotient_bits();
        let rewritten = slots + self.distinct();
        if crowded(
            keys,
            self.remainder_bits(),
            rewritten,
            COUNTING_WALK_PER_SLOT_FOR_MERGE,
        ) {
            BatchInsert::Merge(BuildMethod::default())
        } else {
            BatchInsert::Superclusters
        }
    }

    /// Inserts every hash (a hash named `k` times adds `k` copies) as
    /// [`insert_batch_with`](Self::insert_batch_with)`(.., BatchInsert::Superclusters)` does,
    /// through `&self`: the sorted batch cut into about one range per thread, each range
    /// inserted in table order, every distinct fingerprint's copies in one update under the
    /// region locks, with the guarantees of [`insert_count_hash`](crate::Count::insert_count_hash).
    /// Other threads may use the filter meanwhile (and call this too). Returns how many
    /// fingerprints were not stored before: each update sees whether its fingerprint was new,
    /// so of racing batches holding one new fingerprint, exactly one counts it (unless another
    /// thread removes it in between, when a later one counts it anew).
    ///
    /// ```
    /// use conqf::{Count, CountingQf};
    /// let filter = CountingQf::with_bits(12, 10)?;
    /// let hashes: Vec<u64> = (0..1000u64).map(|k| conqf::hash_key(&(k % 500))).collect();
    /// let (low, high) = hashes.split_at(500);
    /// let new = std::thread::scope(|s| {
    ///     let a = s.spawn(|| filter.insert_batch_concurrent(low));
    ///     let b = s.spawn(|| filter.insert_batch_concurrent(high));
    ///     a.join().unwrap().unwrap() + b.join().unwrap().unwrap()
    /// });
    /// assert_eq!(new, 500);
    /// assert_eq!(filter.count(&7u64), 2);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] if the entries do not fit: the ranges keep the ones that fitted (with
    /// several threads, which ones depends on the threads' timing), and how many of them were
    /// new is not returned.
    pub fn insert_batch_concurrent(&self, hashes: &[u64]) -> Result<usize, Error> {
        let (keys, counts) = counted_keys(hashes, self.quotient_bits() + self.remainder_bits());
        self.insert_ranges(&keys, &counts, u64::saturating_add)
    }

    /// Stores each fingerprint of `hashes` that is not stored yet, with count 1, and leaves the
    /// count of every stored one as it is: the batch form of
    /// [`insert_if_absent_hash`](crate::Count::insert_if_absent_hash), for a filter used as a
    /// set whose keys may come again. Returns how many fingerprints it stored. As
    /// [`insert_batch_concurrent`](Self::insert_batch_concurrent) it takes `&self`, cuts the
    /// sorted batch into about one range per thread and makes each fingerprint's update under
    /// the region locks, so of racing calls (batch or not) for one absent fingerprint exactly
    /// one stores it and counts it.
    ///
    /// The sort costs more than the table order saves on one thread: with `2^22` slots of
    /// r = 10 holding 1.15M keys, 2.3M keys (half of them those) went in at 23.0-24.1 M/s by
    /// this call against 32.5-33.8 by `insert_if_absent_hash` one by one in random order, and
    /// at 35.4-40.9 M/s by this call on two threads (three rounds each, a throwaway program,
    /// 2026-12-01).
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let filter = CountingQf::with_bits(12, 10)?;
    /// filter.insert(&1u64)?;
    /// filter.insert(&1u64)?;
    /// let hashes: Vec<u64> = [1u64, 2, 3, 2].iter().map(conqf::hash_key).collect();
    /// assert_eq!(filter.insert_batch_if_absent(&hashes)?, 2); // 2 and 3, once each
    /// assert_eq!(filter.count(&1u64), 2); // stored before: unchanged
    /// assert_eq!(filter.count(&2u64), 1);
    /// assert_eq!(filter.insert_batch_if_absent(&hashes)?, 0);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`insert_batch_concurrent`](Self::insert_batch_concurrent): [`Error::Full`] if the
    /// new fingerprints do not fit (the ranges keep the ones that fitted).
    pub fn insert_batch_if_absent(&self, hashes: &[u64]) -> Result<usize, Error> {
        let (keys, counts) = counted_keys(hashes, self.quotient_bits() + self.remainder_bits());
        self.insert_ranges(&keys, &counts, |count, _| count.max(1))
    }

    /// The range inserts of the sorted, distinct fingerprint `keys` with their `counts`: each
    /// fingerprint's count becomes `new_count(its count, its count in the batch)` (which must
    /// not be 0) in one update. Returns how many were not stored before.
    fn insert_ranges(
        &self,
        keys: &[u64],
        counts: &[u64],
        new_count: impl Fn(u64, u64) -> u64 + Sync,
    ) -> Result<usize, Error> {
        let bits = self.quotient_bits() + self.remainder_bits();
        let new = update_in_ranges(keys, counts, bits, |hash, count| {
            let (old, _) = self.update::<false>(hash, |c| new_count(c, count))?;
            Ok(u64::from(old == 0))
        })?;
        Ok(new as usize)
    }
}

impl CountingQf {
    /// Removes one copy per hash (a hash named `k` times removes up to `k` copies); returns how
    /// many copies it removed. Takes `&self`: each distinct fingerprint of the sorted batch
    /// loses its copies in one update, under the locks and with the guarantees of
    /// [`remove_hash`](crate::Remove::remove_hash), the batch cut into about one range per
    /// thread, each removed in table order, the ranges at once (by region, as the paper's
    /// §V-C suggests for this layout's deletes; see
    /// [`insert_batch_with`](Self::insert_batch_with)).
    ///
    /// ```
    /// use conqf::{Count, CountingQf, Filter};
    /// let filter = CountingQf::with_bits(12, 10)?;
    /// filter.insert_count(&1u64, 3)?;
    /// filter.insert(&2u64)?;
    /// let h = |k: u64| conqf::hash_key(&k);
    /// // Two copies of 1, one of 2, and 9, which is not there.
    /// assert_eq!(filter.remove_batch(&[h(1), h(2), h(1), h(9)])?, 3);
    /// assert_eq!((filter.count(&1u64), filter.count(&2u64)), (1, 0));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// None today; the `Result` matches [`Remove::remove_hash`](crate::Remove::remove_hash).
    pub fn remove_batch(&self, hashes: &[u64]) -> Result<u64, Error> {
        let bits = self.quotient_bits() + self.remainder_bits();
        let (keys, counts) = counted_keys(hashes, bits);
        update_in_ranges(&keys, &counts, bits, |hash, count| {
            self.remove_count_hash(hash, count)
        })
    }

    /// [`remove_batch`](Self::remove_batch) under the name the other concurrent filters give
    /// their `&self` batch removal, returning the count as they do: the same ranges, beside
    /// other threads.
    ///
    /// ```
    /// use conqf::{CountingQf, Filter};
    /// let filter = CountingQf::with_bits(12, 10)?;
    /// let hashes: Vec<u64> = (0..100u64).map(|k| conqf::hash_key(&k)).collect();
    /// filter.insert_batch_concurrent(&hashes)?;
    /// assert_eq!(filter.remove_batch_concurrent(&hashes[..40])?, 40);
    /// assert_eq!(filter.len(), 60);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`remove_batch`](Self::remove_batch).
    pub fn remove_batch_concurrent(&self, hashes: &[u64]) -> Result<usize, Error> {
        // A batch removes at most one copy per hash, so the count fits a `usize`.
        self.remove_batch(hashes).map(|removed| removed as usize)
    }

    /// Answers [`contains_hash`](crate::Filter::contains_hash) for every hash into `out`,
    /// prefetching a window of queries ahead and splitting the batch over threads (paper 004
    /// §IV-A). Takes `&self`; each query is a `contains_hash`, with its guarantees.
    ///
    /// ```
    /// use conqf::{CountingQf, Filter};
    /// let filter = CountingQf::with_bits(12, 10)?;
    /// filter.insert(&7u64)?;
    /// let queries = [conqf::hash_key(&7u64), conqf::hash_key(&8u64)];
    /// let mut found = [false; 2];
    /// filter.contains_batch(&queries, &mut found)?;
    /// assert!(found[0]);
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `hashes` and `out` differ in length.
    pub fn contains_batch(&self, hashes: &[u64], out: &mut [bool]) -> Result<(), Error> {
        self.contains_batch_with(hashes, out, BatchLookup::Auto)
    }

    /// [`contains_batch`](Self::contains_batch) in a chosen order: prefetching in the caller's
    /// order, or radix-partitioned by quotient to read the table in order ([`BatchLookup`]).
    ///
    /// ```
    /// use conqf::{BatchLookup, BuildMethod, CountingQf};
    /// let hashes: Vec<u64> = (0..5000u64).map(|k| conqf::hash_key(&k)).collect();
    /// let filter = CountingQf::bulk_build(14, 8, &hashes, BuildMethod::default())?;
    /// let mut found = vec![false; hashes.len()];
    /// filter.contains_batch_with(&hashes, &mut found, BatchLookup::Sorted)?;
    /// assert!(found.iter().all(|&f| f));
    /// # Ok::<(), conqf::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameters`] if `hashes` and `out` differ in length.
    pub fn contains_batch_with(
        &self,
        hashes: &[u64],
        out: &mut [bool],
        order: BatchLookup,
    ) -> Result<(), Error> {
        lookup::contains_batch(self, hashes, out, order, |(quotient, remainder)| {
            self.count_prefetched(quotient, remainder) > 0
        })
    }
}

/// Entries of a sorted batch each thread takes at least: an update costs about 40 ns (`2^22`
/// slots half full), so 512 of them, some 20 us, pay for handing a range to another thread.
const MIN_RANGE: usize = 512;

/// Calls `update(hash, count)` for the entries of the sorted, distinct fingerprint `keys` of
/// `bits` bits (with their `counts`) and adds up what it returns: about one contiguous range of
/// the batch per thread, each in table order, so the threads work in disjoint stretches of the
/// table and the filter's region locks keep apart only the few updates near a range's edge.
/// The concurrent updates are the filter's own, with their guarantees. A range stops at its
/// first error, the others go on; the error of the lowest range that failed is returned, and
/// every update made stays.
fn update_in_ranges(
    keys: &[u64],
    counts: &[u64],
    bits: u32,
    update: impl Fn(u64, u64) -> Result<u64, Error> + Sync,
) -> Result<u64, Error> {
    debug_assert_eq!(keys.len(), counts.len());
    let ranges = par::map_chunks(keys.len(), MIN_RANGE, |range| {
        range
            .map(|i| {
                // The key is the hash's top `bits` bits: shifted back, it splits the same.
                update(keys[i] << (64 - bits), counts[i])
            })
            .sum::<Result<u64, Error>>()
    });
    ranges.into_iter().sum()
}

impl BatchTable for CountingQf {
    type Key = (usize, u64);

    fn split(&self, hash: u64) -> (usize, u64) {
        self.fingerprint(hash)
    }

    fn prefetch_key(&self, (quotient, _): (usize, u64)) {
        self.table.prefetch(quotient);
    }

    fn slot_count(&self) -> usize {
        1 << self.quotient_bits()
    }
}

/// Merging counting filters (paper 004 §IV-E): extract both tables' entries in sorted order,
/// merge them adding the counts of a fingerprint in both, and bulk build the result
/// ([`BuildMethod::default`]). The result has the larger quotient of the two (and the first
/// filter's region size), doubled until the distinct fingerprints of the union fit at 95% fill
/// and their entries take at most 31/32 of the slots (the load cap, which tables of `2^10`
/// slots and more have), a bit moving from the remainder to the quotient each time, as in
/// [`grow`](CountingQf::grow). A merge that cannot double far enough (the remainder at 2 bits,
/// or the quotient at its maximum) is `Full`.
///
/// Both filters must have the same fingerprint length `q + r`, or the merge returns
/// [`Error::Incompatible`], for the reason [`SequentialQf`](crate::SequentialQf)'s merge gives.
///
/// Other threads may keep using both filters: each is read whole while the merge holds all of
/// its region locks (first one filter, then the other), so the result holds every fingerprint
/// stored in a filter before the merge began and not removed during it. Meanwhile that
/// filter's inserts and removals wait, and so do its lookups that meet a held region.
///
/// ```
/// use conqf::{Count, CountingQf, Filter, Merge};
/// let a = CountingQf::with_bits(10, 10)?;
/// let b = CountingQf::with_bits(10, 10)?;
/// a.insert_count(&1u64, 3)?;
/// b.insert_count(&1u64, 4)?;
/// b.insert(&2u64)?;
/// let union = a.merge(&b)?;
/// assert_eq!((union.count(&1u64), union.count(&2u64)), (7, 1));
/// # Ok::<(), conqf::Error>(())
/// ```
impl Merge for CountingQf {
    fn merge(&self, other: &Self) -> Result<Self, Error> {
        let bits = sizing::merged_fingerprint_bits(
            (self.quotient_bits(), self.remainder_bits()),
            (other.quotient_bits(), other.remainder_bits()),
        )?;
        let (a, a_counts) = filter_keys(self);
        let (b, b_counts) = filter_keys(other);
        let (union, counts) = merge_counted((&a, &a_counts), (&b, &b_counts));
        // Sized from what was read under the locks: counts read before them would miss what
        // other threads insert meanwhile, and the rebuild could then fail as full. The slots
        // an entry takes depend on the remainder bits left (a counter's digits), so they are
        // counted again for each size tried.
        let fits = |q: u32| {
            let r = bits - q;
            let mask = low_mask(r);
            let slots = par::map_chunks(union.len(), par::MIN_PARALLEL, |range| {
                range
                    .map(|i| counter_code::entry_len(union[i] & mask, counts[i], r))
                    .sum::<usize>()
            });
            // The load cap's 31/32 of the slots, also for the small tables it does not cap,
            // whose runs would otherwise be crowded into the overflow tail.
            let room = load_cap(q).min((1 << q) - (1 << q) / 32);
            ((1u64 << q) as f64) * MERGE_LOAD >= union.len() as f64
                && slots.into_iter().sum::<usize>() <= room
        };
        let mut q = self.quotient_bits().max(other.quotient_bits());
        while !fits(q) && bits - q > counter_code::MIN_REMAINDER_BITS && q < MAX_QUOTIENT_BITS {
            q += 1;
        }
        rebuilt(
            q,
            bits - q,
            self.region_blocks(),
            &union,
            &counts,
            BuildMethod::default(),
        )
    }
}
