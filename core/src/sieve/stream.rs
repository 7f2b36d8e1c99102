//! The sieve over a raster of any size, in three passes over full-width
//! strips read from a [`ClassSource`]: label (components and their sizes),
//! neighbours (each small polygon's largest neighbour), write (recode and
//! hand each strip to the [`ClassSink`]). Each strip is cut into chunks of
//! rows labelled in parallel; chunks are joined along their edges in the
//! polygon table, so a polygon spanning many strips is one polygon.
//!
//! Memory: one strip of codes and its runs, plus tables per polygon
//! fragment; never the raster's pixels.

use super::merge::{ChunkNeighbours, EventScan, Neighbours, STAY, resolve};
use super::polygons::Polygons;
use super::runs::{ChunkLabels, MASKED, Run, label_chunk};
use super::{Connectivity, SieveOptions, SieveStats};
use crate::error::Result;
use crate::io::{ClassSink, ClassSource};
use crate::progress::Progress;
use rayon::prelude::*;
use std::sync::mpsc::{channel, sync_channel};
use std::time::Instant;
use tiles::Rect;

/// Pixels of a strip by default: large enough to keep every thread busy,
/// small enough that its runs (a few bytes per run) stay small.
const STRIP_PIXELS: usize = 4 << 20;

/// Output block side the default strip height is a multiple of, so that
/// strips fill whole GeoTIFF blocks of the output.
const STRIP_ALIGN: usize = 256;

/// Rows per strip: `asked`, or about [`STRIP_PIXELS`] in whole blocks.
fn strip_rows(width: usize, height: usize, asked: Option<usize>) -> usize {
    let rows = asked.unwrap_or_else(|| {
        let rows = STRIP_PIXELS / width.max(1);
        (rows / STRIP_ALIGN).max(1) * STRIP_ALIGN
    });
    rows.clamp(1, height.max(1))
}

/// Bytes the sieve holds per entry of its polygon table at its peak: the
/// table itself (parent, code and size: 14 bytes, twice that while a
/// vector grows), each entry's best neighbour in pass 2 (24) and its merge
/// target (4). A raster of one-pixel polygons (a checkerboard) has one
/// entry per pixel.
const BYTES_PER_ENTRY: u64 = 2 * 14 + 24 + 4;

/// Bytes per pixel of the strips in flight: codes (the strip being read,
/// the one worked on and the one written: 6) and their labelling (a run,
/// its label and its component per pixel at worst: 26).
const BYTES_PER_STRIP_PIXEL: u64 = 32;

/// Refuses to go on when the polygon table found so far (`entries`, up to
/// row `row` of `height`), the runs kept and the strips in flight need
/// more than `budget`, the memory that was available at the start: an
/// allocation past it would abort the process with no message.
fn check_memory(
    entries: usize,
    kept_bytes: usize,
    strip_pixels: u64,
    budget: u64,
    (row, height): (usize, usize),
) -> Result<()> {
    let need = (entries as u64)
        .saturating_mul(BYTES_PER_ENTRY)
        .saturating_add(kept_bytes as u64)
        .saturating_add(strip_pixels.saturating_mul(BYTES_PER_STRIP_PIXEL));
    if need <= budget {
        return Ok(());
    }
    crate::bail!(
        resource,
        format!(
            "sieve needs at least {} of memory for the {entries} polygon fragments in the first {row} of {height} rows, more than the {} available",
            crate::limits::gib(need.into()),
            crate::limits::gib(budget.into())
        ),
        hint = "sieve the raster in parts (gdal_translate -srcwin), smooth it first (fewer, larger polygons), or give the process more memory"
    )
}

/// The last row of a chunk with its first entry id, kept across strips.
struct Edge {
    runs: Vec<Run>,
    labels: Vec<u32>,
    base: u32,
}

impl Edge {
    fn of(chunk: &ChunkLabels, base: u32) -> Self {
        let (runs, labels) = chunk.last_row();
        Edge {
            runs: runs.to_vec(),
            labels: labels.to_vec(),
            base,
        }
    }

