/*
 * plot.c - rasterstat --plot: the region mesh as a PNG, after the RASTER
 * paper's Fig. 3: every region in its own colour, thin dark lines along the
 * chunk boundaries, mixed chunks hatched, region ids (or names) on the map
 * where they fit, and a legend.
 *
 * Row 0 of the mask is drawn at the bottom (the masks raster ships, like
 * POP's, store the southernmost row first). Small grids are enlarged to a
 * few pixels per cell; large grids are reduced to one pixel per k x k cells
 * holding the block's most frequent id, chunk boundaries still drawn where
 * they fall. Text uses a 5 x 7 bitmap font defined below. The PNG itself is
 * libpng's.
 */
#include "plot.h"

#include <png.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"

/* ---- fixed data -------------------------------------------------------- */

/* 5 x 7 glyphs of ASCII 32..126 with two rows below for descenders: 9
 * bytes each, one per row from the top, bit 4 the leftmost pixel. */
static const char font[] =
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00" /*   */
    "\x04\x04\x04\x04\x04\x00\x04\x00\x00" /* ! */
    "\x0a\x0a\x0a\x00\x00\x00\x00\x00\x00" /* " */
    "\x0a\x0a\x1f\x0a\x1f\x0a\x0a\x00\x00" /* # */
    "\x04\x0f\x14\x0e\x05\x1e\x04\x00\x00" /* $ */
    "\x18\x19\x02\x04\x08\x13\x03\x00\x00" /* % */
    "\x0c\x12\x14\x08\x15\x12\x0d\x00\x00" /* & */
    "\x04\x04\x08\x00\x00\x00\x00\x00\x00" /* ' */
    "\x02\x04\x08\x08\x08\x04\x02\x00\x00" /* ( */
    "\x08\x04\x02\x02\x02\x04\x08\x00\x00" /* ) */
    "\x00\x04\x15\x0e\x15\x04\x00\x00\x00" /* * */
    "\x00\x04\x04\x1f\x04\x04\x00\x00\x00" /* + */
    "\x00\x00\x00\x00\x00\x0c\x0c\x04\x08" /* , */
    "\x00\x00\x00\x1f\x00\x00\x00\x00\x00" /* - */
    "\x00\x00\x00\x00\x00\x0c\x0c\x00\x00" /* . */
    "\x00\x01\x02\x04\x08\x10\x00\x00\x00" /* / */
    "\x0e\x11\x13\x15\x19\x11\x0e\x00\x00" /* 0 */
    "\x04\x0c\x04\x04\x04\x04\x0e\x00\x00" /* 1 */
    "\x0e\x11\x01\x02\x04\x08\x1f\x00\x00" /* 2 */
    "\x1f\x02\x04\x02\x01\x11\x0e\x00\x00" /* 3 */
    "\x02\x06\x0a\x12\x1f\x02\x02\x00\x00" /* 4 */
    "\x1f\x10\x1e\x01\x01\x11\x0e\x00\x00" /* 5 */
    "\x06\x08\x10\x1e\x11\x11\x0e\x00\x00" /* 6 */
    "\x1f\x01\x02\x04\x08\x08\x08\x00\x00" /* 7 */
    "\x0e\x11\x11\x0e\x11\x11\x0e\x00\x00" /* 8 */
    "\x0e\x11\x11\x0f\x01\x02\x0c\x00\x00" /* 9 */
    "\x00\x0c\x0c\x00\x0c\x0c\x00\x00\x00" /* : */
    "\x00\x00\x0c\x0c\x00\x0c\x0c\x04\x08" /* ; */
    "\x02\x04\x08\x10\x08\x04\x02\x00\x00" /* < */
    "\x00\x00\x1f\x00\x1f\x00\x00\x00\x00" /* = */
    "\x08\x04\x02\x01\x02\x04\x08\x00\x00" /* > */
    "\x0e\x11\x01\x02\x04\x00\x04\x00\x00" /* ? */
    "\x0e\x11\x01\x0d\x15\x15\x0e\x00\x00" /* @ */
    "\x0e\x11\x11\x11\x1f\x11\x11\x00\x00" /* A */
    "\x1e\x11\x11\x1e\x11\x11\x1e\x00\x00" /* B */
    "\x0e\x11\x10\x10\x10\x11\x0e\x00\x00" /* C */
    "\x1c\x12\x11\x11\x11\x12\x1c\x00\x00" /* D */
    "\x1f\x10\x10\x1e\x10\x10\x1f\x00\x00" /* E */
    "\x1f\x10\x10\x1e\x10\x10\x10\x00\x00" /* F */
    "\x0e\x11\x10\x17\x11\x11\x0f\x00\x00" /* G */
    "\x11\x11\x11\x1f\x11\x11\x11\x00\x00" /* H */
    "\x0e\x04\x04\x04\x04\x04\x0e\x00\x00" /* I */
    "\x07\x02\x02\x02\x02\x12\x0c\x00\x00" /* J */
    "\x11\x12\x14\x18\x14\x12\x11\x00\x00" /* K */
    "\x10\x10\x10\x10\x10\x10\x1f\x00\x00" /* L */
    "\x11\x1b\x15\x15\x11\x11\x11\x00\x00" /* M */
    "\x11\x11\x19\x15\x13\x11\x11\x00\x00" /* N */
    "\x0e\x11\x11\x11\x11\x11\x0e\x00\x00" /* O */
    "\x1e\x11\x11\x1e\x10\x10\x10\x00\x00" /* P */
    "\x0e\x11\x11\x11\x15\x12\x0d\x00\x00" /* Q */
    "\x1e\x11\x11\x1e\x14\x12\x11\x00\x00" /* R */
    "\x0f\x10\x10\x0e\x01\x01\x1e\x00\x00" /* S */
    "\x1f\x04\x04\x04\x04\x04\x04\x00\x00" /* T */
    "\x11\x11\x11\x11\x11\x11\x0e\x00\x00" /* U */
    "\x11\x11\x11\x11\x11\x0a\x04\x00\x00" /* V */
    "\x11\x11\x11\x15\x15\x15\x0a\x00\x00" /* W */
    "\x11\x11\x0a\x04\x0a\x11\x11\x00\x00" /* X */
    "\x11\x11\x0a\x04\x04\x04\x04\x00\x00" /* Y */
    "\x1f\x01\x02\x04\x08\x10\x1f\x00\x00" /* Z */
    "\x0e\x08\x08\x08\x08\x08\x0e\x00\x00" /* [ */
    "\x00\x10\x08\x04\x02\x01\x00\x00\x00" /* backslash */
    "\x0e\x02\x02\x02\x02\x02\x0e\x00\x00" /* ] */
    "\x04\x0a\x11\x00\x00\x00\x00\x00\x00" /* ^ */
    "\x00\x00\x00\x00\x00\x00\x1f\x00\x00" /* _ */
    "\x08\x04\x02\x00\x00\x00\x00\x00\x00" /* ` */
    "\x00\x00\x0e\x01\x0f\x11\x0f\x00\x00" /* a */
    "\x10\x10\x16\x19\x11\x11\x1e\x00\x00" /* b */
    "\x00\x00\x0e\x10\x10\x11\x0e\x00\x00" /* c */
    "\x01\x01\x0d\x13\x11\x11\x0f\x00\x00" /* d */
    "\x00\x00\x0e\x11\x1f\x10\x0e\x00\x00" /* e */
    "\x06\x09\x08\x1c\x08\x08\x08\x00\x00" /* f */
    "\x00\x00\x0f\x11\x11\x11\x0f\x01\x0e" /* g */
    "\x10\x10\x16\x19\x11\x11\x11\x00\x00" /* h */
    "\x04\x00\x0c\x04\x04\x04\x0e\x00\x00" /* i */
    "\x02\x00\x06\x02\x02\x02\x02\x12\x0c" /* j */
    "\x10\x10\x12\x14\x18\x14\x12\x00\x00" /* k */
    "\x0c\x04\x04\x04\x04\x04\x0e\x00\x00" /* l */
    "\x00\x00\x1a\x15\x15\x11\x11\x00\x00" /* m */
    "\x00\x00\x16\x19\x11\x11\x11\x00\x00" /* n */
    "\x00\x00\x0e\x11\x11\x11\x0e\x00\x00" /* o */
    "\x00\x00\x1e\x11\x11\x11\x1e\x10\x10" /* p */
    "\x00\x00\x0f\x11\x11\x11\x0f\x01\x01" /* q */
    "\x00\x00\x16\x19\x10\x10\x10\x00\x00" /* r */
    "\x00\x00\x0e\x10\x0e\x01\x1e\x00\x00" /* s */
    "\x08\x08\x1c\x08\x08\x09\x06\x00\x00" /* t */
    "\x00\x00\x11\x11\x11\x13\x0d\x00\x00" /* u */
    "\x00\x00\x11\x11\x11\x0a\x04\x00\x00" /* v */
    "\x00\x00\x11\x11\x15\x15\x0a\x00\x00" /* w */
    "\x00\x00\x11\x0a\x04\x0a\x11\x00\x00" /* x */
    "\x00\x00\x11\x11\x11\x11\x0f\x01\x0e" /* y */
    "\x00\x00\x1f\x02\x04\x08\x1f\x00\x00" /* z */
    "\x02\x04\x04\x08\x04\x04\x02\x00\x00" /* { */
    "\x04\x04\x04\x04\x04\x04\x04\x00\x00" /* | */
    "\x08\x04\x04\x02\x04\x04\x08\x00\x00" /* } */
    "\x00\x00\x08\x15\x02\x00\x00\x00\x00" /* ~ */
    ;

