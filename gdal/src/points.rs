//! Sample points on disk: written by `mapfilter sample` as a GeoPackage
//! (OGR) or CSV, read back by `mapfilter assess` from a GeoPackage, a CSV
//! with `x` and `y` columns, or any point layer OGR reads, transformed into
//! the map's coordinate system where the layer has another.
//!
//! A GeoPackage is made in GDAL's memory file system and then written
//! through [`mapfilter_core::output::text::write_file`] (temp file, rename), so a
//! failed run leaves no partial database and SQLite's journal never lands
//! beside the target.

use super::errors::gdal_error;
use gdal::spatial_ref::{AxisMappingStrategy, CoordTransform, SpatialRef};
use gdal::vector::{Geometry, LayerAccess, LayerOptions, OGRFieldType, OGRwkbGeometryType};
use gdal::{Dataset, DatasetOptions, DriverManager, GdalOpenFlags};
use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};
use mapfilter_core::output::Target;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// One drawn sample point: a pixel centre with its stratum and map class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrawnPoint {
    pub x: f64,
    pub y: f64,
    pub stratum: u16,
    pub map: u16,
}

/// One reference point as read: where it lies in the map's coordinate
/// system, and its reference class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferencePoint {
    /// Its position in the file (1-based), for messages.
    pub id: usize,
    pub x: f64,
    pub y: f64,
    pub label: u16,
}

/// The columns of a written sample (a CSV's header, a GeoPackage's fields).
pub const FIELDS: [&str; 5] = ["id", "x", "y", "stratum", "map_label"];

fn is_csv(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// Writes `points` to `target`: CSV (`id,x,y,stratum,map_label`) where its
/// name ends in `.csv`, else a GeoPackage layer `sample` in the CRS
/// `projection` (WKT; "" for none) with the same fields.
pub fn write(target: &Target, points: &[DrawnPoint], projection: &str) -> Result<()> {
    if is_csv(target.path()) {
        let rows = points.iter().enumerate().map(|(i, p)| {
            [
                (i + 1).to_string(),
                p.x.to_string(),
                p.y.to_string(),
                p.stratum.to_string(),
                p.map.to_string(),
            ]
        });
        let text = mapfilter_core::output::csv::table(&FIELDS, rows)?;
        return mapfilter_core::output::text::write_file(target, text.as_bytes());
    }
    let bytes = geopackage(points, projection)
        .map_err(|e| e.context(format!("cannot write {}", target.shown().display())))?;
    mapfilter_core::output::text::write_file(target, &bytes)
}

/// The GeoPackage's bytes, made in `/vsimem/`.
fn geopackage(points: &[DrawnPoint], projection: &str) -> Result<Vec<u8>> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "/vsimem/mapfilter-sample-{}-{}.gpkg",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    super::class_raster::quiet_gdal();
    let driver = DriverManager::get_driver_by_name("GPKG").map_err(gdal_error)?;
    {
        let mut ds = driver.create_vector_only(&name).map_err(gdal_error)?;
        let srs = if projection.is_empty() {
            None
        } else {
            Some(SpatialRef::from_wkt(projection).map_err(gdal_error)?)
        };
        {
            let layer = ds
                .create_layer(LayerOptions {
                    name: "sample",
                    srs: srs.as_ref(),
                    ty: OGRwkbGeometryType::wkbPoint,
                    options: None,
                })
                .map_err(gdal_error)?;
            layer
                .create_defn_fields(&[
                    ("id", OGRFieldType::OFTInteger64),
                    ("x", OGRFieldType::OFTReal),
                    ("y", OGRFieldType::OFTReal),
                    ("stratum", OGRFieldType::OFTInteger),
                    ("map_label", OGRFieldType::OFTInteger),
                ])
                .map_err(gdal_error)?;
        }
        // One transaction: a GeoPackage commits every feature otherwise.
        let tx = ds.start_transaction().map_err(gdal_error)?;
        {
            let layer = tx.layer(0).map_err(gdal_error)?;
            for (i, p) in points.iter().enumerate() {
                let mut g = Geometry::empty(OGRwkbGeometryType::wkbPoint).map_err(gdal_error)?;
                g.add_point_2d((p.x, p.y));
                let mut f = gdal::vector::Feature::new(layer.defn()).map_err(gdal_error)?;
                f.set_geometry(g).map_err(gdal_error)?;
                f.set_field_integer64(0, i as i64 + 1).map_err(gdal_error)?;
                f.set_field_double(1, p.x).map_err(gdal_error)?;
                f.set_field_double(2, p.y).map_err(gdal_error)?;
                f.set_field_integer(3, i32::from(p.stratum))
                    .map_err(gdal_error)?;
                f.set_field_integer(4, i32::from(p.map))
                    .map_err(gdal_error)?;
                f.create(&layer).map_err(gdal_error)?;
            }
        }
        tx.commit().map_err(gdal_error)?;
    }
    let bytes = gdal::vsi::get_vsi_mem_file_bytes_owned(&name).map_err(gdal_error);
    let _ = gdal::vsi::unlink_mem_file(&name);
    bytes
}

