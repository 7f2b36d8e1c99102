// rank: the winner per pixel from the weighted float scores of every class
// (S[c][y][x], classes ascending), by the rule of ranking.rs' Ranking:
// best score, ties within TAU to the centre class, else the smallest index;
// nothing above TAU or a nodata centre (unless fill) gives 0xFFFF. `uncertain`
// marks pixels whose margin over the runner-up (or over "no class", score 0)
// is not above `margin` (Bounds::certify_margin): the certified mode
// recomputes those exactly.
#ifndef CODE
#define CODE ushort
#endif
#define NOCODE ((CODE)~(CODE)0)

// The ranking of one pixel from its scores score(c), c ascending.
#define RANK_PIXEL(SCORE)                                                        \
    CODE nodata = (CODE)classes;                                                 \
    CODE centre = cls[(size_t)(y + halo) * w + x + halo];                        \
    if (centre == nodata && !fill) {                                             \
        out[i] = NOCODE;                                                         \
        uncertain[i] = 0;                                                        \
        return;                                                                  \
    }                                                                            \
    float top = 0.0f, second = 0.0f, ws = 0.0f, cs = -INFINITY;                  \
    CODE win = NOCODE;                                                           \
    for (int c = 0; c < classes; c++) {                                          \
        float s = SCORE(c);                                                      \
        second = fmax(second, fmin(top, s));                                     \
        top = fmax(top, s);                                                      \
        if (s > ws + tau) { ws = s; win = (CODE)c; }                             \
        if (c == centre) cs = s;                                                 \
    }                                                                            \
    if (win != NOCODE && centre != nodata && cs >= ws - tau) win = centre;       \
    out[i] = win;                                                                \
    uncertain[i] = (top - second > margin) ? 0 : 1;

// As rank_scores, from transposed planes ST[c][x][y] (rows ohp apart);
// work-items run along y, so the score reads are coalesced.
__kernel void rank_scores_t(__global const float *ST, int classes, int ow, int oh,
                            int ohp, __global const CODE *cls, int w, int halo,
                            int fill, float tau, float margin,
                            __global CODE *out, __global uchar *uncertain) {
    int y = get_global_id(0), x = get_global_id(1);
    if (x >= ow || y >= oh) return;
    size_t i = (size_t)y * ow + x;
    size_t plane = (size_t)ow * ohp, at = (size_t)x * ohp + y;
#define SCORE_T(c) ST[(c) * plane + at]
    RANK_PIXEL(SCORE_T)
#undef SCORE_T
}

__kernel void rank_scores(__global const float *S, int classes, int ow, int oh,
                          __global const ushort *cls, int w, int halo, int fill,
                          float tau, float margin,
                          __global ushort *out, __global uchar *uncertain) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= ow || y >= oh) return;
    size_t i = (size_t)y * ow + x;
    ushort nodata = (ushort)classes;
    ushort centre = cls[(size_t)(y + halo) * w + x + halo];
    if (centre == nodata && !fill) {
        out[i] = 0xFFFF;
        uncertain[i] = 0;
        return;
    }
    size_t plane = (size_t)ow * oh;
    float top = 0.0f, second = 0.0f, ws = 0.0f, cs = -INFINITY;
    ushort win = 0xFFFF;
    for (int c = 0; c < classes; c++) {
        float s = S[c * plane + i];
        second = fmax(second, fmin(top, s));
        top = fmax(top, s);
        if (s > ws + tau) { ws = s; win = (ushort)c; }
        if (c == centre) cs = s;
    }
    if (win != 0xFFFF && centre != nodata && cs >= ws - tau) win = centre;
    out[i] = win;
    uncertain[i] = (top - second > margin) ? 0 : 1;
}
