//! Ops as the command line names them, and chains of ops run in one pass.
//!
//! Specs: `box:N`, `gaussian:SIGMA[:SIZE]`, `sharpen:3|5`, `kernel:PATH`,
//! `median:N`, `bilateral:SIGMA_D:SIGMA_R[:gray|luma|color]`, `scharr:N`,
//! `oil:RADIUS:LEVELS[:MIN:MAX]`, `pyrdown`, `pyrup`, `gray`, `ycbcr`,
//! `hsv`, `demosaic:PATTERN[:METHOD]`, `laplacian-level`, `laplacian-top`, `denoise:LEVELS:SD:SR` (level ops, which stand for one chain
//! per level, are [`super::levels`]'s). A [`Chain`] maps a
//! tile's output window back through its ops to the input window it needs
//! (grown by each op's radius, or mapped between resolutions by the pyramid
//! steps); run on a tile, each op's output window shrinks to what the next
//! op reads, and at the raster's edge the border mode re-pads every
//! intermediate, so a tiled chain equals the ops run one by one.

use super::bilateral::{Bilateral, Distance};
use super::border::{BorderMode, Win, pad};
use super::color::Color;
use super::conv::Conv;
use super::demosaic::Demosaic;
use super::denoise::Denoise;
use super::laplacian::{Detail, diff_nodata};
use super::median::Median;
use super::oil::Oil;
use super::pyramid::Pyr;
use super::scharr::Scharr;
use crate::bail;
use crate::error::{Error, Result, Setting};
use crate::pixel::{Bands, Pixel, Plane, SampleType};
use crate::with_bands;
use rayon::prelude::*;
use std::path::Path;
use std::str::FromStr;

/// One image op.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Conv(Conv),
    Median(Median),
    Bilateral(Bilateral),
    Scharr(Scharr),
    Oil(Oil),
    /// A change of resolution (`pyrdown`, `pyrup`).
    Pyr(Pyr),
    /// A colour conversion of the first three bands (`gray`, `ycbcr`, `hsv`).
    Color(Color),
    /// Bayer demosaicing of one band into R, G, B.
    Demosaic(Demosaic),
    /// A Laplacian pyramid level (`laplacian-level`, `laplacian-top`).
    Detail(Detail),
    /// Laplacian-pyramid bilateral denoising.
    Denoise(Denoise),
}

const OPS_HINT: &str = "ops: box:N, gaussian:SIGMA[:SIZE], sharpen:3|5, kernel:PATH, median:N, bilateral:SD:SR[:gray|luma|color], scharr:3|5|7|9, oil:R:LEVELS[:MIN:MAX], pyrdown, pyrup, gray, ycbcr, hsv, demosaic:RGGB|BGGR|GRBG|GBRG[:bilinear|ea|mhc], laplacian-level, laplacian-top, denoise:LEVELS:SD:SR";

/// The parameters of an op given as text (`NAME:P1:P2`), read with errors
/// that name the op.
struct OpArgs<'s> {
    spec: &'s str,
    args: &'s [&'s str],
}

impl OpArgs<'_> {
    /// Parameter `i` as a number.
    fn num(&self, i: usize) -> Result<f64> {
        let spec = self.spec;
        let s = self.args.get(i).ok_or_else(|| {
            Error::usage(format!("op '{spec}' lacks parameter {}", i + 1)).hint(OPS_HINT)
        })?;
        s.parse::<f64>()
            .map_err(|_| Error::usage(format!("op '{spec}': '{s}' is not a number")).hint(OPS_HINT))
    }

    /// Parameter `i` as a whole number.
    fn int(&self, i: usize) -> Result<usize> {
        let v = self.num(i)?;
        if v.fract() != 0.0 || v < 0.0 {
            bail!(
                usage,
                format!("op '{}': {v} is not a whole number", self.spec),
                hint = OPS_HINT
            );
        }
        Ok(v as usize)
    }

    /// Refuses more than `n` parameters.
    fn at_most(&self, n: usize) -> Result<()> {
        if self.args.len() > n {
            bail!(
                usage,
                format!("op '{}' has too many parameters", self.spec),
                hint = OPS_HINT
            );
        }
        Ok(())
    }
}

