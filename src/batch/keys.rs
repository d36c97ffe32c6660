//! Fingerprint keys: a fingerprint as one number, `quotient << r | remainder`, i.e. the top
//! `q + r` bits of the hash. Sorting keys sorts fingerprints by `(quotient, remainder)`, and a
//! key does not change when bits move between quotient and remainder, so merging and growing
//! (paper 000 §2.1, paper 004 §IV-E) work on keys without re-splitting them.

use crate::qf::table::QfTable;
use crate::sync::Ordering;

use super::par;

/// The integer a sorted fingerprint key is kept in: `u64`, or `u32` for fingerprints of at most
/// 32 bits, which halves the memory the key sort and the bulk build move (paper 004's GPU code
/// sorts 32-bit keys where they fit, too).
pub(crate) trait KeyWord: Copy + Ord + Default + Send + Sync + radsort::Key {
    /// The number of bits the word holds.
    const BITS: u32;
    /// `key`, which must fit.
    fn narrow(key: u64) -> Self;
    /// The key as a `u64`.
    fn widen(self) -> u64;
}

impl KeyWord for u64 {
    const BITS: u32 = 64;
    #[inline]
    fn narrow(key: u64) -> Self {
        key
    }
    #[inline]
    fn widen(self) -> u64 {
        self
    }
}

impl KeyWord for u32 {
    const BITS: u32 = 32;
    #[inline]
    fn narrow(key: u64) -> Self {
        debug_assert!(key <= u64::from(u32::MAX));
        key as u32
    }
    #[inline]
    fn widen(self) -> u64 {
        u64::from(self)
    }
}

/// The sorted fingerprint keys of `hashes` for fingerprints of `fingerprint_bits` (`2..=64`,
/// at most `K::BITS`) bits, repeats kept: paper 004 §IV-C's preprocessing without the
/// deduplication, which [`build`](super::build) does on the way when asked to
/// ([`Dedupe::On`](super::Dedupe::On)).
pub(crate) fn sorted_keys_with_repeats<K: KeyWord>(
    hashes: &[u64],
    fingerprint_bits: u32,
) -> Vec<K> {
    debug_assert!((2..=K::BITS).contains(&fingerprint_bits));
    top_bits_sorted(hashes, fingerprint_bits)
}

/// The sorted, distinct fingerprint keys of `hashes` for fingerprints of `fingerprint_bits`
/// (`2..=64`) bits: hash, sort, deduplicate (paper 004 §IV-C's preprocessing).
pub(crate) fn sorted_keys(hashes: &[u64], fingerprint_bits: u32) -> Vec<u64> {
    let mut keys = sorted_keys_with_repeats(hashes, fingerprint_bits);
    keys.dedup();
    keys
}

/// The sorted, distinct fingerprint keys of `hashes` and how often each occurs, for a counting
/// filter (the preprocessing of paper 004 §IV-C without the dedupe: repeats become counts).
pub(crate) fn counted_keys(hashes: &[u64], fingerprint_bits: u32) -> (Vec<u64>, Vec<u64>) {
    let sorted: Vec<u64> = sorted_keys_with_repeats(hashes, fingerprint_bits);
    let mut keys = Vec::with_capacity(sorted.len());
    let mut counts: Vec<u64> = Vec::with_capacity(sorted.len());
    for key in sorted {
        if keys.last() == Some(&key) {
            *counts.last_mut().expect("as many counts as keys") += 1;
        } else {
            keys.push(key);
            counts.push(1);
        }
    }
    (keys, counts)
}

