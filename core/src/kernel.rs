//! Kernel specs (`gaussian:SIGMA`, `box:N`, `disc:R`, `file:PATH`), the
//! weight matrices they stand for, and their exact integer quantisation.
//!
//! Exact methods must give the same bytes on every device and tile size, so
//! scores are accumulated in integers: the weights are quantised once, here,
//! on the host. Kernels whose weights are all integers (box, disc, most kernel
//! files) keep them unchanged; other kernels are scaled so that their weights
//! sum to at most [`QUANT_SUM`] (2³¹) and rounded to the nearest integer.
//! Each weight's rounding error is at most half a quantum, i.e. below
//! 2⁻³²·N² of the mean weight (2⁻¹⁴ at N = 511, 2⁻⁹ at the largest side,
//! N = 3001, where the outermost weights of a Gaussian round to 0), far
//! below any visible effect, and the sum of any subset of weights fits a
//! `u32` accumulator. Integer kernels keep their weights when they sum to
//! at most 2³¹ (a 3001² box sums to 9,006,001), so they fit too.

use crate::bail;
use crate::error::{Error, Result, Setting};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

mod units;
pub use units::{KernelArg, MetricKind, PixelWidth, Resolved};

/// Largest kernel side accepted (windows up to 3001×3001: `gaussian:SIGMA`
/// up to σ = 500, `disc:R` up to R = 1500). Up to [`PER_TAP_MAX_SIZE`]
/// every method takes it; wider kernels run exactly through `fft` (and
/// approximately through `dct5`) on the host, at a cost independent of
/// their area, and naive only where its per-tap cost is affordable
/// (docs/semantics.md#large-kernels).
pub const MAX_SIZE: usize = 3001;

/// Largest side that the methods whose cost or memory grows with the
/// kernel's area (svd's factorisation, the OpenCL methods) take: 511
/// (σ ≤ 85). Wider kernels are refused there with a hint
/// ([`refuse_wide`]).
pub const PER_TAP_MAX_SIZE: usize = 511;

/// The largest σ whose default side `2·floor(3σ)+1` is within [`MAX_SIZE`] (500).
pub const MAX_DEFAULT_SIGMA: usize = MAX_SIZE / 6;

/// Upper bound of the sum of the quantised weights of a kernel.
pub const QUANT_SUM: u64 = 1 << 31;

/// A kernel as the user names it on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelSpec {
    /// Gaussian with standard deviation `sigma`; side `size` or `2·floor(3σ)+1`.
    Gaussian { sigma: f64, size: Option<usize> },
    /// N×N ones.
    Box { size: usize },
    /// Ones within Euclidean distance `radius` of the centre, on a (2R+1)² grid.
    Disc { radius: usize },
    /// A whitespace- or comma-separated square matrix read from a text file.
    File { path: PathBuf },
}

impl FromStr for KernelSpec {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self> {
        let hint = "kernel specs are gaussian:SIGMA, box:N, disc:RADIUS or file:PATH";
        let Some((kind, arg)) = spec.split_once(':') else {
            bail!(
                usage,
                format!("kernel spec '{spec}' has no ':'"),
                hint = hint
            );
        };
        let number = |what: &str| -> Result<f64> {
            arg.trim().parse::<f64>().map_err(|_| {
                Error::usage(format!(
                    "kernel spec '{spec}': '{arg}' is not a number ({what})"
                ))
                .hint(hint)
            })
        };
        let whole = |what: &str| -> Result<usize> {
            let v = number(what)?;
            if v < 0.0 || v.fract() != 0.0 || v > 1e6 {
                bail!(
                    usage,
                    format!("kernel spec '{spec}': {what} must be a whole number ≥ 0"),
                    hint = hint
                );
            }
            Ok(v as usize)
        };
        match kind.trim().to_ascii_lowercase().as_str() {
            "gaussian" | "gauss" => Ok(KernelSpec::Gaussian {
                sigma: number("sigma")?,
                size: None,
            }),
            "box" => Ok(KernelSpec::Box {
                size: whole("size")?,
            }),
            "disc" | "disk" => Ok(KernelSpec::Disc {
                radius: whole("radius")?,
            }),
            "file" => Ok(KernelSpec::File {
                path: PathBuf::from(arg),
            }),
            other => bail!(usage, format!("unknown kernel kind '{other}'"), hint = hint),
        }
    }
}

