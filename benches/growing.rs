//! Growing filters, paper 000 Figure 4: bounded growing (the growable `LocallyLockedQf`) and the
//! fully expandable filter without and with cascading inserts start at `2^16` slots (default;
//! `CONQF_SCALE=paper`: `2^19`, `quick`: `2^10`) and take 50 segments of twice that many keys
//! (`quick`: 10) at a false-positive target of `2^-10`, on the largest count of `CONQF_THREADS`
//! (comma-separated, as the other benches read it; default: the available parallelism).
//!
//! Beside them, the growable filters users pick today at the same target, each behind a
//! `Mutex`: `growable-bloom-filter` (a scalable Bloom filter) and `scalable_cuckoo_filter`.
//!
//! Per segment (insert throughput, successful and unsuccessful lookup throughput, measured FPR)
//! the numbers come from one run of the experiment and are printed as a table, as the paper
//! plots them; criterion then times the whole insert sequence and the lookups at the final size
//! for each filter, which it can repeat.
//!
//! Run: `cargo bench --bench growing`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::fig4::{
    fig4_filter, fig4_peer, fig4_run, Fig4Keys, Fig4Size, FIG4_FILTERS, FIG4_PEERS,
};
use common::{count_hits, insert_all, parallel, per_second, piece, thread_counts, Scale};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

/// The largest of the thread counts the other benches take (`CONQF_THREADS=1,2,4` runs this one
/// on 4): Figure 4 grows with one thread count.
fn threads() -> usize {
    thread_counts().into_iter().max().unwrap_or(1)
}

/// One of the Figure 4 filters or a peer, by name.
fn make(name: &str, size: &Fig4Size) -> Box<dyn conqf::Filter> {
    if FIG4_PEERS.contains(&name) {
        fig4_peer(name, size)
    } else {
        fig4_filter(name, size).expect("valid parameters")
    }
}

fn size(scale: Scale) -> Fig4Size {
    let segments = if scale == Scale::Quick { 10 } else { 50 };
    Fig4Size::for_quotient_bits(scale.quotient_bits(), segments)
}

/// One run of the experiment per filter, printed per segment.
fn print_segments(size: &Fig4Size, keys: &Fig4Keys, threads: usize) {
    println!(
        "Figure 4: start 2^{} slots, {} segments of {} keys, {threads} threads",
        size.start_quotient_bits, size.segments, size.segment_keys
    );
    println!("filter,segment,insert_mops,positive_mops,negative_mops,fpr,bytes");
    for name in FIG4_FILTERS.into_iter().chain(FIG4_PEERS) {
        let filter = make(name, size);
        for (i, s) in fig4_run(&*filter, size, keys, threads).iter().enumerate() {
            assert_eq!(s.missed, 0, "{name} lost inserted keys in segment {i}");
            let n = size.segment_keys;
            println!(
                "{name},{},{:.3},{:.3},{:.3},{:.6},{}",
                i + 1,
                per_second(n, s.insert) / 1e6,
                per_second(n, s.positive) / 1e6,
                per_second(n, s.negative) / 1e6,
                s.fpr,
                s.memory
            );
        }
    }
}

fn benches(c: &mut Criterion) {
    let scale = Scale::from_env().unwrap_or_else(|why| panic!("{why}"));
    let threads = threads();
    let size = size(scale);
    let keys = Fig4Keys::new(&size);
    print_segments(&size, &keys, threads);

    let all = size.segments * size.segment_keys;
    let mut group = c.benchmark_group(format!("fig4/{threads}_threads"));
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5));
    for name in FIG4_FILTERS.into_iter().chain(FIG4_PEERS) {
        group.throughput(Throughput::Elements(all as u64));
        group.bench_function(BenchmarkId::new("insert_all_segments", name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let filter = make(name, &size);
                    let start = Instant::now();
                    let (_, failed) = parallel(threads, |t| {
                        insert_all(&*filter, piece(&keys.inserts, t, threads))
                    });
                    total += start.elapsed();
                    black_box(failed);
                }
                total
            })
        });
        let filter = make(name, &size);
        parallel(threads, |t| {
            insert_all(&*filter, piece(&keys.inserts, t, threads))
        });
        let lookups = size.segment_keys;
        // Inserted keys spread evenly over all segments: first-segment keys alone would favour
        // the filters that probe their oldest level first.
        let present: Vec<u64> = (0..lookups)
            .map(|j| keys.inserts[j * keys.inserts.len() / lookups])
            .collect();
        group.throughput(Throughput::Elements(lookups as u64));
        group.bench_function(BenchmarkId::new("lookup_positive_final", name), |b| {
            b.iter(|| {
                parallel(threads, |t| {
                    count_hits(&*filter, piece(&present, t, threads))
                })
            })
        });
        group.bench_function(BenchmarkId::new("lookup_negative_final", name), |b| {
            b.iter(|| {
                parallel(threads, |t| {
                    count_hits(&*filter, piece(&keys.negatives[..lookups], t, threads))
                })
            })
        });
    }
    group.finish();
}

fn main() {
    // What `criterion_main!` expands to, without its undocumented public function.
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
