//! The `mapfilter._mapfilter` extension module: numpy arrays in, numpy
//! arrays out, through the mapfilter library's in-memory entry points
//! ([`mapfilter_core::job::plane`], the sieve, the metrics, the filter engine).
//! It owns only the crossing: arguments parsed as the CLI parses them, the
//! GIL released while the library computes, library errors raised as the
//! `mapfilter.Error` subclass of their kind (`mapfilter.errors`), their
//! settings named as Python's keywords. The Python package
//! (`python/mapfilter`) owns the public signatures, dtype handling,
//! docstrings and the exception classes.

use mapfilter_core::classes::ClassWeights;
use mapfilter_core::confidence::Quantiser;
use mapfilter_core::device::{DeviceChoice, list_devices};
use mapfilter_core::error::Error as LibError;
use mapfilter_core::filter::engine::{FilterJob, filter_in_memory};
use mapfilter_core::filter::run_on::RunOn;
use mapfilter_core::filter::{BorderMode, Chain};
use mapfilter_core::io::{MemImage, MemRaster};
use mapfilter_core::job::plane::{PlaneSpec, PlaneView, smooth_plane};
use mapfilter_core::kernel::{KernelArg, PixelWidth};
use mapfilter_core::method::policy::PolicyText;
use mapfilter_core::method::select::{FastOptions, MethodSpec, smoother_for};
use mapfilter_core::metrics::{self, Summary};
use mapfilter_core::pixel::{Bands, Plane};
use mapfilter_core::pixel_area::PixelArea;
use mapfilter_core::progress::Progress;
use mapfilter_core::sieve::threshold::Threshold;
use mapfilter_core::sieve::{Connectivity, SieveOptions};
use numpy::{
    IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tiles::Border;

/// The library's error as the `mapfilter.errors` class of its kind, its
/// message the library's line (settings spelled as Python's keywords: the
/// module sets the front at import).
fn raise(py: Python<'_>, e: LibError) -> PyErr {
    let made = py.import("mapfilter.errors").and_then(|m| {
        m.getattr("_make")?
            .call1((e.kind().name(), e.cause(), e.hint_text()))
    });
    match made {
        Ok(exception) => PyErr::from_value(exception),
        // The package's own module is missing or broken: say so rather
        // than lose the library's message.
        Err(broken) => broken,
    }
}

/// A C-contiguous array's codes, or a refusal naming the array.
fn contiguous<'a, T: numpy::Element>(a: &'a PyReadonlyArray2<'_, T>) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err("the array is not C-contiguous"))
}

/// A 2-D u16 array from a plane's codes, without copying them.
fn to_array<'py>(py: Python<'py>, out: MemRaster) -> PyResult<Bound<'py, PyArray2<u16>>> {
    out.data.into_pyarray(py).reshape([out.height, out.width])
}

/// The kernel as `smooth --kernel` builds it, a length in metres converted
/// with `pixel_size` (metres per pixel).
fn kernel(
    text: &str,
    size: Option<usize>,
    pixel_size: Option<f64>,
) -> mapfilter_core::Result<mapfilter_core::kernel::Kernel> {
    let arg: KernelArg = text.parse()?;
    // A kernel that comes out 1x1 is refused, as by the CLI (without its
    // --allow-subpixel).
    let resolved = arg.resolve(
        size,
        || match pixel_size {
            Some(metres) => Ok(PixelWidth {
                metres,
                how: format!("pixel size {metres} m"),
            }),
            None => Err(LibError::usage(format!(
                "kernel '{text}' is a length in metres, and the array has no pixel size"
            ))
            .hint(
                "pass pixel_size= (metres per pixel), or give the kernel in pixels (e.g. gaussian:2.5)",
            )),
        },
        false,
    )?;
    resolved.spec.build()
}

/// The keyword arguments of a binding function, read by name from its
/// `**options`: a value of `None` is the same as leaving it out, and a
/// name nobody read is refused (a misspelt option is not silently
/// dropped).
struct Kwargs<'a, 'py> {
    dict: Option<&'a Bound<'py, PyDict>>,
    read: std::cell::RefCell<Vec<&'static str>>,
}

