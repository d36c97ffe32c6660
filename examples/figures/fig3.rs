//! Figure 3 of paper 000 (§5): single-threaded throughput against the fill degree, every 10%
//! up to 90%, in rounds (every line's whole curve once per round); the table and the plot.

use super::common;
use super::common::{
    items_at, key_hashes, median, per_second, qfilter_like, table_count_hits, table_insert_all,
    Direct, SeqTable, REMAINDER_BITS,
};
use super::plot::{draw_plot, integer_label, phase_panels};
use super::{
    filters_of, limits, print_limits, print_table, progress, random_read_limit, round_order,
    throughput_cell, Options, PlotFn, Report, Row, FIG2_PHASES, LIMIT_PHASES,
};
use conqf::{
    AtomicBloomFilter, CountingQf, Error, ExternallyLockedQf, LinearProbingQf, LocallyLockedQf,
    SequentialQf, TwoBitQf,
};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Fill degrees of Figure 3: 10%, 20%, ..., 90%.
pub(super) const FIG3_LEVELS: usize = 9;

/// `LinearProbingQf` is measured up to 70% only: paper 000 §2.2 meant it for fills up to about
/// 70%, and its default load cap refuses inserts past that.
pub(super) const FIG3_LINEAR_PROBING_LEVELS: usize = 7;

/// Operations timed per fill level and phase: the paper's 100k, or a whole 10% band of a
/// smaller table.
pub(super) const FIG3_OPERATIONS: usize = 100_000;

/// One line of Figure 3: a table type and how many fill levels it is measured to.
pub(super) struct Fig3Line<'a> {
    name: &'static str,
    levels: usize,
    /// One repetition of the line's curve ([`fig3_repetition`] on a fresh table).
    run: Box<dyn Fn(&Fig3Keys) -> Fig3Repetition + 'a>,
}

impl<'a> Fig3Line<'a> {
    fn new<T: SeqTable>(name: &'static str, levels: usize, make: impl Fn() -> T + 'a) -> Self {
        let levels = levels.min(FIG3_LEVELS);
        Fig3Line {
            name,
            levels,
            run: Box::new(move |keys| fig3_repetition(name, levels, make(), keys)),
        }
    }
}

/// What one repetition of a Figure 3 line measured, per fill level.
pub(super) struct Fig3Repetition {
    /// Insert, absent lookup and present lookup times.
    times: Vec<[Duration; 3]>,
    /// False positives, bytes, stored fingerprints, and inserts that failed up to the level.
    stats: Vec<(usize, usize, usize, usize)>,
    /// Lost keys found (more inserted keys missed than inserts failed).
    false_negatives: Vec<String>,
}

/// One repetition of a table's curve for Figure 3, as in the paper: at each fill level up to
/// `levels` (10% each) the table is filled (untimed) to just below the level, then the last `m`
/// inserts up to the level are timed, then `m` lookups of keys never inserted and `m` lookups
/// of inserted keys.
pub(super) fn fig3_repetition<T: SeqTable>(
    name: &str,
    levels: usize,
    mut table: T,
    keys: &Fig3Keys,
) -> Fig3Repetition {
    let m = keys.operations;
    let mut repetition = Fig3Repetition {
        times: Vec::new(),
        stats: Vec::new(),
        false_negatives: Vec::new(),
    };
    let mut failed = 0;
    for level in 0..levels {
        let (from, to) = (keys.bounds[level], keys.bounds[level + 1]);
        failed += table_insert_all(&mut table, &keys.inserts[from..to - m]);
        let start = Instant::now();
        failed += table_insert_all(&mut table, &keys.inserts[to - m..to]);
        let insert = start.elapsed();
        let start = Instant::now();
        let false_positives = table_count_hits(&table, &keys.negatives);
        let absent = start.elapsed();
        let start = Instant::now();
        let hits = table_count_hits(&table, &keys.positives[level]);
        let present = start.elapsed();
        repetition.times.push([insert, absent, present]);
        let missed = keys.positives[level].len() - hits;
        repetition.stats.push((
            false_positives,
            table.table_bytes(),
            table.table_len(),
            failed,
        ));
        // As in fig2: only more misses than failed inserts prove a lost key.
        if missed > failed {
            repetition.false_negatives.push(format!(
                "fig3 {name} at {}% fill: {missed} inserted keys not found, only {failed} \
                 inserts failed so far",
                (level + 1) * 10
            ));
        }
    }
    repetition
}

