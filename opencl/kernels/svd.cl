// svd: the separable passes of the svd method (src/method/separable/svd.rs and
// separable/mod.rs are the plain Rust twins). Ranks are fused: pass 1 writes one
// plane per rank in one launch, pass 2 sums every rank in registers, so no
// rank ever returns to the host. Work-items are pixels; neighbours in x read
// neighbouring addresses in both passes.
// Defines: N (kernel side), RANK (kept ranks), TAPS_GLOBAL (the factors,
// RANK * N floats each, are over the 64 KiB that every device's __constant
// space holds, e.g. a 385² disc at rank 190: read them from __global),
// WEIGHTED (--confidence: pass 1 takes the tile's quantised confidences
// `votes` and `inv_top`, 1 / the tile's largest confidence, and weighs each
// pixel of the class by votes * inv_top, as Plane::weighted_indicator does).

#ifdef TAPS_GLOBAL
#define TAPS __global const
#else
#define TAPS __constant
#endif

#ifdef WEIGHTED
#define VOTE_PARAMS , __global const ushort *votes, float inv_top
#else
#define VOTE_PARAMS
#endif

// Pass 1: P[r][y][x] = sum_t U[r][t] * [cls[y+t][x] == cls_id], y < oh, x < w
// (WEIGHTED: times votes[y+t][x] * inv_top).
__kernel void svd_cols(__global const ushort *cls, int w, int oh, ushort cls_id,
                       TAPS float *U, __global float *P VOTE_PARAMS) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= oh) return;
    float acc[RANK];
    for (int r = 0; r < RANK; r++) acc[r] = 0.0f;
    for (int t = 0; t < N; t++) {
        size_t i = (size_t)(y + t) * w + x;
        if (cls[i] == cls_id) {
#ifdef WEIGHTED
            float v = (float)votes[i] * inv_top;
            for (int r = 0; r < RANK; r++) acc[r] += U[r * N + t] * v;
#else
            for (int r = 0; r < RANK; r++) acc[r] += U[r * N + t];
#endif
        }
    }
    size_t plane = (size_t)w * oh;
    for (int r = 0; r < RANK; r++) P[r * plane + (size_t)y * w + x] = acc[r];
}

// Pass 2: S[y][x] = cw * sum_r sum_t V[r][t] * P[r][y][x+t], x < ow
// (S starts `soff` floats into the buffer: one plane per class).
__kernel void svd_rows(__global const float *P, int w, int oh, int ow,
                       TAPS float *V, float cw, __global float *S,
                       ulong soff) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= ow || y >= oh) return;
    size_t plane = (size_t)w * oh;
    float acc = 0.0f;
    for (int r = 0; r < RANK; r++) {
        __global const float *line = P + r * plane + (size_t)y * w + x;
        for (int t = 0; t < N; t++) acc += V[r * N + t] * line[t];
    }
    S[soff + (size_t)y * ow + x] = cw * acc;
}