    fn view(&self) -> (&[Run], &[u32], u32) {
        (&self.runs, &self.labels, self.base)
    }
}

/// Reads `strips` from `source` on a thread of its own, one strip ahead of
/// `each`, which gets them in order (decoding overlaps the work on the
/// previous strip). Buffers go back to the reader for reuse.
fn each_strip(
    source: &mut dyn ClassSource,
    strips: &[Rect],
    progress: &Progress,
    mut each: impl FnMut(Rect, &mut [u16]) -> Result<()>,
) -> Result<()> {
    std::thread::scope(|scope| {
        let (send, strips_read) = sync_channel::<Result<(Rect, Vec<u16>)>>(1);
        let (give_back, given_back) = channel::<Vec<u16>>();
        scope.spawn(move || {
            for &window in strips {
                let mut buf = given_back.try_recv().unwrap_or_default();
                buf.resize(window.area() as usize, 0);
                let read = crate::interrupt::check().and_then(|()| source.read(window, &mut buf));
                let failed = read.is_err();
                // A closed channel means the consumer stopped on an error.
                if send.send(read.map(|()| (window, buf))).is_err() || failed {
                    break;
                }
            }
        });
        for strip in strips_read {
            let (window, mut buf) = strip?;
            each(window, &mut buf)?;
            progress.inc(1);
            let _ = give_back.send(buf);
        }
        Ok(())
    })
}

/// Trims a strip's runs and labels to keep them between passes; returns
/// the bytes they hold.
fn keep(chunks: &mut [ChunkLabels]) -> usize {
    chunks
        .iter_mut()
        .map(|c| {
            c.runs.shrink_to_fit();
            c.label.shrink_to_fit();
            c.row_start.shrink_to_fit();
            c.comp_code.shrink_to_fit();
            c.comp_size.shrink_to_fit();
            c.runs.capacity() * size_of::<Run>()
                + c.label.capacity() * size_of::<u32>()
                + c.row_start.capacity() * size_of::<usize>()
                + c.comp_code.capacity() * size_of::<u16>()
                + c.comp_size.capacity() * size_of::<u64>()
        })
        .sum()
}

/// Writes the codes of `chunk` (entries from `base`) into `pixels`, each
/// run of a merged polygon with its target's code.
fn recode(chunk: &ChunkLabels, base: u32, polygons: &Polygons, target: &[u32], pixels: &mut [u16]) {
    let width = pixels.len() / chunk.rows().max(1);
    for r in 0..chunk.rows() {
        let row = &mut pixels[r * width..(r + 1) * width];
        let (runs, labels) = chunk.row(r);
        for (run, &label) in runs.iter().zip(labels) {
            let code = match label {
                MASKED => run.code,
                _ => match target[polygons.root(base + label) as usize] {
                    STAY => run.code,
                    to => polygons.code(to),
                },
            };
            row[run.x0 as usize..run.x1 as usize].fill(code);
        }
    }
}

/// How a run cuts the raster: its strips, each labelled in chunks of
/// `chunk_rows` rows in parallel.
struct Layout {
    width: usize,
    height: usize,
    /// Rows of a strip (the last one may be shorter).
    strip: usize,
    strips: Vec<Rect>,
    chunk_rows: usize,
    nodata: Option<u16>,
    conn: Connectivity,
}

impl Layout {
    /// The components of one strip's pixels, chunk by chunk.
    fn label_strip(&self, buf: &[u16]) -> Vec<ChunkLabels> {
        buf.par_chunks(self.chunk_rows * self.width)
            .map(|c| label_chunk(c, self.width, self.nodata, self.conn))
            .collect()
    }
}

/// What pass 1 found: the polygons, the first label of every chunk, and
/// the labelled chunks of the first strips, kept for the later passes.
struct Found {
    polygons: Polygons,
    bases: Vec<u32>,
    kept: Vec<Vec<ChunkLabels>>,
}

