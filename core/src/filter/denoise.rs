//! Multiresolution denoising, `denoise:LEVELS:SD:SR`: a Laplacian pyramid
//! of LEVELS levels, a bilateral filter (σ_d = SD pixels of the level,
//! σ_r = SR) on every detail level, and the reconstruction from the top.
//!
//! In Float32 throughout: g₀ is the input, g_{k+1} = pyrdown(g_k) (no
//! rounding), l_k = g_k − pyrup(g_{k+1}) cut to g_k's size ([`super::laplacian`]'s
//! levels, in Float32), then from the top r_{L−1} = g_{L−1},
//! r_k = bilateral(l_k) + pyrup(r_{k+1}); r₀ is rounded to the input's
//! type. With a bilateral that changed nothing this gives the input back.
//!
//! The similarity is read from a table in steps of σ_r/64 up to 6σ_r
//! (beyond: 0), indexed by ⌊δ·64/σ_r + ½⌋: every δ is the same `f32` on the
//! host and the device and the index is one rounding of it, so both give
//! the same bits, where an `exp` per tap would differ between libraries.
//!
//! Tiles: each level's windows follow from the output window ([`Plan`]);
//! the op's radius is the widest reach of those windows, and at the
//! raster's edge every level is padded by the border mode at its own size.
//! Inputs with a nodata value are refused.

use super::bilateral::{Bilateral, Distance};
use super::border::{BorderMode, Win, pad};
use super::pyramid::Pyr;
use crate::bail;
use crate::error::Result;
use crate::pixel::{Pixel, Plane};

/// Table steps per σ_r, and the table's reach in σ_r.
const STEPS: f64 = 64.0;
const REACH: f64 = 6.0;

/// The op's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Denoise {
    pub levels: usize,
    pub bilateral: Bilateral,
    radius: usize,
}

/// The windows of one output window on every level k (of raster size
/// `sizes[k]`): `g[k]` of the Gaussian level, `b[k]` of the detail level
/// the bilateral reads, `t[k]` of the bilateral's output and of r_k.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub sizes: Vec<(usize, usize)>,
    pub g: Vec<Win>,
    pub b: Vec<Win>,
    pub t: Vec<Win>,
}

fn bbox(a: Win, b: Win) -> Win {
    let (x0, y0) = (a.x.min(b.x), a.y.min(b.y));
    let x1 = (a.x + a.width as i64).max(b.x + b.width as i64);
    let y1 = (a.y + a.height as i64).max(b.y + b.height as i64);
    Win::new(x0, y0, (x1 - x0) as usize, (y1 - y0) as usize)
}

impl Denoise {
    pub fn new(levels: f64, sigma_d: f64, sigma_r: f64) -> Result<Self> {
        if levels.fract() != 0.0 || !(2.0..=8.0).contains(&levels) {
            bail!(
                usage,
                format!("denoise: LEVELS {levels} is not a whole number from 2 to 8"),
                hint = "write denoise:LEVELS:SD:SR, e.g. denoise:4:1.5:20"
            );
        }
        let bilateral = Bilateral::new(sigma_d, sigma_r, Distance::Gray)?;
        let mut d = Denoise {
            levels: levels as usize,
            bilateral,
            radius: 0,
        };
        d.radius = d.reach();
        Ok(d)
    }

    /// Input pixels beyond the output window that the op may read.
    pub fn radius(&self) -> usize {
        self.radius
    }

    /// The widest reach of level 0's window around a one-pixel output,
    /// over every position modulo 2^LEVELS, away from the raster's edges.
    fn reach(&self) -> usize {
        let base = 1i64 << 30;
        let image = (1usize << 32, 1usize << 32);
        (0..1i64 << self.levels)
            .map(|o| {
                let t = Win::new(base + o, base + o, 1, 1);
                let g = self.plan(t, image).g[0];
                (t.x - g.x).max(g.x + g.width as i64 - t.x - 1) as usize
            })
            .max()
            .unwrap_or(0)
    }

