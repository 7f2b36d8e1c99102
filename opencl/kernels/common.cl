// Shared by every mapfilter kernel file (prepended by src/device/sources.rs).
// Indices that can exceed 2^31 (tile offsets of large rasters) use size_t or ulong.

#define MF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MF_MAX(a, b) ((a) > (b) ? (a) : (b))

#ifdef BORDER
// The image ops' border rule (build option BORDER: 0 replicate, 1 reflect101,
// 2 constant): the coordinate that `c` of a row or column of `len` pixels
// reads, or -1 for the constant fill.
inline int map_coord(int c, int len) {
#if BORDER == 0
    return clamp(c, 0, len - 1);
#elif BORDER == 1
    if (len == 1) return 0;
    while (c < 0 || c >= len) c = c < 0 ? -c : 2 * len - 2 - c;
    return c;
#else
    return (c < 0 || c >= len) ? -1 : c;
#endif
}
#endif
