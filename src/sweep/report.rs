//! The HTML report of a sweep: per experiment, run time and agreement
//! against the varied setting (one line per method and device, log₂ x axes
//! like the thesis' figures) and the table of measured runs.

use super::{Record, SweepResult, Variable};
use crate::error::Result;
use crate::report::page::{self, escape};
use crate::report::plot::{self, LineChart, Scale, Series};
use std::fmt::Write as _;

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

pub fn to_html(result: &SweepResult) -> Result<String> {
    let c = &result.config;
    let m = &result.machine;
    let mut body = String::new();
    if !c.description.is_empty() {
        let _ = write!(body, "<p>{}</p>", escape(&c.description));
    }
    let _ = write!(
        body,
        "<p>Methods: {}. Reference for agreement: {}. {} timed run(s) per point, median shown. \
         Machine: {} {}, {} host threads, mapfilter {}.</p>",
        escape(&c.methods.join(", ")),
        escape(&c.reference),
        c.repeats,
        escape(&m.os),
        escape(&m.arch),
        m.host_threads,
        escape(&m.mapfilter_version)
    );
    if !result.failures.is_empty() {
        body.push_str("<h2>Failed runs</h2>");
        let rows: Vec<Vec<String>> = result
            .failures
            .iter()
            .map(|f| {
                vec![
                    escape(&f.experiment),
                    format!("{}={}", f.variable.name(), f.value),
                    escape(&f.method),
                    escape(&f.error),
                ]
            })
            .collect();
        body.push_str(&page::table(
            &["experiment", "point", "method", "error"],
            &rows,
        ));
    }
    for e in &c.experiments {
        let records: Vec<&Record> = result
            .records
            .iter()
            .filter(|r| r.experiment == e.name)
            .collect();
        let _ = write!(
            body,
            "<h2 id=\"{}\">{}</h2>",
            escape(&e.name),
            escape(e.heading())
        );
        if let Some(first) = records.first() {
            let _ = write!(body, "<p>{}</p>", escape(&fixed_settings(first, &records)));
        }
        let x_scale = if e.vary.log2_axis() {
            Scale::Log2
        } else {
            Scale::Linear
        };
        body.push_str("<div class=\"plots\">");
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
        body.push_str(&page::inline_svg(&plot::line_chart(&time)?));
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
            body.push_str(&page::inline_svg(&plot::line_chart(&chart)?));
        }
        body.push_str("</div>");
        let rows: Vec<Vec<String>> = records
            .iter()
            .map(|r| {
                vec![
                    r.value.to_string(),
                    escape(&r.method),
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
        body.push_str(&page::table(
            &[
                e.vary.label(),
                "method",
                "seconds",
                "min s",
                "compute s",
                "Mpixel/s",
                "agreement %",
                "kappa",
            ],
            &rows,
        ));
    }
    Ok(page::page(&c.title, &body))
}
