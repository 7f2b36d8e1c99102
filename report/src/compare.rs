//! The accuracy report of one comparison (`mapfilter compare`, and
//! `mapfilter smooth --report`): headline agreement and kappa, run times and
//! speed-up where two methods ran, quick-look maps, per-class figures, plots
//! and the confusion matrix — as JSON, Markdown and self-contained HTML.

use super::markdown;
use super::numbers::{AreaUnit, Provenance, fixed, json_with_provenance};
use super::page;
use super::plot;
use super::quicklook::Palette;
use mapfilter_core::error::Result;
use mapfilter_core::metrics::Summary;
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

/// A figure already in percent, as the agreement is written.
fn percent(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{} %", fixed(v, 4)))
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
        json_with_provenance(self, &[])
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
            "agreement {} of {} valid pixels ({} differ), kappa {}, quantity disagreement {}, allocation disagreement {}, nodata mismatches {} (reference only {}, candidate only {})",
            s.agreement_percent
                .map_or("–".into(), |a| format!("{a:.4} %")),
            s.valid_pixels,
            s.differing_pixels,
            num(s.kappa, 5),
            percent(s.quantity_disagreement_percent),
            percent(s.allocation_disagreement_percent),
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
        // Names, paths and settings come from data: escaped, so that each
        // shows as itself (see `super::markdown`).
        let mut md = format!("# {}\n\n", markdown::text(&self.title));
        for i in &self.inputs {
            let _ = writeln!(
                md,
                "- {}: {}",
                markdown::text(&i.role),
                markdown::code(&i.source)
            );
        }
        let units = self.area_unit();
        let provenance = Provenance::now();
        let _ = writeln!(
            md,
            "- size: {} x {} pixels, pixel area {}\n- command: {}\n- {}, {}\n",
            s.width,
            s.height,
            pixel_area_text(s),
            markdown::code(&provenance.command_line),
            provenance.version,
            provenance.date
        );
        let _ = writeln!(md, "**{}**\n", self.headline());
        if let Some(r) = &self.run {
            md.push_str("## Run times\n\n| method | seconds |\n| --- | ---: |\n");
            let _ = writeln!(
                md,
                "| {} | {:.3} |",
                markdown::text(&r.method),
                r.method_seconds
            );
            let _ = writeln!(
                md,
                "| {} (baseline) | {} |",
                markdown::text(&r.baseline),
                r.baseline_seconds_text()
            );
            let _ = writeln!(md, "\n{}\n", r.speedup_text("x"));
            for (k, v) in &r.settings {
                let _ = writeln!(md, "- {}: {}", markdown::text(k), markdown::text(v));
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
                markdown::text(&self.class_label(c.code)),
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
        let units = self.area_unit();
        let run = self.run.as_ref().map(|r| RunView {
            method: &r.method,
            method_seconds: format!("{:.3}", r.method_seconds),
            baseline: &r.baseline,
            baseline_seconds: r.baseline_seconds_text(),
            speedup: r.speedup.map(|x| format!("{x:.2}×")),
            no_speedup: r.speedup_text("×"),
            settings: r.settings.iter().map(|(k, v)| [k, v]).collect(),
        });
        let classes = s
            .classes
            .iter()
            .map(|c| ClassRow {
                hex: self.palette.as_ref().map(|p| p.hex(c.code)),
                label: self.class_label(c.code),
                figures: vec![
                    c.reference_pixels.to_string(),
                    c.candidate_pixels.to_string(),
                    pct(c.precision),
                    pct(c.recall),
                    num(c.iou, 4),
                    units.show(c.reference_area),
                    units.show(c.candidate_area),
                    units.show(c.area_change),
                    num(c.area_change_percent, 3),
                ],
            })
            .collect();
        let unit = &units.name;
        let view = View {
            inputs: &self.inputs,
            width: s.width,
            height: s.height,
            pixel_area: pixel_area_text(s),
            provenance: Provenance::now(),
            agreement: s.agreement_percent.map(|a| format!("{a:.4} %")),
            headline: vec![
                ["Cohen's kappa".into(), num(s.kappa, 5)],
                [
                    "quantity disagreement (Pontius & Millones)".into(),
                    percent(s.quantity_disagreement_percent),
                ],
                [
                    "allocation disagreement (Pontius & Millones)".into(),
                    percent(s.allocation_disagreement_percent),
                ],
                ["pixels valid in both".into(), s.valid_pixels.to_string()],
                ["differing pixels".into(), s.differing_pixels.to_string()],
                [
                    "nodata mismatches (reference only / candidate only)".into(),
                    format!(
                        "{} ({} / {})",
                        s.nodata_mismatches(),
                        s.nodata.reference_only,
                        s.nodata.candidate_only
                    ),
                ],
                ["nodata in both".into(), s.nodata.both.to_string()],
            ],
            run,
            maps: self
                .maps
                .iter()
                .map(|m| MapView {
                    caption: &m.caption,
                    src: page::png_data_uri(&m.png),
                })
                .collect(),
            classes_legend: self.palette.as_ref().map_or(Vec::new(), |p| {
                s.classes
                    .iter()
                    .map(|c| LegendView {
                        hex: p.hex(c.code),
                        label: self.class_label(c.code),
                    })
                    .collect()
            }),
            mismatch_legend: {
                let m = Palette::mismatch();
                [(0u16, "equal"), (1, "differs"), (2, "nodata in one only")]
                    .into_iter()
                    .map(|(code, label)| LegendView {
                        hex: m.hex(code),
                        label: label.into(),
                    })
                    .collect()
            },
            class_header: vec![
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
            ],
            classes,
            plots: self.plots(&units)?,
            matrix: self.matrix(),
        };
        page::render("compare.html", &self.title, view)
    }

    /// IoU and area change per class, as inline SVG bar charts.
    fn plots(&self, units: &AreaUnit) -> Result<Vec<String>> {
        let s = &self.summary;
        if s.classes.is_empty() {
            return Ok(Vec::new());
        }
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
        Ok(vec![
            page::svg_element(&plot::bar_chart(
                "IoU per class",
                "IoU",
                &labels,
                &iou,
                &colors,
                true,
            )?),
            page::svg_element(&plot::bar_chart(
                "Area change per class (candidate − reference)",
                &units.name,
                &labels,
                &change,
                &colors,
                false,
            )?),
        ])
    }

    /// The confusion matrix, each cell shaded by its share of the row.
    fn matrix(&self) -> MatrixView {
        let t = &self.summary.confusion;
        let n = t.codes.len();
        if n > MAX_MATRIX_CLASSES {
            return MatrixView {
                too_many: Some(n),
                labels: Vec::new(),
                rows: Vec::new(),
            };
        }
        let rows = t
            .codes
            .iter()
            .zip(&t.rows)
            .enumerate()
            .map(|(i, (code, row))| {
                let total: u64 = row.iter().sum::<u64>().max(1);
                MatrixRow {
                    label: self.class_label(*code),
                    cells: row
                        .iter()
                        .enumerate()
                        .map(|(j, v)| MatrixCell {
                            count: v.to_string(),
                            shown: matrix_count(*v, n),
                            hue: if i == j { "44,160,44" } else { "214,39,40" },
                            alpha: format!("{:.3}", *v as f64 / total as f64 * 0.8),
                        })
                        .collect(),
                }
            })
            .collect();
        MatrixView {
            too_many: None,
            labels: t.codes.iter().map(|c| self.class_label(*c)).collect(),
            rows,
        }
    }
}

/// What `templates/compare.html` shows: text and figures, formatted.
#[derive(Serialize)]
struct View<'a> {
    inputs: &'a [Input],
    width: usize,
    height: usize,
    pixel_area: String,
    provenance: Provenance,
    agreement: Option<String>,
    headline: Vec<[String; 2]>,
    run: Option<RunView<'a>>,
    maps: Vec<MapView<'a>>,
    classes_legend: Vec<LegendView>,
    mismatch_legend: Vec<LegendView>,
    class_header: Vec<String>,
    classes: Vec<ClassRow>,
    plots: Vec<String>,
    matrix: MatrixView,
}

