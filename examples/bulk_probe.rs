//! Issue 8's batch measurements as quick interleaved medians at one size, for tuning (the
//! figures runner's `--only bulk --bits 24` gives the full figure, `benches/bulk.rs` the
//! criterion form). Unsuccessful lookups and builds at 70% fill of `2^Q` one-byte slots, and
//! the batch insert strategies, each repetition running every variant once in turn:
//!
//! * `W=lookup` (default): `contains` on one thread, `contains_batch_with` by `Prefetch` and
//!   `Sorted`, and the random-read limit, for `N` queries (comma-separated; default 10% of the
//!   slots);
//! * `W=build`: one-by-one `SequentialQf` inserts (one thread) against the three bulk builds;
//! * `W=counting`: the same for `CountingQf`, with a tenth of the keys repeated 1 to 8 times;
//! * `W=insert`: a batch of `empty * 10 / F` new keys (`F` comma-separated) into a filter at
//!   30%, 50%, 70% and 90% fill (`FILLS`, comma-separated) by supercluster rounds, by the sweep
//!   and by a merge-insert, and what `BatchInsert::Auto` picks.
//!
//! `Q` (default 24), `T` threads (default 2), `R` repetitions (default 3). Example:
//! `W=build Q=24 T=2 R=5 cargo run --release --example bulk_probe`.

