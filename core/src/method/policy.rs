//! The smoothing policies of docs/semantics.md#policies: the tie rule
//! ([`Ties`], applied where a method picks its winner), and what the engine
//! applies around any method ([`Policies`]): classes that never change
//! (`--keep`), classes that cast no vote (`--no-vote`, a class weight of 0),
//! only isolated pixels change (`--only-isolated T`), and the whole
//! smoothing repeated (`--iterations N`).
//!
//! The per-tile parts here work on local class indices: [`settle`] is the
//! rule a pixel's method result passes through, [`next_iteration`] turns
//! one pass's output into the next pass's tile.

use super::ClassTile;
use crate::bail;
use crate::classes::{ClassTable, MAX_CLASSES, NO_CLASS, TileCompaction};
use crate::error::{Error, Result, Setting};
use rayon::prelude::*;

/// What a method writes where `--ties undecided:CODE` finds a tie: a value
/// that is neither a local class index (at most [`MAX_CLASSES`]) nor
/// [`NO_CLASS`]; the engine turns it into CODE.
pub const UNDECIDED: u16 = NO_CLASS - 1;

/// Who wins when several classes share the best score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ties {
    /// The centre pixel's class if it is among the best, else the smallest
    /// code among them (the rule mapfilter always had).
    #[default]
    Centre,
    /// The smallest code among the best.
    Smallest,
    /// The largest code among the best.
    Largest,
    /// A tie gives this code (OTB's "undecided" label).
    Undecided(u16),
}

impl Ties {
    /// The value of `-D TIES=` in `kernels/naive.cl` (0: the default rule).
    pub fn cl_code(self) -> u32 {
        match self {
            Ties::Centre => 0,
            Ties::Smallest => 1,
            Ties::Largest => 2,
            Ties::Undecided(_) => 3,
        }
    }

    /// The code written for ties, where the rule writes one.
    pub fn undecided(self) -> Option<u16> {
        match self {
            Ties::Undecided(code) => Some(code),
            _ => None,
        }
    }
}

impl std::fmt::Display for Ties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ties::Centre => write!(f, "centre"),
            Ties::Smallest => write!(f, "smallest"),
            Ties::Largest => write!(f, "largest"),
            Ties::Undecided(code) => write!(f, "undecided:{code}"),
        }
    }
}

impl std::str::FromStr for Ties {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let hint = format!(
            "write {}, smallest, largest or undecided:CODE",
            Setting::Ties.is("centre")
        );
        Ok(match text.trim() {
            "centre" | "center" => Ties::Centre,
            "smallest" => Ties::Smallest,
            "largest" => Ties::Largest,
            other => match other.split_once(':') {
                Some(("undecided", code)) => {
                    Ties::Undecided(code.trim().parse().map_err(|_| {
                        Error::usage(format!(
                            "{}: '{code}' is not a class code",
                            Setting::Ties.is(other)
                        ))
                        .hint(hint.clone())
                    })?)
                }
                _ => bail!(usage, format!("unknown tie rule '{other}'"), hint = hint),
            },
        })
    }
}

/// The most passes `--iterations` takes.
pub const MAX_ITERATIONS: usize = 1000;

/// The largest halo the iterations may need (kernel radius × iterations).
pub const MAX_HALO: usize = 2048;

/// Parses a list of class codes: `CODE[,CODE...]`, e.g. `80,190`.
pub fn parse_codes(option: Setting, text: &str) -> Result<Vec<u16>> {
    let mut codes = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let code: u16 = item.parse().map_err(|_| {
            Error::usage(format!("{option}: '{item}' is not a class code")).hint(format!(
                "write {}, e.g. 80,190",
                option.is("CODE[,CODE...]")
            ))
        })?;
        codes.push(code);
    }
    codes.sort_unstable();
    codes.dedup();
    Ok(codes)
}

/// The policies of one run, by class code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policies {
    pub ties: Ties,
    /// Codes whose pixels never change.
    pub keep: Vec<u16>,
    /// Codes that cast no vote (their class weight is 0).
    pub no_vote: Vec<u16>,
    /// A pixel changes only when fewer than T of its neighbours share its class.
    pub only_isolated: Option<u32>,
    /// How many times the whole smoothing runs (at least 1).
    pub iterations: usize,
}

impl Default for Policies {
    fn default() -> Self {
        Policies {
            ties: Ties::Centre,
            keep: Vec::new(),
            no_vote: Vec::new(),
            only_isolated: None,
            iterations: 1,
        }
    }
}