#[derive(Serialize)]
struct RunView<'a> {
    method: &'a str,
    method_seconds: String,
    baseline: &'a str,
    baseline_seconds: String,
    speedup: Option<String>,
    /// Why there is no speed-up, when there is none.
    no_speedup: String,
    settings: Vec<[&'a String; 2]>,
}

#[derive(Serialize)]
struct MapView<'a> {
    caption: &'a str,
    /// A `data:` URI (base64, nothing to escape).
    src: String,
}

#[derive(Serialize)]
struct LegendView {
    hex: String,
    label: String,
}

#[derive(Serialize)]
struct ClassRow {
    hex: Option<String>,
    label: String,
    figures: Vec<String>,
}

#[derive(Serialize)]
struct MatrixView {
    /// The number of classes, when too many to show.
    too_many: Option<usize>,
    /// The column headers: each class's code and name.
    labels: Vec<String>,
    rows: Vec<MatrixRow>,
}

/// Classes beyond which a matrix cell shows its shade only (the count in
/// its tooltip and the JSON): 40 columns of figures do not fit a page.
const MATRIX_FIGURES_UP_TO: usize = 32;

/// A count as a matrix of `n` classes shows it: whole up to 9999, then
/// short (12.3k, 4.5M) past 12 classes so 20+ columns fit the page.
fn matrix_count(v: u64, n: usize) -> String {
    let short = |v: f64, unit: &str| {
        let digits = if v < 10.0 { 1 } else { 0 };
        format!("{v:.digits$}{unit}")
    };
    match v {
        _ if n > MATRIX_FIGURES_UP_TO => String::new(),
        _ if n <= 12 || v < 10_000 => v.to_string(),
        _ if v < 1_000_000 => short(v as f64 / 1e3, "k"),
        _ if v < 1_000_000_000 => short(v as f64 / 1e6, "M"),
        _ => short(v as f64 / 1e9, "G"),
    }
}

