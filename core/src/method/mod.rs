//! What the class-smoothing methods compute, apart from how they are run.
//!
//! The engine hands a method one halo-padded [`ClassTile`] of local class
//! indices and receives one output index per core pixel. Methods know nothing
//! of GDAL, files, progress or tiling; the shared scoring rules (tie rule,
//! nodata) live in [`pick_winner`] so every method applies them identically.

pub mod bounds;
pub mod bridged;
pub mod certified;
pub mod cost;
pub mod dct5;
pub mod family;
pub mod multi;
pub mod plane;
pub mod policy;
pub mod ranking;
pub mod select;
mod simd;
pub mod spec;
pub mod starting;

use crate::classes::{self, CodeLut, CodeMap, NO_CLASS, TileCompaction};
use crate::error::Result;
use crate::io::RowsMut;
use crate::kernel::Kernel;
use family::Family;
use std::sync::LazyLock;

// The method folders (`naive`, `separable`, `auto`, ...): every folder
// `src/method/<m>/` whose `mod.rs` declares `pub const FAMILIES`, its
// descriptors. build.rs writes their `pub mod` lines, `METHOD_FOLDERS` and
// `FOLDER_FAMILIES` (docs/adding-a-method.md).
include!(concat!(env!("OUT_DIR"), "/method_modules.rs"));

/// Every class-smoothing method's descriptor, in the order help texts and
/// errors list them ([`Family::list_position`], then name); the first is
/// the default and the exact baseline that `auto` and certified candidates
/// fall back on. A method folder's `FAMILIES` joins it without an edit here.
pub fn registry() -> &'static [&'static dyn Family] {
    &REGISTRY
}

/// [`registry`]'s list.
static REGISTRY: LazyLock<Vec<&'static dyn Family>> = LazyLock::new(|| {
    let mut all: Vec<&'static dyn Family> = FOLDER_FAMILIES
        .iter()
        .flat_map(|f| f.iter().copied())
        .collect();
    all.sort_by_key(|family| (family.list_position(), family.name()));
    all
});

/// One halo-padded tile of local class indices.
///
/// Values are `0..n_classes`, or `n_classes` itself for nodata and for pixels
/// outside the raster. Output pixel `(x, y)` is centred on tile pixel
/// `(x + halo, y + halo)`; the output is `(width − 2·halo) × (height − 2·halo)`.
#[derive(Clone, Copy, Debug)]
pub struct ClassTile<'a> {
    pub width: usize,
    pub height: usize,
    pub halo: usize,
    pub n_classes: usize,
    pub classes: &'a [u16],
}

impl ClassTile<'_> {
    /// The value that marks nodata and out-of-raster pixels.
    pub fn nodata(&self) -> u16 {
        self.n_classes as u16
    }

    pub fn output_width(&self) -> usize {
        self.width - 2 * self.halo
    }

    pub fn output_height(&self) -> usize {
        self.height - 2 * self.halo
    }

    pub fn output_len(&self) -> usize {
        self.output_width() * self.output_height()
    }

    /// The class at the centre of output pixel `(x, y)`.
    #[inline]
    pub fn centre(&self, x: usize, y: usize) -> u16 {
        self.centre_row(y)[x]
    }

    /// The classes at the centres of output row `y`, from its first pixel
    /// on (the row's output pixels, then the rest of the tile).
    #[inline]
    pub fn centre_row(&self, y: usize) -> &[u16] {
        &self.classes[(y + self.halo) * self.width + self.halo..]
    }

    /// Whether every output of this tile is decided by its centre alone
    /// ([`ClassTile::decide_by_centres`]): a tile of one class (or none)
    /// and nodata, the nodata centres kept nodata, the class's weight and
    /// the kernel's centre tap (`params`) positive, no vote weights. Each
    /// window then holds that class alone, so it is the one class with a
    /// positive score wherever the centre holds it.
    pub fn decided_by_centres(&self, params: &SmoothParams) -> bool {
        let q = params.kernel.quantised();
        self.n_classes <= 1
            && !params.fill_nodata
            && params.confidence.is_none()
            && q[q.len() / 2] > 0
            && params.class_weights[..self.n_classes]
                .iter()
                .all(|&w| w > 0)
    }

    /// The outputs of a tile [`ClassTile::decided_by_centres`]: its class
    /// (local index 0) at every centre that is not nodata, none
    /// ([`NO_CLASS`]) at one that is, with no scoring: the sea
    /// and the nodata margins of a global map are most of its tiles.
    pub fn decide_by_centres(&self, out: &mut [u16]) {
        let (ow, nodata) = (self.output_width(), self.nodata());
        for (y, row) in out.chunks_exact_mut(ow).enumerate() {
            for (o, &centre) in row.iter_mut().zip(&self.centre_row(y)[..ow]) {
                *o = if centre == nodata { NO_CLASS } else { 0 };
            }
        }
    }
}

