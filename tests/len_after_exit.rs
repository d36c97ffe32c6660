//! `len` stays exact when a thread keeps inserting from a thread-local destructor after it gave
//! its stripe number back (`src/counter.rs`, "Owned stripes"): those adds must go to a shared
//! stripe with read-modify-writes, not to the stripe the number names, which the thread that
//! claims the number next writes with plain loads and stores meanwhile. (A mutant that gave the
//! number back but kept adding to its stripe lost adds here; the race is timing-dependent, so
//! each round gives it a few hundred thousand adds on each side.)

use std::sync::{Barrier, Mutex};

use conqf::{Filter, LockFreeCuckooFilter, Remove};

/// Inserts per thread per round.
const INSERTS: u64 = 300_000;
const ROUNDS: u64 = 16;

/// The filter (leaked: the destructor needs a `'static` one), emptied after each round.
static FILTER: Mutex<Option<&'static LockFreeCuckooFilter>> = Mutex::new(None);
/// The exiting thread's destructor and the claimer meet here twice: once the number was given
/// back, and once the claimer claimed it.
static MEET: Mutex<Option<&'static Barrier>> = Mutex::new(None);

fn filter() -> &'static LockFreeCuckooFilter {
    FILTER.lock().unwrap().expect("set by the round")
}

fn meet() {
    let barrier = MEET.lock().unwrap().expect("set by the round");
    barrier.wait();
}

fn insert_range(filter: &LockFreeCuckooFilter, tag: u64) {
    for i in 0..INSERTS {
        assert_eq!(filter.insert(&(tag, i)), Ok(true));
    }
}

/// Inserts from the exiting thread's destructor, after its number was given back.
struct InsertOnExit(u64);

impl Drop for InsertOnExit {
    fn drop(&mut self) {
        let filter = filter();
        meet();
        meet();
        insert_range(filter, self.0);
    }
}

std::thread_local! {
    static ON_EXIT: std::cell::RefCell<Option<InsertOnExit>> =
        const { std::cell::RefCell::new(None) };
}

#[test]
fn inserts_from_a_destructor_after_the_number_was_given_back_are_all_counted() {
    *MEET.lock().unwrap() = Some(Box::leak(Box::new(Barrier::new(2))));
    let shared: &'static LockFreeCuckooFilter =
        Box::leak(Box::new(LockFreeCuckooFilter::with_bits(20, 16).unwrap()));
    *FILTER.lock().unwrap() = Some(shared);
    for round in 0..ROUNDS {
        // No other thread of this binary holds a number, so the exiting thread claims the
        // lowest and, once it gave it back, the claimer claims that one.
        let claimer = std::thread::spawn(move || {
            let filter = filter();
            meet();
            // The first insert claims the number.
            assert_eq!(filter.insert(&(1u64, u64::MAX)), Ok(true));
            meet();
            insert_range(filter, 1);
        });
        // Registered before the first insert claims a number, so (destructors run in reverse
        // order of registration) it runs after the number was given back.
        let exiting = std::thread::spawn(move || {
            ON_EXIT.with(|slot| *slot.borrow_mut() = Some(InsertOnExit(0)));
            assert_eq!(filter().insert(&(0u64, u64::MAX)), Ok(true));
        });
        exiting.join().unwrap();
        claimer.join().unwrap();
        assert_eq!(
            shared.len() as u64,
            2 * (INSERTS + 1),
            "round {round}: an add was lost"
        );
        // Empty again for the next round (this thread's removals take a number of their own,
        // which it keeps: the others still meet at the lowest free one).
        for tag in 0..2u64 {
            assert_eq!(shared.remove(&(tag, u64::MAX)), Ok(true));
            for i in 0..INSERTS {
                assert_eq!(shared.remove(&(tag, i)), Ok(true));
            }
        }
        assert_eq!(shared.len(), 0);
    }
}
