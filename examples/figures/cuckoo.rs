//! The `cuckoo` figure: paper 001 §3.1's mix (90% finds, 5% inserts, 5% removes at load 0.4)
//! against threads for the lock-free, striped and coarse cuckoo filters and the
//! `atomic-cuckoo-filter` crate, then single-thread lookups beside the `cuckoofilter` crate;
//! the tables printed and the plot.

use super::common::cuckoo_lookup::{
    LookupFilter, LookupRun, LookupWorkload, LOOKUP_BASELINE, LOOKUP_FILTERS,
    LOOKUP_FINGERPRINT_BITS,
};
use super::common::cuckoo_mix::{run_mix_named, MixRun, MixWorkload, MIX_FILTERS, MIX_LOAD};
use super::common::{median, per_second};
use super::plot::{draw_against_threads, threads_panel};
use super::{
    find, limits, plural, print_limits, print_table, progress, random_read_limit,
    speedup_and_share, Options, PlotFn, Report, Row, CUCKOO_LOOKUP_LIMIT_PHASES, LIMIT_PHASES,
};
use conqf::{Filter, LockFreeCuckooFilter};
use std::path::PathBuf;

/// The phase name of the cuckoo figure's rows.
pub(super) const CUCKOO_PHASE: &str = "mix_90_5_5";

/// The filter the cuckoo figure's speedups are over.
pub(super) const CUCKOO_BASELINE: &str = "coarse (one RwLock)";

/// Paper 001 §3.1: 90% finds, 5% inserts, 5% removes at load 0.4 against threads, on a table of
/// `2^q` entries with as many operations per run. Returns how to plot the figure.
pub(super) fn cuckoo(options: &Options, report: &mut Report) -> PlotFn {
    let bucket_bits = options.quotient_bits.saturating_sub(2).max(1);
    let ops = 4usize << bucket_bits;
    let first_row = report.rows.len();
    for &threads in &options.threads {
        progress(format_args!(
            "cuckoo: generating {ops} operations for {}",
            plural(threads, "thread")
        ));
        let workload = MixWorkload::new(bucket_bits, ops, threads);
        progress(format_args!(
            "cuckoo: {}, {}, the filters in turn",
            plural(threads, "thread"),
            plural(options.repetitions, "repetition")
        ));
        // Each repetition runs every filter once, so slow phases of a noisy machine hit them
        // all alike; the medians are compared.
        let mut runs: Vec<Vec<MixRun>> = vec![Vec::new(); MIX_FILTERS.len()];
        for _ in 0..options.repetitions {
            for (runs, name) in runs.iter_mut().zip(MIX_FILTERS) {
                runs.push(run_mix_named(name, bucket_bits, &workload));
            }
        }
        let mut throughput = Vec::new();
        for (name, runs) in MIX_FILTERS.into_iter().zip(&runs) {
            let last = runs.last().copied().unwrap_or_default();
            // Every repetition built its own filter, so each is checked, not only the last.
            for (repetition, run) in runs.iter().enumerate() {
                if run.false_negatives > run.failed_inserts {
                    report.failures.push(format!(
                        "cuckoo {name} with {}, repetition {}: {} finds or removes of stored \
                         keys failed, only {} inserts failed",
                        plural(threads, "thread"),
                        repetition + 1,
                        run.false_negatives,
                        run.failed_inserts
                    ));
                }
            }
            if last.failed_inserts > 0 {
                eprintln!(
                    "warning: cuckoo {name} with {}: {} inserts failed (full)",
                    plural(threads, "thread"),
                    last.failed_inserts
                );
            }
            let time = median(runs.iter().map(|run| run.elapsed).collect());
            throughput.push((name, per_second(workload.ops(), time)));
        }
        let baseline = throughput
            .iter()
            .find(|(name, _)| *name == CUCKOO_BASELINE)
            .map_or(0.0, |&(_, ops)| ops);
        for (name, ops_per_sec) in throughput {
            report.rows.push(Row {
                figure: "cuckoo",
                filter: name.to_string(),
                threads,
                fill: Some(MIX_LOAD),
                phase: CUCKOO_PHASE,
                ops_per_sec,
                speedup: (baseline > 0.0).then(|| ops_per_sec / baseline),
                fpr: None,
                bits_per_item: None,
                failed_inserts: None,
            });
        }
    }
    // The physical limit over an array of the table's size, with as many reads as operations.
    let bytes = cuckoo_table_bytes(bucket_bits, 16);
    report.rows.extend(limits(
        "cuckoo",
        Some(MIX_LOAD),
        LIMIT_PHASES,
        bytes,
        ops,
        &options.threads,
        options.repetitions,
    ));
    print_cuckoo(options, bucket_bits, bytes, &report.rows[first_row..]);
    let first_lookup_row = report.rows.len();
    let bytes = cuckoo_lookups(options, bucket_bits, report);
    print_cuckoo_lookups(
        options,
        bucket_bits,
        bytes,
        &report.rows[first_lookup_row..],
    );
    plot_cuckoo
}

