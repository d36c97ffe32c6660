//! Loom models of `LinearProbingQf` (paper 000 §3.1): each is named after the hazard it checks.
//!
//! Tables have 8 addressable slots (plus the overflow tail) of 16 bits, 4 per group, so slots
//! 0-3 are group 0 and slots 4-7 group 1. Every key's fingerprint is chosen, so keys collide on
//! purpose. After every interleaving: no lost insert, each fingerprint stored once, no false
//! negative, and the table's invariants hold.

use conqf::{Error, Filter, LinearProbingQf};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

const Q: u32 = 3;
const R: u32 = 16;

/// The hash of fingerprint `(quotient, remainder)`; remainders are non-zero, so the filter uses
/// them as they are.
fn key(quotient: u64, remainder: u64) -> u64 {
    assert_ne!(remainder, 0);
    ((quotient << R) | remainder) << (64 - Q - R)
}

/// A filter with no load cap below its 8 slots, holding `keys` (inserted before any race).
fn filter_with(keys: &[u64]) -> Arc<LinearProbingQf> {
    let filter = LinearProbingQf::builder()
        .max_load(1.0)
        .build_with_bits(Q, R)
        .unwrap();
    for &k in keys {
        assert_eq!(filter.insert_hash(k), Ok(true));
    }
    Arc::new(filter)
}

/// Inserts `here` on this thread while a spawned thread inserts `spawned`; returns both answers,
/// this thread's first.
fn insert_racing(
    filter: &Arc<LinearProbingQf>,
    here: u64,
    spawned: u64,
) -> (Result<bool, Error>, Result<bool, Error>) {
    let other = filter.clone();
    let t = thread::spawn(move || other.insert_hash(spawned));
    let mine = filter.insert_hash(here);
    (mine, t.join().unwrap())
}

/// Runs `f` under every interleaving loom explores. No preemption bound: these models are
/// small enough to explore exhaustively (all of them together take well under a second).
fn model(f: impl Fn() + Sync + Send + 'static) {
    super::check(None, f);
}

/// Two inserts with different remainders race for the same first empty slot: the CAS loser
/// must move on to the next slot, not overwrite the winner or give up.
#[test]
fn racing_inserts_for_one_empty_slot_both_store() {
    model(|| {
        let filter = filter_with(&[key(1, 9)]);
        let (mine, theirs) = insert_racing(&filter, key(1, 6), key(1, 5));
        assert_eq!((mine, theirs), (Ok(true), Ok(true)));
        for k in [key(1, 9), key(1, 5), key(1, 6)] {
            assert!(filter.contains_hash(k));
        }
        assert_eq!(filter.len(), 3);
        filter.check_invariants().unwrap();
    });
}

/// The same fingerprint inserted twice at once: the CAS loser must re-read the slot, find its
/// own remainder and answer `Ok(false)` instead of storing a second copy.
#[test]
fn racing_duplicate_inserts_store_once() {
    model(|| {
        let filter = filter_with(&[key(1, 9)]);
        let (mine, theirs) = insert_racing(&filter, key(1, 5), key(1, 5));
        let mut results = [mine, theirs];
        results.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(results, [Ok(false), Ok(true)]);
        assert!(filter.contains_hash(key(1, 5)));
        assert_eq!(filter.len(), 2);
        filter.check_invariants().unwrap();
    });
}

/// One insert scans out of group 0 (slots 2 and 3 are full) into group 1 while another fills
/// slot 4, group 1's first slot, directly: the scanner's view of group 1 may be stale, and it
/// must still land in a free slot without losing either key.
#[test]
fn insert_crossing_a_group_boundary_races_one_in_the_next_group() {
    model(|| {
        let filter = filter_with(&[key(2, 1), key(3, 2)]);
        let (mine, theirs) = insert_racing(&filter, key(2, 7), key(4, 8));
        assert_eq!((mine, theirs), (Ok(true), Ok(true)));
        for k in [key(2, 1), key(3, 2), key(2, 7), key(4, 8)] {
            assert!(filter.contains_hash(k));
        }
        assert_eq!(filter.len(), 4);
        filter.check_invariants().unwrap();
    });
}

