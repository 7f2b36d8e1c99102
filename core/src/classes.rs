//! Class codes: which codes a raster holds, their weights ("priorities"), and
//! the compaction of codes to dense indices, globally and per tile.
//!
//! Methods never see class codes. The engine maps each tile's codes to local
//! indices `0..c` in ascending code order (so "smallest index" is "smallest
//! code" for the tie rule) and marks nodata and out-of-raster pixels with the
//! value `c` itself ([`ClassTile::nodata`](crate::method::ClassTile::nodata)).
//! A tile therefore pays only for the classes present in it and its halo.

use crate::bail;
use crate::error::{Error, Result, Setting};
use rayon::prelude::*;

/// Most distinct class codes a raster may hold.
pub const MAX_CLASSES: usize = 256;

/// Marks "no class" in global index buffers and in method outputs.
pub const NO_CLASS: u16 = u16::MAX;

/// A table with one entry per class code ([`ClassTable::index_lut`]).
pub type CodeLut = [u16; 1 << 16];

/// Pixel counts per code over the whole `u16` range.
#[derive(Clone, Debug)]
pub struct CodeHistogram {
    counts: Vec<u64>,
}

impl Default for CodeHistogram {
    fn default() -> Self {
        CodeHistogram {
            counts: vec![0; 1 << 16],
        }
    }
}

impl CodeHistogram {
    pub fn add(&mut self, codes: &[u16]) {
        for &c in codes {
            self.counts[c as usize] += 1;
        }
    }

    /// [`CodeHistogram::add`] for Byte codes, counted by [`byte_counts`].
    pub fn add_bytes(&mut self, codes: &[u8]) {
        // In parallel: a whole `smooth` scans its input before the engine
        // starts, and one thread's tally was a third of that scan on a
        // 105 Mpx map (issue 39's set A).
        let counts = byte_counts(codes);
        for (n, k) in self.counts.iter_mut().zip(counts) {
            *n += k;
        }
    }

    pub fn merge(&mut self, other: &CodeHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    pub fn count(&self, code: u16) -> u64 {
        self.counts[code as usize]
    }
}

/// The distinct class codes of a raster (nodata excluded), ascending, with pixel counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassTable {
    codes: Vec<u16>,
    counts: Vec<u64>,
    nodata: Option<u16>,
    nodata_count: u64,
}

impl ClassTable {
    /// Builds the table from a histogram; more than [`MAX_CLASSES`] codes is an error.
    pub fn from_histogram(hist: &CodeHistogram, nodata: Option<u16>) -> Result<Self> {
        let mut codes = Vec::new();
        let mut counts = Vec::new();
        for (code, &n) in hist.counts.iter().enumerate() {
            if n > 0 && Some(code as u16) != nodata {
                codes.push(code as u16);
                counts.push(n);
            }
        }
        if codes.len() > MAX_CLASSES {
            bail!(
                input,
                format!(
                    "the raster holds {} distinct class codes, more than the {MAX_CLASSES} supported",
                    codes.len()
                ),
                hint = "class smoothing is for classified rasters; use `mapfilter filter` for continuous data"
            );
        }
        Ok(ClassTable {
            codes,
            counts,
            nodata,
            nodata_count: nodata.map_or(0, |c| hist.count(c)),
        })
    }

    /// Builds the table from an explicit list of codes (counts unknown, zero).
    pub fn from_codes(codes: &[u16], nodata: Option<u16>) -> Result<Self> {
        let mut hist = CodeHistogram::default();
        hist.add(codes);
        Self::from_histogram(&hist, nodata)
    }

    /// Every code from 0 to `max_code` except `nodata`, pixel counts unknown
    /// (zero): the table of a Byte raster with a nodata value, built without
    /// reading it. Results equal those of the scanned table, since the
    /// engine compacts each tile to the classes it holds, in code order.
    pub fn every_code(max_code: u16, nodata: Option<u16>) -> Result<Self> {
        let codes: Vec<u16> = (0..=max_code).filter(|&c| Some(c) != nodata).collect();
        if codes.len() > MAX_CLASSES {
            bail!(
                input,
                format!(
                    "{} possible codes are more than the {MAX_CLASSES} classes supported",
                    codes.len()
                )
            );
        }
        Ok(ClassTable {
            counts: vec![0; codes.len()],
            codes,
            nodata,
            nodata_count: 0,
        })
    }

    /// The table with `code` among its classes (pixel count 0 if new): a
    /// code the smoothing writes that the input may lack (`--ties
    /// undecided:CODE`). It must fit the raster's type (`max_code`) and not
    /// be nodata.
    pub fn with_code(mut self, code: u16, max_code: u16) -> Result<Self> {
        if code > max_code || Some(code) == self.nodata {
            bail!(
                usage,
                format!("code {code} cannot be a class of this raster"),
                hint = format!("choose a code from 0 to {max_code} that is not nodata")
            );
        }
        if let Err(at) = self.codes.binary_search(&code) {
            if self.codes.len() >= MAX_CLASSES {
                bail!(
                    usage,
                    format!("code {code} would make more than {MAX_CLASSES} classes"),
                    hint = "choose a code that is a class already"
                );
            }
            self.codes.insert(at, code);
            self.counts.insert(at, 0);
        }
        Ok(self)
    }

