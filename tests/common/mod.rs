//! Helpers shared by the integration tests: hashes with chosen fingerprints and an exact model.
#![allow(dead_code)]

pub(crate) mod cuckoo;

use std::collections::BTreeSet;

use conqf::Fingerprint;
use proptest::prelude::*;

/// A hash whose top `q + r` bits are `(quotient, remainder)`; `noise` fills the bits below.
pub(crate) fn hash_of(quotient: u64, remainder: u64, q: u32, r: u32, noise: u64) -> u64 {
    let fingerprint = (quotient << r) | remainder;
    let low = 64 - q - r;
    let noise = if low == 0 {
        0
    } else {
        noise & ((1u64 << low) - 1)
    };
    if q + r == 64 {
        fingerprint
    } else {
        (fingerprint << low) | noise
    }
}

/// `count` hashes of pairwise distinct fingerprints, as `(q, r)` splits them, whose quotients
/// fall into `quotients` canonical slots spread evenly over the table (all of them when
/// `quotients` is `2^q`). Remainders 0 and 1 count as one, because `TwoBitQf` stores 0 as 1, so
/// the fingerprints differ in every filter. Stress tests that remove keys need this: removing
/// a key removes its fingerprint, so a key sharing it would vanish too.
pub(crate) fn distinct_hashes(q: u32, r: u32, quotients: u64, count: usize, seed: u64) -> Vec<u64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let stride = (1u64 << q) / quotients;
    let mut seen = BTreeSet::new();
    let mut hashes = Vec::with_capacity(count);
    while hashes.len() < count {
        let quotient = rng.random_range(0..quotients) * stride;
        let remainder = rng.random_range(0..1u64 << r);
        if seen.insert((quotient, remainder.max(1))) {
            hashes.push(hash_of(quotient, remainder, q, r, rng.random()));
        }
    }
    hashes
}

/// `count` cuckoo-filter hashes with pairwise distinct (fingerprint, bucket pair), as
/// `placement` (a filter's) gives them, drawn from a generator seeded with `seed`.
pub(crate) fn distinct_cuckoo_keys(
    placement: impl Fn(u64) -> (usize, usize, u64),
    count: usize,
    seed: u64,
) -> Vec<u64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen = BTreeSet::new();
    let mut keys = Vec::with_capacity(count);
    while keys.len() < count {
        let hash: u64 = rng.random();
        let (a, b, fp) = placement(hash);
        if seen.insert((fp, a.min(b), a.max(b))) {
            keys.push(hash);
        }
    }
    keys
}

/// One operation of a model-checked sequence.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Insert(u64),
    Remove(u64),
    Contains(u64),
}

/// Operations on hashes from a small fingerprint space: `quotients` canonical slots (drawn from
/// the top end too, to reach the overflow tail) and `remainders` values, so runs and clusters
/// get long, collide and overflow.
pub(crate) fn ops(
    q: u32,
    r: u32,
    quotients: u64,
    remainders: u64,
    len: usize,
) -> impl Strategy<Value = Vec<Op>> {
    let hash = (
        quotients_of(q, quotients),
        0..remainders.min(1 << r),
        any::<u64>(),
    )
        .prop_map(move |(qu, re, noise)| hash_of(qu, re, q, r, noise));
    ops_on(hash, len)
}

/// A remainder width from 1 to 30 bits, and operations as [`ops`] makes them at that width but
/// with remainders drawn from both ends of the width's range, so the top bits of every lane are
/// used too: every width the walks are compiled for (`with_fixed_width!`) and the generic ones
/// on either side, each its own code.
pub(crate) fn ops_at_every_width(
    q: u32,
    quotients: u64,
    remainders: u64,
    len: usize,
) -> impl Strategy<Value = (u32, Vec<Op>)> {
    (1u32..=30).prop_flat_map(move |r| {
        let values = remainders.min(1 << r);
        let top = (1u64 << r) - 1;
        let remainder = prop_oneof![0..values, (top + 1 - values)..=top];
        let hash = (quotients_of(q, quotients), remainder, any::<u64>())
            .prop_map(move |(qu, re, noise)| hash_of(qu, re, q, r, noise));
        (Just(r), ops_on(hash, len))
    })
}

/// `quotients` canonical slots of `2^q` at each end of the table.
fn quotients_of(q: u32, quotients: u64) -> impl Strategy<Value = u64> + Clone {
    let slots = 1u64 << q;
    prop_oneof![
        0..quotients.min(slots),
        (slots - quotients.min(slots))..slots
    ]
}