impl<'a, 'py> Kwargs<'a, 'py> {
    fn new(dict: Option<&'a Bound<'py, PyDict>>) -> Self {
        Kwargs {
            dict,
            read: Default::default(),
        }
    }

    /// The value of `key`, if given and not `None`.
    fn get<T: FromPyObject<'py>>(&self, key: &'static str) -> PyResult<Option<T>> {
        self.read.borrow_mut().push(key);
        match self.dict.map(|d| d.get_item(key)).transpose()?.flatten() {
            Some(value) if !value.is_none() => value.extract().map(Some),
            _ => Ok(None),
        }
    }

    /// Refuses the names no [`Kwargs::get`] asked for.
    fn refuse_unknown(&self, function: &str) -> PyResult<()> {
        let read = self.read.borrow();
        for key in self.dict.map(|d| d.keys()).into_iter().flatten() {
            let key: String = key.extract()?;
            if !read.contains(&key.as_str()) {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "{function}() got an unexpected keyword argument '{key}'"
                )));
            }
        }
        Ok(())
    }
}

/// What `mapfilter.smooth` passes to [`smooth_codes`] by keyword: the
/// options of `smooth`, as their Python names.
struct SmoothOptions<'py> {
    kernel_size: Option<usize>,
    pixel_size: Option<f64>,
    method: String,
    fast: FastOptions,
    policies: (Option<String>, Option<String>, Option<String>),
    only_isolated: Option<u32>,
    iterations: Option<usize>,
    class_weights: Option<String>,
    nodata: Option<u16>,
    classes: Option<Vec<u16>>,
    border: String,
    fill_nodata: bool,
    tile: Option<usize>,
    device: String,
    confidence: Option<PyReadonlyArray2<'py, f64>>,
    confidence_float: bool,
    confidence_scale: Option<f64>,
    confidence_nodata: Option<f64>,
}

impl<'py> SmoothOptions<'py> {
    fn read(options: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let k = Kwargs::new(options);
        let read = SmoothOptions {
            kernel_size: k.get("kernel_size")?,
            pixel_size: k.get("pixel_size")?,
            method: k.get("method")?.unwrap_or_else(|| "naive".into()),
            fast: FastOptions {
                rank: k.get("rank")?,
                energy: k.get("energy")?,
                terms: k.get("terms")?,
                exact: k.get("exact")?.unwrap_or(false),
            },
            policies: (k.get("ties")?, k.get("keep")?, k.get("no_vote")?),
            only_isolated: k.get("only_isolated")?,
            iterations: k.get("iterations")?,
            class_weights: k.get("class_weights")?,
            nodata: k.get("nodata")?,
            classes: k.get("classes")?,
            border: k.get("border_text")?.unwrap_or_else(|| "same".into()),
            fill_nodata: k.get("fill_nodata")?.unwrap_or(false),
            tile: k.get("tile")?,
            device: k.get("device")?.unwrap_or_else(|| "host".into()),
            confidence: k.get("confidence")?,
            confidence_float: k.get("confidence_float")?.unwrap_or(true),
            confidence_scale: k.get("confidence_scale")?,
            confidence_nodata: k.get("confidence_nodata")?,
        };
        k.refuse_unknown("smooth_codes")?;
        Ok(read)
    }