/* The colours of regions 1..96 in order of decreasing cell count: the
 * matplotlib "tab10" hues (grey left out) then colours picked one by one
 * as far as possible (in OKLab) from all before them, the land grey and the
 * outline colour, within moderate lightness and chroma. Any two differ by
 * at least dE(OKLab) 0.056. Beyond 96 regions the palette repeats, lighter
 * and darker in turn. */
static const uint32_t palette[] = {
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2,
    0xbcbd22, 0x17becf, 0x4bf0b4, 0xa5873c, 0x00785a, 0xa5a5ff, 0xffb4ff,
    0xffc369, 0xc36978, 0x3c96f0, 0x4b9696, 0x4bc378, 0x69e1ff, 0xf09696,
    0x963c87, 0x786900, 0xc3e187, 0x695a87, 0xc3a569, 0xd2691e, 0x5a5ac3,
    0xa587b4, 0x87a53c, 0xe196ff, 0x87d2b4, 0x78a5d2, 0x69874b, 0xf0a500,
    0xd2a5d2, 0x1e7800, 0xc35aa5, 0xb44b00, 0xffb4c3, 0xb478e1, 0xf06987,
    0xc3c3ff, 0xb43c5a, 0x966987, 0x69c3ff, 0x6978e1, 0x00a578, 0xd28769,
    0x6987b4, 0x78b496, 0xff96d2, 0xc3c387, 0xd28700, 0x1e7887, 0x87d269,
    0xa5694b, 0xe1d22d, 0x784ba5, 0x00a5d2, 0xffa569, 0x00e1d2, 0xd287a5,
    0x00b4ff, 0xff7869, 0xe15a5a, 0xffc3a5, 0x00d2f0, 0xb4a500, 0x4b870f,
    0x965a00, 0x8787d2, 0x00b4a5, 0x69f0e1, 0x7896ff, 0x78c3d2, 0x964b69,
    0x96f087, 0x3cd2a5, 0x7869a5, 0x96b469, 0x2d8778, 0xe1d296, 0xa54ba5,
    0x2d87a5, 0x96b4e1, 0x1e87d2, 0xc35a4b, 0x878700, 0xb496d2, 0xa53c2d,
    0xc378b4, 0xb46900, 0x5aa5b4, 0xb44b87, 0x00874b
};