/// A tile as its source window of class codes, for
/// [`ClassSmoother::submit_codes`].
#[derive(Clone, Copy)]
pub struct CodeTile<'a> {
    /// Where the window lies and how it is padded.
    pub tile: &'a tiles::Tile,
    /// The halo of the padded tile ([`ClassTile::halo`]).
    pub halo: usize,
    /// The source window's codes from its first pixel on: row `r` is
    /// `codes[r * stride..][..tile.source.width]`.
    pub codes: &'a [u16],
    /// Distance between rows of `codes`: the source window's width when it
    /// was copied out, the raster's when it is read in place.
    pub stride: usize,
    /// Code → global class index.
    pub lut: &'a CodeLut,
}

impl CodeTile<'_> {
    /// Stages the tile into `staged` as global class indices, padded
    /// ([`classes::stage_globals`]), for a device to compact: returns the
    /// tile's compaction and the compacted tile's shape (its classes lie
    /// on the device). `None` for a tile of 255 classes (only a job of
    /// every Byte code but nodata has that many): the devices' byte
    /// kernels take fewer, so the caller compacts it on the host
    /// ([`submit_compacted`]).
    pub fn stage(&self, staged: &mut [u8]) -> Option<(TileCompaction, ClassTile<'static>)> {
        let t = self.tile;
        let present = classes::stage_globals(self.codes, self.stride, self.lut, t, staged);
        let local = TileCompaction::from_presence(&present);
        if local.len() >= classes::NO_GLOBAL8 as usize {
            return None;
        }
        let shape = ClassTile {
            width: t.padded_width,
            height: t.padded_height,
            halo: self.halo,
            n_classes: local.len(),
            classes: &[],
        };
        Some((local, shape))
    }

    /// The source window's codes without gaps between rows (borrowed when
    /// they have none).
    pub fn contiguous(&self) -> std::borrow::Cow<'_, [u16]> {
        let w = self.tile.source.width;
        if self.stride == w || self.tile.source.height <= 1 {
            let len = self.tile.source.area() as usize;
            return std::borrow::Cow::Borrowed(&self.codes[..len]);
        }
        let mut rows = Vec::with_capacity(self.tile.source.area() as usize);
        for row in self.codes.chunks(self.stride).take(self.tile.source.height) {
            rows.extend_from_slice(&row[..w]);
        }
        std::borrow::Cow::Owned(rows)
    }
}

/// Everything a method needs besides the tile.
#[derive(Clone, Copy, Debug)]
pub struct SmoothParams<'a> {
    pub kernel: &'a Kernel,
    /// Quantised class weight per local class index.
    pub class_weights: &'a [u32],
    /// Smooth nodata centre pixels too instead of keeping them nodata.
    pub fill_nodata: bool,
    /// Who wins a tie (docs/semantics.md#the-winner-and-ties).
    pub ties: policy::Ties,
    /// Per tile pixel (laid out as `ClassTile::classes`): the quantised
    /// weight of its vote (`--confidence`); `None`: every vote weighs 1.
    /// Only methods whose [`ClassSmoother::weighs_votes`] is true take it.
    pub confidence: Option<&'a [u16]>,
}

impl SmoothParams<'_> {
    /// The largest class weight (at least 1), by which float methods
    /// normalise the weights.
    pub fn max_class_weight(&self) -> f64 {
        self.class_weights.iter().copied().max().unwrap_or(1).max(1) as f64
    }
}

/// A class-smoothing method on one device.
pub trait ClassSmoother: Send + Sync {
    /// Short name for reports and `--explain`.
    fn name(&self) -> String;

    /// Smooths `tile` into `out` (`tile.output_len()` values): a local class
    /// index per pixel, or [`NO_CLASS`] for nodata.
    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()>;

    /// Whether the result is byte-identical to the exact baseline.
    fn is_exact(&self) -> bool;

    /// Whether the method weighs each vote by [`SmoothParams::confidence`]
    /// (`--confidence`); the others are refused rather than run without.
    fn weighs_votes(&self) -> bool {
        false
    }

    /// A line on what the method did over the run so far (e.g. the share of
    /// pixels the certified mode recomputed), for the run's summary.
    fn summary(&self) -> Option<String> {
        None
    }