impl std::fmt::Display for KernelSpec {
    /// The spec as `--kernel` takes it (a Gaussian's side, when fixed, as `size N`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // f64's Display never uses an exponent: 1e-300 would be 300 zeros.
        let sigma = |s: f64| {
            if s == 0.0 || (1e-4..1e7).contains(&s.abs()) {
                s.to_string()
            } else {
                format!("{s:e}")
            }
        };
        match self {
            KernelSpec::Gaussian {
                sigma: s,
                size: None,
            } => write!(f, "gaussian:{}", sigma(*s)),
            KernelSpec::Gaussian {
                sigma: s,
                size: Some(n),
            } => write!(f, "gaussian:{} size {n}", sigma(*s)),
            KernelSpec::Box { size } => write!(f, "box:{size}"),
            KernelSpec::Disc { radius } => write!(f, "disc:{radius}"),
            KernelSpec::File { path } => write!(f, "file:{}", path.display()),
        }
    }
}

impl KernelSpec {
    /// Overrides the side of a Gaussian (`--kernel-size N`); other kinds already fix theirs.
    pub fn with_size(self, size: Option<usize>) -> Result<Self> {
        match (self, size) {
            (s, None) => Ok(s),
            (KernelSpec::Gaussian { sigma, .. }, Some(n)) => Ok(KernelSpec::Gaussian {
                sigma,
                size: Some(n),
            }),
            (_, Some(_)) => bail!(
                usage,
                format!("{} applies to gaussian kernels only", Setting::KernelSize),
                hint = "box:N and disc:R already give the size"
            ),
        }
    }

    /// Builds the weight matrix.
    pub fn build(&self) -> Result<Kernel> {
        match self {
            KernelSpec::Gaussian { sigma, size } => gaussian(*sigma, *size),
            KernelSpec::Box { size } => {
                check_size(*size)?;
                Kernel::new(*size, vec![1.0; size * size])
            }
            KernelSpec::Disc { radius } => disc(*radius),
            KernelSpec::File { path } => from_file(path),
        }
    }
}

/// A square N×N weight matrix (N odd), row-major, with its quantised twin.
/// The weights are shared, not copied, by a clone: a run clones its kernel
/// for the thread that builds the method, and at σ = 150 a copy was 9.7 MB
/// of fresh pages on the command's serial path.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    size: usize,
    weights: Arc<[f64]>,
    quantised: Arc<[u32]>,
    /// `Some(sigma)` when the kernel is a Gaussian (the fast methods use it).
    sigma: Option<f64>,
}

impl Kernel {
    /// Checks and quantises an N×N matrix given row-major.
    pub fn new(size: usize, weights: Vec<f64>) -> Result<Self> {
        check_size(size)?;
        if weights.len() != size * size {
            bail!(
                usage,
                format!(
                    "kernel has {} weights, a {size}x{size} kernel needs {}",
                    weights.len(),
                    size * size
                )
            );
        }
        if let Some(w) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
            bail!(
                usage,
                format!("kernel weight {w} is negative or not finite"),
                hint = "class smoothing needs weights ≥ 0"
            );
        }
        let sum: f64 = weights.iter().sum();
        if sum <= 0.0 {
            bail!(
                usage,
                "kernel weights are all zero",
                hint = "give at least one positive weight"
            );
        }
        let quantised = quantise(&weights, sum);
        if quantised.iter().all(|&q| q == 0) {
            bail!(usage, "kernel weights vanish when quantised");
        }
        Ok(Kernel {
            size,
            weights: weights.into(),
            quantised: quantised.into(),
            sigma: None,
        })
    }

    /// Side N of the N×N matrix.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Radius R = N/2 (the halo a tile needs).
    pub fn radius(&self) -> usize {
        self.size / 2
    }

    /// Real weights, row-major.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Integer weights used by exact methods, row-major; proportional to
    /// [`Kernel::weights`] up to the rounding described in the module doc.
    pub fn quantised(&self) -> &[u32] {
        &self.quantised
    }

    /// The Gaussian's σ when built from `gaussian:SIGMA`.
    pub fn sigma(&self) -> Option<f64> {
        self.sigma
    }

    /// Weight at row `dy`, column `dx`, both in `-R..=R`.
    pub fn at(&self, dx: isize, dy: isize) -> f64 {
        let r = self.radius() as isize;
        self.weights[((dy + r) as usize) * self.size + (dx + r) as usize]
    }
}

