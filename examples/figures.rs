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
//!   `conqf::Filter`, so each concurrent filter joins with one line in [`fig2`]. The lines are
//!   measured in rounds (every line once per round, in table order and reversed in turn, medians
//!   over the rounds), so the ratios between lines of one run are not skewed by a slow spell of the
//!   machine.
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
//! random-read limit at the same thread count.
//! Keys are hashed before every timed loop (except the cuckoo lookups, which compare hashing
//! too). `--help` lists the options.

#[path = "figures/bulk.rs"]
mod bulk;
#[path = "../benches/common/mod.rs"]
mod common;
#[path = "figures/removes.rs"]
mod removes;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cuckoo_lookup::{
    LookupFilter, LookupRun, LookupWorkload, LOOKUP_BASELINE, LOOKUP_FILTERS,
    LOOKUP_FINGERPRINT_BITS,
};
use common::cuckoo_mix::{run_mix_named, MixRun, MixWorkload, MIX_FILTERS, MIX_LOAD};
use common::fig4::{
    fig4_filter, fig4_peer, fig4_run, Fig4Keys, Fig4Segment, Fig4Size, FIG4_FILTERS, FIG4_FPR,
    FIG4_PEERS,
};
use common::{
    fig2_concurrent, fig2_sequential, items_at, key_hashes, median, parallel,
    parallel_random_reads, per_second, qfilter_like, table_count_hits, table_insert_all, Direct,
    FastBloom, Fig2Run, Locked, ReadArray, Scale, SeqTable, FIG2_FILL, REMAINDER_BITS,
};
use conqf::{
    AtomicBloomFilter, CountingQf, Error, ExternallyLockedQf, Filter, LinearProbingQf,
    LocallyLockedQf, LockFreeCuckooFilter, SequentialQf, TwoBitQf,
};

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
a share of the random-read limit at the same thread count. Progress goes to stderr.
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

