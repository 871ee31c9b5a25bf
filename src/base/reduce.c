/*
 * reduce.c - the float64 reductions of values per region: count, sum and
 * sum of squares (compensated), spread (M2), extremes, weighted sums, in
 * one pass over runs of cells. Stored statistics (statstore.c) and
 * raster_region_statistics (stats.c) share them; float values without
 * weights take two or four blocks at once where the CPU has AVX2 or
 * AVX-512, to the same bits as the scalar path.
 */
#include "reduce.h"

#include <math.h>
#include <netcdf.h>
#include <string.h>

#include "alloc.h"
#include "convert.h"
#include "error.h"

/* Neumaier's compensated sum: plain double sums of a million values lose
 * up to 1e-10 relative, near the 1e-9 the statistics promise. */
typedef struct ksum {
    double s, c;
} ksum;

static void ksum_add(ksum *k, double x)
{
    double t = k->s + x;
    if (fabs(k->s) >= fabs(x))
        k->c += (k->s - t) + x;
    else
        k->c += (x - t) + k->s;
    k->s = t;
}

static double ksum_get(const ksum *k) { return k->s + k->c; }

void stats_to_double(const void *src, int xtype, size_t elem,
                     const unsigned char *fill, double *dst, size_t n)
{
    (void)convert_values(src, (ptrdiff_t)elem, xtype, dst, sizeof *dst,
                         NC_DOUBLE, n);
    const unsigned char *p = src;
    if (xtype == NC_FLOAT) {
        float f;
        memcpy(&f, fill, sizeof f);
        for (size_t i = 0; i < n; i++)
            if (dst[i] == (double)f)
                dst[i] = NAN;
    } else if (xtype == NC_DOUBLE) {
        double f;
        memcpy(&f, fill, sizeof f);
        for (size_t i = 0; i < n; i++)
            if (dst[i] == f)
                dst[i] = NAN;
    } else {
        for (size_t i = 0; i < n; i++)
            if (memcmp(p + i * elem, fill, elem) == 0)
                dst[i] = NAN;
    }
}

/* Per region, in one pass: values are summed plainly in blocks of BLOCK
 * (the blocks' sums compensated: as accurate as compensating every value,
 * at a fraction of its cost), and each block's squared deviations from
 * its own mean are summed in a second pass over the block while it is in
 * the cache (numpy's two-pass std, per block), then merged into the
 * region's (Chan et al.'s pairwise update): one pass over the values. */
#define BLOCK 128
typedef struct acc {
    ksum sum, sq, ws, wt, m2, wm2;
    uint64_t n, wn;
    double lo, hi;
    double mean, wmean, wtot; /* running: the merges' */
} acc;

/* One block's merge into its region's accumulator: its sum and sum of
 * squares compensated, its squared deviations m about its own mean mb
 * merged with the region's (Chan et al.). */
static void merge_block(acc *c, uint64_t cnt, double s, double q, double m,
                        double mb)
{
    ksum_add(&c->sum, s);
    ksum_add(&c->sq, q);
    double na = (double)c->n, nb = (double)cnt, dm = mb - c->mean;
    ksum_add(&c->m2, m + dm * dm * na * nb / (na + nb));
    c->mean += dm * nb / (na + nb);
    c->n += cnt;
}

