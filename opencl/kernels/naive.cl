// The exact naive class-histogram filter (the thesis' Phase 1) on OpenCL.
// Plain Rust twin: src/method/naive/mod.rs (NaiveHost); the winner rule is
// src/method/mod.rs::pick_winner. Host side: src/method/naive/cl.rs.
//
// Input: one halo-padded tile of local class indices (CLS_T: uchar when the
// tile has at most 255 classes, else ushort), `nc` classes, value `nc` =
// nodata / outside. Output pixel (x, y) is centred on tile pixel
// (x + halo, y + halo); its window starts at tile pixel (x, y).
// Taps: the kernel's non-zero quantised weights as (dy << 16 | dx, weight),
// sorted by dy; row_start[dy] is the first tap of row dy (ksize + 1 entries).
// Scores are exact: u32 sums (the quantised weights sum to at most 2^31),
// products with the class weight in 64 bits.
//
// Output: one winner per pixel (OUT_T: ushort; uchar where every winner
// and NO_CLASS fit a byte, fewer than 255 classes and no UNDECIDED, so
// NO_CLASS comes down as 255 and the host maps bytes straight to codes).
//
// Build options: CLS_T, OUT_T, NB (histogram bins >= nc + 1); for `local` and
// `fast`: TX, TY (work-group shape); for `fast`: PY (outputs per work-item,
// stacked with stride TY), TILE_LOCAL (class tile in local memory),
// HIST_LOCAL (histograms in local memory, bin-major: bin c of item i at
// c * TX * TY + i, so lanes never share a bank whatever their classes),
// TAP_SCAN (pick the winner by scanning the window's taps instead of all
// bins: cheaper when the kernel has fewer taps than there are classes),
// FLAT (CPU devices, no TILE_LOCAL): the taps' first words are offsets
// dy * tw + dx from the window's corner in this tile (uploaded per tile
// width), so a tap costs one load of its class and one add.
// RUNS with KS = N (CPU devices): the tile's helper planes (per
// pixel the index of its run in its row, per row the runs' starts and
// classes, per pixel how many rows from it down are alike in the N pixels
// from it: src/method/naive/cl_runs.rs, whose `score` is this path's Rust
// twin) and the kernel's summed-area table `sat` ((KS + 1)^2 entries) cut
// each window into blocks of alike rows, whose runs are rectangles of one
// class worth two table look-ups each; uniform windows skip the histogram;
// rows of many runs visit their taps (`row_start`). MASK_WORDS > 0 (with
// RUNS): a bit per bin marks the bins a window touched (MASK_WORDS ulongs),
// so the winner search and the clearing visit those bins only, in order.
// SLIDE (CPU devices, kernels whose rows are all alike, e.g. boxes; TY = 1,
// FLAT): each item's histogram slides down its column, losing the window's
// top row and gaining a bottom row per output, 2 rows of taps instead of N.
// SCAN2 (CPU devices): the winner over all bins in two loops that vectorise
// (best score, then its first bin; with PACKED one loop over score and bin
// packed in a ulong), and all NB bins cleared at once.
// TIES (absent or 0: the default rule): the tie rule of
// src/method/policy.rs::Ties (1 smallest, 2 largest, 3 undecided, written as
// UNDECIDED); only WINNER_BINS knows it, so the host leaves TAP_SCAN, SCAN2
// and MASK_WORDS off with it.

#ifndef CLS_T
#define CLS_T uchar
#endif
#ifndef OUT_T
#define OUT_T ushort
#endif
#define NO_CLASS 0xFFFFu
#define UNDECIDED 0xFFFEu
#ifndef TIES
#define TIES 0
#endif
#define TAP_DY(p) ((p) >> 16)
#define TAP_DX(p) ((p) & 0xFFFFu)

// pick_winner over all bins: highest score; ties -> the centre class if it is
// among the best, else the smallest index; no positive score -> NO_CLASS.
// With TIES > 0: pick_winner_by (src/method/mod.rs), which ignores the centre.
#if TIES == 0
#define WINNER_BINS(H, w, nc, centre, result)                                \
    {                                                                        \
        ulong best_ = 0;                                                     \
        uint bc_ = NO_CLASS;                                                 \
        for (uint c_ = 0; c_ < (nc); ++c_) {                                 \
            ulong s_ = (ulong)(H(c_)) * (w)[c_];                             \
            if (s_ > best_) {                                                \
                best_ = s_;                                                  \
                bc_ = c_;                                                    \
            }                                                                \
        }                                                                    \
        if (bc_ != NO_CLASS && (centre) < (nc) &&                            \
            (ulong)(H(centre)) * (w)[centre] == best_)                       \
            bc_ = (centre);                                                  \
        result = bc_;                                                        \
    }
