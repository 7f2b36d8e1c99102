// A scale space's Gaussian blur of a whole level on the device, as the host's
// fast separable paths compute it (src/filter/conv.rs), so a level built here
// holds the bits `filter --device host` writes:
//   FIXED 1 (Byte): OpenCV's 16-bit fixed point (Fixed256): 1-D weights in
//     units of 1/256, exact integer row sums, exact column sums from 2^15,
//     then >> 16;
//   FIXED 0 (other types): two f32 passes (F32Sep), each tap added in kernel
//     order from 0, then times `scale`, rounded and saturated to TO.
// gauss_rows makes the row sums of every row of the level (w × h), gauss_cols
// the output; a row beyond the edge is the border's row (mapped), or under a
// constant border a row of `fill`, whose row sum gauss_cols makes itself.
// After filter_tile.cl (map_coord, CAST_OUT); extra options: N (side, 2R + 1),
// FIXED. RW is the row-sum type (uint for FIXED, float otherwise).

#if FIXED
#define RW uint
#define WT uint
#else
#define RW float
#define WT float
#endif

// The row sum of input row `r` (or of a row of `fill` where r < 0) at column x.
inline RW row_sum(__global const T *src, int w, int r, int x, __constant WT *row, float fill) {
    RW acc = 0;
    for (int k = 0; k < N; k++) {
        int c = map_coord(x + k - R, w);
#if FIXED
        uint v = (c < 0 || r < 0) ? (uint)fill : (uint)src[(size_t)r * w + c];
#else
        float v = (c < 0 || r < 0) ? fill : convert_float(src[(size_t)r * w + c]);
#endif
        acc = acc + row[k] * v;
    }
    return acc;
}

__kernel void gauss_rows(__global const T *src, __global RW *mid, int w, int h,
                         __constant WT *row, float fill) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h) return;
    mid[(size_t)y * w + x] = row_sum(src, w, y, x, row, fill);
}

__kernel void gauss_cols(__global const T *src, __global const RW *mid, __global TO *dst,
                         int w, int h, __constant WT *row, __constant WT *col, float scale,
                         float fill) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h) return;
#if FIXED
    uint acc = 1u << 15;
#else
    float acc = 0.0f;
#endif
    for (int k = 0; k < N; k++) {
        int r = map_coord(y + k - R, h);
        RW s = r < 0 ? row_sum(src, w, -1, x, row, fill) : mid[(size_t)r * w + x];
        acc = acc + col[k] * s;
    }
#if FIXED
    dst[(size_t)y * w + x] = (TO)(acc >> 16);
#else
    dst[(size_t)y * w + x] = CAST_OUT(acc * scale);
#endif
}