    /// Each pixel's vote weight, quantised as `smooth --confidence`
    /// quantises a raster's values.
    fn votes(&self) -> mapfilter_core::Result<Option<Vec<u16>>> {
        let Some(c) = &self.confidence else {
            return Ok(None);
        };
        let scale = match (self.confidence_scale, self.confidence_float) {
            (Some(s), _) => s,
            (None, true) => 1.0,
            (None, false) => {
                return Err(
                    LibError::usage("the scale of integer confidences is not known")
                        .hint("pass confidence_scale= (100 for percent, 255 for bytes)"),
                );
            }
        };
        let q = Quantiser::new(
            self.confidence_float,
            scale,
            self.confidence_nodata,
            "confidence",
        )?;
        let values = c.as_slice().map_err(|_| {
            LibError::usage("the confidences are not a contiguous array")
                .hint("pass numpy.ascontiguousarray(confidence)")
        })?;
        values
            .iter()
            .map(|&v| q.weight(v))
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

/// Smooths a plane of codes (u8 or u16, C-contiguous): the output codes
/// and the engine's wall time in seconds; see `mapfilter.smooth` (which
/// passes the options by keyword: [`SmoothOptions`]).
#[pyfunction]
#[pyo3(signature = (codes, kernel_text, **options))]
fn smooth_codes<'py>(
    py: Python<'py>,
    codes: &Bound<'py, PyAny>,
    kernel_text: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyArray2<u16>>, f64)> {
    let o = SmoothOptions::read(options)?;
    let votes = o.votes().map_err(|e| raise(py, e))?;
    let (ties, keep, no_vote) = (
        o.policies.0.as_deref(),
        o.policies.1.as_deref(),
        o.policies.2.as_deref(),
    );
    let settings = || -> mapfilter_core::Result<_> {
        let kernel = kernel(kernel_text, o.kernel_size, o.pixel_size)?;
        let policies = PolicyText {
            ties,
            keep,
            no_vote,
            only_isolated: o.only_isolated,
            iterations: o.iterations,
        }
        .parse()?;
        let weights: ClassWeights = o.class_weights.as_deref().unwrap_or("").parse()?;
        let spec = MethodSpec::new(o.method.parse()?, None, o.fast)?;
        let device: DeviceChoice = o.device.parse()?;
        Ok((
            kernel,
            policies,
            weights,
            spec,
            device,
            o.border.parse::<Border>()?,
        ))
    };
    let (kernel, policies, weights, method, device, border) =
        settings().map_err(|e| raise(py, e))?;
    let spec = |max_code| PlaneSpec {
        kernel: kernel.clone(),
        weights: weights.clone(),
        border,
        fill_nodata: o.fill_nodata,
        tile: o.tile,
        policies: policies.clone(),
        nodata: o.nodata,
        classes: o.classes.clone(),
        max_code,
        confidence: votes.clone(),
    };
    // The output and the engine's wall time (what the call costs beyond
    // it is the binding's overhead: BENCHMARKS.md).
    let run = |plane: PlaneView, spec: PlaneSpec| -> mapfilter_core::Result<(MemRaster, f64)> {
        let smoother = smoother_for(&method, &device, &spec.kernel)?;
        let (out, _, stats) = smooth_plane(&plane, &spec, smoother.as_ref())?;
        Ok((out, stats.totals.wall.as_secs_f64()))
    };
    let (h, w) = shape(codes)?;
    let (out, engine_seconds) = if let Ok(a) = codes.extract::<PyReadonlyArray2<u16>>() {
        // Zero-copy: the engine reads the array's buffer in place.
        let data = contiguous(&a)?;
        let spec = spec(u16::MAX);
        py.allow_threads(|| run(PlaneView::new(data, w, h)?, spec))
    } else {
        let a = codes.extract::<PyReadonlyArray2<u8>>()?;
        let data = contiguous(&a)?;
        let spec = spec(u8::MAX as u16);
        py.allow_threads(|| {
            let wide: Vec<u16> = data.iter().map(|&c| u16::from(c)).collect();
            run(PlaneView::new(&wide, w, h)?, spec)
        })
    }
    .map_err(|e| raise(py, e))?;
    Ok((to_array(py, out)?, engine_seconds))
}

/// The pixels each side of an output pixel that reach it (the kernel's
/// radius once per iteration): the overlap chunks of one raster need.
#[pyfunction]
#[pyo3(signature = (kernel_text, *, kernel_size=None, pixel_size=None, iterations=None))]
fn smooth_halo(
    py: Python<'_>,
    kernel_text: &str,
    kernel_size: Option<usize>,
    pixel_size: Option<f64>,
    iterations: Option<usize>,
) -> PyResult<usize> {
    let halo = || -> mapfilter_core::Result<usize> {
        let kernel = kernel(kernel_text, kernel_size, pixel_size)?;
        let policies = PolicyText {
            iterations,
            ..PolicyText::default()
        }
        .parse()?;
        policies.checked_halo(kernel.radius())
    };
    halo().map_err(|e| raise(py, e))
}

/// (height, width) of a 2-D array.
fn shape(a: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    let shape: Vec<usize> = a.getattr("shape")?.extract()?;
    match shape[..] {
        [h, w] => Ok((h, w)),
        _ => Err(PyValueError::new_err("expected a 2-D array")),
    }
}

/// Sieves a plane of u16 codes; see `mapfilter.sieve`.
#[pyfunction]
#[pyo3(signature = (codes, threshold, *, connectivity=4, nodata=None, pixel_size=None))]
fn sieve_codes<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u16>,
    threshold: &str,
    connectivity: u8,
    nodata: Option<u16>,
    pixel_size: Option<f64>,
) -> PyResult<Bound<'py, PyArray2<u16>>> {
    let (h, w) = (codes.shape()[0], codes.shape()[1]);
    let data = contiguous(&codes)?;
    let out = py
        .allow_threads(|| -> mapfilter_core::Result<MemRaster> {
            let threshold: Threshold = threshold.parse()?;
            // An area of at most a pixel is refused, as by the CLI.
            let pixels = threshold.pixels(
                || match pixel_size {
                    Some(p) => Ok(p * p),
                    None => Err(LibError::usage(
                        "a threshold given as an area needs the pixel size",
                    )
                    .hint("pass pixel_size= (metres per pixel), or give the threshold in pixels")),
                },
                false,
            )?;
            let connectivity = Connectivity::from_number(connectivity).ok_or_else(|| {
                LibError::usage(format!("connectivity {connectivity} is not 4 or 8"))
                    .hint("4: edges only (gdal_sieve.py's default); 8: edges and corners")
            })?;
            let options = SieveOptions::new(pixels, connectivity, nodata);
            let mut out = MemRaster::filled(w, h, 0);
            mapfilter_core::sieve::sieve(
                &mut PlaneView::new(data, w, h)?,
                &mut out,
                &options,
                &Progress::hidden(),
            )?;
            Ok(out)
        })
        .map_err(|e| raise(py, e))?;
    to_array(py, out)
}