#else
#define WINNER_BINS(H, w, nc, centre, result)                                \
    {                                                                        \
        ulong best_ = 0;                                                     \
        uint first_ = NO_CLASS, last_ = NO_CLASS, n_ = 0;                    \
        for (uint c_ = 0; c_ < (nc); ++c_) {                                 \
            ulong s_ = (ulong)(H(c_)) * (w)[c_];                             \
            if (s_ > best_) {                                                \
                best_ = s_;                                                  \
                first_ = last_ = c_;                                         \
                n_ = 1;                                                      \
            } else if (s_ == best_ && s_ > 0) {                              \
                last_ = c_;                                                  \
                ++n_;                                                        \
            }                                                                \
        }                                                                    \
        result = TIES == 2 ? last_ : (TIES == 3 && n_ > 1) ? UNDECIDED       \
                                                           : first_;         \
    }
#endif

#define H_PRIV(c) h[c]

// The body of the plain variants (`buffer`, `image`) for output (x, y):
// AT(dx, dy) is the class at offset (dx, dy) from the window's corner.
#define PLAIN_PIXEL(AT)                                                      \
    {                                                                        \
        size_t o_ = (size_t)y * ow + x;                                      \
        uint centre_ = AT(halo, halo);                                       \
        if (centre_ == nc && !fill) {                                        \
            out[o_] = (OUT_T)NO_CLASS;                                      \
            return;                                                          \
        }                                                                    \
        uint h[NB];                                                          \
        for (uint c_ = 0; c_ <= nc; ++c_)                                    \
            h[c_] = 0;                                                       \
        for (uint t_ = 0; t_ < n_taps; ++t_) {                               \
            uint2 tp_ = taps[t_];                                            \
            h[AT(TAP_DX(tp_.x), TAP_DY(tp_.x))] += tp_.y;                    \
        }                                                                    \
        uint r_;                                                             \
        WINNER_BINS(H_PRIV, w, nc, centre_, r_);                             \
        out[o_] = (OUT_T)r_;                                                 \
    }

// ---------------------------------------------------------------- buffer --
// One work-item per output pixel, classes read from global memory, a
// private histogram: the thesis' plain-buffer variant.
__kernel void naive_buffer(__global const CLS_T *cls, uint tw,
                           __global const uint2 *taps, uint n_taps,
                           __constant uint *w, uint nc, uint ow, uint oh,
                           uint halo, uint fill, __global OUT_T *out)
{
    uint x = get_global_id(0), y = get_global_id(1);
    if (x >= ow || y >= oh)
        return;
    size_t origin = (size_t)y * tw + x;
#define BUF_AT(dx, dy) cls[origin + (size_t)(dy) * tw + (dx)]
    PLAIN_PIXEL(BUF_AT);
}

// ----------------------------------------------------------------- image --
// Classes in an RGBA image2d, four consecutive pixels of a row per texel
// (8-bit channels for uchar classes, 16-bit for ushort): the thesis' image variant.
__constant sampler_t naive_sampler =
    CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;

inline uint naive_texel(read_only image2d_t img, uint x, uint y)
{
    uint4 t = read_imageui(img, naive_sampler, (int2)((int)(x >> 2), (int)y));
    uint k = x & 3u;
    return k == 0 ? t.x : k == 1 ? t.y : k == 2 ? t.z : t.w;
}

__kernel void naive_image(read_only image2d_t img, __global const uint2 *taps,
                          uint n_taps, __constant uint *w, uint nc, uint ow,
                          uint oh, uint halo, uint fill, __global OUT_T *out)
{
    uint x = get_global_id(0), y = get_global_id(1);
    if (x >= ow || y >= oh)
        return;
#define IMG_AT(dx, dy) naive_texel(img, x + (dx), y + (dy))
    PLAIN_PIXEL(IMG_AT);
}

