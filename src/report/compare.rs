//! The accuracy report of one comparison (`mapfilter compare`, and
//! `mapfilter smooth --report`): headline agreement and kappa, run times and
//! speed-up where two methods ran, quick-look maps, per-class figures, plots
//! and the confusion matrix — as JSON, Markdown and self-contained HTML.

use super::numbers::{AreaUnit, Provenance, fixed};
use super::page::{self, escape};
use super::plot;
use super::quicklook::Palette;
use crate::error::{Error, Result};
use crate::metrics::Summary;
use serde::Serialize;
use std::fmt::Write as _;

/// Largest confusion matrix written out in HTML and Markdown (the JSON has all).
const MAX_MATRIX_CLASSES: usize = 64;

/// What was compared.
#[derive(Clone, Debug, Serialize)]
pub struct Input {
    /// "reference", "candidate", "input", ...
    pub role: String,
    /// Path or description.
    pub source: String,
}

/// Timings of a method against the exact baseline on the same input.
#[derive(Clone, Debug, Serialize)]
pub struct RunComparison {
    pub method: String,
    pub method_seconds: f64,
    pub baseline: String,
    /// `None` when the baseline was not run but reused (`--baseline FILE`).
    pub baseline_seconds: Option<f64>,
    /// `baseline_seconds / method_seconds`; `None` when the method is the
    /// baseline itself or the baseline was not timed.
    pub speedup: Option<f64>,
    /// Free-form settings (kernel, tile size, classes ...).
    pub settings: Vec<(String, String)>,
}

/// A quick-look picture with its caption.
#[derive(Clone, Debug)]
pub struct Map {
    pub caption: String,
    pub png: Vec<u8>,
}

/// A class legend entry.
#[derive(Clone, Debug)]
pub struct LegendEntry {
    pub label: String,
    pub color: String,
}

/// Everything one comparison report shows.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    pub title: String,
    pub inputs: Vec<Input>,
    pub run: Option<RunComparison>,
    pub summary: Summary,
    #[serde(skip)]
    pub maps: Vec<Map>,
    /// Colours of the class maps, by class code.
    #[serde(skip)]
    pub palette: Option<Palette>,
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.3} %", 100.0 * v))
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| fixed(v, digits))
}

impl RunComparison {
    /// `baseline / method` where both ran and differ.
    pub fn speedup_of(method_is_baseline: bool, baseline: Option<f64>, method: f64) -> Option<f64> {
        baseline
            .filter(|_| !method_is_baseline)
            .map(|b| b / method.max(1e-9))
    }

    /// "speed-up 4.00x", or why there is none.
    fn speedup_text(&self, times: &str) -> String {
        match (self.speedup, self.baseline_seconds) {
            (Some(x), _) => format!("speed-up {x:.2}{times}"),
            (None, None) => "baseline reused from a file, not timed: no speed-up".to_string(),
            (None, Some(_)) => "the method is the baseline: no speed-up".to_string(),
        }
    }

    fn baseline_seconds_text(&self) -> String {
        self.baseline_seconds
            .map_or("– (reused)".into(), |b| format!("{b:.3}"))
    }
}

/// "900 m²", or for a geographic raster (whose pixels shrink towards the
/// poles) the mean over the raster and how it was measured.
fn pixel_area_text(s: &Summary) -> String {
    let p = &s.pixel_area;
    let unit = AreaUnit::for_values(&p.unit, [p.area]);
    match &p.note {
        Some(note) => format!("{} {} on average ({note})", unit.show(p.area), unit.name),
        None => format!("{} {}", unit.show(p.area), unit.name),
    }
}

