// Blending two rasters sample by sample, as src/filter/blend.rs computes it
// (Blend::combine and Blend::weight): a weighted sum fma(a, α, fma(b, β, γ))
// or alpha blending fma(a − b, w, b), then the host's conversion to T
// (saturate, round half to even, NaN to 0 for integer types).
//
// Build options: T, A (sample and alpha types), CONVERT (the conversion to
// T), ALPHA (1: alpha blending), A_INT and A_HI (integer alpha: divided by
// its range top), HAS_NDA/NDA, HAS_NDB/NDB, HAS_NDW/NDW (nodata of the first,
// second and alpha inputs), OUT_ND (the output's value where one is nodata).

#pragma OPENCL FP_CONTRACT OFF

#define SAME(v, n) ((float)(v) == (float)(n) || (isnan((float)(n)) && isnan((float)(v))))

__kernel void blend(__global const T *a, __global const T *b, __global const A *w,
                    __global T *dst, float alpha, float beta, float gamma, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    T va = a[i], vb = b[i];
    int missing = 0;
#if HAS_NDA
    missing |= SAME(va, NDA);
#endif
#if HAS_NDB
    missing |= SAME(vb, NDB);
#endif
#if ALPHA
    A vw = w[i];
#if HAS_NDW
    missing |= SAME(vw, NDW);
#endif
    float wt = (float)vw;
#if A_INT
    wt = wt / A_HI;
#endif
    wt = wt < 0.0f ? 0.0f : (wt > 1.0f ? 1.0f : wt);
    float r = fma((float)va - (float)vb, wt, (float)vb);
#else
    float r = fma((float)va, alpha, fma((float)vb, beta, gamma));
#endif
    dst[i] = missing ? (T)(OUT_ND) : CONVERT(r);
}
