//! `mapfilter histogram`: per-band histograms of a raster as JSON or CSV.

use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::filter::histogram::{self, BandHistogram, Binning};
use crate::gdal::image_raster::ImageRaster;
use crate::io::ImageSource;
use crate::output::{self, Destination};
use crate::pixel::{Bands, Pixel, Plane};
use crate::with_bands;
use clap::Args;
use std::path::PathBuf;
use tiles::Rect;

#[derive(Args, Debug)]
pub struct HistogramArgs {
    /// Input raster, any format GDAL reads.
    pub input: PathBuf,
    /// Number of bins (Byte: 256 value bins unless given).
    #[arg(long)]
    pub bins: Option<usize>,
    /// Value range MIN:MAX binned (default: Byte 0..256, otherwise each band's min..max).
    #[arg(long)]
    pub range: Option<String>,
    /// Write JSON here (`-` or none: standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write CSV here (band,bin,lo,hi,count; `-`: standard output).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Where to count: host, or an OpenCL device (auto, cpu, gpu, INDEX).
    #[arg(long, default_value = "host")]
    pub device: DeviceChoice,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

/// Strips of about this many pixels are read at a time.
const STRIP_PIXELS: usize = 4 << 20;

pub fn run(args: HistogramArgs) -> Result<()> {
    let inputs = [args.input.as_path()];
    let check = |p: &Option<PathBuf>| {
        p.as_deref()
            .map(|p| Destination::check(p, args.overwrite.overwrite, &inputs))
            .transpose()
    };
    let (json_dest, csv_dest) = (check(&args.json)?, check(&args.csv)?);
    if let (Some(Destination::File(a)), Some(Destination::File(b))) = (&json_dest, &csv_dest) {
        output::distinct(&[a, b])?;
    }
    let range = args.range.as_deref().map(parse_range).transpose()?;
    let device = args.device.resolve()?;
    let mut input = ImageRaster::open(&args.input)?;
    let nd = input.meta.nodata;
    let (w, h) = (input.meta.width, input.meta.height);
    let strip = (STRIP_PIXELS / w.max(1)).clamp(1, h.max(1));
    let strips = |input: &mut ImageRaster, f: &mut dyn FnMut(Bands)| -> Result<()> {
        for y in (0..h).step_by(strip) {
            f(input.read(Rect::new(0, y, w, strip.min(h - y)))?);
        }
        Ok(())
    };
    let binnings: Vec<Binning> = match Binning::for_type(input.sample_type, args.bins, range)? {
        Some(b) => vec![b; input.bands],
        None => {
            let mut mm: Vec<Option<(f64, f64)>> = vec![None; input.bands];
            strips(
                &mut input,
                &mut |bands| with_bands!(&bands, p => min_max_into(p, nd, &mut mm)),
            )?;
            mm.iter()
                .map(|m| {
                    let (lo, hi) = m.unwrap_or((0.0, 1.0));
                    Binning::over(args.bins.unwrap_or(256), lo, hi)
                })
                .collect()
        }
    };
    let mut hists: Vec<BandHistogram> = binnings
        .iter()
        .enumerate()
        .map(|(i, b)| BandHistogram::new(i + 1, b))
        .collect();
    let mut failed = Ok(());
    strips(&mut input, &mut |bands| {
        if failed.is_ok() {
            failed =
                with_bands!(&bands, p => add_all(p, &binnings, nd, device.as_ref(), &mut hists));
        }
    })?;
    failed?;
    let json = serde_json::to_string_pretty(&hists).expect("histograms serialise") + "\n";
    if let Some(d) = &csv_dest {
        output::text::write(d, &histogram::to_csv(&hists)?)?;
    }
    match &json_dest {
        Some(d) => output::text::write(d, &json)?,
        None if csv_dest.is_none() => output::text::write(&Destination::Stdout, &json)?,
        None => {}
    }
    Ok(())
}

fn min_max_into<T: Pixel>(p: &[Plane<T>], nd: Option<f64>, mm: &mut [Option<(f64, f64)>]) {
    let nd = nd.and_then(T::from_f64_exact);
    for (plane, m) in p.iter().zip(mm.iter_mut()) {
        if let Some((lo, hi)) = histogram::min_max(plane, nd) {
            *m = Some(m.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
}

fn add_all<T: Pixel>(
    p: &[Plane<T>],
    b: &[Binning],
    nd: Option<f64>,
    device: Option<&Device>,
    hists: &mut [BandHistogram],
) -> Result<()> {
    let nd = nd.and_then(T::from_f64_exact);
    for ((plane, b), h) in p.iter().zip(b).zip(hists.iter_mut()) {
        match device {
            Some(dev) => h.merge(&crate::filter::device::histogram(
                dev, plane, h.band, b, nd,
            )?),
            None => h.add(plane, b, nd),
        }
    }
    Ok(())
}

fn parse_range(s: &str) -> Result<(f64, f64)> {
    let bad =
        || Error::usage(format!("--range '{s}' is not MIN:MAX")).hint("write e.g. --range 0:4096");
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}
