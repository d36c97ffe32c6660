//! Reproduces the papers' figures as tables, SVG plots (`--plots DIR`, default
//! `target/figures`) and optionally a CSV file: `cargo run --release --example figures`.
//!
//! * `fig2`: paper 000 Figure 2, thread scaling: fill `2^q` slots to 72% with all threads, then
//!   look up keys never inserted and keys inserted; throughput, speedup over `SequentialQf` on one
//!   thread, measured false-positive rate and bits per item. `SequentialQf` and `qfilter` on one
//!   thread, called directly; at every thread count both behind a global `Mutex`,
//!   `LocallyLockedQf`, `ExternallyLockedQf` (one spin lock per 4096 slots), `TwoBitQf`,
//!   `LinearProbingQf` (r = 10 + 3 bits, load cap raised to 72%), `AtomicBloomFilter` and
//!   `fastbloom`'s atomic Bloom filter (both with the r = 10 table's memory and 4 hash functions),
//!   `CountingQf` (with `qfilter`'s r + 1 bits). The concurrent part is generic over
//!   `conqf::Filter`, so each concurrent filter joins with one line in [`fig2::fig2`]. The lines
//!   are measured in rounds (every line once per round, in table order and reversed in turn,
//!   medians over the rounds), so the ratios between lines of one run are not skewed by a slow
//!   spell of the machine.
//! * `fig3`: paper 000 Figure 3, single-threaded throughput against fill degree (every 10% up to
//!   90%; `LinearProbingQf` up to its 70% cap) for `SequentialQf`, `qfilter`, `LocallyLockedQf`,
//!   `ExternallyLockedQf`, `TwoBitQf`, `LinearProbingQf`, `AtomicBloomFilter` and `CountingQf`
//!   (with `qfilter`'s r + 1 bits), in rounds as `fig2` (every line's whole curve once per
//!   round, medians over the rounds; before 2026-11-26 each line ran all its repetitions before
//!   the next line started).
//! * `cuckoo`: paper 001 §3.1, a cuckoo table at load 0.4 under 90% finds, 5% inserts and 5%
//!   removes against threads: `LockFreeCuckooFilter`, `LockedCuckooFilter`, the coarse-grained
//!   filter (one lock around the table) and the `atomic-cuckoo-filter` crate, with throughput
//!   and speedup over the coarse filter at the same thread count (the workload is
//!   `benches/common/cuckoo_mix.rs`, shared with `benches/cuckoo_mix.rs`). Then single-thread
//!   positive and negative lookups of both filters beside the `cuckoofilter` crate at load 0.4
//!   and its 8-bit fingerprints, keys hashed by each filter (`benches/common/cuckoo_lookup.rs`).
//! * `fig4`: paper 000 Figure 4, growing: bounded growing (the growable `LocallyLockedQf`) and
//!   `ExpandableQf` without and with cascading inserts start at 1/64 of the scale's slots and
//!   take 50 segments of 1/32 of them (10 at the quick scale) with the most threads given; per
//!   segment the insert and lookup throughput and the measured false-positive rate, in rounds
//!   as `fig2` (every filter's whole run once per round; since 2026-11-26). Beside them, the
//!   growable filters users pick today at the same target, behind a `Mutex`:
//!   `growable-bloom-filter` and `scalable_cuckoo_filter` (since 2026-11-28).
//!
//! * `removes`: removals against threads, which the papers do not plot: Figure 2's table filled
//!   to 72% untimed, then every key removed once, each thread its own piece; `SequentialQf` and
//!   `qfilter` on one thread, both behind a `Mutex`, and the concurrent quotient filters that
//!   remove (`figures/removes.rs`).
//!
//! Every figure also measures the physical limit in the same run: independent random 8-byte reads
//! and a dependent pointer chase over an array of the table's size (for `fig4`, the largest
//! filter's final size; for `cuckoo`, the lock-free table's: with 16-bit fingerprints for the
//! mix, with 8-bit ones for the single-thread lookups, whose limit rows have the phases
//! [`CUCKOO_LOOKUP_LIMIT_PHASES`]); every lookup throughput is also printed as a share of the
//! random-read limit at the same thread count. `fig2` also measures a write limit, independent
//! random atomic `fetch_or`s over its table's bytes ([`RMW_LIMIT_PHASE`]): on a VM whose
//! concurrent writes to random memory stop scaling for minutes at a time, its 2-thread row tells
//! a run whose 2-thread inserts the machine held back.
//! Keys are hashed before every timed loop (except the cuckoo lookups, which compare hashing
//! too). `--help` lists the options.
//!
//! Each figure is a module of `examples/figures/` (`fig2`, `fig3`, `fig4`, `cuckoo`, `bulk`,
//! `removes`), and the plots are drawn by `plot`; this file holds what they share: the command
//! line, the rows and the CSV file, the rounds, the limits and the table printing.

#[path = "figures/bulk.rs"]
mod bulk;
#[path = "../benches/common/mod.rs"]
mod common;
#[path = "figures/cuckoo.rs"]
mod cuckoo;
#[path = "figures/fig2.rs"]
mod fig2;
#[path = "figures/fig3.rs"]
mod fig3;
#[path = "figures/fig4.rs"]
mod fig4;
#[path = "figures/plot.rs"]
mod plot;
#[path = "figures/removes.rs"]
mod removes;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use common::{
    median_of, parallel, parallel_random_reads, parallel_random_rmws, per_second, ReadArray,
    RmwArray, Scale,
};
use conqf::Error;

const USAGE: &str = "\
Reproduce the conqf papers' figures as tables and SVG plots.

Usage: cargo run --release --example figures -- [OPTIONS]

Options:
  --threads LIST   thread counts for the thread-scaling figure, comma-separated
                   (default: 1 up to the available parallelism, e.g. 1,2)
  --scale SCALE    quick (2^16 slots, a second), default (2^22 slots, well under five
                   minutes on 2 cores) or paper (2^25 slots, about 24M keys, as in the papers);
                   the environment variable CONQF_SCALE sets it too, this option wins
  --bits Q         2^Q slots instead of the scale's (10 to 30; e.g. 24 for issue 8's
                   bulk targets), keeping the scale's repetitions
  --only LIST      run only these figures, comma-separated: fig2, fig3, fig4, cuckoo, bulk,
                   removes (default: all)
  --csv FILE       also write every measurement to FILE, one row each, with the columns
                   figure,filter,threads,fill,phase,ops_per_sec,speedup,fpr,bits_per_item
                   (for fig4 the fill column holds the segment number)
  --plots DIR      write one SVG plot per figure into DIR, created if missing
                   (default: target/figures): fig2.svg, fig3.svg, fig4.svg, cuckoo.svg,
                   bulk.svg, removes.svg
  -h, --help       print this help

