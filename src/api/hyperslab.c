/*
 * hyperslab.c - the hyperslab path (raster_var_get/put and their typed
 * forms): a box of the grid turned into pieces over the stores, through the
 * tile index of a read-only file or the runs, then moved by chunkio.c (or
 * parwrite.c in a parallel file); netCDF's conversions and statuses for
 * typed transfers.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkio.h"
#include "convert.h"
#include "error.h"
#include "integrity.h"
#include "meta.h"
#include "ncbind.h"
#include "parwrite.h"
#include "quantize.h"
#include "regions.h"
#include "state.h"
#include "statstore.h"
#include "tiles.h"
#include "var.h"
#include "variable.h"

/* A hyperslab's rows [ys, yend) with stride sy, columns [xs, xend) with
 * stride sx, cx columns wide in the caller's plane. */
typedef struct slab_box {
    size_t ys, yend, sy, xs, xend, sx, cx;
} slab_box;

/* A failed typed transfer: RASTER_EINVAL with netCDF's status. */
#define TYPED_FAIL(ncst, ...)                                                 \
    raster_fail_nc(RASTER_EINVAL, (ncst), __VA_ARGS__)

/* netCDF's X_INT_MAX: nc_put_varm refuses strides from here on. */
#define NC_VARM_STRIDE_LIMIT 2147483647UL

/* First run of `runs` (grid order) on row y or later. */
static size_t first_run_from(const region_run *runs, size_t n, size_t y)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (runs[mid].y < y)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int push_piece(piece **p, size_t *cap, size_t *np, piece pc)
{
    int rc = raster_grow(p, cap, *np + 1, sizeof **p);
    if (rc == RASTER_OK)
        (*p)[(*np)++] = pc;
    return rc;
}

/* Checks that the pieces of a hyperslab cover each cell of the caller's
 * plane exactly once. Each region's runs are checked alone as they load;
 * only all of them show that no two regions claim one cell, and a read-only
 * file's runs are not compared with its mask until the full check. Without
 * this, a run moved onto another region's cells would serve one region's
 * value for another's cell. Costs a bit per cell of the plane. */
static int check_cover(const raster_var *v, const piece *p, size_t np,
                       const size_t *start, const size_t *count,
                       const ptrdiff_t *stride)
{
    if (v->lay) /* runs derived from the mask: they tile it */
        return RASTER_OK;
    int dy = v->ndims - 2, dx = v->ndims - 1;
    size_t cx = count[dx], cells = count[dy] * cx, total = 0;
    uint64_t *map = raster_calloc(cells / 64 + 1, sizeof *map);
    if (!map)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s", v->name);
    int rc = RASTER_OK;
    for (size_t i = 0; i < np && rc == RASTER_OK; i++) {
        if (!regions_mark(map, p[i].uoff, p[i].len)) {
            size_t sy = stride ? (size_t)stride[dy] : 1;
            size_t sx = stride ? (size_t)stride[dx] : 1;
            rc = raster_fail(RASTER_EFORMAT, "%s: two regions claim grid "
                             "cell (%zu, %zu)", v->name,
                             start[dy] + p[i].uoff / cx * sy,
                             start[dx] + p[i].uoff % cx * sx);
        }
        total += p[i].len;
    }
    raster_free(map);
    if (rc == RASTER_OK && total != cells)
        rc = raster_fail(RASTER_EFORMAT, "%s: the regions cover %zu of the "
                         "%zu grid cells read", v->name, total, cells);
    return rc;
}

/* Appends the pieces of run u inside box b. */
static int run_pieces(const region_run *u, const slab_box *b, piece **p,
                      size_t *cap, size_t *np)
{
    if ((u->y - b->ys) % b->sy != 0)
        return RASTER_OK;
    size_t i = (u->y - b->ys) / b->sy;
    size_t lo = u->x > b->xs ? u->x : b->xs;
    size_t hi = u->x + u->len < b->xend ? u->x + u->len : b->xend;
    if (lo >= hi)
        return RASTER_OK;
    if (b->sx > 1) /* first wanted column at or after lo */
        lo = b->xs + (lo - b->xs + b->sx - 1) / b->sx * b->sx;
    int rc = RASTER_OK;
    for (; lo < hi && rc == RASTER_OK; lo += (b->sx > 1 ? b->sx : hi - lo)) {
        size_t len = b->sx > 1 ? 1 : hi - lo;
        rc = push_piece(p, cap, np, (piece){
            .soff = u->off + (lo - u->x),
            .uoff = i * b->cx + (lo - b->xs) / b->sx, .store = u->store,
            .len = (uint32_t)len});
    }
    return rc;
}

