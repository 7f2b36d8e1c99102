//! A Gaussian pyramid or a scale space built on an OpenCL device, level by
//! level from the one before, so that the base goes up once and every level
//! stays on the device for the filters run over it
//! ([`super::pyramid_store`]).
//!
//! `pyrdown` (the tile kernel of `filter_pyramid.cl` on whole levels, twin
//! [`crate::filter::pyramid::Pyr`]) makes octave o + 1 from octave o, and
//! each scale's Gaussian blurs an octave in two passes
//! (`kernels/pyramid_build.cl`), as the host's fast separable paths do
//! (twins [`crate::filter::conv::Fixed256`] for Byte,
//! [`crate::filter::conv::F32Sep`] for the other types). The host's level
//! chain for (o, s) is `pyrdown` o times then `gaussian:σ`, each op on the
//! whole previous result with the border re-applied
//! ([`crate::filter::levels`]), which is what these launches compute; so
//! each level holds the bits of `filter --device host`. (The tile path's
//! device `conv` sums the 2-D window as the plain host reference does, which
//! for Gaussians differs from the fast paths in the last bits.) Octaves are
//! built once, not once per level that needs them.

use super::{Geo, LOCAL, compile, geo_args, round_to, tile_options};
use crate::bail;
use crate::device::{
    Args, Buffer, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, Device, Event, Queue, event_ns,
};
use crate::error::{Result, Setting};
use crate::filter::border::{BorderMode, Win};
use crate::filter::conv::Conv;
use crate::filter::levels::Levels;
use crate::filter::pyramid::Pyr;
use crate::pixel::{Pixel, Plane, SampleType};

/// What to build: how many octaves (each `pyrdown` of the one before, the
/// first the base) and each level's octave and blur.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildPlan {
    pub octaves: usize,
    /// Level k: (its octave, its Gaussian, none for the octave itself).
    pub levels: Vec<(usize, Option<Conv>)>,
}

impl BuildPlan {
    /// The plan of a level op with nothing before it; `None` for the
    /// Laplacian pyramid, whose levels are differences (the tile path runs it).
    pub fn of(levels: &Levels) -> Result<Option<BuildPlan>> {
        Ok(match *levels {
            Levels::Gaussian { levels } => Some(BuildPlan {
                octaves: levels,
                levels: (0..levels).map(|k| (k, None)).collect(),
            }),
            Levels::ScaleSpace {
                octaves,
                scales,
                sigma0,
            } => {
                let mut out = Vec::with_capacity(octaves * scales);
                for o in 0..octaves {
                    for s in 0..scales {
                        out.push((
                            o,
                            Some(Conv::gaussian(Levels::sigma(sigma0, s, scales), None)?),
                        ));
                    }
                }
                Some(BuildPlan {
                    octaves,
                    levels: out,
                })
            }
            Levels::Laplacian { .. } => None,
        })
    }

    /// Each level's size for a base of `size`.
    pub fn sizes(&self, size: (usize, usize)) -> Vec<(usize, usize)> {
        let octaves = self.octave_sizes(size);
        self.levels.iter().map(|&(o, _)| octaves[o]).collect()
    }

    fn octave_sizes(&self, size: (usize, usize)) -> Vec<(usize, usize)> {
        std::iter::successors(Some(size), |&s| Some(Pyr::Down.out_size(s)))
            .take(self.octaves)
            .collect()
    }
}

/// A pyramid's levels in device buffers (one per level, rows unpadded), with
/// the profiled time of the kernels that made them.
pub struct BuiltLevels<T> {
    pub levels: Vec<Buffer<T>>,
    pub sizes: Vec<(usize, usize)>,
    pub kernel_ns: u64,
}

impl<T: Pixel> BuiltLevels<T> {
    /// Level `k` downloaded.
    pub fn download(&self, dev: &Device, k: usize) -> Result<Plane<T>> {
        let (w, h) = self.sizes[k];
        let mut data = vec![T::default(); w * h];
        dev.download(&self.levels[k], &mut data)?;
        Ok(Plane::new(w, h, data))
    }
}

