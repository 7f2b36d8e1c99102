// Shared by every mapfilter kernel file (prepended by src/device/sources.rs).
// Indices that can exceed 2^31 (tile offsets of large rasters) use size_t or ulong.

#define MF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MF_MAX(a, b) ((a) > (b) ? (a) : (b))