Figures:
  fig2   paper 000 Figure 2: thread scaling at 72% fill (insert, unsuccessful and
         successful lookups), speedup over SequentialQf on one thread, measured FPR and
         bits per item: SequentialQf and qfilter (1 thread, direct), both behind a Mutex,
         LocallyLockedQf, ExternallyLockedQf, TwoBitQf, LinearProbingQf,
         AtomicBloomFilter, fastbloom, CountingQf
  fig3   paper 000 Figure 3: single-threaded throughput against fill degree, 10% to 90%
         (LinearProbingQf to 70%, its load cap)
  fig4   paper 000 Figure 4: growing from 1/64 of the slots through 50 segments of keys
         (FPR target 2^-10) with the most threads: bounded growing, ExpandableQf without
         and with cascading inserts; per segment throughput and measured FPR
  cuckoo paper 001: 90% find, 5% insert, 5% remove at load 0.4 against threads:
         LockFreeCuckooFilter, LockedCuckooFilter, one lock around the table (coarse),
         atomic-cuckoo-filter; speedup over the coarse filter at the same thread count;
         then single-thread positive and negative lookups at load 0.4 with 8-bit
         fingerprints of both cuckoo filters beside the cuckoofilter crate (SipHash, its
         default, and xxh3, this crate's hash), speedup over cuckoofilter with xxh3
  bulk   paper 004 Figures 11-13: bulk build throughput against fill, 10% to 95%, by
         the three methods with and without dedupe (on the most threads of --threads) and
         one-by-one inserts; unsuccessful lookups, contains against contains_batch
  removes removals against threads on Figure 2's table (72% fill, untimed), every
          key removed once, speedup over SequentialQf on one thread: SequentialQf and
          qfilter (1 thread, direct), both behind a Mutex, LocallyLockedQf,
          ExternallyLockedQf, TwoBitQf, CountingQf; each run checks that its removals
          found what the fill stored and left the filter empty

Every figure also measures the physical limit: independent random 8-byte reads and a
dependent pointer chase over an array of the filter's size; every lookup is also shown as
a share of the random-read limit at the same thread count. fig2 also measures independent
random atomic read-modify-writes over the same bytes (the write limit). Progress goes to
stderr.
";

/// The figures this runner knows, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    Fig2,
    Fig3,
    Fig4,
    Cuckoo,
    Bulk,
    Removes,
}

impl Figure {
    const ALL: [Figure; 6] = [
        Figure::Fig2,
        Figure::Fig3,
        Figure::Fig4,
        Figure::Cuckoo,
        Figure::Bulk,
        Figure::Removes,
    ];

    fn name(self) -> &'static str {
        match self {
            Figure::Fig2 => "fig2",
            Figure::Fig3 => "fig3",
            Figure::Fig4 => "fig4",
            Figure::Cuckoo => "cuckoo",
            Figure::Bulk => "bulk",
            Figure::Removes => "removes",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    threads: Vec<usize>,
    scale: Scale,
    figures: Vec<Figure>,
    csv: Option<PathBuf>,
    /// Where the SVG plots go.
    plots: PathBuf,
    /// `2^quotient_bits` slots; set from the scale (tests make it tiny).
    quotient_bits: u32,
    /// Repetitions of each measurement (the median is reported); set from the scale.
    repetitions: usize,
}

/// The outcome of parsing the command line.
#[derive(Debug, PartialEq)]
enum Command {
    Run(Options),
    Help,
}

/// The options that take a value (besides them only `-h`/`--help`).
const VALUE_OPTIONS: [&str; 6] = [
    "--threads",
    "--scale",
    "--only",
    "--csv",
    "--plots",
    "--bits",
];

/// Parses the arguments after the program name; `env_scale` is `CONQF_SCALE` if set.
fn parse_args(
    args: impl IntoIterator<Item = String>,
    env_scale: Option<String>,
) -> Result<Command, String> {
    let mut threads = None;
    let mut scale = None;
    let mut figures = None;
    let mut csv = None;
    let mut plots = None;
    let mut bits = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline_value) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_string(), Some(value)),
            _ => (arg.clone(), None),
        };
        if name == "-h" || name == "--help" {
            return Ok(Command::Help);
        }
        if !VALUE_OPTIONS.contains(&name.as_str()) {
            return Err(if name.starts_with('-') {
                format!("unknown option '{name}'")
            } else {
                format!("unexpected argument '{arg}'")
            });
        }
        let value = match inline_value {
            Some(value) => value.to_string(),
            None => args.next().ok_or_else(|| format!("{name} needs a value"))?,
        };
        match name.as_str() {
            "--threads" => threads = Some(parse_threads(&value)?),
            "--scale" => {
                scale = Some(Scale::parse(&value).ok_or_else(|| {
                    format!("--scale '{value}' is not one of quick, default, paper")
                })?)
            }
            "--only" => figures = Some(parse_figures(&value)?),
            "--bits" => match value.parse::<u32>() {
                Ok(q) if (10..=30).contains(&q) => bits = Some(q),
                _ => return Err(format!("--bits '{value}' is not a number from 10 to 30")),
            },
            "--plots" => {
                if value.is_empty() {
                    return Err("--plots needs a directory".to_string());
                }
                plots = Some(PathBuf::from(value));
            }
            _ => {
                if value.is_empty() {
                    return Err("--csv needs a file name".to_string());
                }
                csv = Some(PathBuf::from(value));
            }
        }
    }
    let scale = match (scale, env_scale) {
        (Some(scale), _) => scale,
        (None, Some(text)) => Scale::parse(&text)
            .ok_or_else(|| format!("CONQF_SCALE '{text}' is not one of quick, default, paper"))?,
        (None, None) => Scale::Default,
    };
    let threads = threads.unwrap_or_else(|| {
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        (1..=available).collect()
    });
    Ok(Command::Run(Options {
        threads,
        scale,
        figures: figures.unwrap_or_else(|| Figure::ALL.to_vec()),
        csv,
        plots: plots.unwrap_or_else(|| PathBuf::from("target/figures")),
        quotient_bits: bits.unwrap_or_else(|| scale.quotient_bits()),
        repetitions: scale.repetitions(),
    }))
}

