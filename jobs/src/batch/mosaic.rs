//! Rasters on one grid as one mosaic. Every input's header is read (no
//! pixels); inputs with the same coordinate system, pixel size, band type
//! and nodata whose origins lie on one pixel lattice form a group, written
//! as a VRT (the XML GDAL's `gdalbuildvrt` would write, with each source's
//! size and type given so that opening it opens no source). A group of one
//! raster is that raster itself, unless the plan reads another band than
//! the first or another nodata than the file's (`-b`, `--src-nodata`):
//! the VRT then says which, so that every reader of the mosaic (tasks,
//! scans, reports) reads the same band with the same nodata.

use mapfilter_core::error::Result;
use mapfilter_gdal::class_raster::{self, BandChoice, ClassRaster};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The name of the outputs' mosaic VRT of mosaic `m`.
pub fn mosaic_name(m: usize) -> PathBuf {
    if m == 0 {
        "mosaic.vrt".into()
    } else {
        format!("mosaic-out-{m}.vrt").into()
    }
}

/// What the plan needs of one input raster.
#[derive(Clone, Debug)]
pub struct InputInfo {
    pub path: PathBuf,
    pub width: usize,
    pub height: usize,
    pub geo_transform: [f64; 6],
    pub projection: String,
    /// The band read (1-based), and its type.
    pub band: usize,
    pub data_type: String,
    /// Its nodata: the file's, or the plan's `--src-nodata`.
    pub nodata: Option<f64>,
    pub colors: Vec<[i16; 4]>,
    /// Category names by code (of the band read).
    pub category_names: Vec<String>,
}

/// Files whose headers one thread reads. Reading a coordinate system makes
/// GDAL start a PROJ context on the thread (its database opened and
/// warmed, about 10 ms of CPU), so a thread is worth starting only for a
/// good number of files: 16 tiles are read by one thread, thousands by all.
const HEADERS_PER_THREAD: usize = 64;

/// Reads the headers of `paths` (in parallel when there are many), in
/// order: of the band `choice` names (band 1 of a raster of one band, as
/// `smooth` reads it), with its nodata where it replaces the file's.
pub fn read_infos(paths: &[PathBuf], choice: BandChoice) -> Result<Vec<InputInfo>> {
    class_raster::quiet_gdal();
    let chunks: Vec<Vec<InputInfo>> = paths
        .par_chunks(HEADERS_PER_THREAD)
        .map(|chunk| {
            chunk
                .iter()
                .map(|p| read_info(p, choice))
                .collect::<Result<_>>()
        })
        .collect::<Result<_>>()?;
    Ok(chunks.into_iter().flatten().collect())
}

