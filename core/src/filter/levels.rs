//! Multi-level outputs: `gaussian-pyramid:LEVELS`,
//! `laplacian-pyramid:LEVELS` and `scale-space:OCTAVES:SCALES[:SIGMA0]`
//! among a command's ops.
//!
//! A level op splits the ops into those before it (run at full resolution)
//! and those after it (run on every level), and stands for one chain per
//! level: level k of the Gaussian pyramid is `pyrdown` k times; level
//! (o, s) of the scale space is `pyrdown` o times (each octave half the
//! size, the binomial step as its anti-aliasing) then `gaussian:σ` with
//! σ = SIGMA0 · 2^(s/SCALES) (SIGMA0 1.6 by default, Lowe's). Every level
//! is then an ordinary chain: tiled, on the host or a device, with its own
//! size and geotransform ([`super::op::Chain::geo_transform`]), written to
//! its own file. Each level's chain starts from the input, so the octaves'
//! `pyrdown` steps run once per level that needs them (the pyramid's cost
//! is dominated by its first levels either way).

use crate::bail;
use crate::error::Result;

/// A level op.
#[derive(Clone, Debug, PartialEq)]
pub enum Levels {
    Gaussian {
        levels: usize,
    },
    Laplacian {
        levels: usize,
    },
    ScaleSpace {
        octaves: usize,
        scales: usize,
        sigma0: f64,
    },
}

const HINT: &str = "write gaussian-pyramid:LEVELS, laplacian-pyramid:LEVELS or scale-space:OCTAVES:SCALES[:SIGMA0]";

/// A level op with the ops before and after it.
pub type Split = (Levels, Vec<String>, Vec<String>);

/// One level: a name for its file and its ops.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub suffix: String,
    pub ops: Vec<String>,
}

