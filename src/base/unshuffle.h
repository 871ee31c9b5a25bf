/*
 * unshuffle.h - undoing HDF5's shuffle filter, in one place for the
 * library's inflater (unfilter.c) and rasterbench's inflate floor
 * (tools/benchwork.c), so that the floor unshuffles exactly as fast as a
 * read does. Header-only: a pure function, no state.
 */
#ifndef RASTER_UNSHUFFLE_H
#define RASTER_UNSHUFFLE_H

#include <stddef.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Values [first, first + count) of n shuffled values: byte k of value i
 * is src[k * n + i]. SSE2 interleaves 16 values a step for 4- and 8-byte
 * values (the scalar loop was a sixth of a deflated region read). */
static inline void unshuffle_values(unsigned char *dst,
                                    const unsigned char *src, size_t elem,
                                    size_t n, size_t first, size_t count)
{
    size_t i = 0;
    src += first;
    if (elem == 4) {
        const unsigned char *p0 = src, *p1 = src + n, *p2 = src + 2 * n,
                            *p3 = src + 3 * n;
#ifdef __SSE2__
        for (; i + 16 <= count; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(p0 + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(p1 + i));
            __m128i c = _mm_loadu_si128((const __m128i *)(p2 + i));
            __m128i d = _mm_loadu_si128((const __m128i *)(p3 + i));
            __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
            __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
            unsigned char *o = dst + 4 * i;
            _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(ab0, cd0));
            _mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(ab0, cd0));
            _mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(ab1, cd1));
            _mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(ab1, cd1));
        }
#endif
        for (; i < count; i++) {
            dst[4 * i] = p0[i];
            dst[4 * i + 1] = p1[i];
            dst[4 * i + 2] = p2[i];
            dst[4 * i + 3] = p3[i];
        }
        return;
    }
    if (elem == 8) {
#ifdef __SSE2__
        for (; i + 16 <= count; i += 16) {
            __m128i p[8], q[8], r[8];
            for (int k = 0; k < 8; k++)
                p[k] = _mm_loadu_si128((const __m128i *)(src + k * n + i));
            for (int k = 0; k < 4; k++) { /* bytes 2k, 2k+1 paired */
                q[2 * k] = _mm_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
                q[2 * k + 1] = _mm_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
            }
            for (int k = 0; k < 2; k++) { /* 4 bytes of values 0-3, 4-7.. */
                r[4 * k] = _mm_unpacklo_epi16(q[4 * k], q[4 * k + 2]);
                r[4 * k + 1] = _mm_unpackhi_epi16(q[4 * k], q[4 * k + 2]);
                r[4 * k + 2] = _mm_unpacklo_epi16(q[4 * k + 1], q[4 * k + 3]);
                r[4 * k + 3] = _mm_unpackhi_epi16(q[4 * k + 1], q[4 * k + 3]);
            }
            /* r[m]: bytes 0-3 of values 4m..4m+3; r[4+m]: bytes 4-7 */
            unsigned char *o = dst + 8 * i;
            for (int m = 0; m < 4; m++) {
                _mm_storeu_si128((__m128i *)(o + 32 * m),
                                 _mm_unpacklo_epi32(r[m], r[4 + m]));
                _mm_storeu_si128((__m128i *)(o + 32 * m + 16),
                                 _mm_unpackhi_epi32(r[m], r[4 + m]));
            }
        }
#endif
        for (; i < count; i++)
            for (size_t k = 0; k < 8; k++)
                dst[8 * i + k] = src[k * n + i];
        return;
    }
    for (size_t k = 0; k < elem; k++) {
        const unsigned char *plane = src + k * n;
        for (i = 0; i < count; i++)
            dst[i * elem + k] = plane[i];
    }
}

#endif
