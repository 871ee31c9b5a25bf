/*
 * suggest.c - rasterstat --suggest-tile (see suggest.h and rasterstat
 * --help for the score).
 *
 * Candidates: squares s x s, and s x 2s and 2s x s (long side at most 256),
 * for s on a 1-1.5-2 ladder from 2 to 256; for s >= 8 also the nearest tile
 * whose sides divide the grid (within 3/4 s .. 4/3 s: no thin edge tiles);
 * the current tile (--chunk or the file's). All clipped to the grid, with at
 * most MAX_TILES tiles each, deduplicated.
 */
#include "suggest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define MAX_CANDIDATES 64
#define MAX_TILES 65536    /* smaller tiles are not worth building */
#define TIME_BUDGET_S 20.0 /* stop building candidates after this */

typedef struct cand {
    size_t h, w;
    int base;
    size_t nchunks, ntiles, mixed, mixed_cells, index_rows, reads, nc_reads;
    double drr_mean, drr_min;
    int32_t worst;
    size_t chunk_bytes, netcdf_bytes;
    double eff, tile_factor, score;
    double ms;
} cand;

static const size_t ladder[] = {2,  3,  4,  6,   8,   12,  16, 24,
                                32, 48, 64, 96, 128, 192, 256};
#define NLADDER (sizeof ladder / sizeof ladder[0])

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void add(cand *c, size_t *n, size_t ny, size_t nx, size_t h, size_t w,
                int base)
{
    if (h > ny && !base) /* the current tile is kept as given */
        h = ny;
    if (w > nx && !base)
        w = nx;
    if (!base && ((ny + h - 1) / h) * ((nx + w - 1) / w) > MAX_TILES)
        return;
    for (size_t i = 0; i < *n; i++)
        if (c[i].h == h && c[i].w == w) {
            c[i].base |= base;
            return;
        }
    if (*n < MAX_CANDIDATES)
        c[(*n)++] = (cand){.h = h, .w = w, .base = base};
}

/* The divisor of n nearest s within [3s/4, 4s/3] (larger on ties), or 0. */
static size_t near_divisor(size_t n, size_t s)
{
    size_t best = 0, bestd = (size_t)-1;
    for (size_t d = (3 * s + 3) / 4; d <= 4 * s / 3 && d <= n; d++) {
        if (n % d)
            continue;
        size_t dist = d > s ? d - s : s - d;
        if (dist <= bestd) {
            best = d;
            bestd = dist;
        }
    }
    return best;
}

static int chosen(const suggest_opts *o, int32_t id)
{
    if (o->nids == 0)
        return 1;
    for (size_t i = 0; i < o->nids; i++)
        if (o->ids[i] == id)
            return 1;
    return 0;
}

/* Builds candidate c's mesh and fills in its figures; RASTER_* status. */
static int evaluate(const raster_mask *mask, const suggest_opts *o, cand *c,
                    size_t *raster_bytes)
{
    size_t ny, nx;
    raster_mask_shape(mask, &ny, &nx);
    double t0 = now_s();
    raster_mesh *m;
    int rc = raster_mesh_build(raster_mask_values(mask), ny, nx, c->h, c->w,
                               &m);
    if (rc != RASTER_OK)
        return rc;
    c->nchunks = raster_mesh_nchunks(m);
    c->ntiles = ((ny + c->h - 1) / c->h) * ((nx + c->w - 1) / c->w);
    for (size_t i = 0; i < c->nchunks; i++) {
        raster_chunk k;
        raster_mesh_chunk(m, i, &k);
        if (k.mixed) {
            c->mixed++;
            c->mixed_cells += k.h * k.w;
        }
    }
    /* one chunk: h x w cells x the outer chunk sizes; a region read takes
     * one request per chunk, per block of outer chunks */
    double ov = (double)o->overhead, wsum = 0, lsum = 0, esum = 0;
    double per = (double)(o->elem * o->outer);
    size_t cells = 0;
    c->drr_min = INFINITY;
    for (size_t i = 0; i < raster_mesh_nregions(m); i++) {
        raster_region_stats s;
        raster_mesh_region(m, i, &s);
        c->index_rows += s.pure_chunks + s.mixed_chunks;
        if (!chosen(o, s.id))
            continue;
        size_t reads = s.pure_chunks + s.mixed_chunks;
        size_t nc_reads = ((s.tbox_y1 - s.tbox_y0 + c->h - 1) / c->h) *
                          ((s.tbox_x1 - s.tbox_x0 + c->w - 1) / c->w);
        double drr = s.data_reduction_rate;
        double eff = ((double)s.bbox_tile_cells * per + (double)nc_reads * ov) /
                     ((double)s.read_cells * per + (double)reads * ov);
        double wt = (double)s.cells;
        wsum += wt;
        lsum += wt * log(drr);
        esum += wt * log(eff);
        if (drr < c->drr_min) {
            c->drr_min = drr;
            c->worst = s.id;
        }
        c->reads += reads;
        c->nc_reads += nc_reads;
        c->chunk_bytes += s.read_cells * o->elem;
        c->netcdf_bytes += s.bbox_tile_cells * o->elem;
        cells += s.cells;
    }
    raster_mesh_free(m);
    *raster_bytes = cells * o->elem;
    c->drr_mean = exp(lsum / wsum);
    c->eff = exp(esum / wsum);
    double tb = (double)(c->h * c->w) * per;
    c->tile_factor = tb >= ov ? 1.0 : tb / ov;
    c->score = c->eff * c->tile_factor;
    c->ms = 1e3 * (now_s() - t0);
    return RASTER_OK;
}