/* Pieces mapping the grid rectangle of a hyperslab to the stores, the
 * caller's plane being count[y] x count[x]: from the tile index in a
 * read-only file (a band across the grid touches only its tiles), from
 * the layout's segments of its rows in a writer (grid order: the rows
 * found by a binary search, no pass over every region), else from every
 * region's runs. */
static int hyperslab_pieces(raster_var *v, const size_t *start,
                            const size_t *count, const ptrdiff_t *stride,
                            piece **out, size_t *n)
{
    if (tiles_usable(v))
        return tiles_pieces(v, start, count, stride, out, n);
    int dy = v->ndims - 2, dx = v->ndims - 1, rc = RASTER_OK;
    size_t ys = start[dy], cy = count[dy], xs = start[dx], cx = count[dx];
    size_t sy = stride ? (size_t)stride[dy] : 1;
    size_t sx = stride ? (size_t)stride[dx] : 1;
    size_t xend = cx ? xs + (cx - 1) * sx + 1 : xs;
    size_t yend = cy ? ys + (cy - 1) * sy + 1 : ys;
    slab_box box = {ys, yend, sy, xs, xend, sx, cx};
    size_t cap = 0, np = 0;
    piece *p = NULL;
    *out = NULL;
    *n = 0;
    const layout *lay = v->table_from_layout ? v->lay : NULL;
    if (lay && cx > 0) {
        size_t lo = 0, hi = lay->nsegs;
        while (lo < hi) { /* the first segment of row ys */
            size_t mid = lo + (hi - lo) / 2;
            if (lay->segs[mid].y < ys)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < lay->nsegs && lay->segs[k].y < yend &&
                            rc == RASTER_OK; k++) {
            const layout_seg *g = &lay->segs[k];
            region_run u = {g->y, g->x, g->len, g->store, g->off};
            rc = run_pieces(&u, &box, &p, &cap, &np);
        }
    }
    for (size_t r = 0; r < v->nregions && rc == RASTER_OK && cx > 0 && !lay;
         r++) {
        const region_run *runs;
        size_t nr;
        if ((rc = regions_runs(v, r, &runs, &nr)) != RASTER_OK)
            break;
        const size_t *bx = v->regions[r].box;
        if (bx[0] >= yend || bx[2] <= ys || bx[1] >= xend || bx[3] <= xs)
            continue;
        for (size_t k = first_run_from(runs, nr, ys);
             k < nr && runs[k].y < yend && rc == RASTER_OK; k++)
            rc = run_pieces(&runs[k], &box, &p, &cap, &np);
    }
    if (rc == RASTER_OK && cx > 0 && cy > 0)
        rc = check_cover(v, p, np, start, count, stride);
    if (rc) {
        raster_free(p);
        return rc;
    }
    *out = p;
    *n = np;
    return RASTER_OK;
}

/* The values a write stores when the variable is quantized: netCDF-4
 * quantizes each put's buffer, converted to the variable's type, before
 * HDF5 sees it, so a store must hold the same bits. *copy gets a quantized
 * copy of data (box `count`; the caller's values stay as they are), in
 * runs of `run` values as netCDF's put calls cut them (quantize_copy), or
 * NULL when mode is NC_NOQUANTIZE. The variable's _FillValue (v->fill)
 * is left alone, as netCDF leaves it. */