    /// For a certified (`--exact`) fast method: the pixels it recomputed
    /// exactly and the pixels it smoothed, so far. `auto` costs a certified
    /// candidate with this measured share instead of a guess.
    fn recompute_counts(&self) -> Option<(u64, u64)> {
        None
    }

    /// Where the method scores only the classes that may be among an
    /// output's best two (dct5's contenders on the host): the mean share
    /// of `tile`'s classes it would keep, which `auto` costs its passes
    /// by. `None` where it scores every class.
    fn kept_share(&self, _tile: &ClassTile, _params: &SmoothParams) -> Option<f64> {
        None
    }

    /// Starts smoothing `tile` and returns a handle to wait on. Device methods
    /// enqueue upload, kernel and download and return at once, so the engine
    /// can submit the next tile (its upload overlaps this tile's kernel)
    /// before waiting for this one. The default smooths at once.
    fn submit(&self, tile: &ClassTile, params: &SmoothParams) -> Result<Box<dyn PendingTile + '_>> {
        let mut out = vec![0u16; tile.output_len()];
        self.smooth(tile, params, &mut out)?;
        Ok(Box::new(Finished(out)))
    }

    /// Whether [`ClassSmoother::submit_codes`] is the method's own: it
    /// stages a tile's codes and compacts them on its device, so the engine
    /// hands it source windows rather than compacted tiles.
    fn takes_codes(&self) -> bool {
        false
    }

    /// [`ClassSmoother::submit`] for a tile given as its source window of
    /// codes; `params.class_weights` are per global class. The engine calls
    /// it only for jobs of at most 255 classes (every global index fits
    /// a byte below [`crate::classes::NO_GLOBAL8`]). Returns the
    /// tile's compaction with the handle. The default compacts on the host
    /// and submits.
    fn submit_codes(
        &self,
        tile: &CodeTile,
        params: &SmoothParams,
    ) -> Result<(TileCompaction, Box<dyn PendingTile + '_>)> {
        submit_compacted(self, tile, params)
    }

    /// The kind of OpenCL device the method computes on (`None`: the host).
    /// The engine sizes default tiles by it.
    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        None
    }

    /// How many GPUs the method computes on (a batch run sizes its tasks
    /// in flight by it).
    fn gpus(&self) -> usize {
        usize::from(self.runs_on() == Some(crate::device::DeviceKind::Gpu))
    }

    /// Whether `smooth` computes on the host's rayon pool alone and may run
    /// for several tiles at once: the engine then starts each tile as a job
    /// on the pool, so that a tile's last bands share the threads with the
    /// next tile's first. False for device methods (they overlap through
    /// [`ClassSmoother::submit`]).
    fn host_parallel(&self) -> bool {
        false
    }

    /// Device time spent since the last call (`None` for host methods).
    fn take_device_times(&self) -> Option<crate::device::DeviceTimes> {
        None
    }

    /// Tiles the engine keeps submitted beyond the one it waits for: with
    /// the default 2, a device uploads tile i+1 and downloads tile i−1
    /// while tile i runs. Several devices need more to stay busy.
    fn depth(&self) -> usize {
        DEFAULT_DEPTH
    }

    /// The tile side the method needs by default, where the usual one
    /// would not do (fft: tiles that grow with the kernel, so that the halo
    /// stays a fraction of each tile); a tuned side still wins.
    fn preferred_tile(&self) -> Option<usize> {
        None
    }

    /// The settings from the tune database the method uses (`--explain`
    /// names them; a tuned tile side becomes the default `--tile`).
    fn tuned(&self) -> Vec<crate::device::tune::Setting> {
        Vec::new()
    }

    /// What each device of a run on several did since the last call
    /// (empty for a method on one device).
    fn take_shares(&self) -> Vec<multi::DeviceShare> {
        Vec::new()
    }

    /// Waits for anything the method started beside the run and returns
    /// its error: the engine calls it once every tile is done, before the
    /// output is finished, so that devices that failed to start while
    /// the host computed the tiles ([`bridged::Bridged`]) fail the run.
    fn settle(&self) -> Result<()> {
        Ok(())
    }
}