static void run_all(acc *c, const double *x, const double *w, size_t n)
{
    double lo = c->lo, hi = c->hi;
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t e = n - b < BLOCK ? n : b + BLOCK;
        double s = 0, q = 0, ws = 0, wt = 0;
        uint64_t cnt = 0, wcnt = 0;
        if (!w) {
            /* no weights: two independent lanes in registers, without
             * branches (one running sum waits for each addition) */
            double s0 = 0, s1 = 0, q0 = 0, q1 = 0, lo0 = lo, lo1 = lo,
                   hi0 = hi, hi1 = hi;
            uint64_t c0 = 0, c1 = 0;
            size_t i = b;
            for (; i + 2 <= e; i += 2) {
                double v = x[i], u = v == v ? v : 0; /* NaN: 0 */
                double y = x[i + 1], t = y == y ? y : 0;
                c0 += v == v;
                c1 += y == y;
                s0 += u;
                s1 += t;
                q0 += u * u;
                q1 += t * t;
                lo0 = v < lo0 ? v : lo0; /* NaN: false */
                lo1 = y < lo1 ? y : lo1;
                hi0 = v > hi0 ? v : hi0;
                hi1 = y > hi1 ? y : hi1;
            }
            if (i < e) {
                double v = x[i], u = v == v ? v : 0;
                c0 += v == v;
                s0 += u;
                q0 += u * u;
                lo0 = v < lo0 ? v : lo0;
                hi0 = v > hi0 ? v : hi0;
            }
            cnt = c0 + c1;
            s = s0 + s1;
            q = q0 + q1;
            lo = lo0 < lo1 ? lo0 : lo1;
            hi = hi0 > hi1 ? hi0 : hi1;
        } else {
            for (size_t i = b; i < e; i++) {
                double v = x[i];
                if (isnan(v))
                    continue;
                cnt++;
                s += v;
                q += v * v;
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
                if (!isnan(w[i])) {
                    wcnt++;
                    ws += w[i] * v;
                    wt += w[i];
                }
            }
        }
        if (cnt == 0)
            continue;
        double mb = s / (double)cnt, wmb = wt != 0 ? ws / wt : 0;
        double m2 = 0, wm2 = 0, m0 = 0, m1 = 0;
        size_t i = b;
        for (; i + 2 <= e; i += 2) {
            double v = x[i], y = x[i + 1];
            double d = v == v ? v - mb : 0, g = y == y ? y - mb : 0;
            m0 += d * d;
            m1 += g * g;
        }
        if (i < e) {
            double v = x[i], d = v == v ? v - mb : 0;
            m0 += d * d;
        }
        m2 = m0 + m1;
        for (size_t i = b; w && i < e; i++) {
            double v = x[i];
            if (!isnan(v) && !isnan(w[i]))
                wm2 += w[i] * (v - wmb) * (v - wmb);
        }
        merge_block(c, cnt, s, q, m2, mb);
        if (wcnt) {
            ksum_add(&c->ws, ws);
            ksum_add(&c->wt, wt);
            double wa = c->wtot, wd = wmb - c->wmean;
            if (wa + wt != 0) {
                ksum_add(&c->wm2, wm2 + wd * wd * wa * wt / (wa + wt));
                c->wmean += wd * wt / (wa + wt);
            }
            c->wtot = wa + wt;
            c->wn += wcnt;
        }
    }
    c->lo = lo;
    c->hi = hi;
}

/* Calls fn on each run of consecutive cells of one region. */
static void each_run(acc *a, const double *x, const double *w,
                     const int32_t *reg, size_t n,
                     void (*fn)(acc *, const double *, const double *, size_t))
{
    for (size_t i = 0; i < n;) {
        int32_t r = reg ? reg[i] : 0;
        size_t j = reg ? i + 1 : n;
        while (j < n && reg[j] == r)
            j++;
        if (r >= 0)
            fn(&a[r], x + i, w ? w + i : NULL, j - i);
        i = j;
    }
}

static void run_float(acc *c, const float *x, float fill, size_t n);

/* 1 when the n floats at x all hold the bits of `fill`: such a block
 * (land, on an ocean model's grid: 30 % of the bench grid) counts nothing
 * and moves no extreme, so it is skipped whole. Checked 32 values at a
 * time (a block of the sea fails at its first 32); a value only equal to
 * the fill (-0.0 for 0.0) goes the long way, which leaves it out too. */
static int all_fill(const float *x, size_t n, float fill)
{
    uint32_t fb, u, d = 0;
    memcpy(&fb, &fill, sizeof fb);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (size_t j = 0; j < 32; j++) {
            memcpy(&u, x + i + j, sizeof u);
            d |= u ^ fb;
        }
        if (d)
            return 0;
    }
    for (; i < n; i++) {
        memcpy(&u, x + i, sizeof u);
        d |= u ^ fb;
    }
    return d == 0;
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#include <stdatomic.h>
#define PAIRED_BLOCKS 1

/* A lane's extreme e0 (e1), found from +-infinity, as the scalar lane
 * would have found it starting from the running one: a lane keeps its
 * first value of the extreme's class (a -0.0 or 0.0 first seen), so
 * folding the running value in afterwards gives the same bits. */