/// Runs the three passes; see [`super::sieve`].
pub fn run(
    source: &mut dyn ClassSource,
    sink: &mut dyn ClassSink,
    options: &SieveOptions,
    progress: &Progress,
) -> Result<SieveStats> {
    let start = Instant::now();
    let (width, height) = source.size();
    let mut stats = SieveStats {
        threshold: options.threshold,
        ..SieveStats::default()
    };
    if width == 0 || height == 0 {
        return Ok(stats);
    }
    let strip = strip_rows(width, height, options.strip_rows);
    let layout = Layout {
        width,
        height,
        strip,
        strips: (0..height)
            .step_by(strip)
            .map(|y| Rect::new(0, y, width, strip.min(height - y)))
            .collect(),
        // Several chunks per thread even on the last strip, for balance.
        chunk_rows: strip.div_ceil(4 * rayon::current_num_threads()).max(1),
        nodata: options.nodata,
        conn: options.connectivity,
    };
    progress.start(3 * layout.strips.len() as u64, "strips");
    let mut found = find_polygons(source, &layout, options, progress)?;
    stats.polygons = found.polygons.settle();
    let target = find_targets(source, &layout, options, progress, &found)?;
    // Pass 3 consumes the kept strips, freeing each once written.
    let kept = std::mem::take(&mut found.kept);
    recode_strips(source, sink, &layout, progress, &found, kept, &target)?;
    progress.finish();
    let polygons = &found.polygons;
    for p in 0..polygons.len() as u32 {
        if polygons.root(p) == p && polygons.size(p) < options.threshold {
            stats.small += 1;
            if target[p as usize] != STAY {
                stats.merged += 1;
                stats.pixels_changed += polygons.size(p);
            }
        }
    }
    stats.wall = start.elapsed();
    Ok(stats)
}

/// Pass 1: components, joined across chunk edges. The first strips' runs
/// are kept (up to `cache_bytes`), so that the later passes need not read
/// and label them again.
fn find_polygons(
    source: &mut dyn ClassSource,
    layout: &Layout,
    options: &SieveOptions,
    progress: &Progress,
) -> Result<Found> {
    let (width, height) = (layout.width, layout.height);
    let mut polygons = Polygons::default();
    let mut bases = Vec::new();
    let mut edge: Option<Edge> = None;
    let mut kept: Vec<Vec<ChunkLabels>> = Vec::new();
    let (mut kept_bytes, mut keeping) = (0usize, true);
    // Memory grows with the polygons found (a few dozen bytes each), which
    // only the labelling finds: checked after every strip.
    let budget = crate::limits::available_memory();
    let strip_pixels = (layout.strip * width) as u64;
    check_memory(0, 0, strip_pixels, budget, (0, height))?;
    each_strip(source, &layout.strips, progress, |window, buf| {
        let mut chunks = layout.label_strip(buf);
        for chunk in &chunks {
            let base = polygons.add_chunk(chunk)?;
            if let Some(above) = &edge {
                let (runs, labels) = chunk.row(0);
                polygons.join_rows((runs, labels, base), above.view(), layout.conn);
            }
            edge = Some(Edge::of(chunk, base));
            bases.push(base);
        }
        keeping &= kept_bytes < options.cache_bytes;
        let bytes = if keeping { keep(&mut chunks) } else { 0 };
        keeping &= kept_bytes + bytes <= options.cache_bytes;
        if keeping {
            kept_bytes += bytes;
            kept.push(chunks);
        }
        let rows = (window.y + window.height, height);
        check_memory(polygons.len(), kept_bytes, strip_pixels, budget, rows)
    })?;
    Ok(Found {
        polygons,
        bases,
        kept,
    })
}

