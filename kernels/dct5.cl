// dct5: one pass of the constant-time DCT-5 Gaussian (src/method/dct5.rs is
// the plain Rust twin; DESIGN.md §3 gives the formulas). A work-item runs one
// explicitly seeded segment of SEG outputs along a line:
//   F_0(x+1) = F_0(x) + f[x+R+1] - f[x-R]
//   F_k(x+1) = 2cos(phi k) F_k(x) - F_k(x-1) + cos(phi k R)(f[x+R+1] - f[x+R] - f[x-R] + f[x-R-1])
//   out(x)   = sum_k G_k F_k(x)
// Defines: R (radius), NT (terms K+1), SEG (outputs per segment).
// A segment's position along its line is `p`; y0..y1 are its outputs.
// dct5_cols_t runs down the columns of the class tile (the indicator of
// each class), dct5_rows_t along the rows of the pass-1 planes, which are
// stored transposed so that both passes read and write coalesced.

#define N (2 * R + 1)

// cosv[j] = cos(2 pi j / N); index of cos(phi k u) for u = t - R.
inline int cos_index(int k, int t) {
    int j = (k * (t - R)) % N;
    return j < 0 ? j + N : j;
}

#define DCT5_LINE(LOAD)                                                          \
    float cur[NT], prev[NT];                                                     \
    for (int k = 0; k < NT; k++) { cur[k] = 0.0f; prev[k] = 0.0f; }              \
    for (int t = 0; t < N; t++) {                                                \
        float f = LOAD(y0 + t);                                                  \
        for (int k = 0; k < NT; k++) cur[k] += cosv[cos_index(k, t)] * f;        \
    }                                                                            \
    EMIT(y0, cur);                                                               \
    if (y1 - y0 > 1) {                                                           \
        for (int k = 0; k < NT; k++) { prev[k] = cur[k]; cur[k] = 0.0f; }        \
        for (int t = 0; t < N; t++) {                                            \
            float f = LOAD(y0 + 1 + t);                                          \
            for (int k = 0; k < NT; k++) cur[k] += cosv[cos_index(k, t)] * f;    \
        }                                                                        \
        EMIT(y0 + 1, cur);                                                       \
    }                                                                            \
    for (int p = y0 + 1; p < y1 - 1; p++) {                                      \
        float lead = LOAD(p + 2 * R + 1), trail = LOAD(p);                       \
        float b0 = lead - trail;                                                 \
        float b = b0 + LOAD(p - 1) - LOAD(p + 2 * R);                            \
        cur[0] += b0;                                                            \
        for (int k = 1; k < NT; k++) {                                           \
            float next = 2.0f * cosv[k % N] * cur[k] - prev[k]                   \
                         + cosv[(k * R) % N] * b;                                \
            prev[k] = cur[k];                                                    \
            cur[k] = next;                                                       \
        }                                                                        \
        EMIT(p + 1, cur);                                                        \
    }

// Class codes: CODE is uchar when every local class index (and the nodata
// value) fits in a byte, else ushort.
#ifndef CODE
#define CODE ushort
#endif

// Pass 1 for every class at once (global: [w rounded to 32, segments,
// classes], work-groups of 32 along x): PT[c][x][y] (y < oh, x < w, rows
// ohp apart) from the indicator of class c in the tile rows y..y+2R (the
// tile is w wide and oh + 2R high). The output is written transposed, so
// that pass 2 reads it coalesced: a work-group keeps 32 outputs of each of
// its 32 columns in local memory, then writes them as 32 runs along y.
// SEG is a multiple of 32.
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void dct5_cols_t(__global const CODE *cls, int w, int oh, int ohp,
                 __constant float *G, __constant float *cosv,
                 __global float *PT) {
    __local float buf[32][33];
    int x = get_global_id(0), lx = get_local_id(0), x0 = x - lx;
    int y0 = get_global_id(1) * SEG;
    CODE cls_id = (CODE)get_global_id(2);
    int y1 = MF_MIN(y0 + SEG, oh);
    bool live = x < w;
    __global float *out = PT + (size_t)get_global_id(2) * w * ohp;
#define LOAD(row) (live && cls[(size_t)(row) * w + x] == cls_id ? 1.0f : 0.0f)
    float cur[NT], prev[NT];
    for (int k = 0; k < NT; k++) { cur[k] = 0.0f; prev[k] = 0.0f; }
    for (int base = y0; base < y0 + SEG; base += 32) {
        for (int i = 0; i < 32; i++) {
            int p = base + i;
            float o = 0.0f;
            if (p < y1) {
                if (p <= y0 + 1) {
                    for (int k = 0; k < NT; k++) { prev[k] = cur[k]; cur[k] = 0.0f; }
                    for (int t = 0; t < N; t++) {
                        float f = LOAD(p + t);
                        for (int k = 0; k < NT; k++) cur[k] += cosv[cos_index(k, t)] * f;
                    }
                } else {
                    float lead = LOAD(p + 2 * R), trail = LOAD(p - 1);
                    float b0 = lead - trail;
                    float b = b0 + LOAD(p - 2) - LOAD(p + 2 * R - 1);
                    cur[0] += b0;
                    for (int k = 1; k < NT; k++) {
                        float next = 2.0f * cosv[k % N] * cur[k] - prev[k]
                                     + cosv[(k * R) % N] * b;
                        prev[k] = cur[k];
                        cur[k] = next;
                    }
                }
                for (int k = 0; k < NT; k++) o += G[k] * cur[k];
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
                          __constant float *G, __constant float *cosv,
                          __constant float *cw, __global float *ST) {
    int row = get_global_id(0);
    int y0 = get_global_id(1) * SEG;
    int c = get_global_id(2);
    if (row >= oh || y0 >= ow) return;
    int y1 = MF_MIN(y0 + SEG, ow);
    __global const float *line = PT + (size_t)c * w * ohp + row;
    __global float *dst = ST + (size_t)c * ow * ohp + row;
    float weight = cw[c];
#define LOAD(col) line[(size_t)(col) * ohp]
#define EMIT(col, F)                                                             \
    {                                                                            \
        float o = 0.0f;                                                          \
        for (int k = 0; k < NT; k++) o += G[k] * F[k];                           \
        dst[(size_t)(col) * ohp] = weight * o;                                   \
    }
    DCT5_LINE(LOAD)
#undef LOAD
#undef EMIT
}
