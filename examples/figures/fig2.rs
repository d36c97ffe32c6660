//! Figure 2 of paper 000 (§5): thread scaling at 72% fill. The lines (every filter at every
//! thread count) are measured in rounds by [`super::measure_in_rounds`]; this module builds them,
//! turns their medians into rows, prints the table and draws the plot.

use super::common;
use super::common::{
    fig2_concurrent, fig2_sequential, items_at, key_hashes, median, per_second, qfilter_like,
    FastBloom, Fig2Run, Locked, SeqTable, FIG2_FILL, REMAINDER_BITS,
};
use super::plot::{draw_against_threads, phase_panels};
use super::{
    find, limits, measure_in_rounds, mops, plural, print_table, progress, random_read_limit,
    rmw_limit, share, Options, PlotFn, Report, RoundLine, Row, FIG2_PHASES, LIMIT_PHASES,
    RMW_LIMIT_PHASE,
};
use conqf::{
    AtomicBloomFilter, CountingQf, Error, ExternallyLockedQf, Filter, LinearProbingQf,
    LocallyLockedQf, SequentialQf, TwoBitQf,
};
use std::path::PathBuf;

/// Shared state of the Figure 2 experiment.
///
/// The lines are measured in rounds: each round runs every line once, in table order, and each
/// row holds the median of its line's rounds. A slow spell of a shared machine then touches every
/// line alike instead of the few measured during it, so the ratios between lines of one run
/// (the speedups, and the issue targets in the README) compare like with like.
pub(super) struct Fig2<'a> {
    options: &'a Options,
    positives: &'a [u64],
    negatives: &'a [u64],
    lines: Vec<RoundLine<'a, Fig2Run>>,
    /// `SequentialQf` on one thread, operations per second per phase: the speedup baseline.
    baseline: [f64; 3],
    report: &'a mut Report,
}

impl<'a> Fig2<'a> {
    /// Records the median of `runs` as three rows.
    fn record(&mut self, filter: &str, threads: usize, runs: &[Fig2Run]) -> [f64; 3] {
        let times = [
            median(runs.iter().map(|run| run.insert).collect()),
            median(runs.iter().map(|run| run.negative).collect()),
            median(runs.iter().map(|run| run.positive).collect()),
        ];
        let counts = [
            self.positives.len(),
            self.negatives.len(),
            self.positives.len(),
        ];
        let last = runs.last().copied().unwrap_or_default();
        // Keys whose insert failed may be missing; more misses than failures are lost keys. Every
        // round built its own filter, so each is checked, not only the last.
        for (round, run) in runs.iter().enumerate() {
            if run.false_negatives > run.failed_inserts {
                self.report.failures.push(format!(
                    "fig2 {filter} with {}, round {}: {} of {} inserted keys not found, only {} \
                     inserts failed",
                    plural(threads, "thread"),
                    round + 1,
                    run.false_negatives,
                    self.positives.len(),
                    run.failed_inserts
                ));
            }
        }
        if last.failed_inserts > 0 {
            eprintln!(
                "warning: fig2 {filter} with {}: {} of {} inserts failed (full)",
                plural(threads, "thread"),
                last.failed_inserts,
                self.positives.len()
            );
        }
        let fpr = last.false_positives as f64 / self.negatives.len().max(1) as f64;
        let bits = last.bytes as f64 * 8.0 / last.len.max(1) as f64;
        let mut ops = [0.0; 3];
        for (i, phase) in FIG2_PHASES.into_iter().enumerate() {
            ops[i] = per_second(counts[i], times[i]);
            self.report.rows.push(Row {
                figure: "fig2",
                filter: filter.to_string(),
                threads,
                fill: Some(FIG2_FILL),
                phase,
                ops_per_sec: ops[i],
                speedup: (self.baseline[i] > 0.0).then(|| ops[i] / self.baseline[i]),
                fpr: Some(fpr),
                bits_per_item: Some(bits),
                failed_inserts: Some(last.failed_inserts),
            });
        }
        ops
    }

    /// Adds a single-threaded table on one thread, called directly.
    fn sequential<T: SeqTable>(&mut self, filter: &'static str, make: impl Fn() -> T + 'a) {
        let (positives, negatives) = (self.positives, self.negatives);
        self.lines.push(RoundLine::new(filter, 1, move || {
            Ok(fig2_sequential(&mut make(), positives, negatives))
        }));
    }

