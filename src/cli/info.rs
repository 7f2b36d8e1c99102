//! `mapfilter info`: what a raster is and which classes it holds.

use crate::error::Result;
use crate::progress::Progress;
use crate::raster::{self, ClassRaster, RasterMeta};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Raster to describe.
    pub input: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: InfoArgs) -> Result<()> {
    let ds = raster::open(&args.input)?;
    let meta = RasterMeta::read(&ds)?;
    let band = ds.rasterband(1).map_err(raster::gdal_error)?;
    let data_type = band.band_type().name();
    let bands = ds.raster_count();
    let crs = ds.spatial_ref().ok();
    let crs_name = crs.as_ref().and_then(|s| s.name());
    let epsg = crs.as_ref().and_then(|s| s.auth_code().ok());
    drop(ds);
    // Class tally only for integer class bands.
    let classes = match ClassRaster::open(&args.input) {
        Ok(mut r) => Some(r.scan_classes(&Progress::new(args.json, "scan"))?),
        Err(_) => None,
    };
    if args.json {
        let value = serde_json::json!({
            "path": args.input,
            "width": meta.width,
            "height": meta.height,
            "bands": bands,
            "data_type": data_type,
            "geo_transform": meta.geo_transform,
            "crs": crs_name,
            "epsg": epsg,
            "nodata": meta.nodata,
            "color_table_entries": meta.colors.len(),
            "category_names": meta.category_names,
            "classes": classes.as_ref().map(|t| t.codes().iter().zip(t.counts())
                .map(|(c, n)| serde_json::json!({"code": c, "pixels": n})).collect::<Vec<_>>()),
            "nodata_pixels": classes.as_ref().map(|t| t.nodata_count()),
        });
        println!("{}", serde_json::to_string_pretty(&value).expect("json"));
        return Ok(());
    }
    println!("file:        {}", args.input.display());
    println!(
        "size:        {} x {} pixels, {bands} band(s), {data_type}",
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
        crs_name.unwrap_or_else(|| "none".into()),
        epsg.map(|e| format!(" (EPSG:{e})")).unwrap_or_default()
    );
    println!(
        "nodata:      {}",
        meta.nodata.map_or("none".into(), |v| v.to_string())
    );
    if !meta.colors.is_empty() {
        println!("colour table: {} entries", meta.colors.len());
    }
    if let Some(t) = classes {
        println!("classes:     {}", t.len());
        for (code, n) in t.codes().iter().zip(t.counts()) {
            let name = meta
                .category_names
                .get(*code as usize)
                .filter(|s| !s.is_empty())
                .map(|s| format!("  {s}"))
                .unwrap_or_default();
            println!("  {code:>5}: {n:>12} pixels{name}");
        }
        if t.nodata_count() > 0 {
            println!("  nodata: {:>11} pixels", t.nodata_count());
        }
    }
    Ok(())
}
