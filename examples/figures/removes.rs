//! The `removes` figure: removals against threads, which the papers do not plot (paper 000 §3
//! describes the locked deletion, §5 times only inserts and lookups). Figure 2's table (`2^q`
//! slots of r = 10 bits, filled to 72% untimed), then every inserted key removed once, each
//! thread removing the piece it inserted (`benches/common/removes.rs`). `SequentialQf` and
//! `qfilter` on one thread, called directly; at every thread count both behind a global
//! `Mutex`, and the concurrent quotient filters that remove: `LocallyLockedQf`,
//! `ExternallyLockedQf`, `TwoBitQf`, `CountingQf` (with `qfilter`'s r + 1 bits, as in `fig2`).
//! The lines run in rounds as `fig2`'s; every run checks that its removals found what the fill
//! stored and left the filter empty.

use super::common::removes::{removes_concurrent, removes_sequential, RemoveRun};
use super::common::{
    items_at, key_hashes, median, per_second, qfilter_like, Locked, SeqRemove, SeqTable, FIG2_FILL,
    POSITIVE_KEYS, REMAINDER_BITS,
};
use super::plot::{draw_against_threads, threads_panel};
use super::{
    limits, measure_in_rounds, plural, print_limits, print_table, progress, random_read_limit,
    speedup_and_share, Options, PlotFn, Report, RoundLine, Row, LIMIT_PHASES,
};
use conqf::{
    CountingQf, Error, ExternallyLockedQf, LocallyLockedQf, Remove, SequentialQf, TwoBitQf,
};
use std::path::PathBuf;

/// The phase of the figure's rows.
pub(super) const REMOVE_PHASE: &str = "remove";

/// The tables measured on one thread only, called directly; the first is the speedup baseline.
pub(super) const REMOVE_SEQUENTIAL: [&str; 2] = ["SequentialQf", "qfilter"];

/// The filters measured at every thread count.
pub(super) const REMOVE_CONCURRENT: [&str; 6] = [
    "SequentialQf+Mutex",
    "qfilter+Mutex",
    "LocallyLockedQf",
    "ExternallyLockedQf",
    "TwoBitQf",
    "CountingQf",
];

/// A single-threaded table on one thread.
fn sequential<'a, T: SeqTable + SeqRemove>(
    filter: &'static str,
    keys: &'a [u64],
    make: impl Fn() -> T + 'a,
) -> RoundLine<'a, RemoveRun> {
    RoundLine::new(filter, 1, move || Ok(removes_sequential(&mut make(), keys)))
}

/// A concurrent filter at every thread count of the run.
fn concurrent<'a, F: Remove>(
    options: &Options,
    filter: &'static str,
    keys: &'a [u64],
    make: impl Fn() -> Result<F, Error> + 'a,
) -> Vec<RoundLine<'a, RemoveRun>> {
    let make = std::rc::Rc::new(make);
    options
        .threads
        .iter()
        .map(|&threads| {
            let make = std::rc::Rc::clone(&make);
            RoundLine::new(filter, threads, move || {
                make().map(|built| removes_concurrent(&built, keys, threads))
            })
        })
        .collect()
}

