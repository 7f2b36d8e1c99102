// Median of the N×N window. Sizes 3 and 5: the selection network NETWORK
// (generated on the host from Batcher's merge sort, pruned to the middle
// wire; see src/filter/median.rs), prepended as a #define; branch-free,
// min/max only. Larger sizes (no NETWORK): the (N²/2)-th smallest value by
// a bitwise search over an order-preserving key, one counting pass over the
// window per key bit: KEY_BITS passes (8 for Byte, 16 for UInt16/Int16,
// 32 for Float32), no per-work-item array. Integer types (KEY_INT) use
// key = value − KEY_MIN; Float32 uses the bits of Rust's `f32::total_cmp`
// order, so the pick equals the host reference's sort exactly (−0 < +0, NaN).

#ifdef NETWORK

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

#else

#if !KEY_INT
// Rust's total order on f32 as an unsigned key: negatives flipped, positives
// with the sign bit set.
inline uint key_of(float v) {
    uint u = as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline float value_of(uint k) {
    return as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
#endif

__kernel void median(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    TILE_START(band)
    float c = tile[ly * TW + lx];
    // The largest key m with #(keys < m) ≤ N²/2 is the (N²/2)-th smallest.
    uint m = 0;
    for (int bit = KEY_BITS - 1; bit >= 0; bit--) {
        uint cand = m | (1u << bit);
#if KEY_INT
        float fc = (float)((int)cand + KEY_MIN);
#endif
        int below = 0;
        for (int ky = 0; ky < N; ky++)
            for (int kx = 0; kx < N; kx++) {
                float s = tile[(ly - R + ky) * TW + lx - R + kx];
                s = IS_ND(s) ? c : s;
#if KEY_INT
                below += s < fc;
#else
                below += key_of(s) < cand;
#endif
            }
        if (below <= N * N / 2) m = cand;
    }
#if KEY_INT
    float med = (float)((int)m + KEY_MIN);
#else
    float med = value_of(m);
#endif
    size_t i = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
    dst[i] = IS_ND(c) ? CAST_OUT(nd_out) : CAST_OUT(med);
}

#endif
