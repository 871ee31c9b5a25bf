/*
 * unfilter.c - HDF5's deflate, shuffle and fletcher32 filters undone on a
 * chunk's stored bytes.
 *
 * The filters are those of the HDF5 file format (filter ids 1, 2 and 3):
 * deflate stores a zlib stream; shuffle stores byte k of every value
 * together, k = 0 .. size-1, bytes past the last whole value as they
 * were; fletcher32 appends HDF5's Fletcher-32 of the bytes before it,
 * little-endian. They are undone in the reverse of the order they were
 * applied, and every size is checked against what the chunk must give:
 * a chunk that does not decode to exactly its shape is an error.
 *
 * The inflater is libdeflate where the build found it (about twice as
 * fast as zlib on the bench's chunks, docs/PERFORMANCE.md), else zlib.
 */
#include "unfilter.h"

#include <netcdf.h>
#include <stdlib.h>
#include <string.h>


#ifdef RASTER_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

#include "alloc.h"
#include "error.h"
#include "raster.h"
#include "unshuffle.h"

#define F_DEFLATE 1
#define F_SHUFFLE 2
#define F_FLETCHER32 3
#define MAX_FILTERS 8

struct unfilter {
#ifdef RASTER_HAVE_LIBDEFLATE
    struct libdeflate_decompressor *d;
#endif
    unsigned char *in, *a, *b;
    size_t in_cap, ab_cap;
};

unfilter *unfilter_new(void)
{
    unfilter *u = raster_calloc(1, sizeof *u);
    if (!u)
        return NULL;
#ifdef RASTER_HAVE_LIBDEFLATE
    u->d = libdeflate_alloc_decompressor();
    if (!u->d) {
        raster_free(u);
        return NULL;
    }
#endif
    return u;
}

void unfilter_free(unfilter *u)
{
    if (!u)
        return;
#ifdef RASTER_HAVE_LIBDEFLATE
    libdeflate_free_decompressor(u->d);
#endif
    raster_free(u->in);
    raster_free(u->a);
    raster_free(u->b);
    raster_free(u);
}

const char *unfilter_inflater(void)
{
#ifdef RASTER_HAVE_LIBDEFLATE
    return "libdeflate";
#else
    return "zlib";
#endif
}

unsigned char *unfilter_input(unfilter *u, size_t bytes)
{
    if (bytes > u->in_cap) { /* contents not kept */
        raster_free(u->in);
        u->in = raster_malloc(bytes);
        u->in_cap = u->in ? bytes : 0;
        if (!u->in) {
            raster_fail(RASTER_ENOMEM, "out of memory for a chunk of %zu "
                        "bytes", bytes);
            return NULL;
        }
    }
    return u->in;
}

/* Fletcher-32 as HDF5 defines it: the bytes taken as big-endian 16-bit
 * words (a last odd byte as the high half of one), both sums folded to
 * 16 bits (end-around carry) after every 360 words, after the odd byte
 * and once more at the end. The folds must come at exactly these points
 * for the result to equal HDF5's bit for bit. */