/// The metrics of `compare` as JSON (the CLI's `--json` summary fields);
/// see `mapfilter.compare`.
#[pyfunction]
#[pyo3(signature = (reference, candidate, *, reference_nodata=None, candidate_nodata=None))]
fn compare_codes(
    py: Python<'_>,
    reference: PyReadonlyArray2<'_, u16>,
    candidate: PyReadonlyArray2<'_, u16>,
    reference_nodata: Option<u16>,
    candidate_nodata: Option<u16>,
) -> PyResult<String> {
    let size = |a: &PyReadonlyArray2<u16>| (a.shape()[1], a.shape()[0]);
    let ((rw, rh), (cw, ch)) = (size(&reference), size(&candidate));
    let (r, c) = (contiguous(&reference)?, contiguous(&candidate)?);
    py.allow_threads(|| -> mapfilter_core::Result<String> {
        let confusion = metrics::compare(
            &mut PlaneView::new(r, rw, rh)?,
            &mut PlaneView::new(c, cw, ch)?,
            reference_nodata,
            candidate_nodata,
            |_| Ok(()),
        )?;
        let summary = Summary::new(
            &confusion,
            (rw, rh),
            PixelArea::from_geotransform(None, None),
            &[],
        );
        serde_json::to_string(&summary).map_err(|e| LibError::internal(e.to_string()))
    })
    .map_err(|e| raise(py, e))
}