#[derive(Serialize)]
struct MatrixRow {
    label: String,
    cells: Vec<MatrixCell>,
}

#[derive(Serialize)]
struct MatrixCell {
    /// The exact count (the cell's tooltip).
    count: String,
    /// What the cell shows.
    shown: String,
    hue: &'static str,
    alpha: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapfilter_core::metrics::Confusion;
    use mapfilter_core::pixel_area::PixelArea;

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
        // Totals 100/100 against 95/105: 5 of 200 pixels in quantity, the
        // other 10 that differ in allocation.
        let q = json["summary"]["quantity_disagreement_percent"]
            .as_f64()
            .unwrap();
        assert!((q - 2.5).abs() < 1e-12, "{q}");
        assert!(
            md.contains("quantity disagreement 2.5000 %, allocation disagreement 5.0000 %"),
            "{md}"
        );
        assert!(md.contains("| 3 forest |"));
        assert!(md.contains("| **7** | 5 | 95 |"));

        assert!(md.starts_with("# Test &lt;report&gt;\n"), "{md}");

        let html = r.to_html().unwrap();
        assert!(html.contains("Test &lt;report&gt;"));
        assert!(html.contains("data:image/png;base64,AQID"));
        assert!(html.contains("<b>4.00×</b>"));
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(!html.contains("<script"));
    }

    /// Category names from the input's metadata are data: in the Markdown
    /// table each is one cell of plain text.
    #[test]
    fn markdown_escapes_category_names() {
        let mut r = report();
        r.summary.classes[1].name = Some("a|b <script>x</script>\x1b[2J".into());
        let md = r.to_markdown();
        let row = md.lines().find(|l| l.starts_with("| 7 ")).unwrap();
        assert!(
            row.starts_with("| 7 a\\|b &lt;script&gt;x&lt;/script&gt;\\\\u{1b}\\[2J |"),
            "{row}"
        );
        // Eight cells: nine pipes that are not escaped.
        let cells = row.replace("\\|", "");
        assert_eq!(cells.matches('|').count(), 9, "{row}");
        assert!(!md.contains('\x1b') && !md.contains("<script"));
    }
}