#define NPALETTE (sizeof palette / sizeof palette[0])
#define LAND 0xc4c4c4u  /* region 0 (land, "outside") */
#define INK 0x1a1a1au   /* outlines and text */
#define PAPER 0xffffffu
#define MAP_TARGET 1200 /* about this many pixels on the map's longer side */
#define MAX_ENLARGE 8   /* pixels per cell at most */
#define HATCH 6         /* pixels between hatch lines */
#define MIN_TILE_PX 5   /* smaller tiles get no outlines (all lines) */
#define FS 2            /* font scale of the text outside the map */
#define NAME_MAX_SHOWN 28
#define LEGEND_MAX 150  /* more regions: the largest listed, a count of the rest */
#define GLYPH_ROWS 9     /* of which 7 above the baseline */

/* ---- drawing ------------------------------------------------------------ */

typedef struct image {
    long w, h;
    unsigned char *rgb; /* w * h * 3 */
} image;

static void dot(image *im, long x, long y, uint32_t c)
{
    if (x < 0 || y < 0 || x >= im->w || y >= im->h)
        return;
    unsigned char *p = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    p[0] = (unsigned char)(c >> 16);
    p[1] = (unsigned char)(c >> 8);
    p[2] = (unsigned char)c;
}

static void box(image *im, long x, long y, long w, long h, uint32_t c)
{
    for (long j = y; j < y + h; j++)
        for (long i = x; i < x + w; i++)
            dot(im, i, j, c);
}

static void frame(image *im, long x, long y, long w, long h, uint32_t c)
{
    box(im, x, y, w, 1, c);
    box(im, x, y + h - 1, w, 1, c);
    box(im, x, y, 1, h, c);
    box(im, x + w - 1, y, 1, h, c);
}

/* a + (b - a) * t / 256, per channel */
static uint32_t mix(uint32_t a, uint32_t b, unsigned t)
{
    uint32_t out = 0;
    for (int s = 0; s < 24; s += 8) {
        unsigned x = a >> s & 0xff, y = b >> s & 0xff;
        unsigned v = (x * (256 - t) + y * t) / 256;
        out |= (uint32_t)v << s;
    }
    return out;
}

static long text_width(const char *s, int fs)
{
    size_t n = strlen(s);
    return n ? (long)n * 6 * fs - fs : 0;
}

