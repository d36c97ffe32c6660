//! Loom model of the `len` counter's stripe hand-over (`src/counter.rs`, "Owned stripes"): a
//! thread that holds a stripe number adds to its stripe with a plain load and store, and the
//! number passes to the next thread through the claim word's Release and Acquire. With either
//! ordering weakened, the next holder can load the stripe from before the last holder's store
//! and overwrite it: an add is lost.

use conqf::counter_loom::OwnedStripes;
use loom::sync::Arc;
use loom::thread;

/// Adds `n` through the one stripe number, waiting while another thread holds it.
fn add_owning(counter: &OwnedStripes, n: usize) {
    while !counter.add_while_owning(n) {
        thread::yield_now();
    }
}

/// Two threads take turns with the one number (each waits for the other to give it back) while a
/// third adds to the shared stripe: no add is lost.
#[test]
fn a_stripe_number_passed_between_threads_loses_no_add() {
    super::check(Some(3), || {
        let counter = Arc::new(OwnedStripes::new());
        let threads: Vec<_> = [1usize, 10]
            .into_iter()
            .map(|n| {
                let counter = Arc::clone(&counter);
                thread::spawn(move || add_owning(&counter, n))
            })
            .collect();
        counter.add_shared(100);
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(counter.sum(), 111);
    });
}
