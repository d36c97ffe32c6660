//! The growing experiment of paper 000 Figure 4, written once for `benches/growing.rs` and
//! `examples/figures.rs`: start small, insert segment after segment with all threads, and after
//! every segment measure successful and unsuccessful lookups and the false-positive rate.

use std::time::Duration;

use conqf::{Error, ExpandableQf, Filter, GrowableQf, LocallyLockedQf};

use super::{count_hits, insert_all, key_hashes, parallel, piece, NEGATIVE_KEYS, POSITIVE_KEYS};

/// The false-positive target of Figure 4: `2^-10`.
pub(crate) const FIG4_FPR: f64 = 1.0 / 1024.0;

/// The fill at which the growing filters double (and the expandable one opens levels).
pub(crate) const FIG4_DELTA_GROW: f64 = 0.75;

/// The size of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fig4Size {
    /// The filters start with `2^start_quotient_bits` slots.
    pub(crate) start_quotient_bits: u32,
    /// How many segments are inserted.
    pub(crate) segments: usize,
    /// Keys per segment, and lookups of each kind after each segment.
    pub(crate) segment_keys: usize,
}

impl Fig4Size {
    /// The size for tables of `2^quotient_bits` slots in the other figures: the paper's 2^19
    /// start and 1M-key segments at its 2^25 slots, 2^16 and 2^17 keys at the default 2^22.
    pub(crate) fn for_quotient_bits(quotient_bits: u32, segments: usize) -> Self {
        let start = quotient_bits.saturating_sub(6).max(8);
        Fig4Size {
            start_quotient_bits: start,
            segments,
            segment_keys: 1 << (start + 1),
        }
    }

    /// The remainder bits of level 0 (and of the bounded filter's start): the fewest with
    /// `2 δ_grow 2^-r < 2^-10` (paper 000 §4.1).
    pub(crate) fn start_remainder_bits(&self) -> u32 {
        (1..60)
            .find(|&r| 2.0 * FIG4_DELTA_GROW * (-(r as f64)).exp2() < FIG4_FPR)
            .unwrap_or(60)
    }

    /// The expected capacity that gives an expandable filter a level 0 of exactly
    /// `2^start_quotient_bits` slots.
    pub(crate) fn expected_capacity(&self) -> usize {
        ((1u64 << self.start_quotient_bits) as f64 * FIG4_DELTA_GROW) as usize - 1
    }
}

/// The three growing filters of Figure 4, by name.
pub(crate) const FIG4_FILTERS: [&str; 3] = ["bounded", "expandable", "expandable+cascading"];

/// Builds the Figure 4 filter `name` (one of [`FIG4_FILTERS`]) at `size`.
///
/// # Errors
/// The constructor's error (only for sizes beyond memory).
pub(crate) fn fig4_filter(name: &str, size: &Fig4Size) -> Result<Box<dyn Filter>, Error> {
    let (q, r) = (size.start_quotient_bits, size.start_remainder_bits());
    Ok(match name {
        "bounded" => Box::new(bounded(q, r)?),
        "expandable" => Box::new(
            ExpandableQf::builder(size.expected_capacity(), FIG4_FPR)
                .delta_grow(FIG4_DELTA_GROW)
                .build()?,
        ),
        _ => Box::new(
            ExpandableQf::builder(size.expected_capacity(), FIG4_FPR)
                .delta_grow(FIG4_DELTA_GROW)
                .cascading(true)
                .build()?,
        ),
    })
}

/// Bounded growing alone: the growable `LocallyLockedQf`, doubling as often as its remainder
/// allows.
fn bounded(q: u32, r: u32) -> Result<GrowableQf, Error> {
    LocallyLockedQf::growable(1, 0.5)
        .delta_grow(FIG4_DELTA_GROW)
        .max_doublings(r - 1)
        .build_with_bits(q, r)
}

/// What one segment measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fig4Segment {
    /// Wall time of inserting the segment with all threads.
    pub(crate) insert: Duration,
    /// Wall time of `segment_keys` lookups of inserted keys.
    pub(crate) positive: Duration,
    /// Wall time of `segment_keys` lookups of keys never inserted.
    pub(crate) negative: Duration,
    /// The fraction of the unsuccessful lookups that answered `true`.
    pub(crate) fpr: f64,
    /// Inserted keys not found (a bug if not zero).
    pub(crate) missed: usize,
    /// Inserts that failed (`Full`).
    pub(crate) failed: usize,
    /// The filter's memory after the segment, in bytes.
    pub(crate) memory: usize,
}

/// The keys of a run: all inserts, segment after segment, and the absent keys.
pub(crate) struct Fig4Keys {
    pub(crate) inserts: Vec<u64>,
    pub(crate) negatives: Vec<u64>,
}

