//! The HTML report of a sweep: per experiment, run time and agreement
//! against the varied setting (one line per method and device, log₂ x axes
//! like the thesis' figures) and the table of measured runs; with
//! `--reference`, each output's overall accuracy and class areas against
//! the reference sample, with their 95 % intervals as error bars.

use super::{Record, ReferenceInfo, SweepResult, Variable};
use mapfilter_core::accuracy::Z95;
use mapfilter_core::error::Result;
use mapfilter_report::accuracy::{class_label, percent_ci};
use mapfilter_report::numbers::fixed;
use mapfilter_report::page;
use mapfilter_report::plot::{self, LineChart, Mark, Scale, Series};
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

/// The outputs scored, with their assessments.
type Scored<'a> = [(&'a Record, &'a mapfilter_core::accuracy::Assessment)];

/// Adds point `(x, y)` with `interval` (if any) to the series `label`
/// drawn as `mark`, made with `make` where it is new.
fn push_point(
    series: &mut Vec<Series>,
    label: &str,
    mark: Mark,
    (x, y): (f64, f64),
    interval: Option<(f64, f64)>,
    make: impl FnOnce() -> Series,
) {
    let at = match series
        .iter()
        .position(|s| s.label == label && s.mark == mark)
    {
        Some(i) => i,
        None => {
            series.push(make());
            series.len() - 1
        }
    };
    series[at].points.push((x, y));
    series[at].intervals.extend(interval);
}

/// Overall accuracy in percent: one line per method, its 95 % interval as
/// bars (clipped to 0-100 %: past it the normal approximation means nothing).
fn overall_series(scored: &Scored) -> Vec<Series> {
    let mut series = Vec::new();
    for (r, a) in scored {
        let o = a.overall;
        let bar = (
            (100.0 * (o.value - Z95 * o.se)).max(0.0),
            (100.0 * (o.value + Z95 * o.se)).min(100.0),
        );
        let point = (accuracy_x(r), 100.0 * o.value);
        push_point(
            &mut series,
            &r.method,
            Mark::LineAndPoints,
            point,
            Some(bar),
            || Series {
                label: r.method.clone(),
                ..Default::default()
            },
        );
    }
    series
}

/// The classes a class-area plot draws: a legend of 20 classes would
/// cover the plot, so the largest (by mapped area at the first setting;
/// the table has them all), and the plot's title for them.
fn plotted_classes(scored: &Scored) -> (Vec<u16>, String) {
    let mut largest: Vec<(u16, f64)> = scored[0]
        .1
        .classes
        .iter()
        .map(|c| (c.code, c.map_proportion))
        .collect();
    let all = largest.len();
    largest.sort_by(|a, b| b.1.total_cmp(&a.1));
    largest.truncate(PLOTTED_CLASSES);
    let what = if all > PLOTTED_CLASSES {
        format!("Areas of the {PLOTTED_CLASSES} largest of {all} classes")
    } else {
        "Class areas".to_string()
    };
    (largest.into_iter().map(|c| c.0).collect(), what)
}

/// Per class of `shown`, for `method`: the estimate from the reference
/// labels as dots with their 95 % bars, and the area each output maps as a
/// thin line of the same colour, so the σ whose mapped areas fall inside
/// the intervals shows.
fn class_area_series(
    scored: &Scored,
    method: &str,
    shown: &[u16],
    info: &ReferenceInfo,
) -> Vec<Series> {
    let unit = &info.unit;
    let mut series = Vec::new();
    for (r, a) in scored.iter().filter(|(r, _)| r.method == method) {
        for c in a.classes.iter().filter(|c| shown.contains(&c.code)) {
            let label = class_label(&info.names, c.code);
            let e = c.area.scaled(1.0 / unit.per);
            let x = accuracy_x(r);
            let bar = ((e.value - Z95 * e.se).max(0.0), e.value + Z95 * e.se);
            let mapped = c.map_proportion * a.total_area / unit.per;
            let [red, green, blue, _] = info.palette.color(c.code);
            for (mark, y, interval) in [
                (Mark::Points, e.value, Some(bar)),
                (Mark::ThinLine, mapped, None),
            ] {
                push_point(&mut series, &label, mark, (x, y), interval, || Series {
                    label: label.clone(),
                    color: Some((red, green, blue)),
                    mark,
                    no_legend: mark == Mark::ThinLine,
                    ..Default::default()
                });
            }
        }
    }
    series
}

/// The tables: per output its overall accuracy and disagreement, and per
/// output and class its areas and accuracies.
#[allow(clippy::type_complexity)]
fn accuracy_rows(
    scored: &Scored,
    info: &ReferenceInfo,
    x_text: &dyn Fn(&Record) -> String,
) -> (Vec<[String; 5]>, Vec<[String; 7]>) {
    let unit = &info.unit;
    let overall = scored
        .iter()
        .map(|(r, a)| {
            let (q, al) = a.disagreement.map_or(("–".into(), "–".into()), |d| {
                (
                    format!("{} %", fixed(100.0 * d.quantity, 2)),
                    format!("{} %", fixed(100.0 * d.allocation, 2)),
                )
            });
            let oa = percent_ci(Some(&a.overall));
            [x_text(r), r.method.clone(), oa, q, al]
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
    (overall, areas)
}

fn accuracy_view(records: &[&Record], info: &ReferenceInfo) -> Result<Option<AccuracyView>> {
    let scored: Vec<(&Record, &mapfilter_core::accuracy::Assessment)> = records
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
    let chart = |title: String, y_label: String, series: Vec<Series>, bottom: bool| {
        plot::line_chart(&LineChart {
            title,
            x_label: x_label.clone(),
            y_label,
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series,
            y_range: None,
            legend_at_bottom: bottom,
        })
        .map(|svg| page::svg_element(&svg))
    };
    let mut plots = vec![chart(
        "Overall accuracy of each output against the reference sample".into(),
        "overall accuracy (%, 95 % interval)".into(),
        overall_series(&scored),
        true,
    )?];
    // Class areas: one plot per method.
    let mut methods: Vec<&str> = scored.iter().map(|(r, _)| r.method.as_str()).collect();
    methods.dedup();
    let (shown, what) = plotted_classes(&scored);
    for method in methods {
        plots.push(chart(
            format!("{what} from the reference labels, {method}"),
            format!(
                "area ({}; dots: estimate ± 95 %, lines: mapped)",
                info.unit.name
            ),
            class_area_series(&scored, method, &shown, info),
            false,
        )?);
    }
    let x_text = |r: &Record| {
        if gaussian_sides(r) {
            format!("σ {} (N {})", fixed(accuracy_x(r), 2), r.kernel_side)
        } else {
            r.value.to_string()
        }
    };
    let (overall, areas) = accuracy_rows(&scored, info, &x_text);
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
