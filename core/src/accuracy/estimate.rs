//! Stratified estimators of accuracy and area from a labelled sample.
//!
//! The general form is Stehman (2014), "Estimating area and map accuracy
//! for stratified random sampling when the strata are different from the
//! map classes", Int. J. Remote Sens. 35, 4923–4939: every figure is a
//! stratified mean of a per-point indicator (area of a reference class,
//! overall accuracy, a cell of the error matrix), or a combined ratio of two
//! (user's and producer's accuracy), each with its variance estimator and
//! the finite population correction. Where the strata are the map classes
//! it is the familiar form of Olofsson et al. (2014), "Good practices for
//! estimating area and assessing accuracy of land change", Remote Sens.
//! Environ. 148, 42–57 (the unit tests reproduce both papers' examples, and
//! an independent numpy implementation in `tests/accuracy/reference.py`).
//!
//! Strata are weighted by their area, so that pixels of different ground
//! area (geographic rasters) count by their share of the ground; for a
//! projected raster that is their pixel count.

use super::Z95;
use super::disagreement::Disagreement;
use crate::bail;
use crate::error::{Result, Setting};
use serde::Serialize;

/// One stratum of the design: its code, its size in pixels (the
/// population the points were drawn from) and its area (its weight).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stratum {
    pub code: u16,
    pub pixels: u64,
    pub area: f64,
}

/// One labelled sample point: the stratum it was drawn in, the map's class
/// there and the reference class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SamplePoint {
    pub stratum: u16,
    pub map: u16,
    pub reference: u16,
}

/// An estimate with its standard error and 95 % confidence interval
/// (normal approximation, `value ± 1.96·se`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub se: f64,
    pub ci95: [f64; 2],
}

impl Estimate {
    pub fn new(value: f64, se: f64) -> Self {
        Estimate {
            value,
            se,
            ci95: [value - Z95 * se, value + Z95 * se],
        }
    }

    /// The same scaled by `k` (a proportion into an area).
    pub fn scaled(self, k: f64) -> Self {
        Estimate::new(self.value * k, self.se * k)
    }

    /// Whether `v` lies inside the 95 % interval.
    pub fn covers(&self, v: f64) -> bool {
        self.ci95[0] <= v && v <= self.ci95[1]
    }
}

/// The figures of one class (a map class, a reference class, or both).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassEstimate {
    pub code: u16,
    /// Of the area mapped as this class, the share that is this class in the
    /// reference; `None` where no sample point is mapped as this class.
    pub users: Option<Estimate>,
    /// Of the area that is this class in the reference, the share mapped as
    /// it; `None` where no sample point is this class in the reference.
    pub producers: Option<Estimate>,
    /// The class's share of the area by the reference labels.
    pub area_proportion: Estimate,
    /// The class's area by the reference labels (the error-adjusted area), in
    /// the unit of the strata's areas.
    pub area: Estimate,
    /// The share of the area the map gives this class, as the sample
    /// estimates it (exact where the strata are the map classes).
    pub map_proportion: f64,
    /// Sample points mapped as this class.
    pub sample_map: u64,
    /// Sample points labelled as this class in the reference.
    pub sample_reference: u64,
}

/// A stratum as the design saw it: size and points drawn.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StratumSample {
    pub code: u16,
    pub pixels: u64,
    pub area: f64,
    pub points: u64,
}

/// Everything estimated from one sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Assessment {
    /// Sample points used.
    pub points: u64,
    /// Total area of the strata (the population), in their unit.
    pub total_area: f64,
    pub overall: Estimate,
    /// By class, codes ascending: the union of map and reference classes.
    pub classes: Vec<ClassEstimate>,
    /// The error matrix in estimated proportions of area: rows map class,
    /// columns reference class, both in the order of `classes`.
    pub matrix: Vec<Vec<f64>>,
    /// The sample's own error matrix (point counts), rows map class,
    /// columns reference class.
    pub counts: Vec<Vec<u64>>,
    /// Quantity and allocation disagreement of `matrix`.
    pub disagreement: Option<Disagreement>,
    pub strata: Vec<StratumSample>,
}

