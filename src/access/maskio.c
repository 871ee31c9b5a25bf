/*
 * maskio.c - rectangles of a read-only variable's stored mask read with
 * pread (see maskio.h).
 */
#include "maskio.h"

#include <fcntl.h>
#include <hdf5.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"

/* Rows whose skipped bytes exceed this are read one pread each; narrower
 * gaps are read through in one span (MASKIO_PREAD_BYTES's reasoning). */
#define GAP_BYTES ((size_t)MASKIO_PREAD_BYTES)

/* Byte offset and value size of v's mask, or 0 when HDF5 says it cannot
 * be read as plain bytes. */
static int probe_did(raster_var *v, hid_t did)
{
    int ok = 0;
    hid_t type = H5Dget_type(did);
    hid_t space = H5Dget_space(did);
    hsize_t dims[2];
    size_t size = type >= 0 ? H5Tget_size(type) : 0;
    /* contiguous plain bytes (fileio_contiguous) of a type the mask has */
    int64_t addr = type >= 0 ? fileio_contiguous(did, size) : -1;
    if (type >= 0 && space >= 0 && addr >= 0 &&
        (fileio_holds(type, NC_BYTE) == 1 ||
         fileio_holds(type, NC_SHORT) == 1 ||
         fileio_holds(type, NC_INT) == 1) &&
        H5Sget_simple_extent_ndims(space) == 2 &&
        H5Sget_simple_extent_dims(space, dims, NULL) == 2 &&
        dims[0] == v->ny && dims[1] == v->nx) {
        v->mask_base = addr;
        v->mask_elem = size;
        ok = 1;
    }
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return ok;
}

static int probe(raster_var *v)
{
    hid_t did = (hid_t)fileio_var_dataset(v, "mask");
    if (did < 0)
        return 0;
    int ok = probe_did(v, did);
    H5Dclose(did);
    return ok;
}

void maskio_probe(raster_var *v, int64_t did)
{
    lazy_lock(v->file);
    if (v->mask_io == 0 && !v->file->writable)
        v->mask_io = probe_did(v, (hid_t)did) ? 1 : -1;
    lazy_unlock(v->file);
}

int maskio_usable(raster_var *v)
{
    lazy_lock(v->file);
    if (v->mask_io == 0) {
        int ok = 0;
        if (!v->file->writable && v->file->fd >= 0) {
            H5E_auto2_t efunc;
            void *edata;
            H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
            H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* probes never print */
            ok = probe(v);
            H5Eset_auto2(H5E_DEFAULT, efunc, edata);
        }
        v->mask_io = ok ? 1 : -1;
    }
    int usable = v->mask_io == 1;
    lazy_unlock(v->file);
    return usable;
}

static int one_by_one(const raster_var *v, size_t nx)
{
    return (v->nx - nx) * v->mask_elem > GAP_BYTES;
}

size_t maskio_cost(const raster_var *v, size_t ny, size_t nx)
{
    if (ny == 0 || nx == 0)
        return 0;
    if (one_by_one(v, nx))
        return ny * (MASKIO_PREAD_BYTES + nx * v->mask_elem);
    return MASKIO_PREAD_BYTES + ((ny - 1) * v->nx + nx) * v->mask_elem;
}

/* n values of size elem at src widened to int. */
static void widen(int *dst, const unsigned char *src, size_t n, size_t elem)
{
    if (elem == 1) {
        for (size_t i = 0; i < n; i++)
            dst[i] = (int8_t)src[i];
    } else if (elem == 2) {
        for (size_t i = 0; i < n; i++) {
            int16_t x;
            memcpy(&x, src + 2 * i, 2);
            dst[i] = x;
        }
    } else {
        memcpy(dst, src, n * sizeof *dst);
    }
}

int maskio_rows(raster_var *v, size_t y0, size_t ny, size_t x0, size_t nx,
                int *buf)
{
    if (ny == 0 || nx == 0)
        return RASTER_OK;
    size_t elem = v->mask_elem, row = v->nx * elem;
    int by_row = one_by_one(v, nx);
    /* a row at a time, or the span from the first wanted byte to the last
     * in blocks of rows */
    size_t per = by_row ? 1 : ny;
    size_t cap = by_row ? nx * elem : ((ny - 1) * v->nx + nx) * elem;
    if (!by_row && cap > ((size_t)4 << 20)) {
        per = ((size_t)4 << 20) / row;
        per = per < 1 ? 1 : per;
        cap = ((per - 1) * v->nx + nx) * elem;
    }
    unsigned char *tmp = raster_malloc(cap);
    if (!tmp)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory reading the mask of %s", v->name);
    int rc = RASTER_OK;
    for (size_t y = 0; y < ny && rc == RASTER_OK; y += per) {
        size_t k = ny - y < per ? ny - y : per;
        off_t off = (off_t)v->mask_base + (off_t)(((y0 + y) * v->nx + x0) *
                                                  elem);
        rc = fileio_pread_kept(v->file, tmp, ((k - 1) * v->nx + nx) * elem,
                               off, "the stored mask");
        for (size_t i = 0; i < k && rc == RASTER_OK; i++)
            widen(buf + (y + i) * nx, tmp + i * row, nx, elem);
    }
    raster_free(tmp);
    return rc;
}

/* Announced ranges closer than this (a page) are merged. */
#define PLAN_GAP_BYTES 4096

/* Byte offset of mask cell (y, x) */
static int64_t cell_offset(const raster_var *v, size_t y, size_t x)
{
    return v->mask_base + (int64_t)((y * v->nx + x) * v->mask_elem);
}

int maskio_plan_begin(raster_var *v, maskio_plan *p, size_t y0, size_t y1,
                      size_t x)
{
    *p = (maskio_plan){.v = v};
    if (y1 <= y0)
        return 0;
    size_t probe_rows[3] = {y0, y0 + (y1 - y0) / 2, y1 - 1};
    for (int i = 0; i < 3; i++)
        if (!fileio_page_cached(v->file->fd,
                                 (off_t)cell_offset(v, probe_rows[i], x)))
            return 1;
    return 0;
}

static void plan_flush(maskio_plan *p)
{
    if (p->hi > p->lo)
        (void)posix_fadvise(p->v->file->fd, (off_t)p->lo,
                            (off_t)(p->hi - p->lo), POSIX_FADV_WILLNEED);
    p->lo = p->hi = 0;
}

void maskio_plan_rows(maskio_plan *p, size_t y0, size_t ny, size_t x0,
                      size_t nx)
{
    int64_t len = (int64_t)(nx * p->v->mask_elem);
    for (size_t y = y0; y < y0 + ny; y++) {
        int64_t off = cell_offset(p->v, y, x0);
        if (p->hi > p->lo && off <= p->hi + PLAN_GAP_BYTES) {
            if (off + len > p->hi)
                p->hi = off + len;
            continue;
        }
        plan_flush(p);
        p->lo = off;
        p->hi = off + len;
    }
}

void maskio_plan_end(maskio_plan *p) { plan_flush(p); }
