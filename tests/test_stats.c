/*
 * test_stats.c - regional statistics (raster_region_statistics) against
 * an independent computation from the same values in a plain netCDF-4
 * file: every numeric type, fill values (written and never written), NaN,
 * weights with their own fill and NaN, whole-record writes, a partial
 * write, an overwrite, an append; one record per block and many; two
 * outer dimensions; the error paths.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <pthread.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hdf5.h>

#include "raster.h"
#include "stats.h"
#include "statstore.h"
#include "regions.h"
#include "testutil.h"
#include "var.h"

#define NT 4 /* records along t (unlimited; the last one appended) */
#define NZ 3
#define NY 7
#define NX 9
#define NCELL (NT * NZ * NY * NX)

static const int types[] = {NC_BYTE, NC_UBYTE, NC_SHORT, NC_USHORT,
                            NC_INT, NC_UINT, NC_INT64, NC_UINT64,
                            NC_FLOAT, NC_DOUBLE};

static int32_t mask[NY * NX];

static void make_mask(void)
{
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            mask[y * NX + x] = (int32_t)(x < 3 ? 1 : (x + y) % 2 ? 2 : 3);
}

/* A value of type t at flat index i, exact in double; NaN now and then
 * for floating types. Large offsets make the sum of squares lose what a
 * two-pass spread keeps. */
static double value(int t, size_t i)
{
    double r = (double)rng_below(1000);
    switch (t) {
    case NC_BYTE: return r / 10 - 50;
    case NC_UBYTE: return r / 5;
    case NC_SHORT: return r * 30 - 15000;
    case NC_USHORT: return r * 60;
    case NC_INT: return r * 2e6 - 1e9;
    case NC_UINT: return r * 4e6;
    case NC_INT64: return r * 1e12 - 3e14;
    case NC_UINT64: return r * 1e15;
    case NC_FLOAT: return i % 17 == 5 ? NAN : r / 8 + 250;
    default: return i % 13 == 2 ? NAN : 1e6 + r / 1024;
    }
}

/* The same box written to the raster variable and the plain one. */
static void put_both(raster_var *v, int pid, int pv, const size_t *start,
                     const size_t *count, const double *vals)
{
    RS(raster_var_put_typed(v, start, count, NULL, NULL, vals, NC_DOUBLE));
    NC(nc_put_vara_double(pid, pv, start, count, vals));
}

/* Writes raster file `rpath` and plain file `ppath` alike: variable "v"
 * of type t over (t, z, y, x), weights "area" over (y, x). Records 0-1
 * whole, record 2 partly, a few cells overwritten with the fill value
 * and other values, record 3 appended whole. */
static int keep_weights; /* write_files names "area" the stats' weights */
static int write_format; /* write_files' format version; 0: the default */