impl FromStr for Op {
    type Err = Error;
    fn from_str(spec: &str) -> Result<Self> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let args: Vec<&str> = if rest.is_empty() {
            vec![]
        } else {
            rest.split(':').collect()
        };
        let given = OpArgs { spec, args: &args };
        let op = match name {
            "box" | "blur" => {
                given.at_most(1)?;
                Op::Conv(Conv::boxed(given.int(0)?)?)
            }
            "gaussian" => {
                given.at_most(2)?;
                let size = if args.len() > 1 {
                    Some(given.int(1)?)
                } else {
                    None
                };
                Op::Conv(Conv::gaussian(given.num(0)?, size)?)
            }
            "sharpen" => {
                given.at_most(1)?;
                Op::Conv(Conv::sharpen(if args.is_empty() {
                    3
                } else {
                    given.int(0)?
                })?)
            }
            "kernel" => Op::Conv(Conv::from_file(Path::new(rest))?),
            "median" => {
                given.at_most(1)?;
                Op::Median(Median::new(given.int(0)?)?)
            }
            "scharr" => {
                given.at_most(1)?;
                Op::Scharr(Scharr::new(if args.is_empty() {
                    3
                } else {
                    given.int(0)?
                })?)
            }
            "bilateral" => {
                given.at_most(3)?;
                let distance = match args.get(2).copied() {
                    None | Some("gray") => Distance::Gray,
                    Some("luma") => Distance::Luma,
                    Some("color") => Distance::Color,
                    Some(other) => bail!(
                        usage,
                        format!("bilateral distance '{other}' is unknown"),
                        hint = "use gray, luma or color"
                    ),
                };
                Op::Bilateral(Bilateral::new(given.num(0)?, given.num(1)?, distance)?)
            }
            "oil" => {
                if args.len() != 2 && args.len() != 4 {
                    bail!(
                        usage,
                        format!("op '{spec}' needs RADIUS:LEVELS[:MIN:MAX]"),
                        hint = OPS_HINT
                    );
                }
                let range = if args.len() == 4 {
                    Some((given.num(2)?, given.num(3)?))
                } else {
                    None
                };
                Op::Oil(Oil::new(given.int(0)?, given.int(1)?, range)?)
            }
            "pyrdown" | "pyrup" => {
                given.at_most(0)?;
                Op::Pyr(if name == "pyrdown" {
                    Pyr::Down
                } else {
                    Pyr::Up
                })
            }
            "gray" | "ycbcr" | "hsv" => {
                given.at_most(0)?;
                Op::Color(match name {
                    "gray" => Color::Gray,
                    "ycbcr" => Color::YCbCr,
                    _ => Color::Hsv,
                })
            }
            "demosaic" => {
                if args.is_empty() || args.len() > 2 {
                    bail!(
                        usage,
                        format!("op '{spec}' needs PATTERN[:METHOD]"),
                        hint = OPS_HINT
                    );
                }
                Op::Demosaic(Demosaic::new(args[0], args.get(1).copied())?)
            }
            "laplacian-level" | "laplacian-top" => {
                given.at_most(0)?;
                Op::Detail(if name == "laplacian-level" {
                    Detail::Level
                } else {
                    Detail::Top
                })
            }
            "denoise" => {
                if args.len() != 3 {
                    bail!(
                        usage,
                        format!("op '{spec}' needs LEVELS:SD:SR"),
                        hint = OPS_HINT
                    );
                }
                Op::Denoise(Denoise::new(given.num(0)?, given.num(1)?, given.num(2)?)?)
            }
            _ => bail!(usage, format!("unknown op '{name}'"), hint = OPS_HINT),
        };
        Ok(op)
    }
}

impl Op {
    pub fn radius(&self) -> usize {
        match self {
            Op::Conv(c) => c.radius(),
            Op::Median(m) => m.radius(),
            Op::Bilateral(b) => b.radius,
            Op::Scharr(s) => s.radius(),
            Op::Oil(o) => o.radius,
            Op::Pyr(p) => p.radius(),
            Op::Color(_) => 0,
            Op::Demosaic(d) => d.radius(),
            Op::Detail(d) => d.radius(),
            Op::Denoise(d) => d.radius(),
        }
    }

    /// The pyramid step, for ops that change the resolution.
    pub fn resampling(&self) -> Option<Pyr> {
        match self {
            Op::Pyr(p) => Some(*p),
            _ => None,
        }
    }

    /// Output size for an input of `size`.
    pub fn out_size(&self, size: (usize, usize)) -> (usize, usize) {
        self.resampling().map_or(size, |p| p.out_size(size))
    }

    /// The input window (not clamped to the raster) that output window
    /// `target` reads.
    pub fn need(&self, target: Win) -> Win {
        match self.resampling() {
            Some(p) => p.need(target),
            None => target.grow(self.radius()),
        }
    }

    /// Bands out for `bands` in.
    pub fn out_bands(&self, bands: usize) -> usize {
        match self {
            Op::Scharr(_) => 2 * bands,
            Op::Color(c) => c.out_bands(),
            Op::Demosaic(_) => 3,
            _ => bands,
        }
    }

