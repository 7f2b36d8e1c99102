//! Sample types of continuous rasters and the planes that hold them.
//!
//! Every image op maps planes of one sample type to planes of the same type
//! (rounded half-to-even and saturated, as OpenCV's `saturate_cast`), except
//! Scharr, whose derivatives are Float32. [`Bands`] holds a tile's bands of
//! whichever type the raster has, so a chain can change type between ops.

use std::fmt::Debug;

/// The sample types `mapfilter filter` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SampleType {
    U8,
    U16,
    I16,
    F32,
}

impl SampleType {
    pub fn name(self) -> &'static str {
        match self {
            SampleType::U8 => "Byte",
            SampleType::U16 => "UInt16",
            SampleType::I16 => "Int16",
            SampleType::F32 => "Float32",
        }
    }

    /// The OpenCL C type of a sample.
    pub fn cl_type(self) -> &'static str {
        match self {
            SampleType::U8 => "uchar",
            SampleType::U16 => "ushort",
            SampleType::I16 => "short",
            SampleType::F32 => "float",
        }
    }

    /// Bytes per sample.
    pub fn size(self) -> usize {
        match self {
            SampleType::U8 => 1,
            SampleType::U16 | SampleType::I16 => 2,
            SampleType::F32 => 4,
        }
    }

    /// The smallest and largest value (`None` for Float32: no fixed range).
    pub fn range(self) -> Option<(f64, f64)> {
        match self {
            SampleType::U8 => Some((0.0, 255.0)),
            SampleType::U16 => Some((0.0, 65535.0)),
            SampleType::I16 => Some((-32768.0, 32767.0)),
            SampleType::F32 => None,
        }
    }
}

/// A sample type: conversions to and from `f32`, branch-free min/max.
pub trait Pixel: Copy + Default + PartialOrd + Send + Sync + Debug + 'static {
    const TYPE: SampleType;
    fn to_f32(self) -> f32;
    /// The value as `i32` (integer types; Float32 truncates).
    fn to_i32(self) -> i32;
    /// Rounds half to even and saturates (NaN gives 0), as OpenCV's `saturate_cast`.
    fn from_f32(v: f32) -> Self;
    /// `v` as `Self` by a plain cast (for values known to be in range).
    fn from_i32(v: i32) -> Self;
    /// `v` as this type, if it is exactly representable.
    fn from_f64_exact(v: f64) -> Option<Self>;
    /// Equality that also holds between two NaNs (nodata may be NaN).
    #[inline(always)]
    fn same(self, other: Self) -> bool {
        self == other
    }
    #[inline(always)]
    fn lo(self, other: Self) -> Self {
        if other < self { other } else { self }
    }
    #[inline(always)]
    fn hi(self, other: Self) -> Self {
        if other > self { other } else { self }
    }
    /// Wraps planes of this type into [`Bands`].
    fn wrap(planes: Vec<Plane<Self>>) -> Bands;
}

macro_rules! int_pixel {
    ($t:ty, $st:ident) => {
        impl Pixel for $t {
            const TYPE: SampleType = SampleType::$st;
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                // Clamp, then round half to even by the 1.5·2²³ trick (exact for
                // |v| < 2²²): branch-free, so loops of it vectorise, unlike
                // `round_ties_even`, which is a libm call without SSE4.1.
                // NaN stays NaN through both steps and gives 0. The cast is the
                // unchecked one (the value is in range by then): a saturating
                // cast does not vectorise on x86.
                const MAGIC: f32 = 12_582_912.0;
                let c = v.clamp(<$t>::MIN as f32, <$t>::MAX as f32);
                let r = (c + MAGIC) - MAGIC;
                let r = if r.is_nan() { 0.0 } else { r };
                // SAFETY: `r` is a whole number between the type's MIN and MAX.
                unsafe { r.to_int_unchecked::<i32>() as $t }
            }
            #[inline(always)]
            fn from_i32(v: i32) -> Self {
                v as $t
            }
            fn from_f64_exact(v: f64) -> Option<Self> {
                (v.fract() == 0.0 && v >= <$t>::MIN as f64 && v <= <$t>::MAX as f64)
                    .then_some(v as $t)
            }
            fn wrap(planes: Vec<Plane<Self>>) -> Bands {
                Bands::$st(planes)
            }
        }
    };
}
int_pixel!(u8, U8);
int_pixel!(u16, U16);
int_pixel!(i16, I16);

impl Pixel for f32 {
    const TYPE: SampleType = SampleType::F32;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn from_i32(v: i32) -> Self {
        v as f32
    }
    fn from_f64_exact(v: f64) -> Option<Self> {
        (v.is_nan() || v as f32 as f64 == v).then_some(v as f32)
    }
    #[inline(always)]
    fn same(self, other: Self) -> bool {
        self == other || (self.is_nan() && other.is_nan())
    }
    fn wrap(planes: Vec<Plane<Self>>) -> Bands {
        Bands::F32(planes)
    }
}

/// An accumulator of the exact integer fast paths: `i16` where every
/// partial sum is known to fit (twice the vector lanes), else `i32`.
pub trait Acc:
    Copy
    + Default
    + Send
    + Sync
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
{
    /// The largest magnitude every partial sum must stay below.
    const LIMIT: f64;
    /// `v` (known to fit) as `Self`.
    fn of(v: i32) -> Self;
    fn to_f32(self) -> f32;
}