/// Bytes of a `LockFreeCuckooFilter` of `2^bucket_bits` buckets of 4 `fingerprint_bits`-bit
/// entries: the array size of the cuckoo figure's limits.
pub(super) fn cuckoo_table_bytes(bucket_bits: u32, fingerprint_bits: u32) -> usize {
    LockFreeCuckooFilter::with_bits(bucket_bits, fingerprint_bits).map_or(0, |f| f.memory_bytes())
}

/// The phases of the cuckoo figure's single-thread lookup rows.
pub(super) const CUCKOO_LOOKUP_PHASES: [&str; 2] = ["lookup_positive", "lookup_negative"];

/// Single-thread lookups at load 0.4 with 8-bit fingerprints: the cuckoo filters beside the
/// `cuckoofilter` crate (issue 7's target: at least 1.2x it). The filters are built once, then
/// timed in turn, each repetition timing every filter once, so slow phases of a noisy machine
/// hit them all; the rows hold the medians. Then the limits on one thread over an array of the
/// lock-free 8-bit table's bytes (rows of [`CUCKOO_LOOKUP_LIMIT_PHASES`]), as many reads as
/// lookups of a phase. Returns those bytes.
pub(super) fn cuckoo_lookups(options: &Options, bucket_bits: u32, report: &mut Report) -> usize {
    progress(format_args!(
        "cuckoo: single-thread lookups, {}",
        plural(options.repetitions, "repetition")
    ));
    let workload = LookupWorkload::new(bucket_bits);
    let filters: Vec<(&str, LookupFilter)> = LOOKUP_FILTERS
        .iter()
        .map(|&name| {
            let (filter, failed) = LookupFilter::build(name, bucket_bits, &workload);
            if failed > 0 {
                eprintln!("warning: cuckoo lookups {name}: {failed} inserts failed (full)");
            }
            (name, filter)
        })
        .collect();
    let mut runs: Vec<Vec<LookupRun>> = vec![Vec::new(); filters.len()];
    for _ in 0..options.repetitions {
        for (runs, (_, filter)) in runs.iter_mut().zip(&filters) {
            runs.push(filter.time(&workload));
        }
    }
    let mut throughput = Vec::new();
    for ((name, _), runs) in filters.iter().zip(&runs) {
        let last = runs.last().copied().unwrap_or_default();
        if last.positive_hits < workload.stored.len() {
            report.failures.push(format!(
                "cuckoo lookups {name}: only {} of {} stored keys found",
                last.positive_hits,
                workload.stored.len()
            ));
        }
        let positive = median(runs.iter().map(|run| run.positive).collect());
        let negative = median(runs.iter().map(|run| run.negative).collect());
        let fpr = last.negative_hits as f64 / workload.absent.len().max(1) as f64;
        throughput.push((*name, per_second(workload.stored.len(), positive), None));
        throughput.push((
            *name,
            per_second(workload.absent.len(), negative),
            Some(fpr),
        ));
    }
    for (i, &(name, ops_per_sec, fpr)) in throughput.iter().enumerate() {
        let phase = CUCKOO_LOOKUP_PHASES[i % 2];
        let baseline = throughput
            .iter()
            .enumerate()
            .find(|&(j, row)| row.0 == LOOKUP_BASELINE && j % 2 == i % 2)
            .map_or(0.0, |(_, row)| row.1);
        report.rows.push(Row {
            figure: "cuckoo",
            filter: name.to_string(),
            threads: 1,
            fill: Some(MIX_LOAD),
            phase,
            ops_per_sec,
            speedup: (baseline > 0.0).then(|| ops_per_sec / baseline),
            fpr,
            bits_per_item: None,
            failed_inserts: None,
        });
    }
    let bytes = cuckoo_table_bytes(bucket_bits, LOOKUP_FINGERPRINT_BITS);
    report.rows.extend(limits(
        "cuckoo",
        Some(MIX_LOAD),
        CUCKOO_LOOKUP_LIMIT_PHASES,
        bytes,
        workload.absent.len(),
        &[1],
        options.repetitions,
    ));
    bytes
}

