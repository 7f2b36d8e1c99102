//! [`Blend`] on an OpenCL device (`kernels/blend.cl`): the same sums and
//! conversions as the host's [`Blend::apply`], which is its plain Rust
//! counterpart, so both give the same bits. Bands go up, are blended and
//! come down one at a time (a strip of a raster per call).

use super::blend::{Blend, BlendNodata};
use crate::device::{Args, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY, Device, Queue};
use crate::error::Result;
use crate::pixel::{Pixel, Plane, SampleType};

/// Blends `a` and `b` (equal sizes and counts) on `dev`, with the alpha
/// plane `alpha` for [`Blend::Alpha`]; as [`Blend::apply`].
pub fn apply<T: Pixel, A: Pixel>(
    dev: &Device,
    blend: Blend,
    a: &[Plane<T>],
    b: &[Plane<T>],
    alpha: Option<&Plane<A>>,
    nd: BlendNodata,
) -> Result<Vec<Plane<T>>> {
    let nda = nd.a.and_then(T::from_f64_exact);
    let ndb = nd.b.and_then(T::from_f64_exact);
    let ndw = nd.alpha.and_then(A::from_f64_exact);
    let out_nd = nda.unwrap_or_default();
    let (wa, wb, wg) = match blend {
        Blend::Weighted { alpha, beta, gamma } => (alpha, beta, gamma),
        Blend::Alpha => (0.0, 0.0, 0.0),
    };
    let use_alpha = blend == Blend::Alpha && alpha.is_some();
    let opts = BuildOptions::new()
        .define("T", T::TYPE.cl_type())
        .define("A", A::TYPE.cl_type())
        .define("CONVERT", convert(T::TYPE))
        .define("ALPHA", use_alpha as u8)
        .define("A_INT", A::TYPE.range().is_some() as u8)
        .define(
            "A_HI",
            literal(A::TYPE.range().map_or(1.0, |(_, hi)| hi as f32)),
        )
        .define("HAS_NDA", nda.is_some() as u8)
        .define("NDA", literal(nda.map_or(0.0, Pixel::to_f32)))
        .define("HAS_NDB", ndb.is_some() as u8)
        .define("NDB", literal(ndb.map_or(0.0, Pixel::to_f32)))
        .define("HAS_NDW", ndw.is_some() as u8)
        .define("NDW", literal(ndw.map_or(0.0, Pixel::to_f32)))
        .define("OUT_ND", literal(out_nd.to_f32()))
        .raw("-cl-fp32-correctly-rounded-divide-sqrt");
    let kernel = dev.kernel("blend", &opts, "blend")?;
    let n = a.first().map_or(0, |p| p.data.len());
    let weights = match alpha.filter(|_| use_alpha) {
        Some(p) => dev.buffer_from(&p.data, CL_MEM_READ_ONLY)?,
        None => dev.buffer::<A>(1, CL_MEM_READ_ONLY)?,
    };
    let mut ba = dev.buffer::<T>(n, CL_MEM_READ_ONLY)?;
    let mut bb = dev.buffer::<T>(n, CL_MEM_READ_ONLY)?;
    let out = dev.buffer::<T>(n, CL_MEM_WRITE_ONLY)?;
    let mut result = Vec::with_capacity(a.len());
    for (pa, pb) in a.iter().zip(b) {
        dev.upload(&mut ba, &pa.data)?;
        dev.upload(&mut bb, &pb.data)?;
        Args::new(&kernel)
            .mem(&ba)
            .mem(&bb)
            .mem(&weights)
            .mem(&out)
            .scalar(wa)
            .scalar(wb)
            .scalar(wg)
            .scalar(n as u64)
            .done()?;
        dev.launch(Queue::Compute, &kernel, &[n.max(1)], Some(&[256]), &[])?;
        let mut data = vec![T::default(); n];
        dev.download(&out, &mut data)?;
        result.push(Plane::new(pa.width, pa.height, data));
    }
    Ok(result)
}

/// OpenCL's conversion to `t` matching [`Pixel::from_f32`].
fn convert(t: SampleType) -> &'static str {
    match t {
        SampleType::U8 => "convert_uchar_sat_rte",
        SampleType::U16 => "convert_ushort_sat_rte",
        SampleType::I16 => "convert_short_sat_rte",
        SampleType::F32 => "",
    }
}

fn literal(v: f32) -> String {
    if v.is_nan() {
        "NAN".into()
    } else {
        format!("({v:?}f)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::test_device;

    fn plane<T: Pixel>(seed: u32, scale: f32) -> Plane<T> {
        let data = (0..97 * 13u32)
            .map(|i| {
                let v = i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 20;
                T::from_f32(v as f32 * scale - 300.0)
            })
            .collect();
        Plane::new(97, 13, data)
    }

    fn same<T: Pixel>(x: &[Plane<T>], y: &[Plane<T>]) -> bool {
        x.iter()
            .zip(y)
            .all(|(p, q)| p.data.iter().zip(&q.data).all(|(u, v)| u.same(*v)))
    }

    fn check<T: Pixel, A: Pixel>(dev: &Device, nd: BlendNodata) {
        let a = vec![plane::<T>(1, 0.37), plane::<T>(2, 0.11)];
        let b = vec![plane::<T>(3, 0.29), plane::<T>(4, 0.53)];
        let w = plane::<A>(5, 0.0173);
        let blends = [
            Blend::Weighted {
                alpha: 0.7,
                beta: 0.3,
                gamma: 0.0,
            },
            Blend::Weighted {
                alpha: 1.3,
                beta: -0.6,
                gamma: -10.25,
            },
            Blend::Alpha,
        ];
        for blend in blends {
            let alpha = (blend == Blend::Alpha).then_some(&w);
            let host = blend.apply(&a, &b, alpha, nd);
            let cl = apply(dev, blend, &a, &b, alpha, nd).unwrap();
            assert!(
                same(&host, &cl),
                "{:?}/{:?} {blend:?} {nd:?}",
                T::TYPE,
                A::TYPE
            );
        }
    }

    #[test]
    fn device_blend_equals_the_host() {
        let Some(dev) = test_device() else { return };
        let none = BlendNodata::default();
        let nd = BlendNodata {
            a: Some(0.0),
            b: Some(7.0),
            alpha: Some(3.0),
        };
        check::<u8, u8>(&dev, none);
        check::<u8, u8>(&dev, nd);
        check::<u16, f32>(&dev, none);
        check::<i16, u16>(&dev, nd);
        check::<f32, f32>(
            &dev,
            BlendNodata {
                a: Some(f64::NAN),
                ..none
            },
        );
    }
}
