//! Accuracy of a candidate class raster against a reference: the confusion
//! matrix, agreement, Cohen's kappa with quantity and allocation
//! disagreement beside it ([`crate::accuracy::Disagreement`]), per-class
//! precision/recall/IoU, area change per class in map units, and nodata
//! mismatches.
//!
//! Everything is computed streaming: [`compare`] reads both rasters strip by
//! strip through [`ClassSource`] windows (GDAL files, synthetic or in-memory
//! rasters alike), so memory is bounded by the strip size whatever the raster
//! size. Each strip's per-pixel mismatch codes ([`MISMATCH_EQUAL`] ...) are
//! handed to a visitor, which writes the mismatch raster or quick-look maps.
//! This module is GDAL-free.
//!
//! Conventions: rows of the confusion matrix are reference classes, columns
//! candidate classes. A pixel is *valid* in a raster when it is not that
//! raster's nodata code; only pixels valid in both enter the matrix, the rest
//! are counted as nodata mismatches (or as common nodata).

use crate::bail;
use crate::error::Result;
use crate::io::ClassSource;
use crate::pixel_area::PixelArea;
use serde::Serialize;
use tiles::Rect;

/// Mismatch raster value: both valid and equal.
pub const MISMATCH_EQUAL: u8 = 0;
/// Mismatch raster value: both valid, different classes.
pub const MISMATCH_DIFFERS: u8 = 1;
/// Mismatch raster value: nodata in exactly one of the two rasters.
pub const MISMATCH_NODATA: u8 = 2;
/// Mismatch raster value (and its nodata): nodata in both rasters.
pub const MISMATCH_BOTH_NODATA: u8 = 255;

/// Most distinct codes (reference and candidate together) a comparison handles.
pub const MAX_CODES: usize = 1024;

/// Pixels per strip read by [`compare`]: bounds its memory (5 bytes a pixel).
pub const STRIP_PIXELS: usize = 1 << 21;

const UNSEEN: u16 = u16::MAX;

/// A confusion matrix over class codes plus the nodata tallies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confusion {
    /// Class codes, ascending: the union of valid codes of both rasters.
    codes: Vec<u16>,
    /// `codes.len()²` counts, row = reference class, column = candidate class.
    counts: Vec<u64>,
    /// Per class: valid in the reference, nodata in the candidate.
    reference_only: Vec<u64>,
    /// Per class: valid in the candidate, nodata in the reference.
    candidate_only: Vec<u64>,
    /// Pixels nodata in both.
    both_nodata: u64,
}

impl Confusion {
    /// A matrix given directly (row-major, row = reference), without nodata.
    pub fn from_matrix(codes: Vec<u16>, counts: Vec<u64>) -> Result<Self> {
        let n = codes.len();
        if counts.len() != n * n {
            bail!(
                usage,
                format!(
                    "a confusion matrix over {n} classes needs {} counts, got {}",
                    n * n,
                    counts.len()
                )
            );
        }
        if codes.windows(2).any(|w| w[0] >= w[1]) {
            bail!(usage, "confusion matrix codes must be strictly ascending");
        }
        Ok(Confusion {
            counts,
            reference_only: vec![0; n],
            candidate_only: vec![0; n],
            both_nodata: 0,
            codes,
        })
    }