static double fold_lo(double lo, double e0, double e1)
{
    double l0 = e0 < lo ? e0 : lo, l1 = e1 < lo ? e1 : lo;
    return l0 < l1 ? l0 : l1;
}

static double fold_hi(double hi, double e0, double e1)
{
    double h0 = e0 > hi ? e0 : hi, h1 = e1 > hi ? e1 : hi;
    return h0 > h1 ? h0 : h1;
}

/* xa[i], xa[i + 1], xb[i], xb[i + 1] as four doubles: the two lanes of
 * two blocks */
__attribute__((target("avx2"))) static inline __m256d
load_pair(const float *xa, const float *xb, size_t i)
{
    double a, b; /* two floats each, unaligned for doubles */
    memcpy(&a, xa + i, sizeof a);
    memcpy(&b, xb + i, sizeof b);
    return _mm256_cvtps_pd(_mm_castpd_ps(_mm_set_pd(b, a)));
}

__attribute__((target("avx2"))) static inline __m256d valid_lanes(__m256d v,
                                                                  __m256d fd)
{
    return _mm256_and_pd(_mm256_cmp_pd(v, v, _CMP_ORD_Q),
                         _mm256_cmp_pd(v, fd, _CMP_NEQ_UQ));
}

/* Two blocks of BLOCK values at once, xa for region accumulator ca
 * first, then xb for cb (the same one when they follow each other in a
 * run), 4 lanes of AVX2 = each block's two scalar lanes of run_float:
 * every lane makes exactly the scalar lane's additions and products in
 * its order (no FMA: the target is avx2 alone), so the statistics are
 * the same bits, at a third of the time (two blocks' dependency chains
 * interleaved, half the instructions). A shorter block comes padded with
 * NaNs: left out, they add +0.0 to a lane, which changes no lane's sum
 * (they start at +0.0, so none is ever -0.0). */
__attribute__((target("avx2"))) static void
run_pair(acc *ca, const float *xa, acc *cb, const float *xb, float fill)
{
    const __m256d fd = _mm256_set1_pd((double)fill);
    const __m256d pinf = _mm256_set1_pd(INFINITY);
    const __m256d ninf = _mm256_set1_pd(-INFINITY);
    __m256d s = _mm256_setzero_pd(), q = _mm256_setzero_pd();
    __m256i cn = _mm256_setzero_si256();
    for (size_t i = 0; i < BLOCK; i += 2) {
        __m256d v = load_pair(xa, xb, i), ok = valid_lanes(v, fd);
        v = _mm256_and_pd(v, ok); /* left out: 0, as the scalar lane */
        cn = _mm256_sub_epi64(cn, _mm256_castpd_si256(ok));
        s = _mm256_add_pd(s, v);
        q = _mm256_add_pd(q, _mm256_mul_pd(v, v));
    }
    double sv[4], qv[4];
    uint64_t cv[4];
    _mm256_storeu_pd(sv, s);
    _mm256_storeu_pd(qv, q);
    _mm256_storeu_si256((__m256i *)(void *)cv, cn);
    uint64_t na = cv[0] + cv[1], nb = cv[2] + cv[3];
    double sa = sv[0] + sv[1], sb = sv[2] + sv[3];
    if (na == 0 && nb == 0)
        return; /* all fill (land): no extremes, nothing to merge */
    double ma = na ? sa / (double)na : 0, mb = nb ? sb / (double)nb : 0;
    const __m256d mv = _mm256_set_pd(mb, mb, ma, ma);
    __m256d m = _mm256_setzero_pd(), vl = pinf, vh = ninf;
    for (size_t i = 0; i < BLOCK; i += 2) {
        __m256d v = load_pair(xa, xb, i), ok = valid_lanes(v, fd);
        __m256d d = _mm256_and_pd(_mm256_sub_pd(v, mv), ok);
        m = _mm256_add_pd(m, _mm256_mul_pd(d, d));
        /* min/max(a, b): a when a < b (a > b), else b, as the lanes */
        vl = _mm256_min_pd(_mm256_blendv_pd(pinf, v, ok), vl);
        vh = _mm256_max_pd(_mm256_blendv_pd(ninf, v, ok), vh);
    }
    double mq[4], lv[4], hv[4];
    _mm256_storeu_pd(mq, m);
    _mm256_storeu_pd(lv, vl);
    _mm256_storeu_pd(hv, vh);
    ca->lo = fold_lo(ca->lo, lv[0], lv[1]);
    ca->hi = fold_hi(ca->hi, hv[0], hv[1]);
    if (na)
        merge_block(ca, na, sa, qv[0] + qv[1], mq[0] + mq[1], ma);
    cb->lo = fold_lo(cb->lo, lv[2], lv[3]);
    cb->hi = fold_hi(cb->hi, hv[2], hv[3]);
    if (nb)
        merge_block(cb, nb, sb, qv[2] + qv[3], mq[2] + mq[3], mb);
}