    /// The windows of output window `target` of an `image`-sized raster.
    pub fn plan(&self, target: Win, image: (usize, usize)) -> Plan {
        let l = self.levels;
        let r = self.bilateral.radius;
        let mut sizes = vec![image];
        for _ in 1..l {
            sizes.push(Pyr::Down.out_size(sizes[sizes.len() - 1]));
        }
        let clamp = |w: Win, k: usize| w.clamp(sizes[k].0, sizes[k].1);
        let mut t = vec![target];
        for k in 1..l {
            t.push(clamp(Pyr::Up.need(t[k - 1]), k));
        }
        let b: Vec<Win> = (0..l - 1).map(|k| clamp(t[k].grow(r), k)).collect();
        // g_k feeds b_k, the pyrup of b_{k−1}, and the pyrdown to g_{k+1}.
        let mut g = vec![Win::new(0, 0, 0, 0); l];
        g[l - 1] = bbox(t[l - 1], clamp(Pyr::Up.need(b[l - 2]), l - 1));
        for k in (0..l - 1).rev() {
            let mut w = bbox(b[k], clamp(Pyr::Down.need(g[k + 1]), k));
            if k > 0 {
                w = bbox(w, clamp(Pyr::Up.need(b[k - 1]), k));
            }
            g[k] = w;
        }
        Plan { sizes, g, b, t }
    }

    /// The similarity table (steps of σ_r/64 up to 6σ_r, then 0).
    pub fn table(&self) -> Vec<f32> {
        let n = (STEPS * REACH) as usize + 2;
        (0..n)
            .map(|i| {
                let u = i as f64 / STEPS;
                if i + 1 == n {
                    0.0
                } else {
                    (-0.5 * u * u).exp() as f32
                }
            })
            .collect()
    }

    /// The factor turning a difference into a table position.
    pub fn scale(&self) -> f32 {
        (STEPS / self.bilateral.sigma_r) as f32
    }

    /// The table position of a difference (the kernel's `fmin` and cast).
    #[inline]
    pub fn index(delta: f32, scale: f32, len: usize) -> usize {
        (delta * scale + 0.5).min((len - 1) as f32) as usize
    }

