//! The model layer's sources, sinks and in-memory rasters, shared by both
//! engines and by everything that reads or writes pixels (GDAL I/O, metrics,
//! synthetic maps, reports): class rasters ([`ClassSource`], [`ClassSink`],
//! [`MemRaster`]) and multi-band images ([`ImageSource`], [`ImageSink`],
//! [`MemImage`], [`crop`]). No GDAL, no OpenCL, no methods: naming a source
//! must not pull in the stacks that consume it.

use crate::error::Result;
use crate::pixel::{Bands, Pixel, Plane, SampleType};
use crate::with_bands;
use rayon::prelude::*;
use tiles::Rect;

/// Windows of at least this many pixels are copied in and out of a
/// [`MemRaster`] by the pool's threads: one thread's memory bandwidth is what
/// bounds the in-memory engine's reader and writer on a GPU's large tiles,
/// while a host tile's copy is too small to be worth the split.
const PARALLEL_COPY_MIN: u64 = 1 << 19;

/// Default tile side of both engines: large enough to amortise the halo,
/// small enough to pipeline.
pub const DEFAULT_TILE: usize = 512;

/// Largest tile side whose host tiles the engine always sends to the pool
/// several at once. A larger tile has many bands, and many of them in
/// memory would cost much (a dct5 ranking alone holds up to 36 bytes a
/// pixel: 2.4 GB at 8192²), so it goes to the pool only where the tiles
/// in flight hold at most [`ON_POOL_MAX_PIXELS`]. A method may spread a
/// tile's own set-up over the threads past this side only: below it the
/// other threads hold tiles of their own (decision 0028).
pub const ON_POOL_MAX_TILE: usize = 1024;

/// The most pixels that tiles larger than [`ON_POOL_MAX_TILE`] may hold
/// on the pool at once (those of a 4096² raster): on two to four threads,
/// three 2048² tiles of a wide kernel. Run alone, such a tile's two bands
/// (one per thread) rarely cost the same, and one thread idled while the
/// other finished: a quarter of a 2-core run of dct5 `--exact` at σ = 150
/// (decision 0030).
pub const ON_POOL_MAX_PIXELS: usize = 1 << 24;

/// Where class codes come from.
pub trait ClassSource: Send {
    /// Width and height in pixels.
    fn size(&self) -> (usize, usize);
    /// Reads the codes of `window` row-major into `buf` (`window.area()` values).
    fn read(&mut self, window: Rect, buf: &mut [u16]) -> Result<()>;
    /// The whole raster row-major, where it already lies in memory: the
    /// engine then stages windows from it in place instead of copying them
    /// out first (a copy is most of a GPU run's host memory traffic).
    fn resident(&self) -> Option<&[u16]> {
        None
    }
}

/// Where output codes go.
pub trait ClassSink: Send {
    /// Writes `codes` (row-major) into `window` of the output.
    fn write(&mut self, window: Rect, codes: &[u16]) -> Result<()>;
    /// The whole output row-major, where it lies in memory: the engine then
    /// maps a device's results straight into it instead of handing windows
    /// to [`ClassSink::write`].
    fn resident_mut(&mut self) -> Option<&mut [u16]> {
        None
    }
}

/// The rows of a window inside a row-major buffer: row `r` is
/// `data[r * stride..][..width]`, so a window of a raster in memory is
/// written in place and a window of its own is the case `stride == width`.
pub struct RowsMut<'a> {
    data: &'a mut [u16],
    width: usize,
    stride: usize,
}

impl<'a> RowsMut<'a> {
    /// A whole buffer of rows of `width` values.
    pub fn contiguous(data: &'a mut [u16], width: usize) -> Self {
        let width = width.max(1);
        assert_eq!(data.len() % width, 0, "whole rows");
        RowsMut {
            data,
            width,
            stride: width,
        }
    }

    /// `window` of a row-major raster `raster` of `raster_width` columns.
    pub fn window(raster: &'a mut [u16], raster_width: usize, window: Rect) -> Self {
        assert!(
            window.x + window.width <= raster_width,
            "window inside the raster"
        );
        if window.is_empty() {
            return RowsMut {
                data: &mut [],
                width: window.width.max(1),
                stride: raster_width.max(1),
            };
        }
        let start = window.y * raster_width + window.x;
        let end = start + (window.height - 1) * raster_width + window.width;
        RowsMut {
            data: &mut raster[start..end],
            width: window.width,
            stride: raster_width,
        }
    }

    /// Values in the window.
    pub fn len(&self) -> usize {
        self.rows() * self.width
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn rows(&self) -> usize {
        self.data.len().div_ceil(self.stride)
    }

    /// The window's rows, for the pool.
    pub fn par_rows_mut(&mut self) -> impl IndexedParallelIterator<Item = &mut [u16]> + '_ {
        let width = self.width;
        self.data
            .par_chunks_mut(self.stride)
            .map(move |row| &mut row[..width])
    }

    /// Whether any value of the window is `value`.
    pub fn contains(&self, value: u16) -> bool {
        self.data
            .par_chunks(self.stride)
            .any(|row| row[..self.width].contains(&value))
    }

    /// Fills the window from `values` (row-major, [`RowsMut::len`] of them),
    /// each mapped by `map`.
    pub fn fill_mapped<T: Copy + Sync>(&mut self, values: &[T], map: impl Fn(T) -> u16 + Sync) {
        assert_eq!(values.len(), self.len(), "one value per pixel");
        let width = self.width;
        self.par_rows_mut()
            .zip(values.par_chunks(width))
            .for_each(|(row, src)| row.iter_mut().zip(src).for_each(|(o, &v)| *o = map(v)));
    }
}