    pub fn codes(&self) -> &[u16] {
        &self.codes
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Pixels with reference class index `r` and candidate class index `c`.
    pub fn count(&self, r: usize, c: usize) -> u64 {
        self.counts[r * self.len() + c]
    }

    /// One row of the matrix (reference class index `r`).
    pub fn row(&self, r: usize) -> &[u64] {
        &self.counts[r * self.len()..(r + 1) * self.len()]
    }

    /// Pixels valid in both rasters.
    pub fn valid(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Pixels valid in both rasters and equal.
    pub fn equal(&self) -> u64 {
        (0..self.len()).map(|i| self.count(i, i)).sum()
    }

    /// Row sums: reference pixels per class (among pixels valid in both).
    pub fn reference_totals(&self) -> Vec<u64> {
        (0..self.len()).map(|r| self.row(r).iter().sum()).collect()
    }

    /// Column sums: candidate pixels per class (among pixels valid in both).
    pub fn candidate_totals(&self) -> Vec<u64> {
        let n = self.len();
        (0..n)
            .map(|c| (0..n).map(|r| self.count(r, c)).sum())
            .collect()
    }

    /// Pixels valid in the reference, nodata in the candidate.
    pub fn reference_only(&self) -> u64 {
        self.reference_only.iter().sum()
    }

    /// Pixels valid in the candidate, nodata in the reference.
    pub fn candidate_only(&self) -> u64 {
        self.candidate_only.iter().sum()
    }

    pub fn both_nodata(&self) -> u64 {
        self.both_nodata
    }

    /// Fraction of pixels valid in both that are equal (`None` when none is valid).
    pub fn agreement(&self) -> Option<f64> {
        let valid = self.valid();
        (valid > 0).then(|| self.equal() as f64 / valid as f64)
    }

    /// Cohen's kappa `(p_o − p_e) / (1 − p_e)` over pixels valid in both, with
    /// `p_e = Σ_i row_i·col_i / N²`. `None` when undefined (no valid pixel, or
    /// both rasters a single identical class, where `p_e = 1`).
    pub fn kappa(&self) -> Option<f64> {
        let n = self.valid() as f64;
        if n == 0.0 {
            return None;
        }
        let po = self.equal() as f64 / n;
        let pe: f64 = self
            .reference_totals()
            .iter()
            .zip(self.candidate_totals())
            .map(|(&r, c)| r as f64 * c as f64)
            .sum::<f64>()
            / (n * n);
        (pe < 1.0).then(|| (po - pe) / (1.0 - pe))
    }

    /// Quantity and allocation disagreement (Pontius & Millones 2011) over
    /// pixels valid in both; `None` when none is.
    pub fn disagreement(&self) -> Option<crate::accuracy::Disagreement> {
        crate::accuracy::Disagreement::of_counts(self.len(), &self.counts)
    }

    /// Per-class figures, by class index.
    pub fn class_stats(&self, i: usize) -> ClassStats {
        let tp = self.count(i, i);
        let row: u64 = self.row(i).iter().sum();
        let col: u64 = (0..self.len()).map(|r| self.count(r, i)).sum();
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        ClassStats {
            code: self.codes[i],
            agreeing: tp,
            reference_pixels: row + self.reference_only[i],
            candidate_pixels: col + self.candidate_only[i],
            precision: ratio(tp, col),
            recall: ratio(tp, row),
            iou: ratio(tp, row + col - tp),
        }
    }
}

/// Figures of one class.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassStats {
    pub code: u16,
    /// Pixels of this class in both rasters (the diagonal).
    pub agreeing: u64,
    /// Pixels of this class in the reference (including where the candidate is nodata).
    pub reference_pixels: u64,
    /// Pixels of this class in the candidate (including where the reference is nodata).
    pub candidate_pixels: u64,
    /// Of the candidate's pixels of this class (valid in both), the share the reference agrees with (user's accuracy).
    pub precision: Option<f64>,
    /// Of the reference's pixels of this class (valid in both), the share the candidate found (producer's accuracy).
    pub recall: Option<f64>,
    /// Intersection over union of the class's pixels (valid in both).
    pub iou: Option<f64>,
}

/// Accumulates a [`Confusion`] from pairs of code buffers.
#[derive(Clone, Debug)]
pub struct ConfusionBuilder {
    reference_nodata: Option<u16>,
    candidate_nodata: Option<u16>,
    /// Code → index in order of first appearance, [`UNSEEN`] otherwise.
    lut: Vec<u16>,
    codes: Vec<u16>,
    /// Row stride of `counts` (grows by doubling).
    cap: usize,
    counts: Vec<u64>,
    reference_only: Vec<u64>,
    candidate_only: Vec<u64>,
    both_nodata: u64,
}

impl ConfusionBuilder {
    pub fn new(reference_nodata: Option<u16>, candidate_nodata: Option<u16>) -> Self {
        let cap = 16;
        ConfusionBuilder {
            reference_nodata,
            candidate_nodata,
            lut: vec![UNSEEN; 1 << 16],
            codes: Vec::new(),
            cap,
            counts: vec![0; cap * cap],
            reference_only: vec![0; cap],
            candidate_only: vec![0; cap],
            both_nodata: 0,
        }
    }