static int quantize_for_write(raster_var *v, int mode, int nsd,
                              const size_t *count, size_t run,
                              const void *data, void **copy)
{
    *copy = NULL;
    if (mode == NC_NOQUANTIZE)
        return RASTER_OK;
    size_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        if (raster_mul_overflows(n, count[d], &n))
            return raster_fail(RASTER_ENOMEM, "%s: request too large",
                               v->name);
    int rc = quantize_copy(v->xtype, mode, nsd, data, n, run, v->fill, copy);
    if (rc != RASTER_OK) {
        char why[256]; /* the message is rewritten below */
        snprintf(why, sizeof why, "%s", raster_errmsg());
        return raster_fail(rc, "%s: quantizing the values: %s", v->name, why);
    }
    return RASTER_OK;
}

/* `qrun`: for a write, how many values netCDF would quantize as one
 * buffer (quantize_for_write): 0, the whole box, but for nc_put_varm's. */
/* Format 5: a read-only variable's small reads (VAR_NETCDF_CHUNKS) go
 * through netCDF when the file is open there. Sets the netCDF ids to
 * read. */
static int netcdf_read(const raster_var *v, const size_t *start,
                       const size_t *count, const ptrdiff_t *stride,
                       int *grp, int *varid)
{
    *grp = v->file->view ? v->view_parent : v->parent;
    *varid = v->file->view ? v->view_varid : v->varid;
    if (!var_tiled(v) || v->file->writable ||
        (!v->file->view && v->file->ncid < 0) || *grp < 0 || *varid < 0)
        return 0;
    return var_few_chunks(v->ndims, v->chunk, start, count, stride);
}

static int var_io(raster_var *v, const size_t *start, const size_t *count,
                  const ptrdiff_t *stride, void *data, int write, size_t qrun)
{
    if (!var_ok(v) || !start || !count || !data)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    if (write && !v->file->writable)
        return raster_fail_nc(RASTER_EINVAL, NC_EPERM, "%s: file is read-only",
                              v->name);
    int rc = write ? var_check_write(v, start, count, stride)
                   : var_check_read(v, start, count, stride);
    if (rc)
        return rc;
    /* a file rewritten under the handle: its tables no longer describe it */
    if (!write && (rc = file_unchanged(v->file)) != RASTER_OK)
        return rc;
    int grp, varid;
    if (!write && netcdf_read(v, start, count, stride, &grp, &varid)) {
        int st = nc_get_vars(grp, varid, start, count, stride, data);
        return st == NC_NOERR ? RASTER_OK
                              : raster_fail_nc(RASTER_ENETCDF, st,
                                               "reading %s: %s", v->name,
                                               nc_strerror(st));
    }
    if (!v->materialized && (rc = meta_materialize(v)) != RASTER_OK)
        return rc;
    if (write && !v->dirty) {
        /* appending: incomplete until close, and on disk before any data,
         * so a writer that dies leaves a file that is refused */
        rc = meta_mark_complete(v, 0);
        if (rc)
            return rc;
        int st = nc_sync(v->file->ncid);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st,
                                  "%s: flushing the completeness marker: %s",
                                  v->name, nc_strerror(st));
        v->dirty = 1;
    }
    if (write)
        v->comp_fixed = 1; /* its stores are in the file from now on */
    /* a quantized variable: the caller's values quantized, in a copy, as
     * netCDF would quantize this very buffer (BitGroom depends on a value's
     * position in it), before they are cut into pieces */
    void *quantized = NULL;
    if (write && (rc = quantize_for_write(v, v->comp.quantize_mode,
                                          v->comp.quantize_nsd, count, qrun,
                                          data, &quantized)) != RASTER_OK)
        return rc;
    if (quantized)
        data = quantized;
    piece *p;
    size_t n;
    rc = hyperslab_pieces(v, start, count, stride, &p, &n);
    if (rc) {
        raster_free(quantized);
        return rc;
    }
    int no = var_nouter(v);
#ifdef RASTER_MPI
    if (write && v->file->par && var_tiled(v)) /* the variable itself */
        rc = par_put_tiled(v, start, count, stride, data);
    else if (write && v->file->par) /* collective extension */
        rc = par_put(v, p, n, start, count, stride, data,
                     count[no] * count[no + 1]);
    else