    pub fn codes(&self) -> &[u16] {
        &self.codes
    }

    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    pub fn nodata(&self) -> Option<u16> {
        self.nodata
    }

    pub fn nodata_count(&self) -> u64 {
        self.nodata_count
    }

    /// The code written for "no class" in the output: the input's nodata, or
    /// else the largest code up to `max_code` that is not a class.
    pub fn output_nodata(&self, max_code: u16) -> Option<u16> {
        self.nodata.or_else(|| {
            (0..=max_code)
                .rev()
                .find(|c| self.codes.binary_search(c).is_err())
        })
    }

    /// Lookup table code → global index, [`NO_CLASS`] for nodata and
    /// unknown codes; one entry per possible code, so that indexing it by a
    /// code needs no bounds check.
    pub fn index_lut(&self) -> Box<CodeLut> {
        let mut lut: Box<CodeLut> = vec![NO_CLASS; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("one entry per u16 code");
        for (i, &c) in self.codes.iter().enumerate() {
            lut[c as usize] = i as u16;
        }
        lut
    }
}

/// User-given class weights ("priorities"), by code; unnamed codes weigh 1.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassWeights {
    by_code: Vec<(u16, f64)>,
}

impl std::str::FromStr for ClassWeights {
    type Err = Error;

    /// Parses `CODE:WEIGHT[,CODE:WEIGHT...]`, e.g. `3:2,7:0.5`.
    fn from_str(text: &str) -> Result<Self> {
        let hint = format!(
            "write {}, e.g. 3:2,7:0.5",
            Setting::ClassWeights.is("CODE:WEIGHT[,CODE:WEIGHT...]")
        );
        let mut by_code = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((code, weight)) = item.split_once(':') else {
                bail!(
                    usage,
                    format!("class weight '{item}' has no ':'"),
                    hint = &hint
                );
            };
            let code: u16 = code.trim().parse().map_err(|_| {
                Error::usage(format!(
                    "class weight '{item}': '{code}' is not a class code"
                ))
                .hint(&hint)
            })?;
            let weight: f64 = weight.trim().parse().map_err(|_| {
                Error::usage(format!("class weight '{item}': '{weight}' is not a number"))
                    .hint(&hint)
            })?;
            if !(weight.is_finite() && weight > 0.0) {
                bail!(
                    usage,
                    format!("class weight of code {code} must be > 0, got {weight}"),
                    hint = &hint
                );
            }
            by_code.retain(|(c, _)| *c != code);
            by_code.push((code, weight));
        }
        Ok(ClassWeights { by_code })
    }
}

impl std::fmt::Display for ClassWeights {
    /// As `--class-weights` takes them (`3:2,7:0.5`; nothing when none):
    /// f64's `Display` is exact, so the text parses back to the same weights.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (code, weight)) in self.by_code.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            write!(f, "{comma}{code}:{weight}")?;
        }
        Ok(())
    }
}

impl ClassWeights {
    /// Whether every weight given is an integer (quantised as it is, so the
    /// classes present do not matter).
    pub fn is_integral(&self) -> bool {
        self.by_code
            .iter()
            .all(|(_, w)| w.fract() == 0.0 && *w <= u32::MAX as f64)
    }

    /// Whether no weight was given (every class weighs 1).
    pub fn is_empty(&self) -> bool {
        self.by_code.is_empty()
    }

    pub fn weight(&self, code: u16) -> f64 {
        self.by_code
            .iter()
            .find(|(c, _)| *c == code)
            .map_or(1.0, |(_, w)| *w)
    }

    /// Integer weights per global index of `table`, proportional to the real
    /// ones: kept as they are when all are integers, else scaled so the
    /// largest is 2²⁴ and rounded (never to zero).
    pub fn quantise(&self, table: &ClassTable) -> Vec<u32> {
        let real: Vec<f64> = table.codes().iter().map(|&c| self.weight(c)).collect();
        let max = real.iter().cloned().fold(1.0, f64::max);
        if real.iter().all(|w| w.fract() == 0.0) && max <= u32::MAX as f64 {
            return real.iter().map(|&w| w as u32).collect();
        }
        let scale = (1u64 << 24) as f64 / max;
        real.iter()
            .map(|&w| ((w * scale).round() as u32).max(1))
            .collect()
    }
}

/// Maps the global class indices of one halo-padded tile to local indices.
#[derive(Clone, Debug, Default)]
pub struct TileCompaction {
    /// Local index → global index, ascending.
    pub globals: Vec<u16>,
}