/// Up to `len` inserts, removals and queries of hashes drawn from `hash`.
fn ops_on(hash: impl Strategy<Value = u64> + Clone, len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => hash.clone().prop_map(Op::Insert),
        2 => hash.clone().prop_map(Op::Remove),
        2 => hash.prop_map(Op::Contains),
    ];
    proptest::collection::vec(op, 1..len)
}

/// The exact model: the set of stored fingerprints.
#[derive(Default, Debug, Clone)]
pub(crate) struct Model {
    pub(crate) set: BTreeSet<Fingerprint>,
}

impl Model {
    pub(crate) fn fingerprint(hash: u64, q: u32, r: u32) -> Fingerprint {
        Fingerprint::split(hash, q, r)
    }
}

/// The filter interface the model tests drive, so one runner checks every variant.
pub(crate) trait UnderTest: Sized {
    fn with_bits(q: u32, r: u32) -> Self;
    fn insert(&mut self, hash: u64) -> Result<bool, conqf::Error>;
    fn remove(&mut self, hash: u64) -> Result<bool, conqf::Error>;
    fn contains(&self, hash: u64) -> bool;
    fn check(&self) -> Result<(), String>;
    fn len(&self) -> usize;
    fn fingerprints(&self) -> Vec<Fingerprint>;
    /// The fingerprint the filter stores for `hash`: by default the plain split.
    fn fingerprint(hash: u64, q: u32, r: u32) -> Fingerprint {
        Model::fingerprint(hash, q, r)
    }
    /// A query that answers `false` for a fingerprint that is not stored even while other
    /// threads shift its cluster: `contains_hash`, except for `LocallyLockedQf` and `TwoBitQf`,
    /// whose `contains_hash` keeps a hit of a walk without locks, which a shift can make a
    /// misread (crate docs, "Consistency").
    fn contains_without_misread(&self, hash: u64) -> bool
    where
        Self: conqf::Filter,
    {
        conqf::Filter::contains_hash(self, hash)
    }
}

impl UnderTest for conqf::SequentialQf {
    fn with_bits(q: u32, r: u32) -> Self {
        conqf::SequentialQf::with_bits(q, r).unwrap()
    }
    fn insert(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        self.insert_hash(hash)
    }
    fn remove(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        self.remove_hash(hash)
    }
    fn contains(&self, hash: u64) -> bool {
        self.contains_hash(hash)
    }
    fn check(&self) -> Result<(), String> {
        self.check_invariants()
    }
    fn len(&self) -> usize {
        conqf::SequentialQf::len(self)
    }
    fn fingerprints(&self) -> Vec<Fingerprint> {
        conqf::SequentialQf::fingerprints(self).collect()
    }
}

impl UnderTest for conqf::LocallyLockedQf {
    fn contains_without_misread(&self, hash: u64) -> bool {
        self.contains_hash_locked(hash)
    }
    fn with_bits(q: u32, r: u32) -> Self {
        conqf::LocallyLockedQf::with_bits(q, r).unwrap()
    }
    fn insert(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        conqf::Filter::insert_hash(self, hash)
    }
    fn remove(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        conqf::Remove::remove_hash(self, hash)
    }
    fn contains(&self, hash: u64) -> bool {
        let answer = conqf::Filter::contains_hash(self, hash);
        assert_eq!(answer, self.contains_hash_unsynchronized(hash));
        answer
    }
    fn check(&self) -> Result<(), String> {
        self.check_invariants()
    }
    fn len(&self) -> usize {
        conqf::Filter::len(self)
    }
    fn fingerprints(&self) -> Vec<Fingerprint> {
        conqf::LocallyLockedQf::fingerprints(self).collect()
    }
}

impl UnderTest for conqf::ExternallyLockedQf {
    fn with_bits(q: u32, r: u32) -> Self {
        conqf::ExternallyLockedQf::with_bits(q, r).unwrap()
    }
    fn insert(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        conqf::Filter::insert_hash(self, hash)
    }
    fn remove(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        conqf::Remove::remove_hash(self, hash)
    }
    fn contains(&self, hash: u64) -> bool {
        conqf::Filter::contains_hash(self, hash)
    }
    fn check(&self) -> Result<(), String> {
        self.check_invariants()
    }
    fn len(&self) -> usize {
        conqf::Filter::len(self)
    }
    fn fingerprints(&self) -> Vec<Fingerprint> {
        conqf::ExternallyLockedQf::fingerprints(self).collect()
    }
}