/// Runs the figure; returns how to plot it.
pub(super) fn removes(options: &Options, report: &mut Report) -> PlotFn {
    let q = options.quotient_bits;
    let r = REMAINDER_BITS;
    let items = items_at(q, FIG2_FILL);
    progress(format_args!("removes: hashing {items} keys"));
    let keys = key_hashes(POSITIVE_KEYS, items);
    let mut lines = vec![
        sequential(REMOVE_SEQUENTIAL[0], &keys, move || {
            SequentialQf::with_bits(q, r).expect("valid parameters")
        }),
        sequential(REMOVE_SEQUENTIAL[1], &keys, move || qfilter_like(q, r)),
    ];
    let [mutex_seq, mutex_qfilter, locally, externally, two_bit, counting] = REMOVE_CONCURRENT;
    lines.extend(concurrent(options, mutex_seq, &keys, move || {
        SequentialQf::with_bits(q, r).map(Locked::new)
    }));
    lines.extend(concurrent(options, mutex_qfilter, &keys, move || {
        Ok(Locked::new(qfilter_like(q, r)))
    }));
    lines.extend(concurrent(options, locally, &keys, move || {
        LocallyLockedQf::with_bits(q, r)
    }));
    lines.extend(concurrent(options, externally, &keys, move || {
        ExternallyLockedQf::with_bits(q, r)
    }));
    lines.extend(concurrent(options, two_bit, &keys, move || {
        TwoBitQf::with_bits(q, r)
    }));
    lines.extend(concurrent(options, counting, &keys, move || {
        CountingQf::with_bits(q, r + 1)
    }));
    measure_in_rounds("removes", &mut lines, options.repetitions);

    let first_row = report.rows.len();
    let mut baseline_rate = None;
    for line in lines.iter().filter(|line| !line.skipped) {
        let threads = plural(line.threads, "thread");
        // Every round built and emptied its own filter, so each is checked.
        for (round, run) in line.runs.iter().enumerate() {
            if let Some(problem) = run.problem() {
                report.failures.push(format!(
                    "removes {} with {threads}, round {}: {problem}",
                    line.filter,
                    round + 1
                ));
            }
        }
        let last = line.runs.last().copied().unwrap_or_default();
        if last.failed_inserts > 0 {
            eprintln!(
                "warning: removes {} with {threads}: {} of {items} inserts failed (full)",
                line.filter, last.failed_inserts
            );
        }
        let time = median(line.runs.iter().map(|run| run.time).collect());
        let ops_per_sec = per_second(items, time);
        let baseline = *baseline_rate.get_or_insert(ops_per_sec);
        report.rows.push(Row {
            figure: "removes",
            filter: line.filter.to_string(),
            threads: line.threads,
            fill: Some(FIG2_FILL),
            phase: REMOVE_PHASE,
            ops_per_sec,
            speedup: Some(ops_per_sec / baseline),
            fpr: None,
            bits_per_item: None,
            failed_inserts: Some(last.failed_inserts),
        });
    }
    let bytes = SequentialQf::with_bits(q, r)
        .expect("valid parameters")
        .memory_bytes();
    report.rows.extend(limits(
        "removes",
        Some(FIG2_FILL),
        LIMIT_PHASES,
        bytes,
        items,
        &options.threads,
        options.repetitions,
    ));
    let not_found: Vec<(&str, usize, usize)> = lines
        .iter()
        .filter_map(|line| Some((line.filter, line.threads, line.runs.last()?.not_found)))
        .collect();
    print_removes(options, items, bytes, &not_found, &report.rows[first_row..]);
    plot_removes
}

/// The table: throughput (speedup over `SequentialQf` on one thread, share of the random-read
/// limit at the same thread count), the last round's removals that found nothing, then the
/// limits.
fn print_removes(
    options: &Options,
    items: usize,
    bytes: usize,
    not_found: &[(&str, usize, usize)],
    rows: &[Row],
) {
    let body: Vec<Vec<String>> = rows
        .iter()
        .filter(|row| row.phase == REMOVE_PHASE)
        .map(|row| {
            let limit = random_read_limit(rows, LIMIT_PHASES[0], row.threads);
            let missed = not_found
                .iter()
                .find(|&&(filter, threads, _)| filter == row.filter && threads == row.threads)
                .map_or("-".into(), |&(_, _, missed)| missed.to_string());
            vec![
                row.filter.clone(),
                row.threads.to_string(),
                speedup_and_share(row, limit),
                missed,
                row.failed_inserts.map_or("-".into(), |f| f.to_string()),
            ]
        })
        .collect();
    print_table(
        &format!(
            "removes: removals against threads at 72% fill; 2^{} slots, r = {REMAINDER_BITS}, \
             {items} keys, scale {}\nthroughput in million removals per second (speedup over \
             SequentialQf on 1 thread, share of the random-read limit over {bytes} bytes at \
             the same thread count); not found = removals of keys whose fingerprint another \
             key had already stored and another removal took (CountingQf counts them: none); \
             failed = inserts refused (Full)",
            options.quotient_bits,
            options.scale.name()
        ),
        &["filter", "threads", "remove", "not found", "failed"],
        &body,
    );
    print_limits(rows, LIMIT_PHASES, bytes, &options.threads);
}

/// One panel: removal throughput against threads, one line per filter.
fn plot_removes(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
    let path = options.plots.join("removes.svg");
    let filters: Vec<&str> = REMOVE_SEQUENTIAL
        .into_iter()
        .chain(REMOVE_CONCURRENT)
        .collect();
    let panel = threads_panel("removals", &filters, REMOVE_PHASE, rows);
    let title = format!(
        "Removals against threads at 72% fill, 2^{} slots, scale {} (dashed: 1 thread)",
        options.quotient_bits,
        options.scale.name()
    );
    draw_against_threads(&path, &title, &options.threads, &[panel])?;
    Ok(path)
}
