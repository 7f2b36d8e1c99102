//! Laplacian pyramid levels: `laplacian-level` (the detail a pyramid step
//! loses, `g − pyrup(pyrdown(g))`) and `laplacian-top` (the coarsest
//! Gaussian level kept as the residual), in a signed sample type.
//!
//! Level k of `laplacian-pyramid:LEVELS` is `pyrdown` k times then
//! `laplacian-level`; the last level is `pyrdown` LEVELS−1 times then
//! `laplacian-top` ([`super::levels`]). `pyrup` here is OpenCV's `pyrUp` of
//! the coarser level to twice its size, cut to the finer level's size (the
//! `dstsize` of OpenCV's recipe; at an odd height OpenCV 4.6 fills the last
//! row partly by the odd-row formula, depending on its vector width, so the
//! cut is the rule here). Both steps round to the input's type as OpenCV's
//! `pyrDown`/`pyrUp` do.
//!
//! Output type ([`diff_type`]): the difference of two samples of the input
//! type, exactly, with no offset: Byte → Int16 (−255..255), UInt16 and
//! Int16 → Float32 (whole numbers, exact up to 2²⁴), Float32 → Float32 (one
//! rounding). The top level is widened to the same type, so every level
//! shares one type. Reconstruction, `g_k = l_k + pyrup(g_{k+1})` from the
//! top down in the input type, gives the input back exactly for integer
//! inputs.
//!
//! Nodata: a level's pixel is nodata where the pixel or its parent on the
//! coarser level is; the output's nodata value is [`diff_nodata`] (−32768,
//! outside every Int16 difference of bytes, or NaN).

use super::border::{BorderMode, Win};
use super::pyramid::Pyr;
use crate::pixel::{Bands, Pixel, Plane, SampleType};
use crate::with_type;

/// The two level ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// `g − pyrup(pyrdown(g))`, cut to g's size.
    Level,
    /// `g` itself in the level type (the pyramid's top).
    Top,
}

/// The sample type that holds every difference of two `t` samples.
pub fn diff_type(t: SampleType) -> SampleType {
    match t {
        SampleType::U8 => SampleType::I16,
        _ => SampleType::F32,
    }
}

/// The nodata value of a level of type `t` made from an input with nodata.
pub fn diff_nodata(t: SampleType) -> f64 {
    match t {
        SampleType::F32 => f64::NAN,
        _ => i16::MIN as f64,
    }
}

impl Detail {
    /// Input pixels beyond the output window that a level reads: pyrdown's
    /// 2 around each coarse pixel, whose 3 around ⌊x/2⌋ pyrup reads.
    pub fn radius(self) -> usize {
        match self {
            Detail::Level => 5,
            Detail::Top => 0,
        }
    }