impl UnderTest for conqf::TwoBitQf {
    fn contains_without_misread(&self, hash: u64) -> bool {
        self.contains_hash_locked(hash)
    }
    fn with_bits(q: u32, r: u32) -> Self {
        conqf::TwoBitQf::with_bits(q, r).unwrap()
    }
    fn insert(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        conqf::Filter::insert_hash(self, hash)
    }
    fn remove(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        conqf::Remove::remove_hash(self, hash)
    }
    fn contains(&self, hash: u64) -> bool {
        conqf::Filter::contains_hash(self, hash)
    }
    fn check(&self) -> Result<(), String> {
        self.check_invariants()
    }
    fn len(&self) -> usize {
        conqf::Filter::len(self)
    }
    fn fingerprints(&self) -> Vec<Fingerprint> {
        conqf::TwoBitQf::fingerprints(self).collect()
    }
    /// A zero remainder is stored as 1 (the rule that makes growing sound).
    fn fingerprint(hash: u64, q: u32, r: u32) -> Fingerprint {
        let f = Fingerprint::split(hash, q, r);
        Fingerprint {
            remainder: f.remainder.max(1),
            ..f
        }
    }
}

/// Runs `sequence` on a fresh `F::with_bits(q, r)` and the exact model side by side: every
/// answer must equal the model's and the invariants must hold after every step.
pub(crate) fn run_model<F: UnderTest>(
    q: u32,
    r: u32,
    sequence: &[Op],
) -> Result<(F, Model), TestCaseError> {
    let mut filter = F::with_bits(q, r);
    let mut model = Model::default();
    for &op in sequence {
        match op {
            Op::Insert(h) => {
                let f = F::fingerprint(h, q, r);
                match filter.insert(h) {
                    Ok(stored) => prop_assert_eq!(stored, model.set.insert(f), "insert {:?}", f),
                    Err(conqf::Error::Full) => prop_assert!(!model.set.contains(&f)),
                    Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                }
            }
            Op::Remove(h) => {
                let f = F::fingerprint(h, q, r);
                prop_assert_eq!(filter.remove(h).unwrap(), model.set.remove(&f));
            }
            Op::Contains(h) => {
                let f = F::fingerprint(h, q, r);
                prop_assert_eq!(filter.contains(h), model.set.contains(&f));
            }
        }
        if let Err(why) = filter.check() {
            return Err(TestCaseError::fail(format!("after {op:?}: {why}")));
        }
        prop_assert_eq!(filter.len(), model.set.len());
    }
    for f in &model.set {
        prop_assert!(filter.contains(hash_of(f.quotient, f.remainder, q, r, 0)));
    }
    prop_assert_eq!(
        filter.fingerprints(),
        model.set.iter().copied().collect::<Vec<_>>()
    );
    Ok((filter, model))
}

/// The checker thread of the growing stress tests: until `done` is set (and at least 2000 checks
/// have run), picks a key some writer has published (writer `t` publishes its first
/// `published[t]` keys of `hashes[t * per_thread..]`) and, if `kept(i)` says the `i`-th key of
/// its writer stays stored, asserts the filter finds it. Returns the number of checks.
pub(crate) fn check_published_keys(
    filter: &impl conqf::Filter,
    hashes: &[u64],
    per_thread: usize,
    published: &[std::sync::atomic::AtomicUsize],
    done: &std::sync::atomic::AtomicBool,
    kept: impl Fn(usize) -> bool,
    what: &str,
) -> u64 {
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::Ordering;
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let mut checks = 0u64;
    while !done.load(Ordering::Acquire) || checks < 2000 {
        let t = rng.random_range(0..published.len());
        let upto = published[t].load(Ordering::Acquire);
        if upto == 0 {
            std::thread::yield_now();
            continue;
        }
        let i = rng.random_range(0..upto);
        if kept(i) {
            let h = hashes[t * per_thread + i];
            if !filter.contains_hash(h) {
                // Whether a second query finds it tells a lost key from a transient miss.
                let again = filter.contains_hash(h);
                panic!("{what}: key {h:#x} (writer {t}, key {i} of {upto}; found again: {again})");
            }
            checks += 1;
        }
    }
    checks
}

/// How a growing filter's stress test checks it while the writers fill it.
#[derive(Clone, Copy)]
pub(crate) enum Checker {
    /// Queries published keys on the filter ([`check_published_keys`]).
    Queries,
    /// Takes snapshots and looks for every published key in each
    /// ([`check_published_keys_in_snapshots`]).
    Snapshots,
}

