// Bilateral filter over a disc of taps. Closeness per tap lives in constant
// memory (`taps`: dx, dy, closeness); similarity comes from the table `sim`
// indexed by the integer difference when SIM_TABLE is 1, by the quantised
// difference when it is 2 (SIM_Q steps per unit, SIM_N entries), else from exp().
// Extra options: DIST (0 gray: band-wise; 1 luma; 2 color: Σ|δ|), NTAPS,
// SIM_TABLE, NBANDS (bands of the image; NB = NBANDS for luma and color).

#define LUMA(b0, i) (0.3f * tile[(b0) * TW * TH + (i)] + 0.59f * tile[((b0) + 1) * TW * TH + (i)] \
                     + 0.11f * tile[((b0) + 2) * TW * TH + (i)])

inline float similarity(__global const float *sim, float delta, float inv2) {
#if SIM_TABLE == 2
    // Quantised (denoise): position ⌊δ·SIM_Q + ½⌋, at most SIM_N − 1.
    return sim[(int)fmin(delta * SIM_Q + 0.5f, (float)(SIM_N - 1))];
#elif SIM_TABLE
    return sim[(int)delta];
#else
    return (float)exp(-(double)delta * (double)delta * (double)inv2);
#endif
}

__kernel void bilateral(__global const T *src, __global TO *dst, __constant float4 *taps,
                        __global const float *sim, float inv2, float nd_out, GEO_ARGS) {
    int band0 = NB == 1 ? (int)get_global_id(2) : 0;
    TILE_START(band0)
    int ci = ly * TW + lx;
    size_t plane = (size_t)out_w * out_h, p = (size_t)y * out_w + x;
#if DIST == 0
    float c = tile[ci];
    float sum = 0.0f, wsum = 0.0f;
    for (int t = 0; t < NTAPS; t++) {
        float4 tp = taps[t];
        float v = tile[(ly + (int)tp.y) * TW + lx + (int)tp.x];
        if (IS_ND(v)) v = c;
        float wt = tp.z * similarity(sim, fabs(v - c), inv2);
        sum = sum + v * wt;
        wsum = wsum + wt;
    }
    dst[band0 * plane + p] = IS_ND(c) ? CAST_OUT(nd_out) : CAST_OUT(sum / wsum);
#else
    bool cmiss = false;
    for (int b = 0; b < NB; b++) cmiss = cmiss || IS_ND(tile[b * TW * TH + ci]);
    float sums[NB];
    for (int b = 0; b < NB; b++) sums[b] = 0.0f;
    float wsum = 0.0f;
#if DIST == 1
    float lc = LUMA(0, ci);
#endif
    for (int t = 0; t < NTAPS; t++) {
        float4 tp = taps[t];
        int k = (ly + (int)tp.y) * TW + lx + (int)tp.x;
        bool miss = false;
        for (int b = 0; b < NB; b++) miss = miss || IS_ND(tile[b * TW * TH + k]);
        int kk = miss ? ci : k;
#if DIST == 1
        float delta = fabs(LUMA(0, kk) - lc);
#else
        float delta = 0.0f;
        for (int b = 0; b < NB; b++) delta = delta + fabs(tile[b * TW * TH + kk] - tile[b * TW * TH + ci]);
#endif
        float wt = tp.z * similarity(sim, delta, inv2);
        for (int b = 0; b < NB; b++) sums[b] = sums[b] + tile[b * TW * TH + kk] * wt;
        wsum = wsum + wt;
    }
    for (int b = 0; b < NB; b++)
        dst[b * plane + p] = cmiss ? CAST_OUT(nd_out) : CAST_OUT(sums[b] / wsum);
#endif
}