/// The union of two increasing key sequences with counts, a key in both getting the sum of its
/// counts (saturating): the merge of two counting filters.
pub(crate) fn merge_counted(a: (&[u64], &[u64]), b: (&[u64], &[u64])) -> (Vec<u64>, Vec<u64>) {
    let total = a.0.len() + b.0.len();
    let (mut keys, mut counts) = (Vec::with_capacity(total), Vec::with_capacity(total));
    let (mut i, mut j) = (0, 0);
    while i < a.0.len() || j < b.0.len() {
        let take_a = j == b.0.len() || (i < a.0.len() && a.0[i] <= b.0[j]);
        let (key, count) = if take_a {
            i += 1;
            (a.0[i - 1], a.1[i - 1])
        } else {
            j += 1;
            (b.0[j - 1], b.1[j - 1])
        };
        if keys.last() == Some(&key) {
            let last = counts.last_mut().expect("as many counts as keys");
            *last = u64::saturating_add(*last, count);
        } else {
            keys.push(key);
            counts.push(count);
        }
    }
    (keys, counts)
}

/// Sorts keys of `bits` bits ([`partition_sort_by`] with the keys as they are): for tests.
#[cfg(test)]
pub(crate) fn partition_sort(keys: Vec<u64>, bits: u32) -> Vec<u64> {
    partition_sort_by(&keys, bits, |key| key)
}

/// The top `bits` bits of every hash, sorted by [`partition_sort_by`]: the shift is
/// done on the way into the buckets, so the keys are written once.
fn top_bits_sorted<K: KeyWord>(hashes: &[u64], bits: u32) -> Vec<K> {
    let shift = 64 - bits;
    partition_sort_by(hashes, bits, |hash| hash >> shift)
}

/// About `2^BUCKET_KEYS_LOG` keys per bucket: 256 KiB of keys, cached in L2 while radix sorted.
const BUCKET_KEYS_LOG: u32 = 15;

/// At most `2^MAX_BUCKET_BITS` buckets, so the scatter's write streams stay few.
const MAX_BUCKET_BITS: u32 = 10;

/// Sorts `key(x)` (of `bits` bits) for every `x` of `input`: one radix pass scatters them into
/// `2^k` buckets by their top `k` bits (a few tens of thousands of keys per bucket for hashed keys,
/// at most a thousand buckets), then the buckets, each small enough for the L2 cache, are radix
/// sorted in parallel ([`radsort`], which skips the digits a bucket's keys share). For hashes that
/// is linear work rather than `n log n` comparisons; skewed keys only make some buckets larger.
///
/// Few buckets keep the scatter fast: every bucket is a separate write stream, and with
/// thousands of them nearly every write missed the TLB. With `W=build Q=24 T=2 cargo run
/// --release --example bulk_probe` (11.7 million keys, 2 threads), `2^13` buckets sorted by
/// `sort_unstable` took 166 ms; `2^8` buckets sorted by `radsort` took 113-120 ms
/// (timed by temporary instrumentation: count 17-18, scatter 43-48, bucket sorts 38-40).
///
/// The radix pass is parallel too: the input is cut into one chunk per thread, each chunk
/// counts its keys per bucket, and each then scatters into its own piece of every bucket. The
/// output holds, for each bucket in turn, the pieces of chunk 0, chunk 1, ..., so the pieces
/// are disjoint slices of it and the threads write without synchronisation.
fn partition_sort_by<K: KeyWord>(
    input: &[u64],
    bits: u32,
    key: impl Fn(u64) -> u64 + Sync,
) -> Vec<K> {
    let n = input.len();
    if n < 1 << 12 {
        let mut keys: Vec<K> = input.iter().map(|&x| K::narrow(key(x))).collect();
        keys.sort_unstable();
        return keys;
    }
    let bucket_bits = n
        .ilog2()
        .saturating_sub(BUCKET_KEYS_LOG)
        .clamp(1, MAX_BUCKET_BITS)
        .min(bits);
    let shift = bits - bucket_bits;
    let bucket_of = |k: u64| (k >> shift) as usize;
    // For each chunk `c`: its range of the input and `count[b]`, how many of its keys fall into
    // bucket `b`.
    let counts: Vec<(std::ops::Range<usize>, Vec<usize>)> =
        par::map_chunks(n, par::MIN_PARALLEL, |range| {
            let mut count = vec![0usize; 1 << bucket_bits];
            for &x in &input[range.clone()] {
                count[bucket_of(key(x))] += 1;
            }
            (range, count)
        });
    let mut sorted = vec![K::default(); n];
    // pieces[c][b]: where chunk `c` writes its keys of bucket `b`; `bucket_lens[b]`: the length
    // of bucket `b` in `sorted`.
    let mut pieces: Vec<Vec<&mut [K]>> = counts
        .iter()
        .map(|_| Vec::with_capacity(1 << bucket_bits))
        .collect();
    let mut bucket_lens = Vec::with_capacity(1 << bucket_bits);
    let mut rest = &mut sorted[..];
    for bucket in 0..1 << bucket_bits {
        let mut bucket_len = 0;
        for ((_, count), chunk_pieces) in counts.iter().zip(&mut pieces) {
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(count[bucket]);
            chunk_pieces.push(piece);
            rest = tail;
            bucket_len += count[bucket];
        }
        bucket_lens.push(bucket_len);
    }
    let work: Vec<_> = counts
        .into_iter()
        .map(|(range, _)| range)
        .zip(pieces)
        .collect();
    par::for_each(work, |(range, mut chunk_pieces)| {
        for &x in &input[range] {
            let k = key(x);
            let piece = &mut chunk_pieces[bucket_of(k)];
            // The piece has exactly one place per key of this chunk and bucket (counted above).
            let (first, tail) = std::mem::take(piece)
                .split_first_mut()
                .expect("a piece holds every key counted for it");
            *first = K::narrow(k);
            *piece = tail;
        }
    });
    let mut buckets = Vec::with_capacity(bucket_lens.len());
    let mut rest = &mut sorted[..];
    for len in bucket_lens {
        let (bucket, tail) = rest.split_at_mut(len);
        buckets.push(bucket);
        rest = tail;
    }
    par::for_each(buckets, radsort::sort);
    sorted
}