impl Levels {
    /// The level op `spec` names, `None` for other ops.
    pub fn parse(spec: &str) -> Option<Result<Self>> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        if !["gaussian-pyramid", "laplacian-pyramid", "scale-space"].contains(&name) {
            return None;
        }
        Some(Self::parse_args(spec, name, rest))
    }

    fn parse_args(spec: &str, name: &str, rest: &str) -> Result<Self> {
        let args: Vec<&str> = rest.split(':').filter(|s| !s.is_empty()).collect();
        let count = |s: &str| -> Result<usize> {
            match s.parse::<usize>() {
                Ok(n) if (1..=16).contains(&n) => Ok(n),
                _ => bail!(
                    usage,
                    format!("op '{spec}': '{s}' is not a count from 1 to 16"),
                    hint = HINT
                ),
            }
        };
        match (name, args.as_slice()) {
            ("gaussian-pyramid", [l]) => Ok(Levels::Gaussian { levels: count(l)? }),
            ("laplacian-pyramid", [l]) => Ok(Levels::Laplacian { levels: count(l)? }),
            ("scale-space", [o, s, rest @ ..]) if rest.len() <= 1 => {
                let sigma0 = match rest.first() {
                    Some(v) => match v.parse::<f64>() {
                        Ok(x) if x > 0.0 && x.is_finite() => x,
                        _ => bail!(
                            usage,
                            format!("op '{spec}': SIGMA0 '{v}' is not a positive number"),
                            hint = HINT
                        ),
                    },
                    None => 1.6,
                };
                Ok(Levels::ScaleSpace {
                    octaves: count(o)?,
                    scales: count(s)?,
                    sigma0,
                })
            }
            _ => bail!(
                usage,
                format!("op '{spec}' has the wrong parameters"),
                hint = HINT
            ),
        }
    }

    /// How many levels the op makes.
    pub fn count(&self) -> usize {
        match *self {
            Levels::Gaussian { levels } | Levels::Laplacian { levels } => levels,
            Levels::ScaleSpace {
                octaves, scales, ..
            } => octaves * scales,
        }
    }

    /// Splits `specs` at its level op: (the level op, ops before, ops after).
    pub fn split(specs: &[String]) -> Result<Option<Split>> {
        let mut found = None;
        for (i, s) in specs.iter().enumerate() {
            if let Some(l) = Self::parse(s) {
                if found.is_some() {
                    bail!(
                        usage,
                        "only one level op (gaussian-pyramid, laplacian-pyramid, scale-space) per command",
                        hint = HINT
                    );
                }
                found = Some((i, l?));
            }
        }
        Ok(found.map(|(i, l)| (l, specs[..i].to_vec(), specs[i + 1..].to_vec())))
    }

    /// The Gaussian σ of scale `s` of a scale space: SIGMA0 · 2^(s/SCALES).
    pub fn sigma(sigma0: f64, s: usize, scales: usize) -> f64 {
        sigma0 * 2f64.powf(s as f64 / scales as f64)
    }

    /// The chain of every level: `before`, the level's own ops, `after`.
    pub fn chains(&self, before: &[String], after: &[String]) -> Vec<Level> {
        let down = |k: usize| std::iter::repeat_n("pyrdown".to_string(), k);
        let level = |suffix: String, own: Vec<String>| Level {
            suffix,
            ops: before
                .iter()
                .cloned()
                .chain(own)
                .chain(after.iter().cloned())
                .collect(),
        };
        match *self {
            Levels::Gaussian { levels } => (0..levels)
                .map(|k| level(format!("L{k}"), down(k).collect()))
                .collect(),
            Levels::Laplacian { levels } => (0..levels)
                .map(|k| {
                    let own = if k + 1 == levels {
                        "laplacian-top"
                    } else {
                        "laplacian-level"
                    };
                    level(format!("L{k}"), down(k).chain([own.to_string()]).collect())
                })
                .collect(),
            Levels::ScaleSpace {
                octaves,
                scales,
                sigma0,
            } => (0..octaves)
                .flat_map(|o| {
                    (0..scales).map(move |s| {
                        let sigma = Self::sigma(sigma0, s, scales);
                        let own = down(o).chain([format!("gaussian:{sigma}")]).collect();
                        level(format!("O{o}_S{s}"), own)
                    })
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_and_expands_levels() {
        let (l, before, after) =
            Levels::split(&specs(&["median:3", "gaussian-pyramid:3", "scharr:5"]))
                .unwrap()
                .unwrap();
        let chains = l.chains(&before, &after);
        assert_eq!(chains.len(), 3);
        assert_eq!(chains[0].ops, specs(&["median:3", "scharr:5"]));
        assert_eq!(chains[2].suffix, "L2");
        assert_eq!(
            chains[2].ops,
            specs(&["median:3", "pyrdown", "pyrdown", "scharr:5"])
        );

        let (l, before, after) = Levels::split(&specs(&["scale-space:2:2:1"]))
            .unwrap()
            .unwrap();
        let chains = l.chains(&before, &after);
        assert_eq!(chains.len(), 4);
        assert_eq!(chains[3].suffix, "O1_S1");
        assert_eq!(
            chains[3].ops,
            specs(&["pyrdown", &format!("gaussian:{}", 2f64.sqrt())])
        );
        // Every level chain parses.
        for c in chains {
            assert!(crate::filter::Chain::parse(&c.ops).is_ok());
        }
        let (l, before, after) = Levels::split(&specs(&["laplacian-pyramid:3"]))
            .unwrap()
            .unwrap();
        let chains = l.chains(&before, &after);
        assert_eq!(chains[0].ops, specs(&["laplacian-level"]));
        assert_eq!(
            chains[2].ops,
            specs(&["pyrdown", "pyrdown", "laplacian-top"])
        );
        assert_eq!(Levels::split(&specs(&["box:3"])).unwrap(), None);
        for bad in [
            "gaussian-pyramid",
            "gaussian-pyramid:0",
            "scale-space:4",
            "scale-space:4:4:-1",
            "scale-space:4:4:1:2",
        ] {
            assert!(Levels::split(&specs(&[bad])).is_err(), "{bad}");
        }
        assert!(Levels::split(&specs(&["gaussian-pyramid:2", "scale-space:2:2"])).is_err());
    }
}