/// The policies as the user wrote them (`smooth`'s options, a batch
/// plan's fields): every field optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyText<'a> {
    pub ties: Option<&'a str>,
    pub keep: Option<&'a str>,
    pub no_vote: Option<&'a str>,
    pub only_isolated: Option<u32>,
    pub iterations: Option<usize>,
}

impl PolicyText<'_> {
    /// Parses and checks every field.
    pub fn parse(&self) -> Result<Policies> {
        let policies = Policies {
            ties: self.ties.map_or(Ok(Ties::Centre), str::parse)?,
            keep: parse_codes(Setting::Keep, self.keep.unwrap_or(""))?,
            no_vote: parse_codes(Setting::NoVote, self.no_vote.unwrap_or(""))?,
            only_isolated: self.only_isolated,
            iterations: self.iterations.unwrap_or(1),
        };
        policies.check()?;
        Ok(policies)
    }
}

impl Policies {
    /// Checks the values that need no raster.
    pub fn check(&self) -> Result<()> {
        if self.iterations == 0 || self.iterations > MAX_ITERATIONS {
            bail!(
                usage,
                format!("{} must be 1 to {MAX_ITERATIONS}", Setting::Iterations),
                hint = "1 smooths once (the default)"
            );
        }
        if self.only_isolated == Some(0) {
            bail!(
                usage,
                format!("{} would change no pixel", Setting::OnlyIsolated.is(0)),
                hint = "give T >= 1: a pixel changes when fewer than T neighbours share its class"
            );
        }
        Ok(())
    }

    /// Whether the engine has anything to do around the method (the tie
    /// rule lives inside the methods).
    pub fn around_method(&self) -> bool {
        !self.keep.is_empty()
            || !self.no_vote.is_empty()
            || self.only_isolated.is_some()
            || self.iterations > 1
    }

    /// The quantised class weights per global index of `table` with the
    /// no-vote classes set to 0.
    pub fn apply_no_vote(&self, table: &ClassTable, weights: &mut [u32]) {
        for (w, code) in weights.iter_mut().zip(table.codes()) {
            if self.no_vote.binary_search(code).is_ok() {
                *w = 0;
            }
        }
    }

    /// Per global index of `table`: whether the class is kept.
    pub fn keep_mask(&self, table: &ClassTable) -> Vec<bool> {
        table
            .codes()
            .iter()
            .map(|c| self.keep.binary_search(c).is_ok())
            .collect()
    }

    /// The policies as (name, value) pairs, for reports.
    pub fn settings(&self) -> Vec<(String, String)> {
        let codes = |c: &[u16]| {
            if c.is_empty() {
                "none".to_string()
            } else {
                c.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
            }
        };
        vec![
            ("ties".into(), self.ties.to_string()),
            ("keep".into(), codes(&self.keep)),
            ("no vote".into(), codes(&self.no_vote)),
            (
                "only isolated".into(),
                self.only_isolated.map_or("off".into(), |t| t.to_string()),
            ),
            ("iterations".into(), self.iterations.to_string()),
        ]
    }

    /// The halo the whole smoothing needs for a kernel of radius `r`.
    pub fn halo(&self, r: usize) -> usize {
        r.saturating_mul(self.iterations)
    }

    /// [`Policies::halo`], refused beyond [`MAX_HALO`] (every tile is read
    /// grown by it, so memory grows with its square).
    pub fn checked_halo(&self, r: usize) -> Result<usize> {
        let halo = self.halo(r);
        if halo > MAX_HALO {
            bail!(
                usage,
                format!(
                    "{} iterations of a kernel of radius {r} reach {halo} pixels, more than {MAX_HALO}",
                    self.iterations
                ),
                hint = "use fewer iterations or a smaller kernel"
            );
        }
        Ok(halo)
    }

    /// Checks the undecided code against the input's nodata value.
    pub fn check_nodata(&self, nodata: Option<u16>) -> Result<()> {
        if let Some(code) = self.ties.undecided()
            && Some(code) == nodata
        {
            bail!(
                usage,
                format!(
                    "{} names the input's nodata value",
                    Setting::Ties.is(format!("undecided:{code}"))
                ),
                hint = "choose a code that is not nodata"
            );
        }
        Ok(())
    }
}

