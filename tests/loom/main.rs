//! Loom model checks of every locking protocol. Compiled only with `--cfg loom`:
//! `RUSTFLAGS="--cfg loom" cargo test --test loom`.
#![cfg(loom)]

mod batch;
mod bloom;
mod counter;
mod counting;
mod cuckoo;
mod cuckoo_persist;
// Only the trait's queries and invariant check are used here.
#[allow(dead_code)]
#[path = "../common/cuckoo.rs"]
mod cuckoo_under_test;
mod expandable;
mod externally_locked;
mod growing;
mod linear_probing;
mod locally_locked;
mod persist;
mod two_bit;

/// Runs a model under every interleaving loom explores with at most `preemptions` preemptions
/// (`None`: all of them), plus [`extra_preemptions`] where bounded. Shared by the protocol
/// modules.
pub(crate) fn check(preemptions: Option<usize>, model: impl Fn() + Sync + Send + 'static) {
    check_with_branches(preemptions, None, model);
}

/// As [`check`], with loom's limit on the branches of one execution raised to `max_branches`
/// where given (models whose operations make hundreds of atomic accesses).
///
/// Fails if loom ran the model only once: then it explored no interleaving and the model could
/// not have failed. Besides a model whose threads share nothing, that is what a query on the
/// model's main thread racing one spawned writer gives: loom's first schedule runs the main
/// thread's loads before the writer's stores, and its reduction never moves a load after a later
/// store (the load-then-store blind spot of loom issues #166 and #392; the read-modify-write
/// mode of `CONQF_LOOM_RMW_LOADS` closes it for group loads). Seen with `CountingQf` and
/// `LocallyLockedQf` queries; with both operations on spawned threads, which operation starts
/// first is itself a branch, so the models do that.
pub(crate) fn check_with_branches(
    preemptions: Option<usize>,
    max_branches: Option<usize>,
    model: impl Fn() + Sync + Send + 'static,
) {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = executions.clone();
    let started = std::time::Instant::now();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions.map(|bound| bound + extra_preemptions());
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
    // The test's name (libtest names its thread after it): tests run two at a time, so their
    // lines interleave. The time tells which models CI's budget goes to (it varies with the
    // machine's load; the executions do not).
    let model_name = std::thread::current().name().unwrap_or("?").to_owned();
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("loom explored {executions} executions in {seconds:.1} s: {model_name}");
    assert!(
        executions > 1,
        "loom ran the model once: it explored no interleaving"
    );
}

/// How many preemptions every bounded model gets beyond its own bound: the value of
/// `CONQF_LOOM_EXTRA_PREEMPTIONS` (0 when unset, as in CI). A deeper search than CI's, for a
/// machine with time to spend: the models' own bounds cover the races they set up, and one
/// preemption more multiplied the executions of the `LocallyLockedQf` models by 1.3 to 8.7
/// (2026-11-30; their time from 66 s to 333 s).
fn extra_preemptions() -> usize {
    match std::env::var("CONQF_LOOM_EXTRA_PREEMPTIONS") {
        Err(std::env::VarError::NotPresent) => 0,
        Ok(value) => value.trim().parse().unwrap_or_else(|_| {
            panic!("CONQF_LOOM_EXTRA_PREEMPTIONS={value:?} is not a whole number")
        }),
        Err(error) => panic!("CONQF_LOOM_EXTRA_PREEMPTIONS: {error}"),
    }
}

/// Runs `a` and `b` on two spawned loom threads, each with its own clone of `shared` (both
/// cloned before either thread starts), spawns `a`'s thread first, then joins `a`'s and then
/// `b`'s, and returns their results in that order.
///
/// Both threads are spawned before either is joined and neither operation runs on the model's
/// main thread: with both on spawned threads, which one starts first is itself a branch loom
/// explores (see [`check_with_branches`] for the interleavings a main-thread operation misses).
/// A model that also works on the main thread between the spawns and the joins, or joins `b`
/// first, spawns its threads itself.
pub(crate) fn race<T, A, B>(
    shared: &loom::sync::Arc<T>,
    a: impl FnOnce(&T) -> A + Send + 'static,
    b: impl FnOnce(&T) -> B + Send + 'static,
) -> (A, B)
where
    T: Send + Sync + 'static,
    A: Send + 'static,
    B: Send + 'static,
{
    let (x, y) = (shared.clone(), shared.clone());
    let t = loom::thread::spawn(move || a(&x));
    let u = loom::thread::spawn(move || b(&y));
    (t.join().unwrap(), u.join().unwrap())
}

/// Spins until `flag` is raised. `Relaxed`: the flag only orders loom's schedule, so the waiter
/// runs after the raiser without happening after it, and loom may still give the waiter's
/// loads of other locations values older than the raiser's writes (the stale reads a model
/// checks for; README, "Model checking with loom").
pub(crate) fn wait_relaxed(flag: &loom::sync::atomic::AtomicBool) {
    while !flag.load(loom::sync::atomic::Ordering::Relaxed) {
        loom::thread::yield_now();
    }
}