/// [`ClassSmoother::submit_codes`] by way of the host: compacts the tile
/// and submits it.
pub fn submit_compacted<'m, M: ClassSmoother + ?Sized>(
    method: &'m M,
    tile: &CodeTile,
    params: &SmoothParams,
) -> Result<(TileCompaction, Box<dyn PendingTile + 'm>)> {
    let mut padded = Vec::new();
    let codes = tile.contiguous();
    let local = TileCompaction::pad_and_compact(&codes, tile.lut, tile.tile, &mut padded);
    let weights = local.weights(params.class_weights);
    let pending = method.submit(
        &ClassTile {
            width: tile.tile.padded_width,
            height: tile.tile.padded_height,
            halo: tile.halo,
            n_classes: local.len(),
            classes: &padded,
        },
        &SmoothParams {
            class_weights: &weights,
            ..*params
        },
    )?;
    Ok((local, pending))
}

/// [`ClassSmoother::depth`]'s default.
pub const DEFAULT_DEPTH: usize = 2;

/// A tile handed to [`ClassSmoother::submit`] that may still be running.
pub trait PendingTile: Send {
    /// Waits for the tile and writes its `tile.output_len()` outputs into `out`.
    fn wait(self: Box<Self>, out: &mut [u16]) -> Result<()>;

    /// Waits for the tile and returns its `len` outputs: where they already
    /// lie in a vector of their own, that vector, not a copy.
    fn into_output(self: Box<Self>, len: usize) -> Result<Vec<u16>> {
        let mut out = vec![0u16; len];
        self.wait(&mut out)?;
        Ok(out)
    }

    /// Waits for the tile and writes its outputs into `out` as codes,
    /// mapped by `map`: device methods map straight from their staging, so
    /// the outputs are copied once, into their place in the output.
    fn wait_codes(self: Box<Self>, map: &CodeMap, mut out: RowsMut) -> Result<()> {
        let local = self.into_output(out.len())?;
        out.fill_mapped(&local, |v| map.code(v));
        Ok(())
    }

    /// Whether the result is known to be there already (waiting costs
    /// nothing); false when it may still be computing.
    fn ready(&self) -> bool {
        false
    }
}

/// A tile whose output is already computed.
pub struct Finished(pub Vec<u16>);

impl PendingTile for Finished {
    fn wait(self: Box<Self>, out: &mut [u16]) -> Result<()> {
        out.copy_from_slice(&self.0);
        Ok(())
    }

    fn into_output(self: Box<Self>, len: usize) -> Result<Vec<u16>> {
        debug_assert_eq!(self.0.len(), len);
        Ok(self.0)
    }

    fn ready(&self) -> bool {
        true
    }
}

/// A tile computed on another thread, which sends its result (or its
/// error) once: tiles on the rayon pool, tiles on one of several devices.
pub struct Promised(pub crossbeam_channel::Receiver<Result<Vec<u16>>>);

impl PendingTile for Promised {
    fn wait(self: Box<Self>, out: &mut [u16]) -> Result<()> {
        out.copy_from_slice(&self.into_output(out.len())?);
        Ok(())
    }

    fn into_output(self: Box<Self>, len: usize) -> Result<Vec<u16>> {
        let smoothed = self.0.recv().map_err(|_| {
            crate::error::Error::internal("a tile's job ended without a result")
                .hint("an earlier error or a crash of a worker thread stopped it")
        })??;
        debug_assert_eq!(smoothed.len(), len);
        Ok(smoothed)
    }
}

/// The winning class from exact integer scores `raw[c]·weights[c]`
/// (docs/semantics.md#the-winner-and-ties): the highest score; a tie by
/// `ties` (the default: the centre class if it is among the best, else the
/// smallest index); no positive score gives [`NO_CLASS`].
/// `centre` is the centre pixel's local index (`>= raw.len()` for nodata).
#[inline]
pub fn pick_winner(raw: &[u32], weights: &[u32], centre: u16, ties: policy::Ties) -> u16 {
    pick_by_score(
        raw.len(),
        |c| raw[c] as u64 * weights[c] as u64,
        centre,
        ties,
    )
}

/// [`pick_winner`] on wide sums (confidence-weighted votes: up to 2⁴⁷),
/// whose products with the class weights need 128 bits.
#[inline]
pub fn pick_winner_wide(raw: &[u64], weights: &[u32], centre: u16, ties: policy::Ties) -> u16 {
    pick_by_score(
        raw.len(),
        |c| raw[c] as u128 * weights[c] as u128,
        centre,
        ties,
    )
}