/* Four blocks at once on AVX-512: the 8 lanes are the four blocks' two
 * scalar lanes (block k's lane L at 2 k + L), each making the scalar
 * lane's additions and products in its order (no FMA), as run_pair does
 * for two; masks instead of zeroed values (an addition left out is the
 * +0.0 the scalar lane adds: no lane's sum is ever -0.0). Block k has
 * len[k] values: the cells past it are not counted, and iterations past
 * the longest are left out, so short blocks need no padded copy; x[k] is
 * read past its block up to end[k] at most (a masked load there). Sixteen
 * values of each block at a time are loaded and transposed in registers
 * into eight iterations' vectors, converted once and kept (4 KiB) for the
 * second pass: 0.54 ns a value on the bench grid's ocean against run_pair's
 * 0.71-0.79 (AMD EPYC, AVX-512 on 256-bit units). */
__attribute__((target("avx512f"))) static void
run_quad(acc *const c[4], const float *const x[4], const uint32_t len[4],
         const float *const end[4], float fill)
{
    const __m512d fd = _mm512_set1_pd((double)fill);
    const __m512i one = _mm512_set1_epi64(1);
    /* (a b) pairs of 64 bits interleaved, then (ab cd) */
    const __m512i ilo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i ihi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    const __m512i jlo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i jhi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    /* lane 2 k + L holds value 2 t + L of block k at iteration t */
    const __m512i lens = _mm512_set_epi64(len[3], len[3], len[2], len[2],
                                          len[1], len[1], len[0], len[0]);
    __m512i pos = _mm512_set_epi64(1, 0, 1, 0, 1, 0, 1, 0);
    const __m512i two = _mm512_set1_epi64(2);
    uint32_t most = len[0];
    for (int k = 1; k < 4; k++)
        most = len[k] > most ? len[k] : most;
    size_t iters = ((size_t)most + 1) / 2;
    __m512d val[BLOCK / 2];
    __mmask8 ok[BLOCK / 2];
    __m512d s = _mm512_setzero_pd(), q = _mm512_setzero_pd();
    __m512i cn = _mm512_setzero_si512();
    for (size_t i = 0; i < most; i += 16) {
        __m512d in[4];
        for (int k = 0; k < 4; k++) {
            /* values past the block are not counted (lens), so they may
             * be read where the caller's values go on (a masked load
             * costs several times a plain one) */
            size_t left = len[k] > i ? len[k] - i : 0;
            if (left >= 16 || (size_t)(end[k] - x[k]) >= i + 16) {
                in[k] = _mm512_castps_pd(_mm512_loadu_ps(x[k] + i));
            } else {
                __mmask16 lm = (__mmask16)((1u << left) - 1);
                in[k] = _mm512_castps_pd(_mm512_maskz_loadu_ps(lm, x[k] + i));
            }
        }
        __m512d ab0 = _mm512_permutex2var_pd(in[0], ilo, in[1]);
        __m512d ab1 = _mm512_permutex2var_pd(in[0], ihi, in[1]);
        __m512d ef0 = _mm512_permutex2var_pd(in[2], ilo, in[3]);
        __m512d ef1 = _mm512_permutex2var_pd(in[2], ihi, in[3]);
        __m512d t[4] = {_mm512_permutex2var_pd(ab0, jlo, ef0),
                        _mm512_permutex2var_pd(ab0, jhi, ef0),
                        _mm512_permutex2var_pd(ab1, jlo, ef1),
                        _mm512_permutex2var_pd(ab1, jhi, ef1)};
        for (size_t h = 0; h < 8 && i / 2 + h < iters; h++) {
            __m512d pr = t[h / 2];
            __m256 half = _mm256_castpd_ps(h % 2
                                               ? _mm512_extractf64x4_pd(pr, 1)
                                               : _mm512_castpd512_pd256(pr));
            __m512d v = _mm512_cvtps_pd(half);
            __mmask8 k = _mm512_cmplt_epi64_mask(pos, lens);
            pos = _mm512_add_epi64(pos, two);
            k = _mm512_mask_cmp_pd_mask(k, v, v, _CMP_ORD_Q);
            k = _mm512_mask_cmp_pd_mask(k, v, fd, _CMP_NEQ_UQ);
            s = _mm512_mask_add_pd(s, k, s, v);
            q = _mm512_mask_add_pd(q, k, q, _mm512_mul_pd(v, v));
            cn = _mm512_mask_add_epi64(cn, k, cn, one);
            val[i / 2 + h] = v;
            ok[i / 2 + h] = k;
        }
    }
    double sv[8], qv[8], mv[8];
    uint64_t cv[8];
    _mm512_storeu_pd(sv, s);
    _mm512_storeu_pd(qv, q);
    _mm512_storeu_si512(cv, cn);
    uint64_t n[4];
    double sum[4], mean[4];
    int any = 0;
    for (int k = 0; k < 4; k++) {
        n[k] = cv[2 * k] + cv[2 * k + 1];
        sum[k] = sv[2 * k] + sv[2 * k + 1];
        mean[k] = n[k] ? sum[k] / (double)n[k] : 0;
        mv[2 * k] = mv[2 * k + 1] = mean[k];
        any |= n[k] != 0;
    }
    if (!any)
        return; /* all fill (land): no extremes, nothing to merge */
    const __m512d m8 = _mm512_loadu_pd(mv);
    __m512d m = _mm512_setzero_pd();
    __m512d vl = _mm512_set1_pd(INFINITY), vh = _mm512_set1_pd(-INFINITY);
    for (size_t i = 0; i < iters; i++) {
        __m512d v = val[i];
        __mmask8 k = ok[i];
        __m512d d = _mm512_maskz_sub_pd(k, v, m8);
        m = _mm512_add_pd(m, _mm512_mul_pd(d, d));
        /* min/max(v, e): v when v < e (v > e), else e, as the lanes */
        vl = _mm512_mask_min_pd(vl, k, v, vl);
        vh = _mm512_mask_max_pd(vh, k, v, vh);
    }
    double mq[8], lv[8], hv[8];
    _mm512_storeu_pd(mq, m);
    _mm512_storeu_pd(lv, vl);
    _mm512_storeu_pd(hv, vh);
    for (int k = 0; k < 4; k++) { /* merged in the blocks' order */
        c[k]->lo = fold_lo(c[k]->lo, lv[2 * k], lv[2 * k + 1]);
        c[k]->hi = fold_hi(c[k]->hi, hv[2 * k], hv[2 * k + 1]);
        if (n[k])
            merge_block(c[k], n[k], sum[k], qv[2 * k] + qv[2 * k + 1],
                        mq[2 * k] + mq[2 * k + 1], mean[k]);
    }
}