/// A class code from a label field's text, or why it is none.
fn parse_label(text: &str, id: usize, field: &str, path: &Path) -> Result<u16> {
    let t = text.trim();
    let v: Option<f64> = t.parse::<f64>().ok();
    match v {
        Some(v) if v.fract() == 0.0 && (0.0..=65535.0).contains(&v) => Ok(v as u16),
        _ => bail!(
            input,
            format!(
                "{}: point {id} has {field} = {t:?}, not a class code",
                path.display()
            ),
            hint = "label every point with an integer class code from 0 to 65535 (the map's codes)"
        ),
    }
}

/// Reads the points of `path` with their reference class from field
/// `label`, in the CRS `projection` (WKT of the map; "" for none).
pub fn read(path: &Path, label: &str, projection: &str) -> Result<Vec<ReferencePoint>> {
    if !path.exists() {
        bail!(
            input,
            format!("{}: no such file", path.display()),
            hint = "give the labelled points (GeoPackage, CSV with x and y columns, or any OGR source)"
        );
    }
    if is_csv(path) {
        return read_csv(path, label);
    }
    read_ogr(path, label, projection)
}

/// A CSV with `x`, `y` and the label column (any case), in the map's CRS.
fn read_csv(path: &Path, label: &str) -> Result<Vec<ReferencePoint>> {
    let fail = |e: csv::Error| Error::io(format!("{}: {e}", path.display()));
    let mut reader = csv::Reader::from_path(path).map_err(fail)?;
    let header = reader.headers().map_err(fail)?.clone();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h.trim().eq_ignore_ascii_case(name))
    };
    let names = header.iter().collect::<Vec<_>>().join(", ");
    let (Some(xi), Some(yi)) = (column("x"), column("y")) else {
        bail!(
            input,
            format!("{}: no x and y columns (it has {names})", path.display()),
            hint = "a CSV of points needs columns x and y in the map's coordinates, as `mapfilter sample` writes"
        );
    };
    let Some(li) = column(label) else {
        bail!(
            usage,
            format!(
                "{}: no label field {label:?} (it has {names})",
                path.display()
            ),
            hint = format!(
                "give {} the column that holds the reference class codes",
                Setting::Label
            )
        );
    };
    let mut points = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(fail)?;
        let id = i + 1;
        let coord = |k: usize, axis: &str| {
            record
                .get(k)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    Error::input(format!(
                        "{}: point {id} has no number for {axis}",
                        path.display()
                    ))
                    .hint("every row needs numeric x and y")
                })
        };
        points.push(ReferencePoint {
            id,
            x: coord(xi, "x")?,
            y: coord(yi, "y")?,
            label: parse_label(record.get(li).unwrap_or(""), id, label, path)?,
        });
    }
    Ok(points)
}