/// The keys a table stores, in increasing order (the extraction step of paper 004 §IV-E).
pub(crate) fn table_keys(table: &QfTable, order: Ordering) -> Vec<u64> {
    let mut keys = Vec::new();
    extend_with_table_keys(&mut keys, table, order);
    keys
}

/// [`table_keys`] appended to `keys`, whose capacity a caller holding locks allocated first.
pub(crate) fn extend_with_table_keys(keys: &mut Vec<u64>, table: &QfTable, order: Ordering) {
    let r = table.remainder_bits;
    keys.extend(
        table
            .fingerprints(order)
            .map(|f| (f.quotient << r) | f.remainder),
    );
}

/// The union of two increasing sequences, each value once: a merge path (Green et al., as in
/// paper 004 §IV-E) cuts the output into one piece per thread, each piece is merged on its own,
/// and the pieces are joined and deduplicated.
pub(crate) fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = merge_keeping_repeats(a, b);
    out.dedup();
    out
}

/// The merge of two non-decreasing sequences, every value as often as the two hold it: the
/// merge path of [`merge_sorted`] without its deduplication.
fn merge_keeping_repeats(a: &[u64], b: &[u64]) -> Vec<u64> {
    let total = a.len() + b.len();
    let pieces = par::map_chunks(total, par::MIN_PARALLEL, |range| {
        let (from_a, to_a) = (co_rank(range.start, a, b), co_rank(range.end, a, b));
        merge_piece(&a[from_a..to_a], &b[range.start - from_a..range.end - to_a])
    });
    let mut out = Vec::with_capacity(total);
    for piece in pieces {
        out.extend_from_slice(&piece);
    }
    out
}

/// The increasing, distinct `keys` added to the non-decreasing `stored` as one-by-one inserts
/// add them: every stored copy kept (a build without deduplication may hold several), a key
/// added only if `stored` lacks it. Returns the union and how many keys were added. The keys
/// are checked a chunk per thread, each chunk walking `stored` from where its first key goes.
pub(crate) fn add_absent(stored: &[u64], keys: &[u64]) -> (Vec<u64>, usize) {
    let pieces = par::map_chunks(keys.len(), par::MIN_PARALLEL, |range| {
        let chunk = &keys[range];
        let mut at = chunk
            .first()
            .map_or(0, |&first| stored.partition_point(|&s| s < first));
        let mut absent = Vec::new();
        for &key in chunk {
            while at < stored.len() && stored[at] < key {
                at += 1;
            }
            if stored.get(at) != Some(&key) {
                absent.push(key);
            }
        }
        absent
    });
    let absent: Vec<u64> = pieces.concat();
    let added = absent.len();
    (merge_keeping_repeats(stored, &absent), added)
}

