// Pyramid steps (see src/filter/pyramid.rs): pyrdown (output (x, y) centred
// on input (2x, 2y), binomial [1 4 6 4 1] on both axes, weight 256) and
// pyrup (zero-inserted 2w × 2h grid, weight 64). One work-item per output
// sample, reading global memory directly (the windows of neighbouring
// outputs overlap by a stride of 2 or ½, which a shared tile does not fit).
// The sums follow the host's order operation for operation; integer types
// round as OpenCV's fixed-point cast, ⌊(s + half) / weight⌋.
// Geometry as filter_tile.cl: img_w × img_h is the op's input raster.

#define TAP(c, r) tap(src, plane, have_x, have_y, have_w, c, r, fill, centre)

inline float tap(__global const T *src, size_t plane, int have_x, int have_y, int have_w,
                 int c, int r, float fill, float centre) {
    float v = fill;
    if (c >= 0 && r >= 0) v = convert_float(src[plane + (size_t)(r - have_y) * have_w + (c - have_x)]);
    return IS_ND(v) ? centre : v;
}

// OpenCV's vector order: 6c + (4(b + d) + (a + e)) along rows,
// 4((b + d) + c) + ((a + e) + 2c) down the columns.
inline float down5(float a, float b, float c, float d, float e) {
    return c * 6.0f + ((b + d) * 4.0f + (a + e));
}
inline float down5_v(float a, float b, float c, float d, float e) {
    return ((b + d) + c) * 4.0f + ((a + e) + (c + c));
}

__kernel void pyrdown(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    int x = get_global_id(0), y = row0 + (int)get_global_id(1);
    if (x >= out_w || y >= out_h) return;
    int ox = out_x + x, oy = out_y + y;
    size_t plane = (size_t)band * have_w * have_h;
    float centre = convert_float(src[plane + (size_t)(2 * oy - have_y) * have_w + (2 * ox - have_x)]);
    size_t o = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
    if (IS_ND(centre)) {
        dst[o] = CAST_OUT(nd_out);
        return;
    }
    int cx[5], ry[5];
    for (int k = 0; k < 5; k++) {
        cx[k] = map_coord(2 * ox + k - 2, img_w);
        ry[k] = map_coord(2 * oy + k - 2, img_h);
    }
    float row[5];
    for (int k = 0; k < 5; k++) {
        int r = ry[k];
        row[k] = down5(TAP(cx[0], r), TAP(cx[1], r), TAP(cx[2], r), TAP(cx[3], r), TAP(cx[4], r));
    }
    float s = down5_v(row[0], row[1], row[2], row[3], row[4]);
#if TO_INT
    float v = floor((s + 128.0f) * (1.0f / 256.0f));
#else
    float v = s * (1.0f / 256.0f);
#endif
    dst[o] = CAST_OUT(v);
}

// The input sample standing for input-grid position i under pyrup: under
// reflect101 the zero-inserted grid of 2·len samples is mirrored (OpenCV).
inline int up_map(int i, int len) {
#if BORDER == 1
    int j = map_coord(2 * i, 2 * len);
    return j / 2;
#else
    return map_coord(i, len);
#endif
}

// Along one axis at output coordinate o from samples ⌊o/2⌋ − 1, ⌊o/2⌋, ⌊o/2⌋ + 1.
inline float up3(int o, float a, float b, float c) {
    return (o & 1) == 0 ? (b * 6.0f + a) + c : (b + c) * 4.0f;
}

__kernel void pyrup(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    int x = get_global_id(0), y = row0 + (int)get_global_id(1);
    if (x >= out_w || y >= out_h) return;
    int ox = out_x + x, oy = out_y + y;
    int ix = ox / 2, iy = oy / 2;
    size_t plane = (size_t)band * have_w * have_h;
    float centre = convert_float(src[plane + (size_t)(iy - have_y) * have_w + (ix - have_x)]);
    size_t o = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
    if (IS_ND(centre)) {
        dst[o] = CAST_OUT(nd_out);
        return;
    }
    int cx[3], ry[3];
    for (int k = 0; k < 3; k++) {
        cx[k] = up_map(ix + k - 1, img_w);
        ry[k] = up_map(iy + k - 1, img_h);
    }
    float row[3];
    for (int k = 0; k < 3; k++) {
        int r = ry[k];
        row[k] = up3(ox, TAP(cx[0], r), TAP(cx[1], r), TAP(cx[2], r));
    }
    float s = up3(oy, row[0], row[1], row[2]);
#if TO_INT
    float v = floor((s + 32.0f) * (1.0f / 64.0f));
#else
    float v = s * (1.0f / 64.0f);
#endif
    dst[o] = CAST_OUT(v);
}

// Laplacian pyramid levels (see src/filter/laplacian.rs). laplacian_level:
// g − pyrup(pyrdown(g)) cut to g's size, in the level type TO; each
// work-item computes the 3 × 3 coarse samples its pyrup reads, each as the
// host's pyrdown reference computes it (rounded to T), then pyrup's sums as
// above. img_w × img_h is g's raster; the coarse grid is ⌈w/2⌉ × ⌈h/2⌉.

