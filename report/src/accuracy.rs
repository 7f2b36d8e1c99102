//! The report of `mapfilter assess`: a map's accuracy and class areas
//! estimated from labelled reference points ([`mapfilter_core::accuracy`]) — overall,
//! user's and producer's accuracy and each class's area with 95 %
//! intervals, quantity and allocation disagreement, the error matrix in
//! proportions of area, and the sample's own counts — as JSON, CSV (one
//! row per class), self-contained HTML and a plain-text summary.

use super::compare::Input;
use super::numbers::{AreaUnit, Provenance, fixed, json_with_provenance};
use super::page;
use mapfilter_core::accuracy::{Assessment, Estimate};
use mapfilter_core::error::Result;
use mapfilter_core::pixel_area::PixelArea;
use serde::Serialize;
use std::fmt::Write as _;

/// Everything one assessment report shows.
#[derive(Clone, Debug, Serialize)]
pub struct AccuracyReport {
    pub title: String,
    pub inputs: Vec<Input>,
    pub pixel_area: PixelArea,
    /// The unit areas are shown in (`assessment`'s areas are in
    /// `pixel_area.unit`).
    #[serde(skip)]
    pub unit: AreaUnit,
    pub assessment: Assessment,
    /// Category names by code (may be empty).
    #[serde(skip)]
    pub names: Vec<String>,
}

/// `0.8812 ± 0.0736` as "88.12 % ± 7.36".
pub fn percent_ci(e: Option<&Estimate>) -> String {
    e.map_or("–".into(), |e| {
        format!(
            "{} % ± {}",
            fixed(100.0 * e.value, 2),
            fixed(100.0 * mapfilter_core::accuracy::Z95 * e.se, 2)
        )
    })
}

/// A class as reports name it: its code and, where known, its name.
pub fn class_label(names: &[String], code: u16) -> String {
    match names.get(code as usize).filter(|n| !n.trim().is_empty()) {
        Some(name) => format!("{code} {name}"),
        None => code.to_string(),
    }
}

impl AccuracyReport {
    fn label(&self, code: u16) -> String {
        class_label(&self.names, code)
    }

    fn area_ci(&self, e: &Estimate) -> String {
        format!(
            "{} ± {}",
            self.unit.show(e.value),
            self.unit.show(mapfilter_core::accuracy::Z95 * e.se)
        )
    }

    /// The JSON report: the assessment (areas in the map's unit), the unit
    /// the other formats show, and the [`Provenance`].
    pub fn to_json(&self) -> Result<String> {
        let extra = [
            ("area_unit", self.pixel_area.unit.clone().into()),
            ("shown_area_unit", self.unit.name.clone().into()),
        ];
        json_with_provenance(self, &extra).map(|t| t + "\n")
    }

    /// One row per class: counts, accuracies, area proportion and area (in
    /// the shown unit), each with its standard error and 95 % bounds.
    pub fn to_csv(&self) -> Result<String> {
        // Column names stay ASCII for scripts: km² as km2.
        let u = self.unit.name.replace('²', "2");
        let area_cols = [
            format!("area_{u}"),
            format!("area_se_{u}"),
            format!("area_ci95_low_{u}"),
            format!("area_ci95_high_{u}"),
        ];
        let mut header: Vec<&str> = vec![
            "class",
            "name",
            "map_points",
            "reference_points",
            "users",
            "users_se",
            "users_ci95_low",
            "users_ci95_high",
            "producers",
            "producers_se",
            "producers_ci95_low",
            "producers_ci95_high",
            "area_proportion",
            "area_proportion_se",
            "area_proportion_ci95_low",
            "area_proportion_ci95_high",
            "map_proportion",
        ];
        header.extend(area_cols.iter().map(String::as_str));
        let est = |e: Option<&Estimate>| -> [String; 4] {
            match e {
                Some(e) => [e.value, e.se, e.ci95[0], e.ci95[1]].map(|v| v.to_string()),
                None => Default::default(),
            }
        };
        let rows = self.assessment.classes.iter().map(|c| {
            let mut row = vec![
                c.code.to_string(),
                self.names.get(c.code as usize).cloned().unwrap_or_default(),
                c.sample_map.to_string(),
                c.sample_reference.to_string(),
            ];
            row.extend(est(c.users.as_ref()));
            row.extend(est(c.producers.as_ref()));
            row.extend(est(Some(&c.area_proportion)));
            row.push(c.map_proportion.to_string());
            row.extend(est(Some(&c.area.scaled(1.0 / self.unit.per))));
            row
        });
        mapfilter_core::output::csv::table(&header, rows)
    }