    fn index(&mut self, code: u16) -> Result<usize> {
        let i = self.lut[code as usize];
        if i != UNSEEN {
            return Ok(i as usize);
        }
        let i = self.codes.len();
        if i >= MAX_CODES {
            bail!(
                input,
                format!("the two rasters hold more than {MAX_CODES} distinct class codes"),
                hint = "compare classified rasters (class codes), not continuous data"
            );
        }
        if i == self.cap {
            self.grow();
        }
        self.codes.push(code);
        self.lut[code as usize] = i as u16;
        Ok(i)
    }

    fn grow(&mut self) {
        let (old, cap) = (self.cap, self.cap * 2);
        let mut counts = vec![0; cap * cap];
        for r in 0..old {
            counts[r * cap..r * cap + old].copy_from_slice(&self.counts[r * old..(r + 1) * old]);
        }
        self.counts = counts;
        self.reference_only.resize(cap, 0);
        self.candidate_only.resize(cap, 0);
        self.cap = cap;
    }

    /// Adds co-located pixels and writes each one's mismatch code into `mismatch`.
    pub fn add(&mut self, reference: &[u16], candidate: &[u16], mismatch: &mut [u8]) -> Result<()> {
        assert!(reference.len() == candidate.len() && mismatch.len() == reference.len());
        for ((&r, &c), m) in reference.iter().zip(candidate).zip(mismatch.iter_mut()) {
            let r_valid = Some(r) != self.reference_nodata;
            let c_valid = Some(c) != self.candidate_nodata;
            *m = match (r_valid, c_valid) {
                (true, true) => {
                    let (i, j) = (self.index(r)?, self.index(c)?);
                    self.counts[i * self.cap + j] += 1;
                    if r == c {
                        MISMATCH_EQUAL
                    } else {
                        MISMATCH_DIFFERS
                    }
                }
                (true, false) => {
                    let i = self.index(r)?;
                    self.reference_only[i] += 1;
                    MISMATCH_NODATA
                }
                (false, true) => {
                    let j = self.index(c)?;
                    self.candidate_only[j] += 1;
                    MISMATCH_NODATA
                }
                (false, false) => {
                    self.both_nodata += 1;
                    MISMATCH_BOTH_NODATA
                }
            };
        }
        Ok(())
    }

    /// The matrix with codes in ascending order.
    pub fn finish(self) -> Confusion {
        let n = self.codes.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| self.codes[i]);
        let mut counts = Vec::with_capacity(n * n);
        for &r in &order {
            counts.extend(order.iter().map(|&c| self.counts[r * self.cap + c]));
        }
        Confusion {
            codes: order.iter().map(|&i| self.codes[i]).collect(),
            counts,
            reference_only: order.iter().map(|&i| self.reference_only[i]).collect(),
            candidate_only: order.iter().map(|&i| self.candidate_only[i]).collect(),
            both_nodata: self.both_nodata,
        }
    }
}

/// One strip of a comparison, as handed to the visitor of [`compare`].
pub struct Strip<'a> {
    /// The strip's window (full raster width).
    pub window: Rect,
    pub reference: &'a [u16],
    pub candidate: &'a [u16],
    /// Per pixel: [`MISMATCH_EQUAL`], [`MISMATCH_DIFFERS`], [`MISMATCH_NODATA`] or [`MISMATCH_BOTH_NODATA`].
    pub mismatch: &'a [u8],
}

