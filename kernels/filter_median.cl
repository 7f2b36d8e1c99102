// Median of the N×N window by the selection network NETWORK (generated on
// the host from Batcher's merge sort, pruned to the middle wire; see
// src/filter/median.rs), prepended as a #define. Branch-free: min/max only.

#define CE(a, b) { float t_ = fmin(v[a], v[b]); v[b] = fmax(v[a], v[b]); v[a] = t_; }
#define CMIN(a, b) v[a] = fmin(v[a], v[b]);
#define CMAX(a, b) v[b] = fmax(v[a], v[b]);

__kernel void median(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    TILE_START(band)
    float c = tile[ly * TW + lx];
    float v[N * N];
    for (int ky = 0; ky < N; ky++)
        for (int kx = 0; kx < N; kx++) {
            float s = tile[(ly - R + ky) * TW + lx - R + kx];
            v[ky * N + kx] = IS_ND(s) ? c : s;
        }
    NETWORK
    size_t i = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
    dst[i] = IS_ND(c) ? CAST_OUT(nd_out) : CAST_OUT(v[N * N / 2]);
}