    /// The plain-text summary printed after a run.
    pub fn to_text(&self) -> String {
        let a = &self.assessment;
        let mut t = format!(
            "overall accuracy {} from {} points in {} strata",
            percent_ci(Some(&a.overall)),
            a.points,
            a.strata.len()
        );
        if let Some(d) = a.disagreement {
            let _ = write!(
                t,
                "; quantity disagreement {} %, allocation disagreement {} %",
                fixed(100.0 * d.quantity, 2),
                fixed(100.0 * d.allocation, 2)
            );
        }
        t.push('\n');
        for c in &a.classes {
            let _ = writeln!(
                t,
                "class {}: user's {}, producer's {}, area {} {}",
                mapfilter_core::output::text::printable(&self.label(c.code)),
                percent_ci(c.users.as_ref()),
                percent_ci(c.producers.as_ref()),
                self.area_ci(&c.area),
                self.unit.name
            );
        }
        t
    }

    /// The headline figures: overall accuracy, sample size, disagreement.
    pub fn headline(&self) -> Vec<[String; 2]> {
        let a = &self.assessment;
        let mut headline = vec![
            ["overall accuracy".to_string(), percent_ci(Some(&a.overall))],
            ["sample points".into(), a.points.to_string()],
        ];
        if let Some(d) = a.disagreement {
            headline.push([
                "quantity disagreement (Pontius & Millones)".into(),
                format!("{} %", fixed(100.0 * d.quantity, 2)),
            ]);
            headline.push([
                "allocation disagreement (Pontius & Millones)".into(),
                format!("{} %", fixed(100.0 * d.allocation, 2)),
            ]);
        }
        headline
    }

    /// The classes table: its header and one row per class (points,
    /// user's and producer's accuracy, mapped and estimated area).
    pub fn class_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let a = &self.assessment;
        let unit = &self.unit.name;
        let header = vec![
            "class".into(),
            "map points".into(),
            "reference points".into(),
            "user's accuracy".into(),
            "producer's accuracy".into(),
            format!("mapped area ({unit})"),
            format!("estimated area ± 95 % ({unit})"),
        ];
        let rows = a
            .classes
            .iter()
            .map(|c| {
                vec![
                    self.label(c.code),
                    c.sample_map.to_string(),
                    c.sample_reference.to_string(),
                    percent_ci(c.users.as_ref()),
                    percent_ci(c.producers.as_ref()),
                    self.unit.show(c.map_proportion * a.total_area),
                    self.area_ci(&c.area),
                ]
            })
            .collect();
        (header, rows)
    }

    pub fn to_html(&self) -> Result<String> {
        let a = &self.assessment;
        let unit = &self.unit.name;
        let labels: Vec<String> = a.classes.iter().map(|c| self.label(c.code)).collect();
        let (class_header, classes) = self.class_table();
        let mut matrix_header = vec!["map \\ reference".to_string()];
        matrix_header.extend(labels.iter().cloned());
        let rows = |cells: &dyn Fn(usize, usize) -> String| -> Vec<Vec<String>> {
            labels
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut row = vec![l.clone()];
                    row.extend((0..labels.len()).map(|j| cells(i, j)));
                    row
                })
                .collect()
        };
        let view = View {
            inputs: &self.inputs,
            pixel_area: format!(
                "{} {}",
                AreaUnit::for_values(&self.pixel_area.unit, [self.pixel_area.area])
                    .show(self.pixel_area.area),
                AreaUnit::for_values(&self.pixel_area.unit, [self.pixel_area.area]).name
            ),
            total_area: format!("{} {unit}", self.unit.show(a.total_area)),
            provenance: Provenance::now(),
            headline: self.headline(),
            class_header,
            classes,
            // Past 12 classes two decimals, so 20+ columns fit the page.
            matrix: rows(&|i, j| {
                fixed(
                    100.0 * a.matrix[i][j],
                    if labels.len() > 12 { 2 } else { 3 },
                )
            }),
            counts: rows(&|i, j| a.counts[i][j].to_string()),
            matrix_header,
            unit: unit.clone(),
            strata: a
                .strata
                .iter()
                .map(|s| {
                    vec![
                        self.label(s.code),
                        s.pixels.to_string(),
                        self.unit.show(s.area),
                        s.points.to_string(),
                    ]
                })
                .collect(),
        };
        page::render("accuracy.html", &self.title, view)
    }
}

