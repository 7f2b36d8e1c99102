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

/// Where class codes come from.
pub trait ClassSource: Send {
    /// Width and height in pixels.
    fn size(&self) -> (usize, usize);
    /// Reads the codes of `window` row-major into `buf` (`window.area()` values).
    fn read(&mut self, window: Rect, buf: &mut [u16]) -> Result<()>;
}

/// Where output codes go.
pub trait ClassSink: Send {
    /// Writes `codes` (row-major) into `window` of the output.
    fn write(&mut self, window: Rect, codes: &[u16]) -> Result<()>;
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
            _ => crate::bail!("tile of another sample type than the output"),
        }
        Ok(())
    }
}
