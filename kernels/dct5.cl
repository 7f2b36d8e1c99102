// dct5: one pass of the constant-time DCT-5 Gaussian (src/method/dct5.rs is
// the plain Rust twin; DESIGN.md §3 gives the formulas). A work-item runs one
// explicitly seeded segment of SEG outputs along a line:
//   F_0(x+1) = F_0(x) + f[x+R+1] - f[x-R]
//   F_k(x+1) = 2cos(phi k) F_k(x) - F_k(x-1) + cos(phi k R)(f[x+R+1] - f[x+R] - f[x-R] + f[x-R-1])
//   out(x)   = sum_k G_k F_k(x)
// Defines: R (radius), NT (terms K+1), SEG (outputs per segment).
// A segment's position along its line is `p`; y0..y1 are its outputs.
// dct5_cols runs down the columns of the class tile (indicator of one class),
// dct5_rows along the rows of the pass-1 plane; both read their line with a
// stride, so one macro writes both.

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

// Pass 1: P[y][x] (y < oh, x < w) from the indicator of class `cls_id` in
// the tile rows y..y+2R (the tile is w wide and oh + 2R high).
__kernel void dct5_cols(__global const ushort *cls, int w, int oh, ushort cls_id,
                        __constant float *G, __constant float *cosv,
                        __global float *P) {
    int x = get_global_id(0);
    int y0 = get_global_id(1) * SEG;
    if (x >= w || y0 >= oh) return;
    int y1 = MF_MIN(y0 + SEG, oh);
#define LOAD(row) (cls[(size_t)(row) * w + x] == cls_id ? 1.0f : 0.0f)
#define EMIT(row, F)                                                             \
    {                                                                            \
        float o = 0.0f;                                                          \
        for (int k = 0; k < NT; k++) o += G[k] * F[k];                           \
        P[(size_t)(row) * w + x] = o;                                            \
    }
    DCT5_LINE(LOAD)
#undef LOAD
#undef EMIT
}

// Pass 2: S[y][x] (x < ow) along row y of P (w = ow + 2R wide), times the
// class weight `cw` (the largest class weight is 1); S starts `soff` floats
// into the buffer (one plane per class).
__kernel void dct5_rows(__global const float *P, int w, int oh, int ow,
                        __constant float *G, __constant float *cosv, float cw,
                        __global float *S, ulong soff) {
    int row = get_global_id(0);
    int y0 = get_global_id(1) * SEG;
    if (row >= oh || y0 >= ow) return;
    int y1 = MF_MIN(y0 + SEG, ow);
    __global const float *line = P + (size_t)row * w;
#define LOAD(col) line[col]
#define EMIT(col, F)                                                             \
    {                                                                            \
        float o = 0.0f;                                                          \
        for (int k = 0; k < NT; k++) o += G[k] * F[k];                           \
        S[soff + (size_t)row * ow + (col)] = cw * o;                                      \
    }
    DCT5_LINE(LOAD)
#undef LOAD
#undef EMIT
}