// pyrdown at coarse pixel (dx, dy) (inside the coarse grid).
inline float down_at(__global const T *src, size_t plane, int have_x, int have_y, int have_w,
                     int img_w, int img_h, int dx, int dy, float fill) {
    float centre = convert_float(src[plane + (size_t)(2 * dy - have_y) * have_w + (2 * dx - have_x)]);
    if (IS_ND(centre)) return centre;
    int cx[5], ry[5];
    for (int k = 0; k < 5; k++) {
        cx[k] = map_coord(2 * dx + k - 2, img_w);
        ry[k] = map_coord(2 * dy + k - 2, img_h);
    }
    float row[5];
    for (int k = 0; k < 5; k++) {
        int r = ry[k];
        row[k] = down5(TAP(cx[0], r), TAP(cx[1], r), TAP(cx[2], r), TAP(cx[3], r), TAP(cx[4], r));
    }
    float s = down5_v(row[0], row[1], row[2], row[3], row[4]);
#if T_INT
    return floor((s + 128.0f) * (1.0f / 256.0f));
#else
    return s * (1.0f / 256.0f);
#endif
}

__kernel void laplacian_level(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    int x = get_global_id(0), y = row0 + (int)get_global_id(1);
    if (x >= out_w || y >= out_h) return;
    int ox = out_x + x, oy = out_y + y;
    size_t plane = (size_t)band * have_w * have_h;
    size_t o = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
    float v = convert_float(src[plane + (size_t)(oy - have_y) * have_w + (ox - have_x)]);
    int sw = (img_w + 1) / 2, sh = (img_h + 1) / 2;
    int ix = ox / 2, iy = oy / 2;
    float dc = down_at(src, plane, have_x, have_y, have_w, img_w, img_h, ix, iy, fill);
    if (IS_ND(v) || IS_ND(dc)) {
        dst[o] = CAST_OUT(nd_out);
        return;
    }
    int cx[3], ry[3];
    for (int k = 0; k < 3; k++) {
        cx[k] = up_map(ix + k - 1, sw);
        ry[k] = up_map(iy + k - 1, sh);
    }
    float row[3];
    for (int j = 0; j < 3; j++) {
        float d[3];
        for (int k = 0; k < 3; k++) {
            float s = fill;
            if (cx[k] >= 0 && ry[j] >= 0)
                s = down_at(src, plane, have_x, have_y, have_w, img_w, img_h, cx[k], ry[j], fill);
            d[k] = IS_ND(s) ? dc : s;
        }
        row[j] = up3(ox, d[0], d[1], d[2]);
    }
    float s = up3(oy, row[0], row[1], row[2]);
#if T_INT
    float u = floor((s + 32.0f) * (1.0f / 64.0f));
#else
    float u = s * (1.0f / 64.0f);
#endif
    dst[o] = CAST_OUT(v - u);
}

// The pyramid's top: g in the level type, nodata to the level's nodata.
__kernel void laplacian_top(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    int x = get_global_id(0), y = row0 + (int)get_global_id(1);
    if (x >= out_w || y >= out_h) return;
    size_t plane = (size_t)band * have_w * have_h;
    float v = convert_float(src[plane + (size_t)(out_y + y - have_y) * have_w + (out_x + x - have_x)]);
    dst[(size_t)band * out_w * out_h + (size_t)y * out_w + x] = IS_ND(v) ? CAST_OUT(nd_out) : CAST_OUT(v);
}

// Denoising steps (see src/filter/denoise.rs), in Float32: out = a − pyrup(b)
// (SUB 1, a detail level) or a + pyrup(b) (SUB 0, a reconstruction step),
// pyrup cut to a's raster without rounding. `a` holds window (a_x, a_y,
// a_w × a_h) of a's raster, `b` window (b_x, b_y, b_w × b_h) of the coarse
// raster, b_img_w × b_img_h; the output covers window (out_x, out_y,
// out_w × out_h). Bands one after another in every buffer.
#ifdef SUB
__kernel void add_up(__global const float *a, __global const float *b, __global TO *dst,
                     int a_x, int a_y, int a_w, int a_h, int b_x, int b_y, int b_w, int b_h,
                     int b_img_w, int b_img_h, int out_x, int out_y, int out_w, int out_h,
                     float fill) {
    int band = get_global_id(2);
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= out_w || y >= out_h) return;
    int ox = out_x + x, oy = out_y + y;
    float v = a[(size_t)band * a_w * a_h + (size_t)(oy - a_y) * a_w + (ox - a_x)];
    size_t bp = (size_t)band * b_w * b_h;
    int ix = ox / 2, iy = oy / 2;
    int cx[3], ry[3];
    for (int k = 0; k < 3; k++) {
        cx[k] = up_map(ix + k - 1, b_img_w);
        ry[k] = up_map(iy + k - 1, b_img_h);
    }
    float row[3];
    for (int j = 0; j < 3; j++) {
        float s[3];
        for (int k = 0; k < 3; k++)
            s[k] = (cx[k] >= 0 && ry[j] >= 0)
                       ? b[bp + (size_t)(ry[j] - b_y) * b_w + (cx[k] - b_x)]
                       : fill;
        row[j] = up3(ox, s[0], s[1], s[2]);
    }
    float u = up3(oy, row[0], row[1], row[2]) * (1.0f / 64.0f);
    size_t o = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
#if SUB
    dst[o] = CAST_OUT(v - u);
#else
    dst[o] = CAST_OUT(v + u);
#endif
}
#endif