/// `1,2,4` -> `[1, 2, 4]`: positive, without repeats, in the order given.
fn parse_threads(text: &str) -> Result<Vec<usize>, String> {
    let mut threads = Vec::new();
    for part in text.split(',') {
        match part.trim().parse::<usize>() {
            Ok(count) if (1..=1024).contains(&count) => {
                if !threads.contains(&count) {
                    threads.push(count);
                }
            }
            _ => {
                return Err(format!(
                    "--threads '{text}': '{part}' is not a thread count from 1 to 1024"
                ))
            }
        }
    }
    Ok(threads)
}

/// `fig3,fig2` -> the figures, in the runner's order.
fn parse_figures(text: &str) -> Result<Vec<Figure>, String> {
    let mut chosen = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let figure = Figure::ALL
            .into_iter()
            .find(|figure| figure.name() == part)
            .ok_or_else(|| {
                let known: Vec<&str> = Figure::ALL.into_iter().map(Figure::name).collect();
                format!(
                    "--only: unknown figure '{part}' (known: {})",
                    known.join(", ")
                )
            })?;
        chosen.push(figure);
    }
    Ok(Figure::ALL
        .into_iter()
        .filter(|figure| chosen.contains(figure))
        .collect())
}

/// One measurement: a row of the CSV file.
#[derive(Debug, Clone)]
struct Row {
    figure: &'static str,
    filter: String,
    threads: usize,
    fill: Option<f64>,
    phase: &'static str,
    ops_per_sec: f64,
    speedup: Option<f64>,
    fpr: Option<f64>,
    bits_per_item: Option<f64>,
    /// Inserts that returned `Full` in the run the FPR comes from (tables only, not the CSV).
    failed_inserts: Option<usize>,
}

impl Row {
    /// A row of a throughput alone: `ops_per_sec` of `filter` in `phase` on `threads` threads,
    /// without speedup, rate or bits per item.
    fn throughput(
        figure: &'static str,
        filter: &str,
        threads: usize,
        fill: Option<f64>,
        phase: &'static str,
        ops_per_sec: f64,
    ) -> Row {
        Row {
            figure,
            filter: filter.to_string(),
            threads,
            fill,
            phase,
            ops_per_sec,
            speedup: None,
            fpr: None,
            bits_per_item: None,
            failed_inserts: None,
        }
    }
}

const CSV_HEADER: &str = "figure,filter,threads,fill,phase,ops_per_sec,speedup,fpr,bits_per_item";

fn csv_line(row: &Row) -> String {
    let opt = |value: Option<f64>| value.map_or(String::new(), |v| format!("{v}"));
    format!(
        "{},{},{},{},{},{},{},{},{}",
        row.figure,
        row.filter,
        row.threads,
        opt(row.fill),
        row.phase,
        row.ops_per_sec,
        opt(row.speedup),
        opt(row.fpr),
        opt(row.bits_per_item),
    )
}

/// What the run found besides the rows: problems to report at the end.
#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    /// Wrong answers are bugs (inserted keys not found, removed fingerprints left behind):
    /// each one is listed and the run fails.
    failures: Vec<String>,
}

/// The phases of Figure 2, in table order.
const FIG2_PHASES: [&str; 3] = ["insert", "lookup_negative", "lookup_positive"];

/// One line of a figure measured in rounds (Figure 2, `removes`): a filter at one thread
/// count, measured once per round.
struct RoundLine<'a, R> {
    filter: &'static str,
    threads: usize,
    /// Builds an empty filter and runs the figure's workload on it once; `Err` if it cannot be
    /// built.
    measure: Box<dyn Fn() -> Result<R, Error> + 'a>,
    runs: Vec<R>,
    /// Set when the filter could not be built: the line is left out.
    skipped: bool,
}

impl<'a, R> RoundLine<'a, R> {
    fn new(
        filter: &'static str,
        threads: usize,
        measure: impl Fn() -> Result<R, Error> + 'a,
    ) -> Self {
        RoundLine {
            filter,
            threads,
            measure: Box::new(measure),
            runs: Vec::new(),
            skipped: false,
        }
    }
}