/// Refuses policies that `method` cannot honour, on every device alike:
/// a tie rule other than the default is defined on exact scores, and the
/// fast methods without `--exact` rank approximate ones, which cannot tell
/// a tie from a near-tie (docs/semantics.md#exactness-of-the-policies).
/// Finding the ties among approximate scores means recomputing exactly
/// every pixel whose two best scores lie within the error bound, which is
/// what `--exact` does, so the hint points there.
/// `exact`: whether the method gives naive's result; `name` names it.
pub fn check_method(policies: &Policies, exact: bool, name: &str) -> Result<()> {
    if policies.ties != Ties::Centre && !exact {
        bail!(
            usage,
            format!(
                "{} is defined on exact scores, and {name} computes approximate ones, which cannot tell a tie",
                Setting::Ties.is(policies.ties)
            ),
            hint = format!(
                "add {} (pixels whose best scores are within the error bound are recomputed exactly, so ties are found) or use {}",
                Setting::Exact,
                Setting::Method.is("naive")
            )
        );
    }
    Ok(())
}

/// Refuses `--confidence` (`given`) on a method whose scores do not take
/// per-pixel vote weights ([`ClassSmoother::weighs_votes`]; every built-in
/// method does, on every device).
pub fn check_confidence(given: bool, method: &dyn crate::method::ClassSmoother) -> Result<()> {
    if given && !method.weighs_votes() {
        bail!(
            usage,
            format!(
                "{} does not weigh votes in {}",
                Setting::Confidence,
                method.name()
            ),
            hint = format!("use {}", Setting::Method.is("naive"))
        );
    }
    Ok(())
}

/// What [`settle`] needs besides the tile and the method's result, in the
/// tile's local indices.
pub struct Settle<'a> {
    /// Per local class: never changes.
    pub keep: &'a [bool],
    /// Per local class: its quantised weight (0: casts no vote).
    pub weights: &'a [u32],
    pub only_isolated: Option<u32>,
    /// The kernel's non-zero taps as offsets from the window's corner in
    /// the tile (see [`super::naive::taps`]).
    pub taps: &'a [(usize, u32)],
}

/// Applies the policies around a method to its result `out` on `tile`:
/// where the centre is a class, a kept class stays; with `--only-isolated
/// T` a class shared by at least T neighbours stays; and a pixel the
/// method left without a class (no class scored) keeps its class when that
/// class casts no vote. Nodata centres are left to the method.
pub fn settle(tile: &ClassTile, rules: &Settle, out: &mut [u16]) {
    let ow = tile.output_width();
    if ow == 0 {
        return;
    }
    let centre_tap = tile.halo * tile.width + tile.halo;
    out.par_chunks_mut(ow).enumerate().for_each(|(y, row)| {
        for (x, v) in row.iter_mut().enumerate() {
            let c = tile.centre(x, y);
            if c as usize >= tile.n_classes {
                continue;
            }
            let stays = rules.keep[c as usize]
                || rules.only_isolated.is_some_and(|t| {
                    let window = &tile.classes[y * tile.width + x..];
                    same_neighbours(window, rules.taps, centre_tap, c, t) >= t
                })
                || (*v == NO_CLASS && rules.weights[c as usize] == 0);
            if stays {
                *v = c;
            }
        }
    });
}

/// How many neighbours (taps other than the centre) of the window starting
/// at `window[0]` hold class `c`, counted up to `limit`.
#[inline]
fn same_neighbours(
    window: &[u16],
    taps: &[(usize, u32)],
    centre_tap: usize,
    c: u16,
    limit: u32,
) -> u32 {
    let mut n = 0;
    for &(offset, _) in taps {
        if offset != centre_tap && window[offset] == c {
            n += 1;
            if n >= limit {
                break;
            }
        }
    }
    n
}

