//! The `bulk` figure: paper 004's batch operations on CPU threads. At every fill from 10% to 95%
//! of `2^q` one-byte slots (r = 5, as in paper 004 §VII): the throughput of building the filter
//! by the three bulk build methods (Figures 11 and 12) with and without deduplication (Figure
//! 13) at the most threads asked for, and by one-by-one `SequentialQf` inserts on one thread; and
//! unsuccessful lookups, `contains` one by one on one thread against `contains_batch`. The
//! random-read and pointer-chase limits over the table's bytes are measured on one thread and on
//! the most threads (filed at 70% fill), and each lookup is also shown as a share of the
//! random-read limit at its thread count (issue 8's target: `contains_batch` at least 60%).
//! `benches/bulk.rs` has the criterion form, with the batch-size axes.

use super::common::bulk::{
    build_name, build_time, builds_with_and_without_dedupe, contains_batch_time, contains_time,
    one_by_one_time, pool, BULK_FILLS, BULK_REMAINDER_BITS,
};
use super::common::{items_at, key_hashes, median_of, per_second, NEGATIVE_KEYS, POSITIVE_KEYS};
use super::plot::{draw_plot, integer_label, panel};
use super::{
    limits, print_limits, print_table, progress, random_read_limit, throughput_cell, Options,
    PlotFn, Report, Row, LIMIT_PHASES,
};
use conqf::SequentialQf;
use std::path::PathBuf;

/// The build lines of the figure, in order: one-by-one inserts, then the three methods with
/// dedupe, then without (the names [`build_name`] gives).
pub(super) const BUILDERS: [&str; 7] = [
    "one-by-one inserts",
    "parallel merging",
    "sequential shifting",
    "segmented layouts",
    "parallel merging, no dedupe",
    "sequential shifting, no dedupe",
    "segmented layouts, no dedupe",
];

/// The lookup lines of the figure.
pub(super) const LOOKUPS: [&str; 2] = ["contains", "contains_batch"];

/// Runs the figure; returns how to plot it.
pub(super) fn bulk(options: &Options, report: &mut Report) -> PlotFn {
    let q = options.quotient_bits;
    let threads = options.threads.iter().copied().max().unwrap_or(1);
    let pool = pool(threads);
    let repeat = |run: &dyn Fn() -> std::time::Duration| median_of(options.repetitions, run);
    progress(format_args!("bulk: hashing keys for 2^{q} slots"));
    let all = key_hashes(POSITIVE_KEYS, items_at(q, 0.95));
    let negatives = key_hashes(NEGATIVE_KEYS, items_at(q, 0.1).max(1));
    let first_row = report.rows.len();
    let mut bytes = 0;
    for percent in BULK_FILLS {
        let fill = percent as f64 / 100.0;
        let hashes = &all[..items_at(q, fill)];
        progress(format_args!("bulk: {percent}% fill"));
        let mut push = |filter: &str, threads: usize, phase: &'static str, ops_per_sec: f64| {
            let row = Row::throughput("bulk", filter, threads, Some(fill), phase, ops_per_sec);
            report.rows.push(row)
        };
        let one_by_one = per_second(hashes.len(), repeat(&|| one_by_one_time(q, hashes)));
        push(BUILDERS[0], 1, "build", one_by_one);
        for (build, name) in builds_with_and_without_dedupe().zip(&BUILDERS[1..]) {
            debug_assert_eq!(build_name(build.0, build.1), *name);
            let time = repeat(&|| build_time(&pool, q, hashes, build));
            push(name, threads, "build", per_second(hashes.len(), time));
        }
        let filter = SequentialQf::bulk_build(q, BULK_REMAINDER_BITS, hashes, Default::default())
            .expect("the keys fit");
        bytes = filter.memory_bytes();
        let mut found = vec![false; hashes.len()];
        filter
            .contains_batch(hashes, &mut found)
            .expect("one answer per key");
        let missed = found.iter().filter(|&&f| !f).count();
        if missed > 0 {
            report.failures.push(format!(
                "bulk at {percent}% fill: contains_batch missed {missed} inserted keys"
            ));
        }
        let one = repeat(&|| contains_time(&filter, &negatives));
        push(
            LOOKUPS[0],
            1,
            "lookup_negative",
            per_second(negatives.len(), one),
        );
        let batch = repeat(&|| contains_batch_time(&pool, &filter, &negatives));
        push(
            LOOKUPS[1],
            threads,
            "lookup_negative",
            per_second(negatives.len(), batch),
        );
    }
    let baselines: Vec<(Option<f64>, f64)> = report.rows[first_row..]
        .iter()
        .filter(|row| row.filter == BUILDERS[0] || row.filter == LOOKUPS[0])
        .map(|row| (row.fill, row.ops_per_sec))
        .collect();
    for (i, row) in report.rows[first_row..].iter_mut().enumerate() {
        // Rows come per fill as builds then lookups; the baselines alternate likewise.
        let level = i / (BUILDERS.len() + LOOKUPS.len());
        let baseline = baselines[2 * level + usize::from(row.phase != "build")];
        debug_assert_eq!(baseline.0, row.fill);
        row.speedup = Some(row.ops_per_sec / baseline.1);
    }
    // On one thread for `contains`, on the most threads for `contains_batch`.
    let mut limit_threads = vec![1, threads];
    limit_threads.dedup();
    report.rows.extend(limits(
        "bulk",
        Some(0.7),
        LIMIT_PHASES,
        bytes,
        negatives.len(),
        &limit_threads,
        options.repetitions,
    ));
    print_bulk(options, &limit_threads, bytes, &report.rows[first_row..]);
    plot_bulk
}