/* Rows the text covers: 7 per scale step, 9 with descenders. */
static long text_height(const char *s, int fs)
{
    return (strpbrk(s, "gjpqy,;") ? GLYPH_ROWS : 7) * fs;
}

static void text(image *im, long x, long y, const char *s, int fs, uint32_t c)
{
    for (; *s; s++, x += 6 * fs) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 32 || ch > 126)
            ch = '?';
        const char *g = font + (ch - 32) * GLYPH_ROWS;
        for (int r = 0; r < GLYPH_ROWS; r++)
            for (int col = 0; col < 5; col++)
                if (g[r] >> (4 - col) & 1)
                    box(im, x + col * fs, y + r * fs, fs, fs, c);
    }
}

/* Dark text on a light rim, readable on any colour. */
static void text_rim(image *im, long x, long y, const char *s, int fs)
{
    for (long dy = -1; dy <= 1; dy++)
        for (long dx = -1; dx <= 1; dx++)
            if (dx || dy)
                text(im, x + dx * fs, y + dy * fs, s, fs, PAPER);
    text(im, x, y, s, fs, INK);
}

/* ---- regions ------------------------------------------------------------ */

typedef struct region {
    int32_t id;
    size_t cells;
    uint32_t colour;
    int listed;     /* in the legend */
    const char *name;
    long pole;      /* map pixel farthest from other regions, or -1 */
    long pole_dist; /* its chessboard distance to them */
    long run_len[2];  /* longest horizontal run of pixels with room for */
    long run_mid[2];  /* text of scale 2 [0] and 1 [1] around it; its middle */
} region;

static uint32_t palette_colour(size_t rank)
{
    uint32_t c = palette[rank % NPALETTE];
    size_t cycle = rank / NPALETTE;
    if (cycle == 0)
        return c;
    return cycle % 2 ? mix(c, PAPER, 110) : mix(c, 0, 90);
}

