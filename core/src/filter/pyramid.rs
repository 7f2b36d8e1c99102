//! Resolution changes by one pyramid level: `pyrdown` and `pyrup`, as
//! OpenCV's `pyrDown` and `pyrUp` compute them.
//!
//! Both are the 5-tap binomial `[1 4 6 4 1]` on both axes. `pyrdown` keeps
//! every second sample: output (x, y) is centred on input (2x, 2y), the
//! output is ⌈w/2⌉ × ⌈h/2⌉, and the sum (weight 256) is scaled back.
//! `pyrup` inserts zeros between the samples (a 2w × 2h grid) and filters
//! that with the kernel times 4 (weight 64 over the non-zero taps):
//! output (2i, 2j) is centred on input (i, j).
//!
//! Rounding: integer samples give exact integer sums (every sum of these
//! weights fits an `f32` exactly) rounded as OpenCV's fixed-point cast
//! does, `⌊(s + 128)/256⌋` and `⌊(s + 32)/64⌋` (half up, not half to even).
//! Float32 sums are made in one fixed order, OpenCV's vector order; OpenCV
//! itself sums border columns and short row ends in another order, so there
//! Float32 may differ from it in the last bit (integer-valued Float32 data,
//! whose sums are exact, is identical).
//!
//! Borders: `pyrdown` maps input coordinates with the border mode like any
//! op. `pyrup` under reflect101 mirrors the zero-inserted 2w × 2h grid, as
//! OpenCV does (its only mode): on the input grid that is reflect101 at the
//! left and top edges and an edge-repeating reflection at the right and
//! bottom. Replicate, constant and nodata apply to the input grid.
//!
//! Nodata: the output's centre pixel (input (2x, 2y) for `pyrdown`, input
//! (⌊x/2⌋, ⌊y/2⌋) for `pyrup`) decides; missing neighbours take its value,
//! as for the other ops.

use super::border::{BorderMode, Win};
use super::par_band_rows;
use crate::pixel::{Pixel, Plane};

/// One pyramid step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pyr {
    /// Half the resolution: ⌈w/2⌉ × ⌈h/2⌉.
    Down,
    /// Twice the resolution: 2w × 2h.
    Up,
}

impl Pyr {
    /// The input reach around an output pixel's centre, in input pixels.
    pub fn radius(self) -> usize {
        match self {
            Pyr::Down => 2,
            Pyr::Up => 1,
        }
    }

    /// Output size of an input of `size`.
    pub fn out_size(self, (w, h): (usize, usize)) -> (usize, usize) {
        match self {
            Pyr::Down => (w.div_ceil(2), h.div_ceil(2)),
            Pyr::Up => (2 * w, 2 * h),
        }
    }

    /// The input window (not clamped to the raster) that output window
    /// `target` reads.
    pub fn need(self, target: Win) -> Win {
        let axis = |start: i64, len: usize| -> (i64, usize) {
            if len == 0 {
                return (start, 0);
            }
            let last = start + len as i64 - 1;
            match self {
                Pyr::Down => (2 * start - 2, (2 * (last - start) + 5) as usize),
                Pyr::Up => {
                    let (a, b) = (start.div_euclid(2) - 1, last.div_euclid(2) + 1);
                    (a, (b - a + 1) as usize)
                }
            }
        };
        let (x, w) = axis(target.x, target.width);
        let (y, h) = axis(target.y, target.height);
        Win::new(x, y, w, h)
    }

    /// Where output pixel-corner coordinate `u` lies on the input grid:
    /// `scale · u + offset` (input pixel units), for the geotransform.
    pub fn pixel_map(self) -> (f64, f64) {
        match self {
            // Output pixel x is centred on input pixel 2x: its corner is 2x − ½.
            Pyr::Down => (2.0, -0.5),
            // Output pixel 2i is centred on input pixel i: its corner is i + ¼.
            Pyr::Up => (0.5, 0.25),
        }
    }