/// The first layer of any OGR source, transformed into the map's CRS.
fn read_ogr(path: &Path, label: &str, projection: &str) -> Result<Vec<ReferencePoint>> {
    super::class_raster::quiet_gdal();
    let ds = Dataset::open_ex(
        path,
        DatasetOptions {
            open_flags: GdalOpenFlags::GDAL_OF_VECTOR | GdalOpenFlags::GDAL_OF_READONLY,
            ..Default::default()
        },
    )
    .map_err(|_| {
        Error::input(format!("{}: not a vector source OGR can read", path.display()))
            .hint("give a GeoPackage, a CSV with x and y columns, or another OGR point layer (`ogrinfo` tells what OGR sees)")
    })?;
    let mut layer = ds.layer(0).map_err(|_| {
        Error::input(format!("{}: holds no layer", path.display()))
            .hint("give a file with one point layer")
    })?;
    let fields: Vec<String> = layer.defn().fields().map(|f| f.name()).collect();
    let Some(li) = fields.iter().position(|f| f.eq_ignore_ascii_case(label)) else {
        bail!(
            usage,
            format!(
                "{}: no label field {label:?} (it has {})",
                path.display(),
                if fields.is_empty() {
                    "none".to_string()
                } else {
                    fields.join(", ")
                }
            ),
            hint = format!(
                "give {} the field that holds the reference class codes",
                Setting::Label
            )
        );
    };
    let transform = transform_to_map(layer.spatial_ref(), projection, path)?;
    let mut points = Vec::new();
    for (i, f) in layer.features().enumerate() {
        let id = i + 1;
        let Some(g) = f.geometry().filter(|g| !g.is_empty()) else {
            bail!(
                input,
                format!("{}: point {id} has no geometry", path.display()),
                hint = "every feature needs a point geometry"
            );
        };
        if gdal::vector::geometry_type_flatten(g.geometry_type()) != OGRwkbGeometryType::wkbPoint {
            bail!(
                input,
                format!(
                    "{}: feature {id} is a {}, not a point",
                    path.display(),
                    g.geometry_name()
                ),
                hint = "assess labelled points (one pixel each), not polygons or lines"
            );
        }
        let (mut x, mut y, _) = g.get_point(0);
        if let Some(t) = &transform {
            let (mut xs, mut ys, mut zs) = ([x], [y], [0.0]);
            t.transform_coords(&mut xs, &mut ys, &mut zs).map_err(|e| {
                Error::input(format!(
                    "{}: point {id} cannot be transformed into the map's coordinate system: {e}",
                    path.display()
                ))
                .hint("check the points' CRS; reproject them with ogr2ogr -t_srs")
            })?;
            (x, y) = (xs[0], ys[0]);
        }
        let text = f
            .field_as_string(li)
            .map_err(gdal_error)?
            .unwrap_or_default();
        points.push(ReferencePoint {
            id,
            x,
            y,
            label: parse_label(&text, id, label, path)?,
        });
    }
    Ok(points)
}

/// The transform from the points' CRS to the map's, `None` where they are
/// the same (or the points name none: they are taken to be in the map's).
fn transform_to_map(
    points: Option<SpatialRef>,
    projection: &str,
    path: &Path,
) -> Result<Option<CoordTransform>> {
    let Some(mut from) = points else {
        return Ok(None);
    };
    if projection.is_empty() {
        bail!(
            input,
            format!(
                "{}: the points have a coordinate system but the map has none to transform them into",
                path.display()
            ),
            hint = "georeference the map (gdal_edit.py -a_srs), or give points without a CRS in the map's pixel coordinates"
        );
    }
    let mut to = SpatialRef::from_wkt(projection).map_err(gdal_error)?;
    if from == to {
        return Ok(None);
    }
    from.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    to.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    CoordTransform::new(&from, &to).map(Some).map_err(|e| {
        Error::input(format!(
            "{}: no transform from the points' coordinate system to the map's: {e}",
            path.display()
        ))
        .hint("reproject the points with ogr2ogr -t_srs into the map's CRS")
    })
}