/// Pass 2: the largest neighbour of each small polygon, and from them what
/// every polygon becomes ([`resolve`]).
fn find_targets(
    source: &mut dyn ClassSource,
    layout: &Layout,
    options: &SieveOptions,
    progress: &Progress,
    found: &Found,
) -> Result<Vec<u32>> {
    let (polygons, bases, chunk_rows) = (&found.polygons, &found.bases, layout.chunk_rows);
    let scan = EventScan {
        polygons,
        threshold: options.threshold,
        width: layout.width as u64,
        conn: layout.conn,
    };
    let mut neighbours = Neighbours::new(polygons.len());
    let mut edge: Option<Edge> = None;
    let mut first_chunk = 0;
    let mut find = |window: Rect, chunks: &[ChunkLabels]| {
        let bases = &bases[first_chunk..first_chunk + chunks.len()];
        let found: Vec<ChunkNeighbours> = (0..chunks.len())
            .into_par_iter()
            .map(|k| {
                let mut found = ChunkNeighbours::new(bases[k], chunks[k].comp_code.len());
                let y0 = (window.y + k * chunk_rows) as u64;
                scan.chunk(&mut found, y0, &chunks[k], bases[k]);
                let (runs, labels) = chunks[k].row(0);
                let this = (runs, labels, bases[k]);
                if k > 0 {
                    let (above, above_labels) = chunks[k - 1].last_row();
                    scan.between(&mut found, y0, this, (above, above_labels, bases[k - 1]));
                } else if let Some(above) = &edge {
                    scan.between(&mut found, y0, this, above.view());
                }
                found
            })
            .collect();
        for f in found {
            neighbours.absorb(f, polygons);
        }
        let last = chunks.len() - 1;
        edge = Some(Edge::of(&chunks[last], bases[last]));
        first_chunk += chunks.len();
    };
    for (chunks, &window) in found.kept.iter().zip(&layout.strips) {
        find(window, chunks);
        progress.inc(1);
    }
    each_strip(
        source,
        &layout.strips[found.kept.len()..],
        progress,
        |window, buf| {
            find(window, &layout.label_strip(buf));
            Ok(())
        },
    )?;
    Ok(resolve(polygons, &neighbours, options.threshold))
}

/// Pass 3: every pixel recoded to its polygon's target, strip by strip
/// into `sink` (the `kept` strips of pass 1 first).
fn recode_strips(
    source: &mut dyn ClassSource,
    sink: &mut dyn ClassSink,
    layout: &Layout,
    progress: &Progress,
    found: &Found,
    kept: Vec<Vec<ChunkLabels>>,
    target: &[u32],
) -> Result<()> {
    let (polygons, bases) = (&found.polygons, &found.bases);
    let (width, chunk_rows) = (layout.width, layout.chunk_rows);
    let mut first_chunk = 0;
    let mut buf = Vec::new();
    let n_kept = kept.len();
    for (chunks, &window) in kept.into_iter().zip(&layout.strips) {
        crate::interrupt::check()?;
        buf.resize(window.area() as usize, 0);
        let bases = &bases[first_chunk..first_chunk + chunks.len()];
        buf.par_chunks_mut(chunk_rows * width)
            .zip(chunks.par_iter().zip(bases))
            .for_each(|(pixels, (chunk, &base))| recode(chunk, base, polygons, target, pixels));
        sink.write(window, &buf)?;
        first_chunk += chunks.len();
        progress.inc(1);
    }
    drop(buf);
    each_strip(source, &layout.strips[n_kept..], progress, |window, buf| {
        let n_chunks = window.height.div_ceil(chunk_rows);
        let bases = &bases[first_chunk..first_chunk + n_chunks];
        buf.par_chunks_mut(chunk_rows * width)
            .zip(bases)
            .for_each(|(pixels, &base)| {
                let chunk = label_chunk(pixels, width, layout.nodata, layout.conn);
                recode(&chunk, base, polygons, target, pixels);
            });
        sink.write(window, buf)?;
        first_chunk += n_chunks;
        Ok(())
    })
}
