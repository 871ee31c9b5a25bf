/*
 * fuzz_raster_file.c - a structure-aware fuzz target for raster's file
 * reader (libFuzzer; tests/fuzz/run_fuzz.sh builds and runs it).
 *
 * Fuzzing the bytes of an HDF5 file mostly fuzzes HDF5. This target instead
 * lets the input choose a small raster file (grid up to 20 x 30, tile, mask,
 * value type, fixed or unlimited records, format 3 or 4), writes it with
 * libraster, then
 * applies a list of mutations to raster's own metadata through netCDF:
 * index table values, the description attributes (raster_dims,
 * raster_dimids, raster_chunk, raster_type, raster_complete, the format
 * version), region groups (renamed, duplicated, region_id changed), the
 * mask's values and its CF flags, the stores (replaced by variables of
 * another type or shape, a record written far beyond the end of an
 * unlimited dimension), the placeholder, and the file's length. Then it
 * opens the file with raster_open (read-only: the pread fast path; and for
 * writing: the netCDF path) and, when raster accepts the file, reads the
 * variable whole and every region in every layout.
 *
 * The oracle: raster_open either refuses the file with a code and a message
 * (handle NULL), or every value it serves is the value written (records
 * never written: the fill value), and region reads agree with the whole
 * read. Anything else aborts: a crash, a sanitizer report or an abort is a
 * finding.
 *
 * The file lives in $RASTER_FUZZ_DIR (default /dev/shm, else /tmp).
 */
#include <hdf5.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raster.h"