/// Shared state of the Figure 2 experiment.
///
/// The lines are measured in rounds: each round runs every line once, in table order, and each
/// row holds the median of its line's rounds. A slow spell of a shared machine then touches every
/// line alike instead of the few measured during it, so the ratios between lines of one run
/// (the speedups, and the issue targets in the README) compare like with like.
struct Fig2<'a> {
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
    /// ones ([`round_order`]), then records each line's median as three rows; the first line is
    /// the speedup baseline.
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
fn fig2(options: &Options, report: &mut Report) -> PlotFn {
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

/// The phase name of the cuckoo figure's rows.
const CUCKOO_PHASE: &str = "mix_90_5_5";

/// The filter the cuckoo figure's speedups are over.
const CUCKOO_BASELINE: &str = "coarse (one RwLock)";

/// Paper 001 §3.1: 90% finds, 5% inserts, 5% removes at load 0.4 against threads, on a table of
/// `2^q` entries with as many operations per run. Returns how to plot the figure.
fn cuckoo(options: &Options, report: &mut Report) -> PlotFn {
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
fn cuckoo_table_bytes(bucket_bits: u32, fingerprint_bits: u32) -> usize {
    LockFreeCuckooFilter::with_bits(bucket_bits, fingerprint_bits).map_or(0, |f| f.memory_bytes())
}

/// The phases of the cuckoo figure's single-thread lookup rows.
const CUCKOO_LOOKUP_PHASES: [&str; 2] = ["lookup_positive", "lookup_negative"];

/// Single-thread lookups at load 0.4 with 8-bit fingerprints: the cuckoo filters beside the
/// `cuckoofilter` crate (issue 7's target: at least 1.2x it). The filters are built once, then
/// timed in turn, each repetition timing every filter once, so slow phases of a noisy machine
/// hit them all; the rows hold the medians. Then the limits on one thread over an array of the
/// lock-free 8-bit table's bytes (rows of [`CUCKOO_LOOKUP_LIMIT_PHASES`]), as many reads as
/// lookups of a phase. Returns those bytes.
fn cuckoo_lookups(options: &Options, bucket_bits: u32, report: &mut Report) -> usize {
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
fn print_cuckoo_lookups(options: &Options, bucket_bits: u32, bytes: usize, rows: &[Row]) {
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
fn print_cuckoo(options: &Options, bucket_bits: u32, bytes: usize, rows: &[Row]) {
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
fn plot_cuckoo(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
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

/// Draws a figure from its rows; returns the SVG file's path.
type PlotFn = fn(&Options, &[Row]) -> Result<PathBuf, String>;

/// The phases of the limit rows: independent random 8-byte reads, a dependent pointer chase.
const LIMIT_PHASES: [&str; 2] = ["random_read", "pointer_chase"];

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
        let random = median(
            (0..repetitions)
                .map(|_| {
                    std::hint::black_box(array.warm());
                    parallel_random_reads(&array, reads, threads)
                })
                .collect(),
        );
        let chase = median(
            (0..repetitions)
                .map(|_| {
                    std::hint::black_box(cycle.warm());
                    let (elapsed, ends) = parallel(threads, |i| {
                        let steps = reads * (i + 1) / threads - reads * i / threads;
                        cycle.chase(i * 7919, steps)
                    });
                    std::hint::black_box(ends);
                    elapsed
                })
                .collect(),
        );
        for (phase, time) in phases.into_iter().zip([random, chase]) {
            rows.push(Row {
                figure,
                filter: "limit".to_string(),
                threads,
                fill,
                phase,
                ops_per_sec: per_second(reads, time),
                speedup: None,
                fpr: None,
                bits_per_item: None,
                failed_inserts: None,
            });
        }
    }
    rows
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

/// Fill degrees of Figure 3: 10%, 20%, ..., 90%.
const FIG3_LEVELS: usize = 9;

/// `LinearProbingQf` is measured up to 70% only: paper 000 §2.2 meant it for fills up to about
/// 70%, and its default load cap refuses inserts past that.
const FIG3_LINEAR_PROBING_LEVELS: usize = 7;

/// Operations timed per fill level and phase: the paper's 100k, or a whole 10% band of a
/// smaller table.
const FIG3_OPERATIONS: usize = 100_000;

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

/// One line of Figure 3: a table type and how many fill levels it is measured to.
struct Fig3Line<'a> {
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
struct Fig3Repetition {
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
fn fig3_repetition<T: SeqTable>(
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
fn fig3_rounds(
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
struct Fig3Keys {
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
fn fig3(options: &Options, report: &mut Report) -> PlotFn {
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

fn print_fig2(options: &Options, items: usize, bytes: usize, notes: &[String], rows: &[Row]) {
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
        for phase in LIMIT_PHASES {
            if let Some(row) = find(rows, "limit", threads, phase) {
                body.push(vec![
                    format!("limit: {}", phase.replace('_', " ")),
                    threads.to_string(),
                    "-".into(),
                    mops(row.ops_per_sec),
                    mops(row.ops_per_sec),
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

/// The Figure 3 tables, one per phase and one of the FPR (lookups also as a share of the
/// random-read limit on one thread over the r = 10 table's `bytes`), then the limits.
fn print_fig3(options: &Options, bytes: usize, operations: usize, rows: &[Row]) {
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

/// One line of a plot: a filter's throughput in million operations per second.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

/// One panel of a plot: a phase.
struct Panel {
    title: &'static str,
    series: Vec<Series>,
}

/// The filters in the order of [`COLORS`], so a filter has the same colour in every plot.
const PLOT_FILTERS: [&str; 9] = [
    "SequentialQf",
    "qfilter",
    "SequentialQf+Mutex",
    "qfilter+Mutex",
    "LocallyLockedQf",
    "ExternallyLockedQf",
    "LinearProbingQf",
    "AtomicBloomFilter",
    "fastbloom",
];

/// Line colours: those of [`PLOT_FILTERS`], then for other filters in the order they appear
/// (Tableau 10, then two darker ones).
const COLORS: [(u8, u8, u8); 12] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 0),
    (100, 60, 0),
];

/// What each panel of a figure shows.
const PHASE_TITLES: [(&str, &str); 3] = [
    ("insert", "inserts"),
    ("lookup_negative", "unsuccessful lookups"),
    ("lookup_positive", "successful lookups"),
];

/// Draws `panels` side by side into an SVG file, one line per filter (a filter measured at a
/// single x, such as a 1-thread baseline, is drawn as a dashed horizontal line across the panel)
/// and one legend for all panels on the right. `x_values` are the x values measured (they set
/// the axis range); plotters places about `x_labels` labels, which `x_label` names (empty for a
/// point that is not a measured value).
fn draw_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    x_values: &[f64],
    x_labels: usize,
    x_label_of: &dyn Fn(f64) -> String,
    panels: &[Panel],
) -> Result<(), String> {
    use plotters::prelude::*;

    let failed = |error: &dyn std::fmt::Display| format!("{}: {error}", path.display());
    let mut names: Vec<&str> = Vec::new();
    for series in panels.iter().flat_map(|panel| &panel.series) {
        if !names.contains(&series.name.as_str()) {
            names.push(&series.name);
        }
    }
    let others: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| !PLOT_FILTERS.contains(name))
        .collect();
    let color = |name: &str| {
        let i = PLOT_FILTERS
            .iter()
            .position(|&n| n == name)
            .unwrap_or_else(|| {
                PLOT_FILTERS.len() + others.iter().position(|&n| n == name).unwrap_or(0)
            });
        let (r, g, b) = COLORS[i % COLORS.len()];
        RGBColor(r, g, b)
    };
    let (lo, hi) = x_values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let (lo, hi) = if lo < hi {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let pad = (hi - lo) * 0.08;
    let x_range = (lo - pad)..(hi + pad);

    let legend_width = 300;
    let panel_width = 420;
    let width = panel_width * panels.len() as u32 + legend_width;
    let root = SVGBackend::new(path, (width, 470)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|e| failed(&e))?;
    let (plots, legend) = root.split_horizontally(width - legend_width);
    for (area, panel) in plots.split_evenly((1, panels.len())).iter().zip(panels) {
        let top = panel
            .series
            .iter()
            .flat_map(|series| series.points.iter().map(|&(_, y)| y))
            .fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(55)
            .build_cartesian_2d(x_range.clone(), 0.0..top)
            .map_err(|e| failed(&e))?;
        chart
            .configure_mesh()
            .x_labels(x_labels)
            .x_desc(x_label)
            .y_desc("million operations per second")
            .x_label_formatter(&|x| x_label_of(*x))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(|e| failed(&e))?;
        for series in &panel.series {
            let style = color(&series.name).stroke_width(2);
            if let [(_, y)] = series.points[..] {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x_range.start, y), (x_range.end, y)],
                        8,
                        5,
                        style,
                    ))
                    .map_err(|e| failed(&e))?;
            } else {
                chart
                    .draw_series(LineSeries::new(series.points.iter().copied(), style))
                    .map_err(|e| failed(&e))?;
                chart
                    .draw_series(
                        series
                            .points
                            .iter()
                            .map(|&point| Circle::new(point, 3, style.filled())),
                    )
                    .map_err(|e| failed(&e))?;
            }
        }
    }
    // The legend: a line sample and the filter's name, dashed for single-point series (which
    // the plots of this runner only have for one thread).
    let single: Vec<&str> = panels
        .iter()
        .flat_map(|panel| &panel.series)
        .filter(|series| series.points.len() == 1)
        .map(|series| series.name.as_str())
        .collect();
    for (i, &name) in names.iter().enumerate() {
        let y = 60 + 24 * i as i32;
        let style = color(name).stroke_width(2);
        if single.contains(&name) {
            for start in [10, 24] {
                legend
                    .draw(&PathElement::new([(start, y), (start + 9, y)], style))
                    .map_err(|e| failed(&e))?;
            }
        } else {
            legend
                .draw(&PathElement::new([(10, y), (34, y)], style))
                .map_err(|e| failed(&e))?;
            legend
                .draw(&Circle::new((22, y), 3, style.filled()))
                .map_err(|e| failed(&e))?;
        }
        let label = if single.contains(&name) {
            format!("{name} (1 thread)")
        } else {
            name.to_string()
        };
        legend
            .draw(&Text::new(
                label,
                (42, y - 7),
                ("sans-serif", 14).into_font(),
            ))
            .map_err(|e| failed(&e))?;
    }
    root.present().map_err(|e| failed(&e))?;
    Ok(())
}

/// An axis label for the multiples of `step`, none for the points between them.
fn integer_label(x: f64, step: f64) -> String {
    let multiple = (x / step).round() * step;
    if (x - multiple).abs() < 1e-6 * step {
        format!("{multiple}")
    } else {
        String::new()
    }
}

/// One panel per phase, one series per filter: throughput in millions against `x` of each row
/// (rows without an `x` are left out).
fn phase_panels(rows: &[Row], x: impl Fn(&Row) -> Option<f64>) -> Vec<Panel> {
    let filters = filters_of(rows);
    PHASE_TITLES
        .iter()
        .map(|&(phase, title)| panel(title, &filters, phase, rows, &x))
        .collect()
}

/// One panel: a line per filter of `filters`, throughput in millions against `x` of each of its
/// rows of `phase` (rows without an `x` are left out).
fn panel(
    title: &'static str,
    filters: &[&str],
    phase: &str,
    rows: &[Row],
    x: impl Fn(&Row) -> Option<f64>,
) -> Panel {
    Panel {
        title,
        series: filters
            .iter()
            .map(|&name| Series {
                name: name.to_string(),
                points: rows
                    .iter()
                    .filter(|row| row.filter == name && row.phase == phase)
                    .filter_map(|row| Some((x(row)?, row.ops_per_sec / 1e6)))
                    .collect(),
            })
            .collect(),
    }
}

/// The Figure 2 plot: throughput per phase against threads, one line per filter; the filters
/// measured on one thread only (the `SequentialQf` baseline, `qfilter`) as dashed lines.
fn plot_fig2(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
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

/// One panel of throughput against threads ([`panel`]).
fn threads_panel(title: &'static str, filters: &[&str], phase: &str, rows: &[Row]) -> Panel {
    panel(title, filters, phase, rows, |row| Some(row.threads as f64))
}

/// [`draw_plot`] against the thread counts of the run, labelled at every integer up to the most
/// threads (plotters picks the label step).
fn draw_against_threads(
    path: &Path,
    title: &str,
    threads: &[usize],
    panels: &[Panel],
) -> Result<(), String> {
    let mut threads = threads.to_vec();
    threads.sort_unstable();
    let ticks: Vec<f64> = threads.iter().map(|&t| t as f64).collect();
    draw_plot(
        path,
        title,
        "threads",
        &ticks,
        threads.last().map_or(2, |&most| most + 1).min(17),
        &|x| integer_label(x, 1.0),
        panels,
    )
}

/// The Figure 3 plot: single-threaded throughput per phase against fill, one line per filter.
fn plot_fig3(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
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

/// Segments of Figure 4 at `scale` (the paper's 50; 10 for a quick run).
fn fig4_segments(scale: Scale) -> usize {
    if scale == Scale::Quick {
        10
    } else {
        50
    }
}

/// Figure 4: the three growing filters and the two peers, segment by segment, with the most
/// threads given.
fn fig4(options: &Options, report: &mut Report) -> PlotFn {
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
fn print_fig4(size: &Fig4Size, threads: usize, rows: &[Row]) {
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
fn plot_fig4(options: &Options, rows: &[Row]) -> Result<PathBuf, String> {
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
            Figure::Fig2 => fig2(options, &mut report),
            Figure::Fig3 => fig3(options, &mut report),
            Figure::Fig4 => fig4(options, &mut report),
            Figure::Cuckoo => cuckoo(options, &mut report),
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