impl Assessment {
    /// Class codes in the order of the matrices.
    pub fn codes(&self) -> Vec<u16> {
        self.classes.iter().map(|c| c.code).collect()
    }
}

/// Per-stratum moments of one indicator `y` (and `x` for a ratio).
#[derive(Clone, Copy, Default)]
struct Moments {
    n: f64,
    mean_y: f64,
    mean_x: f64,
    var_y: f64,
    var_x: f64,
    cov_xy: f64,
}

/// The strata with their points, checked, and the per-stratum weights of
/// the variance (`A_h² (1 − n_h/N_h) / n_h`).
struct Design<'a> {
    strata: &'a [Stratum],
    /// Points of each stratum, by stratum index.
    groups: Vec<Vec<SamplePoint>>,
    total_area: f64,
}

impl<'a> Design<'a> {
    fn new(strata: &'a [Stratum], points: &[SamplePoint]) -> Result<Self> {
        if points.is_empty() {
            bail!(
                input,
                "no sample point to estimate from",
                hint = "draw a sample with `mapfilter sample` and label its points"
            );
        }
        let mut groups = vec![Vec::new(); strata.len()];
        for p in points {
            let Some(h) = strata.iter().position(|s| s.code == p.stratum) else {
                bail!(
                    input,
                    format!(
                        "a sample point lies in stratum {}, which has no pixel in the strata raster",
                        p.stratum
                    ),
                    hint = format!(
                        "assess with the strata the sample was drawn from ({} when they are not the map's classes)",
                        Setting::Strata.is("RASTER")
                    )
                );
            };
            groups[h].push(*p);
        }
        for (s, g) in strata.iter().zip(&groups) {
            let n = g.len() as u64;
            // A census of the stratum needs no variance; otherwise the
            // sample variance needs two points.
            if s.pixels > 0 && n < 2 && n != s.pixels {
                bail!(
                    input,
                    format!(
                        "stratum {} ({} pixels) has {n} sample point{}: the estimators need at least 2 in every stratum",
                        s.code,
                        s.pixels,
                        if n == 1 { "" } else { "s" }
                    ),
                    hint = format!(
                        "draw at least 2 points per stratum (`mapfilter sample {}`), or give strata that the sample covers",
                        Setting::MinPerClass
                    )
                );
            }
            if n > s.pixels {
                bail!(
                    input,
                    format!(
                        "stratum {} has {n} sample points but only {} pixels",
                        s.code, s.pixels
                    ),
                    hint = "a stratified random sample draws each pixel at most once: check the points and the strata raster"
                );
            }
        }
        let total_area: f64 = strata.iter().map(|s| s.area).sum();
        if total_area.is_nan() || total_area <= 0.0 {
            bail!(
                input,
                "the strata hold no area",
                hint = format!(
                    "give a map (or {} raster) with valid pixels",
                    Setting::Strata
                )
            );
        }
        Ok(Design {
            strata,
            groups,
            total_area,
        })
    }

    fn moments(
        &self,
        y: impl Fn(&SamplePoint) -> bool,
        x: impl Fn(&SamplePoint) -> bool,
    ) -> Vec<Moments> {
        self.groups
            .iter()
            .map(|g| {
                let n = g.len() as f64;
                if g.is_empty() {
                    return Moments::default();
                }
                let ys: Vec<f64> = g.iter().map(|p| f64::from(u8::from(y(p)))).collect();
                let xs: Vec<f64> = g.iter().map(|p| f64::from(u8::from(x(p)))).collect();
                let mean_y = ys.iter().sum::<f64>() / n;
                let mean_x = xs.iter().sum::<f64>() / n;
                let d = (n - 1.0).max(1.0);
                let var_y = ys.iter().map(|v| (v - mean_y).powi(2)).sum::<f64>() / d;
                let var_x = xs.iter().map(|v| (v - mean_x).powi(2)).sum::<f64>() / d;
                let cov_xy = ys
                    .iter()
                    .zip(&xs)
                    .map(|(a, b)| (a - mean_y) * (b - mean_x))
                    .sum::<f64>()
                    / d;
                Moments {
                    n,
                    mean_y,
                    mean_x,
                    var_y,
                    var_x,
                    cov_xy,
                }
            })
            .collect()
    }