/// Compares two equally sized class rasters strip by strip, calling `visit`
/// on every strip in order (top to bottom), and returns the confusion matrix.
pub fn compare(
    reference: &mut dyn ClassSource,
    candidate: &mut dyn ClassSource,
    reference_nodata: Option<u16>,
    candidate_nodata: Option<u16>,
    mut visit: impl FnMut(&Strip) -> Result<()>,
) -> Result<Confusion> {
    let (w, h) = reference.size();
    if candidate.size() != (w, h) {
        let (cw, ch) = candidate.size();
        bail!(
            input,
            format!("the rasters differ in size: {w}x{h} against {cw}x{ch}"),
            hint = "compare rasters of the same grid (the same size and georeferencing)"
        );
    }
    let rows = (STRIP_PIXELS / w.max(1)).clamp(1, h.max(1));
    let mut builder = ConfusionBuilder::new(reference_nodata, candidate_nodata);
    let (mut a, mut b, mut m) = (Vec::new(), Vec::new(), Vec::new());
    for y in (0..h).step_by(rows) {
        let window = Rect::new(0, y, w, rows.min(h - y));
        let n = window.area() as usize;
        a.resize(n, 0);
        b.resize(n, 0);
        m.resize(n, 0);
        reference.read(window, &mut a)?;
        candidate.read(window, &mut b)?;
        builder.add(&a, &b, &mut m)?;
        visit(&Strip {
            window,
            reference: &a,
            candidate: &b,
            mismatch: &m,
        })?;
    }
    Ok(builder.finish())
}

/// Per-class areas of pixels valid in both rasters where pixels differ in
/// area from row to row (geographic rasters), summed strip by strip.
#[derive(Clone, Debug)]
pub struct AreaTally {
    row_areas: Vec<f64>,
    reference: Vec<f64>,
    candidate: Vec<f64>,
}

impl AreaTally {
    /// A tally where `pixel_area` varies by row; `None` where a pixel count
    /// times one area is exact.
    pub fn new(pixel_area: &PixelArea) -> Option<Self> {
        (!pixel_area.row_areas.is_empty()).then(|| AreaTally {
            row_areas: pixel_area.row_areas.clone(),
            reference: vec![0.0; 1 << 16],
            candidate: vec![0.0; 1 << 16],
        })
    }

    pub fn add(&mut self, strip: &Strip) {
        let w = strip.window.width;
        for (r, y) in (strip.window.y..strip.window.y + strip.window.height).enumerate() {
            let area = self.row_areas.get(y).copied().unwrap_or(0.0);
            let span = r * w..(r + 1) * w;
            for ((&m, &a), &b) in strip.mismatch[span.clone()]
                .iter()
                .zip(&strip.reference[span.clone()])
                .zip(&strip.candidate[span])
            {
                if m == MISMATCH_EQUAL || m == MISMATCH_DIFFERS {
                    self.reference[a as usize] += area;
                    self.candidate[b as usize] += area;
                }
            }
        }
    }
}

/// The figures of a comparison, ready to serialise into reports.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub width: usize,
    pub height: usize,
    /// Pixels valid in both rasters.
    pub valid_pixels: u64,
    pub equal_pixels: u64,
    pub differing_pixels: u64,
    /// Percent of pixels valid in both that are equal.
    pub agreement_percent: Option<f64>,
    pub kappa: Option<f64>,
    /// Percent of pixels valid in both whose disagreement is due to the
    /// classes' amounts differing (Pontius & Millones 2011).
    pub quantity_disagreement_percent: Option<f64>,
    /// Percent of pixels valid in both whose disagreement is due to the
    /// classes' placement; quantity + allocation = 100 − agreement.
    pub allocation_disagreement_percent: Option<f64>,
    pub nodata: NodataSummary,
    pub pixel_area: PixelArea,
    pub classes: Vec<ClassSummary>,
    pub confusion: ConfusionTable,
}

/// Nodata mismatches.
#[derive(Clone, Debug, Serialize)]
pub struct NodataSummary {
    /// Valid in the reference, nodata in the candidate.
    pub reference_only: u64,
    /// Nodata in the reference, valid in the candidate.
    pub candidate_only: u64,
    /// Nodata in both.
    pub both: u64,
}