/// The same remainder from two canonical slots whose stretches meet at slot 4, across the group
/// boundary: whichever stores it first, the other finds it in its stretch (`Ok(false)`, the
/// filter's inherent fingerprint collision), so it is stored once and both keys answer `true`.
#[test]
fn same_remainder_from_neighbouring_stretches_across_groups_is_stored_once() {
    model(|| {
        let filter = filter_with(&[key(2, 1), key(3, 2)]);
        let (mine, theirs) = insert_racing(&filter, key(2, 7), key(4, 7));
        assert!(matches!(
            (mine, theirs),
            (Ok(true), Ok(false)) | (Ok(false), Ok(true))
        ));
        assert!(filter.contains_hash(key(2, 7)) && filter.contains_hash(key(4, 7)));
        assert_eq!(filter.len(), 3);
        filter.check_invariants().unwrap();
    });
}

/// A query that starts after an insert finished (a flag, set after the insert returns, orders
/// them) must find the key, even while another insert changes the same groups.
#[test]
fn contains_never_misses_a_finished_insert() {
    model(|| {
        let filter = filter_with(&[key(2, 1), key(3, 2)]);
        let finished = Arc::new(AtomicBool::new(false));
        let (other, flag) = (filter.clone(), finished.clone());
        let t = thread::spawn(move || {
            let stored = other.insert_hash(key(2, 7));
            // Release: the insert happens before any query that sees the flag set.
            flag.store(true, Ordering::Release);
            stored
        });
        let mine = filter.insert_hash(key(4, 8));
        // Acquire: pairs with the Release above.
        let seen = finished.load(Ordering::Acquire);
        let found = filter.contains_hash(key(2, 7));
        assert!(!seen || found, "a finished insert was missed");
        assert!(
            filter.contains_hash(key(4, 8)),
            "this thread's own insert was missed"
        );
        let theirs = t.join().unwrap();
        assert_eq!((mine, theirs), (Ok(true), Ok(true)));
        assert!(filter.contains_hash(key(2, 7)));
        filter.check_invariants().unwrap();
    });
}

/// A positive answer must be ordered after the insert it found: if thread A inserts `k1` and
/// then `k2`, a thread that finds `k2` must then find `k1` (message passing through the filter;
/// this needs the Release CAS and the Acquire loads, not just coherence).
///
/// The reader is a second spawned thread rather than the main one: loom's DPOR remembers only
/// the last access to each atomic, so a main-thread load made before the writer's own load and
/// CAS of the same group would not be revisited, and a `yield_now` would stop loom from
/// returning the stale values this model is about.
#[test]
fn positive_answer_orders_earlier_inserts() {
    model(|| {
        let filter = filter_with(&[]);
        super::race(
            &filter,
            |writer| {
                assert_eq!(writer.insert_hash(key(0, 5)), Ok(true)); // group 0
                assert_eq!(writer.insert_hash(key(5, 6)), Ok(true)); // group 1
            },
            |reader| {
                if reader.contains_hash(key(5, 6)) {
                    assert!(
                        reader.contains_hash(key(0, 5)),
                        "k2 found but earlier k1 missed"
                    );
                }
            },
        );
        assert!(filter.contains_hash(key(0, 5)) && filter.contains_hash(key(5, 6)));
    });
}

/// The same through an insert that answers `Ok(false)`: if thread A inserts `k1` and then
/// `k2`, a thread whose insert of `k2` finds A's copy must then find `k1` (the scan's loads and
/// the failed CAS are Acquire).
#[test]
fn duplicate_answer_orders_earlier_inserts() {
    model(|| {
        let filter = filter_with(&[]);
        super::race(
            &filter,
            |writer| {
                assert_eq!(writer.insert_hash(key(0, 5)), Ok(true)); // group 0
                                                                     // Group 1; Ok(false) if B stored k2 first.
                writer.insert_hash(key(5, 6)).unwrap();
            },
            |reader| {
                if reader.insert_hash(key(5, 6)) == Ok(false) {
                    assert!(
                        reader.contains_hash(key(0, 5)),
                        "k2 present but earlier k1 missed"
                    );
                }
            },
        );
        assert!(filter.contains_hash(key(0, 5)) && filter.contains_hash(key(5, 6)));
    });
}

/// A filter capped at `cap` places of its 8 slots, empty.
fn capped(cap: usize) -> Arc<LinearProbingQf> {
    let filter = LinearProbingQf::builder()
        .max_load(cap as f64 / 8.0)
        .build_with_bits(Q, R)
        .unwrap();
    assert_eq!(filter.capacity(), cap);
    Arc::new(filter)
}

