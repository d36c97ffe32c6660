//! How `CountingQf` inserts scale with threads (issue 5's 2-thread target), and why: the same
//! inserts into `2^Q` slots (r = `R`) up to `FILL` on each thread count of `T`, with the keys
//! handed to the threads in one of three ways (`KEYS`):
//!
//! * `random` (default): thread `i` takes the `i`-th contiguous part of the random keys, so
//!   every thread writes everywhere in the table, as in figure 2;
//! * `halves`: the keys sorted by the top bit of the hash, so with two threads each writes only
//!   its own half of the table and no cache line is written by both;
//! * `stripes:B`: the keys sorted by bit `B` of the quotient's block (stripes of `2^B` blocks of
//!   64 slots), so with two threads each writes every other stripe: both cover the whole
//!   table, and share only the lines at stripe edges (and the lock lines of regions that span
//!   two stripes).
//!
//! `REGION` sets the blocks per region lock (default `CountingQf::DEFAULT_REGION_BLOCKS`),
//! `REPS` the repetitions (default 2, each runs every thread count in turn). Sorting the keys
//! also changes the one-thread rate (it inserts one half or stripe set, then the other, so it
//! works on half the table at a time): compare thread counts within one `KEYS` setting.
//! Example: `KEYS=stripes:8 T=1,2 cargo run --release --example counting_scaling`.

#[path = "../benches/common/mod.rs"]
mod common;
use common::{insert_all, items_at, key_hashes, parallel, per_second, piece};
use conqf::{CountingQf, Filter};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v} does not parse"))
    })
}

fn main() {
    let q: u32 = env("Q", 22);
    let r: u32 = env("R", 10);
    let fill: f64 = env("FILL", 0.72);
    let region: usize = env("REGION", CountingQf::DEFAULT_REGION_BLOCKS);
    let reps: usize = env("REPS", 2);
    let threads: Vec<usize> = std::env::var("T")
        .unwrap_or_else(|_| "1,2".into())
        .split(',')
        .map(|t| {
            t.parse()
                .expect("T is a comma-separated list of thread counts")
        })
        .collect();
    let order = std::env::var("KEYS").unwrap_or_else(|_| "random".into());

    let n = items_at(q, fill);
    let mut keys = key_hashes(0, n);
    match order.split_once(':') {
        None if order == "random" => {}
        None if order == "halves" => keys.sort_by_key(|k| k >> 63),
        Some(("stripes", bit)) => {
            let bit: u32 = bit.parse().expect("stripes:B takes a bit number");
            // The quotient is the hash's top q bits; its block drops 6 more.
            let shift = 64 - q + 6 + bit;
            assert!(shift < 64, "stripes:{bit} is wider than the table");
            keys.sort_by_key(|k| (k >> shift) & 1);
        }
        _ => panic!("KEYS is random, halves or stripes:B"),
    }
    println!(
        "CountingQf inserts, 2^{q} slots, r = {r}, {n} keys ({:.0}% fill), {region} blocks per \
         region, keys {order}; million inserts per second",
        fill * 100.0
    );
    for rep in 0..reps {
        for &t in &threads {
            let filter = CountingQf::with_bits_and_region(q, r, region).unwrap();
            let (time, failed) = parallel(t, |i| insert_all(&filter, piece(&keys, i, t)));
            assert!(failed.iter().all(|&f| f == 0), "an insert failed");
            assert_eq!(filter.len(), n);
            println!("rep {rep} threads {t}: {:.1}", per_second(n, time) / 1e6);
        }
    }
}
