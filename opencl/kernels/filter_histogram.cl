// Per-band histogram of n samples: bin = floor((v − lo)·scale), clamped to
// the last bin; values below lo or above hi (and NaN) count as outside, nodata
// apart. Work-groups count in local memory, then add to the global counts
// (BINS + 2 uints: bins, outside, nodata).

#pragma OPENCL FP_CONTRACT OFF

__kernel void histogram(__global const T *src, ulong n, float lo, float hi, float scale,
                        __global uint *counts) {
    __local uint local_counts[BINS + 2];
    for (int i = get_local_id(0); i < BINS + 2; i += get_local_size(0)) local_counts[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        float v = convert_float(src[i]);
        int slot;
#if HAS_ND
        if (v == (float)ND || (isnan((float)ND) && isnan(v))) slot = BINS + 1; else
#endif
        {
            float f = floor((v - lo) * scale);
            slot = (isnan(f) || f < 0.0f || v > hi) ? BINS : (int)min(f, (float)(BINS - 1));
        }
        atomic_inc(&local_counts[slot]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = get_local_id(0); i < BINS + 2; i += get_local_size(0))
        if (local_counts[i]) atomic_add(&counts[i], local_counts[i]);
}