/// The single-thread lookup table, each lookup also as a share of the random-read limit over
/// the 8-bit table's `bytes`, then the limits.
pub(super) fn print_cuckoo_lookups(
    options: &Options,
    bucket_bits: u32,
    bytes: usize,
    rows: &[Row],
) {
    let title = format!(
        "Single-thread lookups at load {MIX_LOAD}, keys hashed by each filter; 2^{bucket_bits} \
         buckets of 4 entries, {LOOKUP_FINGERPRINT_BITS}-bit fingerprints, scale {}\n\
         million lookups per second (speedup over {LOOKUP_BASELINE}, share of the random-read \
         limit over the table's bytes on 1 thread); negative rows: measured FPR",
        options.scale.name()
    );
    let limit = random_read_limit(rows, CUCKOO_LOOKUP_LIMIT_PHASES[0], 1);
    let header = ["filter", "positive", "negative", "FPR"];
    let body: Vec<Vec<String>> = LOOKUP_FILTERS
        .iter()
        .map(|&name| {
            let mut line = vec![name.to_string()];
            for phase in CUCKOO_LOOKUP_PHASES {
                line.push(
                    find(rows, name, 1, phase)
                        .map_or("-".to_string(), |row| speedup_and_share(row, limit)),
                );
            }
            line.push(
                find(rows, name, 1, CUCKOO_LOOKUP_PHASES[1])
                    .and_then(|row| row.fpr)
                    .map_or("-".to_string(), |fpr| format!("{fpr:.2e}")),
            );
            line
        })
        .collect();
    print_table(&title, &header, &body);
    print_limits(rows, CUCKOO_LOOKUP_LIMIT_PHASES, bytes, &[1]);
}

/// The 90/5/5 mix table, each throughput also as a share of the random-read limit over the
/// table's `bytes` at the same thread count, then the limits.
pub(super) fn print_cuckoo(options: &Options, bucket_bits: u32, bytes: usize, rows: &[Row]) {
    let title = format!(
        "Paper 001 §3.1: 90% find, 5% insert, 5% remove at load {MIX_LOAD}; 2^{bucket_bits} \
         buckets of 4 entries, 16-bit fingerprints, {} operations per run, scale {}\n\
         throughput in million operations per second (speedup over {CUCKOO_BASELINE} at the \
         same thread count, share of the random-read limit over the table's bytes)",
        4usize << bucket_bits,
        options.scale.name()
    );
    let mut header = vec!["filter".to_string()];
    header.extend(options.threads.iter().map(|&t| plural(t, "thread")));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let body: Vec<Vec<String>> = MIX_FILTERS
        .iter()
        .map(|&name| {
            let mut line = vec![name.to_string()];
            line.extend(options.threads.iter().map(|&threads| {
                find(rows, name, threads, CUCKOO_PHASE).map_or("-".to_string(), |row| {
                    let limit = random_read_limit(rows, LIMIT_PHASES[0], threads);
                    speedup_and_share(row, limit)
                })
            }));
            line
        })
        .collect();
    print_table(&title, &header, &body);
    print_limits(rows, LIMIT_PHASES, bytes, &options.threads);
}

/// The cuckoo plot: throughput of the 90/5/5 mix against threads, one line per filter.
pub(super) fn plot_cuckoo(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
    let path = options.plots.join("cuckoo.svg");
    let panel = threads_panel(
        "90% find, 5% insert, 5% remove",
        &MIX_FILTERS,
        CUCKOO_PHASE,
        rows,
    );
    let title = format!(
        "Paper 001: cuckoo filters at load {MIX_LOAD}, 2^{} entries, scale {}",
        options.quotient_bits,
        options.scale.name()
    );
    draw_against_threads(&path, &title, &options.threads, &[panel])?;
    Ok(path)
}