/// Two inserts race for the last place under the load cap (one key): exactly one stores, the
/// other gets `Full` and changes nothing. Under loom the cap is split over two stripes and a
/// key's quotient picks the stripe it takes from first: the one place is in stripe 0, so the
/// insert with quotient 1 finds its stripe dry and must look in the other one.
#[test]
fn racing_for_the_last_place_under_the_cap() {
    model(|| {
        let filter = capped(1);
        let (mine, theirs) = insert_racing(&filter, key(6, 9), key(1, 5));
        match (mine, theirs) {
            (Ok(true), Err(Error::Full)) => {
                assert!(filter.contains_hash(key(6, 9)) && !filter.contains_hash(key(1, 5)))
            }
            (Err(Error::Full), Ok(true)) => {
                assert!(filter.contains_hash(key(1, 5)) && !filter.contains_hash(key(6, 9)))
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(filter.len(), 1);
        filter.check_invariants().unwrap();
    });
}

/// Two inserts whose keys start at the same stripe take the last two places, one in each
/// stripe: the CAS loser on stripe 1 (or the one that finds it dry) must move to stripe 0, not
/// report `Full`.
#[test]
fn two_inserts_share_the_last_two_places() {
    model(|| {
        let filter = capped(2);
        let (mine, theirs) = insert_racing(&filter, key(3, 9), key(1, 5));
        assert_eq!((mine, theirs), (Ok(true), Ok(true)));
        assert!(filter.contains_hash(key(1, 5)) && filter.contains_hash(key(3, 9)));
        assert_eq!(filter.len(), 2);
        filter.check_invariants().unwrap();
    });
}

/// The place a duplicate insert gives back is found by a later insert that has seen every
/// stripe dry. Two inserts of one key take both places of a cap of 2; the one whose CAS finds
/// the key already stored gives its place back. Another key then needs that place: once the
/// other thread's insert has returned (and the main thread has seen so), `Full` would be a
/// lost place; while it is still running, `Full` is allowed (it counts takes in flight, as
/// `len` does).
#[test]
fn a_place_given_back_is_found_again() {
    model(|| {
        let filter = capped(2);
        let finished = Arc::new(AtomicBool::new(false));
        let (other, done) = (filter.clone(), finished.clone());
        let t = thread::spawn(move || {
            let answer = other.insert_hash(key(1, 5));
            done.store(true, Ordering::Release);
            answer
        });
        let mine = filter.insert_hash(key(1, 5));
        let saw_finished = finished.load(Ordering::Acquire);
        let second = filter.insert_hash(key(2, 7));
        let theirs = t.join().unwrap();
        let mut firsts = [mine, theirs];
        firsts.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(firsts, [Ok(false), Ok(true)]);
        match second {
            Ok(true) => assert!(filter.contains_hash(key(2, 7))),
            Err(Error::Full) => {
                assert!(!saw_finished, "a place given back was lost");
                assert!(!filter.contains_hash(key(2, 7)));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(filter.len(), 1 + usize::from(second.is_ok()));
        filter.check_invariants().unwrap();
        // Every place is accounted for: whatever is left can still be filled.
        let _ = filter.insert_hash(key(4, 11));
        assert_eq!(filter.len(), 2);
    });
}

/// A refusal that learns a stripe is dry from another thread's mark, not from the stripe, must
/// still see the keys stored before that stripe's last take. `X` stores `K1` and then takes the
/// last place (stripe 1) for `K2`; `M`, starting at stripe 1, finds it dry and marks it; the main
/// thread inserts `K1` too, may skip stripe 1 through the mark, and is refused. If `X` got both
/// places, `K1` was stored before the refusal, so the main thread must answer `Ok`, not `Full`:
/// this fails if the dry mask is read or marked `Relaxed`.
#[test]
fn a_refusal_through_the_dry_mask_sees_keys_stored_before_the_last_take() {
    super::check(Some(3), || {
        let filter = capped(2);
        let (k1, k2, m) = (key(0, 5), key(2, 6), key(1, 7));
        let (x, y) = (filter.clone(), filter.clone());
        let tx = thread::spawn(move || (x.insert_hash(k1), x.insert_hash(k2)));
        let tm = thread::spawn(move || y.insert_hash(m));
        let mine = filter.insert_hash(k1);
        let (x_k1, x_k2) = tx.join().unwrap();
        let theirs = tm.join().unwrap();
        if x_k2 == Ok(true) {
            assert_ne!(
                mine,
                Err(Error::Full),
                "Full for a key stored before the refusal"
            );
        }
        assert!(x_k1.is_ok() || mine.is_ok(), "{x_k1:?} {mine:?}");
        let stored = [mine, x_k1, x_k2, theirs]
            .iter()
            .filter(|r| **r == Ok(true))
            .count();
        assert_eq!(filter.len(), stored);
        filter.check_invariants().unwrap();
    });
}

/// A refusal that finds every stripe dry and then the returned places at 0 must see the keys
/// stored before the take that emptied them. First two inserts of one key race (stripe 0, two
/// of the three places): the one that finds its key stored gives its place back. Then `X`
/// stores `K1` and takes the last place for `K2` (from the returned places, when the first race
/// gave one back), while `C` inserts `K1` too. If `X` got both places, `C` was refused after
/// `X`'s last take, so `Full` would deny a key stored before it. Fails (plain mode) if
/// `take_one` loads the returned places `Relaxed` where it finds them at 0. From a review of
/// `LinearProbingQf`.
#[test]
fn a_refusal_through_the_returned_places_sees_keys_stored_before_the_last_take() {
    super::check(Some(3), || {
        let filter = capped(3);
        let k0 = key(4, 3);
        let (a, b) = super::race(
            &filter,
            move |f| f.insert_hash(k0),
            move |f| f.insert_hash(k0),
        );
        let mut firsts = [a, b];
        firsts.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(firsts, [Ok(false), Ok(true)]);
        // Both start at stripe 1, which holds one place.
        let (k1, k2) = (key(1, 5), key(3, 6));
        let ((x1, x2), c) = super::race(
            &filter,
            move |x| (x.insert_hash(k1), x.insert_hash(k2)),
            move |c| c.insert_hash(k1),
        );
        if x2 == Ok(true) {
            assert_ne!(
                c,
                Err(Error::Full),
                "Full for a key stored before the refusal ({x1:?})"
            );
        }
        filter.check_invariants().unwrap();
    });
}

/// A place given back carries to its next taker what the giver learned after taking it: the
/// key whose stored copy made the giver's insert a duplicate. Two inserts of `K` race for the
/// two places (cap 2): one stores `K`, the other may take the other place, find `K` stored and
/// give the place back. `C`, ordered after both only by `Relaxed` flags (so it has seen
/// nothing of theirs), then takes that place from the returned ones for `K3`, and the main
/// thread, after joining `C` (and no other thread), inserts `K` and is refused a place: `K`
/// was stored before the giver gave the place back, so before the take it counts as taken.
/// It must reload and answer `Ok(false)`, not `Full`. Only the give-back's `Release` carries
/// `K`'s store to `C` and on (the stripes' last takes came before it); with a `Relaxed`
/// give-back this fails in plain mode, and no other model does. From outside the model cannot
/// tell a give-back from a duplicate found in the scan, which takes no place (then `C` takes
/// the other stripe's and nothing orders `K`'s store before it, so `Full` is allowed): it
/// checks the answer only when `C` read the count at 2 before its insert (both stripes empty,
/// nothing returned yet), which only a take by the losing insert gives, and then got a place,
/// which can only be the one given back. The failing execution needs no preemption, only stale
/// reads, so one preemption is enough (three explored 7 million executions in 8 minutes).
#[test]
fn a_refusal_after_a_place_given_back_sees_the_duplicate_its_giver_found() {
    super::check(Some(1), || {
        let filter = capped(2);
        // `K3` in group 1: an insert that wrote group 0 would have read `K` there (its CAS reads
        // the newest word), and carried it on without the give-back.
        let (k, k3) = (key(1, 5), key(6, 7));
        let flags = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let racers: Vec<_> = (0..2)
            .map(|i| {
                let (f, flags) = (filter.clone(), flags.clone());
                thread::spawn(move || {
                    let answer = f.insert_hash(k);
                    flags[i].store(true, Ordering::Relaxed);
                    answer
                })
            })
            .collect();
        let (f, c_flags) = (filter.clone(), flags.clone());
        let c = thread::spawn(move || {
            super::wait_relaxed(&c_flags[0]);
            super::wait_relaxed(&c_flags[1]);
            let saw_two = f.len() == 2;
            (saw_two, f.insert_hash(k3))
        });
        // Joined first: the main thread's insert happens after `C`'s, and after nothing else.
        let (saw_two, theirs) = c.join().unwrap();
        let mine = filter.insert_hash(k);
        let mut firsts: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        firsts.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(firsts, [Ok(false), Ok(true)]);
        if saw_two && theirs == Ok(true) {
            assert_eq!(mine, Ok(false), "Full for a key its giver found stored");
        }
        assert_ne!(mine, Ok(true));
        assert_eq!(filter.len(), 1 + usize::from(theirs == Ok(true)));
        filter.check_invariants().unwrap();
    });
}