// ----------------------------------------------------------------- local --
// A TX x TY work-group stages the class rows its taps need in local memory,
// `band` kernel rows at a time (so any kernel size fits), with a private
// histogram: the thesis' local-memory variant.
#if defined(TX) && defined(TY)
__kernel __attribute__((reqd_work_group_size(TX, TY, 1))) void
naive_local(__global const CLS_T *cls, uint tw, uint th,
            __global const uint2 *taps, __global const uint *row_start,
            __constant uint *w, uint nc, uint ow, uint oh, uint halo,
            uint fill, __global OUT_T *out, uint ksize, uint band,
            __local CLS_T *tile)
{
    uint lx = get_local_id(0), ly = get_local_id(1);
    uint x = get_global_id(0), y = get_global_id(1);
    uint x0 = get_group_id(0) * TX, y0 = get_group_id(1) * TY;
    uint lw = TX + ksize - 1, lh = TY + band - 1;
    bool live = x < ow && y < oh;
    uint centre = live ? cls[(size_t)(y + halo) * tw + x + halo] : nc;
    uint h[NB];
    for (uint c = 0; c <= nc; ++c)
        h[c] = 0;
    for (uint d0 = 0; d0 < ksize; d0 += band) {
        for (uint i = ly * TX + lx; i < lw * lh; i += TX * TY) {
            uint gy = y0 + d0 + i / lw, gx = x0 + i % lw;
            tile[i] = (gy < th && gx < tw) ? cls[(size_t)gy * tw + gx] : (CLS_T)nc;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint t_end = row_start[MF_MIN(d0 + band, ksize)];
        for (uint t = row_start[d0]; t < t_end; ++t) {
            uint2 tp = taps[t];
            h[tile[(TAP_DY(tp.x) - d0 + ly) * lw + lx + TAP_DX(tp.x)]] += tp.y;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (!live)
        return;
    size_t o = (size_t)y * ow + x;
    if (centre == nc && !fill) {
        out[o] = (OUT_T)NO_CLASS;
        return;
    }
    uint r;
    WINNER_BINS(H_PRIV, w, nc, centre, r);
    out[o] = (OUT_T)r;
}
#endif

// ------------------------------------------------------------------ fast --
// The default: a TX x TY work-group computes a TX x (TY * PY) block, each
// item PY outputs one after the other with one histogram; zero-weight taps
// are gone from the tap list; classes are uchar wherever they fit (the tile
// is already compacted to its own classes); the class block with its halo
// in local memory (TILE_LOCAL) and bin-major local histograms (HIST_LOCAL)
// where they fit; TAP_SCAN for kernels with fewer taps than classes; on
// CPUs FLAT taps and, on map-like tiles, RUNS (see the top of the file).
#if defined(TX) && defined(TY) && defined(PY)
#if defined(SLIDE) && (TY != 1 || !defined(FLAT) || defined(RUNS) || defined(TAP_SCAN))
#error "SLIDE needs TY = 1 and FLAT, without RUNS and TAP_SCAN"
#endif
__kernel __attribute__((reqd_work_group_size(TX, TY, 1))) void
naive_fast(__global const CLS_T *cls, uint tw, uint th,
           __global const uint2 *taps, uint n_taps, __constant uint *w,
           uint nc, uint ow, uint oh, uint halo, uint fill,
           __global OUT_T *out, uint ksize
#ifdef RUNS
           , __global const uint *row_start, __global const uint *sat,
           __global const ushort *run_lists, __global const ushort *run_down
#endif
#ifdef TILE_LOCAL
           , __local CLS_T *tile
#endif
#ifdef HIST_LOCAL
           , __local uint *hist
#endif
)
{
    uint lx = get_local_id(0), ly = get_local_id(1);
    uint x0 = get_group_id(0) * TX, yb = get_group_id(1) * (TY * PY);
    uint x = x0 + lx;
#ifdef TILE_LOCAL
    uint lw = TX + ksize - 1, lh = TY * PY + ksize - 1;
    for (uint i = ly * TX + lx; i < lw * lh; i += TX * TY) {
        uint gy = yb + i / lw, gx = x0 + i % lw;
        tile[i] = (gy < th && gx < tw) ? cls[(size_t)gy * tw + gx] : (CLS_T)nc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#define CLS_AT(r, c) tile[(r) * lw + (c)]
#else
    __global const CLS_T *base = cls + (size_t)yb * tw + x0;
#define CLS_AT(r, c) base[(size_t)(r) * tw + (c)]
#endif
#ifdef HIST_LOCAL
    uint lid = ly * TX + lx;
#define H(c) hist[(c) * (TX * TY) + lid]
#else
    uint hp[NB];
#define H(c) hp[c]
#endif
    for (uint c = 0; c <= nc; ++c)
        H(c) = 0;
    if (x >= ow)
        return; // no barrier follows
#ifdef RUNS
    size_t plane = (size_t)tw * th;
    __global const ushort *run_idx = run_lists;
    __global const ushort *run_start = run_lists + plane;
    __global const ushort *run_cls = run_lists + 2 * plane;
#endif
#ifdef FLAT
#define TAP_CLS(tp) win[(tp).x]
#else
#define TAP_CLS(tp) CLS_AT(r0 + TAP_DY((tp).x), lx + TAP_DX((tp).x))
#endif
    for (uint k = 0; k < PY; ++k) {
        uint r0 = ly + k * TY;
        uint y = yb + r0;
        if (y >= oh)
            return;
        size_t o = (size_t)y * ow + x;
        size_t a0 = (size_t)(yb + r0) * tw + x; // the window's corner
#ifdef FLAT
        __global const CLS_T *win = cls + a0;
#endif
#ifdef SLIDE
        // All kernel rows are alike (TY = 1): one row down, the window loses
        // its top row and gains a bottom row; the histogram carries over,
        // so it is updated before any output is skipped.
        if (k == 0) {
            for (uint t = 0; t < n_taps; ++t) {
                uint2 tp = taps[t];
                H(TAP_CLS(tp)) += tp.y;
            }
        } else {
            __global const CLS_T *gone = win - tw;
            __global const CLS_T *come = win + (size_t)(ksize - 1) * tw;
            uint row_taps = n_taps / ksize;
            for (uint t = 0; t < row_taps; ++t) {
                uint2 tp = taps[t];
                H(gone[tp.x]) -= tp.y;
                H(come[tp.x]) += tp.y;
            }
        }
#endif
        uint centre = CLS_AT(r0 + halo, lx + halo);
        if (centre == nc && !fill) {
            out[o] = (OUT_T)NO_CLASS;
            continue;
        }
#ifdef RUNS
        if (run_down[a0] >= ksize && run_idx[a0] == run_idx[a0 + ksize - 1]) {
            // Uniform window: only the centre's class scores (the kernel's
            // weights are positive somewhere); it wins if its weight is.
            out[o] = (centre < nc && w[centre] > 0) ? (OUT_T)centre : (OUT_T)NO_CLASS;
            continue;
        }
#if MASK_WORDS == 1
        ulong seen = 0;
#define SEE(c) seen |= 1ul << (c)
#elif MASK_WORDS > 1
        ulong seen[MASK_WORDS];
        for (uint i = 0; i < MASK_WORDS; ++i)
            seen[i] = 0;
#define SEE(c) seen[(c) >> 6] |= 1ul << ((c) & 63u)
#else
#define SEE(c)
#endif
        for (uint dy = 0; dy < ksize;) {
            size_t a = a0 + (size_t)dy * tw;
            uint b = min((uint)run_down[a], ksize - dy);
            uint i0 = run_idx[a], i1 = run_idx[a + ksize - 1];
            if (b == 1 && i1 - i0 >= KS / 2) {
                // Many runs: the row's taps.
                uint t_end = row_start[dy + 1];
                for (uint t = row_start[dy]; t < t_end; ++t) {
                    uint2 tp = taps[t];
                    uint c = TAP_CLS(tp);
                    SEE(c);
                    H(c) += tp.y;
                }
            } else {
                // Rows dy..dy+b-1 are alike: run i covers columns [s, e)
                // of them, a rectangle worth V(e) - V(s) with V(j) the
                // block's weights left of column j. Sums are exact in u32.
                __global const uint *top = sat + dy * (KS + 1);
                __global const uint *bot = top + b * (KS + 1);
                __global const ushort *starts = run_start + (a - x);
                __global const ushort *classes = run_cls + (a - x);
                uint prev = 0;
                for (uint i = i0; i < i1; ++i) {
                    uint e = starts[i + 1] - x;
                    uint v = bot[e] - top[e];
                    uint c = classes[i];
                    SEE(c);
                    H(c) += v - prev;
                    prev = v;
                }
                uint c = classes[i1];
                SEE(c);
                H(c) += bot[KS] - top[KS] - prev;
            }
            dy += b;
        }
#elif !defined(SLIDE)
        for (uint t = 0; t < n_taps; ++t) {
            uint2 tp = taps[t];
            H(TAP_CLS(tp)) += tp.y;
        }
#endif
        uint r;
#if defined(RUNS) && MASK_WORDS > 0
        {
            // The touched bins in increasing order: the first best is the
            // smallest index.
            ulong cs = centre < nc ? (ulong)H(centre) * w[centre] : 0;
            ulong best = 0;
            r = NO_CLASS;
            for (uint i = 0; i < MASK_WORDS; ++i) {
#if MASK_WORDS == 1
                ulong m = seen;
#else
                ulong m = seen[i];
#endif
                while (m != 0) {
                    uint c = i * 64 + (uint)(63 - clz(m & (0 - m)));
                    m &= m - 1;
                    ulong s = c < nc ? (ulong)H(c) * w[c] : 0;
                    H(c) = 0;
                    if (s > best) {
                        best = s;
                        r = c;
                    }
                }
            }
            if (r != NO_CLASS && cs == best)
                r = centre;
            out[o] = (OUT_T)r;
            continue;
        }
#endif
#ifdef TAP_SCAN
        // Every bin touched is visited, scored once and cleared on the way.
        ulong cs = centre < nc ? (ulong)H(centre) * w[centre] : 0;
        ulong best = 0;
        r = NO_CLASS;
        for (uint t = 0; t < n_taps; ++t) {
            uint2 tp = taps[t];
            uint c = TAP_CLS(tp);
            if (c < nc) {
                ulong s = (ulong)H(c) * w[c];
                H(c) = 0;
                if (s > best || (s == best && s > 0 && c < r)) {
                    best = s;
                    r = c;
                }
            }
        }
        H(nc) = 0;
        if (r != NO_CLASS && cs == best)
            r = centre;
#elif defined(SCAN2)
        {
            // Two plain loops the compiler vectorises: the best score, then
            // its first bin (unless the centre has it); then all NB bins
            // cleared (but for SLIDE, which carries them over).
#ifdef PACKED
            // Scores below 2^55 (checked on the host): score << 9 | 511 - c
            // orders by score, then by the smaller bin, so one max loop
            // finds both.
            ulong top = 0;
            for (uint c = 0; c < nc; ++c)
                top = max(top, ((ulong)H(c) * w[c]) << 9 | (511u - c));
            ulong best = top >> 9;
            r = NO_CLASS;
            if (best > 0)
                r = (centre < nc && (ulong)H(centre) * w[centre] == best)
                        ? centre
                        : 511u - (uint)(top & 511u);
#else
            ulong best = 0;
            for (uint c = 0; c < nc; ++c)
                best = max(best, (ulong)H(c) * w[c]);
            r = NO_CLASS;
            if (best > 0) {
                if (centre < nc && (ulong)H(centre) * w[centre] == best) {
                    r = centre;
                } else {
                    r = 0;
                    while ((ulong)H(r) * w[r] != best)
                        ++r;
                }
            }
#endif
#ifndef SLIDE
            for (uint c = 0; c < NB; ++c)
                H(c) = 0;
#endif
        }
#else
        WINNER_BINS(H, w, nc, centre, r);
#ifndef SLIDE
        for (uint c = 0; c <= nc; ++c)
            H(c) = 0;
#endif
#endif
        out[o] = (OUT_T)r;
    }
}
#endif

// -------------------------------------------------------------- weighted --
// Confidence-weighted votes (`--confidence`, docs/semantics.md#confidence):
// each tap adds its kernel weight times its pixel's quantised confidence
// (`conf`, ushort, laid out as `cls`). Plain Rust twin:
// src/method/naive/mod.rs::weighted_pixel. The quantised kernel weights sum
// to at most 2^31 and a confidence is below 2^16, so a class's sum stays
// below 2^47 in a ulong; its product with the class weight (below 2^32)
// needs 79 bits, compared as (mul_hi, low word) pairs. One work-item per
// output pixel, a private ulong histogram, every tap (a run's weights are
// no longer its span of the kernel), whatever the variant.

// a > b for the 128-bit products a = ah:al, b = bh:bl.
#define WIDE_GT(ah, al, bh, bl) ((ah) > (bh) || ((ah) == (bh) && (al) > (bl)))

__kernel void naive_weighted(__global const CLS_T *cls,
                             __global const ushort *conf, uint tw,
                             __global const uint2 *taps, uint n_taps,
                             __constant uint *w, uint nc, uint ow, uint oh,
                             uint halo, uint fill, __global OUT_T *out)
{
    uint x = get_global_id(0), y = get_global_id(1);
    if (x >= ow || y >= oh)
        return;
    size_t origin = (size_t)y * tw + x;
    size_t o = (size_t)y * ow + x;
    uint centre = cls[origin + (size_t)halo * tw + halo];
    if (centre == nc && !fill) {
        out[o] = (OUT_T)NO_CLASS;
        return;
    }
    ulong h[NB];
    for (uint c = 0; c <= nc; ++c)
        h[c] = 0;
    for (uint t = 0; t < n_taps; ++t) {
        uint2 tp = taps[t];
        size_t a = origin + (size_t)TAP_DY(tp.x) * tw + TAP_DX(tp.x);
        h[cls[a]] += (ulong)tp.y * conf[a];
    }
    ulong best_hi = 0, best_lo = 0;
#if TIES == 0
    uint r = NO_CLASS;
    for (uint c = 0; c < nc; ++c) {
        ulong hi = mul_hi(h[c], (ulong)w[c]), lo = h[c] * (ulong)w[c];
        if (WIDE_GT(hi, lo, best_hi, best_lo)) {
            best_hi = hi;
            best_lo = lo;
            r = c;
        }
    }
    if (r != NO_CLASS && centre < nc &&
        mul_hi(h[centre], (ulong)w[centre]) == best_hi &&
        h[centre] * (ulong)w[centre] == best_lo)
        r = centre;
#else
    uint first = NO_CLASS, last = NO_CLASS, n = 0;
    for (uint c = 0; c < nc; ++c) {
        ulong hi = mul_hi(h[c], (ulong)w[c]), lo = h[c] * (ulong)w[c];
        if (WIDE_GT(hi, lo, best_hi, best_lo)) {
            best_hi = hi;
            best_lo = lo;
            first = last = c;
            n = 1;
        } else if (hi == best_hi && lo == best_lo && (hi | lo) != 0) {
            last = c;
            ++n;
        }
    }
    uint r = TIES == 2 ? last : (TIES == 3 && n > 1) ? UNDECIDED : first;
#endif
    out[o] = (OUT_T)r;
}

// ------------------------------------------------------------- flagged --
// The certified mode's recomputation on the device (src/method/certified.rs;
// host twin: src/method/naive/mod.rs::ExactPixels::at, its integer sums and
// winner rule exactly): a fast method's ranking flagged the pixels whose
// margin it cannot certify, and these get naive's exact winner, written over
// the fast one; unflagged pixels are left alone. Each window row is walked
// run by run: a run of one class adds the kernel row's weights over its span,
// two look-ups in the row's prefix sums `prefix` (KS + 1 per row), so a
// pixel costs a compare per tap and a few steps per run rather than a bin
// update per tap. The runs are found here, for the flagged pixels only: a
// table of run lengths over the whole tile cost up to 255 steps per pixel on
// maps of long runs (about 470 ms of an H200's 530 ms per 415 Mpx), for the
// 0.06 % of pixels flagged there. (The sums do not depend on where a run is
// cut, so they are the host twin's, which cuts at 255.)

__kernel void naive_flagged(__global const CLS_T *cls, uint tw,
                            __global const uint *prefix, uint ks,
                            __constant uint *w, uint nc, uint ow, uint oh,
                            uint halo, uint fill,
                            __global const uchar *flags,
                            __global uint *redone, __global OUT_T *out)
{
    uint x = get_global_id(0), y = get_global_id(1);
    if (x >= ow || y >= oh)
        return;
    size_t o = (size_t)y * ow + x;
    if (!flags[o])
        return;
    // Counted here, so the flags need not come down to be counted.
    atomic_inc(redone);
    size_t origin = (size_t)y * tw + x;
    uint centre = cls[origin + (size_t)halo * tw + halo];
    if (centre == nc && !fill) {
        out[o] = (OUT_T)NO_CLASS;
        return;
    }
    uint h[NB];
    for (uint c = 0; c <= nc; ++c)
        h[c] = 0;
    for (uint dy = 0; dy < ks; ++dy) {
        size_t start = origin + (size_t)dy * tw;
        __global const uint *pre = prefix + (size_t)dy * (ks + 1);
        uint dx = 0;
        while (dx < ks) {
            CLS_T c = cls[start + dx];
            uint end = dx + 1;
            while (end < ks && cls[start + end] == c)
                ++end;
            h[c] += pre[end] - pre[dx];
            dx = end;
        }
    }
    uint r;
    WINNER_BINS(H_PRIV, w, nc, centre, r);
    out[o] = (OUT_T)r;
}