    /// Runs the step on `planes` (window `have` of an `image`-sized raster,
    /// holding every in-raster pixel that `target` reads) into the output
    /// window `target`; `nd` is the input's nodata value. Without nodata
    /// this takes the separable path ([`Pyr::separable`]), else the plain
    /// per-pixel one ([`Pyr::reference`]); both give the same bits.
    pub fn apply<T: Pixel>(
        self,
        planes: &[Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Vec<Plane<T>> {
        match nd {
            None => self.separable(planes, have, image, target, border),
            Some(_) => self.reference(planes, have, image, target, border, nd),
        }
    }

    /// The separable path (no nodata): per output row, each input row it
    /// reads is mapped once into a padded `f32` row, summed along the row
    /// for every output column, then the row sums are combined down the
    /// column, in the reference's order of operations.
    pub fn separable<T: Pixel>(
        self,
        planes: &[Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        border: BorderMode,
    ) -> Vec<Plane<T>> {
        let fill = border.fill::<T>(None).to_f32();
        let int = T::TYPE.range().is_some();
        let (iw, ih) = (image.0 as i64, image.1 as i64);
        let map = |c: i64, len: i64| match self {
            Pyr::Down => border.map(c, len),
            Pyr::Up => up_map(border, c, len),
        };
        // Input columns x0.. of the padded rows, and the input column each stands for.
        let (x0, n) = match self {
            Pyr::Down => (2 * target.x - 2, 2 * target.width + 3),
            Pyr::Up => {
                let w = self.need(target);
                (w.x, w.width)
            }
        };
        let cols: Vec<Option<usize>> = (0..n as i64)
            .map(|i| map(x0 + i, iw).map(|c| (c - have.x) as usize))
            .collect();
        let taps = match self {
            Pyr::Down => 5,
            Pyr::Up => 3,
        };
        par_band_rows(target.width, target.height, planes.len(), |dy, out| {
            let y = target.y + dy as i64;
            let first = match self {
                Pyr::Down => 2 * y - 2,
                Pyr::Up => y.div_euclid(2) - 1,
            };
            let mut padded = vec![0f32; n];
            let mut sums = vec![[0f32; 5]; target.width];
            for (b, plane) in planes.iter().enumerate() {
                for k in 0..taps {
                    match map(first + k as i64, ih) {
                        Some(r) => {
                            let row = plane.row((r - have.y) as usize);
                            for (p, c) in padded.iter_mut().zip(&cols) {
                                *p = c.map_or(fill, |c| row[c].to_f32());
                            }
                        }
                        None => padded.fill(fill),
                    }
                    for (dx, s) in sums.iter_mut().enumerate() {
                        s[k] = match self {
                            Pyr::Down => {
                                let v = &padded[2 * dx..2 * dx + 5];
                                down5(v[0], v[1], v[2], v[3], v[4])
                            }
                            Pyr::Up => {
                                let x = target.x + dx as i64;
                                let i = (x.div_euclid(2) - 1 - x0) as usize;
                                up3(x, padded[i], padded[i + 1], padded[i + 2])
                            }
                        };
                    }
                }
                let out = &mut out[b * target.width..(b + 1) * target.width];
                for (o, s) in out.iter_mut().zip(&sums) {
                    *o = T::from_f32(match self {
                        Pyr::Down => {
                            let v = down5_v(s[0], s[1], s[2], s[3], s[4]);
                            if int {
                                ((v + 128.0) * (1.0 / 256.0)).floor()
                            } else {
                                v * (1.0 / 256.0)
                            }
                        }
                        Pyr::Up => {
                            let v = up3(y, s[0], s[1], s[2]);
                            if int {
                                ((v + 32.0) * (1.0 / 64.0)).floor()
                            } else {
                                v * (1.0 / 64.0)
                            }
                        }
                    });
                }
            }
        })
    }

    /// The plain per-pixel reference: every output pixel gathers its taps
    /// on its own (with nodata: missing taps take the centre's value).
    pub fn reference<T: Pixel>(
        self,
        planes: &[Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        border: BorderMode,
        nd: Option<f64>,
    ) -> Vec<Plane<T>> {
        let fill = border.fill::<T>(nd);
        let nd = nd.and_then(T::from_f64_exact);
        let missing_outside = border == BorderMode::Nodata;
        let int = T::TYPE.range().is_some();
        let (iw, ih) = (image.0 as i64, image.1 as i64);
        let taps = |c: i64, len: i64| -> [Option<i64>; 5] {
            let mut t = [None; 5];
            match self {
                Pyr::Down => {
                    for (k, t) in t.iter_mut().enumerate() {
                        *t = border.map(2 * c + k as i64 - 2, len);
                    }
                }
                Pyr::Up => {
                    // Input samples i−1, i, i+1 around i = ⌊c/2⌋.
                    let i = c.div_euclid(2);
                    for (k, t) in t.iter_mut().take(3).enumerate() {
                        *t = up_map(border, i + k as i64 - 1, len);
                    }
                }
            }
            t
        };
        let cols: Vec<[Option<i64>; 5]> = (0..target.width)
            .map(|dx| taps(target.x + dx as i64, iw))
            .collect();
        let centre = |c: i64| match self {
            Pyr::Down => 2 * c,
            Pyr::Up => c.div_euclid(2),
        };
        par_band_rows(target.width, target.height, planes.len(), |dy, out| {
            let y = target.y + dy as i64;
            let rows = taps(y, ih);
            let cy = (centre(y) - have.y) as usize;
            for (b, plane) in planes.iter().enumerate() {
                let out = &mut out[b * target.width..(b + 1) * target.width];
                let value = |c: Option<i64>, r: Option<i64>| -> Option<T> {
                    match (c, r) {
                        (Some(c), Some(r)) => {
                            Some(plane.at((c - have.x) as usize, (r - have.y) as usize))
                        }
                        _ => (!missing_outside).then_some(fill),
                    }
                };
                for (dx, (o, col)) in out.iter_mut().zip(&cols).enumerate() {
                    let x = target.x + dx as i64;
                    let c = plane.at((centre(x) - have.x) as usize, cy);
                    if nd.is_some_and(|nd| c.same(nd)) {
                        *o = c;
                        continue;
                    }
                    let v = |kx: usize, ky: usize| -> f32 {
                        match value(col[kx], rows[ky]) {
                            Some(v) if !nd.is_some_and(|nd| v.same(nd)) => v.to_f32(),
                            _ => c.to_f32(),
                        }
                    };
                    *o = T::from_f32(match self {
                        Pyr::Down => {
                            let row = |ky| down5(v(0, ky), v(1, ky), v(2, ky), v(3, ky), v(4, ky));
                            let s = down5_v(row(0), row(1), row(2), row(3), row(4));
                            if int {
                                ((s + 128.0) * (1.0 / 256.0)).floor()
                            } else {
                                s * (1.0 / 256.0)
                            }
                        }
                        Pyr::Up => {
                            let row = |ky| up3(x, v(0, ky), v(1, ky), v(2, ky));
                            let s = up3(y, row(0), row(1), row(2));
                            if int {
                                ((s + 32.0) * (1.0 / 64.0)).floor()
                            } else {
                                s * (1.0 / 64.0)
                            }
                        }
                    });
                }
            }
        })
    }
}

/// The input sample that position `i` of the input grid stands for under
/// `pyrup` (`None`: the fill value). Reflect101 mirrors the zero-inserted
/// grid of `2·len` samples (OpenCV): position `i` is up-grid sample `2i`.
fn up_map(border: BorderMode, i: i64, len: i64) -> Option<i64> {
    match border {
        BorderMode::Reflect101 => BorderMode::Reflect101.map(2 * i, 2 * len).map(|j| j / 2),
        _ => border.map(i, len),
    }
}

/// Horizontal `[1 4 6 4 1]` in OpenCV's vector order: `6·c + (4·(b+d) + (a+e))`.
#[inline(always)]
fn down5(a: f32, b: f32, c: f32, d: f32, e: f32) -> f32 {
    c * 6.0 + ((b + d) * 4.0 + (a + e))
}

/// Vertical `[1 4 6 4 1]` in OpenCV's vector order: `4·((b+d)+c) + ((a+e)+2c)`.
#[inline(always)]
fn down5_v(a: f32, b: f32, c: f32, d: f32, e: f32) -> f32 {
    ((b + d) + c) * 4.0 + ((a + e) + (c + c))
}

/// `pyrup` along one axis at output coordinate `o` from input samples
/// `a, b, c` (⌊o/2⌋ − 1, ⌊o/2⌋, ⌊o/2⌋ + 1): `(6b + a) + c` at even `o`,
/// `4·(b + c)` at odd `o` (OpenCV's order).
#[inline(always)]
fn up3(o: i64, a: f32, b: f32, c: f32) -> f32 {
    if o & 1 == 0 {
        (b * 6.0 + a) + c
    } else {
        (b + c) * 4.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pixel::noise_planes;

    fn whole<T: Pixel>(p: Pyr, planes: &[Plane<T>], border: BorderMode) -> Vec<Plane<T>> {
        let (w, h) = (planes[0].width, planes[0].height);
        let (ow, oh) = p.out_size((w, h));
        let all = Win::new(0, 0, w, h);
        p.apply(planes, all, (w, h), Win::new(0, 0, ow, oh), border, None)
    }

    #[test]
    fn sizes_and_windows() {
        assert_eq!(Pyr::Down.out_size((5, 4)), (3, 2));
        assert_eq!(Pyr::Up.out_size((5, 4)), (10, 8));
        // Output 3..7 of pyrdown reads input 4..14 (2·3 − 2 to 2·6 + 2).
        assert_eq!(Pyr::Down.need(Win::new(3, 0, 4, 1)), Win::new(4, -2, 11, 5));
        // Output 3..7 of pyrup reads input 0..5 (⌊3/2⌋ − 1 to ⌊6/2⌋ + 1).
        assert_eq!(Pyr::Up.need(Win::new(3, 0, 4, 1)), Win::new(0, -1, 5, 3));
    }

    #[test]
    fn constant_images_stay_constant() {
        for p in [Pyr::Down, Pyr::Up] {
            for border in [BorderMode::Reflect101, BorderMode::Replicate] {
                let planes = vec![Plane::new(7, 5, vec![200u8; 35])];
                let out = whole(p, &planes, border);
                assert!(out[0].data.iter().all(|&v| v == 200), "{p:?} {border:?}");
            }
        }
    }

    #[test]
    fn matches_opencv_on_a_small_case() {
        // cv2.pyrDown / cv2.pyrUp of [[0, 10, 255], [7, 3, 1]] (uint8).
        let planes = vec![Plane::new(3, 2, vec![0u8, 10, 255, 7, 3, 1])];
        let down = whole(Pyr::Down, &planes, BorderMode::Reflect101);
        assert_eq!(down[0].data, vec![21, 52]);
        let up = whole(Pyr::Up, &planes, BorderMode::Reflect101);
        assert_eq!(
            up[0].data,
            vec![
                3, 5, 30, 100, 169, 192, 4, 5, 21, 67, 113, 128, 6, 5, 8, 18, 29, 33, 6, 5, 3, 2,
                1, 1
            ]
        );
    }

    #[test]
    fn separable_equals_the_reference() {
        let f = noise_planes::<f32>(29, 18, 1, 3);
        let u = noise_planes::<u16>(17, 23, 2, 4);
        for p in [Pyr::Down, Pyr::Up] {
            for border in [
                BorderMode::Reflect101,
                BorderMode::Replicate,
                BorderMode::Constant(-2.5),
            ] {
                let target = match p {
                    Pyr::Down => Win::new(1, 2, 7, 5),
                    Pyr::Up => Win::new(2, 3, 9, 7),
                };
                let all = |q: &Plane<f32>| Win::new(0, 0, q.width, q.height);
                let (a, s) = (all(&f[0]), (29, 18));
                assert_eq!(
                    p.separable(&f, a, s, target, border),
                    p.reference(&f, a, s, target, border, None),
                    "{p:?} {border:?} f32"
                );
                let (a, s) = (Win::new(0, 0, 17, 23), (17, 23));
                assert_eq!(
                    p.separable(&u, a, s, target, border),
                    p.reference(&u, a, s, target, border, None),
                    "{p:?} {border:?} u16"
                );
            }
        }
    }

    #[test]
    fn windows_of_the_output_equal_the_whole() {
        let planes = noise_planes::<i16>(23, 17, 2, 5);
        let (w, h) = (23, 17);
        for p in [Pyr::Down, Pyr::Up] {
            for border in [BorderMode::Reflect101, BorderMode::Constant(3.0)] {
                let all = whole(p, &planes, border);
                let target = Win::new(3, 2, 5, 4);
                let have = p.need(target).clamp(w, h);
                let part: Vec<Plane<i16>> = planes
                    .iter()
                    .map(|q| {
                        let mut d = Vec::new();
                        for y in 0..have.height {
                            let row = q.row(have.y as usize + y);
                            d.extend_from_slice(&row[have.x as usize..][..have.width]);
                        }
                        Plane::new(have.width, have.height, d)
                    })
                    .collect();
                let got = p.apply(&part, have, (w, h), target, border, None);
                for (g, a) in got.iter().zip(&all) {
                    for y in 0..4 {
                        assert_eq!(g.row(y), &a.row(2 + y)[3..8], "{p:?} {border:?}");
                    }
                }
            }
        }
    }
}
