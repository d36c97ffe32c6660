//! The SVG plots of every figure (with `plotters`): a figure's rows become panels of series,
//! one per filter, drawn by [`draw_plot`] against the fill, the segment or the threads.

use super::{filters_of, Row};
use std::path::Path;

/// One line of a plot: a filter's throughput in million operations per second.
pub(super) struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

/// One panel of a plot: a phase.
pub(super) struct Panel {
    title: &'static str,
    series: Vec<Series>,
}

/// The filters in the order of [`COLORS`], so a filter has the same colour in every plot.
pub(super) const PLOT_FILTERS: [&str; 9] = [
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
pub(super) const COLORS: [(u8, u8, u8); 12] = [
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
pub(super) const PHASE_TITLES: [(&str, &str); 3] = [
    ("insert", "inserts"),
    ("lookup_negative", "unsuccessful lookups"),
    ("lookup_positive", "successful lookups"),
];

/// Draws `panels` side by side into an SVG file, one line per filter (a filter measured at a
/// single x, such as a 1-thread baseline, is drawn as a dashed horizontal line across the panel)
/// and one legend for all panels on the right. `x_values` are the x values measured (they set
/// the axis range); plotters places about `x_labels` labels, which `x_label` names (empty for a
/// point that is not a measured value).
pub(super) fn draw_plot(
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
pub(super) fn integer_label(x: f64, step: f64) -> String {
    let multiple = (x / step).round() * step;
    if (x - multiple).abs() < 1e-6 * step {
        format!("{multiple}")
    } else {
        String::new()
    }
}

/// One panel per phase, one series per filter: throughput in millions against `x` of each row
/// (rows without an `x` are left out).
pub(super) fn phase_panels(rows: &[Row], x: impl Fn(&Row) -> Option<f64>) -> Vec<Panel> {
    let filters = filters_of(rows);
    PHASE_TITLES
        .iter()
        .map(|&(phase, title)| panel(title, &filters, phase, rows, &x))
        .collect()
}

/// One panel: a line per filter of `filters`, throughput in millions against `x` of each of its
/// rows of `phase` (rows without an `x` are left out).
pub(super) fn panel(
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

/// One panel of throughput against threads ([`panel`]).
pub(super) fn threads_panel(
    title: &'static str,
    filters: &[&str],
    phase: &str,
    rows: &[Row],
) -> Panel {
    panel(title, filters, phase, rows, |row| Some(row.threads as f64))
}

/// [`draw_plot`] against the thread counts of the run, labelled at every integer up to the most
/// threads (plotters picks the label step).
pub(super) fn draw_against_threads(
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