uint32_t unfilter_fletcher32(const unsigned char *p, size_t n)
{
    uint32_t s1 = 0, s2 = 0;
    size_t words = n / 2;
    while (words > 0) {
        size_t block = words > 360 ? 360 : words;
        words -= block;
        for (size_t i = 0; i < block; i++, p += 2) {
            s1 += (uint32_t)p[0] << 8 | p[1];
            s2 += s1;
        }
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    if (n % 2) {
        s1 += (uint32_t)p[0] << 8;
        s2 += s1;
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    return s2 << 16 | s1;
}

/* The checksum HDF5 before 1.6.3 stored on little-endian machines (the
 * bytes of each half swapped), which HDF5 still accepts. */
static uint32_t swapped_halves(uint32_t c)
{
    return (c & 0x00ff00ffu) << 8 | (c & 0xff00ff00u) >> 8;
}

void unfilter_unshuffle(unsigned char *dst, const unsigned char *src,
                        size_t elem, size_t n, size_t first, size_t count)
{
    unshuffle_values(dst, src, elem, n, first, count);
}

/* Byte k of value i from plane k of src: n values of `elem` bytes, then
 * the `rest` bytes shuffle left in place. */
static void unshuffle(unsigned char *dst, const unsigned char *src,
                      size_t elem, size_t n, size_t rest)
{
    unfilter_unshuffle(dst, src, elem, n, 0, n);
    memcpy(dst + n * elem, src + n * elem, rest);
}

/* Inflates the zlib stream src[0..n) into exactly `want` bytes of dst:
 * 0, or -1 when the stream is corrupt or of another length. */
static int inflate_exact(unfilter *u, unsigned char *dst, size_t want,
                         const unsigned char *src, size_t n)
{
#ifdef RASTER_HAVE_LIBDEFLATE
    size_t got = 0;
    return libdeflate_zlib_decompress(u->d, src, n, dst, want, &got) ==
                       LIBDEFLATE_SUCCESS &&
                   got == want
               ? 0
               : -1;
#else
    (void)u;
    uLongf got = (uLongf)want;
    uLong used = (uLong)n;
    if ((size_t)got != want || (size_t)used != n)
        return -1; /* beyond zlib's lengths */
    return uncompress2(dst, &got, src, &used) == Z_OK && got == want ? 0
                                                                     : -1;
#endif
}

/* Undoes filt[nfilt-1] .. filt[0]; filt[0] left undone when `keep` and
 * it is a shuffle that moves bytes (*shuffled then 1). */
static int unfilter_run(unfilter *u, const unsigned char *filt, int nfilt,
                        size_t elem, size_t chunk_bytes, size_t csize,
                        const char *name, int keep,
                        const unsigned char **out, int *shuffled)
{
    *shuffled = 0;
    /* size[k]: the bytes filter k was given when writing (SIZE_MAX once
     * past a deflate: only the stored size says) */
    size_t size[MAX_FILTERS + 1];
    if (nfilt < 0 || nfilt > MAX_FILTERS || elem == 0)
        return raster_fail(RASTER_EINTERNAL, "%s: %d filters", name, nfilt);
    size[0] = chunk_bytes;
    for (int k = 0; k < nfilt; k++)
        size[k + 1] = filt[k] == F_DEFLATE || size[k] == SIZE_MAX
                          ? SIZE_MAX
                          : size[k] + (filt[k] == F_FLETCHER32 ? 4 : 0);
    size_t cap = csize > chunk_bytes + 64 ? csize : chunk_bytes + 64;
    if (cap > u->ab_cap) { /* both stage buffers as large */
        raster_free(u->a);
        raster_free(u->b);
        u->a = raster_malloc(cap);
        u->b = raster_malloc(cap);
        u->ab_cap = u->a && u->b ? cap : 0;
        if (!u->ab_cap)
            return raster_fail(RASTER_ENOMEM, "out of memory inflating %s",
                               name);
    }
    unsigned char *cur = u->in;
    size_t n = csize;
    if (size[nfilt] != SIZE_MAX && n != size[nfilt])
        return raster_fail_nc(RASTER_EFORMAT, NC_EHDFERR,
                              "%s: a chunk of %zu bytes stored in %zu",
                              name, size[nfilt], n);
    for (int k = nfilt - 1; k >= 0; k--) {
        unsigned char *dst = cur == u->a ? u->b : u->a;
        switch (filt[k]) {
        case F_FLETCHER32: {
            if (n < 4)
                return raster_fail_nc(RASTER_EFORMAT, NC_EHDFERR,
                                      "%s: a chunk too short for its "
                                      "checksum", name);
            n -= 4;
            const unsigned char *c = cur + n;
            uint32_t stored = (uint32_t)c[0] | (uint32_t)c[1] << 8 |
                              (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
            uint32_t sum = unfilter_fletcher32(cur, n);
            if (stored != sum && stored != swapped_halves(sum))
                return raster_fail_nc(RASTER_EFORMAT, NC_EHDFERR,
                                      "%s: a chunk fails its Fletcher-32 "
                                      "checksum (corrupt file)", name);
            break;
        }
        case F_SHUFFLE:
            if (keep && k == 0 && elem > 1 && n / elem > 1 &&
                n % elem == 0) {
                *shuffled = 1;
                break;
            }
            if (elem > 1 && n / elem > 1) {
                unshuffle(dst, cur, elem, n / elem, n % elem);
                cur = dst;
            }
            break;
        case F_DEFLATE:
            if (size[k] == SIZE_MAX || size[k] > u->ab_cap ||
                inflate_exact(u, dst, size[k], cur, n) != 0)
                return raster_fail_nc(RASTER_EFORMAT, NC_EHDFERR,
                                      "%s: a chunk's deflate stream is "
                                      "corrupt or of the wrong length "
                                      "(corrupt file)", name);
            cur = dst;
            n = size[k];
            break;
        default:
            return raster_fail(RASTER_EINTERNAL, "%s: filter %d", name,
                               (int)filt[k]);
        }
        if (size[k] != SIZE_MAX && n != size[k])
            return raster_fail_nc(RASTER_EFORMAT, NC_EHDFERR,
                                  "%s: a chunk decodes to %zu bytes, not %zu",
                                  name, n, size[k]);
    }
    *out = cur;
    return RASTER_OK;
}

int unfilter_chunk(unfilter *u, const unsigned char *filt, int nfilt,
                   size_t elem, size_t chunk_bytes, size_t csize,
                   const char *name, const unsigned char **out)
{
    int shuffled;
    return unfilter_run(u, filt, nfilt, elem, chunk_bytes, csize, name, 0,
                        out, &shuffled);
}

int unfilter_chunk_keep_shuffle(unfilter *u, const unsigned char *filt,
                                int nfilt, size_t elem, size_t chunk_bytes,
                                size_t csize, const char *name,
                                const unsigned char **out, int *shuffled)
{
    return unfilter_run(u, filt, nfilt, elem, chunk_bytes, csize, name, 1,
                        out, shuffled);
}
