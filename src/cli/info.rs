//! `mapfilter info`: what a raster is and which classes it holds.

use crate::classes::{CodeHistogram, MAX_CLASSES};
use crate::error::Result;
use crate::gdal::class_raster::{self, BandChoice, ClassRaster, RasterMeta};
use crate::output::text::printable;
use crate::progress::Progress;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Raster to describe.
    pub input: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The band described (type, nodata, colours, classes): band 1 unless -b.
    #[command(flatten)]
    pub bands: super::input_args::BandArgs,
}

pub fn run(args: InfoArgs) -> Result<()> {
    let ds = class_raster::open(&args.input)?;
    let bands = ds.raster_count();
    let choice = BandChoice {
        band: Some(args.bands.band.unwrap_or(1)),
        ..args.bands.choice()
    };
    let index = choice.band.unwrap_or(1);
    if index == 0 || index > bands {
        crate::bail!(
            usage,
            format!(
                "{}: -b {index} is not a band (the raster has {bands})",
                args.input.display()
            ),
            hint = "bands are numbered from 1, as in GDAL"
        );
    }
    let mut meta = RasterMeta::read_band(&ds, index)?;
    meta.projection = ds.projection();
    if let Some(n) = choice.nodata {
        meta.nodata = n;
    }
    let band = ds
        .rasterband(index)
        .map_err(crate::gdal::errors::gdal_error)?;
    let data_type = band.band_type().name();
    let crs = ds.spatial_ref().ok();
    let crs_name = crs.as_ref().and_then(|s| s.name());
    let epsg = crs.as_ref().and_then(|s| s.auth_code().ok());
    drop(ds);
    // Class tally only for integer class bands.
    let tally = match ClassRaster::open_with(&args.input, choice) {
        Ok(mut r) => {
            let hist = r.scan_histogram(&Progress::new(args.json, "scan"))?;
            Some(ClassCounts::of(&hist, r.nodata_code()))
        }
        Err(_) => None,
    };
    if args.json {
        let value = serde_json::json!({
            "path": args.input,
            "width": meta.width,
            "height": meta.height,
            "bands": bands,
            "band": index,
            "data_type": data_type,
            "geo_transform": meta.geo_transform,
            "crs": crs_name,
            "epsg": epsg,
            "nodata": meta.nodata.map(json_number),
            "color_table_entries": meta.colors.len(),
            "category_names": meta.category_names,
            "classes": tally.as_ref().map(|t| t.classes.iter()
                .map(|(c, n)| serde_json::json!({"code": c, "pixels": n})).collect::<Vec<_>>()),
            "nodata_pixels": tally.as_ref().map(|t| t.nodata),
        });
        println!("{}", serde_json::to_string_pretty(&value).expect("json"));
        return Ok(());
    }
    println!("file:        {}", args.input.display());
    println!(
        "size:        {} x {} pixels, {bands} band(s); band {index}: {data_type}",
        meta.width, meta.height
    );
    match meta.geo_transform {
        Some(g) => {
            println!("origin:      ({}, {})", g[0], g[3]);
            println!("pixel size:  ({}, {})", g[1], g[5]);
        }
        None => println!("georef:      none"),
    }
    println!(
        "crs:         {}{}",
        printable(crs_name.as_deref().unwrap_or("none")),
        epsg.map(|e| format!(" (EPSG:{e})")).unwrap_or_default()
    );
    println!(
        "nodata:      {}",
        meta.nodata.map_or("none".into(), |v| v.to_string())
    );
    if !meta.colors.is_empty() {
        println!("colour table: {} entries", meta.colors.len());
    }
    if let Some(t) = tally {
        let note = if t.classes.len() > MAX_CLASSES {
            format!(" (more than the {MAX_CLASSES} that smooth takes)")
        } else {
            String::new()
        };
        println!("classes:     {}{note}", t.classes.len());
        for (code, n) in &t.classes {
            let name = meta
                .category_names
                .get(*code as usize)
                .filter(|s| !s.is_empty())
                // A name is data: its control characters (a terminal's
                // escape sequences) are shown, never sent.
                .map(|s| format!("  {}", printable(s)))
                .unwrap_or_default();
            println!("  {code:>5}: {n:>12} pixels{name}");
        }
        if t.nodata > 0 {
            println!("  nodata: {:>11} pixels", t.nodata);
        }
    }
    Ok(())
}

/// The codes present with their pixel counts, and the nodata pixels.
struct ClassCounts {
    classes: Vec<(u16, u64)>,
    nodata: u64,
}

impl ClassCounts {
    fn of(hist: &CodeHistogram, nodata: Option<u16>) -> Self {
        let classes = (0..=u16::MAX)
            .filter(|&c| Some(c) != nodata)
            .map(|c| (c, hist.count(c)))
            .filter(|&(_, n)| n > 0)
            .collect();
        ClassCounts {
            classes,
            nodata: nodata.map_or(0, |c| hist.count(c)),
        }
    }
}

/// A number for JSON, NaN and infinities as strings (JSON has no such numbers).
fn json_number(v: f64) -> serde_json::Value {
    if v.is_finite() {
        serde_json::json!(v)
    } else {
        serde_json::json!(v.to_string())
    }
}