impl Fig4Keys {
    /// Hashes every key the run needs.
    pub(crate) fn new(size: &Fig4Size) -> Self {
        Fig4Keys {
            inserts: key_hashes(POSITIVE_KEYS, size.segments * size.segment_keys),
            negatives: key_hashes(NEGATIVE_KEYS, size.segments * size.segment_keys),
        }
    }
}

/// Runs the experiment on `filter` with `threads` threads: per segment, insert it, then look up
/// `segment_keys` inserted keys (spread over everything inserted so far) and as many absent
/// ones (fresh for every segment).
pub(crate) fn fig4_run(
    filter: &dyn Filter,
    size: &Fig4Size,
    keys: &Fig4Keys,
    threads: usize,
) -> Vec<Fig4Segment> {
    let n = size.segment_keys;
    (0..size.segments)
        .map(|segment| {
            let batch = &keys.inserts[segment * n..(segment + 1) * n];
            let (insert, failed) =
                parallel(threads, |t| insert_all(filter, piece(batch, t, threads)));
            let inserted = &keys.inserts[..(segment + 1) * n];
            // Every (segment + 1)-th inserted key: old and new keys alike.
            let positives: Vec<u64> = inserted.iter().step_by(segment + 1).copied().collect();
            let (positive, found) = parallel(threads, |t| {
                count_hits(filter, piece(&positives, t, threads))
            });
            let absent = &keys.negatives[segment * n..(segment + 1) * n];
            let (negative, hits) =
                parallel(threads, |t| count_hits(filter, piece(absent, t, threads)));
            let failed: usize = failed.iter().sum();
            Fig4Segment {
                insert,
                positive,
                negative,
                fpr: hits.iter().sum::<usize>() as f64 / n as f64,
                missed: positives.len() - found.iter().sum::<usize>(),
                failed,
                memory: filter.memory_bytes(),
            }
        })
        .collect()
}

/// The growable filters people use today, beside the three of Figure 4 in the bench: neither is
/// concurrent, so each sits behind one `Mutex` ([`Locked`](super::Locked)).
pub(crate) const FIG4_PEERS: [&str; 2] = [
    "growable-bloom-filter+Mutex",
    "scalable_cuckoo_filter+Mutex",
];

/// Builds the peer `name` (one of [`FIG4_PEERS`]) for the same start and target as
/// [`fig4_filter`]: the expected capacity of the start table and the `2^-10` rate.
pub(crate) fn fig4_peer(name: &str, size: &Fig4Size) -> Box<dyn Filter> {
    let capacity = size.expected_capacity();
    if name == FIG4_PEERS[0] {
        Box::new(super::Locked::new(GrowableBloom(
            growable_bloom_filter::GrowableBloom::new(FIG4_FPR, capacity),
        )))
    } else {
        // A seeded `StdRng`: the default `ThreadRng` cannot move between threads.
        let filter = scalable_cuckoo_filter::ScalableCuckooFilterBuilder::new()
            .initial_capacity(capacity)
            .false_positive_probability(FIG4_FPR)
            .rng(<rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(4))
            .finish();
        Box::new(super::Locked::new(ScalableCuckoo(filter)))
    }
}

/// `growable-bloom-filter` through the single-threaded table interface (it hashes the given
/// hash once more itself). Its size is not exposed, so its bytes read as 0.
struct GrowableBloom(growable_bloom_filter::GrowableBloom);

impl super::SeqTable for GrowableBloom {
    fn table_insert(&mut self, hash: u64) -> Result<bool, Error> {
        Ok(self.0.insert(hash))
    }
    fn table_contains(&self, hash: u64) -> bool {
        self.0.contains(hash)
    }
    fn table_len(&self) -> usize {
        self.0.len()
    }
    fn table_capacity(&self) -> usize {
        self.0.capacity()
    }
    fn table_bytes(&self) -> usize {
        0
    }
    fn table_fpr(&self) -> f64 {
        FIG4_FPR
    }
}

/// `scalable_cuckoo_filter` through the single-threaded table interface (it hashes the given
/// hash once more itself).
struct ScalableCuckoo(
    scalable_cuckoo_filter::ScalableCuckooFilter<
        u64,
        scalable_cuckoo_filter::DefaultHasher,
        rand::rngs::StdRng,
    >,
);

impl super::SeqTable for ScalableCuckoo {
    fn table_insert(&mut self, hash: u64) -> Result<bool, Error> {
        Ok(!self.0.insert_if_not_contained(&hash))
    }
    fn table_contains(&self, hash: u64) -> bool {
        self.0.contains(&hash)
    }
    fn table_len(&self) -> usize {
        self.0.len()
    }
    fn table_capacity(&self) -> usize {
        self.0.capacity()
    }
    fn table_bytes(&self) -> usize {
        (self.0.bits() / 8) as usize
    }
    fn table_fpr(&self) -> f64 {
        self.0.false_positive_probability()
    }
}