#endif
    {
        /* the statistics the file keeps (a parallel file keeps none),
         * from the values as stored: computed beside the write */
        statstore_job *job = NULL;
        if (write)
            rc = statstore_begin(v, start, count, stride, data, &job);
        if (rc == RASTER_OK)
            rc = chunkio_xfer(v, p, n, start, count, stride, data,
                              count[no] * count[no + 1], write);
        rc = statstore_end(job, rc);
    }
    raster_free(p);
    raster_free(quantized);
    if (rc == RASTER_OK && write)
        var_wrote(v, start, count, stride);
    /* and while it was read */
    if (rc == RASTER_OK && !write)
        rc = file_unchanged(v->file);
    return rc;
}

int raster_var_put(raster_var *v, const size_t *start, const size_t *count,
                   const ptrdiff_t *stride, const void *data)
{
    return var_io(v, start, count, stride, (void *)data, 1, 0);
}

int raster_var_get(raster_var *v, const size_t *start, const size_t *count,
                   const ptrdiff_t *stride, void *data)
{
    return var_io(v, start, count, stride, data, 0, 0);
}

/* 1 when dimension d of v is unlimited. */
static int dim_unlimited(const raster_var *v, int d)
{
    if (v->file->writable)
        return var_write_unlimited((raster_var *)v, d); /* cached */
    return var_dim_unlimited(v, d);
}

/* 1 when a box of counts cnt laid out by imap is plain row-major. */
static int imap_is_rowmajor(int nd, const size_t *cnt, const ptrdiff_t *imap)
{
    size_t run = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (cnt[d] > 1 && (imap[d] < 0 || (size_t)imap[d] != run))
            return 0;
        run *= cnt[d];
    }
    return 1;
}

/* Bound checks of dimension d: start within the length (NC_EINVALCOORDS),
 * then, when `check_end`, the end: the last strided index (NC4_put_vars,
 * NC4_get_vars) or, for `varm`, start + count (NCDEFAULT_put_varm,
 * NCDEFAULT_get_varm) within the length (NC_EEDGE). */
static int check_dim(const raster_var *v, int d, size_t start, size_t cnt,
                     ptrdiff_t step, size_t len, int check_end, int varm)
{
    if (start > len || (start == len && cnt > 0))
        return raster_fail_nc(
            RASTER_EINVAL, NC_EINVALCOORDS,
            "%s: start %zu beyond length %zu in dimension %d", v->name, start,
            len, d);
    if (!check_end || cnt == 0)
        return RASTER_OK;
    size_t span;
    int past = varm ? cnt > len - start
                    : raster_mul_overflows(cnt - 1, (size_t)step, &span) ||
                          span >= len - start;
    if (past)
        return raster_fail_nc(RASTER_EINVAL, NC_EEDGE,
                              "%s: start %zu count %zu stride %td run past "
                              "length %zu in dimension %d",
                              v->name, start, cnt, step, len, d);
    return RASTER_OK;
}

/* netCDF-4's checks of nc_put_vars / nc_get_vars (NC4_put_vars,
 * NC4_get_vars): every stride first, then dimension by dimension; a put
 * skips unlimited dimensions and, when any count is 0, the edge checks. */