/// The table against fill, the lookups also as a share of the random-read limit over the
/// table's `bytes` at their thread count, then the limits at `limit_threads` (one thread, then
/// the most threads).
fn print_bulk(options: &Options, limit_threads: &[usize], bytes: usize, rows: &[Row]) {
    let threads = limit_threads.last().copied().unwrap_or(1);
    let mut header = vec!["fill"];
    header.extend(BUILDERS);
    header.extend(LOOKUPS);
    let body: Vec<Vec<String>> = BULK_FILLS
        .iter()
        .map(|&percent| {
            let fill = percent as f64 / 100.0;
            let mut line = vec![format!("{percent}%")];
            for filter in BUILDERS.iter().chain(&LOOKUPS) {
                let cell = rows
                    .iter()
                    .find(|row| row.filter == *filter && row.fill == Some(fill))
                    .map_or(String::from("-"), |row| {
                        let limit = random_read_limit(rows, LIMIT_PHASES[0], row.threads);
                        throughput_cell(row, limit)
                    });
                line.push(cell);
            }
            line
        })
        .collect();
    print_table(
        &format!(
            "bulk (paper 004 Figures 11-13): Mops/s against fill, 2^{} one-byte slots, \
             scale {}; bulk builds and contains_batch on {threads} threads, one-by-one \
             inserts and contains on 1; lookups are unsuccessful, with their share of the \
             random-read limit over the table's {bytes} bytes at the same thread count \
             (issue 8's target: contains_batch at least 60%)",
            options.quotient_bits,
            options.scale.name()
        ),
        &header,
        &body,
    );
    print_limits(rows, LIMIT_PHASES, bytes, limit_threads);
}

/// Three panels against fill: build throughput with dedupe, without (both beside one-by-one
/// inserts), unsuccessful-lookup throughput.
fn plot_bulk(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
    let path = options.plots.join("bulk.svg");
    let by_fill = |title: &'static str, phase: &str, names: &[&str]| {
        panel(title, names, phase, rows, |row| Some(row.fill? * 100.0))
    };
    let panels = [
        by_fill("builds", "build", &BUILDERS[..4]),
        by_fill(
            "builds without dedupe",
            "build",
            &[BUILDERS[0], BUILDERS[4], BUILDERS[5], BUILDERS[6]],
        ),
        by_fill("unsuccessful lookups", "lookup_negative", &LOOKUPS),
    ];
    let ticks: Vec<f64> = BULK_FILLS.iter().map(|&p| p as f64).collect();
    let title = format!(
        "Batch operations (paper 004 Figures 11-13) against fill, 2^{} slots, scale {}",
        options.quotient_bits,
        options.scale.name()
    );
    draw_plot(
        &path,
        &title,
        "fill degree (%)",
        &ticks,
        11,
        &|x| integer_label(x, 10.0),
        &panels,
    )?;
    Ok(path)
}