/* Blocks shorter than this go the scalar way beside run_pair: padded,
 * they would cost a whole block's work (coasts make many short runs).
 * run_quad takes every block, as long as it is. */
#define PAD_MIN 48

/* Blocks held for a run_pair or run_quad call. */
typedef struct held_blocks {
    int width; /* 2 or 4 */
    int n;
    acc *c[4];
    const float *x[4];
    uint32_t len[4];     /* run_quad's: blocks are not padded */
    const float *end[4]; /* how far past its block x[k] may be read */
    float pad[5][BLOCK]; /* run_pair's shorter blocks padded; [4]: NaN */
    acc none;            /* the accumulator of the all-NaN block */
} held_blocks;

__attribute__((target("avx2"))) static void held_flush(held_blocks *h,
                                                       float fill)
{
    if (h->n == 0)
        return;
    for (int k = h->n; k < h->width; k++) { /* beside blocks of nothing */
        h->c[k] = &h->none;
        h->x[k] = h->pad[4];
        h->len[k] = 0;
        h->end[k] = h->pad[4] + BLOCK;
    }
    if (h->width == 4)
        run_quad(h->c, h->x, h->len, h->end, fill);
    else
        run_pair(h->c[0], h->x[0], h->c[1], h->x[1], fill);
    h->n = 0;
}

