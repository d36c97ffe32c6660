//! Loom model checks of every locking protocol. Compiled only with `--cfg loom`:
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom`.
#![cfg(loom)]

mod batch;
mod counter;
mod counting;
mod cuckoo;
mod cuckoo_persist;
mod expandable;
mod externally_locked;
mod growing;
mod linear_probing;
mod locally_locked;
mod persist;
mod two_bit;

/// Runs a model under every interleaving loom explores with at most `preemptions` preemptions
/// (`None`: all of them). Shared by the protocol modules.
pub(crate) fn check(preemptions: Option<usize>, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions;
    builder.check(model);
}