/// Runs `checker` beside writers that publish their keys as [`check_published_keys`] says,
/// until `done`: queries of `filter`, or snapshots from `take` checked with `valid`. Keys whose
/// index `kept` refuses are not looked for. Returns the number of checks or snapshot rounds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_published<F: conqf::Filter, S: conqf::Filter>(
    checker: Checker,
    filter: &F,
    (take, valid): (impl Fn() -> S, impl Fn(&mut S)),
    (hashes, per_thread): (&[u64], usize),
    published: &[std::sync::atomic::AtomicUsize],
    done: &std::sync::atomic::AtomicBool,
    kept: impl Fn(usize) -> bool,
    what: &str,
) -> usize {
    match checker {
        Checker::Queries => {
            check_published_keys(filter, hashes, per_thread, published, done, kept, what) as usize
        }
        Checker::Snapshots => check_published_keys_in_snapshots(
            take,
            valid,
            (hashes, per_thread),
            published,
            done,
            kept,
        ),
    }
}

/// The writers and the checker of the growing stress tests: one writer per `per_thread` keys of
/// `hashes` inserts its keys in order, asserts it finds each, publishes how many it inserted
/// (Release) and then calls `after(i, key)` (a removal, say); beside them `checker` runs
/// [`check_published`] with `snapshots` until the writers are done, looking for the keys whose
/// index `kept` accepts. Fails if the checker checked nothing.
pub(crate) fn insert_beside_checker<F: conqf::Filter + Sync, S: conqf::Filter>(
    filter: &F,
    (hashes, per_thread): (&[u64], usize),
    after: impl Fn(usize, u64) + Sync,
    (checker, snapshots): (Checker, (impl Fn() -> S + Send, impl Fn(&mut S) + Send)),
    kept: impl Fn(usize) -> bool + Send,
    what: &str,
) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let threads = hashes.len() / per_thread;
    let published: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writers: Vec<_> = hashes
            .chunks(per_thread)
            .zip(&published)
            .map(|(keys, published)| {
                let after = &after;
                s.spawn(move || {
                    for (i, &key) in keys.iter().enumerate() {
                        filter.insert_hash(key).unwrap();
                        assert!(filter.contains_hash(key), "false negative after insert");
                        // Release: keys 0..=i of this writer are inserted.
                        published.store(i + 1, Ordering::Release);
                        after(i, key);
                    }
                })
            })
            .collect();
        let (published, done) = (&published, &done);
        let checker = s.spawn(move || {
            check_published(
                checker,
                filter,
                snapshots,
                (hashes, per_thread),
                published,
                done,
                kept,
                what,
            )
        });
        join_writers(writers, done);
        assert!(checker.join().unwrap() > 0);
    });
}

/// [`check_published_keys`] for `&self` snapshots: until `done` is set (and at least 20 rounds
/// have run), reads every writer's published count, takes a snapshot with `take`, checks it with
/// `valid` and asserts it holds every published key that `kept` says stays stored. Returns the
/// number of rounds.
pub(crate) fn check_published_keys_in_snapshots<S: conqf::Filter>(
    take: impl Fn() -> S,
    valid: impl Fn(&mut S),
    (hashes, per_thread): (&[u64], usize),
    published: &[std::sync::atomic::AtomicUsize],
    done: &std::sync::atomic::AtomicBool,
    kept: impl Fn(usize) -> bool,
) -> usize {
    use std::sync::atomic::Ordering;
    let mut rounds = 0;
    while !done.load(Ordering::Acquire) || rounds < 20 {
        // Acquire: pairs with the writers' Release, so their inserts happened before the call.
        let upto: Vec<usize> = published
            .iter()
            .map(|p| p.load(Ordering::Acquire))
            .collect();
        let mut snapshot = take();
        valid(&mut snapshot);
        for (t, &upto) in upto.iter().enumerate() {
            for i in (0..upto).filter(|&i| kept(i)) {
                let h = hashes[t * per_thread + i];
                assert!(
                    snapshot.contains_hash(h),
                    "snapshot {rounds} lost key {h:#x} (writer {t}, key {i} of {upto})"
                );
            }
        }
        rounds += 1;
    }
    rounds
}