static int check_vars(const raster_var *v, const size_t *start,
                      const size_t *cnt, const ptrdiff_t *str,
                      const size_t *shape, int zero, int write)
{
    for (int d = 0; d < v->ndims; d++)
        if (str[d] <= 0)
            return raster_fail_nc(RASTER_EINVAL, NC_ESTRIDE,
                                  "%s: stride %td in dimension %d", v->name,
                                  str[d], d);
    for (int d = 0; d < v->ndims; d++) {
        if (write && dim_unlimited(v, d))
            continue;
        int rc = check_dim(v, d, start[d], cnt[d], str[d], shape[d],
                           write ? !zero : 1, 0);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* netCDF's checks of nc_put_varm / nc_get_varm (NCDEFAULT_put_varm,
 * NCDEFAULT_get_varm): strides 1 .. X_INT_MAX - 1, then start + count
 * (not the strided extent) against the current lengths: a put in
 * increasing dimension order skipping the record dimension, a get in
 * decreasing order. */
static int check_varm(const raster_var *v, const size_t *start,
                      const size_t *cnt, const ptrdiff_t *str,
                      const size_t *shape, int write)
{
    int nd = v->ndims, rc;
    for (int d = 0; d < nd; d++)
        if (str[d] == 0 || (unsigned long)str[d] >= NC_VARM_STRIDE_LIMIT)
            return raster_fail_nc(RASTER_EINVAL, NC_ESTRIDE,
                                  "%s: stride %td in dimension %d", v->name,
                                  str[d], d);
    if (write) {
        /* NC_is_recvar: the first dimension is the group's unlimited one */
        int unlimid = -1, isrec = 0;
        if (nc_inq_unlimdim(v->parent, &unlimid) == NC_NOERR && unlimid >= 0)
            isrec = v->dimids[0] == unlimid;
        for (int d = isrec; d < nd; d++)
            if ((rc = check_dim(v, d, start[d], cnt[d], str[d], shape[d], 1,
                                1)))
                return rc;
    } else {
        for (int d = nd - 1; d >= 0; d--)
            if ((rc = check_dim(v, d, start[d], cnt[d], str[d], shape[d], 1,
                                1)))
                return rc;
    }
    return RASTER_OK;
}

/* netCDF-4 extends the unlimited dimensions a write reaches before it
 * converts, so a string write that fails to convert still lengthens them.
 * Writing the fill value at the box's last element does the same: that
 * element lies beyond the old end, where every cell reads as fill. */
static int string_put_extend(raster_var *v, const size_t *start,
                             const size_t *cnt, const ptrdiff_t *str,
                             const size_t *shape)
{
    size_t last[RASTER_MAX_DIMS], one[RASTER_MAX_DIMS];
    int grow = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (cnt[d] == 0)
            return RASTER_OK;
        last[d] = start[d] + (cnt[d] - 1) * (size_t)str[d];
        one[d] = 1;
        grow |= dim_unlimited(v, d) && last[d] >= shape[d];
    }
    return grow ? var_io(v, last, one, NULL, v->fill, 1, 0) : RASTER_OK;
}