    /// Sample type out for `t` in.
    pub fn out_type(&self, t: SampleType) -> SampleType {
        match self {
            Op::Scharr(_) => SampleType::F32,
            Op::Detail(_) => super::laplacian::diff_type(t),
            _ => t,
        }
    }

    /// Nodata of the output for an input of type `t` with nodata `nd`: the
    /// same value where the type stays, else NaN (Float32) or −32768 (Int16).
    pub fn out_nodata(&self, t: SampleType, nd: Option<f64>) -> Option<f64> {
        let to = self.out_type(t);
        nd.map(|v| if to == t { v } else { diff_nodata(to) })
    }

    /// Refuses inputs the op cannot take.
    pub fn check(&self, bands: usize, t: SampleType) -> Result<()> {
        match self {
            Op::Bilateral(b) => b.check(bands),
            Op::Oil(o) => o.check(t),
            Op::Color(c) => c.check(bands, t),
            Op::Demosaic(d) => d.check(bands, t),
            _ => Ok(()),
        }
    }

    /// Whether the op reads its input window itself, mapping coordinates
    /// its own way (pyramid steps, demosaicing), instead of a padded copy.
    pub fn windowed(&self) -> bool {
        matches!(
            self,
            Op::Pyr(_) | Op::Demosaic(_) | Op::Detail(_) | Op::Denoise(_)
        )
    }

    /// A [`Op::windowed`] op on the host over `bands` (window `at.have` of
    /// an `at.image`-sized raster) into window `at.out`; `None` for other
    /// ops. `reference` forces the plain per-pixel path.
    pub fn apply_window(&self, bands: &Bands, at: &TileAt, reference: bool) -> Option<Bands> {
        let &TileAt {
            have,
            image,
            out: target,
            border,
            nd,
        } = at;
        Some(match self {
            Op::Pyr(p) if reference => {
                with_bands!(bands, q => Pixel::wrap(p.reference(q, have, image, target, border, nd)))
            }
            Op::Pyr(p) => {
                with_bands!(bands, q => Pixel::wrap(p.apply(q, have, image, target, border, nd)))
            }
            Op::Demosaic(d) => {
                with_bands!(bands, q => Pixel::wrap(d.apply(q, have, image, target, nd)))
            }
            Op::Detail(d) => with_bands!(bands, q => d.apply(q, have, image, target, border, nd)),
            Op::Denoise(d) => {
                with_bands!(bands, q => Pixel::wrap(d.apply(q, have, image, target, border)))
            }
            _ => return None,
        })
    }

    /// Runs the op on the host over bands padded by its radius (a windowed
    /// op takes the bands as the whole image, under reflect101).
    /// `reference` forces the plain per-pixel path; nodata always takes it.
    pub fn apply_host(&self, input: &Bands, nd: Option<f64>, reference: bool) -> Bands {
        with_bands!(input, p => self.apply_typed(p, nd.and_then(Pixel::from_f64_exact), reference))
    }

    fn apply_typed<T: Pixel>(&self, p: &[Plane<T>], nd: Option<T>, reference: bool) -> Bands {
        let plain = reference || nd.is_some();
        match self {
            Op::Conv(c) if plain => T::wrap(c.reference(p, nd)),
            Op::Conv(c) => T::wrap(c.fast(p)),
            Op::Median(m) if plain => T::wrap(m.reference(p, nd)),
            Op::Median(m) => T::wrap(m.fast(p)),
            Op::Scharr(s) if plain => Bands::F32(s.reference(p, nd)),
            Op::Scharr(s) => Bands::F32(s.fast(p)),
            Op::Bilateral(b) if plain => T::wrap(b.reference(p, nd)),
            Op::Bilateral(b) => T::wrap(b.fast(p)),
            Op::Oil(o) if plain => T::wrap(o.reference(p, nd)),
            Op::Oil(o) => T::wrap(o.fast(p)),
            Op::Color(c) if plain => T::wrap(c.reference(p, nd)),
            Op::Color(c) => T::wrap(c.fast(p)),
            Op::Pyr(_) | Op::Demosaic(_) | Op::Detail(_) | Op::Denoise(_) => {
                let size = p.first().map_or((0, 0), |b| (b.width, b.height));
                let all = Win::new(0, 0, size.0, size.1);
                let (ow, oh) = self.out_size(size);
                let nd = nd.map(|v| v.to_f32() as f64);
                let bands = T::wrap(p.to_vec());
                let out = Win::new(0, 0, ow, oh);
                let at = TileAt {
                    have: all,
                    image: size,
                    out,
                    border: BorderMode::Reflect101,
                    nd,
                };
                self.apply_window(&bands, &at, plain)
                    .expect("pyramid and demosaic ops apply on windows")
            }
        }
    }
}

