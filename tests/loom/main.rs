//! Loom model checks of every locking protocol. Compiled only with `--cfg loom`:
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom`.
#![cfg(loom)]

mod externally_locked;
mod linear_probing;
mod locally_locked;