static int typed_io(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride, const ptrdiff_t *imap,
                    void *data, int memtype, int write)
{
    if (!var_ok(v))
        return raster_fail_nc(RASTER_EINVAL, NC_EINVAL,
                              "NULL variable, or a closed file's");
    /* a put's checks ask netCDF (NC_is_recvar) before it is refused as a
     * write to a read-only file: a lean one binds first */
    int rc = write ? file_netcdf(v->file) : RASTER_OK;
    if (rc)
        return rc;
    /* NC_check_nulls, before the dispatch layer looks at types */
    if (!start)
        return raster_fail_nc(RASTER_EINVAL, NC_EINVALCOORDS,
                              "%s: no start given", v->name);
    int nd = v->ndims;
    if (memtype == NC_NAT)
        memtype = v->xtype;
    if (memtype == NC_CHAR)
        return raster_fail_nc(
            RASTER_EINVAL, NC_ECHAR,
            "%s: text cannot be converted to or from numbers", v->name);
    if (memtype != NC_STRING && convert_type_size(memtype) == 0)
        return raster_fail_nc(RASTER_EINVAL, NC_EBADTYPE,
                              "%s: memory type %d is not a netCDF atomic type",
                              v->name, memtype);
    size_t shape[RASTER_MAX_DIMS], cnt[RASTER_MAX_DIMS];
    ptrdiff_t str[RASTER_MAX_DIMS];
    /* a write with a count needs no record count (var.h: wshape) */
    if ((rc = write && count ? var_write_shape(v, shape)
                             : raster_var_dims(v, NULL, shape, NULL)))
        return rc;
    int zero = 0, clipped = 0;
    for (int d = 0; d < nd; d++) {
        cnt[d] = count ? count[d] : shape[d]; /* NC_check_nulls */
        str[d] = stride ? stride[d] : 1;
        zero |= cnt[d] == 0;
    }
    if (!imap) {
        if ((rc = check_vars(v, start, cnt, str, shape, zero, write)))
            return rc;
    } else {
        if ((rc = check_varm(v, start, cnt, str, shape, write)))
            return rc;
        if (zero) { /* nc_put_varm / nc_get_varm stop here */
            raster_nc_status_set(NC_NOERR);
            return RASTER_OK;
        }
        /* nc_*_varm then moves row by row, each row checked on its own:
         * rows a stride carries past a (fixed, or for a get any) length
         * fail with NC_EINVALCOORDS, the others are transferred. */
        for (int d = 0; d < nd; d++) {
            if (write && dim_unlimited(v, d))
                continue;
            size_t ok = start[d] >= shape[d] ? 0
                        : (shape[d] - start[d] - 1) / (size_t)str[d] + 1;
            if (ok < cnt[d]) {
                cnt[d] = ok;
                clipped = 1;
            }
        }
    }
    if (memtype == NC_STRING) {
        if (write && v->file->writable && (rc = string_put_extend(v, start,
                                                                  cnt, str,
                                                                  shape)))
            return rc;
        return TYPED_FAIL(clipped ? NC_EINVALCOORDS : NC_EBADTYPE,
                          "%s: strings cannot be converted to or from "
                          "numbers", v->name);
    }
    /* netCDF-4 finds out only when HDF5 refuses the write */
    if (write && !v->file->writable)
        return TYPED_FAIL(clipped ? NC_EINVALCOORDS : NC_EHDFERR,
                          "%s: file is read-only", v->name);

    size_t total = 1, bad = 0;
    for (int d = 0; d < nd; d++)
        if (raster_mul_overflows(total, cnt[d], &total))
            return raster_fail_nc(RASTER_ENOMEM, NC_ENOMEM,
                                  "%s: request too large", v->name);
    if (total > 0) {
        if (!data)
            return raster_fail_nc(RASTER_EINVAL, NC_EINVAL, "%s: NULL data",
                                  v->name);
        /* nc_put_varm puts (and quantizes) row by row when the last
         * dimension is contiguous in memory and in the file, else value
         * by value; nc_put_vars the whole box */
        size_t qrun = !imap ? 0
                      : str[nd - 1] == 1 && imap[nd - 1] == 1 ? cnt[nd - 1]
                                                               : 1;
        if (memtype == v->xtype &&
            (!imap || imap_is_rowmajor(nd, cnt, imap))) {
            rc = var_io(v, start, cnt, str, data, write, qrun);
        } else {
            void *tmp = raster_reallocarray(NULL, total, v->elem);
            if (!tmp)
                return raster_fail_nc(
                    RASTER_ENOMEM, NC_ENOMEM,
                    "%s: out of memory converting %zu values", v->name, total);
            if (write) {
                bad = convert_box(nd, cnt, imap, data, memtype, tmp, v->xtype,
                                  1);
                rc = var_io(v, start, cnt, str, tmp, 1, qrun);
            } else {
                rc = var_io(v, start, cnt, str, tmp, 0, 0);
                if (rc == RASTER_OK)
                    bad = convert_box(nd, cnt, imap, data, memtype, tmp,
                                      v->xtype, 0);
            }
            raster_free(tmp);
        }
        if (rc)
            return rc;
    }
#ifdef RASTER_MPI
    /* a collective write of nothing still takes part in the collective
     * calls of the ranks that write something */
    else if (write && par_put_collective(v) &&
             (rc = var_io(v, start, cnt, str, v->fill, 1, 0)) != RASTER_OK)
        return rc;
#endif
    if (clipped)
        return TYPED_FAIL(NC_EINVALCOORDS, "%s: a stride carries the request "
                          "past a dimension's length; the rows inside it were "
                          "transferred", v->name);
    raster_nc_status_set(bad ? NC_ERANGE : NC_NOERR);
    return RASTER_OK;
}

int raster_var_put_typed(raster_var *v, const size_t *start,
                         const size_t *count, const ptrdiff_t *stride,
                         const ptrdiff_t *imap, const void *data, int memtype)
{
    return typed_io(v, start, count, stride, imap, (void *)data, memtype, 1);
}

int raster_var_get_typed(raster_var *v, const size_t *start,
                         const size_t *count, const ptrdiff_t *stride,
                         const ptrdiff_t *imap, void *data, int memtype)
{
    return typed_io(v, start, count, stride, imap, data, memtype, 0);
}