impl Acc for i16 {
    const LIMIT: f64 = 32767.0;
    #[inline(always)]
    fn of(v: i32) -> Self {
        v as i16
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
}

impl Acc for i32 {
    const LIMIT: f64 = (1 << 24) as f64;
    #[inline(always)]
    fn of(v: i32) -> Self {
        v
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// One band of a tile, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Plane<T> {
    pub width: usize,
    pub height: usize,
    pub data: Vec<T>,
}

impl<T: Copy + Default> Plane<T> {
    pub fn new(width: usize, height: usize, data: Vec<T>) -> Self {
        assert_eq!(data.len(), width * height, "plane size");
        Plane {
            width,
            height,
            data,
        }
    }

    /// A plane of `T::default()` (zero for every sample type). Large ones are
    /// advised to the kernel as transparent huge pages, as numpy does for
    /// its arrays (OpenCV's outputs in Python among them): first touch then
    /// faults once per 2 MiB instead of once per 4 KiB.
    pub fn zeros(width: usize, height: usize) -> Self {
        let data = vec![T::default(); width * height];
        huge_pages(&data);
        Self::new(width, height, data)
    }

    #[inline]
    pub fn row(&self, y: usize) -> &[T] {
        &self.data[y * self.width..(y + 1) * self.width]
    }

    #[inline]
    pub fn at(&self, x: usize, y: usize) -> T {
        self.data[y * self.width + x]
    }
}

/// Asks for transparent huge pages under `data` where it spans at least
/// 4 MiB (numpy's threshold). Only advice: the contents do not change, and
/// where the kernel does not do it nothing happens.
fn huge_pages<T>(data: &[T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = std::mem::size_of_val(data);
        if bytes < 4 << 20 {
            return;
        }
        let start = (data.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (data.as_ptr() as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside `data`'s allocation, and
            // MADV_HUGEPAGE never changes memory contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
}

/// A tile's bands, all of one sample type.
#[derive(Clone, Debug, PartialEq)]
pub enum Bands {
    U8(Vec<Plane<u8>>),
    U16(Vec<Plane<u16>>),
    I16(Vec<Plane<i16>>),
    F32(Vec<Plane<f32>>),
}

/// Runs `$e` with `$p` bound to the planes of whichever type `$b` holds.
#[macro_export]
macro_rules! with_bands {
    ($b:expr, $p:ident => $e:expr) => {
        match $b {
            $crate::pixel::Bands::U8($p) => $e,
            $crate::pixel::Bands::U16($p) => $e,
            $crate::pixel::Bands::I16($p) => $e,
            $crate::pixel::Bands::F32($p) => $e,
        }
    };
}

/// Runs `$e` with the type `$T` bound to the Rust type of sample type `$t`.
#[macro_export]
macro_rules! with_type {
    ($t:expr, $T:ident => $e:expr) => {
        match $t {
            $crate::pixel::SampleType::U8 => {
                type $T = u8;
                $e
            }
            $crate::pixel::SampleType::U16 => {
                type $T = u16;
                $e
            }
            $crate::pixel::SampleType::I16 => {
                type $T = i16;
                $e
            }
            $crate::pixel::SampleType::F32 => {
                type $T = f32;
                $e
            }
        }
    };
}

impl Bands {
    pub fn sample_type(&self) -> SampleType {
        match self {
            Bands::U8(_) => SampleType::U8,
            Bands::U16(_) => SampleType::U16,
            Bands::I16(_) => SampleType::I16,
            Bands::F32(_) => SampleType::F32,
        }
    }

    pub fn count(&self) -> usize {
        with_bands!(self, p => p.len())
    }

    /// Width and height (of the first band; all bands share them).
    pub fn size(&self) -> (usize, usize) {
        with_bands!(self, p => p.first().map_or((0, 0), |b| (b.width, b.height)))
    }
}

/// Deterministic pseudo-random planes (xorshift) for tests and benches: the
/// full range of `T` for integers, -500..500 for Float32.
pub fn noise_planes<T: Pixel>(w: usize, h: usize, bands: usize, seed: u64) -> Vec<Plane<T>> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..bands)
        .map(|_| {
            let data = (0..w * h)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    let u = (s >> 40) as f32 / (1u64 << 24) as f32;
                    match T::TYPE.range() {
                        Some((lo, hi)) => T::from_f32((lo + (hi - lo) * u as f64) as f32),
                        None => T::from_f32(u * 1000.0 - 500.0),
                    }
                })
                .collect();
            Plane::new(w, h, data)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_even_and_saturating() {
        assert_eq!(u8::from_f32(2.5), 2);
        assert_eq!(u8::from_f32(3.5), 4);
        assert_eq!(u8::from_f32(-3.0), 0);
        assert_eq!(u8::from_f32(300.0), 255);
        assert_eq!(i16::from_f32(-40000.0), i16::MIN);
        assert_eq!(u16::from_f32(f32::NAN), 0);
        assert_eq!(u8::from_f64_exact(-9999.0), None);
        assert_eq!(i16::from_f64_exact(-9999.0), Some(-9999));
        assert!(f32::NAN.same(f32::NAN));
        // Against the library's rounding over the whole range and beyond.
        let mut v = -70000.0f32;
        while v < 70000.0 {
            let want = v.round_ties_even().clamp(-32768.0, 32767.0) as i16;
            assert_eq!(i16::from_f32(v), want, "{v}");
            assert_eq!(
                u16::from_f32(v),
                v.round_ties_even().clamp(0.0, 65535.0) as u16
            );
            v += 0.25;
        }
    }
}