impl TileCompaction {
    /// Builds one tile's halo-padded buffer of local class indices from its
    /// `source` window of raw codes in one pass: `lut` maps a code to its
    /// global index (or [`NO_CLASS`]), the classes present get local indices
    /// `0..c` in ascending global order, and `c` stands for no class (nodata,
    /// unknown codes and everything outside the raster).
    pub fn pad_and_compact(
        source: &[u16],
        lut: &CodeLut,
        tile: &tiles::Tile,
        padded: &mut Vec<u16>,
    ) -> Self {
        assert_eq!(
            source.len() as u64,
            tile.source.area(),
            "source window size"
        );
        // A code's global index, NO_CLASS as MAX_CLASSES (a slot of its own);
        // codes below 256 (all of a Byte raster's) from a small table that
        // stays in L1, not from `lut`'s 128 KB.
        let byte_global: [u16; 256] = std::array::from_fn(|code| lut[code].min(MAX_CLASSES as u16));
        let global = |code: u16| match byte_global.get(code as usize) {
            Some(&g) => g as usize,
            None => (lut[code as usize] as usize).min(MAX_CLASSES),
        };
        // Codes below 256 (every code of a Byte raster) are first marked as
        // they are, any wider code in the last slot, without a lookup per
        // pixel; only a tile that holds a wider code is marked again
        // through `global`.
        let codes = marked(source, |code| usize::from(code.min(MAX_CLASSES as u16)));
        let wide = codes[MAX_CLASSES];
        let present = match wide {
            false => {
                let mut present = [false; MAX_CLASSES + 1];
                for (code, _) in codes[..256].iter().enumerate().filter(|&(_, &seen)| seen) {
                    present[byte_global[code] as usize] = true;
                }
                present
            }
            true => marked(source, global),
        };
        let globals: Vec<u16> = (0..MAX_CLASSES as u16)
            .filter(|&g| present[g as usize])
            .collect();
        let none = globals.len() as u16;
        // Global index (as `global` gives it) → local index.
        let mut local = [none; MAX_CLASSES + 1];
        for (l, &g) in globals.iter().enumerate() {
            local[g as usize] = l as u16;
        }
        // Code → local index, for codes below 256 in one lookup.
        let byte_local: [u16; 256] = std::array::from_fn(|code| local[byte_global[code] as usize]);
        let local_of = |code: u16| match byte_local.get(code as usize) {
            Some(&l) => l,
            None => local[global(code)],
        };
        padded.clear();
        padded.resize(tile.padded_len(), none);
        let (w, left, top) = (tile.source.width, tile.pad_left, tile.pad_top);
        if w > 0 {
            padded
                .par_chunks_mut(tile.padded_width)
                .skip(top)
                .zip(source.par_chunks(w))
                .with_min_len(crate::grain::min_items(w))
                .for_each(|(row, src)| {
                    let row = row[left..left + w].iter_mut().zip(src);
                    match wide {
                        // Every code below 256: one lookup, no test.
                        false => {
                            row.for_each(|(d, &code)| *d = byte_local[usize::from(code & 0xFF)])
                        }
                        true => row.for_each(|(d, &code)| *d = local_of(code)),
                    }
                });
        }
        TileCompaction { globals }
    }

    pub fn len(&self) -> usize {
        self.globals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.globals.is_empty()
    }

    /// The weight of each local class, from the weights per global class.
    pub fn weights(&self, global: &[u32]) -> Vec<u32> {
        self.globals.iter().map(|&g| global[g as usize]).collect()
    }

    /// The compaction of a tile staged by [`stage_globals`]: the classes
    /// present get local indices in ascending global order, as
    /// [`TileCompaction::pad_and_compact`] gives them.
    pub fn from_presence(present: &Presence) -> Self {
        let globals = (0..NO_GLOBAL8 as u16)
            .filter(|&g| present[g as usize])
            .collect();
        TileCompaction { globals }
    }

    /// The table a device maps a staged tile's global indices through to
    /// this compaction's local indices ([`map_bytes`]): the classes absent
    /// and [`NO_GLOBAL8`] become the local nodata value (the class count).
    pub fn device_table(&self) -> [u8; 256] {
        let none = self.globals.len().min(NO_GLOBAL8 as usize) as u8;
        let mut table = [none; 256];
        for (l, &g) in self.globals.iter().enumerate() {
            table[g as usize] = l as u8;
        }
        table[NO_GLOBAL8 as usize] = none;
        table
    }
}

/// Stands for "no class" among the global indices of a staged tile
/// ([`stage_globals`]), and for the nodata value in its device table.
pub const NO_GLOBAL8: u8 = u8::MAX;

/// Which global classes a staged tile holds ([`stage_globals`]).
pub type Presence = [bool; 256];

