//! How many sample points each stratum gets: proportional to its area,
//! equal, a fixed number, or Olofsson et al. (2014, section 5.1.1): the
//! total from a target standard error of overall accuracy and conjectured
//! user's accuracies, rare strata raised to a minimum and the rest
//! proportional. Every stratum gets at least the minimum (never more than
//! its pixels), so that each has the two points its variance needs.

use crate::bail;
use crate::error::{Result, Setting};

/// The allocation rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Allocation {
    /// `n_h ∝ area_h`.
    Proportional,
    /// The same number in every stratum.
    Equal,
    /// This many in every stratum (the total follows).
    Fixed(u64),
    /// Total `(Σ W_h S_h / target_se)²` with `S_h = √(U(1−U))`, `U` the
    /// conjectured user's accuracy; then proportional above the minimum.
    Olofsson { target_se: f64, expected_users: f64 },
}

impl std::str::FromStr for Allocation {
    type Err = crate::Error;

    /// `proportional`, `equal`, `fixed:N` or `olofsson` (its target and
    /// conjectured accuracy set by the caller).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            crate::Error::usage(format!("{}: not an allocation", Setting::Allocation.is(s)))
                .hint("give proportional, equal, fixed:N (points per stratum) or olofsson")
        };
        Ok(match s {
            "proportional" => Allocation::Proportional,
            "equal" => Allocation::Equal,
            "olofsson" => Allocation::Olofsson {
                target_se: 0.01,
                expected_users: 0.8,
            },
            _ => match s.strip_prefix("fixed:").map(str::parse::<u64>) {
                Some(Ok(n)) if n > 0 => Allocation::Fixed(n),
                _ => return Err(bad()),
            },
        })
    }
}

/// Olofsson et al. (2014), eq. 13: the sample size that gives overall
/// accuracy the standard error `target_se`, for strata of area shares
/// `weights` whose user's accuracies are conjectured as `expected_users`.
pub fn olofsson_total(weights: &[f64], expected_users: &[f64], target_se: f64) -> u64 {
    let s: f64 = weights
        .iter()
        .zip(expected_users)
        .map(|(w, u)| w * (u * (1.0 - u)).sqrt())
        .sum();
    (s / target_se).powi(2).ceil() as u64
}

/// Points per stratum for strata of `pixels` and `areas` (same order).
/// `total` is required by the proportional and equal rules, optional for
/// Olofsson's (it overrides the computed size), ignored by fixed.
pub fn allocate(
    rule: Allocation,
    pixels: &[u64],
    areas: &[f64],
    total: Option<u64>,
    min_per_stratum: u64,
) -> Result<Vec<u64>> {
    assert_eq!(pixels.len(), areas.len());
    let all: f64 = areas.iter().sum();
    if pixels.is_empty() || all.is_nan() || all <= 0.0 {
        bail!(
            input,
            "no valid pixel to sample",
            hint =
                "the map (and the strata raster) are nodata everywhere: check their nodata values"
        );
    }
    let need_total = |name: &str| {
        total.ok_or_else(|| {
            crate::Error::usage(format!(
                "{} needs a sample size",
                Setting::Allocation.is(name)
            ))
            .hint(format!(
                "give the total number of points with {}",
                Setting::SampleSize.is("TOTAL")
            ))
        })
    };
    let counts = match rule {
        Allocation::Fixed(k) => pixels.iter().map(|&p| k.min(p)).collect(),
        Allocation::Equal => {
            let n = need_total("equal")?;
            let h = pixels.len() as u64;
            pixels
                .iter()
                .enumerate()
                .map(|(i, &p)| {
                    (n / h + u64::from((i as u64) < n % h))
                        .max(min_per_stratum)
                        .min(p)
                })
                .collect()
        }
        Allocation::Proportional => {
            let n = need_total("proportional")?;
            proportional(n, pixels, areas, min_per_stratum)
        }
        Allocation::Olofsson {
            target_se,
            expected_users,
        } => {
            let in_unit = |v: f64| v > 0.0 && v < 1.0;
            if !in_unit(target_se) || !in_unit(expected_users) {
                bail!(
                    usage,
                    format!(
                        "{} and {} must lie between 0 and 1",
                        Setting::TargetSe.is(target_se),
                        Setting::ExpectedUsers.is(expected_users)
                    ),
                    hint = format!(
                        "e.g. {} {}",
                        Setting::TargetSe.is(0.01),
                        Setting::ExpectedUsers.is(0.8)
                    )
                );
            }
            let weights: Vec<f64> = areas.iter().map(|a| a / all).collect();
            let n = total.unwrap_or_else(|| {
                olofsson_total(&weights, &vec![expected_users; weights.len()], target_se)
            });
            proportional(n, pixels, areas, min_per_stratum)
        }
    };
    Ok(counts)
}

