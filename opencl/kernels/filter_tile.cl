// Shared by the image-filter kernels (filter_*.cl): border mapping, loading a
// work-group's tile plus halo into local memory, nodata tests, output casts.
//
// Build options: T (sample type in), TO (sample type out), R (op radius),
// LX, LY (work-group size), BORDER (0 replicate, 1 reflect101, 2 constant or
// nodata: the fill value), HAS_ND (1 when the input has a nodata value ND),
// NB (bands held in local memory: 1 for band-wise ops, all for joint ops),
// TO_INT (1 when TO is an integer type).
//
// Geometry (image coordinates): the input buffer holds window `have` of every
// band (band-major); the output covers window `out`. A tile pixel outside the
// raster is mapped like OpenCV's borderInterpolate, or takes `fill`. A launch
// may cover only output rows from `row0` on (a strip; its global size gives
// the strip's height): the host starts strips as their input rows arrive.

#pragma OPENCL FP_CONTRACT OFF

#define TW (LX + 2 * R)
#define TH (LY + 2 * R)

#define GEO_ARGS int have_x, int have_y, int have_w, int have_h, int img_w, int img_h, \
                 int out_x, int out_y, int out_w, int out_h, float fill, int row0

#if HAS_ND
#define IS_ND(v) ((v) == (float)ND || (isnan((float)ND) && isnan(v)))
#else
#define IS_ND(v) 0
#endif

// Loads bands [band0, band0 + NB) of this group's tile into `tile` (NB planes of TW*TH floats).
inline void load_tile(__global const T *src, __local float *tile, int band0,
                      int have_x, int have_y, int have_w, int have_h, int img_w, int img_h,
                      int out_x, int out_y, float fill, int row0) {
    int gx0 = out_x + (int)get_group_id(0) * LX - R;
    int gy0 = out_y + row0 + (int)get_group_id(1) * LY - R;
    size_t plane = (size_t)have_w * have_h;
    for (int i = get_local_id(1) * LX + get_local_id(0); i < TW * TH; i += LX * LY) {
        int tx = i % TW, ty = i / TW;
        int ix = map_coord(gx0 + tx, img_w), iy = map_coord(gy0 + ty, img_h);
        // Pixels past the output (work-group overhang) are clamped into `have`: never used.
        int lx = clamp(ix - have_x, 0, have_w - 1), ly = clamp(iy - have_y, 0, have_h - 1);
        for (int b = 0; b < NB; b++) {
            float v = fill;
            if (ix >= 0 && iy >= 0) v = convert_float(src[(band0 + b) * plane + (size_t)ly * have_w + lx]);
            tile[b * TW * TH + i] = v;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

#if TO_INT
#define CAST_OUT(v) CAT(convert_, CAT(TO, _sat_rte))(v)
#else
#define CAST_OUT(v) ((TO)(v))
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// The start of every tile kernel (in a kernel taking `src` and GEO_ARGS):
// loads bands [BAND0, BAND0 + NB) of the group's tile into `tile`, sets the
// output pixel (x, y) (y counts from the output's first row) and its place in the tile (lx, ly), and ends the
// work-items past the output.
#define TILE_START(BAND0)                                                   \
    __local float tile[NB * TW * TH];                                       \
    load_tile(src, tile, BAND0, have_x, have_y, have_w, have_h, img_w, img_h, \
              out_x, out_y, fill, row0);                                    \
    int x = get_global_id(0), y = row0 + (int)get_global_id(1);             \
    int lx = get_local_id(0) + R, ly = get_local_id(1) + R;                 \
    if (x >= out_w || y >= out_h) return;