/// Figure 3's lines measured in rounds, as Figure 2's: each round runs one repetition of every
/// line ([`round_order`]), so a slow spell of the shared machine touches every line alike, and
/// each point is the median of its rounds. Appends one row per line, level and phase (lines in
/// table order) and returns each line's curve in operations per second.
pub(super) fn fig3_rounds(
    options: &Options,
    lines: &[Fig3Line<'_>],
    keys: &Fig3Keys,
    report: &mut Report,
) -> Vec<Vec<[f64; 3]>> {
    let rounds = options.repetitions;
    let mut times: Vec<Vec<[Vec<Duration>; 3]>> = lines
        .iter()
        .map(|line| vec![[Vec::new(), Vec::new(), Vec::new()]; line.levels])
        .collect();
    // Per line, from the last round.
    let mut stats = vec![Vec::new(); lines.len()];
    for round in 1..=rounds {
        for i in round_order(round, lines.len()) {
            let line = &lines[i];
            progress(format_args!(
                "fig3: round {round} of {rounds}: {}, fill 10% to {}%",
                line.name,
                line.levels * 10
            ));
            let repetition = (line.run)(keys);
            for (level, level_times) in repetition.times.iter().enumerate() {
                for phase in 0..3 {
                    times[i][level][phase].push(level_times[phase]);
                }
            }
            report.failures.extend(repetition.false_negatives);
            stats[i] = repetition.stats;
        }
    }
    let m = keys.operations;
    let mut curves = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let failed_in_last_round = stats[i].last().map_or(0, |stat| stat.3);
        if failed_in_last_round > 0 {
            eprintln!(
                "warning: fig3 {}: {failed_in_last_round} inserts failed (full) up to {}% fill",
                line.name,
                line.levels * 10
            );
        }
        let mut curve = Vec::new();
        for (level, level_times) in times[i].iter_mut().enumerate() {
            let (false_positives, bytes, len, failed) = stats[i][level];
            let mut ops = [0.0; 3];
            for (phase_index, phase) in FIG2_PHASES.into_iter().enumerate() {
                let time = median(std::mem::take(&mut level_times[phase_index]));
                ops[phase_index] = per_second(m, time);
                report.rows.push(Row {
                    figure: "fig3",
                    filter: line.name.to_string(),
                    threads: 1,
                    fill: Some((level + 1) as f64 / 10.0),
                    phase,
                    ops_per_sec: ops[phase_index],
                    speedup: None,
                    fpr: Some(false_positives as f64 / keys.negatives.len().max(1) as f64),
                    bits_per_item: Some(bytes as f64 * 8.0 / len.max(1) as f64),
                    failed_inserts: Some(failed),
                });
            }
            curve.push(ops);
        }
        curves.push(curve);
    }
    curves
}

/// The keys of Figure 3, hashed before any timing.
pub(super) struct Fig3Keys {
    /// All keys inserted up to 90%, in order; level `l` ends at `bounds[l + 1]`.
    inserts: Vec<u64>,
    bounds: Vec<usize>,
    /// Operations timed per level and phase (`m`).
    operations: usize,
    /// `m` keys never inserted, looked up at every level.
    negatives: Vec<u64>,
    /// Per level, `m` inserted keys spread evenly over everything inserted so far.
    positives: Vec<Vec<u64>>,
}

impl Fig3Keys {
    fn new(quotient_bits: u32) -> Self {
        let bounds: Vec<usize> = (0..=FIG3_LEVELS)
            .map(|level| items_at(quotient_bits, level as f64 / 10.0))
            .collect();
        let inserts = key_hashes(common::POSITIVE_KEYS, bounds[FIG3_LEVELS]);
        let operations = (1..=FIG3_LEVELS)
            .map(|level| bounds[level] - bounds[level - 1])
            .min()
            .unwrap_or(0)
            .clamp(1, FIG3_OPERATIONS);
        let positives = (1..=FIG3_LEVELS)
            .map(|level| {
                let inserted = bounds[level];
                (0..operations)
                    .map(|j| inserts[j * inserted / operations])
                    .collect()
            })
            .collect();
        Fig3Keys {
            negatives: key_hashes(common::NEGATIVE_KEYS, operations),
            inserts,
            bounds,
            operations,
            positives,
        }
    }
}