    /// Adds a concurrent filter at every thread count; `make` builds an empty one.
    fn concurrent<F: Filter>(
        &mut self,
        filter: &'static str,
        make: impl Fn() -> Result<F, Error> + 'a,
    ) {
        let (positives, negatives) = (self.positives, self.negatives);
        let make = std::rc::Rc::new(make);
        for &threads in &self.options.threads {
            let make = std::rc::Rc::clone(&make);
            self.lines.push(RoundLine::new(filter, threads, move || {
                make().map(|built| fig2_concurrent(&built, positives, negatives, threads))
            }));
        }
    }

    /// Measures every line once per round, in table order in odd rounds and in reverse in even
    /// ones ([`super::round_order`]), then records each line's median as three rows; the first
    /// line is the speedup baseline.
    fn measure(&mut self) {
        measure_in_rounds("fig2", &mut self.lines, self.options.repetitions);
        let lines = std::mem::take(&mut self.lines);
        for (i, line) in lines.iter().filter(|line| !line.skipped).enumerate() {
            let ops = self.record(line.filter, line.threads, &line.runs);
            if i == 0 {
                self.baseline = ops;
                let first = self.report.rows.len() - ops.len();
                for row in &mut self.report.rows[first..] {
                    row.speedup = Some(1.0);
                }
            }
        }
    }
}

/// Paper 000 Figure 2: thread scaling at 72% fill.
/// Returns how to plot the figure.
pub(super) fn fig2(options: &Options, report: &mut Report) -> PlotFn {
    let q = options.quotient_bits;
    let r = REMAINDER_BITS;
    let items = items_at(q, FIG2_FILL);
    progress(format_args!("fig2: hashing 2 x {items} keys"));
    let positives = key_hashes(common::POSITIVE_KEYS, items);
    let negatives = key_hashes(common::NEGATIVE_KEYS, items);
    // The Bloom filters get the memory of the r = 10 quotient filter and 4 hash functions
    // (paper 000 §5).
    let bytes = SequentialQf::with_bits(q, r)
        .expect("valid parameters")
        .memory_bytes();
    let mut fig = Fig2 {
        options,
        positives: &positives,
        negatives: &negatives,
        lines: Vec::new(),
        baseline: [0.0; 3],
        report,
    };
    let first_row = fig.report.rows.len();

    // The baseline first: every speedup is over it.
    fig.sequential("SequentialQf", move || {
        SequentialQf::with_bits(q, r).expect("valid parameters")
    });
    fig.sequential("qfilter", move || qfilter_like(q, r));

    // The concurrent filters: one line each.
    fig.concurrent("SequentialQf+Mutex", move || {
        SequentialQf::with_bits(q, r).map(Locked::new)
    });
    fig.concurrent("qfilter+Mutex", move || Ok(Locked::new(qfilter_like(q, r))));
    fig.concurrent("LocallyLockedQf", move || LocallyLockedQf::with_bits(q, r));
    fig.concurrent("ExternallyLockedQf", move || {
        ExternallyLockedQf::with_bits(q, r)
    });
    fig.concurrent("TwoBitQf", move || TwoBitQf::with_bits(q, r));
    fig.concurrent("LinearProbingQf", move || {
        LinearProbingQf::builder()
            .max_load(FIG2_FILL)
            .build_with_bits(q, r + 3)
    });
    fig.concurrent("AtomicBloomFilter", move || {
        AtomicBloomFilter::with_memory(bytes, 4)
    });
    fig.concurrent("fastbloom", move || Ok(FastBloom::with_memory(bytes, 4)));
    // With the qfilter peer's parameters (2^q slots of r + 1 bits, the same false-positive
    // rate), so the two rank-and-select filters compare like for like.
    fig.concurrent("CountingQf", move || CountingQf::with_bits(q, r + 1));
    fig.measure();

    fig.report.rows.extend(limits(
        "fig2",
        Some(FIG2_FILL),
        LIMIT_PHASES,
        bytes,
        items,
        &options.threads,
        options.repetitions,
    ));
    fig.report.rows.extend(rmw_limit(
        "fig2",
        Some(FIG2_FILL),
        bytes,
        items,
        &options.threads,
        options.repetitions,
    ));
    let fastbloom = FastBloom::with_memory(bytes, 4);
    let notes = [
        format!(
            "LinearProbingQf: r = {} bits per slot (the paper's 10 + 3), load cap raised from \
             its default 70% to the figure's 72%",
            r + 3
        ),
        format!(
            "AtomicBloomFilter: with_memory({bytes} bytes, 4 hash functions), the r = 10 \
             table's memory (paper 000 §5)"
        ),
        format!(
            "fastbloom: fastbloom::AtomicBloomFilter::with_num_bits({}).hashes(4): the same \
             memory ({} bytes) and {} hash functions, not sized by FPR",
            fastbloom.memory_bytes() * 8,
            fastbloom.memory_bytes(),
            fastbloom.hash_functions()
        ),
        format!(
            "qfilter: sized for {items} items at FPR {:.2e} (it picks its own remainder \
             bits); +Mutex = one global lock",
            FIG2_FILL * (-f64::from(r)).exp2()
        ),
    ];
    print_fig2(options, items, bytes, &notes, &fig.report.rows[first_row..]);
    plot_fig2
}