/// Writes one tile's halo-padded buffer of global class indices as bytes
/// (`lut` maps a code to its global index; [`NO_GLOBAL8`] for nodata,
/// unknown codes and everything outside the raster) and returns which
/// classes it holds: the pad, the narrowing and the class scan in one pass
/// over the codes, for methods that map global to local indices on their
/// device ([`TileCompaction::device_table`]). Every global index must be
/// below [`NO_GLOBAL8`] (fewer than 255 classes).
pub fn stage_globals(
    source: &[u16],
    stride: usize,
    lut: &CodeLut,
    tile: &tiles::Tile,
    staged: &mut [u8],
) -> Presence {
    let (w, left, top) = (tile.source.width, tile.pad_left, tile.pad_top);
    let rows = tile.source.height;
    assert!(
        rows == 0 || (stride >= w && source.len() >= (rows - 1) * stride + w),
        "source window size"
    );
    assert_eq!(staged.len(), tile.padded_len(), "staged tile size");
    let (head, rest) = staged.split_at_mut(top * tile.padded_width);
    let (body, tail) = rest.split_at_mut(rows * tile.padded_width);
    head.fill(NO_GLOBAL8);
    tail.fill(NO_GLOBAL8);
    if w == 0 {
        body.fill(NO_GLOBAL8);
        return [false; 256];
    }
    // Rows in bands of a few thousand pixels, so that a band's presence
    // flags stay in registers' reach and the pool gets enough of them.
    let band = (1usize << 14).div_ceil(tile.padded_width).max(1);
    body.par_chunks_mut(band * tile.padded_width)
        .zip(source.par_chunks(band * stride))
        .map(|(dst, src)| {
            let mut seen = [false; 256];
            for (row, src) in dst.chunks_mut(tile.padded_width).zip(src.chunks(stride)) {
                let (pad, rest) = row.split_at_mut(left);
                pad.fill(NO_GLOBAL8);
                let (used, pad) = rest.split_at_mut(w);
                pad.fill(NO_GLOBAL8);
                for (d, &code) in used.iter_mut().zip(&src[..w]) {
                    let g = lut[code as usize].min(NO_GLOBAL8 as u16) as u8;
                    seen[g as usize] = true;
                    *d = g;
                }
            }
            seen
        })
        .reduce(
            || [false; 256],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                a
            },
        )
}

/// Maps every byte of `codes` through `table` in place: the plain twin of
/// the device kernel `map_codes` (kernels/codes.cl).
pub fn map_bytes(codes: &mut [u8], table: &[u8; 256]) {
    codes
        .par_chunks_mut(1 << 16)
        .for_each(|chunk| chunk.iter_mut().for_each(|c| *c = table[*c as usize]));
}

/// Local class indices (or [`NO_CLASS`], or [`UNDECIDED`](crate::method::policy::UNDECIDED))
/// to the codes written: class codes, the output nodata code, the
/// undecided code.
#[derive(Clone, Debug)]
pub struct CodeMap {
    /// Local index → class code.
    pub codes: Vec<u16>,
    /// Written for [`NO_CLASS`].
    pub fill: u16,
    /// Written for the undecided value.
    pub tie: u16,
}

impl CodeMap {
    /// The code written for the method's output value `v`.
    #[inline]
    pub fn code(&self, v: u16) -> u16 {
        match v {
            NO_CLASS => self.fill,
            v if v == NO_CLASS - 1 => self.tie,
            l => self.codes[l as usize],
        }
    }

    /// [`CodeMap::code`] for outputs that came down as bytes (a local
    /// index, or [`u8::MAX`] for no class), one entry per byte.
    pub fn byte_table(&self) -> [u16; 256] {
        let mut table = [self.fill; 256];
        table[..self.codes.len().min(255)]
            .copy_from_slice(&self.codes[..self.codes.len().min(255)]);
        table[255] = self.fill;
        table
    }

    /// Maps `out` in place, a piece of [`MIN_PIXELS`](crate::grain::MIN_PIXELS)
    /// at a time: a closure per pixel (`par_iter_mut().for_each`) was not
    /// inlined, and the call per pixel took 9 % of a whole `smooth` of a
    /// 105 Mpx map of long runs (issue 39's set A, `perf`).
    ///
    /// One table, without branches: the local indices first, then the
    /// codes for [`NO_CLASS`] and the undecided value.
    pub fn apply(&self, out: &mut [u16]) {
        let mut table = self.codes.clone();
        table.extend([self.fill, self.tie]);
        out.par_chunks_mut(crate::grain::MIN_PIXELS)
            .for_each(|piece| map_codes(&table, piece));
    }
}

/// Maps `piece` through `table` (the local indices' codes, then those of
/// [`NO_CLASS`] and the undecided value, as [`CodeMap::apply`] builds it).
/// A value that is none of these panics on the table's bounds.
fn map_codes(table: &[u16], piece: &mut [u16]) {
    let n = table.len() - 2;
    #[cfg(target_arch = "x86_64")]
    let piece = match table.len() <= 64 && crate::cpu::avx512() {
        // SAFETY: the CPU has AVX-512 F and BW (`cpu::avx512`).
        true => {
            let done = unsafe { map_codes_avx512(table, piece) };
            &mut piece[done..]
        }
        false => piece,
    };
    for v in piece {
        let i = match (*v as usize) < n {
            true => *v as usize,
            false => n + (NO_CLASS - *v) as usize,
        };
        *v = table[i];
    }
}