/* Float runs without weights, their blocks (as run_float cuts them)
 * `width` at a time through run_pair or run_quad, in order, whatever runs
 * they belong to. For run_pair a block shorter than BLOCK is copied and
 * padded with NaNs first, one shorter than PAD_MIN left to run_float
 * (after the blocks held of the same region: each region takes its
 * blocks in order). */
__attribute__((target("avx2"))) static void group_runs(acc *a, const float *x,
                                                       float fill,
                                                       const stats_run *runs,
                                                       size_t nruns, int width)
{
    held_blocks hb, *h = &hb; /* 2.7 KiB */
    const float *xend = x;    /* the caller's values end with the last run's */
    for (size_t q = 0; q < nruns; q++)
        if (x + runs[q].start + runs[q].len > xend)
            xend = x + runs[q].start + runs[q].len;
    float fills[BLOCK];
    for (size_t i = 0; i < BLOCK; i++)
        fills[i] = fill;
    h->width = width;
    h->n = 0;
    h->none = (acc){.lo = INFINITY, .hi = -INFINITY};
    for (size_t i = 0; i < BLOCK; i++)
        h->pad[4][i] = NAN;
    for (size_t q = 0; q < nruns; q++) {
        acc *c = &a[runs[q].reg];
        size_t n = runs[q].len;
        for (size_t b = 0; b < n; b += BLOCK) {
            const float *blk = x + runs[q].start + b;
            size_t bl = n - b < BLOCK ? n - b : BLOCK;
            if (memcmp(blk, fills, bl * sizeof *blk) == 0)
                continue;     /* as all_fill (memcmp's vectors) */
            if (width == 4) { /* every block, as long as it is */
                h->c[h->n] = c;
                h->len[h->n] = (uint32_t)(n - b < BLOCK ? n - b : BLOCK);
                h->end[h->n] = xend;
                h->x[h->n++] = blk;
                if (h->n == width)
                    held_flush(h, fill);
                continue;
            }
            if (n - b < PAD_MIN) {
                for (int k = 0; k < h->n; k++)
                    if (h->c[k] == c) {
                        held_flush(h, fill);
                        break;
                    }
                run_float(c, blk, fill, n - b);
                continue;
            }
            if (n - b < BLOCK) {
                float *p = h->pad[h->n];
                memcpy(p, blk, (n - b) * sizeof *p);
                for (size_t i = n - b; i < BLOCK; i++)
                    p[i] = NAN;
                blk = p;
            }
            h->c[h->n] = c;
            h->x[h->n++] = blk;
            if (h->n == width)
                held_flush(h, fill);
        }
    }
    held_flush(h, fill);
}

enum { CPU_AVX2 = 1, CPU_AVX512 = 2 }; /* AVX-512: its foundation */

/* The CPU_* this CPU has (asked once) */
static int cpu_features(void)
{
    static atomic_int known = -1;
    int k = atomic_load(&known);
    if (k < 0) {
        __builtin_cpu_init();
        k = (__builtin_cpu_supports("avx2") ? CPU_AVX2 : 0) |
            (__builtin_cpu_supports("avx512f") ? CPU_AVX512 : 0);
        atomic_store(&known, k);
    }
    return k;
}
#endif

int statstore_pair_blocks = 1;

int statstore_paired(void)
{
#ifdef PAIRED_BLOCKS
    int cpu = cpu_features();
    if (statstore_pair_blocks == 0 || !(cpu & CPU_AVX2))
        return 0;
    return statstore_pair_blocks != 2 && (cpu & CPU_AVX512) ? 4 : 2;
#else
    return 0;
#endif
}

/* run_all's unweighted path straight on float values (the fill value
 * left out): no slice of doubles written and read back. (group_runs does
 * the same two or four blocks at a time where the CPU has AVX2 or
 * AVX-512.) */