/* ---- input reader --------------------------------------------------------- */

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static unsigned u8(input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static uint32_t u32(input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | u8(in);
    return v;
}

/* A value for a metadata field: small deltas and numbers, boundaries. */
static long long pick_value(input *in, long long base)
{
    static const long long special[] = {
        0, 1, -1, 2, 3, 4, 5, 6, 7, 8, 16, 20, 30, 31, 32, 63, 64, 255,
        INT32_MAX, INT32_MIN, (long long)INT32_MAX + 1, UINT32_MAX,
        (long long)1 << 32, (long long)1 << 40, (long long)1 << 62,
        INT64_MAX, INT64_MIN, INT64_MIN + 1};
    unsigned kind = u8(in);
    switch (kind % 4) {
    case 0: /* a small delta, wrapping at the ends of the range (the base
             * may be an earlier mutation's INT64_MIN) */
        return (long long)((uint64_t)base + (uint64_t)(int64_t)(int8_t)u8(in));
    case 1: return special[u8(in) % (sizeof special / sizeof *special)];
    case 2: return (int32_t)u32(in);
    default: return (long long)((uint64_t)u32(in) << 32 | u32(in));
    }
}

/* ---- the file ----------------------------------------------------------- */

static const int types[] = {NC_FLOAT, NC_DOUBLE, NC_INT, NC_SHORT};
static const int32_t ids[] = {3, 0, -5, 6, 1, 100000, INT32_MIN, INT32_MAX};

typedef struct spec {
    size_t ny, nx, h, w, t, z;
    int unlim, has_z, xtype, format4;
    int32_t *mask;
} spec;

/* The value written at flat index i: exact in every type used. */
static double value_at(size_t i)
{
    return (double)((long long)(i * 37 % 2001) - 1000);
}

static void put_value(int xtype, void *buf, size_t i, double v)
{
    switch (xtype) {
    case NC_FLOAT: ((float *)buf)[i] = (float)v; break;
    case NC_DOUBLE: ((double *)buf)[i] = v; break;
    case NC_INT: ((int *)buf)[i] = (int)v; break;
    default: ((short *)buf)[i] = (short)v; break;
    }
}

static double get_value(int xtype, const void *buf, size_t i)
{
    switch (xtype) {
    case NC_FLOAT: return ((const float *)buf)[i];
    case NC_DOUBLE: return ((const double *)buf)[i];
    case NC_INT: return ((const int *)buf)[i];
    default: return ((const short *)buf)[i];
    }
}

static double fill_of(int xtype)
{
    switch (xtype) {
    case NC_FLOAT: return NC_FILL_FLOAT;
    case NC_DOUBLE: return NC_FILL_DOUBLE;
    case NC_INT: return NC_FILL_INT;
    default: return NC_FILL_SHORT;
    }
}

static size_t type_size(int xtype)
{
    return xtype == NC_DOUBLE ? 8 : xtype == NC_SHORT ? 2 : 4;
}

#define DIE(...)                                                              \
    do {                                                                      \
        fprintf(stderr, "fuzz_raster_file: " __VA_ARGS__);                    \
        fputc('\n', stderr);                                                  \
        abort();                                                              \
    } while (0)

static void read_spec(input *in, spec *s)
{
    s->ny = 2 + u8(in) % 19;
    s->nx = 2 + u8(in) % 29;
    s->h = 1 + u8(in) % s->ny;
    s->w = 1 + u8(in) % s->nx;
    unsigned nid = 1 + u8(in) % 6, by = 1 + u8(in) % 6, bx = 1 + u8(in) % 8;
    uint32_t seed = u32(in);
    unsigned flags = u8(in);
    s->unlim = flags & 1;
    s->has_z = (flags >> 1) & 1;
    s->xtype = types[(flags >> 2) % 4];
    /* a quarter of the inputs: format 4 (no region groups, one shared
     * store); no seed written before it has this pattern */
    s->format4 = (flags >> 4) % 4 == 2;
    s->t = 1 + u8(in) % 3;
    s->z = s->has_z ? 1 + u8(in) % 2 : 1;
    unsigned extra = u8(in) % 8; /* rare ids */
    for (size_t y = 0; y < s->ny; y++)
        for (size_t x = 0; x < s->nx; x++) {
            uint32_t hsh = seed ^ (uint32_t)(y / by) * 0x9e3779b1u ^
                           (uint32_t)(x / bx) * 0x85ebca77u;
            hsh ^= hsh >> 15;
            hsh *= 0x2c1b3c6du;
            hsh ^= hsh >> 12;
            s->mask[y * s->nx + x] = ids[hsh % nid];
        }
    if (extra >= 6)
        s->mask[(seed % s->ny) * s->nx + seed % s->nx] = ids[extra];
}

static int write_file(const char *path, const spec *s)
{
    raster_file *f;
    raster_var *v;
    raster_mask *m;
    if (raster_mask_wrap(s->mask, s->ny, s->nx, &m))
        DIE("mask_wrap: %s", raster_errmsg());
    if (raster_create(path, &f))
        DIE("create %s: %s", path, raster_errmsg());
    if (s->format4 && raster_file_set_format(f, 4))
        DIE("set_format: %s", raster_errmsg());
    int ncid = raster_file_ncid(f), d[4], nd = 0;
    size_t shape[4], chunk[4];
    if (nc_def_dim(ncid, "time", s->unlim ? NC_UNLIMITED : s->t, &d[nd]))
        DIE("def_dim");
    shape[nd] = s->t;
    chunk[nd++] = 1;
    if (s->has_z) {
        if (nc_def_dim(ncid, "z", s->z, &d[nd]))
            DIE("def_dim");
        shape[nd] = s->z;
        chunk[nd++] = 1;
    }
    if (nc_def_dim(ncid, "y", s->ny, &d[nd]) ||
        nc_def_dim(ncid, "x", s->nx, &d[nd + 1]))
        DIE("def_dim");
    shape[nd] = s->ny;
    shape[nd + 1] = s->nx;
    chunk[nd] = s->h;
    chunk[nd + 1] = s->w;
    nd += 2;
    if (raster_def_var(f, ncid, "v", s->xtype, nd, d, chunk, m, &v))
        DIE("def_var: %s", raster_errmsg());
    raster_mask_free(m);
    size_t n = s->t * s->z * s->ny * s->nx;
    void *buf = malloc(n * type_size(s->xtype));
    if (!buf)
        DIE("out of memory");
    for (size_t i = 0; i < n; i++)
        put_value(s->xtype, buf, i, value_at(i));
    size_t start[4] = {0, 0, 0, 0};
    if (raster_var_put(v, start, shape, NULL, buf))
        DIE("put: %s", raster_errmsg());
    free(buf);
    if (raster_close(f))
        DIE("close: %s", raster_errmsg());
    return 0;
}

/* ---- mutations ---------------------------------------------------------------- */

/* The storage group's subgroups (region groups and Mixed_Chunks). */
static int subgroup(int g, unsigned k, int *out)
{
    int n, grps[64];
    if (nc_inq_grps(g, &n, NULL) || n <= 0 || n > 64 ||
        nc_inq_grps(g, NULL, grps))
        return -1;
    *out = grps[k % (unsigned)n];
    return 0;
}

/* format 3's index tables, in the variable's group */
static const char *const tables[4] = {"chunks", "runs", "mixed_chunks",
                                      "shares"};

static const char *const group_atts[] = {
    "raster_format_version", "raster_variable", "raster_complete",
    "raster_type", "raster_dims", "raster_dimids", "raster_chunk"};

static void mutate(int root, int g, input *in, const spec *s, int *cut,
                   long *cut_at)
{
    unsigned op = u8(in) % 20, a = u8(in), b = u8(in), c = u8(in);
    int sg, varid;
    if (getenv("RASTER_FUZZ_DEBUG"))
        fprintf(stderr, "mutation %u (%u %u %u)\n", op, a, b, c);
    switch (op) {
    case 0: /* a value of an index table (format 3: all in g) */
        if (nc_inq_varid(g, tables[b % 4], &varid) == 0) {
            int dims[2];
            size_t rows = 0, cols = 0;
            if (nc_inq_vardimid(g, varid, dims) ||
                nc_inq_dimlen(g, dims[0], &rows) ||
                nc_inq_dimlen(g, dims[1], &cols) || rows == 0 || cols == 0)
                break;
            size_t idx[2] = {(c | (size_t)a << 8) % rows, (b >> 2) % cols};
            long long old = 0;
            nc_get_var1_longlong(g, varid, idx, &old);
            long long val = pick_value(in, old);
            nc_put_var1_longlong(g, varid, idx, &val);
        }
        break;
    case 1: { /* raster_chunk */
        unsigned long long ch[8];
        size_t len = 0;
        nc_type t;
        if (nc_inq_att(g, NC_GLOBAL, "raster_chunk", &t, &len) || len > 8 ||
            nc_get_att_ulonglong(g, NC_GLOBAL, "raster_chunk", ch))
            break;
        if (b % 8 == 0 && len > 1)
            len--; /* one entry fewer */
        else
            ch[a % len] = (unsigned long long)pick_value(in, (long long)ch[a % len]);
        nc_put_att_ulonglong(g, NC_GLOBAL, "raster_chunk", NC_UINT64, len, ch);
        break;
    }
    case 2: { /* raster_type, or another description attribute's type */
        int t = (int)pick_value(in, s->xtype);
        if (b & 1)
            nc_put_att_int(g, NC_GLOBAL, "raster_type", NC_INT, 1, &t);
        else
            nc_put_att_double(g, NC_GLOBAL, group_atts[a % 7], NC_DOUBLE, 1,
                              &(double){t});
        break;
    }
    case 3: { /* raster_dims text */
        static const char *const texts[] = {
            "time/y/x", "time/z/y/x", "y/x", "x", "", "/", "time//y/x",
            "time/z/x/y", "z/time/y/x", "time/z/y/x/x", "time/nope/y/x",
            "time/y/x/"};
        char buf[64];
        if (b & 1) {
            size_t n = c % 40;
            for (size_t i = 0; i < n; i++)
                buf[i] = "txyz/"[u8(in) % 5];
            nc_put_att_text(g, NC_GLOBAL, "raster_dims", n, buf);
        } else {
            const char *t = texts[a % (sizeof texts / sizeof *texts)];
            nc_put_att_text(g, NC_GLOBAL, "raster_dims", strlen(t), t);
        }
        break;
    }
    case 4: { /* raster_dimids */
        int dimids[8];
        size_t len;
        nc_type t;
        if (nc_inq_att(g, NC_GLOBAL, "raster_dimids", &t, &len) || len > 8 ||
            len == 0 || nc_get_att_int(g, NC_GLOBAL, "raster_dimids", dimids))
            break;
        dimids[a % len] = (int)pick_value(in, dimids[a % len]);
        nc_put_att_int(g, NC_GLOBAL, "raster_dimids", NC_INT, len, dimids);
        break;
    }
    case 5: { /* a mask cell */
        if (nc_inq_varid(g, "mask", &varid))
            break;
        size_t idx[2] = {a % s->ny, b % s->nx};
        int val = c & 1 ? ids[(c >> 1) % 8] : (int)pick_value(in, 0);
        nc_put_var1_int(g, varid, idx, &val);
        break;
    }
    case 6: { /* the completeness marker or the format version */
        int val = (int)pick_value(in, 1);
        if (b % 4 == 0)
            nc_del_att(g, NC_GLOBAL, a & 1 ? "raster_complete"
                                           : "raster_format_version");
        else
            nc_put_att_int(g, NC_GLOBAL, a & 1 ? "raster_complete"
                                               : "raster_format_version",
                           NC_INT, 1, &val);
        break;
    }
    case 7: /* a region group's region_id */
        if (subgroup(g, a, &sg) == 0) {
            int val = (int)pick_value(in, 0);
            if (b % 3 == 0)
                nc_del_att(sg, NC_GLOBAL, "region_id");
            else if (b % 3 == 1)
                nc_put_att_int(sg, NC_GLOBAL, "region_id", NC_INT, 1, &val);
            else
                nc_put_att_longlong(sg, NC_GLOBAL, "region_id", NC_INT64, 2,
                                    (long long[]){val, val});
        }
        break;
    case 8: /* a region group renamed */
        if (subgroup(g, a, &sg) == 0) {
            char name[64];
            long long id = pick_value(in, 0);
            if (id < 0)
                snprintf(name, sizeof name, "region_m%lld",
                         id == INT64_MIN ? 1LL : -id);
            else
                snprintf(name, sizeof name, "region_%lld", id);
            nc_rename_grp(sg, b & 1 ? "Mixed_Chunks" : name);
        }
        break;
    case 9: /* pure_cells, mixed_cells, mixed_offset, mixed_chunks */
        if (subgroup(g, a, &sg) == 0) {
            static const char *const n[] = {"pure_cells", "mixed_cells",
                                            "mixed_offset", "mixed_chunks"};
            unsigned long long val = (unsigned long long)pick_value(in, 0);
            nc_put_att_ulonglong(sg, NC_GLOBAL, n[b % 4], NC_UINT64, 1, &val);
        }
        break;
    case 10: { /* a duplicate region group: another group with an id */
        char name[32];
        int ng, id = ids[a % 8];
        snprintf(name, sizeof name, "region_dup%u", b);
        if (nc_def_grp(g, name, &ng) == 0) {
            nc_put_att_int(ng, NC_GLOBAL, "region_id", NC_INT, 1, &id);
            int d;
            if (nc_def_dim(ng, "cells", 1 + c % 50, &d) == 0)
                nc_def_var(ng, "data", s->xtype, 1, &d, &varid);
        }
        break;
    }
    case 11: /* a description attribute deleted */
        nc_del_att(g, NC_GLOBAL, group_atts[a % 7]);
        break;
    case 12: /* an index table replaced by one of another type or shape,
              * or a region's rows of the shared tables moved */
        if (a & 1) {
            unsigned long long rows[2];
            const char *att = b & 1 ? "run_rows" : "chunk_rows";
            if (subgroup(g, a >> 1, &sg) == 0 &&
                nc_get_att_ulonglong(sg, NC_GLOBAL, att, rows) == 0) {
                rows[(b >> 1) & 1] =
                    (unsigned long long)pick_value(in, (long long)rows[(b >> 1) & 1]);
                nc_put_att_ulonglong(sg, NC_GLOBAL, att, NC_UINT64, 2, rows);
            }
        } else if (nc_inq_varid(g, tables[b % 4], &varid) == 0) {
            char old[32];
            int dims[2], nv;
            snprintf(old, sizeof old, "%s_old", tables[b % 4]);
            if (nc_inq_vardimid(g, varid, dims) == 0 &&
                nc_rename_var(g, varid, old) == 0)
                nc_def_var(g, tables[b % 4], c & 1 ? NC_INT : NC_INT64,
                           c & 2 ? 1 : 2, dims, &nv);
        }
        break;
    case 13: /* a store replaced by one of another type or shape */
        if (subgroup(g, a, &sg) == 0 &&
            nc_inq_varid(sg, "data", &varid) == 0 &&
            nc_rename_var(sg, varid, "data_old") == 0) {
            int dims[5], nd, nv;
            if (nc_inq_varndims(sg, varid, &nd) == 0 && nd <= 5 &&
                nc_inq_vardimid(sg, varid, dims) == 0) {
                int t = b & 1 ? s->xtype : types[(b >> 1) % 4];
                int n = c % 3 == 0 && nd > 1 ? nd - 1 : nd;
                if (c % 3 == 1 && nd > 1) {
                    int tmp = dims[0];
                    dims[0] = dims[nd - 1];
                    dims[nd - 1] = tmp;
                }
                nc_def_var(sg, "data", t, n, dims, &nv);
            }
        }
        break;
    case 14: /* a record written far beyond the end of the records */
        if (s->unlim && subgroup(g, a, &sg) == 0 &&
            nc_inq_varid(sg, "data", &varid) == 0) {
            int nd, dims[5];
            size_t cells;
            if (nc_inq_varndims(sg, varid, &nd) || nd < 2 || nd > 5 ||
                nc_inq_vardimid(sg, varid, dims) ||
                nc_inq_dimlen(sg, dims[nd - 1], &cells) || cells > 1000)
                break;
            size_t start[5] = {0}, count[5] = {1, 1, 1, 1, 1};
            start[0] = s->t + (size_t)(pick_value(in, 0) & 0xfffffff);
            count[nd - 1] = cells;
            double fv = fill_of(s->xtype);
            unsigned char buf[8000];
            for (size_t i = 0; i < cells; i++)
                put_value(s->xtype, buf, i, fv);
            int st = nc_put_vara(sg, varid, start, count, buf);
            if (getenv("RASTER_FUZZ_DEBUG"))
                fprintf(stderr, "record %zu: %s\n", start[0], nc_strerror(st));
        }
        break;
    case 15: { /* the placeholder replaced */
        int p, nd, dims[8], nv;
        if (nc_inq_varid(root, "v", &varid) || nc_inq_varndims(root, varid, &nd) ||
            nd > 8 || nc_inq_vardimid(root, varid, dims) ||
            nc_rename_var(root, varid, "v_old"))
            break;
        p = root;
        int t = a & 1 ? s->xtype : types[(a >> 1) % 4];
        if (b % 3 == 0 && nd > 2)
            nd--;
        else if (b % 3 == 1) {
            int tmp = dims[nd - 1];
            dims[nd - 1] = dims[nd - 2];
            dims[nd - 2] = tmp;
        }
        nc_def_var(p, "v", t, nd, dims, &nv);
        break;
    }
    case 16: { /* a new dimension, maybe huge, that dimids may point at */
        int d;
        char name[32];
        snprintf(name, sizeof name, "extra%u", a);
        size_t len = (size_t)(pick_value(in, 1) & 0x7fffffff);
        nc_def_dim(root, name, len ? len : 1, &d);
        break;
    }
    case 17: /* the mask's CF flags */
        if (nc_inq_varid(g, "mask", &varid) == 0) {
            if (b & 1) {
                int n = 1 + a % 10;
                long long vals[10];
                for (int i = 0; i < n; i++)
                    vals[i] = pick_value(in, ids[i % 8]);
                nc_put_att_longlong(g, varid, "flag_values",
                                    c & 1 ? NC_INT64 : NC_DOUBLE, (size_t)n,
                                    vals);
            } else {
                char text[80];
                size_t n = c % 80;
                for (size_t i = 0; i < n; i++)
                    text[i] = "ab _\t"[u8(in) % 5];
                nc_put_att_text(g, varid, "flag_meanings", n, text);
            }
        }
        break;
    case 18: /* the stored mask replaced */
        if (nc_inq_varid(g, "mask", &varid) == 0 &&
            nc_rename_var(g, varid, "mask_old") == 0) {
            int dims[2], nv;
            if (nc_inq_vardimid(g, varid, dims) == 0) {
                static const int mt[] = {NC_DOUBLE, NC_BYTE, NC_INT64,
                                         NC_CHAR, NC_FLOAT};
                int t = mt[a % 5];
                if (b & 1) {
                    int tmp = dims[0];
                    dims[0] = dims[1];
                    dims[1] = tmp;
                }
                if (nc_def_var(g, "mask", t, c % 4 == 0 ? 1 : 2, dims, &nv) ==
                        0 && t != NC_CHAR) {
                    size_t n = c % 4 == 0 ? s->ny : s->ny * s->nx;
                    double *vals = malloc(n * sizeof *vals);
                    if (vals) {
                        for (size_t i = 0; i < n; i++)
                            vals[i] = s->mask[i] + (u8(in) == 7 ? 0.5 : 0);
                        nc_put_var_double(g, nv, vals);
                        free(vals);
                    }
                }
            }
        }
        break;
    default: /* 19: the file cut short after closing */
        *cut = 1;
        *cut_at = (long)(pick_value(in, 0) & 0x7fffffff);
        break;
    }
}

/* ---- reading back --------------------------------------------------------- */

static void check_file(const char *path, const spec *s, int mode)
{
    raster_file *f = (raster_file *)(uintptr_t)1;
    int rc = raster_open(path, mode, &f);
    if (getenv("RASTER_FUZZ_DEBUG"))
        fprintf(stderr, "raster_open(mode %d): %d %s\n", mode, rc,
                raster_errmsg());
    if (rc != RASTER_OK) {
        if (f != NULL)
            DIE("failed raster_open left a handle");
        if (raster_errmsg()[0] == '\0')
            DIE("raster_open failed (%d) without a message", rc);
        if (rc < 1 || rc > RASTER_ERROR_MAX)
            DIE("raster_open returned %d", rc);
        return;
    }
    for (size_t k = 0; k < raster_file_nvars(f); k++) {
        raster_var *v = raster_file_var(f, k);
        int nd = raster_var_ndims(v), xtype = raster_var_type(v);
        if (xtype != s->xtype || nd != 3 + s->has_z)
            DIE("served a variable of type %d, rank %d", xtype, nd);
        size_t shape[32];
        if (raster_var_dims(v, NULL, shape, NULL))
            DIE("var_dims: %s", raster_errmsg());
        if (shape[nd - 2] != s->ny || shape[nd - 1] != s->nx ||
            (s->has_z && shape[1] != s->z))
            DIE("served a grid %zu x %zu", shape[nd - 2], shape[nd - 1]);
        if (!s->unlim && shape[0] != s->t)
            DIE("served %zu records of %zu", shape[0], s->t);
        /* at most the written records and one more */
        size_t nrec = shape[0] < s->t + 1 ? shape[0] : s->t + 1;
        size_t start[4] = {0, 0, 0, 0}, count[4];
        memcpy(count, shape, sizeof count);
        count[0] = nrec;
        size_t plane = s->ny * s->nx, planes = nrec * s->z;
        size_t elem = type_size(xtype);
        unsigned char *whole = malloc(planes * plane * elem);
        unsigned char *part = malloc(planes * plane * elem);
        size_t *ys = malloc(plane * sizeof *ys), *xs = malloc(plane * sizeof *xs);
        if (!whole || !part || !ys || !xs)
            DIE("out of memory");
        rc = raster_var_get(v, start, count, NULL, whole);
        if (rc == RASTER_OK) {
            for (size_t i = 0; i < planes * plane; i++) {
                double want = i < s->t * s->z * plane ? value_at(i)
                                                      : fill_of(xtype);
                double got = get_value(xtype, whole, i);
                if (got != want)
                    DIE("WRONG NUMBER: element %zu is %g, wrote %g (mode %d)",
                        i, got, want, mode);
            }
        } else if (raster_errmsg()[0] == '\0') {
            DIE("var_get failed without a message");
        }
        /* the mask of a read-only file comes with the full check: NULL is
         * a refusal (with a message), and no region is read against it */
        const raster_mask *m = raster_var_mask(v);
        const int32_t *mv = m ? raster_mask_values(m) : NULL;
        if (!mv && raster_errmsg()[0] == '\0')
            DIE("no mask and no message");
        size_t ostart[2] = {0, 0}, ocount[2] = {nrec, s->z};
        for (size_t r = 0; r < 8 && mv; r++) {
            int32_t id = ids[r];
            size_t cells = 0;
            if (raster_region_size(v, &id, 1, RASTER_LAYOUT_PACKED, &cells))
                continue;
            for (int layout = 0; layout < 3; layout++) {
                size_t n;
                if (raster_region_size(v, &id, 1, layout, &n) || n > plane)
                    DIE("region size %zu", n);
                int r2 = raster_region_read(v, &id, 1, ostart, ocount, layout,
                                            part);
                if (r2 != RASTER_OK || rc != RASTER_OK)
                    continue;
                if (layout == RASTER_LAYOUT_FULL) {
                    for (size_t p = 0; p < planes; p++)
                        for (size_t c = 0; c < plane; c++) {
                            double got = get_value(xtype, part, p * plane + c);
                            double want = mv[c] == id
                                ? get_value(xtype, whole, p * plane + c)
                                : fill_of(xtype);
                            if (got != want)
                                DIE("WRONG NUMBER: region %d full read, "
                                    "plane %zu cell %zu: %g, not %g", id, p,
                                    c, got, want);
                        }
                } else if (layout == RASTER_LAYOUT_PACKED) {
                    if (raster_region_cells(v, &id, 1, ys, xs))
                        DIE("region_cells: %s", raster_errmsg());
                    for (size_t p = 0; p < planes; p++)
                        for (size_t c = 0; c < cells; c++) {
                            size_t g = ys[c] * s->nx + xs[c];
                            if (mv[g] != id)
                                DIE("packed cell %zu not of region %d", c, id);
                            double got = get_value(xtype, part, p * cells + c);
                            double want = get_value(xtype, whole, p * plane + g);
                            if (got != want)
                                DIE("WRONG NUMBER: region %d packed read", id);
                        }
                }
            }
        }
        free(whole);
        free(part);
        free(ys);
        free(xs);
    }
    rc = raster_close(f);
    if (rc != RASTER_OK && raster_errmsg()[0] == '\0')
        DIE("raster_close failed without a message");
}

static char file_path[512];
static unsigned path_generation; /* leave_leftovers() moves the file */

/* The last file written, by the input bytes that chose it: most inputs
 * differ from the previous one in their mutations only, and writing a
 * netCDF-4 file costs more than copying one. */
static uint8_t cache_key[64];
static size_t cache_keylen;
static unsigned char *cache_bytes;
static size_t cache_len;

static void write_cached(const char *path, const spec *s, const uint8_t *key,
                         size_t keylen)
{
    if (cache_bytes && keylen == cache_keylen && keylen <= sizeof cache_key &&
        memcmp(key, cache_key, keylen) == 0) {
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(cache_bytes, 1, cache_len, fp) != cache_len ||
            fclose(fp) != 0)
            DIE("writing %s", path);
        return;
    }
    write_file(path, s);
    free(cache_bytes);
    cache_bytes = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp || fseek(fp, 0, SEEK_END) != 0)
        DIE("reading back %s", path);
    long len = ftell(fp);
    if (len <= 0 || fseek(fp, 0, SEEK_SET) != 0)
        DIE("reading back %s", path);
    cache_bytes = malloc((size_t)len);
    if (!cache_bytes || fread(cache_bytes, 1, (size_t)len, fp) != (size_t)len)
        DIE("reading back %s", path);
    fclose(fp);
    cache_len = (size_t)len;
    cache_keylen = keylen <= sizeof cache_key ? keylen : 0;
    memcpy(cache_key, key, cache_keylen);
}

