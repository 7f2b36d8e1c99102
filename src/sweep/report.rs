//! The HTML report of a sweep: per experiment, run time and agreement
//! against the varied setting (one line per method and device, log₂ x axes
//! like the thesis' figures) and the table of measured runs; with
//! `--reference`, each output's overall accuracy and class areas against
//! the reference sample, with their 95 % intervals as error bars.

use super::{Record, ReferenceInfo, SweepResult, Variable};
use crate::accuracy::Z95;
use crate::error::Result;
use crate::report::accuracy::{class_label, percent_ci};
use crate::report::numbers::fixed;
use crate::report::page;
use crate::report::plot::{self, LineChart, Mark, Scale, Series};
use serde::Serialize;

/// One line per method, points in the order of the experiment's values.
fn series(records: &[&Record], y: impl Fn(&Record) -> Option<f64>) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in records {
        let Some(v) = y(r) else { continue };
        let point = (r.value as f64, v);
        match out.iter_mut().find(|s| s.label == r.method) {
            Some(s) => s.points.push(point),
            None => out.push(Series {
                label: r.method.clone(),
                points: vec![point],
                ..Default::default()
            }),
        }
    }
    out
}

/// The settings an experiment keeps fixed, in words (the varied one left
/// out); on real rasters their names, sizes and classes.
fn fixed_settings(r: &Record, all: &[&Record]) -> String {
    let mut parts = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    for x in all {
        if let Some(i) = &x.input {
            let about = format!("{i} ({}×{}, {} classes)", x.width, x.height, x.classes);
            if !inputs.contains(&about) {
                inputs.push(about);
            }
        }
    }
    if !inputs.is_empty() {
        parts.push(format!("input {}", inputs.join(", ")));
    } else if r.variable != Variable::Size {
        parts.push(format!("image {}×{}", r.width, r.height));
    }
    if r.variable != Variable::KernelSize {
        parts.push(format!(
            "kernel {} ({}×{})",
            r.kernel, r.kernel_side, r.kernel_side
        ));
    } else {
        parts.push(format!(
            "kernel family {}",
            r.kernel.split(':').next().unwrap_or("")
        ));
    }
    if inputs.is_empty() {
        if r.variable != Variable::Classes {
            parts.push(format!("{} classes", r.classes));
        }
        parts.push(format!("{} pattern", r.pattern));
    }
    if r.variable != Variable::Tile {
        parts.push(format!("tile {}", r.tile));
    }
    if let (Some(rank), false) = (r.rank, r.variable == Variable::Rank) {
        parts.push(format!("rank {rank}"));
    }
    if let (Some(terms), false) = (r.terms, r.variable == Variable::Terms) {
        parts.push(format!("{terms} DCT terms"));
    }
    format!("Fixed: {}.", parts.join(", "))
}

/// The x value the accuracy plots use for `r`: σ for a Gaussian family
/// kernel sized by the sweep (σ = (N−1)/6), else the varied setting.
fn accuracy_x(r: &Record) -> f64 {
    if gaussian_sides(r) {
        (r.kernel_side as f64 - 1.0) / 6.0
    } else {
        r.value as f64
    }
}

fn gaussian_sides(r: &Record) -> bool {
    r.variable == Variable::KernelSize && r.kernel.starts_with("gaussian")
}

/// Classes drawn in a class-area plot (its legend must leave room for data).
const PLOTTED_CLASSES: usize = 6;

/// An experiment's outputs against the reference sample.
#[derive(Serialize)]
struct AccuracyView {
    plots: Vec<String>,
    x_label: String,
    /// x, method, overall accuracy ± 95 %, quantity and allocation disagreement.
    overall: Vec<[String; 5]>,
    /// x, method, class, mapped area, estimated area ± 95 %, user's, producer's.
    areas: Vec<[String; 7]>,
}

