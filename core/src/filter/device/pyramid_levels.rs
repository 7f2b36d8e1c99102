//! A level op (Gaussian pyramid or scale space, optionally followed by
//! `scharr:N`) run as one device job: every band's levels are built on the
//! device ([`super::pyramid_build`]), held in a pyramid storage
//! ([`super::pyramid_store`]), Scharr runs over all of them from there, and
//! each level comes down once, whole. The tile path runs the same ops level
//! by level ([`crate::filter::levels`]); both give the same bits.

use super::pyramid_build::{self, BuildPlan};
use super::pyramid_store::{DevicePyramid, Store};
use crate::device::Device;
use crate::error::Result;
use crate::filter::BorderMode;
use crate::filter::levels::Levels;
use crate::filter::op::Op;
use crate::filter::scharr::Scharr;
use crate::pixel::{Bands, Pixel, Plane};
use std::time::{Duration, Instant};

/// A level job the device runs whole: what to build and the filter after.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelJob {
    pub plan: BuildPlan,
    pub scharr: Option<Scharr>,
}

impl LevelJob {
    /// The job for `levels` with ops `before` and `after` it, where the
    /// device runs it whole: nothing before, nothing or one `scharr:N`
    /// after, no nodata (`nd`) and a border the pyramid storage knows.
    /// `None`: the level-by-level tile path runs it.
    pub fn of(
        levels: &Levels,
        before: &[String],
        after: &[String],
        nd: Option<f64>,
        border: BorderMode,
    ) -> Result<Option<LevelJob>> {
        if !before.is_empty() || nd.is_some() || border == BorderMode::Nodata {
            return Ok(None);
        }
        let scharr = match after {
            [] => None,
            [one] => match one.parse::<Op>()? {
                Op::Scharr(s) => Some(s),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        Ok(BuildPlan::of(levels)?.map(|plan| LevelJob { plan, scharr }))
    }
}

/// Wall times of a device level job.
#[derive(Clone, Copy, Debug, Default)]
pub struct LevelTimes {
    /// The base going up and every level built, into the storage.
    pub build: Duration,
    /// Scharr over every level (all bands).
    pub filter: Duration,
    /// The results coming down.
    pub download: Duration,
}

/// Runs `job` on `bands` (the whole raster) on `dev`, holding the levels in
/// `store`, and gives every level's result, finest first, to `emit`.
pub fn run<T: Pixel>(
    dev: &Device,
    store: Store,
    job: &LevelJob,
    bands: &[Plane<T>],
    border: BorderMode,
    mut emit: impl FnMut(usize, Bands) -> Result<()>,
) -> Result<LevelTimes> {
    let mut times = LevelTimes::default();
    let n = job.plan.levels.len();
    let mut per_level: Vec<Vec<Plane<f32>>> = vec![Vec::new(); n];
    let mut typed: Vec<Vec<Plane<T>>> = vec![Vec::new(); n];
    for band in bands {
        let t0 = Instant::now();
        let built = pyramid_build::build(dev, &job.plan, band, border)?;
        match job.scharr {
            Some(s) => {
                let mut pyr = DevicePyramid::from_built(dev, store, built)?;
                let t1 = Instant::now();
                times.build += t1 - t0;
                pyr.scharr(dev, s, border)?;
                let t2 = Instant::now();
                times.filter += t2 - t1;
                for (k, [dx, dy]) in pyr.download(dev)?.into_iter().enumerate() {
                    per_level[k].extend([dx, dy]);
                }
                times.download += t2.elapsed();
            }
            None => {
                let t1 = Instant::now();
                times.build += t1 - t0;
                for (k, level) in typed.iter_mut().enumerate() {
                    level.push(built.download(dev, k)?);
                }
                times.download += t1.elapsed();
            }
        }
    }
    for k in 0..n {
        let out = match job.scharr {
            Some(_) => Bands::F32(std::mem::take(&mut per_level[k])),
            None => T::wrap(std::mem::take(&mut typed[k])),
        };
        emit(k, out)?;
    }
    Ok(times)
}
