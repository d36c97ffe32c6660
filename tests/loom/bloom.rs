//! Loom models of `AtomicBloomFilter` (paper 000 §5's baseline): the orderings its answers
//! promise *through the filter* (module doc of `bloom.rs`), which coherence alone does not give.
//!
//! The filter has 2 words (128 bits) and one hash function, so a key sets one bit, chosen by the
//! top 7 bits of its hash: `K1` sets bit 0 (word 0) and `K2` bit 64 (word 1), and the two keys
//! share no word. Both operations run on spawned threads ([`super::race`]), so which one starts
//! first is itself a branch loom explores.

use conqf::{AtomicBloomFilter, Filter};
use loom::sync::Arc;
use loom::thread;

/// Sets bit 0, in word 0.
const K1: u64 = 0;
/// Sets bit 64, in word 1.
const K2: u64 = 1 << 63;

/// An empty filter of two words with one hash function.
fn empty() -> Arc<AtomicBloomFilter> {
    let filter = AtomicBloomFilter::with_memory(16, 1).unwrap();
    assert_eq!((filter.bits(), filter.hash_functions()), (128, 1));
    Arc::new(filter)
}

/// Runs `f` under every interleaving loom explores; the models are small enough for no
/// preemption bound.
fn model(f: impl Fn() + Sync + Send + 'static) {
    super::check(None, f);
}

/// A positive answer is ordered after the insert that set the bits it found: if thread A
/// inserts `K1` and then `K2`, a thread that finds `K2` must then find `K1` (message passing
/// through the filter). Fails if `contains_hash` loads the words `Relaxed`, or if the insert's
/// `fetch_or` is not `Release` (e.g. `Acquire` instead of `AcqRel`): the reader may then see
/// `K2`'s bit and still read word 0 from before `K1`'s `fetch_or`.
#[test]
fn bloom_positive_answer_orders_earlier_inserts() {
    model(|| {
        let filter = empty();
        super::race(
            &filter,
            |writer| {
                assert_eq!(writer.insert_hash(K1), Ok(true));
                assert_eq!(writer.insert_hash(K2), Ok(true));
            },
            |reader| {
                if reader.contains_hash(K2) {
                    assert!(reader.contains_hash(K1), "K2 found but earlier K1 missed");
                }
            },
        );
        assert!(filter.contains_hash(K1) && filter.contains_hash(K2));
    });
}

/// The same through an insert that answers `Ok(false)` ("already present"): if thread A
/// inserts `K1` and then `K2`, a thread whose insert of `K2` finds its bit set by A must then
/// find `K1`. The insert tests each bit with a load before its `fetch_or`; fails if that load
/// is `Relaxed`, since a bit found set there decides `Ok(false)` without the `fetch_or`.
#[test]
fn bloom_duplicate_answer_orders_earlier_inserts() {
    model(|| {
        let filter = empty();
        super::race(
            &filter,
            |writer| {
                assert_eq!(writer.insert_hash(K1), Ok(true));
                // Ok(false) if the other thread set K2's bit first.
                writer.insert_hash(K2).unwrap();
            },
            |reader| {
                if reader.insert_hash(K2) == Ok(false) {
                    assert!(reader.contains_hash(K1), "K2 present but earlier K1 missed");
                }
            },
        );
        assert!(filter.contains_hash(K1) && filter.contains_hash(K2));
        assert_eq!(filter.len(), 2);
    });
}

/// As [`bloom_positive_answer_orders_earlier_inserts`] when thread A's insert of `K1` found its
/// bit set already, by a third thread C: A's `Ok(false)` then sets no bit and runs no release
/// fence, so only A's `Release` `fetch_or` for `K2` carries C's insert (which A's `Acquire`
/// load saw) on to a thread that finds `K2`. Fails if that `fetch_or` is `Acquire` instead of
/// `AcqRel` (where A's own `K1` bit was new, the release fence after A's insert of `K1` hides
/// the bug, which is why the two-thread model above passes then).
#[test]
fn bloom_positive_answer_orders_earlier_inserts_found_present() {
    model(|| {
        let filter = empty();
        let (c, a, b) = (filter.clone(), filter.clone(), filter.clone());
        let tc = thread::spawn(move || c.insert_hash(K1));
        let ta = thread::spawn(move || (a.insert_hash(K1), a.insert_hash(K2)));
        let tb = thread::spawn(move || {
            if b.contains_hash(K2) {
                assert!(b.contains_hash(K1), "K2 found but earlier K1 missed");
            }
        });
        let from_c = tc.join().unwrap();
        let (a_k1, a_k2) = ta.join().unwrap();
        tb.join().unwrap();
        // K1's one bit is set by exactly one of C and A.
        assert_ne!(from_c, a_k1);
        assert_eq!(a_k2, Ok(true));
        assert!(filter.contains_hash(K1) && filter.contains_hash(K2));
    });
}

/// A union in place publishes as an insert does: a thread that finds a key the union brought
/// in sees what the union's caller wrote before it. Thread A stores 1 into `note` (`Relaxed`)
/// and then takes in a filter holding `K2`; a thread that finds `K2` must then load 1. Fails if
/// the union's `fetch_or` is not `Release` (`Relaxed` or `Acquire`). The note is not a key:
/// an insert before the union would end in the insert's own release fence, which orders the
/// union's later writes for any reader that sees them, whatever their ordering.
#[test]
fn bloom_union_in_place_publishes_what_came_before() {
    model(|| {
        let shared = Arc::new((
            AtomicBloomFilter::with_memory(16, 1).unwrap(),
            loom::sync::atomic::AtomicUsize::new(0),
        ));
        let source = AtomicBloomFilter::with_memory(16, 1).unwrap();
        assert_eq!(source.insert_hash(K2), Ok(true));
        super::race(
            &shared,
            move |(filter, note)| {
                note.store(1, loom::sync::atomic::Ordering::Relaxed);
                filter.union_with(&source).unwrap();
            },
            |(filter, note)| {
                if filter.contains_hash(K2) {
                    let seen = note.load(loom::sync::atomic::Ordering::Relaxed);
                    assert_eq!(seen, 1, "K2 found but the note before the union missed");
                }
            },
        );
        assert!(shared.0.contains_hash(K2));
    });
}