static int by_score(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    if (x->nchunks != y->nchunks)
        return x->nchunks < y->nchunks ? -1 : 1;
    return x->h * x->w < y->h * y->w ? 1 : -1;
}

static void json_cand(const cand *c, size_t rank, size_t ncells)
{
    printf("{\"tile\":[%zu,%zu],\"rank\":%zu,\"base\":%s,\"nchunks\":%zu,"
           "\"ntiles\":%zu,\"mixed_chunks\":%zu,\"mixed_tile_share\":%.6f,"
           "\"mixed_cell_share\":%.6f,\"index_rows\":%zu,\"reads\":%zu,"
           "\"netcdf_reads\":%zu,"
           "\"drr_mean\":%.6f,\"drr_worst\":%.6f,\"worst_region\":%d,"
           "\"chunk_read_bytes\":%zu,\"netcdf_bbox_bytes\":%zu,"
           "\"effective_drr\":%.6f,\"tile_factor\":%.6f,\"score\":%.6f,"
           "\"build_ms\":%.3f}",
           c->h, c->w, rank, c->base ? "true" : "false", c->nchunks,
           c->ntiles, c->mixed, (double)c->mixed / (double)c->ntiles,
           (double)c->mixed_cells / (double)ncells, c->index_rows, c->reads,
           c->nc_reads,
           c->drr_mean, c->drr_min, (int)c->worst, c->chunk_bytes,
           c->netcdf_bytes, c->eff, c->tile_factor, c->score, c->ms);
}

static const char *region_label(const raster_mask *mask, int32_t id,
                                char *buf, size_t len)
{
    const char *name = raster_mask_region_name(mask, id);
    if (name)
        snprintf(buf, len, "%.20s", name);
    else
        snprintf(buf, len, "%d", (int)id);
    return buf;
}

