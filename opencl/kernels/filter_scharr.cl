// Scharr ∂x and ∂y from one tile read: taps 3, 10, 3 at spacing R (R = 1 is
// the classic 3×3). Band b writes output bands 2b (∂x) and 2b+1 (∂y), float.

__kernel void scharr(__global const T *src, __global float *dst, float nd_out, GEO_ARGS) {
    int band = get_global_id(2);
    TILE_START(band)
    float c = tile[ly * TW + lx];
    const float w[3] = {3.0f, 10.0f, 3.0f};
    float dx = 0.0f, dy = 0.0f;
    for (int i = 0; i < 3; i++) {
        int o = (i - 1) * R;
        float r_ = tile[(ly + o) * TW + lx + R], l_ = tile[(ly + o) * TW + lx - R];
        float b_ = tile[(ly + R) * TW + lx + o], t_ = tile[(ly - R) * TW + lx + o];
        if (IS_ND(r_)) r_ = c;
        if (IS_ND(l_)) l_ = c;
        if (IS_ND(b_)) b_ = c;
        if (IS_ND(t_)) t_ = c;
        dx = dx + w[i] * (r_ - l_);
        dy = dy + w[i] * (b_ - t_);
    }
    size_t plane = (size_t)out_w * out_h, p = (size_t)y * out_w + x;
    dst[2 * band * plane + p] = IS_ND(c) ? nd_out : dx;
    dst[(2 * band + 1) * plane + p] = IS_ND(c) ? nd_out : dy;
}