/// One pass's output as the next pass's tile: `out` (local indices of
/// `local`, [`NO_CLASS`] or [`UNDECIDED`]) is an `ow × oh` grid whose
/// pixels inside `raster` (the part of the grid that lies in the raster:
/// x0, y0, x1, y1) are classes; the rest lies outside the raster and holds
/// no class. `undecided`: the global index of the undecided code.
/// Returns the compaction of the new tile, written into `padded`.
pub fn next_iteration(
    out: &[u16],
    ow: usize,
    raster: [usize; 4],
    local: &TileCompaction,
    undecided: Option<u16>,
    padded: &mut Vec<u16>,
) -> Result<TileCompaction> {
    let [x0, y0, x1, y1] = raster;
    let none = MAX_CLASSES as u16;
    let global = |v: u16| -> u16 {
        match v {
            NO_CLASS => none,
            UNDECIDED => undecided.unwrap_or(none),
            l => local.globals[l as usize],
        }
    };
    let mut present = [false; MAX_CLASSES + 1];
    let mut globals = vec![none; out.len()];
    for (i, (g, &v)) in globals.iter_mut().zip(out).enumerate() {
        let (x, y) = (i % ow, i / ow);
        if x >= x0 && x < x1 && y >= y0 && y < y1 {
            *g = global(v);
            present[*g as usize] = true;
        }
    }
    if undecided.is_none() && out.contains(&UNDECIDED) {
        return Err(Error::internal(
            "a tie was marked undecided without an undecided code",
        ));
    }
    let kept: Vec<u16> = (0..MAX_CLASSES as u16)
        .filter(|&g| present[g as usize])
        .collect();
    let mut to_local = [kept.len() as u16; MAX_CLASSES + 1];
    for (l, &g) in kept.iter().enumerate() {
        to_local[g as usize] = l as u16;
    }
    padded.clear();
    padded.extend(globals.iter().map(|&g| to_local[g as usize]));
    Ok(TileCompaction { globals: kept })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_parse_and_print() {
        for text in ["centre", "smallest", "largest", "undecided:250"] {
            assert_eq!(text.parse::<Ties>().unwrap().to_string(), text);
        }
        assert_eq!("center".parse::<Ties>().unwrap(), Ties::Centre);
        assert!("undecided:x".parse::<Ties>().is_err());
        assert!("first".parse::<Ties>().is_err());
        assert_eq!(
            parse_codes(Setting::Keep, "80, 10,80").unwrap(),
            vec![10, 80]
        );
        assert!(parse_codes(Setting::Keep, "a").is_err());
    }

    #[test]
    fn settle_keeps_isolates_and_silent_classes() {
        // 3×3 box on a 5×4 tile (halo 1): output 3×2.
        #[rustfmt::skip]
        let data = [
            0, 0, 1, 1, 1,
            0, 0, 1, 2, 1,
            0, 0, 0, 1, 1,
            3, 3, 3, 3, 3,
        ];
        let tile = ClassTile {
            width: 5,
            height: 4,
            halo: 1,
            n_classes: 3,
            classes: &data,
        };
        let taps: Vec<(usize, u32)> = (0..3)
            .flat_map(|dy| (0..3).map(move |dx| (dy * 5 + dx, 1)))
            .collect();
        // Pretend the method turned everything into class 0 or no class.
        let method = [0, 0, NO_CLASS, 0, 0, 0];
        let mut out = method;
        let rules = Settle {
            keep: &[false, false, true],
            weights: &[1, 1, 1],
            only_isolated: None,
            taps: &taps,
        };
        settle(&tile, &rules, &mut out);
        // Centre (3, 1) holds 2: kept.
        assert_eq!(out, [0, 0, 2, 0, 0, 0]);
        // Only isolated: class 1 at tile (2, 1) and (3, 2) has 3 like
        // neighbours, class 0 at (3, 2) two.
        let mut out = method;
        let rules = Settle {
            keep: &[false, false, false],
            only_isolated: Some(3),
            ..rules
        };
        settle(&tile, &rules, &mut out);
        assert_eq!(out, [0, 1, NO_CLASS, 0, 0, 1]);
        // A class without a vote keeps its pixel where nothing scored.
        let mut out = method;
        let rules = Settle {
            weights: &[1, 1, 0],
            only_isolated: None,
            ..rules
        };
        settle(&tile, &rules, &mut out);
        assert_eq!(out, [0, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn next_iteration_recompacts() {
        let local = TileCompaction {
            globals: vec![3, 7],
        };
        let out = [1, 0, UNDECIDED, NO_CLASS, 1, 1];
        let mut padded = Vec::new();
        let next = next_iteration(&out, 3, [0, 0, 2, 2], &local, Some(5), &mut padded).unwrap();
        // Column 2 lies outside the raster.
        assert_eq!(next.globals, vec![3, 7]);
        assert_eq!(padded, vec![1, 0, 2, 2, 1, 2]);
        let next = next_iteration(&out, 3, [0, 0, 3, 2], &local, Some(5), &mut padded).unwrap();
        assert_eq!(next.globals, vec![3, 5, 7]);
        assert_eq!(padded, vec![2, 0, 1, 3, 2, 2]);
    }
}