/// The winner rule over the exact scores `score(0..n)`.
#[inline(always)]
fn pick_by_score<S: Copy + Ord + Default>(
    n: usize,
    score: impl Fn(usize) -> S,
    centre: u16,
    ties: policy::Ties,
) -> u16 {
    let zero = S::default();
    if ties != policy::Ties::Centre {
        let (mut first, mut last, mut best_score, mut count) = (NO_CLASS, NO_CLASS, zero, 0);
        for c in 0..n {
            let s = score(c);
            if s > best_score {
                (first, last, best_score, count) = (c as u16, c as u16, s, 1);
            } else if s == best_score && s > zero {
                (last, count) = (c as u16, count + 1);
            }
        }
        return match ties {
            policy::Ties::Largest => last,
            policy::Ties::Undecided(_) if count > 1 => policy::UNDECIDED,
            _ => first,
        };
    }
    let mut best = NO_CLASS;
    let mut best_score = zero;
    for c in 0..n {
        let s = score(c);
        if s > best_score {
            best_score = s;
            best = c as u16;
        }
    }
    if best != NO_CLASS && (centre as usize) < n && score(centre as usize) == best_score {
        return centre;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A method folder whose `mod.rs` lacks the `FAMILIES` line would be
    /// compiled and listed nowhere, without an error: so every folder of
    /// src/method/ must be a method folder or a module declared above by
    /// hand (a helper such as `dct5/`), and every descriptor outside the
    /// tests must be in the registry.
    #[test]
    fn the_registry_lists_exactly_the_method_folders() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/method");
        let this = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
        let mut descriptors = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                let name = path.file_name().unwrap().to_str().unwrap();
                let by_hand = format!("mod {name};");
                let declared = this
                    .lines()
                    .any(|line| line.trim_start_matches("pub ") == by_hand);
                assert!(
                    METHOD_FOLDERS.contains(&name) || declared,
                    "src/method/{name}/ is compiled nowhere: a method folder's mod.rs \
                     needs a line `pub const FAMILIES: &[&dyn Family] = ...`"
                );
            }
            descriptors += descriptors_in(&path);
        }
        assert_eq!(
            descriptors,
            registry().len(),
            "a descriptor (`impl Family for`) is missing from its folder's FAMILIES"
        );
        let mut names: Vec<&str> = registry().iter().map(|f| f.name()).collect();
        assert!(registry()[0].is_exact(), "the first is the exact baseline");
        names.sort();
        names.dedup();
        assert_eq!(names.len(), registry().len(), "method names are unique");
    }

    /// The `impl Family for` blocks in the file `path`, or in the files of
    /// the folder `path`, above their `#[cfg(test)]`.
    fn descriptors_in(path: &Path) -> usize {
        if path.is_dir() {
            return std::fs::read_dir(path)
                .unwrap()
                .map(|entry| descriptors_in(&entry.unwrap().path()))
                .sum();
        }
        if path.extension().is_none_or(|ext| ext != "rs") {
            return 0;
        }
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .take_while(|line| line.trim() != "#[cfg(test)]")
            .filter(|line| line.trim_start().starts_with("impl Family for"))
            .count()
    }

    #[test]
    fn winner_rules() {
        use policy::Ties::*;
        let w = [1, 1, 1];
        let centre = |raw: &[u32], weights: &[u32], c| pick_winner(raw, weights, c, Centre);
        assert_eq!(centre(&[1, 5, 2], &w, 0), 1);
        // Tie between 1 and 2: centre 2 wins, otherwise the smallest index.
        assert_eq!(centre(&[0, 4, 4], &w, 2), 2);
        assert_eq!(centre(&[0, 4, 4], &w, 0), 1);
        assert_eq!(centre(&[0, 4, 4], &w, 3), 1);
        // No positive score: no class.
        assert_eq!(centre(&[0, 0, 0], &w, 1), NO_CLASS);
        // Weights decide.
        assert_eq!(centre(&[3, 2, 0], &[1, 2, 1], 0), 1);
        // The other rules ignore the centre.
        assert_eq!(pick_winner(&[0, 4, 4], &w, 2, Smallest), 1);
        assert_eq!(pick_winner(&[4, 4, 1], &w, 0, Largest), 1);
        assert_eq!(
            pick_winner(&[0, 4, 4], &w, 1, Undecided(9)),
            policy::UNDECIDED
        );
        assert_eq!(pick_winner(&[0, 4, 3], &w, 2, Undecided(9)), 1);
        assert_eq!(pick_winner(&[0, 0, 0], &w, 1, Largest), NO_CLASS);
        // A class without a vote (weight 0) never wins.
        assert_eq!(
            pick_winner(&[5, 0, 0], &[0, 1, 1], 0, Undecided(9)),
            NO_CLASS
        );
    }
}