/// [`map_codes`] 32 values at a time through a table of up to 64 codes
/// held in two registers (`vpermi2w`): on a 105 Mpx map of long runs the
/// scalar lookups were 6 % of a whole host `--exact` run (decision 0039).
/// Returns how many leading values it mapped: all whole vectors up to the
/// first that holds a value outside the table, which the scalar loop then
/// reaches and panics on.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn map_codes_avx512(table: &[u16], piece: &mut [u16]) -> usize {
    use std::arch::x86_64::*;
    let mut padded = [0u16; 64];
    padded[..table.len()].copy_from_slice(table);
    let n = (table.len() - 2) as u16;
    // SAFETY: `padded` holds 64 values; `piece` is read and written 32
    // values at a time within its length.
    unsafe {
        let low = _mm512_loadu_si512(padded.as_ptr().cast());
        let high = _mm512_loadu_si512(padded[32..].as_ptr().cast());
        let classes = _mm512_set1_epi16(n as i16);
        let entries = _mm512_set1_epi16(table.len() as i16);
        // n - 1 - v (mod 2^16): NO_CLASS gives n, the undecided value
        // n + 1, any other value at or above n something at or above n + 2.
        let beyond = _mm512_set1_epi16(n.wrapping_sub(1) as i16);
        let mut done = 0;
        while done + 32 <= piece.len() {
            let at = piece.as_mut_ptr().add(done);
            let v = _mm512_loadu_si512(at.cast());
            let index = _mm512_mask_blend_epi16(
                _mm512_cmplt_epu16_mask(v, classes),
                _mm512_sub_epi16(beyond, v),
                v,
            );
            if _mm512_cmpge_epu16_mask(index, entries) != 0 {
                break;
            }
            _mm512_storeu_si512(at.cast(), _mm512_permutex2var_epi16(low, index, high));
            done += 32;
        }
        done
    }
}

/// How often each byte value occurs, counted in parallel by [`tally_bytes`].
pub fn byte_counts(data: &[u8]) -> [u64; 256] {
    data.par_chunks(1 << 16).map(tally_bytes).reduce(
        || [0u64; 256],
        |mut a, b| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            a
        },
    )
}

/// The slots `slot(code)` (below [`MAX_CLASSES`] + 1) of a tile's codes
/// marked present; large tiles (a whole 4096² tile on a GPU) are scanned
/// in parallel.
fn marked(source: &[u16], slot: impl Fn(u16) -> usize + Sync) -> [bool; MAX_CLASSES + 1] {
    source
        .par_chunks(1 << 16)
        .fold(
            || [false; MAX_CLASSES + 1],
            |mut seen, chunk| {
                for &code in chunk {
                    seen[slot(code)] = true;
                }
                seen
            },
        )
        .reduce(
            || [false; MAX_CLASSES + 1],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                a
            },
        )
}

/// Bytes that [`tally_bytes`] tests for one value at a time (a multiple
/// of 4): one 512-bit vector.
const BYTE_RUN_BLOCK: usize = 64;

/// How often each byte value occurs in `data` (at most 2³² bytes), on this
/// thread. Four partial counts, so that runs of equal bytes do not wait on
/// the previous increment's store.
pub fn tally_bytes(data: &[u8]) -> [u64; 256] {
    let mut part = [[0u32; 256]; 4];
    let mut blocks = data.chunks_exact(BYTE_RUN_BLOCK);
    for block in &mut blocks {
        // A block of one value (the sea, a nodata margin, most of a
        // land-cover raster) counts at once: a vector's OR of XORs.
        let first = block[0];
        if block.iter().fold(0, |any, &v| any | (v ^ first)) == 0 {
            part[0][first as usize] += BYTE_RUN_BLOCK as u32;
            continue;
        }
        for q in block.chunks_exact(4) {
            part[0][q[0] as usize] += 1;
            part[1][q[1] as usize] += 1;
            part[2][q[2] as usize] += 1;
            part[3][q[3] as usize] += 1;
        }
    }
    for &v in blocks.remainder() {
        part[0][v as usize] += 1;
    }
    let mut sum = [0u64; 256];
    for p in &part {
        sum.iter_mut().zip(p).for_each(|(s, &c)| *s += c as u64);
    }
    sum
}

/// Codes that [`CodeTally::add`] tests for one code at a time: a run of
/// that many counts in one step. Counting a batch task's input and output
/// as its engine reads and writes them took 8.5 % of a node's CPU on a set
/// of long runs, on the reader's and writer's own threads (decision 0039).
const RUN_BLOCK: usize = 32;