/// Builds `plan`'s levels from `base` on `dev` (no nodata; `border` as the
/// host's ops see beyond each level's edge) and waits for them.
pub fn build<T: Pixel>(
    dev: &Device,
    plan: &BuildPlan,
    base: &Plane<T>,
    border: BorderMode,
) -> Result<BuiltLevels<T>> {
    if border == BorderMode::Nodata {
        bail!(
            usage,
            "the device pyramid has no nodata border",
            hint = format!(
                "use {}, replicate or constant",
                Setting::Border.is("reflect101")
            )
        );
    }
    let t = T::TYPE;
    let fill = match border {
        BorderMode::Constant(v) => round_to(t, v as f32),
        _ => 0.0,
    };
    let sizes = plan.octave_sizes((base.width, base.height));
    let mut events: Vec<Event> = Vec::new();
    let mut octaves: Vec<Buffer<T>> = Vec::with_capacity(plan.octaves);
    octaves.push(dev.buffer_from(&base.data, CL_MEM_READ_WRITE)?);
    if plan.octaves > 1 {
        let opts = tile_options(t, t, Pyr::Down.radius(), border, None, 1);
        let k = compile(
            dev,
            "filter_pyramid",
            "filter_pyramid",
            "pyrdown",
            "",
            &opts,
        )?;
        for o in 1..plan.octaves {
            let (w, h) = sizes[o];
            let dst = dev.buffer::<T>(w * h, CL_MEM_READ_WRITE)?;
            let geo = Geo {
                have: whole(sizes[o - 1]),
                image: sizes[o - 1],
                out: whole((w, h)),
            };
            geo_args(Args::new(&k).mem(&octaves[o - 1]).mem(&dst), geo, fill).done()?;
            events.push(launch(dev, &k, (w, h))?);
            octaves.push(dst);
        }
    }
    let mut levels = Vec::with_capacity(plan.levels.len());
    let mut consts = Vec::new();
    let mut level_sizes = Vec::with_capacity(plan.levels.len());
    let mut octaves: Vec<Option<Buffer<T>>> = octaves.into_iter().map(Some).collect();
    for (o, conv) in &plan.levels {
        let size = sizes[*o];
        level_sizes.push(size);
        let Some(conv) = conv else {
            // The octave itself is the level (a Gaussian pyramid: each once).
            match octaves[*o].take() {
                Some(b) => levels.push(b),
                None => bail!(
                    internal,
                    "a device pyramid level is taken twice",
                    hint = "this is a bug: please report it"
                ),
            }
            continue;
        };
        let src = octaves[*o]
            .as_ref()
            .expect("octaves are taken only by plain levels");
        let (dst, mut held) = blur(dev, conv, src, size, border, fill, &mut events)?;
        levels.push(dst);
        // Kept until the final wait: the launches read them.
        consts.append(&mut held);
    }
    dev.finish()?;
    drop(consts);
    Ok(BuiltLevels {
        levels,
        sizes: level_sizes,
        kernel_ns: events.iter().map(event_ns).sum(),
    })
}

/// Memory a launch reads, kept until the device is waited for.
enum Held {
    U32(Buffer<u32>),
    F32(Buffer<f32>),
}

/// Enqueues the Gaussian `conv` of one whole level (`src`, `size`) as the
/// host's fast path computes it (`kernels/pyramid_build.cl`): its output
/// and the buffers the launches read.
fn blur<T: Pixel>(
    dev: &Device,
    conv: &Conv,
    src: &Buffer<T>,
    (w, h): (usize, usize),
    border: BorderMode,
    fill: f32,
    events: &mut Vec<Event>,
) -> Result<(Buffer<T>, Vec<Held>)> {
    let Some((row, col)) = &conv.separable else {
        bail!(
            internal,
            "the device scale space blurs with separable Gaussians only",
            hint = "this is a bug: please report it"
        );
    };
    let fixed = match T::TYPE {
        SampleType::U8 => conv.fixed_256(),
        _ => None,
    };
    let opts = tile_options(T::TYPE, T::TYPE, conv.radius(), border, None, 1)
        .define("N", conv.size)
        .define("FIXED", fixed.is_some() as u8);
    let rows = compile(
        dev,
        "pyramid_build",
        "pyramid_build",
        "gauss_rows",
        "",
        &opts,
    )?;
    let cols = compile(
        dev,
        "pyramid_build",
        "pyramid_build",
        "gauss_cols",
        "",
        &opts,
    )?;
    let dst = dev.buffer::<T>(w * h, CL_MEM_READ_WRITE)?;
    let (wr, wc, mid) = match fixed {
        Some((r, c)) => {
            let wide = |v: &[u16]| v.iter().map(|&x| x as u32).collect::<Vec<_>>();
            (
                Held::U32(dev.buffer_from(&wide(&r), CL_MEM_READ_ONLY)?),
                Held::U32(dev.buffer_from(&wide(&c), CL_MEM_READ_ONLY)?),
                Held::U32(dev.buffer::<u32>(w * h, CL_MEM_READ_WRITE)?),
            )
        }
        None => (
            Held::F32(dev.buffer_from(row, CL_MEM_READ_ONLY)?),
            Held::F32(dev.buffer_from(col, CL_MEM_READ_ONLY)?),
            Held::F32(dev.buffer::<f32>(w * h, CL_MEM_READ_WRITE)?),
        ),
    };
    let a = Args::new(&rows).mem(src);
    let a = mem(a, &mid).scalar(w as i32).scalar(h as i32);
    mem(a, &wr).scalar(fill).done()?;
    events.push(launch(dev, &rows, (w, h))?);
    let a = mem(Args::new(&cols).mem(src), &mid).mem(&dst);
    let a = mem(mem(a.scalar(w as i32).scalar(h as i32), &wr), &wc);
    a.scalar(conv.scale).scalar(fill).done()?;
    events.push(launch(dev, &cols, (w, h))?);
    Ok((dst, vec![wr, wc, mid]))
}

/// `a` with `h` as its next argument.
fn mem<'k>(a: Args<'k>, h: &Held) -> Args<'k> {
    match h {
        Held::U32(b) => a.mem(b),
        Held::F32(b) => a.mem(b),
    }
}

fn whole((w, h): (usize, usize)) -> Win {
    Win::new(0, 0, w, h)
}

fn launch(dev: &Device, k: &crate::device::Kernel, (w, h): (usize, usize)) -> Result<Event> {
    dev.launch(Queue::Compute, k, &[w, h, 1], Some(&[LOCAL, LOCAL, 1]), &[])
}