    /// `A_h² (1 − n_h/N_h) / n_h` of stratum `h` (0 for an unsampled one).
    fn variance_weight(&self, h: usize, m: &Moments) -> f64 {
        let s = &self.strata[h];
        if m.n == 0.0 || s.pixels == 0 {
            return 0.0;
        }
        let fpc = (1.0 - m.n / s.pixels as f64).max(0.0);
        s.area * s.area * fpc / m.n
    }

    /// The stratified estimator of the proportion of area where `y` holds.
    fn mean(&self, y: impl Fn(&SamplePoint) -> bool) -> Estimate {
        let ms = self.moments(y, |_| false);
        let total: f64 = self
            .strata
            .iter()
            .zip(&ms)
            .map(|(s, m)| s.area * m.mean_y)
            .sum();
        let var: f64 = ms
            .iter()
            .enumerate()
            .map(|(h, m)| self.variance_weight(h, m) * m.var_y)
            .sum();
        Estimate::new(
            total / self.total_area,
            var.max(0.0).sqrt() / self.total_area,
        )
    }

    /// The combined ratio estimator of (area where `y`) / (area where `x`);
    /// `None` where the sample has no point where `x` holds.
    fn ratio(
        &self,
        y: impl Fn(&SamplePoint) -> bool,
        x: impl Fn(&SamplePoint) -> bool,
    ) -> Option<Estimate> {
        let ms = self.moments(y, x);
        let (mut ty, mut tx) = (0.0, 0.0);
        for (s, m) in self.strata.iter().zip(&ms) {
            ty += s.area * m.mean_y;
            tx += s.area * m.mean_x;
        }
        if tx <= 0.0 {
            return None;
        }
        let r = ty / tx;
        let var: f64 = ms
            .iter()
            .enumerate()
            .map(|(h, m)| {
                self.variance_weight(h, m) * (m.var_y + r * r * m.var_x - 2.0 * r * m.cov_xy)
            })
            .sum::<f64>()
            / (tx * tx);
        Some(Estimate::new(r, var.max(0.0).sqrt()))
    }
}

