//! Smoothing a code plane that lies in memory (a Python array, a caller's
//! buffer) without GDAL: [`PlaneSpec`] says how, [`smooth_plane`] runs the
//! engine on the plane in place and returns the output plane. The class
//! table, the output's nodata and the job are decided as `smooth` decides
//! them for a file of the same codes ([`with_policy_codes`] is shared with
//! `mapfilter::job::smooth`), so the pixels equal the CLI's on the same data.

use crate::classes::{ClassTable, ClassWeights};
use crate::engine::{self, RunStats, SmoothJob};
use crate::error::Result;
use crate::io::{ClassSource, MemRaster};
use crate::kernel::Kernel;
use crate::method::ClassSmoother;
use crate::method::policy::{self, Policies};
use crate::progress::Progress;
use tiles::{Border, Rect};

/// How to smooth a plane: `smooth`'s settings that name no file.
#[derive(Clone, Debug)]
pub struct PlaneSpec {
    pub kernel: Kernel,
    pub weights: ClassWeights,
    pub border: Border,
    pub fill_nodata: bool,
    /// The engine's tile side; `None`: the method's default.
    pub tile: Option<usize>,
    pub policies: Policies,
    /// The code of pixels that are no class (a file's nodata value).
    pub nodata: Option<u16>,
    /// The classes, decided by the caller (e.g. once for all the chunks
    /// of one raster, as `batch` decides them for its windows, so that
    /// class weights and the output's nodata are the same in every chunk);
    /// `None`: the codes of the plane. Codes of the plane not among them
    /// are no class.
    pub classes: Option<Vec<u16>>,
    /// The largest code the plane's type holds (255 for bytes, 65535 for
    /// wider types): without nodata, "no class" is written as the largest
    /// free code up to it, as in a file of that type.
    pub max_code: u16,
    /// Each pixel's vote weight, quantised ([`crate::confidence`]), on the
    /// plane's grid (`smooth --confidence`).
    pub confidence: Option<Vec<u16>>,
}

/// A row-major plane of codes borrowed from its owner, as a source the
/// engine stages tiles from in place (no copy of the whole plane).
#[derive(Clone, Copy)]
pub struct PlaneView<'a> {
    width: usize,
    height: usize,
    codes: &'a [u16],
}

impl<'a> PlaneView<'a> {
    /// `codes` holds `width` × `height` values, row-major.
    pub fn new(codes: &'a [u16], width: usize, height: usize) -> Result<Self> {
        if width.checked_mul(height) != Some(codes.len()) {
            crate::bail!(
                usage,
                format!("{} codes do not make a {width}x{height} plane", codes.len()),
                hint = "give width × height codes, row-major"
            );
        }
        Ok(PlaneView {
            width,
            height,
            codes,
        })
    }
}

impl ClassSource for PlaneView<'_> {
    fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    fn resident(&self) -> Option<&[u16]> {
        Some(self.codes)
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        for (row, dst) in buf.chunks_exact_mut(w.width.max(1)).enumerate() {
            let start = (w.y + row) * self.width + w.x;
            dst.copy_from_slice(&self.codes[start..start + w.width]);
        }
        Ok(())
    }
}

/// The class table with the codes the policies write that the input may
/// lack (`--ties undecided:CODE`: a later pass reads it, and the output's
/// nodata must not be it).
pub fn with_policy_codes(
    classes: ClassTable,
    policies: &Policies,
    max_code: u16,
) -> Result<ClassTable> {
    match policies.ties.undecided() {
        Some(code) => classes.with_code(code, max_code),
        None => Ok(classes),
    }
}