/// Paper 000 Figure 3: single-threaded throughput against fill degree; returns how to plot it.
pub(super) fn fig3(options: &Options, report: &mut Report) -> PlotFn {
    let q = options.quotient_bits;
    let r = REMAINDER_BITS;
    progress(format_args!("fig3: hashing keys for 2^{q} slots"));
    let keys = Fig3Keys::new(q);
    let first_row = report.rows.len();
    let bytes = SequentialQf::with_bits(q, r)
        .expect("valid parameters")
        .memory_bytes();
    fn valid<T>(result: Result<T, Error>) -> T {
        result.expect("valid parameters")
    }
    // One line each; the concurrent filters are called from this one thread. LinearProbingQf
    // has the paper's r = 10 + 3 bits with its default 70% load cap, measured up to the cap.
    let levels = FIG3_LEVELS;
    let lines = [
        Fig3Line::new("SequentialQf", levels, || {
            valid(SequentialQf::with_bits(q, r))
        }),
        Fig3Line::new("qfilter", levels, || qfilter_like(q, r)),
        Fig3Line::new("LocallyLockedQf", levels, || {
            Direct(valid(LocallyLockedQf::with_bits(q, r)))
        }),
        Fig3Line::new("ExternallyLockedQf", levels, || {
            Direct(valid(ExternallyLockedQf::with_bits(q, r)))
        }),
        Fig3Line::new("TwoBitQf", levels, || {
            Direct(valid(TwoBitQf::with_bits(q, r)))
        }),
        Fig3Line::new("LinearProbingQf", FIG3_LINEAR_PROBING_LEVELS, || {
            Direct(valid(LinearProbingQf::with_bits(q, r + 3)))
        }),
        Fig3Line::new("AtomicBloomFilter", levels, || {
            Direct(valid(AtomicBloomFilter::with_memory(bytes, 4)))
        }),
        Fig3Line::new("CountingQf", levels, || {
            Direct(valid(CountingQf::with_bits(q, r + 1)))
        }),
    ];
    let curves = fig3_rounds(options, &lines, &keys, report);
    let ours = &curves[0];
    // Speedup over SequentialQf at the same fill and phase.
    for row in &mut report.rows[first_row..] {
        let level = (row.fill.unwrap_or(0.0) * 10.0).round() as usize - 1;
        let phase = FIG2_PHASES
            .iter()
            .position(|&p| p == row.phase)
            .unwrap_or(0);
        row.speedup = Some(row.ops_per_sec / ours[level][phase]);
    }
    report.rows.extend(limits(
        "fig3",
        None,
        LIMIT_PHASES,
        bytes,
        keys.negatives.len(),
        &[1],
        options.repetitions,
    ));
    print_fig3(options, bytes, keys.operations, &report.rows[first_row..]);
    plot_fig3
}

/// The Figure 3 tables, one per phase and one of the FPR (lookups also as a share of the
/// random-read limit on one thread over the r = 10 table's `bytes`), then the limits.
pub(super) fn print_fig3(options: &Options, bytes: usize, operations: usize, rows: &[Row]) {
    let filters = filters_of(rows);
    let limit = random_read_limit(rows, LIMIT_PHASES[0], 1);
    let at = |filter: &str, level: usize, phase: &str| {
        let fill = level as f64 / 10.0;
        rows.iter().find(|row| {
            row.filter == filter
                && row.phase == phase
                && row.fill.is_some_and(|f| (f - fill).abs() < 1e-9)
        })
    };
    let mut header = vec!["fill"];
    header.extend(filters.iter().copied());
    let tables: [(&str, &str); 4] = [
        (
            "insert",
            "inserts in million per second (the last inserts up to the fill)",
        ),
        (
            "lookup_negative",
            "unsuccessful lookups (keys never inserted) in million per second (share of the \
             random-read limit)",
        ),
        (
            "lookup_positive",
            "successful lookups (inserted keys) in million per second (share of the \
             random-read limit)",
        ),
        ("fpr", "measured false-positive rate"),
    ];
    for (i, (phase, what)) in tables.into_iter().enumerate() {
        let mut title = format!("Figure 3{} (paper 000): {what}", ['a', 'b', 'c', 'd'][i]);
        if i == 0 {
            let _ = write!(
                title,
                "\nsingle-threaded, against fill; 2^{} slots, r = {REMAINDER_BITS}, scale {}, \
                 {operations} operations per point (as the paper's 100k); LinearProbingQf \
                 (r = 13) only up to its 70% load cap; AtomicBloomFilter with the r = 10 \
                 table's {bytes} bytes and 4 hash functions; '*' = some inserts failed",
                options.quotient_bits,
                options.scale.name(),
            );
        }
        let mut body = Vec::new();
        for level in 1..=FIG3_LEVELS {
            let mut line = vec![format!("{}%", level * 10)];
            for &filter in &filters {
                line.push(if phase == "fpr" {
                    at(filter, level, "lookup_negative")
                        .and_then(|row| row.fpr)
                        .map_or("-".into(), |f| format!("{f:.2e}"))
                } else {
                    at(filter, level, phase).map_or("-".into(), |row| throughput_cell(row, limit))
                });
            }
            body.push(line);
        }
        print_table(&title, &header, &body);
    }
    print_limits(rows, LIMIT_PHASES, bytes, &[1]);
}

/// The Figure 3 plot: single-threaded throughput per phase against fill, one line per filter.
pub(super) fn plot_fig3(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
    let path = options.plots.join("fig3.svg");
    let panels = phase_panels(rows, |row| Some(row.fill? * 100.0));
    let ticks: Vec<f64> = (1..=FIG3_LEVELS).map(|level| level as f64 * 10.0).collect();
    let title = format!(
        "Figure 3 (paper 000): throughput against fill, 1 thread, 2^{} slots, scale {}",
        options.quotient_bits,
        options.scale.name()
    );
    draw_plot(
        &path,
        &title,
        "fill degree (%)",
        &ticks,
        FIG3_LEVELS + 1,
        &|x| integer_label(x, 10.0),
        &panels,
    )?;
    Ok(path)
}