/// Refuses `kernel` for `what` (a method, "svd" or "naive on a device")
/// when it is wider than [`PER_TAP_MAX_SIZE`], in one line with the way out.
pub fn refuse_wide(kernel: &Kernel, what: &str) -> Result<()> {
    let n = kernel.size();
    if n > PER_TAP_MAX_SIZE {
        bail!(
            usage,
            format!(
                "{what} takes kernels up to {PER_TAP_MAX_SIZE}x{PER_TAP_MAX_SIZE}, this one is {n}x{n}"
            ),
            hint = format!(
                "use {} {} (exact, any size), or dct5 on the host",
                Setting::Method.is("fft"),
                Setting::Device.is("host")
            )
        );
    }
    Ok(())
}

fn check_size(size: usize) -> Result<()> {
    if size == 0 {
        bail!(usage, "kernel is empty", hint = "give an odd size ≥ 1");
    }
    if size.is_multiple_of(2) {
        bail!(
            usage,
            format!("kernel size {size} is even"),
            hint = "kernels need an odd size so that they have a centre pixel"
        );
    }
    if size > MAX_SIZE {
        bail!(
            usage,
            format!("kernel size {size} exceeds the maximum of {MAX_SIZE}"),
            hint = "use a smaller sigma, radius or size"
        );
    }
    Ok(())
}

/// Integer weights proportional to `weights` whose sum is at most [`QUANT_SUM`].
fn quantise(weights: &[f64], sum: f64) -> Vec<u32> {
    let integral = weights.iter().all(|w| w.fract() == 0.0);
    if integral && sum <= QUANT_SUM as f64 {
        return weights.iter().map(|&w| w as u32).collect();
    }
    // Weights so small (or large) that the scale below would overflow are
    // taken relative to the largest first: only their ratios matter.
    if !(sum.is_finite() && sum > 1e-200) {
        let max = weights.iter().fold(0.0f64, |m, &w| m.max(w));
        let relative: Vec<f64> = weights.iter().map(|&w| w / max).collect();
        return quantise(&relative, relative.iter().sum());
    }
    // Scale slightly below the bound so rounding up cannot push the sum over it.
    // Each weight on its own, in parallel: `round` is a libm call, and a
    // wide kernel has 811,801 of them (σ = 150).
    let scale = (QUANT_SUM as f64 - weights.len() as f64) / sum;
    weights
        .par_iter()
        .map(|&w| (w * scale).round() as u32)
        .collect()
}

fn gaussian(sigma: f64, size: Option<usize>) -> Result<Kernel> {
    if !(sigma.is_finite() && sigma > 0.0) {
        bail!(
            usage,
            format!("gaussian sigma must be > 0, got {sigma}"),
            hint = format!("e.g. {}", Setting::Kernel.is("gaussian:2.5"))
        );
    }
    if 2.0 * sigma * sigma < f64::MIN_POSITIVE {
        bail!(
            usage,
            format!("gaussian sigma {sigma} is too small to compute a kernel from"),
            hint = "any sigma below 0.33 gives a 1x1 kernel (no smoothing); e.g. gaussian:0.3"
        );
    }
    let size = match size {
        Some(n) => n,
        None => {
            // The thesis' N = 6σ+1, rounded down to odd: R = floor(3σ), so
            // σ=2.5 gives N=15 (GRASS size=15), σ=5 gives 31, σ=21 gives 127.
            let r = (3.0 * sigma).floor();
            if r > (MAX_SIZE / 2) as f64 {
                bail!(
                    usage,
                    format!(
                        "gaussian sigma {sigma} needs a {}x{0} kernel, over the maximum of {MAX_SIZE}",
                        2.0 * r + 1.0
                    ),
                    hint = format!(
                        "use sigma ≤ {MAX_DEFAULT_SIGMA}, or cut the kernel with {}",
                        Setting::KernelSize
                    )
                );
            }
            2 * r as usize + 1
        }
    };
    check_size(size)?;
    // A weight depends on |x| and |y| only, and symmetrically: each exp
    // is taken once, for 0 ≤ |x| ≤ |y| ≤ R, an eighth of the N² that
    // were most of a wide kernel's set-up (811,801 at σ = 150). The same
    // argument gives the same bits.
    let r = size / 2;
    let mut octant = vec![0.0; (r + 1) * (r + 1)];
    for y in 0..=r {
        for x in 0..=y {
            let w = (-((x * x + y * y) as f64) / (2.0 * sigma * sigma)).exp();
            octant[y * (r + 1) + x] = w;
            octant[x * (r + 1) + y] = w;
        }
    }
    let mut weights = vec![0.0; size * size];
    weights
        .par_chunks_mut(size)
        .enumerate()
        .for_each(|(y, out)| {
            let row = &octant[y.abs_diff(r) * (r + 1)..][..r + 1];
            out.iter_mut()
                .enumerate()
                .for_each(|(x, w)| *w = row[x.abs_diff(r)]);
        });
    let sum: f64 = weights.iter().sum();
    weights.iter_mut().for_each(|w| *w /= sum);
    let mut k = Kernel::new(size, weights)?;
    k.sigma = Some(sigma);
    Ok(k)
}