static void make_path(void)
{
    if (file_path[0])
        return;
    const char *dir = getenv("RASTER_FUZZ_DIR");
    if (!dir || !*dir)
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(file_path, sizeof file_path, "%s/raster-fuzz-%ld-%u.nc", dir,
             (long)getpid(), path_generation);
}

/* A failed nc_close (the mutations' own) can leave the file open in HDF5
 * with its metadata cache as netCDF left it; HDF5 knows a file by its
 * inode, so the next open of the path would share that state instead of
 * reading the file, and crash in HDF5 on it (closing the leftovers can
 * crash there too). A program would meet HDF5's state there, not
 * raster's. So the file moves to a new inode under a new name, used from
 * then on, and the old one is left to the leaked handle. */
static void leave_leftovers(void)
{
    if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE) == 0)
        return;
    FILE *fp = fopen(file_path, "rb");
    long len = fp && fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    unsigned char *bytes = len > 0 ? malloc((size_t)len) : NULL;
    if (!fp || len <= 0 || !bytes || fseek(fp, 0, SEEK_SET) != 0 ||
        fread(bytes, 1, (size_t)len, fp) != (size_t)len)
        DIE("copying %s", file_path);
    fclose(fp);
    unlink(file_path);
    path_generation++;
    file_path[0] = '\0';
    make_path();
    fp = fopen(file_path, "wb");
    if (!fp || fwrite(bytes, 1, (size_t)len, fp) != (size_t)len ||
        fclose(fp) != 0)
        DIE("writing %s", file_path);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return -1; /* keep inputs small: reject from the corpus */
    if (!file_path[0]) /* before HDF5 starts: its exit handler would close
                        * what leave_leftovers() left, and crash there */
        H5dont_atexit();
    make_path();
    input in = {data, size};
    int32_t mask[20 * 30];
    spec s = {.mask = mask};
    read_spec(&in, &s);
    write_cached(file_path, &s, data, size - in.n);
    int cut = 0;
    long cut_at = 0;
    unsigned nops = u8(&in) % 9;
    if (nops > 0) {
        int ncid, g;
        if (nc_open(file_path, NC_WRITE, &ncid))
            DIE("reopening the fresh file");
        if (nc_inq_grp_ncid(ncid, "raster_v", &g))
            DIE("no raster_v");
        for (unsigned i = 0; i < nops; i++)
            mutate(ncid, g, &in, &s, &cut, &cut_at);
        if (nc_close(ncid) != NC_NOERR) /* hostile edits can make it fail */
            leave_leftovers();
    }
    if (cut) {
        FILE *fp = fopen(file_path, "rb");
        long len = 0;
        if (fp && fseek(fp, 0, SEEK_END) == 0)
            len = ftell(fp);
        if (fp)
            fclose(fp);
        if (len > 0 && truncate(file_path, cut_at % len) != 0)
            DIE("truncate");
    }
    /* raster leaves nothing open in HDF5, whatever the file (the files
     * leave_leftovers() left to netCDF's failed closes stay counted) */
    ssize_t files = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE);
    check_file(file_path, &s, RASTER_READ);
    if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE) != files)
        DIE("a read-only raster_open/raster_close left a file open in HDF5");
    check_file(file_path, &s, RASTER_WRITE);
    if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE) != files)
        DIE("a writable raster_open/raster_close left a file open in HDF5");
    unlink(file_path);
    return 0;
}