    /// Runs the op on `planes` (window `have` of an `image`-sized raster)
    /// into window `target`; `nd` is the input's nodata value.
    pub fn apply<T: Pixel>(
        self,
        planes: &[Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Bands {
        let ndt = nd.and_then(T::from_f64_exact);
        let is_nd = |v: T| ndt.is_some_and(|n| v.same(n));
        let up = match self {
            Detail::Top => None,
            Detail::Level => {
                let small = Pyr::Down.out_size(image);
                let mid = Pyr::Up.need(target).clamp(small.0, small.1);
                let down = Pyr::Down.apply(planes, have, image, mid, border, nd);
                Some(Pyr::Up.apply(&down, mid, small, target, border, nd))
            }
        };
        let (dx, dy) = ((target.x - have.x) as usize, (target.y - have.y) as usize);
        with_type!(diff_type(T::TYPE), O => {
            let out_nd = O::from_f32(diff_nodata(O::TYPE) as f32);
            O::wrap(
                planes
                    .iter()
                    .enumerate()
                    .map(|(b, p)| {
                        let mut data = Vec::with_capacity(target.width * target.height);
                        for y in 0..target.height {
                            let row = &p.row(dy + y)[dx..dx + target.width];
                            match &up {
                                None => data.extend(row.iter().map(|&v| {
                                    if is_nd(v) { out_nd } else { O::from_f32(v.to_f32()) }
                                })),
                                Some(up) => data.extend(row.iter().zip(up[b].row(y)).map(
                                    |(&v, &u)| {
                                        if is_nd(v) || is_nd(u) {
                                            out_nd
                                        } else {
                                            O::from_f32(v.to_f32() - u.to_f32())
                                        }
                                    },
                                )),
                            }
                        }
                        Plane::new(target.width, target.height, data)
                    })
                    .collect(),
            )
        })
    }
}

/// Rebuilds level 0 from the levels of a Laplacian pyramid (finest first,
/// the top last), in the input type `T`: `g_k = l_k + pyrup(g_{k+1})` cut
/// to l_k's size, under `border`. The inverse of the level ops for integer
/// inputs (without nodata).
pub fn reconstruct<T: Pixel>(levels: &[Vec<Plane<f32>>], border: BorderMode) -> Vec<Plane<T>> {
    let top = levels.last().expect("a pyramid has a top");
    let mut g: Vec<Plane<T>> = top
        .iter()
        .map(|p| {
            Plane::new(
                p.width,
                p.height,
                p.data.iter().map(|&v| T::from_f32(v)).collect(),
            )
        })
        .collect();
    for l in levels.iter().rev().skip(1) {
        let (w, h) = (l[0].width, l[0].height);
        let small = (g[0].width, g[0].height);
        let all = Win::new(0, 0, small.0, small.1);
        let up = Pyr::Up.apply(&g, all, small, Win::new(0, 0, w, h), border, None);
        g = l
            .iter()
            .zip(&up)
            .map(|(l, u)| {
                let data = l.data.iter().zip(&u.data);
                Plane::new(
                    w,
                    h,
                    data.map(|(&d, &u)| T::from_f32(d + u.to_f32())).collect(),
                )
            })
            .collect();
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pixel::noise_planes;

    fn as_f32(b: Bands) -> Vec<Plane<f32>> {
        crate::with_bands!(b, p => p.into_iter().map(|p| {
            Plane::new(p.width, p.height, p.data.iter().map(|v| v.to_f32()).collect())
        }).collect())
    }

    /// The levels of a whole image, finest first.
    fn pyramid<T: Pixel>(planes: &[Plane<T>], levels: usize) -> Vec<Vec<Plane<f32>>> {
        let mut g = planes.to_vec();
        let mut out = Vec::new();
        for k in 0..levels {
            let size = (g[0].width, g[0].height);
            let all = Win::new(0, 0, size.0, size.1);
            let op = if k + 1 == levels {
                Detail::Top
            } else {
                Detail::Level
            };
            out.push(as_f32(op.apply(
                &g,
                all,
                size,
                all,
                BorderMode::Reflect101,
                None,
            )));
            let small = Pyr::Down.out_size(size);
            let s = Win::new(0, 0, small.0, small.1);
            g = Pyr::Down.apply(&g, all, size, s, BorderMode::Reflect101, None);
        }
        out
    }

    #[test]
    fn reconstruction_inverts_the_levels_of_integer_inputs() {
        let u8s = noise_planes::<u8>(37, 23, 2, 5);
        let back: Vec<Plane<u8>> = reconstruct(&pyramid(&u8s, 4), BorderMode::Reflect101);
        assert_eq!(back, u8s);
        let i16s = noise_planes::<i16>(18, 31, 1, 6);
        let back: Vec<Plane<i16>> = reconstruct(&pyramid(&i16s, 3), BorderMode::Reflect101);
        assert_eq!(back, i16s);
    }

    #[test]
    fn windows_equal_the_whole_and_nodata_stays_apart() {
        let mut planes = noise_planes::<u16>(21, 17, 1, 7);
        planes[0].data.iter_mut().step_by(9).for_each(|v| *v = 3);
        let all = Win::new(0, 0, 21, 17);
        for nd in [None, Some(3.0)] {
            for border in [BorderMode::Reflect101, BorderMode::Replicate] {
                let whole = as_f32(Detail::Level.apply(&planes, all, (21, 17), all, border, nd));
                let target = Win::new(4, 9, 9, 8);
                let have = target.grow(Detail::Level.radius()).clamp(21, 17);
                let part: Vec<Plane<u16>> = vec![Plane::new(
                    have.width,
                    have.height,
                    (0..have.height)
                        .flat_map(|y| {
                            planes[0].row(have.y as usize + y)[have.x as usize..][..have.width]
                                .to_vec()
                        })
                        .collect(),
                )];
                let got = as_f32(Detail::Level.apply(&part, have, (21, 17), target, border, nd));
                for y in 0..8 {
                    let want = &whole[0].row(9 + y)[4..13];
                    let got = got[0].row(y);
                    assert!(
                        want.iter()
                            .zip(got)
                            .all(|(a, b)| a == b || a.is_nan() && b.is_nan()),
                        "{nd:?} {border:?}"
                    );
                }
                if nd.is_some() {
                    // Where the pixel is nodata, the level is NaN (Float32 levels of UInt16).
                    assert!(whole[0].data.iter().step_by(9).all(|v| v.is_nan()));
                }
            }
        }
    }
}