fn accuracy_view(records: &[&Record], info: &ReferenceInfo) -> Result<Option<AccuracyView>> {
    let scored: Vec<(&Record, &crate::accuracy::Assessment)> = records
        .iter()
        .filter_map(|r| Some((*r, r.accuracy.as_ref()?)))
        .collect();
    let Some((first, _)) = scored.first() else {
        return Ok(None);
    };
    let x_label = if gaussian_sides(first) {
        "Gaussian σ (pixels)".to_string()
    } else {
        first.variable.label().to_string()
    };
    let x_text = |r: &Record| {
        if gaussian_sides(r) {
            format!("σ {} (N {})", fixed(accuracy_x(r), 2), r.kernel_side)
        } else {
            r.value.to_string()
        }
    };
    // Overall accuracy: one line per method, its 95 % interval as bars.
    let mut overall: Vec<Series> = Vec::new();
    for (r, a) in &scored {
        let o = a.overall;
        let at = |v: f64| 100.0 * v;
        let point = (accuracy_x(r), at(o.value));
        // An interval past 100 % (the normal approximation) means nothing.
        let bar = (
            at(o.value - Z95 * o.se).max(0.0),
            at(o.value + Z95 * o.se).min(100.0),
        );
        match overall.iter_mut().find(|s| s.label == r.method) {
            Some(s) => {
                s.points.push(point);
                s.intervals.push(bar);
            }
            None => overall.push(Series {
                label: r.method.clone(),
                points: vec![point],
                intervals: vec![bar],
                ..Default::default()
            }),
        }
    }
    let chart = |title: String, y_label: String, series: Vec<Series>| LineChart {
        title,
        x_label: x_label.clone(),
        y_label,
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        series,
        y_range: None,
        legend_at_bottom: true,
    };
    let mut plots = vec![page::svg_element(&plot::line_chart(&chart(
        "Overall accuracy of each output against the reference sample".into(),
        "overall accuracy (%, 95 % interval)".into(),
        overall,
    ))?)];
    // Class areas estimated from the reference labels: one plot per method.
    let unit = &info.unit;
    let mut methods: Vec<&str> = scored.iter().map(|(r, _)| r.method.as_str()).collect();
    methods.dedup();
    // A legend of 20 classes would cover the plot: the largest classes
    // only (by mapped area at the first setting), the table has them all.
    let mut largest: Vec<(u16, f64)> = scored[0]
        .1
        .classes
        .iter()
        .map(|c| (c.code, c.map_proportion))
        .collect();
    let all_classes = largest.len();
    largest.sort_by(|a, b| b.1.total_cmp(&a.1));
    largest.truncate(PLOTTED_CLASSES);
    let shown = |code: u16| largest.iter().any(|c| c.0 == code);
    let what = if all_classes > PLOTTED_CLASSES {
        format!("Areas of the {PLOTTED_CLASSES} largest of {all_classes} classes")
    } else {
        "Class areas".to_string()
    };
    for method in &methods {
        // Per class: the estimate from the reference labels as dots with
        // their 95 % bars, and the area the output maps as a thin line of
        // the same colour, so the σ whose mapped areas fall inside the
        // intervals shows.
        let mut by_class: Vec<Series> = Vec::new();
        for (r, a) in scored.iter().filter(|(r, _)| r.method == *method) {
            for c in a.classes.iter().filter(|c| shown(c.code)) {
                let label = class_label(&info.names, c.code);
                let e = c.area.scaled(1.0 / unit.per);
                let x = accuracy_x(r);
                let bar = ((e.value - Z95 * e.se).max(0.0), e.value + Z95 * e.se);
                let mapped = c.map_proportion * a.total_area / unit.per;
                let [red, green, blue, _] = info.palette.color(c.code);
                for (mark, y) in [(Mark::Points, e.value), (Mark::ThinLine, mapped)] {
                    let found = by_class
                        .iter_mut()
                        .find(|s| s.label == label && s.mark == mark);
                    match found {
                        Some(s) => {
                            s.points.push((x, y));
                            if mark == Mark::Points {
                                s.intervals.push(bar);
                            }
                        }
                        None => by_class.push(Series {
                            label: label.clone(),
                            points: vec![(x, y)],
                            intervals: if mark == Mark::Points {
                                vec![bar]
                            } else {
                                Vec::new()
                            },
                            color: Some((red, green, blue)),
                            mark,
                            no_legend: mark == Mark::ThinLine,
                        }),
                    }
                }
            }
        }
        let mut areas = chart(
            format!("{what} from the reference labels, {method}"),
            format!("area ({}; dots: estimate ± 95 %, lines: mapped)", unit.name),
            by_class,
        );
        areas.legend_at_bottom = false;
        plots.push(page::svg_element(&plot::line_chart(&areas)?));
    }
    let overall = scored
        .iter()
        .map(|(r, a)| {
            let (q, al) = a.disagreement.map_or(("–".into(), "–".into()), |d| {
                (
                    format!("{} %", fixed(100.0 * d.quantity, 2)),
                    format!("{} %", fixed(100.0 * d.allocation, 2)),
                )
            });
            [
                x_text(r),
                r.method.clone(),
                percent_ci(Some(&a.overall)),
                q,
                al,
            ]
        })
        .collect();
    let areas = scored
        .iter()
        .flat_map(|(r, a)| {
            a.classes.iter().map(move |c| {
                [
                    x_text(r),
                    r.method.clone(),
                    class_label(&info.names, c.code),
                    unit.show(c.map_proportion * a.total_area),
                    format!(
                        "{} ± {}",
                        unit.show(c.area.value),
                        unit.show(Z95 * c.area.se)
                    ),
                    percent_ci(c.users.as_ref()),
                    percent_ci(c.producers.as_ref()),
                ]
            })
        })
        .collect();
    Ok(Some(AccuracyView {
        plots,
        x_label,
        overall,
        areas,
    }))
}

