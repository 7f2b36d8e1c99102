// Colour conversions of bands 0, 1, 2 read as R, G, B (see src/filter/color.rs):
// COLOR 0 gray (one band out), 1 ycbcr (Y, Cb, Cr), 2 hsv (H, S, V).
// Integer types use OpenCV's fixed-point coefficients in 64-bit integers
// (DELTA: the chroma offset, 128 or 32768); Float32 uses fma in the host's
// order. `tables`: OpenCV's 8-bit HSV division tables, S then H (256 each).
// One work-item per pixel; a pixel is nodata where any of its NB bands is.

__kernel void color(__global const T *src, __global TO *dst, __constant float *tables,
                    float nd_out, GEO_ARGS) {
    int x = get_global_id(0), y = row0 + (int)get_global_id(1);
    if (x >= out_w || y >= out_h) return;
    size_t plane = (size_t)have_w * have_h;
    size_t at = (size_t)(out_y + y - have_y) * have_w + (out_x + x - have_x);
    size_t oplane = (size_t)out_w * out_h, o = (size_t)y * out_w + x;
    bool missing = false;
    for (int b = 0; b < NB; b++) missing = missing || IS_ND(convert_float(src[b * plane + at]));
#if COLOR == 0
    const int nout = 1;
#else
    const int nout = 3;
#endif
    if (missing) {
        for (int b = 0; b < nout; b++) dst[b * oplane + o] = CAST_OUT(nd_out);
        return;
    }
    float out[3];
#if TO_INT
    long r = (long)src[at], g = (long)src[plane + at], b = (long)src[2 * plane + at];
#if COLOR == 0
    out[0] = (float)((r * 9798 + g * 19235 + b * 3735 + (1 << 14)) >> 15);
#elif COLOR == 1
    long yy = (r * 4899 + g * 9617 + b * 1868 + (1 << 13)) >> 14;
    long cr = ((r - yy) * 11682 + ((long)DELTA << 14) + (1 << 13)) >> 14;
    long cb = ((b - yy) * 9241 + ((long)DELTA << 14) + (1 << 13)) >> 14;
    out[0] = (float)yy; out[1] = (float)cb; out[2] = (float)cr;
#else
    long v = max(max(r, g), b);
    long diff = v - min(min(r, g), b);
    long s = (diff * (long)tables[v] + (1 << 11)) >> 12;
    long h = v == r ? g - b : (v == g ? b - r + 2 * diff : r - g + 4 * diff);
    h = (h * (long)tables[256 + diff] + (1 << 11)) >> 12;
    if (h < 0) h += 180;
    out[0] = (float)h; out[1] = (float)s; out[2] = (float)v;
#endif
#else
    float r = convert_float(src[at]), g = convert_float(src[plane + at]), b = convert_float(src[2 * plane + at]);
#if COLOR == 0
    out[0] = fma(b, 0.114f, fma(g, 0.587f, r * 0.299f));
#elif COLOR == 1
    float yy = fma(b, 0.114f, fma(g, 0.587f, r * 0.299f));
    out[0] = yy;
    out[1] = fma(b - yy, 0.564f, 0.5f);
    out[2] = fma(r - yy, 0.713f, 0.5f);
#else
    float v = fmax(fmax(r, g), b);
    float vmin = fmin(fmin(r, g), b);
    float diff = v - vmin;
    float s = diff / (fabs(v) + FLT_EPSILON);
    float k = 60.0f / (diff + FLT_EPSILON);
    float h = v == r ? (g - b) * k : (v == g ? (b - r) * k + 120.0f : (r - g) * k + 240.0f);
    if (h < 0.0f) h += 360.0f;
    out[0] = h; out[1] = s; out[2] = v;
#endif
#endif
    for (int c = 0; c < nout; c++) dst[c * oplane + o] = CAST_OUT(out[c]);
}
