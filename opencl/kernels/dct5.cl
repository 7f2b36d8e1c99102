// dct5: one pass of the constant-time DCT-5 Gaussian in its rotating-phasor
// form (src/method/dct5/rot.rs is the plain Rust twin and derives it; the
// host's f64 reference is src/method/dct5/mod.rs, docs/semantics.md#methods the formulas).
// Per term k >= 1 a work-item carries Z_k = sum_t f(y+t) e^{i phi k (t-R)}
// (Re Z_k = F_k) and slides it by one with a rotation:
//   Z_k(y+1) = rho_k (Z_k(y) + d_k (f(y+2R+1) - f(y))),  rho_k = e^{-i phi k},
//   d_k = e^{-i phi k R};  k = 0 is the running box sum;
//   out(y) = sum_k G_k Re Z_k(y).
// A segment of outputs y0..y1 starts from Z = 0 and N warm-up steps that add
// the samples y0..y0+2R with no trailing sample, which gives Z(y0) exactly: no
// explicit seed sums, and the cost per output is (1 + N / seg) steps.
// Defines: R (radius), NT (terms K+1), WEIGHTED (--confidence: pass 1
// weighs each pixel of the class by votes * inv_top, its quantised
// confidence over the tile's largest; twin: Votes in
// src/method/separable/cl.rs). The segment length `seg` is an argument (a
// multiple of 32 for pass 1). Constants `co`: per k, G_k, rho_k
// (re, im), d_k (re, im).
// dct5_cols_t runs down the columns of the class tile (the indicator of each
// class), dct5_rows_t along the rows of the pass-1 planes, which are stored
// transposed so that both passes read and write coalesced.

#define N (2 * R + 1)

// The state of one line: box sum z0 and the phasors (zr, zi) of k >= 1.
#define DCT5_STATE                                                               \
    float G[NT], pr[NT], pi[NT], dr[NT], di[NT], zr[NT], zi[NT];                 \
    for (int k = 0; k < NT; k++) {                                               \
        G[k] = co[5 * k];                                                        \
        pr[k] = co[5 * k + 1];                                                   \
        pi[k] = co[5 * k + 2];                                                   \
        dr[k] = co[5 * k + 3];                                                   \
        di[k] = co[5 * k + 4];                                                   \
        zr[k] = 0.0f;                                                            \
        zi[k] = 0.0f;                                                            \
    }

// Add b (leading minus trailing sample) and slide the window by one.
#define DCT5_STEP(b)                                                             \
    {                                                                            \
        float b_ = (b);                                                          \
        zr[0] += b_;                                                             \
        for (int k = 1; k < NT; k++) {                                           \
            float ar = zr[k] + b_ * dr[k], ai = zi[k] + b_ * di[k];              \
            zr[k] = pr[k] * ar - pi[k] * ai;                                     \
            zi[k] = pr[k] * ai + pi[k] * ar;                                     \
        }                                                                        \
    }

// out(y) = sum_k G_k Re Z_k.
inline float dct5_emit(const float *G, const float *zr) {
    float o = G[0] * zr[0];
    for (int k = 1; k < NT; k++) o += G[k] * zr[k];
    return o;
}

// Class codes: CODE is uchar when every local class index (and the nodata
// value) fits in a byte, else ushort.
#ifndef CODE
#define CODE ushort
#endif

#ifdef WEIGHTED
#define VOTE_PARAMS , __global const ushort *votes, float inv_top
#define VOTE(row) ((float)vcol[(size_t)(row) * w] * inv_top)
#else
#define VOTE_PARAMS
#define VOTE(row) 1.0f
#endif

// Pass 1 for every class at once (global: [w rounded to 32, segments,
// classes], work-groups of 32 along x): PT[c][x][y] (y < oh, x < w, rows
// ohp apart) from the indicator of class c in the tile rows y..y+2R (the
// tile is w wide and oh + 2R high). The output is written transposed, so
// that pass 2 reads it coalesced: a work-group keeps 32 outputs of each of
// its 32 columns in local memory, then writes them as 32 runs along y.
// Every work-item of a group shares y0, so the loops and barriers are uniform.
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void dct5_cols_t(__global const CODE *cls, int w, int oh, int ohp, int seg,
                 __constant float *co, __global float *PT VOTE_PARAMS) {
    __local float buf[32][33];
    int x = get_global_id(0), lx = get_local_id(0), x0 = x - lx;
    int y0 = get_global_id(1) * seg;
    CODE cls_id = (CODE)get_global_id(2);
    int y1 = MF_MIN(y0 + seg, oh);
    bool live = x < w;
    __global const CODE *col = cls + (live ? x : 0);
#ifdef WEIGHTED
    __global const ushort *vcol = votes + (live ? x : 0);
#endif
    __global float *out = PT + (size_t)get_global_id(2) * w * ohp;
#define LOAD(row) (live && col[(size_t)(row) * w] == cls_id ? VOTE(row) : 0.0f)
    DCT5_STATE
    for (int t = 0; t < N; t++) DCT5_STEP(LOAD(y0 + t))
    for (int base = y0; base < y1; base += 32) {
        for (int i = 0; i < 32; i++) {
            int p = base + i;
            float o = 0.0f;
            if (p < y1) {
                if (p > y0) DCT5_STEP(LOAD(p + 2 * R) - LOAD(p - 1))
                o = dct5_emit(G, zr);
            }
            buf[lx][i] = o;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        int p = base + lx;
        if (p < y1) {
            for (int i = 0; i < 32 && x0 + i < w; i++)
                out[(size_t)(x0 + i) * ohp + p] = buf[i][lx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#undef LOAD
}

// Pass 2 for every class at once (global: [oh, segments, classes]):
// ST[c][x][y] (x < ow, rows ohp apart) along row y of PT[c] (whose row y is
// its column y: w = ow + 2R elements ohp apart), times the class weight
// cw[c] (the largest class weight is 1). Work-items run along y, so both
// the reads and the writes are coalesced.
__kernel void dct5_rows_t(__global const float *PT, int w, int oh, int ohp, int ow,
                          int seg, __constant float *co, __constant float *cw,
                          __global float *ST) {
    int row = get_global_id(0);
    int y0 = get_global_id(1) * seg;
    int c = get_global_id(2);
    if (row >= oh || y0 >= ow) return;
    int y1 = MF_MIN(y0 + seg, ow);
    __global const float *line = PT + (size_t)c * w * ohp + row;
    __global float *dst = ST + (size_t)c * ow * ohp + row;
    float weight = cw[c];
#define LOAD(col) line[(size_t)(col) * ohp]
    DCT5_STATE
    for (int t = 0; t < N; t++) DCT5_STEP(LOAD(y0 + t))
    dst[(size_t)y0 * ohp] = weight * dct5_emit(G, zr);
    for (int p = y0 + 1; p < y1; p++) {
        DCT5_STEP(LOAD(p + 2 * R) - LOAD(p - 1))
        dst[(size_t)p * ohp] = weight * dct5_emit(G, zr);
    }
#undef LOAD
}