/// Pixel counts by code for codes below a bound, gathered as
/// [`tally_bytes`] does: in four interleaved partial counts, so that runs
/// of one code (most of a land-cover raster) do not wait on each other's
/// increments; summed when read. About twice as fast as one count per code
/// on such rasters.
#[derive(Clone, Debug)]
pub struct CodeTally {
    /// Four partial counts of `bound` codes each, one after the other.
    lanes: Vec<u32>,
    /// Codes added to `lanes` since they were last summed into `counts`.
    pending: u64,
    counts: Vec<u64>,
}

impl CodeTally {
    /// A tally of codes `0..bound`.
    pub fn new(bound: usize) -> Self {
        CodeTally {
            lanes: vec![0; 4 * bound],
            pending: 0,
            counts: vec![0; bound],
        }
    }

    /// Counts `codes` (each below the bound; a larger one panics).
    pub fn add(&mut self, codes: &[u16]) {
        for part in codes.chunks(1 << 31) {
            // A lane takes at most every code added since the last sum.
            if self.pending + part.len() as u64 > u64::from(u32::MAX) {
                self.sum_lanes();
            }
            self.pending += part.len() as u64;
            let n = self.counts.len();
            let (a, rest) = self.lanes.split_at_mut(n);
            let (b, rest) = rest.split_at_mut(n);
            let (c, d) = rest.split_at_mut(n);
            let mut blocks = part.chunks_exact(RUN_BLOCK);
            for block in &mut blocks {
                // A block of one code (most of a land-cover raster's)
                // counts at once: the test is a vector's OR of XORs.
                let first = block[0];
                if block.iter().fold(0, |any, &v| any | (v ^ first)) == 0 {
                    a[first as usize] += RUN_BLOCK as u32;
                    continue;
                }
                for q in block.chunks_exact(4) {
                    a[q[0] as usize] += 1;
                    b[q[1] as usize] += 1;
                    c[q[2] as usize] += 1;
                    d[q[3] as usize] += 1;
                }
            }
            for &v in blocks.remainder() {
                a[v as usize] += 1;
            }
        }
    }

    /// The counts by code.
    pub fn counts(&mut self) -> &[u64] {
        self.sum_lanes();
        &self.counts
    }

    fn sum_lanes(&mut self) {
        let n = self.counts.len();
        for (k, count) in self.counts.iter_mut().enumerate() {
            *count += (0..4)
                .map(|l| u64::from(self.lanes[l * n + k]))
                .sum::<u64>();
        }
        self.lanes.iter_mut().for_each(|l| *l = 0);
        self.pending = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_maps_of_any_size_map_as_code_does() {
        // Every table size around the vector path's 64 entries, pieces not
        // a multiple of its 32 values, runs of local indices, NO_CLASS and
        // the undecided value, so that whole vectors hold one kind or mix.
        let mut state = 7u64;
        let mut next = move |below: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % below
        };
        for classes in [1, 2, 17, 30, 62, 63, 100] {
            let map = CodeMap {
                codes: (0..classes).map(|i| 1000 + 3 * i).collect(),
                fill: 255,
                tie: 254,
            };
            let mut values = Vec::new();
            while values.len() < 5000 {
                let v = match next(8) {
                    0 => NO_CLASS,
                    1 => NO_CLASS - 1,
                    _ => next(classes as u64) as u16,
                };
                values.extend(std::iter::repeat_n(v, 1 + next(100) as usize));
            }
            let mut mapped = values.clone();
            map.apply(&mut mapped);
            let expected: Vec<u16> = values.iter().map(|&v| map.code(v)).collect();
            assert_eq!(mapped, expected, "{classes} classes");
        }
    }

    #[test]
    #[should_panic(expected = "index out of bounds")]
    fn a_value_beyond_the_code_map_panics() {
        let map = CodeMap {
            codes: vec![10, 11, 12],
            fill: 255,
            tie: 254,
        };
        // A whole vector of valid indices, then one that is no class.
        let mut out = vec![1u16; 64];
        out[40] = 3;
        map.apply(&mut out);
    }

    #[test]
    fn class_weights_write_as_they_parse() {
        for text in ["", "3:2", "3:2,7:0.5,65535:0.1"] {
            let weights: ClassWeights = text.parse().unwrap();
            assert_eq!(weights.to_string(), text);
        }
        // A code given twice keeps its last weight, written once.
        let weights: ClassWeights = " 3:2, 7:1e-3 ,3:4".parse().unwrap();
        assert_eq!(weights.to_string(), "7:0.001,3:4");
        assert_eq!(
            weights.to_string().parse::<ClassWeights>().unwrap(),
            weights
        );
    }

    #[test]
    fn code_tally_counts_as_one_count_per_code() {
        // Runs, a ragged end (not a multiple of four) and several calls.
        let codes: Vec<u16> = (0..10_007u32)
            .map(|i| if i % 97 < 60 { 3 } else { (i * 7 % 300) as u16 })
            .collect();
        let mut want = vec![0u64; 300];
        for &c in &codes {
            want[c as usize] += 1;
        }
        let mut tally = CodeTally::new(300);
        for part in codes.chunks(333) {
            tally.add(part);
        }
        assert_eq!(tally.counts(), want.as_slice());
        // Reading sums the lanes once: adding more goes on from there.
        tally.add(&[5, 5]);
        want[5] += 2;
        assert_eq!(tally.counts(), want.as_slice());
    }

