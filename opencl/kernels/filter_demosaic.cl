// Bayer demosaicing (see src/filter/demosaic.rs, `interpolate`, which this
// mirrors): one mosaic band in, R, G, B out. P00 P01 P10 P11: the colour
// (0 R, 1 G, 2 B) at (y % 2, x % 2); METHOD 0 bilinear, 1 edge-aware
// (OpenCV's rules, edge rows and columns copied from their inner
// neighbours), 2 Malvar-He-Cutler 5×5 (reflect101 border). 64-bit integer
// sums. One work-item per output pixel, reading global memory directly.

inline int bayer_at(int x, int y) {
    int i = ((y & 1) << 1) | (x & 1);
    return i == 0 ? P00 : (i == 1 ? P01 : (i == 2 ? P10 : P11));
}

inline int refl101(int c, int len) {
    if (len == 1) return 0;
    while (c < 0 || c >= len) c = c < 0 ? -c : 2 * len - 2 - c;
    return c;
}

#define S(ox, oy) sample(src, have_x, have_y, have_w, img_w, img_h, cx + (ox), cy + (oy), centre)

inline long sample(__global const T *src, int have_x, int have_y, int have_w, int img_w, int img_h,
                   int x, int y, float centre) {
    float v = convert_float(src[(size_t)(refl101(y, img_h) - have_y) * have_w + (refl101(x, img_w) - have_x)]);
    return (long)(IS_ND(v) ? centre : v);
}

__kernel void demosaic(__global const T *src, __global TO *dst, float nd_out, GEO_ARGS) {
    int gx = get_global_id(0), gy = row0 + (int)get_global_id(1);
    if (gx >= out_w || gy >= out_h) return;
    int x = out_x + gx, y = out_y + gy;
    size_t plane = (size_t)out_w * out_h, o = (size_t)gy * out_w + gx;
#if METHOD != 2
    if (img_w < 3 || img_h < 3) {
        for (int b = 0; b < 3; b++) dst[b * plane + o] = (TO)0;
        return;
    }
    int cx = clamp(x, 1, img_w - 2), cy = clamp(y, 1, img_h - 2);
#else
    int cx = x, cy = y;
#endif
    float centre = convert_float(src[(size_t)(refl101(cy, img_h) - have_y) * have_w + (refl101(cx, img_w) - have_x)]);
    if (IS_ND(centre)) {
        for (int b = 0; b < 3; b++) dst[b * plane + o] = CAST_OUT(nd_out);
        return;
    }
    int c = bayer_at(cx, cy);
    long n = S(0, -1), so = S(0, 1), we = S(-1, 0), ea = S(1, 0);
    long diag = S(-1, -1) + S(1, -1) + S(-1, 1) + S(1, 1);
    long rgb[3] = {0, 0, 0};
    rgb[c] = S(0, 0);
#if METHOD == 2
    long c0 = S(0, 0);
    long n2 = S(0, -2), s2 = S(0, 2), w2 = S(-2, 0), e2 = S(2, 0);
    if (c == 1) {
        int hc = bayer_at(cx + 1, cy);
        rgb[hc] = (10 * c0 + 8 * (we + ea) - 2 * (w2 + e2) - 2 * diag + (n2 + s2) + 8) >> 4;
        rgb[2 - hc] = (10 * c0 + 8 * (n + so) - 2 * (n2 + s2) - 2 * diag + (w2 + e2) + 8) >> 4;
    } else {
        rgb[1] = (8 * c0 + 4 * (n + so + we + ea) - 2 * (n2 + s2 + w2 + e2) + 8) >> 4;
        rgb[2 - c] = (12 * c0 + 4 * diag - 3 * (n2 + s2 + w2 + e2) + 8) >> 4;
    }
#else
    if (c == 1) {
        int hc = bayer_at(cx + 1, cy);
        rgb[hc] = (we + ea + 1) >> 1;
        rgb[2 - hc] = (n + so + 1) >> 1;
    } else {
#if METHOD == 1
        rgb[1] = (abs(we - ea) > abs(so - n) ? n + so + 1 : we + ea + 1) >> 1;
#else
        rgb[1] = (n + so + we + ea + 2) >> 2;
#endif
        rgb[2 - c] = (diag + 2) >> 2;
    }
#endif
    for (int b = 0; b < 3; b++) dst[b * plane + o] = CAST_OUT((float)rgb[b]);
}
