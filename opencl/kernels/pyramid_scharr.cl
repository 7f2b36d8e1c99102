// Scharr ∂x and ∂y over every level of a pyramid held on the device, one
// kernel per pyramid storage (src/filter/device/pyramid_store.rs):
//   scharr_lut      one buffer holding every level, found through a level
//                   table; one launch covers the whole pyramid;
//   scharr_level    one level of a buffer (a separate buffer per level);
//   scharr_image    one level held as an image2d_t.
// All three read a sample through one border mapping and sum in the host
// reference's order (src/filter/scharr.rs), so their outputs are identical.
//
// Build options: T (sample type), IMG_READ (read_imagef, read_imageui or
// read_imagei for T's image format), R (tap spacing), BORDER (0 replicate,
// 1 reflect101, 2 constant: FILL).
//
// Output of a level: ∂x (w·h floats) then ∂y, from float offset `out_off`.

#pragma OPENCL FP_CONTRACT OFF

inline float ld_buf(__global const T *p, int pitch, int w, int h, int x, int y) {
    int cx = map_coord(x, w), cy = map_coord(y, h);
    return (cx < 0 || cy < 0) ? FILL : (float)p[(size_t)cy * pitch + cx];
}

__constant sampler_t SMP = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;

inline float ld_img(read_only image2d_t img, int w, int h, int x, int y) {
    int cx = map_coord(x, w), cy = map_coord(y, h);
    return (cx < 0 || cy < 0) ? FILL : (float)IMG_READ(img, SMP, (int2)(cx, cy)).x;
}

// The reference's sum: taps 3, 10, 3 at rows (columns) −R, 0, +R.
#define SCHARR(LOAD, dst, out_off, w, h, x, y)                                 \
    {                                                                           \
        const float k[3] = {3.0f, 10.0f, 3.0f};                                 \
        float dx = 0.0f, dy = 0.0f;                                             \
        for (int i = 0; i < 3; i++) {                                           \
            int o = (i - 1) * R;                                                \
            dx = dx + k[i] * (LOAD(x + R, y + o) - LOAD(x - R, y + o));         \
            dy = dy + k[i] * (LOAD(x + o, y + R) - LOAD(x + o, y - R));         \
        }                                                                       \
        size_t p = (size_t)(out_off) + (size_t)(y) * (w) + (x);                 \
        dst[p] = dx;                                                            \
        dst[p + (size_t)(w) * (h)] = dy;                                        \
    }

// Level table: 6 ints per level (offset, width, height, pitch, first row in
// the launch's row space, output offset). Global size: (widest level, rows of
// all levels).
__kernel void scharr_lut(__global const T *pyr, __constant int *lut, int levels,
                         __global float *dst) {
    int x = get_global_id(0), row = get_global_id(1);
    int l = 0;
    while (l + 1 < levels && row >= lut[6 * (l + 1) + 4]) l++;
    __constant int *e = lut + 6 * l;
    int w = e[1], h = e[2], pitch = e[3], y = row - e[4];
    if (x >= w || y >= h) return;
    __global const T *src = pyr + e[0];
#define LOAD(xx, yy) ld_buf(src, pitch, w, h, xx, yy)
    SCHARR(LOAD, dst, e[5], w, h, x, y)
#undef LOAD
}

__kernel void scharr_level(__global const T *src, int w, int h, int pitch,
                           __global float *dst, int out_off) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h) return;
#define LOAD(xx, yy) ld_buf(src, pitch, w, h, xx, yy)
    SCHARR(LOAD, dst, out_off, w, h, x, y)
#undef LOAD
}

__kernel void scharr_image(read_only image2d_t img, int w, int h, __global float *dst,
                           int out_off) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h) return;
#define LOAD(xx, yy) ld_img(img, w, h, xx, yy)
    SCHARR(LOAD, dst, out_off, w, h, x, y)
#undef LOAD
}