    #[test]
    fn table_lists_codes_ascending_without_nodata() {
        let t = ClassTable::from_codes(&[7, 3, 255, 7, 40], Some(255)).unwrap();
        assert_eq!(t.codes(), &[3, 7, 40]);
        assert_eq!(t.counts(), &[1, 2, 1]);
        assert_eq!(t.nodata_count(), 1);
        assert_eq!(t.output_nodata(255), Some(255));
        let lut = t.index_lut();
        assert_eq!((lut[3], lut[7], lut[40], lut[255]), (0, 1, 2, NO_CLASS));
    }

    #[test]
    fn every_code_leaves_out_nodata_only() {
        let t = ClassTable::every_code(255, Some(7)).unwrap();
        assert_eq!(t.len(), 255);
        assert_eq!(&t.codes()[5..9], &[5, 6, 8, 9]);
        assert_eq!(t.output_nodata(255), Some(7));
        assert_eq!(t.index_lut()[8], 7);
        assert_eq!(t.index_lut()[7], NO_CLASS);
        assert!(ClassTable::every_code(255, None).is_ok());
        assert!(ClassTable::every_code(256, Some(0)).is_ok());
        assert!(ClassTable::every_code(257, Some(0)).is_err());
    }

    #[test]
    fn byte_tallies_equal_the_plain_ones() {
        // Mixed bytes (16 blocks of 64), then runs: whole blocks of one
        // value, and blocks of one value but one byte (counted one by one).
        let mut bytes: Vec<u8> = (0..1024u32)
            .map(|i| (i * i % 251 + i / 100) as u8)
            .collect();
        bytes.extend(std::iter::repeat_n(7, 64 * 5 + 3));
        for odd in [0, 31, 63] {
            let mut block = vec![9u8; 64];
            block[odd] = 8;
            bytes.extend(block);
        }
        let (mut a, mut b) = (CodeHistogram::default(), CodeHistogram::default());
        a.add_bytes(&bytes);
        b.add(&bytes.iter().map(|&c| u16::from(c)).collect::<Vec<_>>());
        assert_eq!(a.counts, b.counts);
        assert_eq!(a.counts.iter().sum::<u64>(), bytes.len() as u64);
        let mixed = |code| bytes[..1024].iter().filter(|&&v| v == code).count() as u64;
        assert_eq!(a.count(9), mixed(9) + 3 * 63);
        assert_eq!(a.count(7), mixed(7) + 64 * 5 + 3);
    }

    #[test]
    fn too_many_classes_is_an_error() {
        let codes: Vec<u16> = (0..257).collect();
        let e = ClassTable::from_codes(&codes, None).unwrap_err();
        assert!(e.to_string().contains("257 distinct"));
        assert!(ClassTable::from_codes(&codes[..256], None).is_ok());
    }

    #[test]
    fn free_code_for_output_nodata() {
        let t = ClassTable::from_codes(&[255, 254, 1], None).unwrap();
        assert_eq!(t.output_nodata(255), Some(253));
        let all: Vec<u16> = (0..256).collect();
        assert_eq!(
            ClassTable::from_codes(&all, None)
                .unwrap()
                .output_nodata(255),
            None
        );
    }

    #[test]
    fn class_weights_parse_and_quantise() {
        let w: ClassWeights = "3:2, 7:0.5".parse().unwrap();
        let t = ClassTable::from_codes(&[3, 7, 9], None).unwrap();
        let q = w.quantise(&t);
        assert_eq!(q, vec![1 << 24, 1 << 22, 1 << 23]);
        let ints: ClassWeights = "3:2".parse().unwrap();
        assert_eq!(ints.quantise(&t), vec![2, 1, 1]);
        for bad in ["3", "x:1", "3:0", "3:-1", "3:abc", "70000:1"] {
            assert!(bad.parse::<ClassWeights>().is_err(), "{bad}");
        }
    }

    #[test]
    fn compaction_is_ascending_and_marks_no_class() {
        // Codes 5 → global 9, 6 → 2, 7 → 200, 8 → NO_CLASS; a 5×1 source
        // padded by a halo of one.
        let mut lut: Box<CodeLut> = Box::new([NO_CLASS; 1 << 16]);
        (lut[5], lut[6], lut[7]) = (9, 2, 200);
        let grid = tiles::TileGrid::new(5, 1, 1, tiles::Border::Same, 5).unwrap();
        let tile = grid.tiles().next().unwrap();
        let mut padded = Vec::new();
        let c = TileCompaction::pad_and_compact(&[5, 8, 6, 5, 7], &lut, &tile, &mut padded);
        assert_eq!(c.globals, vec![2, 9, 200]);
        let (pw, none) = (tile.padded_width, 3);
        assert_eq!(padded.len(), pw * tile.padded_height);
        let row = &padded[tile.pad_top * pw..][..pw];
        assert_eq!(&row[tile.pad_left..tile.pad_left + 5], &[1, none, 0, 1, 2]);
        assert_eq!(padded.iter().filter(|&&v| v != none).count(), 4);
    }