/// Per-class figures with areas.
#[derive(Clone, Debug, Serialize)]
pub struct ClassSummary {
    pub code: u16,
    pub name: Option<String>,
    pub reference_pixels: u64,
    pub candidate_pixels: u64,
    pub agreeing_pixels: u64,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub iou: Option<f64>,
    pub reference_area: f64,
    pub candidate_area: f64,
    /// Candidate area minus reference area, in `pixel_area.unit`.
    pub area_change: f64,
    /// Area change relative to the reference area, percent.
    pub area_change_percent: Option<f64>,
}

/// The matrix as codes plus rows (row = reference class).
#[derive(Clone, Debug, Serialize)]
pub struct ConfusionTable {
    pub codes: Vec<u16>,
    pub rows: Vec<Vec<u64>>,
}

impl Summary {
    /// Summarises `confusion`; `names` holds category names by code (may be empty).
    pub fn new(
        confusion: &Confusion,
        (width, height): (usize, usize),
        pixel_area: PixelArea,
        names: &[String],
    ) -> Self {
        let classes = (0..confusion.len())
            .map(|i| {
                let s = confusion.class_stats(i);
                let reference_area = s.reference_pixels as f64 * pixel_area.area;
                let candidate_area = s.candidate_pixels as f64 * pixel_area.area;
                let area_change = candidate_area - reference_area;
                ClassSummary {
                    code: s.code,
                    name: names
                        .get(s.code as usize)
                        .filter(|n| !n.trim().is_empty())
                        .cloned(),
                    reference_pixels: s.reference_pixels,
                    candidate_pixels: s.candidate_pixels,
                    agreeing_pixels: s.agreeing,
                    precision: s.precision,
                    recall: s.recall,
                    iou: s.iou,
                    reference_area,
                    candidate_area,
                    area_change,
                    area_change_percent: (reference_area > 0.0)
                        .then(|| 100.0 * area_change / reference_area),
                }
            })
            .collect();
        Summary {
            width,
            height,
            valid_pixels: confusion.valid(),
            equal_pixels: confusion.equal(),
            differing_pixels: confusion.valid() - confusion.equal(),
            agreement_percent: confusion.agreement().map(|a| 100.0 * a),
            kappa: confusion.kappa(),
            quantity_disagreement_percent: confusion.disagreement().map(|d| 100.0 * d.quantity),
            allocation_disagreement_percent: confusion.disagreement().map(|d| 100.0 * d.allocation),
            nodata: NodataSummary {
                reference_only: confusion.reference_only(),
                candidate_only: confusion.candidate_only(),
                both: confusion.both_nodata(),
            },
            pixel_area,
            classes,
            confusion: ConfusionTable {
                codes: confusion.codes().to_vec(),
                rows: (0..confusion.len())
                    .map(|r| confusion.row(r).to_vec())
                    .collect(),
            },
        }
    }

    /// The same with class areas from `tally` where there is one.
    pub fn with_areas(mut self, tally: Option<&AreaTally>) -> Self {
        if let Some(t) = tally {
            for c in &mut self.classes {
                c.reference_area = t.reference[c.code as usize];
                c.candidate_area = t.candidate[c.code as usize];
                c.area_change = c.candidate_area - c.reference_area;
                c.area_change_percent =
                    (c.reference_area > 0.0).then(|| 100.0 * c.area_change / c.reference_area);
            }
        }
        self
    }

