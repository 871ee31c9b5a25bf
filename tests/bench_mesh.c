/*
 * bench_mesh.c - times raster_mesh_build on a 2400 x 3600 mask that looks
 * like ocean basins (POP-style ids 0 land, 1 Southern, 2 Pacific, 3 Indian,
 * 6 Atlantic, 10 Arctic) with 50 x 50 tiles, or on a mask read from a
 * netCDF file.
 *
 *   bench_mesh                         synthetic mask, 50 x 50 tiles
 *   bench_mesh FILE:VAR [H,W [REPS]]   a mask variable from a netCDF file
 *
 * Prints the median and minimum build time over the repetitions (default
 * 20), the chunk count, the mixed tiles and the regions. A benchmark, not a
 * timed test: it exits 0 whenever the build works.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raster.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A wavy offset in [-amp, amp]: sum of a few sines, deterministic. */
static double wave(double t, double amp, double f)
{
    return amp * (0.5 * sin(t * f) + 0.3 * sin(t * f * 2.7 + 1.3) +
                  0.2 * sin(t * f * 7.1 + 0.4));
}

/* Island/continent blobs: centre, radius, a lobed boundary, and a
 * horizontal squeeze (> 1: narrower than tall). */
typedef struct blob {
    double cy, cx, r, lobes, phase, squeeze;
} blob;

static void make_basins(int32_t *mask, size_t ny, size_t nx)
{
    const double H = (double)ny, W = (double)nx;
    const blob land[] = {
        /* continents */
        {0.30 * H, 0.30 * W, 0.16 * H, 5, 0.3, 1.6}, /* "North America" */
        {0.60 * H, 0.36 * W, 0.15 * H, 4, 1.7, 2.2}, /* "South America" */
        {0.25 * H, 0.72 * W, 0.17 * H, 7, 1.1, 0.6}, /* "Eurasia" */
        {0.52 * H, 0.56 * W, 0.14 * H, 4, 2.0, 1.3}, /* "Africa" */
        {0.64 * H, 0.86 * W, 0.07 * H, 6, 0.7, 0.9}, /* "Australia" */
        /* islands */
        {0.45 * H, 0.12 * W, 0.02 * H, 3, 0.0, 1.0},
        {0.55 * H, 0.20 * W, 0.015 * H, 5, 1.0, 1.0},
        {0.42 * H, 0.95 * W, 0.03 * H, 4, 2.5, 1.0},
        {0.20 * H, 0.47 * W, 0.04 * H, 6, 0.9, 1.0},
    };
    const size_t nland = sizeof land / sizeof *land;
    for (size_t y = 0; y < ny; y++) {
        double fy = (double)y;
        for (size_t x = 0; x < nx; x++) {
            double fx = (double)x;
            int32_t id;
            /* latitude bands with wavy edges: Arctic on top, Southern Ocean
             * at the bottom */
            if (fy < 0.10 * H + wave(fx / W, 0.04 * H, 9.0))
                id = 10;
            else if (fy > 0.80 * H + wave(fx / W, 0.03 * H, 13.0))
                id = 1;
            else {
                /* basins by longitude, with wavy meridional boundaries */
                double bend = wave(fy / H, 0.05 * W, 11.0);
                double u = fx + bend;
                if (u < 0.33 * W)
                    id = 2; /* Pacific */
                else if (u < 0.57 * W)
                    id = 6; /* Atlantic */
                else if (u < 0.84 * W)
                    id = 3; /* Indian */
                else
                    id = 2; /* Pacific again (wraps round) */
            }
            for (size_t b = 0; b < nland; b++) {
                double dy = fy - land[b].cy;
                double dx = (fx - land[b].cx) * land[b].squeeze;
                double rmax = 1.35 * land[b].r;
                if (dy * dy + dx * dx >= rmax * rmax)
                    continue; /* outside every possible lobe */
                double ang = atan2(dy, dx);
                double r = land[b].r *
                           (1.0 + 0.25 * sin(land[b].lobes * ang +
                                             land[b].phase) +
                            0.08 * sin(23.0 * ang + land[b].phase));
                if (dy * dy + dx * dx < r * r) {
                    id = 0;
                    break;
                }
            }
            mask[y * nx + x] = id;
        }
    }
    /* Antarctica: land under a wavy line at the very bottom. */
    for (size_t x = 0; x < nx; x++) {
        double edge = 0.93 * H + wave((double)x / W, 0.02 * H, 17.0);
        for (size_t y = (size_t)edge; y < ny; y++)
            mask[y * nx + x] = 0;
    }
}

static int parse_tile(const char *s, size_t *h, size_t *w)
{
    char *end;
    unsigned long long a = strtoull(s, &end, 10);
    if (end == s || *end != ',')
        return -1;
    const char *t = end + 1;
    unsigned long long b = strtoull(t, &end, 10);
    if (end == t || *end != '\0' || a == 0 || b == 0)
        return -1;
    *h = (size_t)a;
    *w = (size_t)b;
    return 0;
}