/// Measures every line once per round, in table order in odd rounds and in reverse in even ones
/// ([`round_order`]); a line whose filter cannot be built is skipped from then on.
fn measure_in_rounds<R>(figure: &str, lines: &mut [RoundLine<'_, R>], rounds: usize) {
    for round in 1..=rounds {
        for i in round_order(round, lines.len()) {
            let line = &mut lines[i];
            if line.skipped {
                continue;
            }
            progress(format_args!(
                "{figure}: round {round} of {rounds}: {}, {}",
                line.filter,
                plural(line.threads, "thread")
            ));
            match (line.measure)() {
                Ok(run) => line.runs.push(run),
                Err(error) => {
                    eprintln!(
                        "{figure}: {} could not be built: {error}; skipped",
                        line.filter
                    );
                    line.skipped = true;
                }
            }
        }
    }
}

/// Draws a figure from its rows; returns the SVG file's path.
type PlotFn = fn(&Options, &[Row]) -> Result<PathBuf, String>;

/// The phases of the limit rows: independent random 8-byte reads, a dependent pointer chase.
const LIMIT_PHASES: [&str; 2] = ["random_read", "pointer_chase"];

/// The phase of the write-limit rows: independent random atomic `fetch_or`s ([`rmw_limit`]).
const RMW_LIMIT_PHASE: &str = "random_rmw";

/// The limit phases of the cuckoo lookup table (8-bit fingerprints, half the bytes of the mix's
/// table), so its rows stay apart from the mix's limit rows in the CSV file.
const CUCKOO_LOOKUP_LIMIT_PHASES: [&str; 2] = ["random_read_lookups", "pointer_chase_lookups"];

/// The fewest reads a limit is measured with. Figure 3 asks for its 100,000 operations per
/// point, which take a fraction of a millisecond at these rates: there a timer tick or a
/// scheduling hiccup moved the 1-thread random-read rate to 448.3, 165.4 and 214.5 million
/// reads per second in three runs minutes apart (`docs/figures/whole_block*.txt`), while
/// Figure 2's 3 million reads in the same runs gave 638.2, 634.7 and 582.6.
const MIN_LIMIT_READS: usize = 1 << 21;

/// The physical limit at each thread count: `reads` (at least [`MIN_LIMIT_READS`]) independent
/// random 8-byte reads and as many dependent pointer-chase steps over `bytes` bytes, split over
/// the threads. Returns the rows, one per thread count and phase, named by `phases` (random
/// reads first).
fn limits(
    figure: &'static str,
    fill: Option<f64>,
    phases: [&'static str; 2],
    bytes: usize,
    reads: usize,
    threads: &[usize],
    repetitions: usize,
) -> Vec<Row> {
    progress(format_args!(
        "{figure}: random-read and pointer-chase limits over {bytes} bytes"
    ));
    let reads = reads.max(MIN_LIMIT_READS);
    let array = ReadArray::new(bytes);
    let cycle = ReadArray::cycle(bytes);
    let mut rows = Vec::new();
    for &threads in threads {
        let random = median_of(repetitions, || {
            std::hint::black_box(array.warm());
            parallel_random_reads(&array, reads, threads)
        });
        let chase = median_of(repetitions, || {
            std::hint::black_box(cycle.warm());
            let (elapsed, ends) = parallel(threads, |i| {
                let steps = reads * (i + 1) / threads - reads * i / threads;
                cycle.chase(i * 7919, steps)
            });
            std::hint::black_box(ends);
            elapsed
        });
        for (phase, time) in phases.into_iter().zip([random, chase]) {
            let ops_per_sec = per_second(reads, time);
            rows.push(Row::throughput(
                figure,
                "limit",
                threads,
                fill,
                phase,
                ops_per_sec,
            ));
        }
    }
    rows
}

/// The write limit at each thread count: `count` (at least [`MIN_LIMIT_READS`]) independent
/// random atomic `fetch_or`s over `bytes` bytes, split over the threads; one row per thread
/// count, of the phase [`RMW_LIMIT_PHASE`].
fn rmw_limit(
    figure: &'static str,
    fill: Option<f64>,
    bytes: usize,
    count: usize,
    threads: &[usize],
    repetitions: usize,
) -> Vec<Row> {
    progress(format_args!(
        "{figure}: random read-modify-write limit over {bytes} bytes"
    ));
    let count = count.max(MIN_LIMIT_READS);
    let array = RmwArray::new(bytes);
    threads
        .iter()
        .map(|&threads| {
            let time = median_of(repetitions, || parallel_random_rmws(&array, count, threads));
            let ops_per_sec = per_second(count, time);
            Row::throughput(figure, "limit", threads, fill, RMW_LIMIT_PHASE, ops_per_sec)
        })
        .collect()
}

/// The random-read limit (reads per second) at `threads` among `rows`, if one was measured;
/// `phase` is the random-read phase of the figure's limit rows.
fn random_read_limit(rows: &[Row], phase: &str, threads: usize) -> Option<f64> {
    find(rows, "limit", threads, phase).map(|row| row.ops_per_sec)
}

/// `ops_per_sec` as a whole percentage of `limit` (`-` without a limit).
fn share(ops_per_sec: f64, limit: Option<f64>) -> String {
    limit
        .filter(|&limit| limit > 0.0)
        .map_or("-".into(), |limit| {
            format!("{:.0}%", 100.0 * ops_per_sec / limit)
        })
}

/// A throughput cell in millions per second: a lookup row's also as a share of `limit`
/// (`12.3 (45%)`), any other row's with `*` if some inserts failed.
fn throughput_cell(row: &Row, limit: Option<f64>) -> String {
    if row.phase.starts_with("lookup") {
        format!(
            "{} ({})",
            mops(row.ops_per_sec),
            share(row.ops_per_sec, limit)
        )
    } else {
        let failed = row.failed_inserts.unwrap_or(0) > 0;
        format!("{}{}", mops(row.ops_per_sec), if failed { "*" } else { "" })
    }
}

/// Millions per second, the row's speedup and the share of `limit`: `12.3 (1.20x, 45%)`.
fn speedup_and_share(row: &Row, limit: Option<f64>) -> String {
    format!(
        "{} ({:.2}x, {})",
        mops(row.ops_per_sec),
        row.speedup.unwrap_or(0.0),
        share(row.ops_per_sec, limit)
    )
}

/// The order in which round `round` (from 1) measures `lines` lines: table order in odd rounds,
/// reversed in even ones, so no line always runs right after the same neighbour (on the caches
/// and clock it left behind).
fn round_order(round: usize, lines: usize) -> Box<dyn Iterator<Item = usize>> {
    if round % 2 == 1 {
        Box::new(0..lines)
    } else {
        Box::new((0..lines).rev())
    }
}

/// `1 thread`, `2 threads`.
fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// A progress line on stderr.
fn progress(what: std::fmt::Arguments<'_>) {
    eprintln!("[figures] {what}");
}

/// Millions of operations per second, for the tables.
fn mops(ops_per_sec: f64) -> String {
    format!("{:.1}", ops_per_sec / 1e6)
}

/// Prints rows of cells with every column as wide as its widest cell.
fn print_table(title: &str, header: &[&str], body: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|cell| cell.len()).collect();
    for line in body {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = format!("\n{title}\n");
    let render = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        for (i, (cell, width)) in cells.zip(&widths).enumerate() {
            if i == 0 {
                let _ = write!(out, "{cell:<width$}");
            } else {
                let _ = write!(out, "  {cell:>width$}");
            }
        }
        out.push('\n');
    };
    render(&mut out, &mut header.iter().copied());
    let rule: Vec<String> = widths.iter().map(|&width| "-".repeat(width)).collect();
    render(&mut out, &mut rule.iter().map(String::as_str));
    for line in body {
        render(&mut out, &mut line.iter().map(String::as_str));
    }
    print!("{out}");
}

fn find<'a>(rows: &'a [Row], filter: &str, threads: usize, phase: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|row| row.filter == filter && row.threads == threads && row.phase == phase)
}

/// The filters of some rows in the order they first appear, without the limits.
fn filters_of(rows: &[Row]) -> Vec<&str> {
    let mut filters: Vec<&str> = Vec::new();
    for row in rows.iter().filter(|row| row.filter != "limit") {
        if !filters.contains(&row.filter.as_str()) {
            filters.push(&row.filter);
        }
    }
    filters
}

