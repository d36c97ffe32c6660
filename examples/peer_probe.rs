//! One of our quotient filters against `qfilter` on the same prehashed keys, in alternating
//! rounds inside one process, with the median of the per-round ratios: the probe behind the
//! "against `qfilter`" numbers of `docs/performance-history.md` from 2026-11-26 on. On this
//! shared VM two runs minutes apart differ by up to 1.5x, while a ratio taken round by round
//! moves by a few percent, so compare builds by running their probes in turn (old, new, old,
//! new). The figures runner (`--only fig2,fig3`) gives the full picture; this gives one number
//! quickly.
//!
//! * `W=lookups` (default): both tables filled to `FILL` once, then each round times `2^20`
//!   unsuccessful and `2^20` successful lookups (fewer on small tables) on each;
//! * `W=inserts`: each round fills a fresh table of each to `FILL`;
//! * `W=band`: each round fills fresh tables to `LO` untimed and times the inserts up to `HI`
//!   (the inserts of Figure 3's last fill level);
//! * `W=removes`: each round fills fresh tables to `HI` untimed and times the removals of the
//!   keys inserted after `LO`, the last first (the table goes back from `HI` to `LO`).
//!
//! `F`: `sequential` (default), `locally-locked`, `externally-locked`, `two-bit` or `counting`
//! (`CountingQf` with one remainder bit more than the others, as in the figures). `Q` (default
//! 22), `FILL` (0.72), `LO` (0.85), `HI` (0.9), `R` rounds (9). `qfilter` is sized as in the
//! figures (`qfilter_like`).
//! Example: `W=lookups F=counting Q=18 FILL=0.9 cargo run --release --example peer_probe`.

#[path = "../benches/common/mod.rs"]
mod common;
use common::*;
use conqf::{CountingQf, Error, ExternallyLockedQf, LocallyLockedQf, SequentialQf, TwoBitQf};
use std::time::Instant;

/// One timing of each table: our rate, `qfilter`'s rate, in million operations per second.
type Round = (f64, f64);

fn main() {
    let setting = |name: &str, default: f64| -> f64 {
        std::env::var(name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{name}={v} is not a number")))
        })
    };
    let q = setting("Q", 22.0) as u32;
    let rounds = (setting("R", 9.0) as usize).max(1);
    let (fill, lo, hi) = (
        setting("FILL", 0.72),
        setting("LO", 0.85),
        setting("HI", 0.9),
    );
    let valid = (1..=30).contains(&q) && (0.0..=0.95).contains(&fill) && 0.0 <= lo && lo < hi;
    if !valid || hi > 0.95 {
        usage("Q must be in 1..=30, FILL, LO and HI in 0..=0.95 with LO < HI");
    }
    let filter = std::env::var("F").unwrap_or_else(|_| "sequential".into());
    let what = std::env::var("W").unwrap_or_else(|_| "lookups".into());
    let r = REMAINDER_BITS;
    match filter.as_str() {
        "sequential" => probe(&what, q, fill, (lo, hi), rounds, || {
            SequentialQf::with_bits(q, r)
        }),
        "locally-locked" => probe(&what, q, fill, (lo, hi), rounds, || {
            LocallyLockedQf::with_bits(q, r).map(Direct)
        }),
        "externally-locked" => probe(&what, q, fill, (lo, hi), rounds, || {
            ExternallyLockedQf::with_bits(q, r).map(Direct)
        }),
        "two-bit" => probe(&what, q, fill, (lo, hi), rounds, || {
            TwoBitQf::with_bits(q, r).map(Direct)
        }),
        "counting" => probe(&what, q, fill, (lo, hi), rounds, || {
            CountingQf::with_bits(q, r + 1).map(Direct)
        }),
        other => usage(&format!("F={other} is not one of {FILTERS}")),
    }
}

/// The values `F` takes, as `usage` and the refusal of an unknown one print them.
const FILTERS: &str = "sequential|locally-locked|externally-locked|two-bit|counting";

/// Prints why the settings were refused and the module doc's summary, then exits with 2.
fn usage(problem: &str) -> ! {
    eprintln!("peer_probe: {problem}");
    eprintln!("settings: W=lookups|inserts|band|removes F={FILTERS} Q FILL LO HI R");
    std::process::exit(2);
}