fn disc(radius: usize) -> Result<Kernel> {
    let size = 2 * radius + 1;
    check_size(size)?;
    let r = radius as isize;
    let weights = (-r..=r)
        .flat_map(|y| (-r..=r).map(move |x| if x * x + y * y <= r * r { 1.0 } else { 0.0 }))
        .collect();
    Kernel::new(size, weights)
}

fn from_file(path: &Path) -> Result<Kernel> {
    let text = crate::limits::read_text_file(path, "kernel file")?;
    parse_matrix(&text).map_err(|e| e.context(format!("kernel file {}", path.display())))
}

/// Parses a square matrix: rows on lines, values separated by whitespace,
/// commas or semicolons; `#` starts a comment.
pub fn parse_matrix(text: &str) -> Result<Kernel> {
    let (n, weights) = parse_square(text)?;
    Kernel::new(n, weights)
}

/// Parses a square matrix of any values (as [`parse_matrix`], without the
/// kernel checks): its side and its values row-major.
pub fn parse_square(text: &str) -> Result<(usize, Vec<f64>)> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (lineno, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let values: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
            .filter(|s| !s.is_empty())
            .collect();
        if values.is_empty() {
            continue;
        }
        // The value is not echoed: the file may be one the user may read
        // only through this (`file:/etc/shadow` under sudo).
        let row = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.parse::<f64>().map_err(|_| {
                    Error::input(format!(
                        "line {}, value {}: not a number",
                        lineno + 1,
                        i + 1
                    ))
                    .hint("a kernel file holds numbers (1, 0.5, 2e-3) separated by spaces or commas, one row per line")
                })
            })
            .collect::<Result<Vec<_>>>()?;
        rows.push(row);
    }
    let n = rows.len();
    if n == 0 {
        bail!(
            input,
            "kernel is empty",
            hint = "write an odd-sized square matrix"
        );
    }
    if let Some(bad) = rows.iter().position(|r| r.len() != n) {
        bail!(
            input,
            format!(
                "kernel is not square: {n} rows but row {} has {} values",
                bad + 1,
                rows[bad].len()
            ),
            hint = "write an odd-sized square matrix, one row per line"
        );
    }
    Ok((n, rows.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert_eq!(
            "gaussian:2.5".parse::<KernelSpec>().unwrap(),
            KernelSpec::Gaussian {
                sigma: 2.5,
                size: None
            }
        );
        assert_eq!(
            "box:5".parse::<KernelSpec>().unwrap(),
            KernelSpec::Box { size: 5 }
        );
        assert!("box:x".parse::<KernelSpec>().is_err());
        assert!("box".parse::<KernelSpec>().is_err());
        assert!("ring:3".parse::<KernelSpec>().is_err());
    }

    /// The Gaussian's weights, taken from one exp per octant, are those of
    /// its definition bit for bit (every x, y of the square), and so are
    /// its quantised weights.
    #[test]
    fn gaussian_weights_follow_the_definition_bit_for_bit() {
        for (sigma, size) in [(0.7, None), (2.5, None), (5.0, Some(17)), (33.3, None)] {
            let k = gaussian(sigma, size).unwrap();
            let r = (k.size() / 2) as isize;
            let mut want: Vec<f64> = (-r..=r)
                .flat_map(|y| {
                    (-r..=r).map(move |x| (-((x * x + y * y) as f64) / (2.0 * sigma * sigma)).exp())
                })
                .collect();
            let sum: f64 = want.iter().sum();
            want.iter_mut().for_each(|w| *w /= sum);
            let bits = |v: &[f64]| v.iter().map(|w| w.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(k.weights()), bits(&want), "σ = {sigma}");
            assert_eq!(k.quantised(), quantise(&want, want.iter().sum()).as_slice());
        }
    }

    #[test]
    fn gaussian_size_follows_the_thesis() {
        // N = 2·floor(3σ)+1: σ=2.5 gives 15 (the thesis' N = 6σ+1 rounded down to odd).
        let k = KernelSpec::Gaussian {
            sigma: 2.5,
            size: None,
        }
        .build()
        .unwrap();
        assert_eq!(k.size(), 15);
        assert!((k.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(k.quantised().iter().map(|&q| q as u64).sum::<u64>() <= QUANT_SUM);
        // Symmetric weights stay symmetric after quantisation.
        let q = k.quantised();
        assert_eq!(q[0], q[14]);
        assert_eq!(q[0], q[14 * 15 + 14]);
    }

    #[test]
    fn rejects_bad_kernels() {
        let bad = |s: &str| s.parse::<KernelSpec>().and_then(|k| k.build()).is_err();
        assert!(bad("gaussian:0"));
        assert!(bad("gaussian:-1"));
        assert!(bad("gaussian:nan"));
        assert!(bad("box:4"));
        assert!(bad("box:0"));
        assert!(bad("box:3003"));
        assert!(bad("disc:1501"));
        assert!(parse_matrix("").is_err());
        assert!(parse_matrix("1 1\n1 1").is_err());
        assert!(parse_matrix("1 1 1\n1 1\n1 1 1").is_err());
        assert!(parse_matrix("0 0 0\n0 0 0\n0 0 0").is_err());
        assert!(parse_matrix("1 -1 1\n1 1 1\n1 1 1").is_err());
    }

    #[test]
    fn kernels_up_to_3001_are_accepted() {
        // σ = 64 (the widest) gives N = 385; σ = 85 the largest default side.
        let k = "gaussian:64"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(k.size(), 385);
        let q = k.quantised();
        assert!(q.iter().map(|&v| v as u64).sum::<u64>() <= QUANT_SUM);
        // The corner weight (e^-9 of the centre's, relative) survives quantisation.
        assert!(q[0] > 0 && q[0] == q[384] && q[0] == q[385 * 385 - 1]);
        let top = "gaussian:85"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(top.size(), PER_TAP_MAX_SIZE);
        // A 511² box keeps its integer weights: they sum to 261,121.
        let b = KernelSpec::Box { size: 511 }.build().unwrap();
        assert!(b.quantised().iter().all(|&v| v == 1));
        assert_eq!(
            KernelSpec::Disc { radius: 255 }.build().unwrap().size(),
            511
        );
        // Past the old limit: σ = 150 (N = 901) and σ = 500, the largest.
        let g = "gaussian:150"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(g.size(), 901);
        let q = g.quantised();
        assert!(q.iter().map(|&v| v as u64).sum::<u64>() <= QUANT_SUM);
        assert!(q[0] > 0 && q[0] == q[900] && q[0] == q[901 * 901 - 1]);
        let top = "gaussian:500"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(top.size(), MAX_SIZE);
        let q = top.quantised();
        let sum: u64 = q.iter().map(|&v| v as u64).sum();
        assert!(sum <= QUANT_SUM && sum > QUANT_SUM / 100 * 99, "{sum}");
        // Its corners (e^-9 of the centre, about 0.17 of a quantum) round to 0.
        assert_eq!(q[0], 0);
        let b = KernelSpec::Box { size: MAX_SIZE }.build().unwrap();
        assert!(b.quantised().iter().all(|&v| v == 1));
        // σ = 500.5 needs N = 3003: one line, with a hint naming the limit.
        let e = "gaussian:500.5"
            .parse::<KernelSpec>()
            .unwrap()
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains('\n') && e.contains("3003x3003") && e.contains("sigma ≤ 500"),
            "{e}"
        );
        // The per-tap methods refuse what they cannot run, naming fft.
        assert!(
            refuse_wide(&b, "svd")
                .unwrap_err()
                .to_string()
                .contains("method = fft")
        );
        assert!(refuse_wide(&k, "svd").is_ok());
    }

    #[test]
    fn integer_kernels_keep_their_weights() {
        let k = parse_matrix("1 1 1\n1 5 1\n1 1 1").unwrap();
        assert_eq!(k.quantised(), &[1, 1, 1, 1, 5, 1, 1, 1, 1]);
        let d = KernelSpec::Disc { radius: 1 }.build().unwrap();
        assert_eq!(d.quantised(), &[0, 1, 0, 1, 1, 1, 0, 1, 0]);
    }

    #[test]
    fn fractional_kernels_scale_to_the_quantum() {
        let k = parse_matrix("0.5, 0.25, 0.5\n1 1 1\n 0 0 0").unwrap();
        let q = k.quantised();
        assert_eq!(q[0], q[2]);
        assert!((q[0] as i64 - 2 * q[1] as i64).abs() <= 1);
        assert!(q.iter().map(|&v| v as u64).sum::<u64>() <= QUANT_SUM);
        assert_eq!(q[6], 0);
    }
}