int main(int argc, char **argv)
{
    size_t ny = 2400, nx = 3600, th = 50, tw = 50;
    int reps = 20;
    int32_t *owned = NULL;
    raster_mask *loaded = NULL;
    const int32_t *mask;
    char source[600] = "synthetic basins";

    if (argc > 1 && (strcmp(argv[1], "-h") == 0 ||
                     strcmp(argv[1], "--help") == 0)) {
        printf("usage: %s [FILE:VAR [H,W [REPS]]]\n", argv[0]);
        return 0;
    }
    if (argc > 4) {
        fprintf(stderr, "usage: %s [FILE:VAR [H,W [REPS]]]\n", argv[0]);
        return 2;
    }
    if (argc > 1) {
        char spec[512];
        snprintf(spec, sizeof spec, "%s", argv[1]);
        char *colon = strrchr(spec, ':');
        if (!colon || colon == spec || colon[1] == '\0') {
            fprintf(stderr, "bench_mesh: mask must be FILE:VAR, got '%s'\n",
                    argv[1]);
            return 2;
        }
        *colon = '\0';
        int rc = raster_mask_load(spec, colon + 1, &loaded);
        if (rc) {
            fprintf(stderr, "bench_mesh: %s: %s\n", raster_strerror(rc),
                    raster_errmsg());
            return 1;
        }
        raster_mask_shape(loaded, &ny, &nx);
        mask = raster_mask_values(loaded);
        snprintf(source, sizeof source, "%s", argv[1]);
        if (argc > 2 && parse_tile(argv[2], &th, &tw) != 0) {
            fprintf(stderr, "bench_mesh: tile must be H,W, got '%s'\n",
                    argv[2]);
            raster_mask_free(loaded);
            return 2;
        }
        if (argc > 3) {
            reps = atoi(argv[3]);
            if (reps < 1) {
                fprintf(stderr, "bench_mesh: REPS must be >= 1\n");
                raster_mask_free(loaded);
                return 2;
            }
        }
        if (argc <= 2) {
            if (th > ny) th = ny;
            if (tw > nx) tw = nx;
        }
    } else {
        owned = malloc(ny * nx * sizeof *owned);
        if (!owned) {
            fprintf(stderr, "bench_mesh: out of memory\n");
            return 1;
        }
        make_basins(owned, ny, nx);
        mask = owned;
    }

    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms) {
        fprintf(stderr, "bench_mesh: out of memory\n");
        return 1;
    }
    raster_mesh *mesh = NULL;
    for (int r = 0; r < reps; r++) {
        raster_mesh_free(mesh);
        mesh = NULL;
        double t0 = now_ms();
        int rc = raster_mesh_build(mask, ny, nx, th, tw, &mesh);
        ms[r] = now_ms() - t0;
        if (rc) {
            fprintf(stderr, "bench_mesh: raster_mesh_build: %s: %s\n",
                    raster_strerror(rc), raster_errmsg());
            free(ms);
            free(owned);
            raster_mask_free(loaded);
            return 1;
        }
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    double median = reps % 2 ? ms[reps / 2]
                             : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);

    size_t nchunks = raster_mesh_nchunks(mesh), mixed = 0, pure_cells = 0;
    for (size_t i = 0; i < nchunks; i++) {
        raster_chunk c;
        if (raster_mesh_chunk(mesh, i, &c) == RASTER_OK) {
            if (c.mixed)
                mixed++;
            else
                pure_cells += c.h * c.w;
        }
    }
    size_t ntiles = ((ny + th - 1) / th) * ((nx + tw - 1) / tw);

    printf("mask %s: %zu x %zu, tiles %zu x %zu (%zu tiles)\n", source, ny,
           nx, th, tw, ntiles);
    printf("raster_mesh_build over %d runs: median %.3f ms, min %.3f ms, "
           "max %.3f ms\n", reps, median, ms[0], ms[reps - 1]);
    printf("chunks %zu: %zu mixed tiles (%.1f%% of tiles), %zu pure chunks "
           "(%.1f%% of cells); regions %zu\n",
           nchunks, mixed, 100.0 * (double)mixed / (double)ntiles,
           nchunks - mixed, 100.0 * (double)pure_cells / (double)(ny * nx),
           raster_mesh_nregions(mesh));
    printf("%12s %10s %6s %6s %12s %12s %8s\n", "region", "cells", "pure",
           "mixed", "bbox_tile", "read", "rate");
    for (size_t i = 0; i < raster_mesh_nregions(mesh); i++) {
        raster_region_stats st;
        if (raster_mesh_region(mesh, i, &st) != RASTER_OK)
            continue;
        printf("%12d %10zu %6zu %6zu %12zu %12zu %8.3f\n", (int)st.id,
               st.cells, st.pure_chunks, st.mixed_chunks, st.bbox_tile_cells,
               st.read_cells, st.data_reduction_rate);
    }

    raster_mesh_free(mesh);
    free(ms);
    free(owned);
    raster_mask_free(loaded);
    return 0;
}