/// The files the ops given as text read (`kernel:PATH`), so that no
/// output replaces one.
pub fn files_read(specs: &[String]) -> Vec<&Path> {
    specs
        .iter()
        .filter_map(|s| s.strip_prefix("kernel:"))
        .map(Path::new)
        .collect()
}

/// Runs one op over bands padded by its radius, given the input's nodata.
pub type OpStep<'a> = dyn FnMut(&Op, &Bands, Option<f64>) -> Result<Bands> + 'a;

/// Ops applied one after another in one pass over the raster.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    pub ops: Vec<Op>,
}

impl Chain {
    pub fn parse(specs: &[String]) -> Result<Self> {
        if specs.is_empty() {
            bail!(usage, "no op given", hint = OPS_HINT);
        }
        Ok(Chain {
            ops: specs.iter().map(|s| s.parse()).collect::<Result<_>>()?,
        })
    }

    /// The halo a tile needs: the sum of the ops' radii.
    pub fn radius(&self) -> usize {
        self.ops.iter().map(Op::radius).sum()
    }

    pub fn out_bands(&self, bands: usize) -> usize {
        self.ops.iter().fold(bands, |b, op| op.out_bands(b))
    }

    pub fn out_type(&self, t: SampleType) -> SampleType {
        self.ops.iter().fold(t, |t, op| op.out_type(t))
    }

    /// Nodata of the output: the input's, or what the ops changing the
    /// type made of it ([`Op::out_nodata`]).
    pub fn out_nodata(&self, t: SampleType, nd: Option<f64>) -> Option<f64> {
        self.ops
            .iter()
            .fold((t, nd), |(t, nd), op| {
                (op.out_type(t), op.out_nodata(t, nd))
            })
            .1
    }

    /// Checks every op against what reaches it.
    pub fn check(
        &self,
        bands: usize,
        t: SampleType,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Result<()> {
        if border == BorderMode::Nodata && nd.is_none() {
            bail!(
                usage,
                format!(
                    "{} needs a nodata value on the input",
                    Setting::Border.is("nodata")
                ),
                hint = format!(
                    "set one with gdal_edit.py -a_nodata VALUE, or use {}",
                    Setting::Border.is("replicate")
                )
            );
        }
        if nd.is_some() && self.ops.iter().any(|op| matches!(op, Op::Denoise(_))) {
            bail!(
                input,
                "denoise does not take rasters with a nodata value",
                hint = "fill the nodata pixels first (gdal_fillnodata.py), or unset it with gdal_edit.py -unsetnodata"
            );
        }
        let (mut b, mut ty) = (bands, t);
        for op in &self.ops {
            op.check(b, ty)?;
            b = op.out_bands(b);
            ty = op.out_type(ty);
        }
        Ok(())
    }

    /// The raster size before every op and after the last (`ops + 1` sizes).
    pub fn sizes(&self, image: (usize, usize)) -> Vec<(usize, usize)> {
        let mut sizes = vec![image];
        for op in &self.ops {
            sizes.push(op.out_size(sizes[sizes.len() - 1]));
        }
        sizes
    }

    /// The output size for an input of `image`.
    pub fn out_size(&self, image: (usize, usize)) -> (usize, usize) {
        self.ops.iter().fold(image, |s, op| op.out_size(s))
    }

    /// Whether any op changes the resolution.
    pub fn resamples(&self) -> bool {
        self.ops.iter().any(|op| op.resampling().is_some())
    }

    /// Each op with the window its output covers on the tile `at` and the
    /// size of its input raster: the tile's output mapped back through the
    /// ops after it (each one's [`Op::need`]), cut to that op's raster.
    pub fn steps(&self, at: &TileAt) -> Vec<Step<'_>> {
        let sizes = self.sizes(at.image);
        let mut target = at.out;
        let mut steps: Vec<Step> = Vec::with_capacity(self.ops.len());
        for (i, op) in self.ops.iter().enumerate().rev() {
            steps.push(Step {
                op,
                target,
                image: sizes[i],
            });
            target = op.need(target).clamp(sizes[i].0, sizes[i].1);
        }
        steps.reverse();
        steps
    }

    /// The input window that output window `out` needs: [`Chain::steps`]
    /// followed down to the input, cut to the `image` raster.
    pub fn source_window(&self, out: Win, image: (usize, usize)) -> Win {
        let sizes = self.sizes(image);
        self.ops
            .iter()
            .enumerate()
            .rev()
            .fold(out, |t, (i, op)| op.need(t).clamp(sizes[i].0, sizes[i].1))
    }