/// What `templates/sweep.html` shows: text and figures, formatted.
#[derive(Serialize)]
struct View<'a> {
    description: &'a str,
    methods: String,
    agreement_reference: &'a str,
    repeats: usize,
    machine: &'a crate::sweep::Machine,
    failures: Vec<[String; 4]>,
    experiments: Vec<ExperimentView<'a>>,
    reference: Option<&'a ReferenceInfo>,
}

#[derive(Serialize)]
struct ExperimentView<'a> {
    id: &'a str,
    heading: &'a str,
    fixed: Option<String>,
    /// Inline SVG plots.
    plots: Vec<String>,
    vary: &'static str,
    rows: Vec<[String; 8]>,
    accuracy: Option<AccuracyView>,
}

pub fn to_html(result: &SweepResult) -> Result<String> {
    let c = &result.config;
    let mut experiments = Vec::new();
    for e in &c.experiments {
        let records: Vec<&Record> = result
            .records
            .iter()
            .filter(|r| r.experiment == e.name)
            .collect();
        let x_scale = if e.vary.log2_axis() {
            Scale::Log2
        } else {
            Scale::Linear
        };
        let time = LineChart {
            title: "Run time".into(),
            x_label: e.vary.label().into(),
            y_label: "seconds (median)".into(),
            x_scale,
            y_scale: if e.log_time {
                Scale::Log10
            } else {
                Scale::Linear
            },
            series: series(&records, |r| Some(r.seconds)),
            y_range: None,
            legend_at_bottom: false,
        };
        let mut plots = vec![page::svg_element(&plot::line_chart(&time)?)];
        let agreement = series(&records, |r| r.agreement_percent);
        if !agreement.is_empty() {
            // Up to 100 %, and at least the last percent below it.
            let lo = agreement
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(99.0f64, f64::min);
            let pad = (100.0 - lo) * 0.05;
            let chart = LineChart {
                title: format!("Agreement with {}", c.reference),
                x_label: e.vary.label().into(),
                y_label: "agreement (%)".into(),
                x_scale,
                y_scale: Scale::Linear,
                series: agreement,
                y_range: Some((lo - pad, 100.0 + pad)),
                legend_at_bottom: true,
            };
            plots.push(page::svg_element(&plot::line_chart(&chart)?));
        }
        let rows = records
            .iter()
            .map(|r| {
                [
                    r.value.to_string(),
                    r.method.clone(),
                    format!("{:.4}", r.seconds),
                    format!("{:.4}", r.seconds_min),
                    format!("{:.4}", r.compute_seconds),
                    format!("{:.2}", r.mpixels_per_second),
                    r.agreement_percent
                        .map_or("–".into(), |a| format!("{a:.4}")),
                    r.kappa.map_or("–".into(), |k| format!("{k:.5}")),
                ]
            })
            .collect();
        let accuracy = match &result.reference {
            Some(info) => accuracy_view(&records, info)?,
            None => None,
        };
        experiments.push(ExperimentView {
            id: &e.name,
            heading: e.heading(),
            fixed: records.first().map(|first| fixed_settings(first, &records)),
            plots,
            vary: e.vary.label(),
            rows,
            accuracy,
        });
    }
    let view = View {
        description: &c.description,
        methods: c.methods.join(", "),
        agreement_reference: &c.reference,
        repeats: c.repeats,
        machine: &result.machine,
        failures: result
            .failures
            .iter()
            .map(|f| {
                [
                    f.experiment.clone(),
                    format!("{}={}", f.variable.name(), f.value),
                    f.method.clone(),
                    f.error.clone(),
                ]
            })
            .collect(),
        experiments,
        reference: result.reference.as_ref(),
    };
    page::render("sweep.html", &c.title, view)
}