    /// Staging global indices and mapping them through the device table
    /// gives the compaction's local indices, pads included, byte for byte.
    #[test]
    fn staged_globals_mapped_equal_the_compacted_tile() {
        let mut lut: Box<CodeLut> = Box::new([NO_CLASS; 1 << 16]);
        for (g, code) in [2u16, 5, 9, 300, 301, 7000].into_iter().enumerate() {
            lut[code as usize] = g as u16 * 40;
        }
        let codes = [2u16, 5, 9, 300, 301, 7000, 8, 0];
        let (w, h) = (53, 37);
        let source: Vec<u16> = (0..w * h)
            .map(|i| codes[(i * 7 + i / w) % 8 % 5 + i % 3])
            .collect();
        let mut raster = crate::io::MemRaster::new(w, h, source.clone());
        for (halo, tile) in [(0, 64), (3, 16), (5, 20)] {
            let grid = tiles::TileGrid::new(w, h, halo, tiles::Border::Same, tile).unwrap();
            for t in grid.tiles() {
                let mut window = vec![0; t.source.area() as usize];
                crate::io::ClassSource::read(&mut raster, t.source, &mut window).unwrap();
                let mut padded = Vec::new();
                let want = TileCompaction::pad_and_compact(&window, &lut, &t, &mut padded);
                // The window copied out, and read in place in the raster.
                let in_place = &source[t.source.y * w + t.source.x..];
                for (codes, stride) in [(&window[..], t.source.width), (in_place, w)] {
                    let mut staged = vec![0u8; t.padded_len()];
                    let present = stage_globals(codes, stride, &lut, &t, &mut staged);
                    let got = TileCompaction::from_presence(&present);
                    assert_eq!(got.globals, want.globals);
                    map_bytes(&mut staged, &got.device_table());
                    let want: Vec<u8> = padded.iter().map(|&v| v as u8).collect();
                    assert_eq!(staged, want, "halo {halo} tile {tile} at {:?}", t.source);
                }
            }
        }
    }

    #[test]
    fn code_maps_give_codes_fill_and_tie() {
        let map = CodeMap {
            codes: vec![3, 9, 200],
            fill: 255,
            tie: 77,
        };
        let mut out = vec![0, 2, NO_CLASS, NO_CLASS - 1, 1];
        map.apply(&mut out);
        assert_eq!(out, vec![3, 200, 255, 77, 9]);
        let table = map.byte_table();
        assert_eq!((table[0], table[2], table[255]), (3, 200, 255));
    }

    /// A tile of codes below 256 takes the byte tables; one that holds a
    /// wider code (here 261, whose low byte is 5's) is scanned again, so
    /// that 5 does not count as present.
    #[test]
    fn byte_codes_and_wider_codes_compact_alike() {
        let mut lut: Box<CodeLut> = Box::new([NO_CLASS; 1 << 16]);
        (lut[5], lut[9], lut[261]) = (3, 1, 7);
        let grid = tiles::TileGrid::new(4, 1, 0, tiles::Border::Same, 4).unwrap();
        let tile = grid.tiles().next().unwrap();
        let mut padded = Vec::new();
        let bytes = TileCompaction::pad_and_compact(&[5, 9, 5, 0], &lut, &tile, &mut padded);
        assert_eq!(
            (bytes.globals, &padded[..]),
            (vec![1, 3], &[1, 0, 1, 2][..])
        );
        let wider = TileCompaction::pad_and_compact(&[261, 9, 0, 9], &lut, &tile, &mut padded);
        assert_eq!(
            (wider.globals, &padded[..]),
            (vec![1, 7], &[1, 0, 2, 0][..])
        );
    }

    #[test]
    fn the_last_global_index_is_told_apart_from_no_class() {
        // Global index 255 is a class, NO_CLASS is not.
        let mut lut: Box<CodeLut> = Box::new([NO_CLASS; 1 << 16]);
        lut[1] = 255;
        let grid = tiles::TileGrid::new(2, 1, 0, tiles::Border::Same, 2).unwrap();
        let tile = grid.tiles().next().unwrap();
        let mut padded = Vec::new();
        let nodata_only = TileCompaction::pad_and_compact(&[0, 0], &lut, &tile, &mut padded);
        assert!(nodata_only.globals.is_empty());
        let both = TileCompaction::pad_and_compact(&[0, 1], &lut, &tile, &mut padded);
        assert_eq!(both.globals, vec![255]);
        assert_eq!(padded, vec![1, 0]);
    }
}