/// Runs workload `what` with our table from `make` against `qfilter` and prints the medians.
fn probe<T: SeqTable + SeqRemove>(
    what: &str,
    q: u32,
    fill: f64,
    (lo, hi): (f64, f64),
    rounds: usize,
    make: impl Fn() -> Result<T, Error>,
) {
    let make = || make().unwrap_or_else(|e| usage(&format!("the filter cannot be built: {e}")));
    let peer = || qfilter_like(q, REMAINDER_BITS);
    match what {
        "lookups" => {
            let inserted = key_hashes(POSITIVE_KEYS, items_at(q, fill));
            let count = inserted.len().clamp(1, 1 << 20);
            let absent = key_hashes(NEGATIVE_KEYS, count);
            let present: Vec<u64> = (0..count)
                .map(|i| inserted[i * inserted.len() / count])
                .collect();
            let (mut ours, mut theirs) = (make(), peer());
            fill_both(&mut ours, &mut theirs, &inserted);
            let time = |round: usize, keys: &[u64]| -> Round {
                in_turn(
                    round,
                    || rate(keys.len(), || table_count_hits(&ours, keys)),
                    || rate(keys.len(), || table_count_hits(&theirs, keys)),
                )
            };
            let (absent, present): (Vec<Round>, Vec<Round>) = (0..rounds)
                .map(|round| (time(round, &absent), time(round, &present)))
                .unzip();
            report(&format!("absent lookups at {fill} fill"), &absent);
            report(&format!("present lookups at {fill} fill"), &present);
        }
        "inserts" => {
            let keys = key_hashes(POSITIVE_KEYS, items_at(q, fill));
            let runs: Vec<Round> = (0..rounds)
                .map(|round| {
                    let (mut ours, mut theirs) = (make(), peer());
                    in_turn(
                        round,
                        || rate(keys.len(), || table_insert_all(&mut ours, &keys)),
                        || rate(keys.len(), || table_insert_all(&mut theirs, &keys)),
                    )
                })
                .collect();
            report(&format!("inserts up to {fill} fill"), &runs);
        }
        "band" => {
            let keys = key_hashes(POSITIVE_KEYS, items_at(q, hi));
            let (before, band) = keys.split_at(items_at(q, lo));
            let runs: Vec<Round> = (0..rounds)
                .map(|round| {
                    let (mut ours, mut theirs) = (make(), peer());
                    fill_both(&mut ours, &mut theirs, before);
                    in_turn(
                        round,
                        || rate(band.len(), || table_insert_all(&mut ours, band)),
                        || rate(band.len(), || table_insert_all(&mut theirs, band)),
                    )
                })
                .collect();
            report(&format!("inserts from {lo} to {hi} fill"), &runs);
        }
        "removes" => {
            let keys = key_hashes(POSITIVE_KEYS, items_at(q, hi));
            let band: Vec<u64> = keys[items_at(q, lo)..].iter().rev().copied().collect();
            let mut missed = (0, 0);
            let runs: Vec<Round> = (0..rounds)
                .map(|round| {
                    let (mut ours, mut theirs) = (make(), peer());
                    fill_both(&mut ours, &mut theirs, &keys);
                    let (mut missed_ours, mut missed_theirs) = (0, 0);
                    let timed = in_turn(
                        round,
                        || {
                            rate(band.len(), || {
                                missed_ours = table_remove_all(&mut ours, &band);
                                missed_ours
                            })
                        },
                        || {
                            rate(band.len(), || {
                                missed_theirs = table_remove_all(&mut theirs, &band);
                                missed_theirs
                            })
                        },
                    );
                    missed = (missed_ours, missed_theirs);
                    timed
                })
                .collect();
            report(&format!("removals from {hi} to {lo} fill"), &runs);
            // Keys whose fingerprint another key already removed: each table stores a
            // fingerprint once, however many keys share it.
            println!(
                "removals that found nothing (fingerprint collisions): {} ours, {} qfilter's",
                missed.0, missed.1
            );
        }
        other => usage(&format!(
            "W={other} is not one of lookups, inserts, band, removes"
        )),
    }
}

/// Times both tables, ours first in even rounds and `qfilter` first in odd ones, so neither
/// always runs on caches and clocks the other left behind.
fn in_turn(round: usize, ours: impl FnOnce() -> f64, theirs: impl FnOnce() -> f64) -> Round {
    if round % 2 == 0 {
        let ours = ours();
        (ours, theirs())
    } else {
        let theirs = theirs();
        (ours(), theirs)
    }
}

/// Inserts `keys` into both tables, untimed; a refused insert ends the probe.
fn fill_both<T: SeqTable>(ours: &mut T, theirs: &mut qfilter::Filter, keys: &[u64]) {
    if table_insert_all(ours, keys) + table_insert_all(theirs, keys) > 0 {
        usage("a table refused an insert: lower FILL or HI");
    }
}

/// Million operations per second of `run` over `count` operations. `run`'s result (hits or
/// failed inserts) is kept from the optimizer.
fn rate(count: usize, run: impl FnOnce() -> usize) -> f64 {
    let start = Instant::now();
    std::hint::black_box(run());
    per_second(count, start.elapsed()) / 1e6
}

/// Prints the medians of our rates, `qfilter`'s and the per-round ratios.
fn report(label: &str, rounds: &[Round]) {
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let ours = median(rounds.iter().map(|r| r.0).collect());
    let theirs = median(rounds.iter().map(|r| r.1).collect());
    let ratio = median(rounds.iter().map(|r| r.0 / r.1).collect());
    println!(
        "{label}: {ours:.1} against qfilter's {theirs:.1} M/s, {ratio:.3}x (median of {} rounds)",
        rounds.len()
    );
}