    /// Pixels whose nodata status differs between the two rasters.
    pub fn nodata_mismatches(&self) -> u64 {
        self.nodata.reference_only + self.nodata.candidate_only
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemRaster;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Congalton, R. G. (1991), "A review of assessing the accuracy of
    /// classifications of remotely sensed data", Remote Sensing of Environment
    /// 37, 35–46, Table 1 (classes D, C, BA, SB; rows = classified data,
    /// columns = reference data): overall accuracy 321/434 = 74 %, KHAT = 0.65,
    /// producer's accuracies 65/75, 81/103, 85/115, 90/141, user's accuracies
    /// 65/115, 81/100, 85/115, 90/104. Our rows are the reference, so the
    /// published matrix is entered transposed.
    #[test]
    fn kappa_of_congalton_1991_error_matrix() {
        let classified_rows: [[u64; 4]; 4] = [
            [65, 4, 22, 24],
            [6, 81, 5, 8],
            [0, 11, 85, 19],
            [4, 7, 3, 90],
        ];
        let counts: Vec<u64> = (0..4)
            .flat_map(|r| classified_rows.iter().map(move |row| row[r]))
            .collect();
        let m = Confusion::from_matrix(vec![1, 2, 3, 4], counts).unwrap();
        assert_eq!(m.valid(), 434);
        assert_eq!(m.equal(), 321);
        assert!(close(m.agreement().unwrap(), 321.0 / 434.0, 1e-12));
        // p_e = (115·75 + 100·103 + 115·115 + 104·141) / 434² = 46814 / 188356.
        let pe = 46814.0 / 188356.0;
        let po = 321.0 / 434.0;
        let kappa = m.kappa().unwrap();
        assert!(close(kappa, (po - pe) / (1.0 - pe), 1e-12));
        assert!(close(kappa, 0.65, 0.005), "{kappa}");
        let producers = [65.0 / 75.0, 81.0 / 103.0, 85.0 / 115.0, 90.0 / 141.0];
        let users = [65.0 / 115.0, 81.0 / 100.0, 85.0 / 115.0, 90.0 / 104.0];
        for i in 0..4 {
            let s = m.class_stats(i);
            assert!(close(s.recall.unwrap(), producers[i], 1e-12));
            assert!(close(s.precision.unwrap(), users[i], 1e-12));
        }
    }

    /// The worked example of Cohen's kappa on Wikipedia ("Cohen's kappa",
    /// simple example): 50 proposals, both readers yes 20, A yes/B no 5,
    /// A no/B yes 10, both no 15: p_o = 0.7, p_e = 0.5, κ = 0.4.
    #[test]
    fn kappa_of_two_reader_example() {
        let m = Confusion::from_matrix(vec![0, 1], vec![20, 5, 10, 15]).unwrap();
        assert!(close(m.agreement().unwrap(), 0.7, 1e-12));
        assert!(close(m.kappa().unwrap(), 0.4, 1e-12));
    }

    #[test]
    fn kappa_undefined_and_perfect() {
        let one = Confusion::from_matrix(vec![5], vec![9]).unwrap();
        assert_eq!(one.kappa(), None);
        assert_eq!(one.agreement(), Some(1.0));
        let perfect = Confusion::from_matrix(vec![1, 2], vec![3, 0, 0, 7]).unwrap();
        assert!(close(perfect.kappa().unwrap(), 1.0, 1e-12));
        let empty = Confusion::from_matrix(vec![], vec![]).unwrap();
        assert_eq!(empty.kappa(), None);
        assert_eq!(empty.agreement(), None);
        assert!(Confusion::from_matrix(vec![1, 2], vec![1]).is_err());
    }

    /// A 4×3 pair computed by hand (nodata 0 in the reference, 9 in the candidate):
    ///
    /// ```text
    /// reference   candidate   mismatch
    /// 1 1 2       1 2 2       0 1 0
    /// 2 0 3       2 3 9       0 2 2
    /// 0 3 3       9 3 1       255 0 1
    /// 1 2 3       1 2 3       0 0 0
    /// ```
    /// Valid in both: 9 pixels, 7 equal. Matrix over codes 1, 2, 3
    /// (rows reference): [[2,1,0],[0,3,0],[1,0,2]] — the nine valid pairs are
    /// (1,1)(1,2)(2,2)(2,2)(3,3)(3,1)(1,1)(2,2)(3,3).
    /// Reference-only valid: the 3 at (2,1) → candidate 9. Candidate-only: the 3 at (1,1).
    #[test]
    fn hand_computed_pair_with_nodata() {
        let reference = MemRaster::new(3, 4, vec![1, 1, 2, 2, 0, 3, 0, 3, 3, 1, 2, 3]);
        let candidate = MemRaster::new(3, 4, vec![1, 2, 2, 2, 3, 9, 9, 3, 1, 1, 2, 3]);
        let mut mismatch = Vec::new();
        let m = compare(
            &mut reference.clone(),
            &mut candidate.clone(),
            Some(0),
            Some(9),
            |s| {
                mismatch.extend_from_slice(s.mismatch);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(mismatch, vec![0, 1, 0, 0, 2, 2, 255, 0, 1, 0, 0, 0]);
        assert_eq!(m.codes(), &[1, 2, 3]);
        assert_eq!(m.row(0), &[2, 1, 0]);
        assert_eq!(m.row(1), &[0, 3, 0]);
        assert_eq!(m.row(2), &[1, 0, 2]);
        assert_eq!((m.valid(), m.equal()), (9, 7));
        assert_eq!(
            (m.reference_only(), m.candidate_only(), m.both_nodata()),
            (1, 1, 1)
        );
        // Class 3: reference 3 valid-in-both + 1 reference-only = 4 pixels;
        // candidate 2 + 1 candidate-only = 3. Precision 2/2, recall 2/3, IoU 2/3.
        let s = m.class_stats(2);
        assert_eq!(
            (s.reference_pixels, s.candidate_pixels, s.agreeing),
            (4, 3, 2)
        );
        assert_eq!(s.precision, Some(1.0));
        assert!(close(s.recall.unwrap(), 2.0 / 3.0, 1e-12));
        assert!(close(s.iou.unwrap(), 2.0 / 3.0, 1e-12));
        // κ: p_o = 7/9; row totals 3,3,3, column totals 3,4,2 → p_e = 27/81.
        let pe = 27.0 / 81.0;
        assert!(close(
            m.kappa().unwrap(),
            (7.0 / 9.0 - pe) / (1.0 - pe),
            1e-12
        ));

        // 30 m pixels: 900 m² each; class 3 loses one pixel.
        let gt = [500000.0, 30.0, 0.0, 4e6, 0.0, -30.0];
        let area = PixelArea::from_geotransform(Some(gt), Some("metre"));
        let summary = Summary::new(&m, (3, 4), area, &[]);
        assert_eq!(summary.pixel_area.unit, "m²");
        let c3 = &summary.classes[2];
        assert_eq!((c3.reference_area, c3.candidate_area), (3600.0, 2700.0));
        assert_eq!(c3.area_change, -900.0);
        assert!(close(c3.area_change_percent.unwrap(), -25.0, 1e-12));
        assert_eq!(summary.nodata_mismatches(), 2);
        assert_eq!(summary.differing_pixels, 2);
    }

    /// Streaming over strips gives the same matrix as one pass, and code
    /// growth past the initial capacity keeps counts in place.
    #[test]
    fn strips_and_many_codes_agree_with_direct_count() {
        let (w, h) = (1500, 1600); // > STRIP_PIXELS: several strips
        let reference: Vec<u16> = (0..w * h).map(|i| ((i * 7) % 40) as u16).collect();
        let candidate: Vec<u16> = (0..w * h).map(|i| ((i * 7 + i / 3) % 40) as u16).collect();
        let mut strips = 0;
        let m = compare(
            &mut MemRaster::new(w, h, reference.clone()),
            &mut MemRaster::new(w, h, candidate.clone()),
            None,
            None,
            |_| {
                strips += 1;
                Ok(())
            },
        )
        .unwrap();
        assert!(strips > 1);
        let mut direct = vec![0u64; 40 * 40];
        for (&r, &c) in reference.iter().zip(&candidate) {
            direct[r as usize * 40 + c as usize] += 1;
        }
        assert_eq!(m.codes(), (0..40).collect::<Vec<u16>>());
        assert_eq!(m.counts, direct);
    }

    #[test]
    fn size_mismatch_is_an_error() {
        let e = compare(
            &mut MemRaster::filled(3, 3, 1),
            &mut MemRaster::filled(3, 4, 1),
            None,
            None,
            |_| Ok(()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("3x3 against 3x4"), "{e}");
    }
}