static void print_table(const raster_mask *mask, const suggest_opts *o,
                        const cand *c, size_t n, size_t raster_bytes,
                        double total_ms, size_t skipped)
{
    size_t ny, nx;
    raster_mask_shape(mask, &ny, &nx);
    double ncells = (double)ny * (double)nx;
    printf("%s %s:%s  grid %zu x %zu, ", o->is_file ? "var    " : "mask   ",
           o->file, o->var, ny, nx);
    if (o->nids)
        printf("%zu chosen regions", o->nids);
    else
        printf("all regions");
    printf(", %zu-byte values, %zu value%s per cell in a chunk (outer chunk "
           "sizes), per-request overhead %zu bytes\n", o->elem, o->outer,
           o->outer == 1 ? "" : "s", o->overhead);
    printf("raster  reads %.3f MB per record for these regions, whatever "
           "the tile (their own bytes, two runs per region)\n",
           1e-6 * (double)raster_bytes);
    printf("tried   %zu tile shapes in %.0f ms", n, total_ms);
    if (skipped)
        printf(" (%zu more skipped: time budget)", skipped);
    printf("\n\n");
    printf("%2s %4s %-9s %7s %6s %6s %7s %6s %6s %-14s %6s %7s %9s %9s %7s "
           "%6s %5s %6s\n", "", "rank", "tile", "chunks", "mixT%", "mixC%",
           "idxrows", "DRR", "DRRmin", "(worst)", "reads", "ncreads",
           "chunk_MB", "netcdf_MB", "nc/rst", "effDRR", "tileF", "score");
    for (size_t i = 0; i < n; i++) {
        char tile[32], who[24];
        snprintf(tile, sizeof tile, "%zux%zu", c[i].h, c[i].w);
        const char *mark = i == 0 ? (c[i].base ? "*=" : "*")
                                  : (c[i].base ? "=" : "");
        printf("%2s %4zu %-9s %7zu %6.1f %6.1f %7zu %6.3f %6.3f %-14s %6zu "
               "%7zu %9.3f %9.3f %7.3f %6.3f %5.2f %6.3f\n", mark, i + 1, tile,
               c[i].nchunks, 100.0 * (double)c[i].mixed / (double)c[i].ntiles,
               100.0 * (double)c[i].mixed_cells / ncells, c[i].index_rows,
               c[i].drr_mean, c[i].drr_min,
               region_label(mask, c[i].worst, who, sizeof who), c[i].reads,
               c[i].nc_reads,
               1e-6 * (double)c[i].chunk_bytes,
               1e-6 * (double)c[i].netcdf_bytes,
               (double)c[i].netcdf_bytes / (double)raster_bytes, c[i].eff,
               c[i].tile_factor, c[i].score);
    }
    char who[24];
    printf("\nrecommended %zu x %zu: DRR %.3f (worst %.3f, %s), %zu chunks, "
           "%.1f%% of tiles mixed, score %.3f\n", c[0].h, c[0].w,
           c[0].drr_mean, c[0].drr_min,
           region_label(mask, c[0].worst, who, sizeof who), c[0].nchunks,
           100.0 * (double)c[0].mixed / (double)c[0].ntiles, c[0].score);
    for (size_t i = 1; i < n; i++)
        if (c[i].base)
            printf("current     %zu x %zu ranks %zu of %zu: score %.3f "
                   "(%.0f%% of the best)\n", c[i].h, c[i].w, i + 1, n,
                   c[i].score, 100.0 * c[i].score / c[0].score);
    printf("(* recommended, = current tile; mixT%%/mixC%%: mixed share of "
           "tiles/cells; idxrows: index table rows; DRR: cell-weighted "
           "geometric mean of the regions' data reduction rates; reads: "
           "chunks a chunk-granular reader requests to read each region "
           "once, ncreads: the chunks netCDF reads for their bounding boxes; "
           "chunk_MB: the chunk-granular bytes; netcdf_MB: tile-aligned "
           "bounding boxes; nc/rst = netcdf_MB / raster's bytes; effDRR: "
           "DRR with every chunk read on both sides charged the overhead; "
           "tileF = min(1, chunk bytes / overhead); score = effDRR x tileF. "
           "MB per record, 10^6 bytes; see --help)\n");
}

static int by_cells(const void *a, const void *b)
{
    const raster_region_stats *x = a, *y = b;
    if (x->cells != y->cells)
        return x->cells < y->cells ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

#define MAX_EXPLAINED 20

/* Why the recommended tile (c[0] of the n sorted candidates): one sentence
 * for the choice, then one per region (the largest MAX_EXPLAINED). */
static int explain(const raster_mask *mask, const suggest_opts *o,
                   const cand *c, size_t n)
{
    size_t ny, nx, best = 0;
    raster_mask_shape(mask, &ny, &nx);
    for (size_t i = 1; i < n; i++)
        if (c[i].eff > c[best].eff)
            best = i;
    printf("\nwhy %zu x %zu: ", c[0].h, c[0].w);
    if (best != 0 && c[best].tile_factor < 1.0)
        printf("smaller tiles such as %zu x %zu would do better against "
               "netCDF's bounding-box read of these regions (effective DRR "
               "%.2f against %.2f), but their chunks of %zu bytes are under "
               "the %zu-byte per-request overhead that every whole-field or "
               "hyperslab read pays per chunk, so they score lower.\n",
               c[best].h, c[best].w, c[best].eff,
               c[0].eff, c[best].h * c[best].w * o->elem * o->outer,
               o->overhead);
    else
        printf("of the %zu shapes tried it makes chunk-by-chunk readers "
               "(netCDF, the paper's chunk-granular read) fetch the fewest "
               "bytes for these regions, each chunk request counted as %zu "
               "bytes (effective DRR %.2f).\n", n, o->overhead, c[0].eff);
    raster_mesh *m;
    int rc = raster_mesh_build(raster_mask_values(mask), ny, nx, c[0].h,
                               c[0].w, &m);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterstat: tile %zu x %zu: %s: %s\n", c[0].h,
                c[0].w, raster_strerror(rc), raster_errmsg());
        return CLI_EINPUT;
    }
    size_t nr = raster_mesh_nregions(m), k = 0;
    raster_region_stats *r = malloc((nr ? nr : 1) * sizeof *r);
    if (!r) {
        raster_mesh_free(m);
        fprintf(stderr, "rasterstat: out of memory\n");
        return CLI_EINPUT;
    }
    for (size_t i = 0; i < nr; i++) {
        raster_mesh_region(m, i, &r[k]);
        if (chosen(o, r[k].id))
            k++;
    }
    raster_mesh_free(m);
    qsort(r, k, sizeof *r, by_cells);
    for (size_t i = 0; i < k && i < MAX_EXPLAINED; i++) {
        char who[24];
        size_t chunks = r[i].pure_chunks + r[i].mixed_chunks;
        printf("  %s: %zu cells in a %zu x %zu box; its %zu chunk%s (%zu "
               "pure, %zu mixed) hold%s %zu cells, which a chunk-by-chunk "
               "reader fetches where netCDF's tile-aligned box takes %zu "
               "(DRR %.2f); raster reads only its %zu cells.\n",
               region_label(mask, r[i].id, who, sizeof who), r[i].cells,
               r[i].bbox_y1 - r[i].bbox_y0, r[i].bbox_x1 - r[i].bbox_x0,
               chunks, chunks == 1 ? "" : "s", r[i].pure_chunks,
               r[i].mixed_chunks, chunks == 1 ? "s" : "", r[i].read_cells,
               r[i].bbox_tile_cells,
               r[i].data_reduction_rate, r[i].cells);
    }
    if (k > MAX_EXPLAINED)
        printf("  (and %zu smaller regions)\n", k - MAX_EXPLAINED);
    free(r);
    return CLI_OK;
}