static void run_float(acc *c, const float *x, float fill, size_t n)
{
    double lo = c->lo, hi = c->hi;
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t e = n - b < BLOCK ? n : b + BLOCK;
        if (all_fill(x + b, e - b, fill))
            continue;
        double s0 = 0, s1 = 0, q0 = 0, q1 = 0, lo0 = lo, lo1 = lo, hi0 = hi,
               hi1 = hi;
        uint64_t c0 = 0, c1 = 0;
        size_t i = b;
        for (; i + 2 <= e; i += 2) {
            float fv = x[i], fy = x[i + 1];
            int ok = fv == fv && fv != fill, oy = fy == fy && fy != fill;
            double v = ok ? (double)fv : 0, y = oy ? (double)fy : 0;
            c0 += (uint64_t)ok;
            c1 += (uint64_t)oy;
            s0 += v;
            s1 += y;
            q0 += v * v;
            q1 += y * y;
            lo0 = ok && v < lo0 ? v : lo0;
            lo1 = oy && y < lo1 ? y : lo1;
            hi0 = ok && v > hi0 ? v : hi0;
            hi1 = oy && y > hi1 ? y : hi1;
        }
        if (i < e) {
            float fv = x[i];
            int ok = fv == fv && fv != fill;
            double v = ok ? (double)fv : 0;
            c0 += (uint64_t)ok;
            s0 += v;
            q0 += v * v;
            lo0 = ok && v < lo0 ? v : lo0;
            hi0 = ok && v > hi0 ? v : hi0;
        }
        uint64_t cnt = c0 + c1;
        lo = lo0 < lo1 ? lo0 : lo1;
        hi = hi0 > hi1 ? hi0 : hi1;
        if (cnt == 0)
            continue;
        double s = s0 + s1, q = q0 + q1, mb = s / (double)cnt;
        double m0 = 0, m1 = 0;
        for (i = b; i + 2 <= e; i += 2) {
            float fv = x[i], fy = x[i + 1];
            double d = fv == fv && fv != fill ? (double)fv - mb : 0;
            double g = fy == fy && fy != fill ? (double)fy - mb : 0;
            m0 += d * d;
            m1 += g * g;
        }
        if (i < e) {
            float fv = x[i];
            double d = fv == fv && fv != fill ? (double)fv - mb : 0;
            m0 += d * d;
        }
        merge_block(c, cnt, s, q, m0 + m1, mb);
    }
    c->lo = lo;
    c->hi = hi;
}

/* each_run over raw values (v's type), converted to doubles a slice at a
 * time into buf: a record is never converted whole (a float record of
 * the bench grid would be a 69 MB array of doubles, written and read
 * twice). */
#define SLICE 2048
static void each_run_raw(acc *a, const unsigned char *raw, int xtype,
                         size_t elem, const unsigned char *fill,
                         const double *w, const stats_run *runs, size_t nruns,
                         void (*fn)(acc *, const double *, const double *,
                                    size_t))
{
    double buf[SLICE];
    float f;
    memcpy(&f, fill, xtype == NC_FLOAT ? sizeof f : 0);
#ifdef PAIRED_BLOCKS
    int width = xtype == NC_FLOAT && !w && fn == run_all ? statstore_paired()
                                                         : 0;
    if (width) {
        group_runs(a, (const float *)(const void *)raw, f, runs, nruns, width);
        return;
    }
#endif
    for (size_t q = 0; q < nruns; q++) {
        size_t i = runs[q].start, j = i + runs[q].len;
        if (xtype == NC_FLOAT && !w && fn == run_all) {
            /* the common case: floats, no weights, no slice of doubles */
            run_float(&a[runs[q].reg], (const float *)(const void *)raw + i, f,
                      j - i);
            continue;
        }
        for (size_t k = i; k < j; k += SLICE) {
            size_t m = j - k < SLICE ? j - k : SLICE;
            if (xtype == NC_FLOAT) { /* the common case, inline */
                float fv;
                const unsigned char *p = raw + k * elem;
                for (size_t t = 0; t < m; t++) {
                    memcpy(&fv, p + t * sizeof fv, sizeof fv);
                    buf[t] = fv == f ? NAN : (double)fv;
                }
            } else {
                stats_to_double(raw + k * elem, xtype, elem, fill, buf, m);
            }
            fn(&a[runs[q].reg], buf, w ? w + k : NULL, m);
        }
    }
}