/// Estimates accuracy and area from `points` drawn by stratified random
/// sampling from `strata` (Stehman 2014; Olofsson et al. 2014 where every
/// point's stratum is its map class). A stratum with no pixel may be
/// listed; every other needs at least two points (or all its pixels).
pub fn assess(strata: &[Stratum], points: &[SamplePoint]) -> Result<Assessment> {
    let design = Design::new(strata, points)?;
    let mut codes: Vec<u16> = points.iter().flat_map(|p| [p.map, p.reference]).collect();
    codes.sort_unstable();
    codes.dedup();
    let overall = design.mean(|p| p.map == p.reference);
    let matrix: Vec<Vec<f64>> = codes
        .iter()
        .map(|&i| {
            codes
                .iter()
                .map(|&j| design.mean(|p| p.map == i && p.reference == j).value)
                .collect()
        })
        .collect();
    let counts: Vec<Vec<u64>> = codes
        .iter()
        .map(|&i| {
            codes
                .iter()
                .map(|&j| {
                    points
                        .iter()
                        .filter(|p| p.map == i && p.reference == j)
                        .count() as u64
                })
                .collect()
        })
        .collect();
    let classes = codes
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let area_proportion = design.mean(|p| p.reference == c);
            ClassEstimate {
                code: c,
                users: design.ratio(|p| p.map == c && p.reference == c, |p| p.map == c),
                producers: design.ratio(|p| p.map == c && p.reference == c, |p| p.reference == c),
                area_proportion,
                area: area_proportion.scaled(design.total_area),
                map_proportion: matrix[k].iter().sum(),
                sample_map: counts[k].iter().sum(),
                sample_reference: counts.iter().map(|row| row[k]).sum(),
            }
        })
        .collect();
    let flat: Vec<f64> = matrix.iter().flatten().copied().collect();
    Ok(Assessment {
        points: points.len() as u64,
        total_area: design.total_area,
        overall,
        classes,
        disagreement: Disagreement::of(codes.len(), &flat),
        matrix,
        counts,
        strata: strata
            .iter()
            .zip(&design.groups)
            .map(|(s, g)| StratumSample {
                code: s.code,
                pixels: s.pixels,
                area: s.area,
                points: g.len() as u64,
            })
            .collect(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Points from an error matrix of counts (rows map, columns reference)
    /// whose strata are the map classes `codes`.
    pub(crate) fn points_of_matrix(codes: &[u16], counts: &[&[u64]]) -> Vec<SamplePoint> {
        let mut points = Vec::new();
        for (&m, row) in codes.iter().zip(counts) {
            for (&r, &n) in codes.iter().zip(row.iter()) {
                points.extend((0..n).map(|_| SamplePoint {
                    stratum: m,
                    map: m,
                    reference: r,
                }));
            }
        }
        points
    }

    /// Olofsson et al. (2014), section 5 and Table 8: strata = map classes
    /// 1 deforestation, 2 forest gain, 3 stable forest, 4 stable non-forest
    /// of 200,000, 150,000, 3,200,000 and 6,450,000 Landsat pixels (30 m:
    /// 0.09 ha), n = 75, 75, 165, 325.
    pub(crate) fn olofsson_2014() -> (Vec<Stratum>, Vec<SamplePoint>) {
        let pixels = [200_000u64, 150_000, 3_200_000, 6_450_000];
        let strata = (1..=4)
            .zip(pixels)
            .map(|(code, pixels)| Stratum {
                code,
                pixels,
                area: pixels as f64 * 0.09,
            })
            .collect();
        let points = points_of_matrix(
            &[1, 2, 3, 4],
            &[
                &[66, 0, 5, 4],
                &[0, 55, 8, 12],
                &[1, 0, 153, 11],
                &[2, 1, 9, 313],
            ],
        );
        (strata, points)
    }

    /// Stehman (2014), section 4's numerical example: 4 strata of 40,000,
    /// 30,000, 20,000 and 10,000 pixels, 10 points each, map and reference
    /// classes A–D (here 1–4) that differ from the strata.
    pub(crate) fn stehman_2014() -> (Vec<Stratum>, Vec<SamplePoint>) {
        let strata = [(1, 40_000u64), (2, 30_000), (3, 20_000), (4, 10_000)]
            .into_iter()
            .map(|(code, pixels)| Stratum {
                code,
                pixels,
                area: pixels as f64,
            })
            .collect();
        let map = "AAAAAAABBBABBBBBBBBBBBCCCCCCBBDDDDDDDDDD";
        let reference = "AAAAACBABCABBBBBAABBCCCCCDDBBADDDDDDDCCB";
        let code = |c: u8| u16::from(c - b'A' + 1);
        let points = map
            .bytes()
            .zip(reference.bytes())
            .enumerate()
            .map(|(i, (m, r))| SamplePoint {
                stratum: (i / 10 + 1) as u16,
                map: code(m),
                reference: code(r),
            })
            .collect();
        (strata, points)
    }

    fn round(v: f64, digits: i32) -> f64 {
        let k = 10f64.powi(digits);
        (v * k).round() / k
    }

    #[test]
    fn reproduces_olofsson_2014_example() {
        let (strata, points) = olofsson_2014();
        let a = assess(&strata, &points).unwrap();
        assert_eq!(a.points, 640);
        // Accuracies with their 95 % half-widths, as the paper prints them
        // (two decimals).
        let half = |e: &Estimate| round(Z95 * e.se, 2);
        assert_eq!(round(a.overall.value, 2), 0.95);
        assert_eq!(half(&a.overall), 0.02);
        let users: Vec<(f64, f64)> = a
            .classes
            .iter()
            .map(|c| c.users.unwrap())
            .map(|e| (round(e.value, 2), half(&e)))
            .collect();
        assert_eq!(
            users,
            [(0.88, 0.07), (0.73, 0.10), (0.93, 0.04), (0.96, 0.02)]
        );
        let producers: Vec<(f64, f64)> = a
            .classes
            .iter()
            .map(|c| c.producers.unwrap())
            .map(|e| (round(e.value, 2), half(&e)))
            .collect();
        assert_eq!(
            producers,
            [(0.75, 0.21), (0.85, 0.25), (0.93, 0.03), (0.96, 0.02)]
        );
        // Error-adjusted areas in hectares, to the hectare, and their 95 %
        // half-widths (the paper's rounding of the standard error moves
        // those by up to 2 ha).
        let areas: Vec<f64> = a.classes.iter().map(|c| c.area.value.round()).collect();
        assert_eq!(areas, [21_158.0, 11_686.0, 285_770.0, 581_386.0]);
        for (c, printed) in a.classes.iter().zip([6_158.0, 3_756.0, 15_510.0, 16_282.0]) {
            let h = Z95 * c.area.se;
            assert!((h - printed).abs() <= 2.0, "class {}: ±{h} ha", c.code);
        }
        // The matrix in area proportions, Table 9's cells.
        assert_eq!(round(a.matrix[0][0], 4), 0.0176);
        assert_eq!(round(a.matrix[3][3], 4), 0.6212);
        assert_eq!(round(a.matrix[2][3], 4), 0.0213);
        // The sample's own counts are kept beside.
        assert_eq!(a.counts[1], [0, 55, 8, 12]);
        assert_eq!(a.classes[0].sample_reference, 69);
        let d = a.disagreement.unwrap();
        assert!((d.quantity + d.allocation - (1.0 - a.overall.value)).abs() < 1e-12);
    }

    #[test]
    fn reproduces_stehman_2014_example() {
        let (strata, points) = stehman_2014();
        let a = assess(&strata, &points).unwrap();
        let c = &a.classes;
        // Section 4 of the paper, to its three decimals.
        assert_eq!(round(c[0].area_proportion.value, 3), 0.350);
        assert_eq!(round(c[2].area_proportion.value, 3), 0.200);
        assert_eq!(round(a.overall.value, 3), 0.630);
        assert_eq!(round(c[1].users.unwrap().value, 3), 0.574);
        assert_eq!(round(c[1].producers.unwrap().value, 3), 0.794);
        assert_eq!(round(a.matrix[1][2], 3), 0.080);
        assert_eq!(round(c[0].area_proportion.se, 3), 0.082);
        assert_eq!(round(c[2].area_proportion.se, 3), 0.064);
        assert_eq!(round(a.overall.se, 3), 0.085);
        assert_eq!(round(c[1].users.unwrap().se, 3), 0.125);
        assert_eq!(round(c[1].producers.unwrap().se, 3), 0.117);
        // Areas are proportions of the strata's total.
        assert!((c[0].area.value - 35_000.0).abs() < 1e-6);
        assert_eq!(a.strata[3].points, 10);
    }

    #[test]
    fn refuses_designs_the_estimators_cannot_use() {
        let s = |code, pixels| Stratum {
            code,
            pixels,
            area: pixels as f64,
        };
        let p = |stratum, map, reference| SamplePoint {
            stratum,
            map,
            reference,
        };
        let err = assess(&[s(1, 100), s(2, 100)], &[p(1, 1, 1), p(1, 1, 2)]).unwrap_err();
        assert!(
            err.cause()
                .contains("stratum 2 (100 pixels) has 0 sample points"),
            "{err}"
        );
        let err = assess(&[s(1, 100)], &[p(1, 1, 1), p(3, 3, 3)]).unwrap_err();
        assert!(err.cause().contains("stratum 3"), "{err}");
        assert!(assess(&[s(1, 100)], &[]).is_err());
        // A census of a one-pixel stratum is fine; an unsampled empty one too.
        let a = assess(
            &[s(1, 100), s(2, 1), s(3, 0)],
            &[p(1, 1, 1), p(1, 1, 2), p(2, 2, 2)],
        )
        .unwrap();
        assert_eq!(a.classes.len(), 2);
        assert_eq!(a.classes[1].users.unwrap().se, 0.0);
    }

    /// What `tests/accuracy/reference.py` (numpy, written from the papers
    /// apart from this module) computes for `strata` and `points`; `None`
    /// (test skipped) where Debian's python has no numpy, unless
    /// `MAPFILTER_REQUIRE_PYTHON_GDAL` says it must (as CI does).
    fn numpy_reference(strata: &[Stratum], points: &[SamplePoint]) -> Option<serde_json::Value> {
        use std::io::Write;
        use std::process::{Command, Stdio};
        const PYTHON: &str = "/usr/bin/python3";
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/accuracy/reference.py"
        );
        let has_numpy = Command::new(PYTHON)
            .args(["-c", "import numpy"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_numpy {
            assert!(
                std::env::var_os("MAPFILTER_REQUIRE_PYTHON_GDAL").is_none(),
                "MAPFILTER_REQUIRE_PYTHON_GDAL is set but {PYTHON} cannot import numpy"
            );
            eprintln!("skipping the numpy cross-check: apt-get install python3-numpy");
            return None;
        }
        let input = serde_json::json!({
            "strata": strata.iter().map(|s| (s.code, s.pixels)).collect::<Vec<_>>(),
            "points": points.iter().map(|p| [p.stratum, p.map, p.reference]).collect::<Vec<_>>(),
        });
        let mut child = Command::new(PYTHON)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the numpy reference");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(serde_json::from_slice(&out.stdout).unwrap())
    }

    fn assert_matches_numpy(strata: &[Stratum], points: &[SamplePoint]) {
        let Some(py) = numpy_reference(strata, points) else {
            return;
        };
        let a = assess(strata, points).unwrap();
        let close = |rust: f64, py: &serde_json::Value, what: &str| {
            let v = py.as_f64().unwrap_or(f64::NAN);
            assert!(
                (rust - v).abs() <= 1e-12 * v.abs().max(1.0),
                "{what}: {rust} vs numpy {v}"
            );
        };
        let codes: Vec<u64> = a.classes.iter().map(|c| u64::from(c.code)).collect();
        let py_codes: Vec<u64> = py["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(codes, py_codes);
        close(a.overall.value, &py["overall"][0], "overall");
        close(a.overall.se, &py["overall"][1], "overall se");
        for (k, c) in a.classes.iter().enumerate() {
            close(c.area_proportion.value, &py["area"][k][0], "area");
            close(c.area_proportion.se, &py["area"][k][1], "area se");
            for (e, key) in [(c.users, "users"), (c.producers, "producers")] {
                match e {
                    Some(e) => {
                        close(e.value, &py[key][k][0], key);
                        close(e.se, &py[key][k][1], key);
                    }
                    None => assert!(py[key][k][0].is_null(), "{key} of {}", c.code),
                }
            }
            for (j, v) in a.matrix[k].iter().enumerate() {
                close(*v, &py["matrix"][k][j], "matrix");
            }
        }
        let d = a.disagreement.unwrap();
        close(d.quantity, &py["quantity"], "quantity");
        close(d.allocation, &py["allocation"], "allocation");
    }

    /// Both papers' examples, and a design with more strata than classes
    /// and unequal pixel areas left out (numpy weights by pixels): the
    /// Rust estimators agree with the independent numpy ones to 1e-12.
    #[test]
    fn agrees_with_an_independent_numpy_implementation() {
        let (strata, points) = olofsson_2014();
        let strata: Vec<Stratum> = strata
            .into_iter()
            .map(|s| Stratum {
                area: s.pixels as f64,
                ..s
            })
            .collect();
        assert_matches_numpy(&strata, &points);
        let (strata, points) = stehman_2014();
        assert_matches_numpy(&strata, &points);
        // Six strata, five map classes, reference labels that mostly agree.
        let mut rng = super::super::draw::SplitMix64::new(37);
        let strata: Vec<Stratum> = (0..6u16)
            .map(|code| {
                let pixels = 50 + 100 * u64::from(code) * u64::from(code);
                Stratum {
                    code,
                    pixels,
                    area: pixels as f64,
                }
            })
            .collect();
        let points: Vec<SamplePoint> = strata
            .iter()
            .flat_map(|s| (0..12).map(move |_| s.code))
            .map(|stratum| {
                let map = (stratum + (rng.below(4) == 0) as u16) % 5;
                let reference = if rng.below(3) == 0 {
                    rng.below(5) as u16
                } else {
                    map
                };
                SamplePoint {
                    stratum,
                    map,
                    reference,
                }
            })
            .collect();
        assert_matches_numpy(&strata, &points);
    }
}
