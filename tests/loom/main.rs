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
    check_with_branches(preemptions, None, model);
}

/// As [`check`], with loom's limit on the branches of one execution raised to `max_branches`
/// where given (models whose operations make hundreds of atomic accesses).
///
/// Fails if loom ran the model only once: then it explored no interleaving and the model could
/// not have failed. That happens when no two threads touch the same atomic, and also, with loom
/// 0.7, when the work that should race a spawned thread runs on the model's own main thread
/// (seen with `CountingQf`: one execution, where two spawned threads give hundreds), so the
/// models run every racing operation on a spawned thread.
pub(crate) fn check_with_branches(
    preemptions: Option<usize>,
    max_branches: Option<usize>,
    model: impl Fn() + Sync + Send + 'static,
) {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = executions.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions;
    if let Some(max_branches) = max_branches {
        builder.max_branches = max_branches;
    }
    builder.check(move || {
        // Relaxed: a plain count, read after `check` returns on this thread.
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    // Relaxed: as above.
    let executions = executions.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("loom explored {executions} executions");
    assert!(
        executions > 1,
        "loom ran the model once: it explored no interleaving"
    );
}
