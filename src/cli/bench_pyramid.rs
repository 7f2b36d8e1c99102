//! `mapfilter bench-filter --op LEVEL-OP --op scharr:N [--op scharr:M ..]
//! --device DEV`: Scharr over every level of a pyramid held on an OpenCL
//! device, in each pyramid storage of
//! [`crate::filter::device::pyramid_store`] (or the one
//! `MAPFILTER_PYRAMID_STORE` names).
//!
//! Per storage, the levels (the level op's levels of the first band) are
//! built on the device ([`crate::filter::device::pyramid_build`]) into the
//! storage and held there: each `scharr` op after the level op is a
//! separate filter over the whole pyramid, not a chain. One JSON line per
//! storage, op and run: `build_ms` (the base going up, every level built
//! and stored, enqueue to finish; once per storage), `build_kernel_ms`
//! (its profiled kernel time), `total_ms` (enqueue to finish of the filter
//! over all levels) and `kernel_ms` (its profiled kernel time); with
//! `--check` one more line per storage and op comparing every level's
//! Scharr with the host's (levels built by the fast host paths) bit for bit.

use crate::bail;
use crate::device::Device;
use crate::error::Result;
use crate::filter::Chain;
use crate::filter::device::pyramid_build::{self, BuildPlan};
use crate::filter::device::pyramid_store::{DevicePyramid, Store, scharr_host};
use crate::filter::engine::{ChainRunner, HostRunner};
use crate::filter::levels::{Level, Levels};
use crate::filter::op::TileAt;
use crate::filter::scharr::Scharr;
use crate::filter::{BorderMode, Win};
use crate::io::MemImage;
use crate::pixel::{Pixel, Plane};
use crate::with_bands;
use std::any::Any;
use std::time::Instant;

/// What the pyramid bench takes of `bench-filter`'s arguments (given by
/// the command, so this module does not depend on its argument type).
pub struct PyramidBench<'a> {
    /// The sample type's name, as printed in the JSON lines.
    pub sample_type: &'a str,
    pub warmup: usize,
    pub repeat: usize,
    pub check: bool,
    pub border: BorderMode,
}

/// Runs the pyramid bench: `levels` over `image`, then the Scharr `ops`.
pub fn run(
    args: &PyramidBench,
    dev: &Device,
    image: &MemImage,
    levels: &Levels,
    ops: &[String],
) -> Result<()> {
    let mut sizes = Vec::new();
    for op in ops {
        match op.strip_prefix("scharr:").map(str::parse::<usize>) {
            Some(Ok(n)) => sizes.push(Scharr::new(n)?),
            _ => bail!(
                usage,
                format!("op '{op}' after a level op: the device pyramid bench runs scharr:N only"),
                hint = "write --op scale-space:4:4 --op scharr:3 --op scharr:5"
            ),
        }
    }
    let stores = match &crate::switches::get().pyramid_store {
        Some(_) => vec![Store::chosen()?],
        None => Store::ALL.to_vec(),
    };
    let border = args.border;
    let chains = levels.chains(&[], &[]);
    let Some(plan) = BuildPlan::of(levels)? else {
        bail!(
            usage,
            "the device pyramid bench builds Gaussian pyramids and scale spaces",
            hint = "write --op scale-space:4:4 or --op gaussian-pyramid:N"
        );
    };
    with_bands!(&image.bands, p => {
        let host = match args.check {
            true => build(&p[0], &chains, border)?,
            false => Vec::new(),
        };
        bench(args, dev, &stores, (&p[0], &plan), &host, &sizes, border)
    })
}