/// A class raster held in memory: a source, a sink, and the reference
/// against which tiled runs are tested.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemRaster {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u16>,
}

impl MemRaster {
    pub fn new(width: usize, height: usize, data: Vec<u16>) -> Self {
        assert_eq!(data.len(), width * height);
        MemRaster {
            width,
            height,
            data,
        }
    }

    pub fn filled(width: usize, height: usize, value: u16) -> Self {
        Self::new(width, height, vec![value; width * height])
    }
}

impl ClassSource for MemRaster {
    fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    fn resident(&self) -> Option<&[u16]> {
        Some(&self.data)
    }

    fn read(&mut self, w: Rect, buf: &mut [u16]) -> Result<()> {
        let copy_row = |(row, dst): (usize, &mut [u16])| {
            let start = (w.y + row) * self.width + w.x;
            dst.copy_from_slice(&self.data[start..start + w.width]);
        };
        let width = w.width.max(1);
        if w.area() >= PARALLEL_COPY_MIN {
            buf.par_chunks_exact_mut(width)
                .enumerate()
                .for_each(copy_row);
        } else {
            buf.chunks_exact_mut(width).enumerate().for_each(copy_row);
        }
        Ok(())
    }
}

impl ClassSink for MemRaster {
    fn resident_mut(&mut self) -> Option<&mut [u16]> {
        Some(&mut self.data)
    }

    fn write(&mut self, w: Rect, codes: &[u16]) -> Result<()> {
        let width = self.width;
        let band = &mut self.data[w.y * width..(w.y + w.height) * width];
        let copy_row = |(row, src): (&mut [u16], &[u16])| {
            row[w.x..w.x + w.width].copy_from_slice(src);
        };
        if w.area() >= PARALLEL_COPY_MIN {
            band.par_chunks_exact_mut(width)
                .zip(codes.par_chunks_exact(w.width.max(1)))
                .for_each(copy_row);
        } else {
            band.chunks_exact_mut(width)
                .zip(codes.chunks_exact(w.width.max(1)))
                .for_each(copy_row);
        }
        Ok(())
    }
}

/// Where pixels come from.
pub trait ImageSource: Send {
    fn size(&self) -> (usize, usize);
    fn bands(&self) -> usize;
    fn sample_type(&self) -> SampleType;
    fn nodata(&self) -> Option<f64>;
    /// Reads `window` of every band.
    fn read(&mut self, window: Rect) -> Result<Bands>;
}

/// Where filtered pixels go.
pub trait ImageSink: Send {
    /// Writes `bands` (each `window`-sized) into `window` of the output.
    fn write(&mut self, window: Rect, bands: &Bands) -> Result<()>;
}

/// A multi-band image in memory: a source, a sink, and the reference of tests.
#[derive(Clone, Debug, PartialEq)]
pub struct MemImage {
    pub bands: Bands,
    pub nodata: Option<f64>,
}

impl MemImage {
    pub fn new(bands: Bands, nodata: Option<f64>) -> Self {
        MemImage { bands, nodata }
    }

    /// An image of `bands` zero bands of type `t`.
    pub fn zeros(t: SampleType, width: usize, height: usize, bands: usize) -> Self {
        fn z<T: Pixel>(w: usize, h: usize, n: usize) -> Bands {
            T::wrap((0..n).map(|_| Plane::zeros(w, h)).collect())
        }
        MemImage::new(
            crate::with_type!(t, T => z::<T>(width, height, bands)),
            None,
        )
    }
}

/// The `window` of every band.
pub fn crop(bands: &Bands, window: Rect) -> Bands {
    fn typed<T: Pixel>(p: &[Plane<T>], r: Rect) -> Bands {
        T::wrap(
            p.iter()
                .map(|p| {
                    let mut data = Vec::with_capacity(r.width * r.height);
                    for y in r.y..r.y + r.height {
                        data.extend_from_slice(&p.row(y)[r.x..r.x + r.width]);
                    }
                    Plane::new(r.width, r.height, data)
                })
                .collect(),
        )
    }
    with_bands!(bands, p => typed(p, window))
}

impl ImageSource for MemImage {
    fn size(&self) -> (usize, usize) {
        self.bands.size()
    }
    fn bands(&self) -> usize {
        self.bands.count()
    }
    fn sample_type(&self) -> SampleType {
        self.bands.sample_type()
    }
    fn nodata(&self) -> Option<f64> {
        self.nodata
    }
    fn read(&mut self, window: Rect) -> Result<Bands> {
        Ok(crop(&self.bands, window))
    }
}

impl ImageSink for MemImage {
    fn write(&mut self, window: Rect, src: &Bands) -> Result<()> {
        fn typed<T: Pixel>(dst: &mut [Plane<T>], src: &[Plane<T>], r: Rect) {
            for (d, s) in dst.iter_mut().zip(src) {
                for row in 0..r.height {
                    let start = (r.y + row) * d.width + r.x;
                    d.data[start..start + r.width].copy_from_slice(s.row(row));
                }
            }
        }
        match (&mut self.bands, src) {
            (Bands::U8(d), Bands::U8(s)) => typed(d, s, window),
            (Bands::U16(d), Bands::U16(s)) => typed(d, s, window),
            (Bands::I16(d), Bands::I16(s)) => typed(d, s, window),
            (Bands::F32(d), Bands::F32(s)) => typed(d, s, window),
            _ => crate::bail!(internal, "tile of another sample type than the output"),
        }
        Ok(())
    }
}
