// Oil paint: the most populated of LEVELS intensity bins in the (2R+1)²
// window (ties: the lower bin), output the mean colour of its pixels.
// Integer types (INT_BINS): bin = (100·I − 100·LO)·LEVELS / (100·SPAN) with
// I·100 = 30R+59G+11B (or 100·v), mean rounded half to even exactly; Float32:
// bin = floor((I − lo)/(hi − lo)·LEVELS). NB = all bands.

inline int bin_of(__local const float *tile, int k, float flo, float fhi) {
#if INT_BINS
#if NB >= 3
    long i100 = 30 * (long)tile[k] + 59 * (long)tile[TW * TH + k] + 11 * (long)tile[2 * TW * TH + k];
#else
    long i100 = 100 * (long)tile[k];
#endif
    return (int)((i100 - 100 * (long)LO) * LEVELS / (100 * (long)SPAN));
#else
#if NB >= 3
    float i = 0.3f * tile[k] + 0.59f * tile[TW * TH + k] + 0.11f * tile[2 * TW * TH + k];
#else
    float i = tile[k];
#endif
    float f = floor((i - flo) / (fhi - flo) * (float)LEVELS);
    return (int)clamp(f, 0.0f, (float)(LEVELS - 1));
#endif
}

inline long round_div(long sum, long count) {
    long q = sum / count, r = sum % count;
    if (r < 0) { q -= 1; r += count; }
    if (2 * r > count) return q + 1;
    if (2 * r == count) return q + (q & 1);
    return q;
}

__kernel void oil(__global const T *src, __global TO *dst, float flo, float fhi, float nd_out, GEO_ARGS) {
    TILE_START(0)
    int ci = ly * TW + lx;
    size_t plane = (size_t)out_w * out_h, p = (size_t)y * out_w + x;
    bool cmiss = false;
    for (int b = 0; b < NB; b++) cmiss = cmiss || IS_ND(tile[b * TW * TH + ci]);
    if (cmiss) {
        for (int b = 0; b < NB; b++) dst[b * plane + p] = CAST_OUT(nd_out);
        return;
    }
    ushort count[LEVELS];
    for (int l = 0; l < LEVELS; l++) count[l] = 0;
    for (int ky = -R; ky <= R; ky++)
        for (int kx = -R; kx <= R; kx++) {
            int k = (ly + ky) * TW + lx + kx;
            bool miss = false;
            for (int b = 0; b < NB; b++) miss = miss || IS_ND(tile[b * TW * TH + k]);
            count[bin_of(tile, miss ? ci : k, flo, fhi)]++;
        }
    int best = 0;
    for (int l = 1; l < LEVELS; l++)
        if (count[l] > count[best]) best = l;
    for (int b = 0; b < NB; b++) {
#if INT_BINS
        long sum = 0;
#else
        float sum = 0.0f;
#endif
        for (int ky = -R; ky <= R; ky++)
            for (int kx = -R; kx <= R; kx++) {
                int k = (ly + ky) * TW + lx + kx;
                bool miss = false;
                for (int bb = 0; bb < NB; bb++) miss = miss || IS_ND(tile[bb * TW * TH + k]);
                int kk = miss ? ci : k;
                if (bin_of(tile, kk, flo, fhi) == best) {
#if INT_BINS
                    sum += (long)tile[b * TW * TH + kk];
#else
                    sum = sum + tile[b * TW * TH + kk];
#endif
                }
            }
#if INT_BINS
        dst[b * plane + p] = CAST_OUT((float)round_div(sum, count[best]));
#else
        dst[b * plane + p] = CAST_OUT(sum / (float)count[best]);
#endif
    }
}