/// What `templates/accuracy.html` shows: text and figures, formatted.
#[derive(Serialize)]
struct View<'a> {
    inputs: &'a [Input],
    pixel_area: String,
    total_area: String,
    provenance: Provenance,
    headline: Vec<[String; 2]>,
    class_header: Vec<String>,
    classes: Vec<Vec<String>>,
    matrix_header: Vec<String>,
    matrix: Vec<Vec<String>>,
    counts: Vec<Vec<String>>,
    unit: String,
    strata: Vec<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapfilter_core::accuracy::estimate::{SamplePoint, Stratum, assess};

    /// Olofsson et al. (2014), section 5 and Table 8, as the core crate's
    /// `accuracy::estimate` tests build it (whose test helpers this crate
    /// cannot reach): strata = map classes 1 to 4 of 200,000, 150,000,
    /// 3,200,000 and 6,450,000 Landsat pixels (0.09 ha), n = 75, 75, 165, 325.
    fn olofsson_2014() -> (Vec<Stratum>, Vec<SamplePoint>) {
        let pixels = [200_000u64, 150_000, 3_200_000, 6_450_000];
        let strata = (1..=4)
            .zip(pixels)
            .map(|(code, pixels)| Stratum {
                code,
                pixels,
                area: pixels as f64 * 0.09,
            })
            .collect();
        let counts: [[u64; 4]; 4] = [
            [66, 0, 5, 4],
            [0, 55, 8, 12],
            [1, 0, 153, 11],
            [2, 1, 9, 313],
        ];
        let mut points = Vec::new();
        for (m, row) in (1..=4).zip(counts) {
            for (r, n) in (1..=4).zip(row) {
                points.extend((0..n).map(|_| SamplePoint {
                    stratum: m,
                    map: m,
                    reference: r,
                }));
            }
        }
        (strata, points)
    }

    fn report() -> AccuracyReport {
        let (strata, points) = olofsson_2014();
        // The strata's areas in m² (30 m pixels), as `assess` measures them.
        let strata: Vec<_> = strata
            .into_iter()
            .map(|s| mapfilter_core::accuracy::Stratum {
                area: s.pixels as f64 * 900.0,
                ..s
            })
            .collect();
        let assessment = assess(&strata, &points).unwrap();
        let pixel_area =
            PixelArea::from_geotransform(Some([0.0, 30.0, 0.0, 0.0, 0.0, -30.0]), Some("metre"));
        AccuracyReport {
            title: "Accuracy of <change map>".into(),
            inputs: vec![Input {
                role: "map".into(),
                source: "change.tif".into(),
            }],
            unit: AreaUnit::chosen("ha", &pixel_area.unit, [0.0]).unwrap(),
            pixel_area,
            assessment,
            names: vec![String::new(), "deforestation".into()],
        }
    }

    #[test]
    fn every_format_carries_the_estimates() {
        let r = report();
        let json: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
        let a = &json["assessment"];
        assert_eq!(a["points"], 640);
        assert_eq!(a["counts"][0], serde_json::json!([66, 0, 5, 4]));
        assert_eq!(json["shown_area_unit"], "ha");
        // Areas in the JSON stay in the map's unit (m²).
        let area = a["classes"][0]["area"]["value"].as_f64().unwrap();
        assert!((area / 1e4 - 21_157.76).abs() < 0.01, "{area}");

        let mut km = report();
        km.unit = AreaUnit::chosen("km2", "m²", [0.0]).unwrap();
        assert!(
            km.to_csv()
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .ends_with(",area_km2,area_se_km2,area_ci95_low_km2,area_ci95_high_km2")
        );
        let csv = r.to_csv().unwrap();
        let mut lines = csv.lines();
        assert!(
            lines
                .next()
                .unwrap()
                .ends_with(",area_ha,area_se_ha,area_ci95_low_ha,area_ci95_high_ha")
        );
        let first: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(&first[..4], ["1", "deforestation", "75", "69"]);
        assert!(first[17].starts_with("21157.76"), "{first:?}");

        let text = r.to_text();
        assert!(
            text.starts_with(
                "overall accuracy 94.65 % ± 1.85 from 640 points in 4 strata; quantity disagreement"
            ),
            "{text}"
        );
        assert!(text.contains("class 1 deforestation: user's 88.00 % ± 7.40, producer's 74.87 % ± 21.33, area 21157.76 ± 6157.32 ha"), "{text}");

        let html = r.to_html().unwrap();
        assert!(html.contains("Accuracy of &lt;change map&gt;"));
        assert!(
            html.contains("<td>1 deforestation</td><td>75</td><td>69</td><td>88.00 % ± 7.40</td>"),
            "{html}"
        );
        assert!(html.contains("<td>21157.76 ± 6157.32</td>"));
        assert!(!html.contains("<script"));
    }
}
