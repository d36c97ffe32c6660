//! Figure 4 of paper 000 (§5, growing): bounded growing and `ExpandableQf` without and with
//! cascading inserts, segment by segment, beside the growable filters of other crates; the
//! table and the plot.

use super::common::fig4::{
    fig4_filter, fig4_peer, fig4_run, Fig4Keys, Fig4Segment, Fig4Size, FIG4_FILTERS, FIG4_FPR,
    FIG4_PEERS,
};
use super::common::{median, per_second, Scale};
use super::plot::{draw_plot, integer_label, phase_panels};
use super::{
    filters_of, limits, plural, print_limits, print_table, progress, random_read_limit,
    round_order, throughput_cell, Options, PlotFn, Report, Row, FIG2_PHASES, LIMIT_PHASES,
};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// Segments of Figure 4 at `scale` (the paper's 50; 10 for a quick run).
pub(super) fn fig4_segments(scale: Scale) -> usize {
    if scale == Scale::Quick {
        10
    } else {
        50
    }
}

/// Figure 4: the three growing filters and the two peers, segment by segment, with the most
/// threads given.
pub(super) fn fig4(options: &Options, report: &mut Report) -> PlotFn {
    let size = Fig4Size::for_quotient_bits(options.quotient_bits, fig4_segments(options.scale));
    let threads = options.threads.iter().copied().max().unwrap_or(1);
    progress(format_args!(
        "fig4: hashing 2 x {} keys",
        size.segments * size.segment_keys
    ));
    let keys = Fig4Keys::new(&size);
    let first_row = report.rows.len();
    let mut largest_memory = 0;
    // In rounds, as Figures 2 and 3: every filter's whole run once per round, each segment's
    // times the median over the rounds; the false-positive rate, failures and memory of a
    // segment are from the last round, keys missed from any.
    let rounds = options.repetitions;
    // Our three filters, then the peers users pick today (each behind a `Mutex`).
    let names: Vec<&str> = FIG4_FILTERS.into_iter().chain(FIG4_PEERS).collect();
    let build = |name: &str| {
        if FIG4_PEERS.contains(&name) {
            Ok(fig4_peer(name, &size))
        } else {
            fig4_filter(name, &size)
        }
    };
    let mut runs: Vec<Vec<Vec<Fig4Segment>>> = vec![Vec::new(); names.len()];
    let mut skipped = vec![false; names.len()];
    for round in 1..=rounds {
        for i in round_order(round, names.len()) {
            let name = names[i];
            if skipped[i] {
                continue;
            }
            progress(format_args!(
                "fig4: round {round} of {rounds}: {name}, {}, {} segments",
                plural(threads, "thread"),
                size.segments
            ));
            match build(name) {
                Ok(filter) => runs[i].push(fig4_run(&*filter, &size, &keys, threads)),
                Err(error) => {
                    eprintln!("fig4: {name} could not be built: {error}; skipped");
                    skipped[i] = true;
                }
            }
        }
    }
    for (&name, runs) in names.iter().zip(&runs) {
        let Some(last) = runs.last() else { continue };
        for (i, segment) in last.iter().enumerate() {
            let missed = runs.iter().map(|run| run[i].missed).max().unwrap_or(0);
            if missed > 0 {
                report.failures.push(format!(
                    "fig4 {name} segment {}: {missed} inserted keys not found",
                    i + 1,
                ));
            }
            largest_memory = largest_memory.max(segment.memory);
            let keys_so_far = (i + 1) * size.segment_keys;
            let median_of = |time: fn(&Fig4Segment) -> Duration| {
                median(runs.iter().map(|run| time(&run[i])).collect())
            };
            let times = [
                median_of(|segment| segment.insert),
                median_of(|segment| segment.negative),
                median_of(|segment| segment.positive),
            ];
            for (phase, time) in FIG2_PHASES.into_iter().zip(times) {
                report.rows.push(Row {
                    figure: "fig4",
                    filter: name.to_string(),
                    threads,
                    fill: Some((i + 1) as f64),
                    phase,
                    ops_per_sec: per_second(size.segment_keys, time),
                    speedup: None,
                    fpr: (phase == "lookup_negative").then_some(segment.fpr),
                    // A peer that does not tell its size reports 0 bytes: shown as "-".
                    bits_per_item: (segment.memory > 0)
                        .then(|| segment.memory as f64 * 8.0 / keys_so_far as f64),
                    failed_inserts: (phase == "insert").then_some(segment.failed),
                });
            }
        }
    }
    // The physical limit over an array as large as the largest filter grew, read with as many
    // reads as a segment has lookups.
    let bytes = largest_memory.max(8);
    report.rows.extend(limits(
        "fig4",
        None,
        LIMIT_PHASES,
        bytes,
        size.segment_keys,
        &[threads],
        options.repetitions,
    ));
    print_fig4(&size, threads, &report.rows[first_row..]);
    print_limits(&report.rows[first_row..], LIMIT_PHASES, bytes, &[threads]);
    plot_fig4
}