/// Joins the writer threads of a stress test, then sets `done` so its checker stops, and only
/// then passes a writer's panic on: a checker waiting for a `done` that a panicked writer never
/// let the test set would keep the test running for ever. Returns what the writers returned.
pub(crate) fn join_writers<T>(
    writers: Vec<std::thread::ScopedJoinHandle<'_, T>>,
    done: &std::sync::atomic::AtomicBool,
) -> Vec<T> {
    let results: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
    done.store(true, std::sync::atomic::Ordering::Release);
    results
        .into_iter()
        .map(|result| result.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        .collect()
}

/// Sets its flag when dropped: the thread that checks a filter while writers churn it stops them
/// when it ends, also by a failed assertion (which would otherwise leave the scope waiting).
pub(crate) struct StopOnDrop<'a>(pub(crate) &'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        // Relaxed: only a stop signal; the scope's join orders everything else.
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the threads that churn a filter ([`churn`]) share with the thread that checks the
/// filter beside them: a stop flag and how many insert-and-remove pairs they made.
#[derive(Default)]
pub(crate) struct Churning {
    stop: std::sync::atomic::AtomicBool,
    pairs: std::sync::atomic::AtomicUsize,
}

impl Churning {
    /// Insert-and-remove pairs the churners make, at the least, while a check loop runs.
    const MIN_PAIRS: usize = 20_000;

    /// Stops the churners when dropped (also when a check fails).
    pub(crate) fn stopper(&self) -> StopOnDrop<'_> {
        StopOnDrop(&self.stop)
    }

    /// Whether a check loop that made `round` checks goes on: until it made `rounds` and the
    /// churners made [`MIN_PAIRS`](Self::MIN_PAIRS) pairs, so the checks overlap the churn
    /// however the threads are scheduled (at most `1000 rounds` checks, in case a churner
    /// died: its panic then ends the test when the scope joins it).
    pub(crate) fn keep_checking(&self, round: usize, rounds: usize) -> bool {
        // Relaxed: a progress count; the scope's join orders everything else.
        let pairs = self.pairs.load(std::sync::atomic::Ordering::Relaxed);
        round < rounds || (pairs < Self::MIN_PAIRS && round < 1000 * rounds)
    }
}

/// Inserts and removes each of `keys` in turn, round after round, until told to stop: keeps
/// shifting the runs of the other keys under a concurrent reader.
pub(crate) fn churn<F: conqf::Filter + conqf::Remove>(
    filter: &F,
    keys: &[u64],
    churning: &Churning,
) {
    for &h in keys.iter().cycle().take(10_000_000) {
        // Relaxed: as in `StopOnDrop`.
        if churning.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        filter.insert_hash(h).unwrap();
        assert!(filter.remove_hash(h).unwrap());
        // Relaxed: as in `keep_checking`.
        churning
            .pairs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A batch write through `&self`: how many hashes it stored or removed.
pub(crate) type BatchWrite<F> = fn(&F, &[u64]) -> Result<usize, conqf::Error>;

/// A batch lookup through `&self`, answering into the slice.
pub(crate) type BatchLookup<F> = fn(&F, &[u64], &mut [bool]) -> Result<(), conqf::Error>;

/// The `&self` batch methods of a growing filter, for [`batches_race_growth`].
pub(crate) struct Batches<F> {
    pub(crate) insert: BatchWrite<F>,
    pub(crate) contains: BatchLookup<F>,
    pub(crate) remove: BatchWrite<F>,
}

/// Two threads insert their halves of `hashes` (distinct fingerprints) by batches of 1,000
/// into `filter`, which grows meanwhile, each checking after every batch that the batch and
/// all its earlier ones are found (no false negative while the other thread's batches grow the
/// table); then one removes its half by batches while the other keeps looking up its own half,
/// which must stay found. Every insert counts as new and every removal finds its key.
pub(crate) fn batches_race_growth<F: conqf::Filter + Sync>(
    filter: &F,
    hashes: &[u64],
    batches: Batches<F>,
) {
    const BATCH: usize = 1000;
    let halves: Vec<&[u64]> = hashes.chunks(hashes.len().div_ceil(2)).collect();
    std::thread::scope(|s| {
        for half in &halves {
            let batches = &batches;
            s.spawn(move || {
                let mut found = vec![false; half.len()];
                for (i, batch) in half.chunks(BATCH).enumerate() {
                    assert_eq!((batches.insert)(filter, batch), Ok(batch.len()));
                    let done = (i * BATCH + batch.len()).min(half.len());
                    (batches.contains)(filter, &half[..done], &mut found[..done]).unwrap();
                    assert!(found[..done].iter().all(|&f| f), "false negative");
                }
            });
        }
    });
    let (removed, kept) = (halves[0], halves[1]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(|| {
            let _stop = StopOnDrop(stop);
            for batch in removed.chunks(BATCH) {
                assert_eq!((batches.remove)(filter, batch), Ok(batch.len()));
            }
        });
        let mut found = vec![false; kept.len()];
        // Relaxed: as in `StopOnDrop`.
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            (batches.contains)(filter, kept, &mut found).unwrap();
            assert!(found.iter().all(|&f| f), "false negative beside removals");
        }
    });
    assert_eq!(filter.len(), kept.len());
}