/// One raster's header, opened as `smooth` opens its input
/// ([`ClassRaster::open_with`]: the band resolved, its type and nodata
/// checked, the nodata override applied).
fn read_info(path: &Path, choice: BandChoice) -> Result<InputInfo> {
    let raster = ClassRaster::open_with(path, choice)?;
    let (band, data_type) = (raster.band(), raster.class_type.gdal_type().name());
    let meta = raster.meta;
    let geo_transform = meta.geo_transform.unwrap_or([0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    Ok(InputInfo {
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        width: meta.width,
        height: meta.height,
        geo_transform,
        projection: meta.projection,
        band,
        data_type,
        nodata: meta.nodata,
        colors: meta.colors,
        category_names: meta.category_names,
    })
}

/// One input inside a mosaic: where its pixels lie.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Member {
    pub path: PathBuf,
    pub x: usize,
    pub y: usize,
    pub width: usize,
    pub height: usize,
}

/// Inputs on one grid.
#[derive(Clone, Debug)]
pub struct Group {
    pub members: Vec<Member>,
    pub width: usize,
    pub height: usize,
    pub geo_transform: [f64; 6],
    pub first: InputInfo,
}

/// Groups `infos` by grid, in order of first appearance.
pub fn group(infos: &[InputInfo]) -> Vec<Group> {
    // Per group: its first input, and each member's index and pixel offset.
    type Offsets = Vec<(usize, i64, i64)>;
    let mut groups: Vec<(InputInfo, Offsets)> = Vec::new();
    for (i, info) in infos.iter().enumerate() {
        let found = groups.iter_mut().find_map(|(first, members)| {
            lattice_offset(first, info).map(|(dx, dy)| (members, dx, dy))
        });
        match found {
            Some((members, dx, dy)) => members.push((i, dx, dy)),
            None => groups.push((info.clone(), vec![(i, 0, 0)])),
        }
    }
    groups
        .into_iter()
        .map(|(first, members)| {
            let x0 = members.iter().map(|m| m.1).min().unwrap_or(0);
            let y0 = members.iter().map(|m| m.2).min().unwrap_or(0);
            let mut width = 0;
            let mut height = 0;
            let members: Vec<Member> = members
                .into_iter()
                .map(|(i, dx, dy)| {
                    let info = &infos[i];
                    let (x, y) = ((dx - x0) as usize, (dy - y0) as usize);
                    width = width.max(x + info.width);
                    height = height.max(y + info.height);
                    Member {
                        path: info.path.clone(),
                        x,
                        y,
                        width: info.width,
                        height: info.height,
                    }
                })
                .collect();
            let geo_transform = mapfilter_gdal::class_raster::shift_transform(
                first.geo_transform,
                x0 as f64,
                y0 as f64,
            );
            Group {
                members,
                width,
                height,
                geo_transform,
                first,
            }
        })
        .collect()
}

/// Where `b`'s pixel (0,0) lies in `a`'s pixel lattice, if both are on one
/// grid (same CRS, pixel size, type and nodata, no rotation, aligned).
fn lattice_offset(a: &InputInfo, b: &InputInfo) -> Option<(i64, i64)> {
    let (ga, gb) = (a.geo_transform, b.geo_transform);
    let same = |p: f64, q: f64| (p - q).abs() <= 1e-9 * p.abs().max(q.abs()).max(1e-12);
    if a.projection != b.projection
        || a.data_type != b.data_type
        || a.nodata != b.nodata
        || ga[2] != 0.0
        || ga[4] != 0.0
        || gb[2] != 0.0
        || gb[4] != 0.0
        || !same(ga[1], gb[1])
        || !same(ga[5], gb[5])
    {
        return None;
    }
    let fx = (gb[0] - ga[0]) / ga[1];
    let fy = (gb[3] - ga[3]) / ga[5];
    let (rx, ry) = (fx.round(), fy.round());
    ((fx - rx).abs() < 1e-6 && (fy - ry).abs() < 1e-6).then_some((rx as i64, ry as i64))
}

/// A VRT of `members` on a `width` × `height` grid with `first`'s band
/// (each member's band of that number), type, nodata, colours, category
/// names and coordinate system.
pub fn vrt_xml(
    members: &[Member],
    (width, height): (usize, usize),
    geo_transform: [f64; 6],
    first: &InputInfo,
) -> String {
    let mut x = String::new();
    let _ = writeln!(
        x,
        r#"<VRTDataset rasterXSize="{width}" rasterYSize="{height}">"#
    );
    if !first.projection.is_empty() {
        let _ = writeln!(x, "  <SRS>{}</SRS>", escape(&first.projection));
    }
    let g = geo_transform;
    let _ = writeln!(
        x,
        "  <GeoTransform>{:e}, {:e}, {:e}, {:e}, {:e}, {:e}</GeoTransform>",
        g[0], g[1], g[2], g[3], g[4], g[5]
    );
    let _ = writeln!(
        x,
        r#"  <VRTRasterBand dataType="{}" band="1">"#,
        first.data_type
    );
    if let Some(nd) = first.nodata {
        let _ = writeln!(x, "    <NoDataValue>{nd}</NoDataValue>");
    }
    if !first.colors.is_empty() {
        x += "    <ColorInterp>Palette</ColorInterp>\n    <ColorTable>\n";
        for c in &first.colors {
            let _ = writeln!(
                x,
                r#"      <Entry c1="{}" c2="{}" c3="{}" c4="{}"/>"#,
                c[0], c[1], c[2], c[3]
            );
        }
        x += "    </ColorTable>\n";
    }
    if !first.category_names.is_empty() {
        x += "    <CategoryNames>\n";
        for name in &first.category_names {
            let _ = writeln!(x, "      <Category>{}</Category>", escape(name));
        }
        x += "    </CategoryNames>\n";
    }
    for m in members {
        let _ = write!(
            x,
            concat!(
                "    <SimpleSource>\n",
                "      <SourceFilename relativeToVRT=\"0\">{}</SourceFilename>\n",
                "      <SourceBand>{b}</SourceBand>\n",
                "      <SourceProperties RasterXSize=\"{w}\" RasterYSize=\"{h}\" DataType=\"{t}\"/>\n",
                "      <SrcRect xOff=\"0\" yOff=\"0\" xSize=\"{w}\" ySize=\"{h}\"/>\n",
                "      <DstRect xOff=\"{x}\" yOff=\"{y}\" xSize=\"{w}\" ySize=\"{h}\"/>\n",
                "    </SimpleSource>\n"
            ),
            escape(&m.path.to_string_lossy()),
            b = first.band,
            w = m.width,
            h = m.height,
            t = first.data_type,
            x = m.x,
            y = m.y,
        );
    }
    x += "  </VRTRasterBand>\n</VRTDataset>\n";
    x
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