/// The Figure 4 tables, one per phase, the FPR and the bits per key (lookups also as a share of
/// the random-read limit at `threads` over the largest filter's bytes).
pub(super) fn print_fig4(size: &Fig4Size, threads: usize, rows: &[Row]) {
    let filters = filters_of(rows);
    let limit = random_read_limit(rows, LIMIT_PHASES[0], threads);
    let at = |filter: &str, segment: usize, phase: &str| {
        rows.iter().find(|row| {
            row.filter == filter && row.phase == phase && row.fill == Some(segment as f64)
        })
    };
    let mut header = vec!["segment"];
    header.extend(filters.iter().copied());
    let tables: [(&str, &str); 5] = [
        ("insert", "inserts of the segment in million per second"),
        (
            "lookup_negative",
            "unsuccessful lookups in million per second (share of the random-read limit)",
        ),
        (
            "lookup_positive",
            "successful lookups in million per second (share of the random-read limit)",
        ),
        ("fpr", "measured false-positive rate"),
        ("bits", "bits per stored key"),
    ];
    for (i, (phase, what)) in tables.into_iter().enumerate() {
        let mut title = format!(
            "Figure 4{} (paper 000): {what}",
            ['a', 'b', 'c', 'd', 'e'][i]
        );
        if i == 0 {
            let _ = write!(
                title,
                "\nstart 2^{} slots, {} segments of {} keys, FPR target {FIG4_FPR:.2e}, {}; '*' = \
                 some inserts failed",
                size.start_quotient_bits,
                size.segments,
                size.segment_keys,
                plural(threads, "thread"),
            );
        }
        let body: Vec<Vec<String>> = (1..=size.segments)
            .map(|segment| {
                let mut line = vec![segment.to_string()];
                for &filter in &filters {
                    line.push(match phase {
                        "fpr" => at(filter, segment, "lookup_negative")
                            .and_then(|row| row.fpr)
                            .map_or("-".into(), |f| format!("{f:.2e}")),
                        "bits" => at(filter, segment, "insert")
                            .and_then(|row| row.bits_per_item)
                            .map_or("-".into(), |b| format!("{b:.1}")),
                        _ => at(filter, segment, phase)
                            .map_or("-".into(), |row| throughput_cell(row, limit)),
                    });
                }
                line
            })
            .collect();
        print_table(&title, &header, &body);
    }
}

/// The Figure 4 plot: throughput per phase against the segment, one line per filter.
pub(super) fn plot_fig4(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
    let path = options.plots.join("fig4.svg");
    let panels = phase_panels(rows, |row| row.fill);
    let segments = fig4_segments(options.scale);
    let ticks: Vec<f64> = (1..=segments).map(|s| s as f64).collect();
    let title = format!(
        "Figure 4 (paper 000): growing, throughput per segment, scale {}",
        options.scale.name()
    );
    draw_plot(
        &path,
        &title,
        "segment",
        &ticks,
        11,
        &|x| integer_label(x, if segments > 10 { 10.0 } else { 1.0 }),
        &panels,
    )?;
    Ok(path)
}