/* The statistics of accumulators a[0..nreg) once both passes ran. */
static void finish(const acc *a, size_t nreg, raster_stats *out)
{
    for (size_t r = 0; r < nreg; r++) {
        const acc *c = &a[r];
        out[r] = (raster_stats){
            .count = c->n, .min = NAN, .max = NAN, .wcount = c->wn};
        if (c->n == 0)
            continue;
        out[r].sum = ksum_get(&c->sum);
        out[r].sumsq = ksum_get(&c->sq);
        out[r].m2 = ksum_get(&c->m2);
        out[r].min = c->lo;
        out[r].max = c->hi;
        out[r].wsum = ksum_get(&c->ws);
        out[r].wtotal = ksum_get(&c->wt);
        out[r].wm2 = ksum_get(&c->wm2);
    }
}

static acc *accs(size_t nreg, acc *one)
{
    acc *a = nreg == 1 ? one : raster_calloc(nreg, sizeof *a);
    if (!a) {
        raster_fail(RASTER_ENOMEM,
                    "out of memory for statistics of %zu "
                    "regions",
                    nreg);
        return NULL;
    }
    if (nreg == 1)
        memset(a, 0, sizeof *a);
    for (size_t r = 0; r < nreg; r++) {
        a[r].lo = INFINITY;
        a[r].hi = -INFINITY;
    }
    return a;
}

int stats_cells(const double *x, const double *w, const int32_t *reg, size_t n,
                size_t nreg, raster_stats *out)
{
    acc one, *a = accs(nreg, &one);
    if (!a)
        return RASTER_ENOMEM;
    each_run(a, x, w, reg, n, run_all);
    finish(a, nreg, out);
    if (a != &one)
        raster_free(a);
    return RASTER_OK;
}

int stats_cells_raw(const void *raw, int xtype, size_t elem,
                    const unsigned char *fill, const double *w,
                    const stats_run *runs, size_t nruns, size_t nreg,
                    raster_stats *out)
{
    acc one, *a = accs(nreg, &one);
    if (!a)
        return RASTER_ENOMEM;
    each_run_raw(a, raw, xtype, elem, fill, w, runs, nruns, run_all);
    finish(a, nreg, out);
    if (a != &one)
        raster_free(a);
    return RASTER_OK;
}

void raster_stats_merge(raster_stats *a, const raster_stats *b)
{
    if (!a || !b || b->count == 0)
        return;
    if (a->count == 0) {
        *a = *b;
        return;
    }
    double na = (double)a->count, nb = (double)b->count;
    double d = b->sum / nb - a->sum / na;
    a->m2 += b->m2 + d * d * na * nb / (na + nb);
    if (b->wtotal != 0 && a->wtotal != 0) {
        double wa = a->wtotal, wb = b->wtotal;
        double wd = b->wsum / wb - a->wsum / wa;
        a->wm2 += b->wm2 + wd * wd * wa * wb / (wa + wb);
    } else {
        a->wm2 += b->wm2;
    }
    a->count += b->count;
    a->sum += b->sum;
    a->sumsq += b->sumsq;
    a->wcount += b->wcount;
    a->wsum += b->wsum;
    a->wtotal += b->wtotal;
    if (b->min < a->min)
        a->min = b->min;
    if (b->max > a->max)
        a->max = b->max;
}

double raster_stats_value(const raster_stats *s, int stat, int weighted)
{
    if (!s)
        return NAN;
    switch (stat) {
    case RASTER_STAT_COUNT: return (double)s->count;
    case RASTER_STAT_SUM: return weighted ? s->wsum : s->sum;
    case RASTER_STAT_MIN: return s->count ? s->min : NAN;
    case RASTER_STAT_MAX: return s->count ? s->max : NAN;
    case RASTER_STAT_MEAN:
        if (weighted)
            return s->wtotal != 0 ? s->wsum / s->wtotal : NAN;
        return s->count ? s->sum / (double)s->count : NAN;
    case RASTER_STAT_STD:
        if (weighted)
            return s->wtotal != 0 ? sqrt(s->wm2 / s->wtotal) : NAN;
        return s->count ? sqrt(s->m2 / (double)s->count) : NAN;
    default: return NAN;
    }
}