static void write_files(const char *rpath, const char *ppath, int t)
{
    raster_file *f;
    raster_var *v;
    raster_mask *m;
    RS(raster_mask_wrap(mask, NY, NX, &m));
    RS(raster_create(rpath, &f));
    if (write_format)
        RS(raster_file_set_format(f, write_format));
    int r = raster_file_ncid(f), p, d[4], pd[4], pv, ra, pa;
    NC(nc_create(ppath, NC_NETCDF4 | NC_CLOBBER, &p));
    const char *names[4] = {"t", "z", "y", "x"};
    size_t lens[4] = {NC_UNLIMITED, NZ, NY, NX};
    for (int i = 0; i < 4; i++) {
        NC(nc_def_dim(r, names[i], lens[i], &d[i]));
        NC(nc_def_dim(p, names[i], lens[i], &pd[i]));
    }
    NC(nc_def_var(r, "area", NC_DOUBLE, 2, d + 2, &ra));
    NC(nc_def_var(p, "area", NC_DOUBLE, 2, pd + 2, &pa));
    RS(raster_def_var(f, r, "v", t, 4, d, NULL, m, &v));
    NC(nc_def_var(p, "v", t, 4, pd, &pv));
    if (keep_weights)
        RS(raster_var_set_stats_weights(v, "area"));
    raster_mask_free(m);
    if (t == NC_SHORT) { /* a fill value of the writer's choice */
        short fv = -15000 + 30 * 7;
        RS(raster_var_put_att(v, "_FillValue", NC_SHORT, 1, &fv));
        NC(nc_put_att_short(p, pv, "_FillValue", NC_SHORT, 1, &fv));
    }
    double area[NY * NX];
    for (size_t i = 0; i < NY * NX; i++)
        area[i] = i == 4 ? NC_FILL_DOUBLE : i == 20 ? NAN
                                          : 1 + (double)(i % 5) / 4;
    NC(nc_put_var_double(r, ra, area));
    NC(nc_put_var_double(p, pa, area));

    static double vals[NCELL];
    for (size_t i = 0; i < NCELL; i++)
        vals[i] = value(t, i);
    size_t rec = NZ * NY * NX;
    for (size_t k = 0; k < 2; k++) /* whole records */
        put_both(v, p, pv, (size_t[]){k, 0, 0, 0},
                 (size_t[]){1, NZ, NY, NX}, vals + k * rec);
    /* record 2: a box of cells only, the rest never written */
    size_t s2[4] = {2, 1, 2, 1}, c2[4] = {1, 2, 4, 6};
    put_both(v, p, pv, s2, c2, vals + 2 * rec);
    /* overwrites: other values into record 0, the fill value itself into
     * record 1 */
    put_both(v, p, pv, (size_t[]){0, 1, 3, 0}, (size_t[]){1, 1, 2, 5},
             vals + 3 * rec);
    unsigned char fill[8];
    int nofill;
    NC(nc_inq_var_fill(p, pv, &nofill, fill));
    size_t s1[4] = {1, 2, 5, 1}, one[4] = {1, 1, 1, 1};
    RS(raster_var_put(v, s1, one, NULL, fill));
    NC(nc_put_vara(p, pv, s1, one, fill));
    RS(raster_close(f));
    NC(nc_close(p));
    /* record 3 appended after a reopen */
    RS(raster_open(rpath, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    NC(nc_open(ppath, NC_WRITE, &p));
    NC(nc_inq_varid(p, "v", &pv));
    put_both(v, p, pv, (size_t[]){3, 0, 0, 0}, (size_t[]){1, NZ, NY, NX},
             vals + 3 * rec);
    RS(raster_close(f));
    NC(nc_close(p));
}

/* The expected statistics of regions ids (membership flags by id 0..3) at
 * each outer index, from the plain file: long double sums, two passes. */
static void expect(const char *ppath, int t, const int *want, int weighted,
                   raster_stats *out)
{
    int p, pv, pa;
    NC(nc_open(ppath, NC_NOWRITE, &p));
    NC(nc_inq_varid(p, "v", &pv));
    NC(nc_inq_varid(p, "area", &pa));
    static double x[NCELL];
    static unsigned char raw[NCELL * 8];
    double area[NY * NX];
    NC(nc_get_var_double(p, pv, x));
    NC(nc_get_var(p, pv, raw));
    NC(nc_get_var_double(p, pa, area));
    unsigned char fill[8];
    int nofill;
    NC(nc_inq_var_fill(p, pv, &nofill, fill));
    size_t el;
    NC(nc_inq_type(p, t, NULL, &el));
    NC(nc_close(p));
    for (size_t o = 0; o < NT * NZ; o++) {
        long double s = 0, sq = 0, ws = 0, wt = 0;
        uint64_t n = 0, wn = 0;
        double lo = INFINITY, hi = -INFINITY;
        for (int pass = 0; pass < 2; pass++) {
            long double m2 = 0, wm2 = 0;
            double mean = n ? (double)(s / n) : 0;
            double wmean = wt != 0 ? (double)(ws / wt) : 0;
            for (size_t c = 0; c < NY * NX; c++) {
                size_t i = o * NY * NX + c;
                if (!want[mask[c]] || isnan(x[i]) ||
                    memcmp(raw + i * el, fill, el) == 0)
                    continue;
                int wok = weighted && !isnan(area[c]) &&
                          area[c] != NC_FILL_DOUBLE;
                if (pass == 0) {
                    n++;
                    s += x[i];
                    sq += (long double)x[i] * x[i];
                    lo = x[i] < lo ? x[i] : lo;
                    hi = x[i] > hi ? x[i] : hi;
                    if (wok) {
                        wn++;
                        ws += (long double)area[c] * x[i];
                        wt += area[c];
                    }
                } else {
                    m2 += ((long double)x[i] - mean) * (x[i] - mean);
                    if (wok)
                        wm2 += area[c] * ((long double)x[i] - wmean) *
                               (x[i] - wmean);
                }
            }
            if (pass == 1) {
                out[o] = (raster_stats){.count = n, .sum = (double)s,
                    .sumsq = (double)sq, .m2 = (double)m2,
                    .min = n ? lo : NAN, .max = n ? hi : NAN,
                    .wcount = wn, .wsum = (double)ws, .wtotal = (double)wt,
                    .wm2 = (double)wm2};
            }
        }
    }
}

static void near(double got, double want, double scale, const char *what,
                 size_t o)
{
    if (isnan(want) && isnan(got))
        return;
    double tol = 1e-9 * (fabs(want) > scale ? fabs(want) : scale);
    if (!(fabs(got - want) <= tol))
        fail_msg("%s at outer index %zu: got %.17g, want %.17g", what, o,
                 got, want);
}

static void same(const raster_stats *got, const raster_stats *want,
                 size_t n)
{
    for (size_t o = 0; o < n; o++) {
        const raster_stats *g = &got[o], *w = &want[o];
        assert_int_equal(g->count, w->count);
        assert_int_equal(g->wcount, w->wcount);
        /* near-zero sums of signed data: relative to the data's scale */
        double scale = fabs(w->max) > fabs(w->min) ? fabs(w->max)
                                                   : fabs(w->min);
        if (isnan(scale))
            scale = 0;
        near(g->sum, w->sum, scale, "sum", o);
        near(g->sumsq, w->sumsq, scale * scale, "sumsq", o);
        near(g->m2, w->m2, 0, "m2", o);
        near(g->min, w->min, 0, "min", o);
        near(g->max, w->max, 0, "max", o);
        near(g->wsum, w->wsum, scale, "wsum", o);
        near(g->wtotal, w->wtotal, 0, "wtotal", o);
        near(g->wm2, w->wm2, 0, "wm2", o);
    }
}

/* The stats dataset itself (docs/FORMAT.md): every record and region
 * fresh after close, equal to the expectation region by region, weighted
 * fields kept exactly when keep_weights. */
static void check_stored(const char *rpath, const char *ppath, int t)
{
    int nc, g, sv;
    NC(nc_open(rpath, NC_NOWRITE, &nc));
    g = raster_storage_grp(nc, "v");
    NC(nc_inq_varid(g, "stats", &sv));
    static double rows[NT][NZ][3][12];
    NC(nc_get_var_double(g, sv, &rows[0][0][0][0]));
    char wname[16] = "";
    size_t wl = 0;
    if (nc_inq_attlen(g, sv, "weights", &wl) == NC_NOERR)
        NC(nc_get_att_text(g, sv, "weights", wname));
    assert_string_equal(wname, keep_weights ? "area" : "");
    NC(nc_close(nc));
    raster_stats want[NT * NZ];
    for (int r = 1; r <= 3; r++) {
        int in[4] = {0};
        in[r] = 1;
        expect(ppath, t, in, 1, want);
        for (size_t o = 0; o < NT * NZ; o++) {
            const double *f = rows[o / NZ][o % NZ][r - 1];
            if (o == 2 * NZ) { /* record (2, 0): never written */
                assert_true(f[0] == NC_FILL_DOUBLE);
                continue;
            }
            assert_true(f[0] == 1); /* fresh */
            raster_stats got = {.count = (uint64_t)f[1], .sum = f[2],
                                .sumsq = f[3], .m2 = f[4], .min = f[5],
                                .max = f[6], .wcount = (uint64_t)f[7],
                                .wsum = f[8], .wtotal = f[9], .wm2 = f[10]};
            if (got.count == 0)
                got.min = got.max = NAN;
            raster_stats w = want[o];
            if (!keep_weights) {
                assert_true(f[11] == -1);
                w.wcount = 0;
                w.wsum = w.wtotal = w.wm2 = 0;
            } else {
                assert_true(f[11] >= 0);
            }
            same(&got, &w, 1);
        }
    }
}

static void check_type(int t)
{
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "r.nc");
    tmpdir_path(ppath, sizeof ppath, "p.nc");
    rng_seed(1000 + (uint64_t)t);
    write_files(rpath, ppath, t);
    raster_file *f;
    raster_var *v;
    RS(raster_open(rpath, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    static const int32_t sets[][3] = {{1}, {2}, {3}, {3, 1}, {1, 2, 3}};
    static const size_t nset[] = {1, 1, 1, 2, 3};
    size_t os[2] = {0, 0}, oc[2] = {NT, NZ};
    raster_stats got[NT * NZ], want[NT * NZ];
    for (size_t s = 0; s < sizeof nset / sizeof *nset; s++) {
        int in[4] = {0};
        for (size_t k = 0; k < nset[s]; k++)
            in[sets[s][k]] = 1;
        for (int weighted = 0; weighted < 2; weighted++) {
            expect(ppath, t, in, weighted, want);
            for (int small = 0; small < 4; small++) {
                /* 1 byte: every record a block of its own; from the
                 * stored statistics and from the data */
                stats_block_bytes = small % 2 ? 1 : (size_t)8 << 20;
                stats_use_stored = small < 2;
                memset(got, 0xa5, sizeof got);
                RS(raster_region_statistics(v, sets[s], nset[s], os, oc,
                                            weighted ? "area" : NULL, got));
                same(got, want, NT * NZ);
            }
            /* a sub-box: the same numbers at their places */
            size_t bs[2] = {1, 1}, bc[2] = {2, 2};
            raster_stats sub[4];
            RS(raster_region_statistics(v, sets[s], nset[s], bs, bc,
                                        weighted ? "area" : NULL, sub));
            for (size_t i = 0; i < 2; i++)
                for (size_t j = 0; j < 2; j++)
                    same(&sub[i * 2 + j], &want[(1 + i) * NZ + 1 + j], 1);
        }
    }
    stats_block_bytes = (size_t)8 << 20;
    stats_use_stored = 1;
    RS(raster_close(f));
    check_stored(rpath, ppath, t);
}

static void test_types(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        check_type(types[i]);
}

/* Float statistics two blocks at a time (AVX2, statstore.c run_pair)
 * and four (AVX-512, run_quad) give the scalar path's bits: runs of
 * every length around the block groups (255-257, 511-513 cells ...) of
 * values with the fill value, NaNs, signed zeros, infinities and blocks
 * that are all fill, over regions whose runs interleave; and so does the
 * doubles' path, which skips no block of fill. */
static void test_paired_blocks(void **state)
{
    (void)state;
    if (!statstore_paired()) {
        print_message("no AVX2 here: the paired path is not taken\n");
        return;
    }
    int quad = statstore_paired() == 4;
    if (!quad)
        print_message("no AVX-512 here: four blocks at once not tested\n");
    enum { N = 60000, NREG = 3 };
    static float x[N];
    static stats_run runs[400];
    const float fill = NC_FILL_FLOAT;
    unsigned char fb[4];
    memcpy(fb, &fill, sizeof fb);
    unsigned seed = 7;
    for (int kind = 0; kind < 8; kind++) {
        size_t n = 0, nruns = 0;
        static const uint32_t lens[] = {1, 2, 127, 128, 129, 255, 256, 257,
                                        300, 511, 512, 513, 700, 1300};
        /* region r's runs from lens[6 r] on: regions 1 and 2 start with
         * paired blocks (their first extremes then come from run_pair) */
        size_t nl = sizeof lens / sizeof *lens;
        for (size_t k = 0; k < nl; k++)
            for (int32_t r = 0; r < NREG; r++) {
                uint32_t len = lens[(k + 6 * (size_t)r) % nl];
                runs[nruns++] = (stats_run){n, len, r};
                n += len;
            }
        assert_true(n <= N);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned u = (seed >> 8) % 100;
            float v = (float)((int)((seed >> 4) % 20000) - 10000) / 37.0f;
            if (kind == 1 && u < 30)
                v = fill;
            if (kind == 2 && u < 20)
                v = NAN;
            if (kind == 3)
                v = u < 50 ? 0.0f : -0.0f;
            if (kind == 4 && (u < 5 || u > 95))
                v = u < 5 ? INFINITY : -INFINITY;
            if (kind == 5)
                v = fill;
            if (kind == 6 && (i / 128) % 3 == 0)
                v = fill; /* whole blocks of fill among others */
            if (kind == 7)
                v = 1e30f * (float)(u % 3) - 1e-30f * (float)u;
            x[i] = v;
        }
        raster_stats a[NREG], b[NREG], c[NREG];
        statstore_pair_blocks = 0;
        assert_int_equal(stats_cells_raw(x, NC_FLOAT, 4, fb, NULL, runs,
                                         nruns, NREG, b), RASTER_OK);
        /* the doubles' path (no float path's shortcuts: blocks of fill
         * skipped whole), over the same runs: the same bits too */
        static double xd[N];
        static int32_t reg[N];
        for (size_t q = 0; q < nruns; q++)
            for (size_t i = runs[q].start; i < runs[q].start + runs[q].len;
                 i++) {
                xd[i] = x[i] == fill ? NAN : (double)x[i];
                reg[i] = runs[q].reg;
            }
        assert_int_equal(stats_cells(xd, NULL, reg, n, NREG, c), RASTER_OK);
        for (int r = 0; r < NREG; r++)
            if (memcmp(&b[r], &c[r], sizeof b[r]) != 0)
                fail_msg("kind %d region %d: scalar sum %.17g m2 %.17g "
                         "min %g, doubles %.17g %.17g %g", kind, r, b[r].sum,
                         b[r].m2, b[r].min, c[r].sum, c[r].m2, c[r].min);
        /* 2: two blocks at a time; 1: four where the CPU has AVX-512,
         * from a copy that ends where an unreadable page begins (run_quad
         * reads past a block's end only while the values go on) */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t span = (n * sizeof(float) + page - 1) / page * page;
        unsigned char *map = mmap(NULL, span + page, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(map != MAP_FAILED);
        assert_int_equal(mprotect(map + span, page, PROT_NONE), 0);
        float *xa = (float *)(void *)(map + span - n * sizeof(float));
        memcpy(xa, x, n * sizeof *xa);
        for (int hook = 2; hook >= 1; hook--) {
            statstore_pair_blocks = hook;
            int width = statstore_paired();
            assert_int_equal(width, hook == 2 || !quad ? 2 : 4);
            assert_int_equal(stats_cells_raw(xa, NC_FLOAT, 4, fb, NULL, runs,
                                             nruns, NREG, a), RASTER_OK);
            for (int r = 0; r < NREG; r++)
                if (memcmp(&a[r], &b[r], sizeof a[r]) != 0)
                    fail_msg("kind %d region %d: %d blocks at once: sum "
                             "%.17g m2 %.17g min %g, scalar %.17g %.17g %g",
                             kind, r, width, a[r].sum, a[r].m2, a[r].min,
                             b[r].sum, b[r].m2, b[r].min);
        }
        munmap(map, span + page);
        statstore_pair_blocks = 1;
    }
}

/* The grid's runs a whole-record writer takes its statistics by are
 * those of the cells' region positions (as built before they came from
 * the mask directly): a change of id is a new run, neighbours of one id
 * one run, across row ends too. */
static void test_grid_runs(void **state)
{
    (void)state;
    enum { GY = 13, GX = 17 };
    static int32_t gm[GY * GX];
    rng_seed(3);
    for (size_t i = 0; i < GY * GX; i++) /* runs of 1 to 6 cells, 4 ids */
        gm[i] = i > 0 && rng_below(6) != 0 ? gm[i - 1]
                                           : (int32_t)rng_below(4) * 7 - 3;
    char path[512];
    tmpdir_path(path, sizeof path, "runs.nc");
    raster_file *f;
    raster_var *v;
    raster_mask *m;
    RS(raster_mask_wrap(gm, GY, GX, &m));
    RS(raster_create(path, &f));
    int nc = raster_file_ncid(f), d[3];
    NC(nc_def_dim(nc, "t", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(nc, "y", GY, &d[1]));
    NC(nc_def_dim(nc, "x", GX, &d[2]));
    RS(raster_def_var(f, nc, "v", NC_FLOAT, 3, d, NULL, m, &v));
    raster_mask_free(m);
    const stats_run *runs;
    size_t nruns;
    RS(statstore_grid_runs(v, &runs, &nruns));
    /* the reference: positions per cell, then their runs */
    stats_run want[GY * GX];
    size_t k = 0;
    for (size_t i = 0; i < GY * GX; i++) {
        int32_t r = (int32_t)regions_pos(v, gm[i]);
        assert_true(r >= 0);
        if (i == 0 || r != want[k - 1].reg)
            want[k++] = (stats_run){i, 0, r};
        want[k - 1].len++;
    }
    assert_int_equal(nruns, k);
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(runs[i].start, want[i].start);
        assert_int_equal(runs[i].len, want[i].len);
        assert_int_equal(runs[i].reg, want[i].reg);
    }
    RS(raster_close(f));
}

/* The same with the weights kept in the stored statistics. */
static void test_types_weighted(void **state)
{
    (void)state;
    keep_weights = 1;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        check_type(types[i]);
    keep_weights = 0;
}

/* Merging the regions' statistics gives those of their union; derived
 * values follow numpy (population std). */
static void test_merge_and_values(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "m.nc");
    tmpdir_path(ppath, sizeof ppath, "mp.nc");
    rng_seed(7);
    write_files(rpath, ppath, NC_DOUBLE);
    raster_file *f;
    raster_var *v;
    RS(raster_open(rpath, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    size_t os[2] = {0, 0}, oc[2] = {NT, NZ};
    raster_stats a[NT * NZ], b[NT * NZ], u[NT * NZ];
    RS(raster_region_statistics(v, (int32_t[]){1}, 1, os, oc, "area", a));
    RS(raster_region_statistics(v, (int32_t[]){2}, 1, os, oc, "area", b));
    RS(raster_region_statistics(v, (int32_t[]){1, 2}, 2, os, oc, "area",
                                u));
    for (size_t o = 0; o < NT * NZ; o++)
        raster_stats_merge(&a[o], &b[o]);
    same(a, u, NT * NZ);
    /* values: mean 2, population std 1 of {1, 3}; nothing: NaN, sum 0 */
    raster_stats s = {.count = 2, .sum = 4, .sumsq = 10, .m2 = 2, .min = 1,
                      .max = 3, .wcount = 2, .wsum = 7, .wtotal = 3,
                      .wm2 = 8.0 / 3};
    assert_true(raster_stats_value(&s, RASTER_STAT_MEAN, 0) == 2);
    assert_true(raster_stats_value(&s, RASTER_STAT_STD, 0) == 1);
    assert_true(raster_stats_value(&s, RASTER_STAT_COUNT, 1) == 2);
    assert_true(raster_stats_value(&s, RASTER_STAT_SUM, 1) == 7);
    near(raster_stats_value(&s, RASTER_STAT_MEAN, 1), 7.0 / 3, 0, "wmean",
         0);
    near(raster_stats_value(&s, RASTER_STAT_STD, 1), sqrt(8.0 / 9), 0,
         "wstd", 0);
    raster_stats none = {.min = NAN, .max = NAN};
    assert_true(isnan(raster_stats_value(&none, RASTER_STAT_MEAN, 0)));
    assert_true(isnan(raster_stats_value(&none, RASTER_STAT_MIN, 0)));
    assert_true(isnan(raster_stats_value(&none, RASTER_STAT_STD, 1)));
    assert_true(raster_stats_value(&none, RASTER_STAT_SUM, 0) == 0);
    assert_true(isnan(raster_stats_value(&s, 99, 0)));
    RS(raster_close(f));
}

/* Statistics of region 1 at every record, from the stored ones or not. */
static void region1(raster_var *v, int stored, const char *w,
                    raster_stats *out)
{
    size_t os[2] = {0, 0}, oc[2] = {NT, NZ};
    stats_use_stored = stored;
    RS(raster_region_statistics(v, (int32_t[]){1}, 1, os, oc, w, out));
    stats_use_stored = 1;
}

/* The file's modification time put back to its seal (docs/FORMAT.md,
 * "The seal"), as if raster had closed it last: for tests that plant
 * values with netCDF and mean raster to take them (a format 5 file's
 * statistics are otherwise, rightly, not trusted after that write). */
static void reseal(const char *path)
{
    int nc;
    long long t = 0;
    NC(nc_open(path, NC_NOWRITE, &nc));
    int st = nc_get_att_longlong(raster_storage_grp(nc, "v"), NC_GLOBAL,
                                 "raster_seal", &t);
    NC(nc_close(nc));
    if (st != NC_NOERR)
        return; /* formats 3 and 4 keep no seal */
    struct timespec times[2] = {{0, UTIME_OMIT}, {(time_t)t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* Reads take the stored statistics (a value planted in them is what they
 * return), unless the weights changed since they were kept. */
static void test_stored_used(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "u.nc");
    tmpdir_path(ppath, sizeof ppath, "up.nc");
    rng_seed(3);
    keep_weights = 1;
    write_files(rpath, ppath, NC_DOUBLE);
    keep_weights = 0;
    int nc, g, sv;
    NC(nc_open(rpath, NC_WRITE, &nc));
    g = raster_storage_grp(nc, "v");
    NC(nc_inq_varid(g, "stats", &sv));
    double planted = 12345.5;
    NC(nc_put_var1_double(g, sv, (size_t[]){1, 1, 0, 2}, &planted));
    NC(nc_close(nc));
    reseal(rpath);
    raster_file *f;
    raster_var *v;
    raster_stats a[NT * NZ], b[NT * NZ], c[NT * NZ];
    RS(raster_open(rpath, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    region1(v, 1, NULL, a);
    region1(v, 0, NULL, b);
    assert_true(a[NZ + 1].sum == planted);
    assert_true(b[NZ + 1].sum != planted);
    a[NZ + 1].sum = b[NZ + 1].sum;
    same(a, b, NT * NZ);
    region1(v, 1, "area", a);
    region1(v, 0, "area", b);
    assert_true(a[NZ + 1].sum == planted);
    a[NZ + 1].sum = b[NZ + 1].sum;
    same(a, b, NT * NZ);
    RS(raster_close(f));
    /* other weights than those kept: computed from the data */
    NC(nc_open(rpath, NC_WRITE, &nc));
    int av;
    NC(nc_inq_varid(nc, "area", &av));
    double w0 = 40;
    NC(nc_put_var1_double(nc, av, (size_t[]){0, 0}, &w0));
    NC(nc_close(nc));
    reseal(rpath);
    RS(raster_open(rpath, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    region1(v, 1, "area", a);
    region1(v, 0, "area", b);
    same(a, b, NT * NZ);
    region1(v, 1, NULL, c); /* the unweighted ones still stored */
    assert_true(c[NZ + 1].sum == planted);
    /* RASTER_STATS=values: the stored ones ignored, the data's taken */
    setenv("RASTER_STATS", "values", 1);
    region1(v, 1, NULL, c);
    unsetenv("RASTER_STATS");
    region1(v, 0, NULL, b);
    assert_true(c[NZ + 1].sum != planted);
    same(c, b, NT * NZ);
    RS(raster_close(f));
}

/* A writable session: a partial write makes the record's statistics
 * stale (reads compute them from the data until close), a whole write
 * fresh again; close recomputes what is stale. */
static void test_session(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "w.nc");
    tmpdir_path(ppath, sizeof ppath, "wp.nc");
    rng_seed(4);
    keep_weights = 1;
    write_files(rpath, ppath, NC_FLOAT);
    keep_weights = 0;
    raster_file *f;
    raster_var *v;
    raster_stats a[NT * NZ], b[NT * NZ], want[NT * NZ];
    RS(raster_open(rpath, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    int p, pv;
    NC(nc_open(ppath, NC_WRITE, &p));
    NC(nc_inq_varid(p, "v", &pv));
    double vals[NY * NX];
    for (size_t i = 0; i < NY * NX; i++)
        vals[i] = (double)i * 3 - 50;
    /* a column through regions 1 only, of record (0, 0) */
    put_both(v, p, pv, (size_t[]){0, 0, 0, 1}, (size_t[]){1, 1, NY, 1},
             vals);
    NC(nc_sync(p));
    int in[4] = {0, 1, 0, 0};
    expect(ppath, NC_FLOAT, in, 1, want);
    region1(v, 1, "area", a);
    region1(v, 0, "area", b);
    same(a, want, NT * NZ);
    same(b, want, NT * NZ);
    /* record (1, 2) partly, then whole */
    put_both(v, p, pv, (size_t[]){1, 2, 3, 0}, (size_t[]){1, 1, 1, 2},
             vals);
    put_both(v, p, pv, (size_t[]){1, 2, 0, 0}, (size_t[]){1, 1, NY, NX},
             vals);
    NC(nc_sync(p));
    expect(ppath, NC_FLOAT, in, 1, want);
    region1(v, 1, "area", a);
    same(a, want, NT * NZ);
    /* and partly again, where the first partial write was: the whole
     * write made its rows fresh, so this one must mark them stale anew
     * (a writer that remembered the first marking would skip it) */
    double other[2] = {1234.5, -321.25};
    put_both(v, p, pv, (size_t[]){1, 2, 3, 0}, (size_t[]){1, 1, 1, 2},
             other);
    NC(nc_sync(p));
    expect(ppath, NC_FLOAT, in, 1, want);
    region1(v, 1, "area", a);
    same(a, want, NT * NZ);
    RS(raster_close(f));
    NC(nc_close(p));
    keep_weights = 1;
    check_stored(rpath, ppath, NC_FLOAT);
    keep_weights = 0;
}

/* A stats dataset of another shape or type is not used: the statistics
 * come from the data. */
static void test_stats_damaged(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "d.nc");
    tmpdir_path(ppath, sizeof ppath, "dp.nc");
    rng_seed(5);
    write_files(rpath, ppath, NC_INT);
    raster_stats want[NT * NZ], got[NT * NZ];
    int in[4] = {0, 1, 0, 0};
    expect(ppath, NC_INT, in, 1, want);
    for (int how = 0; how < 2; how++) {
        /* replaced through HDF5 (netCDF renames no such variable) by a
         * dataset of another shape, then of another type */
        hid_t h = H5Fopen(rpath, H5F_ACC_RDWR, H5P_DEFAULT);
        assert_true(h >= 0);
        assert_true(H5Ldelete(h, "/raster_v/stats", H5P_DEFAULT) >= 0);
        hsize_t dims[4] = {NT, NZ, 3, 12};
        hid_t sp = H5Screate_simple(how == 0 ? 1 : 4, dims, NULL);
        hid_t ds = H5Dcreate2(h, "/raster_v/stats",
                              how == 0 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT,
                              sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        assert_true(sp >= 0 && ds >= 0);
        int fresh[NT * NZ * 3 * 12];
        for (size_t i = 0; i < NT * NZ * 3 * 12; i++)
            fresh[i] = 1; /* "fresh", with nonsense values */
        if (how == 1)
            assert_true(H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL,
                                 H5P_DEFAULT, fresh) >= 0);
        H5Dclose(ds);
        H5Sclose(sp);
        H5Fclose(h);
        raster_file *f;
        raster_var *v;
        RS(raster_open(rpath, RASTER_READ, &f));
        RS(raster_var_find(f, "v", &v));
        region1(v, 1, "area", got);
        same(got, want, NT * NZ);
        size_t fr, st;
        assert_int_equal(raster_var_stats_info(v, 1, NULL, &fr, &st),
                         RASTER_ENOTFOUND);
        RS(raster_close(f));
    }
}

/* Statistics voided (as a parallel writer does before it writes) are
 * ignored: computed from the data. */
static void test_void(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "v.nc");
    tmpdir_path(ppath, sizeof ppath, "vp.nc");
    rng_seed(8);
    keep_weights = 1;
    write_files(rpath, ppath, NC_DOUBLE);
    keep_weights = 0;
    int nc, g, sv;
    NC(nc_open(rpath, NC_WRITE, &nc)); /* a value the data does not have */
    g = raster_storage_grp(nc, "v");
    NC(nc_inq_varid(g, "stats", &sv));
    double planted = -1;
    NC(nc_put_var1_double(g, sv, (size_t[]){0, 0, 0, 2}, &planted));
    NC(nc_close(nc));
    raster_file *f;
    raster_var *v;
    RS(raster_open(rpath, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    RS(statstore_void(v));
    RS(raster_close(f));
    raster_stats want[NT * NZ], got[NT * NZ];
    int in[4] = {0, 1, 0, 0};
    expect(ppath, NC_DOUBLE, in, 1, want);
    RS(raster_open(rpath, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    region1(v, 1, "area", got);
    same(got, want, NT * NZ);
    size_t fr, st;
    assert_int_equal(raster_var_stats_info(v, 1, NULL, &fr, &st),
                     RASTER_ENOTFOUND);
    RS(raster_close(f));
}

/* Opens path read-only: region 1's fresh and stale records (stale not
 * checked when SIZE_MAX) and, with want, its statistics equal to want. */
static void seal_state(const char *path, size_t fresh_want, size_t stale_want,
                       const raster_stats *want)
{
    raster_file *f;
    raster_var *v;
    size_t fresh, stale;
    raster_stats got[NT * NZ];
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    RS(raster_var_stats_info(v, 1, NULL, &fresh, &stale));
    assert_int_equal(fresh, fresh_want);
    if (stale_want != SIZE_MAX)
        assert_int_equal(stale, stale_want);
    if (want) {
        region1(v, 1, NULL, got);
        same(got, want, NT * NZ);
    }
    RS(raster_close(f));
}

/* Format 5 (its variable holds its values, which any program can write):
 * a write without raster breaks the seal, and the statistics then come
 * from the values, all counted stale; a raster writer's close computes
 * them anew and seals again, also through raster_attach (the shim's way:
 * raster_before_open, then raster_nc_closed after netCDF's close). A copy
 * without its times (cp) is not trusted either. */
static void test_seal(void **state)
{
    (void)state;
    char rpath[512], ppath[512], cpath[512];
    tmpdir_path(rpath, sizeof rpath, "seal.nc");
    tmpdir_path(ppath, sizeof ppath, "sealp.nc");
    tmpdir_path(cpath, sizeof cpath, "sealc.nc");
    rng_seed(11);
    write_format = 5;
    write_files(rpath, ppath, NC_DOUBLE);
    write_format = 0;
    raster_file *f;
    raster_stats want[NT * NZ];
    int in[4] = {0, 1, 0, 0};
    /* as written: stored, all fresh (record 2's level 0 never written) */
    seal_state(rpath, NT * NZ - 1, 0, NULL);
    /* a write without raster, into region 1 of record (0, 1), also into
     * the plain file */
    double vals[3] = {1e6, -2e6, 7.25};
    size_t st[4] = {0, 1, 0, 0}, ct[4] = {1, 1, 1, 3};
    for (int k = 0; k < 2; k++) {
        int nc, id;
        NC(nc_open(k ? ppath : rpath, NC_WRITE, &nc));
        NC(nc_inq_varid(nc, "v", &id));
        NC(nc_put_vara_double(nc, id, st, ct, vals));
        NC(nc_close(nc));
    }
    expect(ppath, NC_DOUBLE, in, 0, want);
    /* the values', not the stale ones */
    seal_state(rpath, 0, NT * NZ - 1, want);
    /* a raster writer that writes nothing: its close recomputes them (the
     * never written record too) */
    RS(raster_open(rpath, RASTER_WRITE, &f));
    RS(raster_close(f));
    seal_state(rpath, NT * NZ, 0, want);
    /* broken again, then a writer through raster_attach */
    int nc;
    NC(nc_open(rpath, NC_WRITE, &nc));
    NC(nc_close(nc));
    raster_before_open(rpath);
    NC(nc_open(rpath, NC_WRITE, &nc));
    RS(raster_attach(nc, 1, &f));
    RS(raster_close(f));
    NC(nc_close(nc));
    RS(raster_nc_closed(nc));
    seal_state(rpath, NT * NZ, SIZE_MAX, NULL);
    /* without raster_before_open a writer cannot tell: its close
     * recomputes, and seals only after raster_nc_closed */
    NC(nc_open(rpath, NC_WRITE, &nc));
    RS(raster_attach(nc, 1, &f));
    RS(raster_close(f));
    NC(nc_close(nc));
    seal_state(rpath, 0, SIZE_MAX, NULL);
    RS(raster_nc_closed(nc));
    seal_state(rpath, NT * NZ, SIZE_MAX, NULL);
    /* a copy without its times */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", rpath, cpath);
    assert_int_equal(system(cmd), 0);
    struct timespec later[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    assert_int_equal(utimensat(AT_FDCWD, cpath, later, 0), 0);
    seal_state(cpath, 0, SIZE_MAX, want);
    unlink(cpath);
}

/* One handle read from several threads at once (raster.h): each gets
 * what a lone caller gets, stored or from the data, weighted or not. */
typedef struct job {
    raster_var *v;
    int k;
    raster_stats out[NT * NZ];
    int rc;
} job;

static void *thread_stats(void *arg)
{
    job *j = arg;
    size_t os[2] = {0, 0}, oc[2] = {NT, NZ};
    int32_t ids[2] = {1, 3};
    for (int rep = 0; rep < 20 && j->rc == RASTER_OK; rep++)
        j->rc = raster_region_statistics(j->v, ids, 1 + (size_t)(j->k % 2),
                                         os, oc, j->k / 2 ? "area" : NULL,
                                         j->out);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "t.nc");
    tmpdir_path(ppath, sizeof ppath, "tp.nc");
    rng_seed(10);
    keep_weights = 1;
    write_files(rpath, ppath, NC_FLOAT);
    keep_weights = 0;
    raster_file *f;
    RS(raster_open(rpath, RASTER_READ, &f));
    static job jobs[8];
    pthread_t th[8];
    for (int k = 0; k < 8; k++) {
        jobs[k] = (job){.k = k % 4};
        RS(raster_var_find(f, "v", &jobs[k].v));
        assert_int_equal(pthread_create(&th[k], NULL, thread_stats,
                                        &jobs[k]), 0);
    }
    for (int k = 0; k < 8; k++)
        assert_int_equal(pthread_join(th[k], NULL), 0);
    raster_stats want[NT * NZ];
    for (int k = 0; k < 8; k++) {
        int in[4] = {0, 1, 0, jobs[k].k % 2};
        RS(jobs[k].rc);
        expect(ppath, NC_FLOAT, in, 1, want);
        if (jobs[k].k / 2 == 0)
            for (size_t o = 0; o < NT * NZ; o++) {
                want[o].wcount = 0;
                want[o].wsum = want[o].wtotal = want[o].wm2 = 0;
            }
        same(jobs[k].out, want, NT * NZ);
    }
    RS(raster_close(f));
}

/* Format 2 keeps no statistics: computed from the data; weights for
 * them refused. */
static void test_format2(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "f2.nc");
    tmpdir_path(ppath, sizeof ppath, "f2p.nc");
    rng_seed(6);
    write_format = 2;
    write_files(rpath, ppath, NC_SHORT);
    write_format = 0;
    raster_stats want[NT * NZ], got[NT * NZ];
    int in[4] = {0, 1, 0, 0};
    expect(ppath, NC_SHORT, in, 1, want);
    raster_file *f;
    raster_var *v;
    RS(raster_open(rpath, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    region1(v, 1, "area", got);
    same(got, want, NT * NZ);
    size_t fr, st;
    assert_int_equal(raster_var_stats_info(v, 1, NULL, &fr, &st),
                     RASTER_ENOTFOUND);
    assert_int_equal(raster_var_set_stats_weights(v, "area"),
                     RASTER_EUNSUPPORTED);
    assert_int_equal(raster_var_set_stats_weights(v, NULL), RASTER_EINVAL);
    RS(raster_close(f));
}

static void test_errors(void **state)
{
    (void)state;
    char rpath[512], ppath[512];
    tmpdir_path(rpath, sizeof rpath, "e.nc");
    tmpdir_path(ppath, sizeof ppath, "ep.nc");
    rng_seed(9);
    write_files(rpath, ppath, NC_INT);
    raster_file *f;
    raster_var *v;
    RS(raster_open(rpath, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    int32_t one = 1, none = 42;
    size_t os[2] = {0, 0}, oc[2] = {NT, NZ}, past[2] = {NT + 1, 1};
    raster_stats out[NT * NZ];
    assert_int_equal(raster_region_statistics(NULL, &one, 1, os, oc, NULL,
                                              out), RASTER_EINVAL);
    assert_int_equal(raster_region_statistics(v, &one, 1, os, oc, NULL,
                                              NULL), RASTER_EINVAL);
    assert_int_equal(raster_region_statistics(v, &one, 1, NULL, oc, NULL,
                                              out), RASTER_EINVAL);
    assert_int_equal(raster_region_statistics(v, &one, 0, os, oc, NULL,
                                              out), RASTER_EINVAL);
    assert_int_equal(raster_region_statistics(v, &none, 1, os, oc, NULL,
                                              out), RASTER_ENOTFOUND);
    assert_int_equal(raster_region_statistics(v, &one, 1, os, past, NULL,
                                              out), RASTER_EINVAL);
    assert_int_equal(raster_region_statistics(v, &one, 1, os, oc, "nope",
                                              out), RASTER_ENOTFOUND);
    /* weights not over the grid: v itself has four dimensions */
    assert_int_equal(raster_region_statistics(v, &one, 1, os, oc, "t", out),
                     RASTER_ENOTFOUND);
    assert_int_equal(raster_region_statistics(v, &one, 1, os, oc, "v", out),
                     RASTER_EINVAL);
    RS(raster_close(f));
}

static int setup(void **state)
{
    (void)state;
    make_mask();
    return tmpdir_create("stats");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_paired_blocks),
        cmocka_unit_test(test_grid_runs),
        cmocka_unit_test(test_types_weighted),
        cmocka_unit_test(test_merge_and_values),
        cmocka_unit_test(test_stored_used),
        cmocka_unit_test(test_session),
        cmocka_unit_test(test_stats_damaged),
        cmocka_unit_test(test_format2),
        cmocka_unit_test(test_void),
        cmocka_unit_test(test_seal),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_remove);
}