static int by_size(const void *a, const void *b)
{
    const region *x = *(region *const *)a, *y = *(region *const *)b;
    if (x->cells != y->cells)
        return x->cells < y->cells ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Index of `id` in the ascending regions, or -1. */
static long region_index(const region *reg, size_t n, int32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (reg[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && reg[lo].id == id ? (long)lo : -1;
}

/* ---- the map ------------------------------------------------------------ */

/* Cell to pixel: pixel = cell * num / den (enlarged: num > 1; reduced:
 * den > 1). */
typedef struct scale {
    size_t num, den;
    size_t ny, nx;  /* grid */
    long w, h;      /* map pixels */
} scale;

static long px_x(const scale *s, size_t x)
{
    return x >= s->nx ? s->w : (long)(x * s->num / s->den);
}

static long px_y(const scale *s, size_t y) /* counted from the bottom */
{
    return y >= s->ny ? s->h : (long)(y * s->num / s->den);
}

/* Region index of every map pixel, top row first: the cell's region, or
 * the most frequent region of the den x den block. */
static int map_regions(const scale *s, const int32_t *vals, const region *reg,
                       size_t nreg, uint32_t *pid)
{
    size_t band_rows = s->num > 1 ? 1 : s->den;
    uint32_t *band = malloc(band_rows * s->nx * sizeof *band);
    uint32_t *count = calloc(nreg, sizeof *count);
    uint32_t *seen = malloc(nreg * sizeof *seen);
    int rc = -1;
    if (!band || !count || !seen) {
        copy_err("out of memory drawing the plot");
        goto out;
    }
    for (long gp = 0; gp < s->h; gp++) {
        size_t r0 = (size_t)gp * s->den / s->num;
        size_t r1 = r0 + band_rows < s->ny ? r0 + band_rows : s->ny;
        for (size_t r = r0; r < r1; r++)
            for (size_t x = 0; x < s->nx; x++) {
                long i = region_index(reg, nreg, vals[r * s->nx + x]);
                if (i < 0) {
                    copy_err("plot: mask value %d is no region of the mesh",
                             (int)vals[r * s->nx + x]);
                    goto out;
                }
                band[(r - r0) * s->nx + x] = (uint32_t)i;
            }
        uint32_t *row = pid + (size_t)(s->h - 1 - gp) * (size_t)s->w;
        for (long p = 0; p < s->w; p++) {
            size_t c0 = (size_t)p * s->den / s->num;
            if (s->den == 1) {
                row[p] = band[c0];
                continue;
            }
            size_t c1 = c0 + s->den < s->nx ? c0 + s->den : s->nx, nseen = 0;
            uint32_t best = band[c0];
            for (size_t r = 0; r < r1 - r0; r++)
                for (size_t c = c0; c < c1; c++) {
                    uint32_t i = band[r * s->nx + c];
                    if (count[i]++ == 0)
                        seen[nseen++] = i;
                    if (count[i] > count[best] ||
                        (count[i] == count[best] && i < best))
                        best = i;
                }
            for (size_t k = 0; k < nseen; k++)
                count[seen[k]] = 0;
            row[p] = best;
        }
    }
    rc = 0;
out:
    free(band);
    free(count);
    free(seen);
    return rc;
}

/* Room above and below a pixel that text of scale fs needs, rim included. */
static long text_room(int fs)
{
    return (7 * fs + 2 * fs) / 2 + 1;
}

/* For every region, the map pixel farthest (chessboard distance) from any
 * pixel of another region or the map's edge, where its label goes first;
 * and, for labels too wide for the room there, the longest row run of its
 * pixels that leave room for text above and below. */
static int find_poles(const scale *s, const uint32_t *pid, region *reg,
                      size_t nreg)
{
    long w = s->w, h = s->h;
    int32_t *d = malloc((size_t)w * (size_t)h * sizeof *d);
    if (!d)
        return copy_err("out of memory drawing the plot");
    for (long y = 0; y < h; y++)
        for (long x = 0; x < w; x++) {
            long i = y * w + x;
            int32_t v = INT32_MAX / 2;
            if (x == 0 || y == 0 || x == w - 1)
                v = 1;
            else {
                const long nb[4] = {i - 1, i - w - 1, i - w, i - w + 1};
                for (int k = 0; k < 4; k++)
                    v = pid[nb[k]] != pid[i] ? 1
                        : (d[nb[k]] + 1 < v ? d[nb[k]] + 1 : v);
            }
            d[i] = v;
        }
    for (long y = h - 1; y >= 0; y--)
        for (long x = w - 1; x >= 0; x--) {
            long i = y * w + x;
            if (x == 0 || y == h - 1 || x == w - 1) {
                d[i] = 1;
                continue;
            }
            const long nb[4] = {i + 1, i + w + 1, i + w, i + w - 1};
            for (int k = 0; k < 4; k++) {
                int32_t v = pid[nb[k]] != pid[i] ? 1 : d[nb[k]] + 1;
                if (v < d[i])
                    d[i] = v;
            }
        }
    for (size_t r = 0; r < nreg; r++)
        reg[r].pole = -1, reg[r].pole_dist = 0;
    for (long i = 0; i < w * h; i++) {
        region *g = &reg[pid[i]];
        if (d[i] > g->pole_dist)
            g->pole = i, g->pole_dist = d[i];
    }
    for (int k = 0; k < 2; k++) {
        long room = text_room(2 - k);
        for (size_t r = 0; r < nreg; r++)
            reg[r].run_len[k] = 0, reg[r].run_mid[k] = -1;
        for (long y = 0; y < h; y++)
            for (long x = 0; x < w;) {
                long i = y * w + x, x0 = x;
                if (d[i] < room) {
                    x++;
                    continue;
                }
                while (x < w && pid[y * w + x] == pid[i] &&
                       d[y * w + x] >= room)
                    x++;
                region *g = &reg[pid[i]];
                if (x - x0 > g->run_len[k])
                    g->run_len[k] = x - x0, g->run_mid[k] = i + (x - x0) / 2;
            }
    }
    free(d);
    return 0;
}

/* Whether a w x h box at (x, y) lies inside region `r` on the map. */
static int fits(const scale *s, const uint32_t *pid, uint32_t r, long x,
                long y, long w, long h)
{
    if (x < 0 || y < 0 || x + w > s->w || y + h > s->h)
        return 0;
    for (long j = y; j < y + h; j++)
        for (long i = x; i < x + w; i++)
            if (pid[j * s->w + i] != r)
                return 0;
    return 1;
}

/* Puts region r's name (large), else its id (large, then small), at its
 * pole, else in the middle of its longest roomy run, when the text and its
 * rim fit inside the region there. */
static int label(image *im, long mx, long my, const scale *s,
                 const uint32_t *pid, const region *reg, uint32_t r)
{
    const region *g = &reg[r];
    if (g->id == 0 || g->pole < 0)
        return 0;
    char name[NAME_MAX_SHOWN + 1] = "", id[16];
    if (g->name) {
        snprintf(name, sizeof name, "%s", g->name);
        for (char *p = name; *p; p++)
            if (*p == '_')
                *p = ' ';
    }
    snprintf(id, sizeof id, "%d", (int)g->id);
    const struct { const char *t; int fs; } opt[] = {
        {name, 2}, {id, 2}, {id, 1},
    };
    for (size_t k = 0; k < sizeof opt / sizeof opt[0]; k++) {
        if (!opt[k].t[0])
            continue;
        int fs = opt[k].fs;
        long tw = text_width(opt[k].t, fs), th = text_height(opt[k].t, fs);
        const long at[2] = {g->pole, g->run_mid[fs == 2 ? 0 : 1]};
        for (int a = 0; a < 2; a++) {
            if (at[a] < 0)
                continue;
            long x = at[a] % s->w - tw / 2, y = at[a] / s->w - th / 2;
            if (fits(s, pid, r, x - fs, y - fs, tw + 2 * fs, th + 2 * fs)) {
                text_rim(im, mx + x, my + y, opt[k].t, fs);
                return 1;
            }
        }
    }
    return 0;
}

/* ---- legend ------------------------------------------------------------- */

static void share_text(char *buf, size_t n, double pct)
{
    if (pct >= 9.995)
        snprintf(buf, n, "%.1f%%", pct);
    else if (pct >= 0.005)
        snprintf(buf, n, "%.2f%%", pct);
    else
        snprintf(buf, n, "<0.01%%");
}

static void swatch(image *im, long x, long y, uint32_t c, int hatched)
{
    long sz = 7 * FS;
    for (long j = 0; j < sz; j++)
        for (long i = 0; i < sz; i++)
            dot(im, x + i, y + j,
                hatched && (i + j) % HATCH == 0 ? mix(c, INK, 110) : c);
    frame(im, x, y, sz, sz, INK);
}

/* ---- PNG ---------------------------------------------------------------- */

static char png_msg[256];

static void png_fail(png_structp png, png_const_charp msg)
{
    snprintf(png_msg, sizeof png_msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static int write_png(const char *path, const char *final, const image *im,
                     const char *title)
{
    FILE *volatile fp = fopen(path, "wb");
    if (!fp)
        return copy_err("cannot write %s: %s", final, strerror(errno));
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                              png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, &info);
        fclose(fp);
        return copy_err("cannot write %s: out of memory", final);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(fp);
        return copy_err("cannot write %s: %s", final, png_msg);
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    char software[64];
    snprintf(software, sizeof software, "rasterstat (raster %s)",
             raster_version_string());
    png_text txt[3] = {
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Title",
         .text = (char *)title},
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Software",
         .text = software},
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Comment",
         .text = "RASTER region mesh; row 0 of the mask at the bottom"},
    };
    png_set_text(png, info, txt, 3);
    png_write_info(png, info);
    for (long y = 0; y < im->h; y++)
        png_write_row(png, im->rgb + (size_t)y * (size_t)im->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    int bad = fflush(fp) != 0 || ferror(fp);
    int e = errno;
    if (fclose(fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        return copy_err("cannot write %s: %s", final, strerror(e));
    return 0;
}

/* ---- the picture -------------------------------------------------------- */

int plot_mesh_png(const char *path, const char *title,
                  const raster_mask *mask, const raster_mesh *mesh,
                  plot_info *info)
{
    size_t ny, nx, th, tw, mny, mnx;
    raster_mesh_shape(mesh, &ny, &nx, &th, &tw);
    raster_mask_shape(mask, &mny, &mnx);
    if (mny != ny || mnx != nx)
        return copy_err("plot: the mask is %zu x %zu, the mesh %zu x %zu",
                        mny, mnx, ny, nx);
    size_t nreg = raster_mesh_nregions(mesh), nchunks =
        raster_mesh_nchunks(mesh);
    int rc = -1;
    region *reg = calloc(nreg, sizeof *reg);
    region **order = calloc(nreg, sizeof *order);
    uint32_t *pid = NULL;
    unsigned char *mixed = NULL;
    image im = {0, 0, NULL};
    copy_out out = {NULL, NULL};
    if (!reg || !order)
        goto oom;

    /* Colours: land grey, the others by decreasing size. */
    for (size_t i = 0; i < nreg; i++) {
        raster_region_stats st;
        raster_mesh_region(mesh, i, &st);
        reg[i].id = st.id;
        reg[i].cells = st.cells;
        reg[i].name = raster_mask_region_name(mask, st.id);
        order[i] = &reg[i];
    }
    qsort(order, nreg, sizeof *order, by_size);
    for (size_t i = 0, rank = 0; i < nreg; i++) {
        order[i]->colour = order[i]->id == 0 ? LAND : palette_colour(rank++);
        order[i]->listed = i < LEGEND_MAX;
    }
    size_t nlisted = nreg < LEGEND_MAX ? nreg : LEGEND_MAX;
    size_t nrows = nlisted + (nlisted < nreg); /* + "N more" */

    /* Scale: enlarge small grids, reduce large ones. */
    scale s = {1, 1, ny, nx, 0, 0};
    size_t longer = ny > nx ? ny : nx;
    if (longer <= MAP_TARGET) {
        s.num = MAP_TARGET / longer;
        if (s.num > MAX_ENLARGE)
            s.num = MAX_ENLARGE;
    } else {
        s.den = (longer + MAP_TARGET - 1) / MAP_TARGET;
    }
    s.w = (long)((nx * s.num + s.den - 1) / s.den);
    s.h = (long)((ny * s.num + s.den - 1) / s.den);
    size_t npx = (size_t)s.w * (size_t)s.h;
    pid = malloc(npx * sizeof *pid);
    mixed = calloc(npx, 1);
    if (!pid || !mixed)
        goto oom;
    const int32_t *ids = raster_mask_values(mask);
    if (!ids)
        goto oom;
    if (map_regions(&s, ids, reg, nreg, pid) != 0 ||
        find_poles(&s, pid, reg, nreg) != 0)
        goto done;
    size_t nmixed = 0;
    for (size_t i = 0; i < nchunks; i++) {
        raster_chunk c;
        raster_mesh_chunk(mesh, i, &c);
        if (!c.mixed)
            continue;
        nmixed++;
        for (long y = px_y(&s, c.y0); y < px_y(&s, c.y0 + c.h); y++)
            for (long x = px_x(&s, c.x0); x < px_x(&s, c.x0 + c.w); x++)
                mixed[(size_t)(s.h - 1 - y) * (size_t)s.w + (size_t)x] = 1;
    }

    /* Text. */
    char line1[512], line2[256], foot[256];
    size_t ntiles = ((ny + th - 1) / th) * ((nx + tw - 1) / tw);
    snprintf(line1, sizeof line1, "RASTER mesh of %s", title);
    snprintf(line2, sizeof line2,
             "grid %zu x %zu, tiles %zu x %zu: %zu tiles, %zu mixed (%.0f%%);"
             " %zu chunks: %zu pure, %zu mixed", ny, nx, th, tw, ntiles,
             nmixed, 100.0 * (double)nmixed / (double)ntiles, nchunks,
             nchunks - nmixed, nmixed);
    int outlines = th * s.num / s.den >= MIN_TILE_PX &&
                   tw * s.num / s.den >= MIN_TILE_PX;
    int n = s.den > 1
        ? snprintf(foot, sizeof foot, "row 0 at the bottom; 1 px = %zu x %zu "
                   "cells (most frequent id)", s.den, s.den)
        : snprintf(foot, sizeof foot, "row 0 at the bottom; %zu x %zu px per "
                   "cell", s.num, s.num);
    if (!outlines && n > 0 && (size_t)n < sizeof foot)
        snprintf(foot + n, sizeof foot - (size_t)n, "; tiles under %d px: "
                 "no chunk outlines", MIN_TILE_PX);

    /* Legend entries: "id name share", aligned. */
    int idw = 2, namew = 6; /* the column heads */
    for (size_t i = 0; i < nreg; i++) {
        if (!reg[i].listed)
            continue;
        char b[16];
        int w = snprintf(b, sizeof b, "%d", (int)reg[i].id);
        idw = w > idw ? w : idw;
        size_t nl = reg[i].name ? strlen(reg[i].name) : 1;
        if (nl > NAME_MAX_SHOWN)
            nl = NAME_MAX_SHOWN;
        namew = (int)nl > namew ? (int)nl : namew;
    }
    const long lh = 11 * FS, margin = 6 * FS, gap = 8 * FS;
    char more[64];
    snprintf(more, sizeof more, "+ %zu smaller regions", nreg - nlisted);
    int textw = idw + 1 + namew + 1 + 6;
    if (nlisted < nreg && (int)strlen(more) > textw)
        textw = (int)strlen(more);
    const long sw = 7 * FS, entry_w = sw + 3 * FS + (long)textw * 6 * FS;
    const long key_rows = 3; /* outline, hatch, column heads */
    long avail = s.h + 2 + lh - key_rows * lh;
    long per_col = avail / lh > 8 ? avail / lh : 8;
    long ncol = ((long)nrows + per_col - 1) / per_col;
    long rows = (long)nrows < per_col ? (long)nrows : per_col;
    long legend_w = ncol * entry_w + (ncol - 1) * gap;
    long legend_h = (key_rows + rows) * lh;
    /* the key's lines may be wider than the entries (short ids, no names):
     * the legend takes the widest, else the image clips it */
    static const char *const key[] = {"chunk boundary",
                                      "mixed chunk (hatched)"};
    for (size_t k = 0; k < sizeof key / sizeof *key; k++) {
        long kw = sw + 3 * FS + text_width(key[k], FS);
        legend_w = kw > legend_w ? kw : legend_w;
    }

    /* Layout: title on top, map (with its frame) left, legend right,
     * footnote under the map. */
    long top = margin + 2 * lh + 2 * FS;
    long mx = margin + 1, my = top + 1;
    long lx = mx + s.w + 1 + gap;
    im.w = lx + legend_w + margin;
    long tw1 = margin + text_width(line1, FS) + margin;
    long tw2 = margin + text_width(line2, FS) + margin;
    long tw3 = mx + text_width(foot, FS) + margin;
    im.w = im.w > tw1 ? im.w : tw1;
    im.w = im.w > tw2 ? im.w : tw2;
    im.w = im.w > tw3 ? im.w : tw3;
    long body_h = s.h + 2 + lh;
    im.h = top + (body_h > legend_h ? body_h : legend_h) + margin;
    im.rgb = malloc((size_t)im.w * (size_t)im.h * 3);
    if (!im.rgb)
        goto oom;
    memset(im.rgb, 0xff, (size_t)im.w * (size_t)im.h * 3);
    text(&im, margin, margin, line1, FS, INK);
    text(&im, margin, margin + lh, line2, FS, INK);

    /* The map: colours, hatching over mixed chunks, chunk outlines. */
    for (long y = 0; y < s.h; y++)
        for (long x = 0; x < s.w; x++) {
            size_t i = (size_t)y * (size_t)s.w + (size_t)x;
            uint32_t c = reg[pid[i]].colour;
            if (mixed[i] && (x + y) % HATCH == 0)
                c = mix(c, INK, 110);
            dot(&im, mx + x, my + y, c);
        }
    for (size_t i = 0; outlines && i < nchunks; i++) {
        raster_chunk c;
        raster_mesh_chunk(mesh, i, &c);
        long x0 = px_x(&s, c.x0), x1 = px_x(&s, c.x0 + c.w);
        long y0 = px_y(&s, c.y0), y1 = px_y(&s, c.y0 + c.h);
        x1 = x1 < s.w ? x1 : s.w - 1;
        y1 = y1 < s.h ? y1 : s.h - 1;
        if (c.x0 > 0) /* left edge, rows y0..y1 from the bottom */
            box(&im, mx + x0, my + s.h - 1 - y1, 1, y1 - y0 + 1, INK);
        if (c.y0 > 0) /* bottom edge */
            box(&im, mx + x0, my + s.h - 1 - y0, x1 - x0 + 1, 1, INK);
    }
    frame(&im, mx - 1, my - 1, s.w + 2, s.h + 2, INK);
    size_t labelled = 0;
    for (size_t r = 0; r < nreg; r++)
        labelled += (size_t)label(&im, mx, my, &s, pid, reg, (uint32_t)r);
    text(&im, mx, my + s.h + 1 + 3 * FS, foot, FS, INK);

    /* Legend. */
    long ly = top, tx = lx + sw + 3 * FS;
    box(&im, lx, ly, sw, sw, PAPER);
    frame(&im, lx, ly, sw, sw, INK);
    box(&im, lx + sw / 2, ly, 1, sw, INK);
    text(&im, tx, ly, key[0], FS, INK);
    swatch(&im, lx, ly + lh, LAND, 1);
    text(&im, tx, ly + lh, key[1], FS, INK);
    char head[128];
    snprintf(head, sizeof head, "%*s %-*s %6s", idw, "id", namew, "region",
             "cells");
    text(&im, tx, ly + 2 * lh, head, FS, mix(INK, PAPER, 100));
    for (size_t i = 0, k = 0; i <= nreg && k < nrows; i++) {
        if (i < nreg && !reg[i].listed)
            continue;
        long col = (long)k / per_col, row = (long)k % per_col;
        long x = lx + col * (entry_w + gap), y = ly + (key_rows + row) * lh;
        k++;
        if (i == nreg) {
            text(&im, x + sw + 3 * FS, y, more, FS, INK);
            break;
        }
        char share[16], name[NAME_MAX_SHOWN + 1], entry[128];
        share_text(share, sizeof share,
                   100.0 * (double)reg[i].cells / ((double)ny * (double)nx));
        snprintf(name, sizeof name, "%s", reg[i].name ? reg[i].name : "-");
        snprintf(entry, sizeof entry, "%*d %-*s %6s", idw, (int)reg[i].id,
                 namew, name, share);
        swatch(&im, x, y, reg[i].colour, 0);
        text(&im, x + sw + 3 * FS, y, entry, FS, INK);
    }

    if (copy_out_begin(&out, path) != 0)
        goto done;
    if (write_png(out.tmp, path, &im, line1) != 0) {
        copy_out_abort(&out);
        goto done;
    }
    if (copy_out_commit(&out) != 0)
        goto done;
    if (info) {
        info->width = (size_t)im.w;
        info->height = (size_t)im.h;
        info->map_x = (size_t)mx;
        info->map_y = (size_t)my;
        info->map_w = (size_t)s.w;
        info->map_h = (size_t)s.h;
        info->px_per_cell = s.num;
        info->cells_per_px = s.den;
        info->outlines = outlines;
        info->labelled = labelled;
    }
    rc = 0;
    goto done;
oom:
    copy_err("out of memory drawing the plot");
done:
    free(reg);
    free(order);
    free(pid);
    free(mixed);
    free(im.rgb);
    return rc;
}