    /// The geotransform of the output given the input's: pixel sizes scaled
    /// and the origin moved by each pyramid step's [`Pyr::pixel_map`].
    pub fn geo_transform(&self, gt: [f64; 6]) -> [f64; 6] {
        self.ops.iter().filter_map(Op::resampling).fold(gt, |g, p| {
            let (s, o) = p.pixel_map();
            [
                g[0] + o * (g[1] + g[2]),
                g[1] * s,
                g[2] * s,
                g[3] + o * (g[4] + g[5]),
                g[4] * s,
                g[5] * s,
            ]
        })
    }

    /// Runs the chain on one tile with `step` (windowed ops run on the
    /// host, by their plain references): `input` holds window `at.have`.
    pub fn run_tile(&self, input: Bands, at: &TileAt, step: &mut OpStep) -> Result<Bands> {
        let (mut bands, mut have, mut nd) = (input, at.have, at.nd);
        for Step { op, target, image } in self.steps(at) {
            let in_type = bands.sample_type();
            let window = TileAt {
                have,
                image,
                out: target,
                border: at.border,
                nd,
            };
            if let Some(out) = op.apply_window(&bands, &window, true) {
                bands = out;
            } else {
                let want = target.grow(op.radius());
                let padded = pad_bands(&bands, have, image, want, at.border, nd);
                bands = step(op, &padded, nd)?;
            }
            nd = op.out_nodata(in_type, nd);
            have = target;
        }
        Ok(bands)
    }

    /// Runs the chain on a tile on the host.
    pub fn run_tile_host(&self, input: Bands, at: &TileAt, reference: bool) -> Bands {
        self.run_tile(input, at, &mut |op, b, nd| {
            Ok(op.apply_host(b, nd, reference))
        })
        .expect("host ops do not fail")
    }
}

/// One op of a chain on a tile: the window its output covers and the size
/// of the raster it reads.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    pub op: &'a Op,
    pub target: Win,
    pub image: (usize, usize),
}

/// Where a tile lies and what surrounds it: the input holds window `have`
/// of a raster of `image` size; the result covers `out` (in the chain's
/// output raster, whose size differs where the chain resamples).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileAt {
    pub have: Win,
    pub image: (usize, usize),
    pub out: Win,
    pub border: BorderMode,
    /// The input's nodata value.
    pub nd: Option<f64>,
}

/// Pads every band of `bands` to `want` (see [`pad`]), bands in parallel;
/// `nd` is the bands' nodata value.
pub fn pad_bands(
    bands: &Bands,
    have: Win,
    image: (usize, usize),
    want: Win,
    border: BorderMode,
    nd: Option<f64>,
) -> Bands {
    with_bands!(bands, p => Pixel::wrap(
        p.par_iter()
            .map(|q| pad(q, have, image, want, border, border.fill(nd)))
            .collect(),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    pub use crate::pixel::noise_planes;

    /// Planes padded by `r` with reflect101.
    pub fn padded<T: Pixel>(planes: Vec<Plane<T>>, r: usize) -> Vec<Plane<T>> {
        planes
            .iter()
            .map(|p| {
                let have = Win::new(0, 0, p.width, p.height);
                pad(
                    p,
                    have,
                    (p.width, p.height),
                    have.grow(r),
                    BorderMode::Reflect101,
                    T::default(),
                )
            })
            .collect()
    }

    #[test]
    fn parses_ops_and_radii() {
        let chain =
            Chain::parse(&["median:5".into(), "gaussian:1".into(), "scharr:3".into()]).unwrap();
        assert_eq!(chain.radius(), 2 + 3 + 1);
        assert_eq!(chain.out_bands(3), 6);
        assert_eq!(chain.out_type(SampleType::U8), SampleType::F32);
        assert_eq!(
            chain.out_nodata(SampleType::U8, Some(0.0)).map(f64::is_nan),
            Some(true)
        );
        for bad in [
            "median",
            "median:4",
            "box:x",
            "foo:3",
            "bilateral:1",
            "oil:3",
            "sharpen:3:1",
            "bilateral:1:2:hsv",
        ] {
            assert!(bad.parse::<Op>().is_err(), "{bad}");
        }
        assert!(Chain::parse(&[]).is_err());
        let chain = Chain::parse(&["box:3".into()]).unwrap();
        assert!(
            chain
                .check(1, SampleType::U8, BorderMode::Nodata, None)
                .is_err()
        );
    }
}