pub(super) fn print_fig2(
    options: &Options,
    items: usize,
    bytes: usize,
    notes: &[String],
    rows: &[Row],
) {
    let title = format!(
        "Figure 2 (paper 000): thread scaling at 72% fill; 2^{} slots, r = {REMAINDER_BITS}, \
         {items} keys, scale {}\nthroughput in million operations per second (speedup over \
         SequentialQf on 1 thread); lookups also as a share of the random-read limit over \
         {bytes} bytes at the same thread count; failed = inserts refused (Full), whose keys \
         are not counted as lost\n{}",
        options.quotient_bits,
        options.scale.name(),
        notes.join("\n")
    );
    let mut filters: Vec<(&str, usize)> = Vec::new();
    for row in rows.iter().filter(|row| row.filter != "limit") {
        if !filters.contains(&(row.filter.as_str(), row.threads)) {
            filters.push((row.filter.as_str(), row.threads));
        }
    }
    let cell = |row: Option<&Row>| {
        row.map_or("-".to_string(), |row| {
            format!(
                "{} ({:.2}x)",
                mops(row.ops_per_sec),
                row.speedup.unwrap_or(0.0)
            )
        })
    };
    let of_limit = |row: Option<&Row>, limit: Option<f64>| {
        row.map_or("-".to_string(), |row| share(row.ops_per_sec, limit))
    };
    let mut body = Vec::new();
    for (filter, threads) in filters {
        let insert = find(rows, filter, threads, "insert");
        let negative = find(rows, filter, threads, "lookup_negative");
        let positive = find(rows, filter, threads, "lookup_positive");
        let limit = random_read_limit(rows, LIMIT_PHASES[0], threads);
        body.push(vec![
            filter.to_string(),
            threads.to_string(),
            cell(insert),
            cell(negative),
            cell(positive),
            of_limit(negative, limit),
            of_limit(positive, limit),
            insert
                .and_then(|r| r.fpr)
                .map_or("-".into(), |f| format!("{f:.2e}")),
            insert
                .and_then(|r| r.bits_per_item)
                .map_or("-".into(), |b| format!("{b:.1}")),
            insert
                .and_then(|r| r.failed_inserts)
                .map_or("-".into(), |f| f.to_string()),
        ]);
    }
    for &threads in &options.threads {
        for phase in LIMIT_PHASES.into_iter().chain([RMW_LIMIT_PHASE]) {
            if let Some(row) = find(rows, "limit", threads, phase) {
                // The write limit stands in the insert column, the read limits in the lookups'.
                let (write, read) = if phase == RMW_LIMIT_PHASE {
                    (mops(row.ops_per_sec), "-".to_string())
                } else {
                    ("-".to_string(), mops(row.ops_per_sec))
                };
                body.push(vec![
                    format!("limit: {}", phase.replace('_', " ")),
                    threads.to_string(),
                    write,
                    read.clone(),
                    read,
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
            }
        }
    }
    print_table(
        &title,
        &[
            "filter",
            "threads",
            "insert",
            "lookup-",
            "lookup+",
            "lookup- of limit",
            "lookup+ of limit",
            "FPR",
            "bits/item",
            "failed",
        ],
        &body,
    );
}

/// The Figure 2 plot: throughput per phase against threads, one line per filter; the filters
/// measured on one thread only (the `SequentialQf` baseline, `qfilter`) as dashed lines.
pub(super) fn plot_fig2(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
    let path = options.plots.join("fig2.svg");
    let panels = phase_panels(rows, |row| Some(row.threads as f64));
    let title = format!(
        "Figure 2 (paper 000): thread scaling at 72% fill, 2^{} slots, scale {} \
         (dashed: 1 thread)",
        options.quotient_bits,
        options.scale.name()
    );
    draw_against_threads(&path, &title, &options.threads, &panels)?;
    Ok(path)
}