/// `n` points proportional to area, each stratum raised to the minimum (or
/// all its pixels) and none above its pixels; the shares of the strata left
/// proportional are rounded by largest remainder, so they sum to what is left.
fn proportional(n: u64, pixels: &[u64], areas: &[f64], min: u64) -> Vec<u64> {
    let k = pixels.len();
    let mut fixed: Vec<Option<u64>> = vec![None; k];
    loop {
        let taken: u64 = fixed.iter().flatten().sum();
        let left = n.saturating_sub(taken) as f64;
        let free: f64 = (0..k)
            .filter(|&h| fixed[h].is_none())
            .map(|h| areas[h])
            .sum();
        let mut changed = false;
        for h in 0..k {
            if fixed[h].is_some() {
                continue;
            }
            let share = if free > 0.0 {
                left * areas[h] / free
            } else {
                0.0
            };
            if share < min as f64 || share > pixels[h] as f64 {
                fixed[h] = Some(min.max(share.floor() as u64).min(pixels[h]));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let taken: u64 = fixed.iter().flatten().sum();
    let left = n.saturating_sub(taken);
    let free: f64 = (0..k)
        .filter(|&h| fixed[h].is_none())
        .map(|h| areas[h])
        .sum();
    let exact: Vec<f64> = (0..k)
        .map(|h| match fixed[h] {
            Some(_) => 0.0,
            None => left as f64 * areas[h] / free,
        })
        .collect();
    let mut counts: Vec<u64> = (0..k)
        .map(|h| fixed[h].unwrap_or(exact[h].floor() as u64))
        .collect();
    let short = left.saturating_sub(
        (0..k)
            .filter(|&h| fixed[h].is_none())
            .map(|h| counts[h])
            .sum(),
    );
    let mut order: Vec<usize> = (0..k).filter(|&h| fixed[h].is_none()).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &h in order.iter().take(short as usize) {
        counts[h] = (counts[h] + 1).min(pixels[h]);
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Olofsson et al. (2014), section 5.1.1: W = 0.020, 0.015, 0.320,
    /// 0.645, conjectured user's accuracies 0.7, 0.6, 0.9, 0.95, a target
    /// standard error of 0.01 for overall accuracy: n = 641.
    #[test]
    fn olofsson_2014_sample_size() {
        let n = olofsson_total(&[0.02, 0.015, 0.32, 0.645], &[0.7, 0.6, 0.9, 0.95], 0.01);
        assert_eq!(n, 641);
    }

    #[test]
    fn proportional_with_a_minimum_for_rare_strata() {
        // 641 points, rare strata raised to 100 (the paper's first option):
        // 100, 100, then 441 split 320:645 between the large ones.
        let pixels = [200_000, 150_000, 3_200_000, 6_450_000];
        let areas: Vec<f64> = pixels.iter().map(|&p| p as f64).collect();
        let n = allocate(Allocation::Proportional, &pixels, &areas, Some(641), 100).unwrap();
        assert_eq!(n, [100, 100, 146, 295]);
        assert_eq!(n.iter().sum::<u64>(), 641);
        // Without a minimum: plain shares, rounded to sum to the total.
        let n = allocate(Allocation::Proportional, &pixels, &areas, Some(1000), 0).unwrap();
        assert_eq!(n, [20, 15, 320, 645]);
    }

    #[test]
    fn never_more_than_a_stratum_holds() {
        let n = allocate(
            Allocation::Proportional,
            &[3, 1000],
            &[3.0, 1000.0],
            Some(500),
            50,
        )
        .unwrap();
        assert_eq!(n, [3, 497]);
        assert_eq!(
            allocate(Allocation::Fixed(5), &[3, 10], &[3.0, 10.0], None, 2).unwrap(),
            [3, 5]
        );
        assert_eq!(
            allocate(Allocation::Equal, &[100, 100, 100], &[1.0; 3], Some(10), 2).unwrap(),
            [4, 3, 3]
        );
        let err = allocate(Allocation::Equal, &[1], &[1.0], None, 2).unwrap_err();
        assert!(err.to_string().contains("sample-size = TOTAL"), "{err}");
        assert!("fixed:0".parse::<Allocation>().is_err());
        assert_eq!(
            "fixed:7".parse::<Allocation>().unwrap(),
            Allocation::Fixed(7)
        );
    }
}