impl CompareReport {
    /// The report as JSON, with its [`Provenance`].
    pub fn to_json(&self) -> Result<String> {
        let fail = |e: serde_json::Error| Error::new(format!("cannot write the JSON report: {e}"));
        let mut value = serde_json::to_value(self).map_err(fail)?;
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "provenance".into(),
                serde_json::to_value(Provenance::now()).map_err(fail)?,
            );
        }
        serde_json::to_string_pretty(&value).map_err(fail)
    }

    /// The unit every area of this report is shown in.
    fn area_unit(&self) -> AreaUnit {
        let s = &self.summary;
        AreaUnit::for_values(
            &s.pixel_area.unit,
            s.classes
                .iter()
                .flat_map(|c| [c.reference_area, c.candidate_area]),
        )
    }

    fn class_label(&self, code: u16) -> String {
        let s = self.summary.classes.iter().find(|c| c.code == code);
        match s.and_then(|c| c.name.as_deref()) {
            Some(name) => format!("{code} {name}"),
            None => code.to_string(),
        }
    }

    /// One-paragraph headline, plain text (printed by the CLI too).
    pub fn headline(&self) -> String {
        let s = &self.summary;
        let mut text = format!(
            "agreement {} of {} valid pixels ({} differ), kappa {}, nodata mismatches {} (reference only {}, candidate only {})",
            s.agreement_percent
                .map_or("–".into(), |a| format!("{a:.4} %")),
            s.valid_pixels,
            s.differing_pixels,
            num(s.kappa, 5),
            s.nodata_mismatches(),
            s.nodata.reference_only,
            s.nodata.candidate_only
        );
        if let Some(r) = &self.run {
            let baseline = match r.baseline_seconds {
                Some(b) => format!("{} {b:.3} s", r.baseline),
                None => format!("{} not timed", r.baseline),
            };
            let _ = write!(
                text,
                "; {} {:.3} s, {baseline}, {}",
                r.method,
                r.method_seconds,
                r.speedup_text("x")
            );
        }
        text
    }

    pub fn to_markdown(&self) -> String {
        let s = &self.summary;
        let mut md = format!("# {}\n\n", self.title);
        for i in &self.inputs {
            let _ = writeln!(md, "- {}: `{}`", i.role, i.source);
        }
        let units = self.area_unit();
        let provenance = Provenance::now();
        let _ = writeln!(
            md,
            "- size: {} x {} pixels, pixel area {}\n- command: `{}`\n- {}, {}\n",
            s.width,
            s.height,
            pixel_area_text(s),
            provenance.command_line,
            provenance.version,
            provenance.date
        );
        let _ = writeln!(md, "**{}**\n", self.headline());
        if let Some(r) = &self.run {
            md.push_str("## Run times\n\n| method | seconds |\n| --- | ---: |\n");
            let _ = writeln!(md, "| {} | {:.3} |", r.method, r.method_seconds);
            let _ = writeln!(
                md,
                "| {} (baseline) | {} |",
                r.baseline,
                r.baseline_seconds_text()
            );
            let _ = writeln!(md, "\n{}\n", r.speedup_text("x"));
            for (k, v) in &r.settings {
                let _ = writeln!(md, "- {k}: {v}");
            }
            md.push('\n');
        }
        let _ = writeln!(
            md,
            "## Classes\n\n| class | reference px | candidate px | precision | recall | IoU | area change ({}) | change % |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            units.name
        );
        for c in &s.classes {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                self.class_label(c.code),
                c.reference_pixels,
                c.candidate_pixels,
                pct(c.precision),
                pct(c.recall),
                num(c.iou, 4),
                units.show(c.area_change),
                num(c.area_change_percent, 3)
            );
        }
        let n = s.confusion.codes.len();
        if n <= MAX_MATRIX_CLASSES {
            md.push_str("\n## Confusion matrix (rows: reference, columns: candidate)\n\n| |");
            for c in &s.confusion.codes {
                let _ = write!(md, " {c} |");
            }
            md.push_str("\n| --- |");
            md.push_str(&" ---: |".repeat(n));
            md.push('\n');
            for (code, row) in s.confusion.codes.iter().zip(&s.confusion.rows) {
                let _ = write!(md, "| **{code}** |");
                for v in row {
                    let _ = write!(md, " {v} |");
                }
                md.push('\n');
            }
        } else {
            let _ = writeln!(
                md,
                "\n{n} classes: the confusion matrix is in the JSON report."
            );
        }
        md
    }

    pub fn to_html(&self) -> Result<String> {
        let s = &self.summary;
        let mut body = String::new();
        body.push_str("<ul>");
        for i in &self.inputs {
            let _ = write!(
                body,
                "<li>{}: <code>{}</code></li>",
                escape(&i.role),
                escape(&i.source)
            );
        }
        let provenance = Provenance::now();
        let _ = write!(
            body,
            "<li>size: {} × {} pixels, pixel area {}</li>\
             <li>command: <code>{}</code></li><li>{}, {}</li></ul>",
            s.width,
            s.height,
            escape(&pixel_area_text(s)),
            escape(&provenance.command_line),
            escape(&provenance.version),
            escape(&provenance.date)
        );
        let units = self.area_unit();
        let headline = [
            vec![
                "agreement".into(),
                s.agreement_percent
                    .map_or("–".into(), |a| format!("<b>{a:.4} %</b>")),
            ],
            vec!["Cohen's kappa".into(), num(s.kappa, 5)],
            vec!["pixels valid in both".into(), s.valid_pixels.to_string()],
            vec!["differing pixels".into(), s.differing_pixels.to_string()],
            vec![
                "nodata mismatches (reference only / candidate only)".into(),
                format!(
                    "{} ({} / {})",
                    s.nodata_mismatches(),
                    s.nodata.reference_only,
                    s.nodata.candidate_only
                ),
            ],
            vec!["nodata in both".into(), s.nodata.both.to_string()],
        ];
        body.push_str("<h2>Accuracy</h2><div class=\"headline\">");
        body.push_str(&page::table(&["figure", "value"], &headline));
        body.push_str("</div>");

        if let Some(r) = &self.run {
            body.push_str("<h2>Run times</h2>");
            let rows = vec![
                vec![escape(&r.method), format!("{:.3}", r.method_seconds)],
                vec![
                    format!("{} (exact baseline)", escape(&r.baseline)),
                    r.baseline_seconds_text(),
                ],
                vec![
                    "speed-up".into(),
                    match r.speedup {
                        Some(x) => format!("<b>{x:.2}×</b>"),
                        None => format!("– ({})", escape(&r.speedup_text("×"))),
                    },
                ],
            ];
            body.push_str(&page::table(&["method", "seconds"], &rows));
            if !r.settings.is_empty() {
                let rows: Vec<Vec<String>> = r
                    .settings
                    .iter()
                    .map(|(k, v)| vec![escape(k), escape(v)])
                    .collect();
                let table = page::table(&["setting", "value"], &rows);
                body.push_str(&table.replacen("<table>", "<table class=\"settings\">", 1));
            }
        }

        if !self.maps.is_empty() {
            body.push_str("<h2>Maps</h2><div class=\"maps\">");
            for m in &self.maps {
                let _ = write!(
                    body,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    page::img(&m.png, &m.caption),
                    escape(&m.caption)
                );
            }
            body.push_str("</div>");
            body.push_str(&self.legend_html());
        }

        body.push_str("<h2>Classes</h2>");
        let rows: Vec<Vec<String>> = s
            .classes
            .iter()
            .map(|c| {
                let swatch = self
                    .palette
                    .as_ref()
                    .map_or(String::new(), |p| page::swatch(&p.hex(c.code)));
                vec![
                    format!("{swatch}{}", escape(&self.class_label(c.code))),
                    c.reference_pixels.to_string(),
                    c.candidate_pixels.to_string(),
                    pct(c.precision),
                    pct(c.recall),
                    num(c.iou, 4),
                    units.show(c.reference_area),
                    units.show(c.candidate_area),
                    units.show(c.area_change),
                    num(c.area_change_percent, 3),
                ]
            })
            .collect();
        let unit = escape(&units.name);
        let header = [
            "class".to_string(),
            "reference px".into(),
            "candidate px".into(),
            "precision".into(),
            "recall".into(),
            "IoU".into(),
            format!("reference area ({unit})"),
            format!("candidate area ({unit})"),
            format!("area change ({unit})"),
            "change %".into(),
        ];
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        body.push_str(&page::table(&header, &rows));

        if !s.classes.is_empty() {
            let labels: Vec<String> = s.classes.iter().map(|c| c.code.to_string()).collect();
            let colors: Vec<(u8, u8, u8)> = s
                .classes
                .iter()
                .map(|c| {
                    self.palette.as_ref().map_or((70, 130, 180), |p| {
                        let [r, g, b, _] = p.color(c.code);
                        (r, g, b)
                    })
                })
                .collect();
            let iou: Vec<f64> = s.classes.iter().map(|c| c.iou.unwrap_or(0.0)).collect();
            let change: Vec<f64> = s
                .classes
                .iter()
                .map(|c| c.area_change / units.per)
                .collect();
            body.push_str("<h2>Plots</h2><div class=\"plots\">");
            body.push_str(&page::inline_svg(&plot::bar_chart(
                "IoU per class",
                "IoU",
                &labels,
                &iou,
                &colors,
            )?));
            body.push_str(&page::inline_svg(&plot::bar_chart(
                "Area change per class (candidate − reference)",
                &units.name,
                &labels,
                &change,
                &colors,
            )?));
            body.push_str("</div>");
        }

        body.push_str(&self.matrix_html());
        Ok(page::page(&self.title, &body))
    }

    fn legend_html(&self) -> String {
        let mut s = String::from("<p class=\"legend\">");
        if let Some(p) = &self.palette {
            for c in &self.summary.classes {
                let _ = write!(
                    s,
                    "<span class=\"item\">{}{}</span>",
                    page::swatch(&p.hex(c.code)),
                    escape(&self.class_label(c.code))
                );
            }
            s.push_str("<br>");
        }
        let m = Palette::mismatch();
        for (code, label) in [(0u16, "equal"), (1, "differs"), (2, "nodata in one only")] {
            let _ = write!(
                s,
                "<span class=\"item\">{}mismatch map: {label}</span>",
                page::swatch(&m.hex(code))
            );
        }
        s.push_str("</p>");
        s
    }

    fn matrix_html(&self) -> String {
        let t = &self.summary.confusion;
        let n = t.codes.len();
        let mut s = String::from("<h2>Confusion matrix</h2>");
        if n > MAX_MATRIX_CLASSES {
            let _ = write!(s, "<p>{n} classes: the matrix is in the JSON report.</p>");
            return s;
        }
        s.push_str("<p>Rows: reference class, columns: candidate class; shading by share of the row.</p><table><thead><tr><th></th>");
        for c in &t.codes {
            let _ = write!(s, "<th>{c}</th>");
        }
        s.push_str("</tr></thead><tbody>");
        for (i, (code, row)) in t.codes.iter().zip(&t.rows).enumerate() {
            let total: u64 = row.iter().sum::<u64>().max(1);
            let _ = write!(s, "<tr><th>{}</th>", escape(&self.class_label(*code)));
            for (j, v) in row.iter().enumerate() {
                let share = *v as f64 / total as f64;
                let hue = if i == j { "44,160,44" } else { "214,39,40" };
                let _ = write!(
                    s,
                    "<td style=\"background:rgba({hue},{:.3})\">{v}</td>",
                    share * 0.8
                );
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Confusion, PixelArea};

    fn report() -> CompareReport {
        let m = Confusion::from_matrix(vec![3, 7], vec![90, 10, 5, 95]).unwrap();
        let summary = Summary::new(
            &m,
            (20, 10),
            PixelArea::from_geotransform(Some([0.0, 30.0, 0.0, 0.0, 0.0, -30.0]), Some("metre")),
            &["".into(), "".into(), "".into(), "forest".into()],
        );
        CompareReport {
            title: "Test <report>".into(),
            inputs: vec![Input {
                role: "reference".into(),
                source: "a.tif".into(),
            }],
            run: Some(RunComparison {
                method: "fast@host".into(),
                method_seconds: 0.5,
                baseline: "naive@host".into(),
                baseline_seconds: Some(2.0),
                speedup: Some(4.0),
                settings: vec![("kernel".into(), "gaussian:2".into())],
            }),
            summary,
            maps: vec![Map {
                caption: "mismatch".into(),
                png: vec![1, 2, 3],
            }],
            palette: Some(Palette::from_color_table(&[], None)),
        }
    }

    #[test]
    fn all_three_formats_carry_the_figures() {
        let r = report();
        let json: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
        assert_eq!(json["summary"]["agreement_percent"], 92.5);
        assert_eq!(json["summary"]["classes"][0]["name"], "forest");
        assert_eq!(json["run"]["speedup"], 4.0);
        assert_eq!(json["summary"]["confusion"]["rows"][1][0], 5);

        let md = r.to_markdown();
        assert!(md.contains("agreement 92.5000 %"), "{md}");
        assert!(md.contains("| 3 forest |"));
        assert!(md.contains("| **7** | 5 | 95 |"));

        let html = r.to_html().unwrap();
        assert!(html.contains("Test &lt;report&gt;"));
        assert!(html.contains("data:image/png;base64,AQID"));
        assert!(html.contains("<b>4.00×</b>"));
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(!html.contains("<script"));
    }
}
