//! The HTML report of a sweep: per experiment, run time and agreement
//! against the varied setting (one line per method and device, log₂ x axes
//! like the thesis' figures) and the table of measured runs.

use super::{Record, SweepResult, Variable};
use crate::error::Result;
use crate::report::page;
use crate::report::plot::{self, LineChart, Scale, Series};
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

/// What `templates/sweep.html` shows: text and figures, formatted.
#[derive(Serialize)]
struct View<'a> {
    description: &'a str,
    methods: String,
    reference: &'a str,
    repeats: usize,
    machine: &'a crate::sweep::Machine,
    failures: Vec<[String; 4]>,
    experiments: Vec<ExperimentView<'a>>,
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
        experiments.push(ExperimentView {
            id: &e.name,
            heading: e.heading(),
            fixed: records.first().map(|first| fixed_settings(first, &records)),
            plots,
            vary: e.vary.label(),
            rows,
        });
    }
    let view = View {
        description: &c.description,
        methods: c.methods.join(", "),
        reference: &c.reference,
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
    };
    page::render("sweep.html", &c.title, view)
}