#[path = "../benches/common/mod.rs"]
mod common;
use common::bulk::*;
use common::*;
use conqf::*;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let q: u32 = std::env::var("Q").map_or(24, |v| v.parse().unwrap());
    let threads: usize = std::env::var("T").map_or(2, |v| v.parse().unwrap());
    let reps: usize = std::env::var("R").map_or(3, |v| v.parse().unwrap());
    let what = std::env::var("W").unwrap_or_else(|_| "lookup".into());
    let pool = pool(threads);
    let inserted = key_hashes(0, items_at(q, 0.7));
    if what == "insert" {
        let all = key_hashes(0, items_at(q, 0.95));
        let extra = key_hashes(NEGATIVE_KEYS, items_at(q, 0.5));
        let fills = std::env::var("FILLS").map_or(vec![0.3, 0.5, 0.7, 0.9], |v| {
            v.split(',').map(|x| x.parse().unwrap()).collect()
        });
        let strategies = [
            ("superclusters", BatchInsert::Superclusters),
            ("sweep", BatchInsert::Sweep),
            ("merge", BatchInsert::Merge(BuildMethod::default())),
        ];
        for fill in fills {
            let base = &all[..items_at(q, fill)];
            let empty = (1usize << q) - base.len();
            for frac in std::env::var("F").map_or(vec![512usize, 128, 32, 16, 8, 4], |v| {
                v.split(',').map(|x| x.parse().unwrap()).collect()
            }) {
                let batch = &extra[..(empty * 10 / frac).min(extra.len())];
                let mut times = vec![vec![]; strategies.len()];
                for _ in 0..reps {
                    for ((_, strategy), times) in strategies.iter().zip(&mut times) {
                        times.push(
                            insert_batch_time(&pool, q, base, batch, *strategy).as_secs_f64(),
                        );
                    }
                }
                let medians: Vec<String> = strategies
                    .iter()
                    .zip(&mut times)
                    .map(|((name, _), times)| {
                        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
                        format!("{name} {:.1} ms", times[reps / 2] * 1e3)
                    })
                    .collect();
                println!(
                    "q {q} T {threads} fill {fill} batch empty*10/{frac} = {}: {} (auto: {:?})",
                    batch.len(),
                    medians.join(" | "),
                    BatchInsert::choose(batch.len(), base.len(), 1 << q)
                );
            }
        }
        return;
    }
    if what == "counting" {
        // A tenth of the keys repeated 1..=8 times more, so some entries carry counters.
        let mut hashes = inserted.clone();
        for (i, &hash) in inserted.iter().step_by(10).enumerate() {
            hashes.extend(std::iter::repeat_n(hash, 1 + i % 8));
        }
        let mut cols: Vec<Vec<f64>> = vec![vec![]; 4];
        for _ in 0..reps {
            let filter = CountingQf::with_bits(q, BULK_REMAINDER_BITS).unwrap();
            let start = Instant::now();
            for &hash in &hashes {
                black_box(filter.insert_hash(hash).unwrap());
            }
            cols[0].push(hashes.len() as f64 / start.elapsed().as_secs_f64() / 1e6);
            for (k, m) in BuildMethod::ALL.into_iter().enumerate() {
                let t = pool.install(|| {
                    let start = Instant::now();
                    let built = CountingQf::bulk_build(q, BULK_REMAINDER_BITS, &hashes, m).unwrap();
                    let t = start.elapsed().as_secs_f64();
                    black_box(built.len());
                    t
                });
                cols[1 + k].push(hashes.len() as f64 / t / 1e6);
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        let m: Vec<f64> = cols.iter_mut().map(med).collect();
        println!("q {q} T {threads} CountingQf {} hashes, medians of {reps}: one-by-one {:.1} | merging {:.1} | shifting {:.1} | segmented {:.1} Mops/s", hashes.len(), m[0], m[1], m[2], m[3]);
        return;
    }
    if what == "build" {
        let mut cols: Vec<Vec<f64>> = vec![vec![]; 7];
        for _ in 0..reps {
            cols[0].push(inserted.len() as f64 / one_by_one_time(q, &inserted).as_secs_f64() / 1e6);
            for (k, build) in builds_with_and_without_dedupe().enumerate() {
                cols[1 + k].push(
                    inserted.len() as f64
                        / build_time(&pool, q, &inserted, build).as_secs_f64()
                        / 1e6,
                );
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        let m: Vec<f64> = cols.iter_mut().map(med).collect();
        println!("q {q} T {threads} build 70% medians of {reps}: one-by-one {:.1} | merging {:.1} | shifting {:.1} | segmented {:.1} Mops/s; best/one-by-one {:.2}x", m[0], m[1], m[2], m[3], m[1].max(m[2]).max(m[3]) / m[0]);
        println!(
            "  without dedupe: merging {:.1} | shifting {:.1} | segmented {:.1} Mops/s",
            m[4], m[5], m[6]
        );
        return;
    }
    let filter =
        SequentialQf::bulk_build(q, BULK_REMAINDER_BITS, &inserted, Default::default()).unwrap();
    let array = ReadArray::new(filter.memory_bytes());
    black_box(array.warm());
    let sizes: Vec<usize> = std::env::var("N").map_or(vec![items_at(q, 0.1)], |v| {
        v.split(',').map(|x| x.parse().unwrap()).collect()
    });
    for &n in &sizes {
        let queries = key_hashes(NEGATIVE_KEYS, n);
        let mut found = vec![false; n];
        let mut cols: Vec<Vec<f64>> = vec![vec![]; 4];
        for _ in 0..reps {
            let one = contains_time(&filter, &queries).as_secs_f64();
            cols[0].push(n as f64 / one / 1e6);
            for (k, order) in [BatchLookup::Prefetch, BatchLookup::Sorted]
                .into_iter()
                .enumerate()
            {
                let t = pool.install(|| {
                    let s = Instant::now();
                    filter
                        .contains_batch_with(&queries, &mut found, order)
                        .unwrap();
                    s.elapsed().as_secs_f64()
                });
                cols[1 + k].push(n as f64 / t / 1e6);
            }
            let t = parallel_random_reads(&array, n, threads).as_secs_f64();
            cols[3].push(n as f64 / t / 1e6);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        let m: Vec<f64> = cols.iter_mut().map(med).collect();
        println!("q {q} T {threads} n {n} medians of {reps}: contains {:.1} | prefetch {:.1} | sorted {:.1} | limit {:.1} Mops/s", m[0], m[1], m[2], m[3]);
    }
}