    /// Runs the op on `planes` (window `have` of an `image`-sized raster)
    /// into window `target`.
    pub fn apply<T: Pixel>(
        &self,
        planes: &[Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        border: BorderMode,
    ) -> Vec<Plane<T>> {
        let p = self.plan(target, image);
        let l = self.levels;
        let fill = border.fill::<f32>(None);
        let g0: Vec<Plane<f32>> = planes
            .iter()
            .map(|q| crop(q, have, p.g[0], |v| v.to_f32()))
            .collect();
        let mut g = vec![g0];
        for k in 0..l - 1 {
            let next = Pyr::Down.apply(&g[k], p.g[k], p.sizes[k], p.g[k + 1], border, None);
            g.push(next);
        }
        let (table, scale) = (self.table(), self.scale());
        let sim = |d: f32| table[Self::index(d, scale, table.len())];
        // r_{L−1} = g_{L−1}, on its window.
        let (mut r, mut r_win) = (g[l - 1].clone(), p.g[l - 1]);
        for k in (0..l - 1).rev() {
            let up = Pyr::Up.apply(&g[k + 1], p.g[k + 1], p.sizes[k + 1], p.b[k], border, None);
            let want = p.t[k].grow(self.bilateral.radius);
            let padded: Vec<Plane<f32>> = g[k]
                .iter()
                .zip(&up)
                .map(|(gk, u)| {
                    let mut d = crop(gk, p.g[k], p.b[k], |v| v);
                    d.data.iter_mut().zip(&u.data).for_each(|(d, u)| *d -= u);
                    pad(&d, p.b[k], p.sizes[k], want, border, fill)
                })
                .collect();
            let smooth = self.bilateral.reference_with(&padded, None, sim);
            let up = Pyr::Up.apply(&r, r_win, p.sizes[k + 1], p.t[k], border, None);
            r = smooth
                .into_iter()
                .zip(&up)
                .map(|(mut s, u)| {
                    s.data.iter_mut().zip(&u.data).for_each(|(s, u)| *s += u);
                    s
                })
                .collect();
            r_win = p.t[k];
        }
        r.iter()
            .map(|q| {
                let data = q.data.iter().map(|&v| T::from_f32(v)).collect();
                Plane::new(q.width, q.height, data)
            })
            .collect()
    }
}

/// Window `want` (inside `have`) of plane `q` (holding `have`), mapped by `f`.
fn crop<T: Pixel, O: Pixel>(q: &Plane<T>, have: Win, want: Win, f: impl Fn(T) -> O) -> Plane<O> {
    let (dx, dy) = ((want.x - have.x) as usize, (want.y - have.y) as usize);
    let mut data = Vec::with_capacity(want.width * want.height);
    for y in 0..want.height {
        data.extend(q.row(dy + y)[dx..dx + want.width].iter().map(|&v| f(v)));
    }
    Plane::new(want.width, want.height, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pixel::noise_planes;

    fn whole<T: Pixel>(d: &Denoise, planes: &[Plane<T>], border: BorderMode) -> Vec<Plane<T>> {
        let size = (planes[0].width, planes[0].height);
        let all = Win::new(0, 0, size.0, size.1);
        d.apply(planes, all, size, all, border)
    }

    #[test]
    fn windows_stay_inside_what_the_radius_reads() {
        let d = Denoise::new(3.0, 1.0, 20.0).unwrap();
        for (x, y, w, h) in [(0, 0, 5, 5), (7, 3, 4, 9), (30, 20, 3, 1)] {
            let t = Win::new(x, y, w, h);
            let p = d.plan(t, (33, 21));
            let need = t.grow(d.radius()).clamp(33, 21);
            let inside = |a: Win, b: Win| {
                a.x >= b.x
                    && a.y >= b.y
                    && a.x + a.width as i64 <= b.x + b.width as i64
                    && a.y + a.height as i64 <= b.y + b.height as i64
            };
            assert!(inside(p.g[0], need), "{t:?}");
            assert!(inside(p.b[0], p.g[0]) && inside(p.t[0].clamp(33, 21), p.b[0]));
        }
        assert!(Denoise::new(1.0, 1.0, 1.0).is_err());
        assert!(Denoise::new(3.5, 1.0, 1.0).is_err());
    }

    #[test]
    fn tiles_equal_the_whole_and_flat_images_stay_flat() {
        let d = Denoise::new(3.0, 1.0, 30.0).unwrap();
        let planes = noise_planes::<u8>(29, 23, 2, 9);
        for border in [BorderMode::Reflect101, BorderMode::Replicate] {
            let all = whole(&d, &planes, border);
            let target = Win::new(11, 5, 7, 9);
            let have = target.grow(d.radius()).clamp(29, 23);
            let part: Vec<Plane<u8>> = planes
                .iter()
                .map(|q| crop(q, Win::new(0, 0, 29, 23), have, |v| v))
                .collect();
            let got = d.apply(&part, have, (29, 23), target, border);
            for (g, a) in got.iter().zip(&all) {
                assert_eq!(
                    *g,
                    crop(a, Win::new(0, 0, 29, 23), target, |v| v),
                    "{border:?}"
                );
            }
        }
        let flat = vec![Plane::new(13, 9, vec![77u16; 117])];
        assert_eq!(whole(&d, &flat, BorderMode::Reflect101), flat);
    }

    #[test]
    fn a_tiny_range_sigma_keeps_the_input() {
        // σ_r far below every difference: each level's bilateral keeps its
        // centre, so the reconstruction gives the input back.
        let d = Denoise::new(3.0, 1.0, 0.001).unwrap();
        let planes = noise_planes::<i16>(17, 12, 1, 3);
        assert_eq!(whole(&d, &planes, BorderMode::Reflect101), planes);
    }
}