/// Prints a figure's random-read and pointer-chase limit rows (named by `phases`, random reads
/// first), one line each per thread count.
fn print_limits(rows: &[Row], phases: [&str; 2], bytes: usize, threads: &[usize]) {
    for &threads in threads {
        for (phase, what) in phases.into_iter().zip(["random read", "pointer chase"]) {
            if let Some(row) = find(rows, "limit", threads, phase) {
                println!(
                    "limit ({what} over {bytes} bytes, {}): {} million reads per second",
                    plural(threads, "thread"),
                    mops(row.ops_per_sec)
                );
            }
        }
    }
}

/// Runs the chosen figures, prints their tables and writes the CSV file; returns the rows.
///
/// # Errors
/// A message if the CSV file cannot be written or a filter lost an inserted key.
fn run(options: &Options) -> Result<Vec<Row>, String> {
    // Create the CSV file first, so a bad path fails before minutes of measuring.
    let csv = match &options.csv {
        Some(path) => Some(
            std::fs::File::create(path)
                .map(|file| (path, file))
                .map_err(|error| format!("cannot create {}: {error}", path.display()))?,
        ),
        None => None,
    };
    std::fs::create_dir_all(&options.plots)
        .map_err(|error| format!("cannot create {}: {error}", options.plots.display()))?;
    let started = Instant::now();
    let mut report = Report::default();
    for &figure in &options.figures {
        let first_row = report.rows.len();
        let plot = match figure {
            Figure::Fig2 => fig2::fig2(options, &mut report),
            Figure::Fig3 => fig3::fig3(options, &mut report),
            Figure::Fig4 => fig4::fig4(options, &mut report),
            Figure::Cuckoo => cuckoo::cuckoo(options, &mut report),
            Figure::Bulk => bulk::bulk(options, &mut report),
            Figure::Removes => removes::removes(options, &mut report),
        };
        let path = plot(options, &report.rows[first_row..])?;
        progress(format_args!("plotted {}", path.display()));
    }
    progress(format_args!(
        "done in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if let Some((path, mut file)) = csv {
        use std::io::Write as _;
        let mut text = format!("{CSV_HEADER}\n");
        for row in &report.rows {
            text.push_str(&csv_line(row));
            text.push('\n');
        }
        file.write_all(text.as_bytes())
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        progress(format_args!(
            "wrote {} rows to {}",
            report.rows.len(),
            path.display()
        ));
    }
    if !report.failures.is_empty() {
        return Err(format!(
            "wrong answers (a filter lost inserted keys or kept removed ones):\n  {}",
            report.failures.join("\n  ")
        ));
    }
    Ok(report.rows)
}

/// Runs the command line `args` (after the program name) with `env_scale` as `CONQF_SCALE`;
/// returns the exit code: 0, 1 if the run failed, 2 for invalid options.
fn run_cli(args: impl IntoIterator<Item = String>, env_scale: Option<String>) -> u8 {
    match parse_args(args, env_scale) {
        Ok(Command::Help) => {
            print!("{USAGE}");
            0
        }
        Ok(Command::Run(options)) => match run(&options) {
            Ok(_) => 0,
            Err(message) => {
                eprintln!("error: {message}");
                1
            }
        },
        Err(message) => {
            eprintln!("error: {message}\n\nRun with --help for the options.");
            2
        }
    }
}

fn main() -> std::process::ExitCode {
    let env_scale = std::env::var("CONQF_SCALE").ok();
    std::process::ExitCode::from(run_cli(std::env::args().skip(1), env_scale))
}

#[cfg(test)]
mod tests {
    //! The runner's logic, run in-process at a tiny size (`cargo test` runs these because the
    //! example is declared with `test = true`). No timing assertions: only that every claimed
    //! row is there with a positive throughput and an FPR in [0, 1].

    use super::common::cuckoo_lookup::{LOOKUP_BASELINE, LOOKUP_FILTERS};
    use super::common::cuckoo_mix::{MIX_FILTERS, MIX_LOAD};
    use super::common::fig4::{FIG4_FILTERS, FIG4_PEERS};
    use super::cuckoo::{CUCKOO_BASELINE, CUCKOO_LOOKUP_PHASES, CUCKOO_PHASE};
    use super::fig3::{FIG3_LEVELS, FIG3_LINEAR_PROBING_LEVELS};
    use super::plot::integer_label;
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    fn options(text: &str) -> Options {
        match parse_args(args(text), None) {
            Ok(Command::Run(options)) => options,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn parses_every_option_in_both_spellings() {
        let parsed =
            options("--threads 1,2,2,4 --scale quick --only fig3 --csv out.csv --plots plots/here");
        assert_eq!(parsed.threads, vec![1, 2, 4]);
        assert_eq!(parsed.scale, Scale::Quick);
        assert_eq!(parsed.quotient_bits, 16);
        assert_eq!(parsed.figures, vec![Figure::Fig3]);
        assert_eq!(parsed.csv, Some(PathBuf::from("out.csv")));
        assert_eq!(parsed.plots, PathBuf::from("plots/here"));
        let parsed = options("--threads=3 --scale=paper --only=fig3,fig2 --plots=p");
        assert_eq!(parsed.threads, vec![3]);
        assert_eq!(parsed.plots, PathBuf::from("p"));
        assert_eq!(parsed.scale, Scale::Paper);
        assert_eq!(parsed.figures, vec![Figure::Fig2, Figure::Fig3]);
        let parsed = options("--scale quick --bits 24");
        assert_eq!((parsed.quotient_bits, parsed.repetitions), (24, 1));
        assert_eq!(options("--bits=20").quotient_bits, 20);
        assert_eq!(options("--only fig4").figures, vec![Figure::Fig4]);
        assert_eq!(options("--only cuckoo").figures, vec![Figure::Cuckoo]);
        assert_eq!(
            options("--only=cuckoo,fig2").figures,
            vec![Figure::Fig2, Figure::Cuckoo]
        );
        assert_eq!(parse_args(args("--help"), None), Ok(Command::Help));
        assert_eq!(
            parse_args(args("--scale quick -h"), None),
            Ok(Command::Help)
        );
    }

    #[test]
    fn the_environment_sets_the_scale_and_the_option_wins() {
        let from_env = parse_args(Vec::new(), Some("quick".into()));
        assert!(matches!(from_env, Ok(Command::Run(o)) if o.scale == Scale::Quick));
        let option_wins = parse_args(args("--scale paper"), Some("quick".into()));
        assert!(matches!(option_wins, Ok(Command::Run(o)) if o.scale == Scale::Paper));
        assert!(parse_args(Vec::new(), Some("huge".into())).is_err());
        let default = options("");
        assert_eq!(default.scale, Scale::Default);
        assert_eq!(default.figures, Figure::ALL.to_vec());
        assert_eq!(default.threads[0], 1);
        assert_eq!(default.plots, PathBuf::from("target/figures"));
        assert_eq!(default.csv, None);
    }

    #[test]
    fn rejects_bad_options_with_a_message() {
        for bad in [
            "--threads",
            "--threads 0",
            "--threads 1,x",
            "--threads=",
            "--scale huge",
            "--bits 9",
            "--bits 31",
            "--bits x",
            "--only fig9",
            "--only",
            "--csv=",
            "--plots",
            "--plots=",
            "--frobnicate",
            "stray",
        ] {
            let result = parse_args(args(bad), None);
            assert!(
                matches!(&result, Err(message) if !message.is_empty()),
                "{bad}: {result:?}"
            );
        }
    }

    /// The filters of Figure 2 measured on one thread only, directly.
    const FIG2_SEQUENTIAL: [&str; 2] = ["SequentialQf", "qfilter"];

    /// The filters of Figure 2 measured at every thread count.
    const FIG2_CONCURRENT: [&str; 9] = [
        "SequentialQf+Mutex",
        "qfilter+Mutex",
        "LocallyLockedQf",
        "ExternallyLockedQf",
        "TwoBitQf",
        "LinearProbingQf",
        "AtomicBloomFilter",
        "fastbloom",
        "CountingQf",
    ];

    /// The filters of Figure 3 and the fill levels each must have.
    const FIG3: [(&str, usize); 8] = [
        ("SequentialQf", FIG3_LEVELS),
        ("qfilter", FIG3_LEVELS),
        ("LocallyLockedQf", FIG3_LEVELS),
        ("ExternallyLockedQf", FIG3_LEVELS),
        ("TwoBitQf", FIG3_LEVELS),
        ("LinearProbingQf", FIG3_LINEAR_PROBING_LEVELS),
        ("AtomicBloomFilter", FIG3_LEVELS),
        ("CountingQf", FIG3_LEVELS),
    ];

    /// What a tiny run of `figures` wrote: the rows, the CSV text and each figure's SVG.
    struct TinyRun {
        rows: Vec<Row>,
        csv: String,
        svgs: Vec<String>,
    }

    /// Runs `figures` (comma-separated) at `2^10` slots with two rounds (so the figures in
    /// rounds take medians over rounds of every line) on 1 and 2 threads, into a temporary
    /// directory it removes again.
    fn tiny_run(figures: &str) -> TinyRun {
        let dir = std::env::temp_dir().join(format!(
            "conqf-figures-{}-{}",
            figures.replace(',', "-"),
            std::process::id()
        ));
        let path = dir.join("figures.csv");
        let plots = dir.join("plots");
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let mut opts = options(&format!(
            "--scale quick --threads 1,2 --only {figures} --csv {} --plots {}",
            path.display(),
            plots.display()
        ));
        opts.quotient_bits = 10;
        opts.repetitions = 2;
        let rows = run(&opts).expect("the run succeeds");
        let csv = std::fs::read_to_string(&path).expect("the CSV file exists");
        let svgs = figures
            .split(',')
            .map(|name| {
                let file = plots.join(format!("{name}.svg"));
                std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}.svg: {e}"))
            })
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        TinyRun { rows, csv, svgs }
    }

    #[test]
    fn a_tiny_run_writes_a_row_for_every_filter_and_figure() {
        let TinyRun {
            rows,
            csv: text,
            svgs,
        } = tiny_run("fig2,fig3,fig4,cuckoo");

        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER));
        let parsed: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
        assert_eq!(parsed.len(), rows.len());
        for cells in &parsed {
            assert_eq!(cells.len(), 9, "{cells:?}");
            let ops: f64 = cells[5].parse().expect("ops_per_sec is a number");
            assert!(ops > 0.0 && ops.is_finite(), "{cells:?}");
            if !cells[7].is_empty() {
                let fpr: f64 = cells[7].parse().expect("fpr is a number");
                assert!((0.0..=1.0).contains(&fpr), "{cells:?}");
            }
            if !cells[8].is_empty() {
                let bits: f64 = cells[8].parse().expect("bits_per_item is a number");
                assert!(bits > 0.0 && bits.is_finite(), "{cells:?}");
            }
        }
        let has = |figure: &str, filter: &str, threads: &str, phase: &str| {
            parsed
                .iter()
                .any(|c| c[0] == figure && c[1] == filter && c[2] == threads && c[4] == phase)
        };
        for phase in FIG2_PHASES {
            for filter in FIG2_SEQUENTIAL {
                assert!(has("fig2", filter, "1", phase), "fig2 {filter} {phase}");
                assert!(!has("fig2", filter, "2", phase), "fig2 {filter} {phase}");
            }
            for filter in FIG2_CONCURRENT {
                for threads in ["1", "2"] {
                    assert!(
                        has("fig2", filter, threads, phase),
                        "fig2 {filter} {threads}"
                    );
                }
            }
        }
        for threads in ["1", "2"] {
            for phase in LIMIT_PHASES {
                assert!(
                    has("fig2", "limit", threads, phase),
                    "fig2 limit {threads} {phase}"
                );
            }
        }
        for (filter, levels) in FIG3 {
            for phase in FIG2_PHASES {
                let fills: Vec<&str> = parsed
                    .iter()
                    .filter(|c| c[0] == "fig3" && c[1] == filter && c[4] == phase)
                    .map(|c| c[3])
                    .collect();
                let expected: Vec<String> = (1..=levels)
                    .map(|level| format!("{}", level as f64 / 10.0))
                    .collect();
                assert_eq!(fills, expected, "fig3 {filter} {phase}");
            }
        }
        // Every figure measures both limits (each row's throughput is positive, checked above):
        // Figure 3 on one thread; the cuckoo mix at every thread count and its single-thread
        // lookups on one thread, under their own phases; Figure 4 at the most threads.
        for phase in LIMIT_PHASES {
            assert!(has("fig3", "limit", "1", phase) && !has("fig3", "limit", "2", phase));
            assert!(has("cuckoo", "limit", "1", phase) && has("cuckoo", "limit", "2", phase));
            assert!(has("fig4", "limit", "2", phase) && !has("fig4", "limit", "1", phase));
        }
        for phase in CUCKOO_LOOKUP_LIMIT_PHASES {
            assert!(has("cuckoo", "limit", "1", phase) && !has("cuckoo", "limit", "2", phase));
        }
        // No two rows share figure, filter, threads, fill and phase: a CSV reader can tell every
        // row, the two cuckoo limits included, apart.
        let keys: std::collections::HashSet<&[&str]> =
            parsed.iter().map(|cells| &cells[..5]).collect();
        assert_eq!(keys.len(), parsed.len());
        for filter in MIX_FILTERS {
            for threads in ["1", "2"] {
                assert!(
                    has("cuckoo", filter, threads, CUCKOO_PHASE),
                    "cuckoo {filter} {threads}"
                );
            }
        }
        // Single-thread lookups: every filter, both phases, one thread; an FPR with the
        // negative ones.
        for filter in LOOKUP_FILTERS {
            for phase in CUCKOO_LOOKUP_PHASES {
                let row = rows
                    .iter()
                    .find(|r| r.figure == "cuckoo" && r.filter == filter && r.phase == phase)
                    .unwrap_or_else(|| panic!("cuckoo lookup {filter} {phase}"));
                assert_eq!(row.threads, 1);
                assert_eq!(
                    row.fpr.is_some(),
                    phase == "lookup_negative",
                    "{filter} {phase}"
                );
            }
        }
        // Figure 2's rounds: the baseline's speedup over itself is exactly 1, and every other
        // filter row is a finite speedup over it (the baseline is recorded before them).
        for row in rows
            .iter()
            .filter(|row| row.figure == "fig2" && row.filter != "limit")
        {
            let speedup = row
                .speedup
                .unwrap_or_else(|| panic!("{} {}", row.filter, row.phase));
            if row.filter == "SequentialQf" {
                assert_eq!(speedup, 1.0);
            } else {
                assert!(speedup > 0.0 && speedup.is_finite(), "{}", row.filter);
            }
        }
        // The cuckoo baselines' speedups over themselves are exactly 1, at every thread count.
        for row in rows.iter().filter(|row| row.figure == "cuckoo") {
            assert_eq!(row.fill, Some(MIX_LOAD));
            if (row.filter == CUCKOO_BASELINE && row.phase == CUCKOO_PHASE)
                || (row.filter == LOOKUP_BASELINE && CUCKOO_LOOKUP_PHASES.contains(&row.phase))
            {
                assert_eq!(row.speedup, Some(1.0));
            }
        }
        // Figure 4: every filter and peer, every segment, every phase, at the most threads
        // given; an FPR with every unsuccessful-lookup row.
        for filter in FIG4_FILTERS.into_iter().chain(FIG4_PEERS) {
            for phase in FIG2_PHASES {
                let segments: Vec<&str> = parsed
                    .iter()
                    .filter(|c| c[0] == "fig4" && c[1] == filter && c[4] == phase)
                    .map(|c| {
                        assert_eq!(c[2], "2", "{c:?}");
                        assert_eq!(c[7].is_empty(), phase != "lookup_negative", "{c:?}");
                        c[3]
                    })
                    .collect();
                let expected: Vec<String> = (1..=10).map(|s| format!("{s}")).collect();
                assert_eq!(segments, expected, "fig4 {filter} {phase}");
            }
        }
        // Every row is of a filter the test knows: nothing is claimed that is not checked.
        for cells in &parsed {
            let known = match cells[0] {
                "fig2" => {
                    FIG2_SEQUENTIAL.contains(&cells[1])
                        || FIG2_CONCURRENT.contains(&cells[1])
                        || cells[1] == "limit"
                }
                "fig3" => FIG3.iter().any(|&(f, _)| f == cells[1]) || cells[1] == "limit",
                "cuckoo" => {
                    MIX_FILTERS.contains(&cells[1])
                        || LOOKUP_FILTERS.contains(&cells[1])
                        || cells[1] == "limit"
                }
                "fig4" => {
                    FIG4_FILTERS.contains(&cells[1])
                        || FIG4_PEERS.contains(&cells[1])
                        || cells[1] == "limit"
                }
                _ => false,
            };
            assert!(known, "{cells:?}");
        }
        // The baseline's speedup over itself is exactly 1.
        let baseline = rows
            .iter()
            .find(|row| row.figure == "fig2" && row.filter == "SequentialQf")
            .expect("a baseline row");
        assert_eq!(baseline.speedup, Some(1.0));
        // One SVG per figure, each naming every filter of its figure in the legend (the ones
        // measured on one thread only as such).
        let fig2_labels: Vec<String> = FIG2_SEQUENTIAL
            .iter()
            .map(|filter| format!("{filter} (1 thread)"))
            .chain(FIG2_CONCURRENT.iter().map(|filter| filter.to_string()))
            .collect();
        let fig3_labels: Vec<String> = FIG3.iter().map(|(filter, _)| filter.to_string()).collect();
        let fig4_labels: Vec<String> = FIG4_FILTERS
            .iter()
            .chain(&FIG4_PEERS)
            .map(|f| f.to_string())
            .collect();
        let [fig2_svg, fig3_svg, fig4_svg, cuckoo_svg] = &svgs[..] else {
            panic!("four plots, one per figure");
        };
        for (svg, labels) in
            [fig2_svg, fig3_svg, fig4_svg]
                .into_iter()
                .zip([fig2_labels, fig3_labels, fig4_labels])
        {
            assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
            assert!(svg.trim_end().ends_with("</svg>"));
            for text in [
                "million operations per second",
                "inserts",
                "successful lookups",
            ] {
                assert!(svg.contains(&format!(">\n{text}\n</text>")), "{text}");
            }
            for label in labels {
                assert!(
                    svg.contains(&format!(">\n{label}\n</text>")),
                    "legend: {label}"
                );
            }
        }
        check_cuckoo_svg(cuckoo_svg);
    }

    /// The cuckoo plot (checked by `a_tiny_run_writes_a_row_for_every_filter_and_figure`): its
    /// one panel and every filter of the mix in the legend.
    fn check_cuckoo_svg(svg: &str) {
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for text in [
            "million operations per second",
            "90% find, 5% insert, 5% remove",
        ]
        .into_iter()
        .chain(MIX_FILTERS)
        {
            assert!(svg.contains(&format!(">\n{text}\n</text>")), "{text}");
        }
    }

    #[test]
    fn a_tiny_bulk_run_writes_every_line_at_every_fill() {
        let TinyRun {
            rows,
            csv: text,
            svgs,
        } = tiny_run("bulk");
        let svg = &svgs[0];

        assert_eq!(text.lines().count(), rows.len() + 1);
        for filter in bulk::BUILDERS.iter().chain(&bulk::LOOKUPS) {
            let fills: Vec<f64> = rows
                .iter()
                .filter(|row| row.figure == "bulk" && row.filter == *filter)
                .map(|row| row.fill.expect("a fill") * 100.0)
                .collect();
            let expected: Vec<f64> = common::bulk::BULK_FILLS.iter().map(|&p| p as f64).collect();
            assert_eq!(fills.len(), expected.len(), "{filter}");
            for (got, want) in fills.iter().zip(&expected) {
                assert!((got - want).abs() < 1e-9, "{filter}: {fills:?}");
            }
            assert!(svg.contains(filter), "the legend names {filter}");
        }
        for row in &rows {
            assert!(
                row.ops_per_sec > 0.0 && row.ops_per_sec.is_finite(),
                "{row:?}"
            );
            if row.filter == "limit" {
                continue;
            }
            let one_thread = row.filter == bulk::BUILDERS[0] || row.filter == bulk::LOOKUPS[0];
            let expected_threads = if one_thread { 1 } else { 2 };
            assert_eq!(row.threads, expected_threads, "{row:?}");
            if one_thread {
                assert_eq!(
                    row.speedup,
                    Some(1.0),
                    "the baselines' speedup over themselves"
                );
            }
        }
        // Both limits on one thread (for contains) and on the most (for contains_batch).
        for threads in [1, 2] {
            for phase in LIMIT_PHASES {
                assert!(
                    rows.iter()
                        .any(|r| r.filter == "limit" && r.threads == threads && r.phase == phase),
                    "bulk limit {threads} {phase}"
                );
            }
        }
    }

    #[test]
    fn a_tiny_removes_run_writes_every_line_and_ends_empty() {
        // `run` fails if any round left a fingerprint behind or found more or less than the
        // fill stored.
        let TinyRun {
            rows,
            csv: text,
            svgs,
        } = tiny_run("removes");
        let svg = &svgs[0];

        assert_eq!(text.lines().count(), rows.len() + 1);
        let threads_of = |filter: &str| -> Vec<usize> {
            rows.iter()
                .filter(|row| row.filter == filter && row.phase == removes::REMOVE_PHASE)
                .map(|row| row.threads)
                .collect()
        };
        for filter in removes::REMOVE_SEQUENTIAL {
            assert_eq!(threads_of(filter), vec![1], "{filter}");
            assert!(svg.contains(filter), "the legend names {filter}");
        }
        for filter in removes::REMOVE_CONCURRENT {
            assert_eq!(threads_of(filter), vec![1, 2], "{filter}");
            assert!(svg.contains(filter), "the legend names {filter}");
        }
        for row in &rows {
            assert_eq!(row.figure, "removes");
            assert!(
                row.ops_per_sec > 0.0 && row.ops_per_sec.is_finite(),
                "{row:?}"
            );
        }
        assert_eq!(rows[0].filter, removes::REMOVE_SEQUENTIAL[0]);
        assert_eq!(
            rows[0].speedup,
            Some(1.0),
            "the baseline's speedup over itself"
        );
        for threads in [1, 2] {
            for phase in LIMIT_PHASES {
                assert!(
                    rows.iter()
                        .any(|r| r.filter == "limit" && r.threads == threads && r.phase == phase),
                    "removes limit {threads} {phase}"
                );
            }
        }
    }

    #[test]
    fn a_removal_run_that_keeps_a_fingerprint_or_finds_too_much_or_too_little_is_a_problem() {
        use common::removes::RemoveRun;
        // Ten keys, two of them sharing a stored fingerprint with another key: eight stored.
        let clean = RemoveRun {
            removals: 10,
            stored: 8,
            not_found: 2,
            ..RemoveRun::default()
        };
        assert_eq!(clean.problem(), None);
        let kept = RemoveRun { left: 1, ..clean };
        assert!(kept
            .problem()
            .is_some_and(|p| p.contains("fingerprints left after removing every inserted key: 1")));
        for not_found in [1, 3] {
            let miscounted = RemoveRun { not_found, ..clean };
            let found = 10 - not_found;
            assert!(
                miscounted
                    .problem()
                    .is_some_and(|p| p.contains(&format!("{found} removals found"))),
                "{not_found}"
            );
        }
        // A refused insert stored nothing: its key's removal finds nothing, or takes the copy
        // of another key, whose removal then finds nothing.
        let refused = RemoveRun {
            failed_inserts: 1,
            stored: 7,
            not_found: 3,
            ..clean
        };
        assert_eq!(refused.problem(), None);
    }

    #[test]
    fn the_command_line_exits_with_2_on_bad_options_and_help_names_everything() {
        for bad in ["--frobnicate", "--threads 0", "stray", "--only fig9"] {
            assert_eq!(run_cli(args(bad), None), 2, "{bad}");
        }
        assert_eq!(run_cli(Vec::new(), Some("huge".into())), 2);
        assert_eq!(run_cli(args("--help"), None), 0);
        assert_eq!(run_cli(args("--scale quick -h"), None), 0);
        for option in VALUE_OPTIONS.into_iter().chain(["-h, --help"]) {
            assert!(
                USAGE.contains(&format!("\n  {option} ")),
                "--help names {option}"
            );
        }
        for figure in Figure::ALL {
            let name = figure.name();
            assert!(
                USAGE.contains(&format!("\n  {name} ")),
                "--help names {name}"
            );
        }
        for filter in FIG2_SEQUENTIAL.iter().chain(&FIG2_CONCURRENT) {
            let filter = filter.trim_end_matches("+Mutex");
            assert!(USAGE.contains(filter), "--help names fig2's {filter}");
        }
    }

    #[test]
    fn integer_labels_name_only_the_multiples() {
        assert_eq!(integer_label(2.0, 1.0), "2");
        assert_eq!(integer_label(1.5, 1.0), "");
        assert_eq!(integer_label(30.000_000_1, 10.0), "30");
        assert_eq!(integer_label(35.0, 10.0), "");
    }
}
