// Convolution (correlation) with an N×N kernel: out = SCALE · Σ w·v, summed
// in row-major order without contraction, exactly as the host reference.
// Extra options: N (side). Weights in constant memory.

__kernel void conv(__global const T *src, __global TO *dst, __constant float *weights,
                   float scale, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    TILE_START(band)
    float c = tile[ly * TW + lx];
    float acc = 0.0f;
    for (int ky = 0; ky < N; ky++)
        for (int kx = 0; kx < N; kx++) {
            float v = tile[(ly - R + ky) * TW + lx - R + kx];
            if (IS_ND(v)) v = c;
            acc = acc + v * weights[ky * N + kx];
        }
    float o = acc * scale;
    size_t i = (size_t)band * out_w * out_h + (size_t)y * out_w + x;
    dst[i] = IS_ND(c) ? CAST_OUT(nd_out) : CAST_OUT(o);
}