/// Smooths `plane` by `spec` with `method`: the output plane (the input's
/// size, or cropped by the halo with [`Border::Valid`]), the job as run,
/// and the run's figures.
pub fn smooth_plane(
    plane: &PlaneView,
    spec: &PlaneSpec,
    method: &dyn ClassSmoother,
) -> Result<(MemRaster, SmoothJob, RunStats)> {
    spec.policies.check()?;
    policy::check_method(&spec.policies, method.is_exact(), &method.name())?;
    spec.policies.check_nodata(spec.nodata)?;
    if let Some(code) = plane.codes.iter().copied().find(|&c| c > spec.max_code) {
        crate::bail!(
            usage,
            format!(
                "code {code} does not fit the plane's type (codes 0..={})",
                spec.max_code
            ),
            hint = "give codes the plane's type holds"
        );
    }
    let classes =
        ClassTable::from_codes(spec.classes.as_deref().unwrap_or(plane.codes), spec.nodata)?;
    let classes = with_policy_codes(classes, &spec.policies, spec.max_code)?;
    let output_nodata = classes.output_nodata(spec.max_code);
    let job = SmoothJob {
        class_weights: spec.weights.quantise(&classes),
        output_nodata,
        kernel: spec.kernel.clone(),
        classes,
        border: spec.border,
        fill_nodata: spec.fill_nodata,
        tile: spec.tile.unwrap_or_else(|| engine::default_tile(method)),
        policies: spec.policies.clone(),
    };
    let (ow, oh) = job.grid(plane.width, plane.height)?.output_size();
    let mut out = MemRaster::filled(ow, oh, 0);
    let mut votes = spec
        .confidence
        .as_ref()
        .map(|weights| MemRaster::new(plane.width, plane.height, weights.clone()));
    if let Some(v) = &votes
        && v.data.len() != plane.codes.len()
    {
        crate::bail!(
            usage,
            format!(
                "{} confidences for a {}x{} plane",
                v.data.len(),
                plane.width,
                plane.height
            ),
            hint = "give one confidence per pixel, on the codes' grid"
        );
    }
    let stats = engine::smooth_weighted(
        &mut plane.clone(),
        votes.as_mut().map(|v| v as &mut dyn crate::io::ClassSource),
        &mut out,
        &job,
        method,
        &Progress::hidden(),
    )?;
    Ok((out, job, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::naive::NaiveHost;

    fn spec(nodata: Option<u16>, max_code: u16) -> PlaneSpec {
        PlaneSpec {
            kernel: "box:3".parse::<KernelSpec>().unwrap().build().unwrap(),
            weights: ClassWeights::default(),
            border: Border::Same,
            fill_nodata: false,
            tile: None,
            policies: Policies::default(),
            nodata,
            classes: None,
            max_code,
            confidence: None,
        }
    }

    #[test]
    fn a_plane_smooths_as_the_engine_does_in_memory() {
        // A lone 2 in a field of 1s goes; the 3x3 corner of 3s stays.
        #[rustfmt::skip]
        let codes = vec![
            1, 1, 1, 1, 3,
            1, 2, 1, 3, 3,
            1, 1, 1, 3, 3,
        ];
        let plane = PlaneView::new(&codes, 5, 3).unwrap();
        let (out, job, _) = smooth_plane(&plane, &spec(None, 255), &NaiveHost).unwrap();
        let reference =
            engine::smooth_in_memory(&MemRaster::new(5, 3, codes.clone()), &job, &NaiveHost)
                .unwrap();
        assert_eq!(out, reference);
        assert_eq!(out.data[6], 1);
        assert_eq!(job.classes.codes(), &[1, 2, 3]);
        // No nodata: "no class" is the largest free code of the type.
        assert_eq!(job.output_nodata, Some(255));
    }

    #[test]
    fn given_classes_decide_the_output_nodata() {
        // Without nodata, "no class" is the largest code that is no class:
        // of the classes given, not of the plane's codes.
        let codes = vec![1, 1, 2, 2];
        let plane = PlaneView::new(&codes, 2, 2).unwrap();
        let given = PlaneSpec {
            classes: Some(vec![1, 2, 255]),
            ..spec(None, 255)
        };
        let (_, job, _) = smooth_plane(&plane, &given, &NaiveHost).unwrap();
        assert_eq!(job.output_nodata, Some(254));
    }

    #[test]
    fn codes_beyond_the_type_are_refused() {
        let codes = vec![1, 300];
        let plane = PlaneView::new(&codes, 2, 1).unwrap();
        let err = smooth_plane(&plane, &spec(None, 255), &NaiveHost).unwrap_err();
        assert!(err.to_string().contains("code 300"), "{err}");
    }

    #[test]
    fn a_plane_of_the_wrong_length_is_refused() {
        assert!(PlaneView::new(&[1, 2, 3], 2, 2).is_err());
    }
}