/// Every level's chain run on the host's fast paths over the whole of
/// `band` (what `filter --device host` writes).
fn build<T: Pixel>(band: &Plane<T>, chains: &[Level], border: BorderMode) -> Result<Vec<Plane<T>>> {
    let (w, h) = (band.width, band.height);
    let mut built = Vec::with_capacity(chains.len());
    for level in chains {
        let chain = Chain::parse(&level.ops)?;
        let (ow, oh) = chain.out_size((w, h));
        let at = TileAt {
            have: Win::new(0, 0, w, h),
            image: (w, h),
            out: Win::new(0, 0, ow, oh),
            border,
            nd: None,
        };
        let out = HostRunner::default().run(&chain, T::wrap(vec![band.clone()]), &at)?;
        built.push(first_plane::<T>(out)?);
    }
    Ok(built)
}

/// The first band of a level's result, as the input's type.
fn first_plane<T: Pixel>(out: crate::pixel::Bands) -> Result<Plane<T>> {
    let plane = with_bands!(&out, q => q.first().and_then(|p| (p as &dyn Any).downcast_ref::<Plane<T>>().cloned()));
    match plane {
        Some(p) => Ok(p),
        None => bail!(
            usage,
            "a level op changed the sample type",
            hint = "put only gaussian-pyramid or scale-space before scharr"
        ),
    }
}

/// Per storage: the pyramid built on the device (`base`, `plan`), then
/// the Scharr `sizes` over it; `host` holds the host's levels for `--check`.
fn bench<T: Pixel>(
    args: &PyramidBench,
    dev: &Device,
    stores: &[Store],
    (base, plan): (&Plane<T>, &BuildPlan),
    host: &[Plane<T>],
    sizes: &[Scharr],
    border: BorderMode,
) -> Result<()> {
    let level_sizes = plan.sizes((base.width, base.height));
    let px: usize = level_sizes.iter().map(|(w, h)| w * h).sum();
    let count = level_sizes.len();
    let dname = &dev.info().name;
    for &store in stores {
        // A first build compiles the kernels; the timed one reuses them.
        drop(pyramid_build::build(dev, plan, base, border)?);
        let t0 = Instant::now();
        let built = pyramid_build::build(dev, plan, base, border)?;
        let build_kernel = built.kernel_ns as f64 / 1e6;
        let mut pyr = DevicePyramid::from_built(dev, store, built)?;
        let build = t0.elapsed().as_secs_f64() * 1e3;
        for &s in sizes {
            let label = format!("scharr:{}", s.size);
            for i in 0..args.warmup + args.repeat {
                let t0 = Instant::now();
                let kernel_ns = pyr.scharr(dev, s, border)?;
                let total = t0.elapsed().as_secs_f64() * 1e3;
                if i >= args.warmup {
                    println!(
                        "{{\"op\":{label:?},\"store\":{:?},\"levels\":{},\"pixels\":{px},\"type\":{:?},\"device\":{dname:?},\"run\":{},\"build_ms\":{build:.3},\"build_kernel_ms\":{build_kernel:.3},\"total_ms\":{total:.3},\"kernel_ms\":{:.3}}}",
                        store.name(),
                        count,
                        args.sample_type,
                        i + 1 - args.warmup,
                        kernel_ns as f64 / 1e6
                    );
                }
            }
            if args.check {
                if args.warmup + args.repeat == 0 {
                    pyr.scharr(dev, s, border)?;
                }
                let got = pyr.download(dev)?;
                let differ: usize = got
                    .iter()
                    .zip(host)
                    .map(|(g, l)| {
                        let want = scharr_host(l, s, border);
                        (0..2)
                            .map(|d| {
                                g[d].data
                                    .iter()
                                    .zip(&want[d].data)
                                    .filter(|(a, b)| a.to_bits() != b.to_bits())
                                    .count()
                            })
                            .sum::<usize>()
                    })
                    .sum();
                let verdict = if differ == 0 {
                    "identical".to_string()
                } else {
                    format!("{differ} of {} samples differ", 2 * px)
                };
                println!(
                    "{{\"op\":{label:?},\"store\":{:?},\"levels\":{},\"pixels\":{px},\"type\":{:?},\"device\":{dname:?},\"check\":{verdict:?}}}",
                    store.name(),
                    count,
                    args.sample_type
                );
            }
        }
    }
    Ok(())
}