/// How many values [`merge_sorted`] of two increasing sequences returns (each value once),
/// counted without building the union: what a merge sizes its table by before it reads the
/// keys in the union's own split.
pub(crate) fn union_len(
    a: impl IntoIterator<Item = u64>,
    b: impl IntoIterator<Item = u64>,
) -> usize {
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    let (mut count, mut last) = (0, None);
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(&x), Some(&y)) if x <= y => a.next(),
            (_, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => return count,
        };
        if next != last {
            count += 1;
            last = next;
        }
    }
}

/// How many of the first `diagonal` elements of the merge of `a` and `b` come from `a` (equal
/// values are taken from `a` first): a binary search along the merge path's diagonal.
fn co_rank(diagonal: usize, a: &[u64], b: &[u64]) -> usize {
    let (mut low, mut high) = (diagonal.saturating_sub(b.len()), diagonal.min(a.len()));
    while low < high {
        let i = low + (high - low) / 2;
        // Taking `i` from `a` is too few if `a[i]` still belongs before `b[diagonal - i - 1]`.
        if a[i] <= b[diagonal - i - 1] {
            low = i + 1;
        } else {
            high = i;
        }
    }
    low
}

/// The merge of two increasing slices (duplicates kept, `a`'s first).
fn merge_piece(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_each_value_once_in_order() {
        assert_eq!(
            merge_sorted(&[1, 3, 5, 9], &[2, 3, 9, 10, 11]),
            vec![1, 2, 3, 5, 9, 10, 11]
        );
        assert_eq!(merge_sorted(&[], &[4]), vec![4]);
        assert_eq!(union_len([1, 3, 5, 9], [2, 3, 9, 10, 11]), 7);
        assert_eq!(union_len([], [4, 4]), 1);
    }

    proptest::proptest! {
        #[test]
        fn merge_path_pieces_equal_a_sequential_merge(
            a in proptest::collection::vec(0u64..5000, 0..40_000),
            b in proptest::collection::vec(0u64..5000, 0..40_000),
        ) {
            let (mut a, mut b) = (a, b);
            a.sort_unstable();
            b.sort_unstable();
            let mut expected: Vec<u64> = a.iter().chain(&b).copied().collect();
            expected.sort_unstable();
            expected.dedup();
            proptest::prop_assert_eq!(union_len(a.clone(), b.clone()), expected.len());
            proptest::prop_assert_eq!(merge_sorted(&a, &b), expected);
        }

        /// `add_absent` against a sequential model: every stored copy, then each key the
        /// stored values lack, in order; across chunks of the keys (up to 40,000 of them).
        #[test]
        fn added_keys_are_the_absent_ones_and_copies_stay(
            stored in proptest::collection::vec(0u64..3000, 0..40_000),
            keys in proptest::collection::vec(0u64..3000, 0..40_000),
        ) {
            let (mut stored, mut keys) = (stored, keys);
            stored.sort_unstable();
            keys.sort_unstable();
            keys.dedup();
            let absent: Vec<u64> =
                keys.iter().copied().filter(|k| stored.binary_search(k).is_err()).collect();
            let mut expected: Vec<u64> = stored.iter().chain(&absent).copied().collect();
            expected.sort_unstable();
            proptest::prop_assert_eq!(add_absent(&stored, &keys), (expected, absent.len()));
        }
    }

    #[test]
    fn cutting_the_merge_path_anywhere_gives_the_same_merge() {
        let a = [1, 3, 3, 5, 9, 9, 12];
        let b = [0, 3, 4, 9, 10, 13, 14, 15];
        let whole = merge_piece(&a, &b);
        let total = a.len() + b.len();
        for cut in 0..=total {
            let i = co_rank(cut, &a, &b);
            let mut joined = merge_piece(&a[..i], &b[..cut - i]);
            joined.extend(merge_piece(&a[i..], &b[cut - i..]));
            assert_eq!(joined, whole, "cut at {cut}");
        }
    }

    proptest::proptest! {
        #[test]
        fn partition_sort_sorts_uniform_and_skewed_keys(
            keys in proptest::collection::vec(0u64..(1 << 30), 0..20_000),
            skew in 0u32..25,
        ) {
            let keys: Vec<u64> = keys.into_iter().map(|k| k >> skew).collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            proptest::prop_assert_eq!(partition_sort(keys, 30), expected);
        }
    }

    /// Batches of many chunks (one per thread, at least `MIN_PARALLEL` keys each), so the
    /// chunks' pieces of every bucket are laid out and filled side by side, with uniform keys,
    /// keys that crowd into few buckets, and repeats.
    #[test]
    fn partition_sort_of_many_chunks_sorts() {
        let n = 9 * par::MIN_PARALLEL + 123;
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let uniform: Vec<u64> = (0..n).map(|_| next() >> 24).collect();
        let crowded: Vec<u64> = uniform.iter().map(|k| k >> 20).collect();
        let repeated: Vec<u64> = (0..n as u64).map(|i| (i % 1000) << 20).collect();
        for keys in [uniform, crowded, repeated] {
            let mut expected = keys.clone();
            expected.sort_unstable();
            assert_eq!(partition_sort(keys, 40), expected);
        }
    }

    /// Keys of fewer bits than the bucket bits a batch this large would take (2-bit keys, as
    /// a filter with 2-bit fingerprints sorts them, in a batch of `2^18`, which takes 8
    /// buckets): the bucket bits are cut to the key's bits.
    #[test]
    fn partition_sort_of_keys_shorter_than_the_bucket_bits_sorts() {
        let keys: Vec<u64> = (0..1u64 << 18)
            .map(|i| crate::hash::remix(i) >> 62)
            .collect();
        let mut expected = keys.clone();
        expected.sort_unstable();
        assert_eq!(partition_sort(keys, 2), expected);
    }

    #[test]
    fn counted_keys_count_repeats_and_merging_sums_them() {
        let hashes = [3 << 60, 1 << 60, 3 << 60, 3 << 60, 0];
        let (keys, counts) = counted_keys(&hashes, 4);
        assert_eq!(
            (keys.as_slice(), counts.as_slice()),
            (&[0, 1, 3][..], &[1, 1, 3][..])
        );
        let merged = merge_counted((&keys, &counts), (&[1, 2, 3], &[5, 1, u64::MAX]));
        assert_eq!(merged, (vec![0, 1, 2, 3], vec![1, 6, 1, u64::MAX]));
    }

    /// The 32-bit keys the bulk build sorts for fingerprints of up to 32 bits: the same keys as
    /// the 64-bit ones, through the partitioned path (above `2^12` keys) and the small one.
    #[test]
    fn narrow_keys_equal_wide_keys() {
        let hashes: Vec<u64> = (0..3 * par::MIN_PARALLEL as u64)
            .map(crate::hash::remix)
            .collect();
        for (len, bits) in [(hashes.len(), 32), (hashes.len(), 20), (1000, 31), (0, 8)] {
            let wide: Vec<u64> = sorted_keys_with_repeats(&hashes[..len], bits);
            let narrow: Vec<u32> = sorted_keys_with_repeats(&hashes[..len], bits);
            assert!(
                narrow.iter().map(|&k| u64::from(k)).eq(wide),
                "{len} keys of {bits} bits"
            );
        }
    }

    #[test]
    fn keys_are_the_top_bits_sorted_and_distinct() {
        let hashes = [u64::MAX, 0, 1 << 63, (1 << 63) | 1, 5 << 60];
        assert_eq!(sorted_keys(&hashes, 4), vec![0, 5, 8, 15]);
    }
}