int suggest_tile(const raster_mask *mask, const suggest_opts *o)
{
    size_t ny, nx;
    raster_mask_shape(mask, &ny, &nx);
    cand *c = calloc(MAX_CANDIDATES, sizeof *c);
    if (!c) {
        fprintf(stderr, "rasterstat: out of memory\n");
        return CLI_EINPUT;
    }
    size_t n = 0;
    if (o->base_h)
        add(c, &n, ny, nx, o->base_h, o->base_w, 1);
    for (size_t i = 0; i < NLADDER; i++) {
        size_t s = ladder[i];
        add(c, &n, ny, nx, s, s, 0);
        if (2 * s <= 256) {
            add(c, &n, ny, nx, s, 2 * s, 0);
            add(c, &n, ny, nx, 2 * s, s, 0);
        }
        size_t dy = near_divisor(ny, s), dx = near_divisor(nx, s);
        if (s >= 8 && dy && dx)
            add(c, &n, ny, nx, dy, dx, 0);
    }
    if (n < 2) {
        fprintf(stderr, "rasterstat: grid %zu x %zu is too small to compare "
                "tile shapes (fewer than two fit)\n", ny, nx);
        free(c);
        return CLI_EINPUT;
    }
    double t0 = now_s();
    size_t done = 0, raster_bytes = 0;
    for (; done < n; done++) {
        if (now_s() - t0 > TIME_BUDGET_S && !c[done].base)
            break;
        int rc = evaluate(mask, o, &c[done], &raster_bytes);
        if (rc != RASTER_OK) {
            fprintf(stderr, "rasterstat: tile %zu x %zu: %s: %s\n",
                    c[done].h, c[done].w, raster_strerror(rc),
                    raster_errmsg());
            free(c);
            return CLI_EINPUT;
        }
    }
    double total_ms = 1e3 * (now_s() - t0);
    size_t skipped = n - done;
    n = done;
    qsort(c, n, sizeof *c, by_score);
    int status = CLI_OK;
    if (!o->json) {
        print_table(mask, o, c, n, raster_bytes, total_ms, skipped);
        status = explain(mask, o, c, n);
    } else {
        printf("{\"%s\":", o->is_file ? "file" : "mask");
        cli_json_string(stdout, o->file);
        printf(",\"var\":");
        cli_json_string(stdout, o->var);
        printf(",\"grid\":[%zu,%zu],\"value_bytes\":%zu,\"overhead_bytes\":"
               "%zu,\"raster_bytes\":%zu,\"skipped\":%zu,\"regions\":",
               ny, nx, o->elem, o->overhead, raster_bytes, skipped);
        if (o->nids) {
            printf("[");
            for (size_t i = 0; i < o->nids; i++)
                printf("%s%d", i ? "," : "", (int)o->ids[i]);
            printf("]");
        } else {
            printf("\"all\"");
        }
        printf(",\n \"candidates\":[");
        for (size_t i = 0; i < n; i++) {
            printf("%s\n  ", i ? "," : "");
            json_cand(&c[i], i + 1, ny * nx);
        }
        printf("],\n \"recommended\":");
        json_cand(&c[0], 1, ny * nx);
        for (size_t i = 0; i < n; i++)
            if (c[i].base) {
                printf(",\n \"current\":");
                json_cand(&c[i], i + 1, ny * nx);
            }
        printf("}\n");
    }
    free(c);
    return status;
}