/// Planes of a (bands, height, width) array.
fn planes<T: numpy::Element + Copy + Default>(a: &PyReadonlyArray3<T>) -> Vec<Plane<T>> {
    let shape = a.shape();
    let (bands, h, w) = (shape[0], shape[1], shape[2]);
    let view = a.as_array();
    (0..bands)
        .map(|b| {
            let data = view
                .index_axis(numpy::ndarray::Axis(0), b)
                .iter()
                .copied()
                .collect();
            Plane::new(w, h, data)
        })
        .collect()
}

/// A (bands, height, width) array of `planes`.
fn stack<'py, T: numpy::Element + Copy>(
    py: Python<'py>,
    planes: Vec<Plane<T>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (w, h) = planes.first().map_or((0, 0), |p| (p.width, p.height));
    let n = planes.len();
    let data: Vec<T> = planes.into_iter().flat_map(|p| p.data).collect();
    Ok(data.into_pyarray(py).reshape([n, h, w])?.into_any())
}

/// Filters a (bands, height, width) image through a chain of ops; see
/// `mapfilter.filter`.
#[pyfunction]
#[pyo3(signature = (image, ops, *, border_text="reflect101", device="host", nodata=None, tile=512))]
fn filter_image<'py>(
    py: Python<'py>,
    image: &Bound<'py, PyAny>,
    ops: Vec<String>,
    border_text: &str,
    device: &str,
    nodata: Option<f64>,
    tile: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let bands = if let Ok(a) = image.extract::<PyReadonlyArray3<u8>>() {
        Bands::U8(planes(&a))
    } else if let Ok(a) = image.extract::<PyReadonlyArray3<u16>>() {
        Bands::U16(planes(&a))
    } else if let Ok(a) = image.extract::<PyReadonlyArray3<i16>>() {
        Bands::I16(planes(&a))
    } else {
        Bands::F32(planes(&image.extract::<PyReadonlyArray3<f32>>()?))
    };
    let out = py
        .allow_threads(|| -> mapfilter_core::Result<Bands> {
            let chain = Chain::parse(&ops)?;
            let border: BorderMode = border_text.parse()?;
            chain.check(bands.count(), bands.sample_type(), border, nodata)?;
            let runner = device.parse::<RunOn>()?.runner()?;
            let job = FilterJob {
                chain,
                border,
                tile,
            };
            let input = MemImage::new(bands, nodata);
            Ok(filter_in_memory(&input, &job, runner.as_ref())?.bands)
        })
        .map_err(|e| raise(py, e))?;
    match out {
        Bands::U8(p) => stack(py, p),
        Bands::U16(p) => stack(py, p),
        Bands::I16(p) => stack(py, p),
        Bands::F32(p) => stack(py, p),
    }
}

/// The OpenCL devices, as `mapfilter devices` lists them; see
/// `mapfilter.devices`.
#[pyfunction]
fn list_opencl_devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let devices = py.allow_threads(list_devices).map_err(|e| raise(py, e))?;
    devices
        .iter()
        .map(|d| {
            let row = PyDict::new(py);
            row.set_item("index", d.index)?;
            row.set_item("name", &d.name)?;
            row.set_item("platform", &d.platform)?;
            row.set_item("kind", d.kind.to_string())?;
            row.set_item("compute_units", d.compute_units)?;
            row.set_item("global_mem", d.global_mem)?;
            row.set_item("version", &d.version)?;
            Ok(row)
        })
        .collect()
}

#[pymodule]
fn _mapfilter(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Messages name settings as this package's keywords (`tile=`), not
    // as the CLI's flags.
    mapfilter_core::error::setting::set_front(mapfilter_core::error::Front::Python);
    m.add_function(wrap_pyfunction!(smooth_codes, m)?)?;
    m.add_function(wrap_pyfunction!(smooth_halo, m)?)?;
    m.add_function(wrap_pyfunction!(sieve_codes, m)?)?;
    m.add_function(wrap_pyfunction!(compare_codes, m)?)?;
    m.add_function(wrap_pyfunction!(filter_image, m)?)?;
    m.add_function(wrap_pyfunction!(list_opencl_devices, m)?)?;
    Ok(())
}
