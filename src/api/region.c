/*
 * region.c - the region path (raster_region_*): regions chosen by id,
 * their runs walked in grid order into pieces of the caller's buffer
 * (packed cells or a bounding box), moved by chunkio.c; the buffers
 * raster_region_alloc hands out.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkio.h"
#include "error.h"
#include "integrity.h"
#include "meta.h"
#include "raster_internal.h"
#include "regions.h"
#include "var.h"
#include "variable.h"

typedef struct cells_walk {
    size_t *ys, *xs, k;
} cells_walk;

typedef struct pieces_walk {
    piece *p;
    size_t np;
    uint64_t cursor;  /* packed: cells so far */
    int packed;
    size_t box0, box1, bw;
} pieces_walk;

/* Buffers from this size on are mapped (raster_mapped(): huge-page advice,
 * the last one freed kept), smaller ones come from malloc;
 * raster_region_free() tells them apart by size. */
#define MAPPED_BYTES ((size_t)2 << 20)

int raster_region_lookup(const raster_var *v, const char *text, int32_t *id)
{
    if (!v || !text || !id)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    char *end;
    long long n = strtoll(text, &end, 10);
    if (end != text && *end == '\0' && n >= INT32_MIN && n <= INT32_MAX) {
        if (regions_pos(v, (int32_t)n) < 0)
            return raster_fail(RASTER_ENOTFOUND, "%s has no region %lld",
                               v->name, n);
        *id = (int32_t)n;
        return RASTER_OK;
    }
    int rc = raster_mask_region_by_name(v->mask, text, id);
    if (rc == RASTER_OK && regions_pos(v, *id) < 0)
        rc = raster_fail(RASTER_ENOTFOUND, "region '%s' (%d) has no cells "
                         "in %s", text, (int)*id, v->name);
    return rc;
}

/* Marks the regions ids[0..nids) in *sel (one flag per region position);
 * with `runs`, loads their runs, and with `placed` (a read that puts
 * cells where their runs say) checks them against the stored mask. */
static int select_regions(const raster_var *v, const int32_t *ids,
                          size_t nids, int runs, int placed,
                          unsigned char **sel)
{
    *sel = NULL;
    if (!v || !ids || nids == 0)
        return raster_fail(RASTER_EINVAL, "no region given");
    unsigned char *s = raster_calloc(v->nregions, 1);
    if (!s)
        return raster_fail(RASTER_ENOMEM, "out of memory selecting regions");
    for (size_t i = 0; i < nids; i++) {
        long pos = regions_pos(v, ids[i]);
        if (pos < 0) {
            raster_free(s);
            return raster_fail(RASTER_ENOTFOUND, "%s has no region %d",
                               v->name, (int)ids[i]);
        }
        s[pos] = 1;
    }
    for (size_t r = 0; runs && r < v->nregions; r++) {
        const region_run *u;
        size_t n;
        int rc = s[r] ? regions_runs((raster_var *)v, r, &u, &n) : RASTER_OK;
        if (rc == RASTER_OK && s[r] && placed)
            rc = regions_check_mask((raster_var *)v, r);
        if (rc) {
            raster_free(s);
            return rc;
        }
    }
    *sel = s;
    return RASTER_OK;
}

static void sel_bbox(const raster_var *v, const unsigned char *sel,
                     size_t box[4])
{
    box[0] = box[1] = SIZE_MAX;
    box[2] = box[3] = 0;
    for (size_t r = 0; r < v->nregions; r++) {
        if (!sel[r])
            continue;
        const size_t *b = v->regions[r].box;
        if (b[0] < box[0]) box[0] = b[0];
        if (b[1] < box[1]) box[1] = b[1];
        if (b[2] > box[2]) box[2] = b[2];
        if (b[3] > box[3]) box[3] = b[3];
    }
}

static size_t sel_cells(const raster_var *v, const unsigned char *sel)
{
    size_t n = 0;
    for (size_t r = 0; r < v->nregions; r++)
        if (sel[r])
            n += v->regions[r].pure_cells + v->regions[r].mixed_cells;
    return n;
}

/* Walks the runs of the selected regions (runs loaded) in grid order,
 * calling visit(run, arg) for each: a merge of the regions' lists. */
static int walk_runs(const raster_var *v, const unsigned char *sel,
                     void (*visit)(const region_run *, void *), void *arg)
{
    size_t k = 0, *head = raster_calloc(v->nregions, sizeof *head);
    if (!head)
        return raster_fail(RASTER_ENOMEM, "out of memory ordering regions");
    size_t *list = raster_calloc(v->nregions, sizeof *list);
    if (!list) {
        raster_free(head);
        return raster_fail(RASTER_ENOMEM, "out of memory ordering regions");
    }
    for (size_t r = 0; r < v->nregions; r++)
        if (sel[r])
            list[k++] = r;
    for (;;) {
        const region_run *best = NULL;
        size_t bi = 0;
        for (size_t i = 0; i < k; i++) {
            const region_info *ri = &v->regions[list[i]];
            if (head[i] == ri->nruns)
                continue;
            const region_run *u = &ri->runs[head[i]];
            if (!best || u->y < best->y ||
                (u->y == best->y && u->x < best->x)) {
                best = u;
                bi = i;
            }
        }
        if (!best)
            break;
        /* one region alone: the rest of its row, with no comparisons */
        const region_info *ri = &v->regions[list[bi]];
        do {
            visit(&ri->runs[head[bi]], arg);
            head[bi]++;
        } while (k == 1 && head[bi] < ri->nruns);
    }
    raster_free(head);
    raster_free(list);
    return RASTER_OK;
}

int raster_region_bbox(const raster_var *v, const int32_t *ids, size_t nids,
                       size_t box[4])
{
    if (!box)
        return raster_fail(RASTER_EINVAL, "NULL box");
    unsigned char *sel;
    int rc = select_regions(v, ids, nids, 1, 1, &sel);
    if (rc)
        return rc;
    sel_bbox(v, sel, box);
    raster_free(sel);
    return RASTER_OK;
}

int raster_region_size(const raster_var *v, const int32_t *ids, size_t nids,
                       int layout_kind, size_t *cells)
{
    if (!cells)
        return raster_fail(RASTER_EINVAL, "NULL output");
    unsigned char *sel;
    int bbox = layout_kind == RASTER_LAYOUT_BBOX;
    int rc = select_regions(v, ids, nids, bbox, bbox, &sel);
    if (rc)
        return rc;
    size_t box[4];
    switch (layout_kind) {
    case RASTER_LAYOUT_PACKED: *cells = sel_cells(v, sel); break;
    case RASTER_LAYOUT_BBOX:
        sel_bbox(v, sel, box);
        *cells = (box[2] - box[0]) * (box[3] - box[1]);
        break;
    case RASTER_LAYOUT_FULL: *cells = v->ny * v->nx; break;
    default:
        rc = raster_fail(RASTER_EINVAL, "unknown layout %d", layout_kind);
    }
    raster_free(sel);
    return rc;
}

static void visit_cells(const region_run *u, void *arg)
{
    cells_walk *w = arg;
    for (uint32_t j = 0; j < u->len; j++, w->k++) {
        w->ys[w->k] = u->y;
        w->xs[w->k] = u->x + j;
    }
}

int raster_region_cells(const raster_var *v, const int32_t *ids, size_t nids,
                        size_t *ys, size_t *xs)
{
    if (!ys || !xs)
        return raster_fail(RASTER_EINVAL, "NULL output");
    unsigned char *sel;
    int rc = select_regions(v, ids, nids, 1, 1, &sel);
    if (rc)
        return rc;
    cells_walk w = {ys, xs, 0};
    rc = walk_runs(v, sel, visit_cells, &w);
    raster_free(sel);
    return rc;
}

/* Read-phase sums (raster_read_phases_take), under phases_lock. */
static pthread_mutex_t phases_lock = PTHREAD_MUTEX_INITIALIZER;
static raster_read_phases phases_sum;

void raster_read_phases_take(int on, raster_read_phases *out)
{
    pthread_mutex_lock(&phases_lock);
    if (out)
        *out = phases_sum;
    memset(&phases_sum, 0, sizeof phases_sum);
    atomic_store(&chunkio_timing, on != 0);
    pthread_mutex_unlock(&phases_lock);
}

/* Adds one read's phase times: t[0] start, t[1] checked, t[2] tables
 * loaded, t[3] pieces made, t[4] fill values written (bbox and full
 * layouts), t[5] data moved, t[6] checked again; plan_end from
 * chunkio_xfer (0 when it returned before moving anything). */
static void phases_add(const double t[7], double plan_end)
{
    if (plan_end < t[4] || plan_end > t[5])
        plan_end = t[5];
    pthread_mutex_lock(&phases_lock);
    phases_sum.check += (t[1] - t[0]) + (t[6] - t[5]);
    phases_sum.tables += t[2] - t[1];
    phases_sum.plan += (t[3] - t[2]) + (plan_end - t[4]);
    phases_sum.move += (t[4] - t[3]) + (t[5] - plan_end);
    phases_sum.reads++;
    pthread_mutex_unlock(&phases_lock);
}

static void visit_pieces(const region_run *u, void *arg)
{
    pieces_walk *w = arg;
    uint64_t uoff = w->packed ? w->cursor
                              : (u->y - w->box0) * w->bw + (u->x - w->box1);
    w->p[w->np++] = (piece){.soff = u->off, .uoff = uoff, .store = u->store,
                            .len = u->len};
    w->cursor += u->len;
}

int raster_region_read(raster_var *v, const int32_t *ids, size_t nids,
                       const size_t *ostart, const size_t *ocount,
                       int layout_kind, void *out)
{
    if (!v || !out || (var_nouter(v) > 0 && (!ostart || !ocount)))
        return raster_fail(RASTER_EINVAL, "NULL argument");
    if (layout_kind != RASTER_LAYOUT_PACKED &&
        layout_kind != RASTER_LAYOUT_BBOX && layout_kind != RASTER_LAYOUT_FULL)
        return raster_fail(RASTER_EINVAL, "unknown layout %d", layout_kind);
    /* the outer box, checked as a hyperslab over the whole grid */
    size_t start[RASTER_MAX_DIMS] = {0}, count[RASTER_MAX_DIMS];
    int no = var_nouter(v);
    for (int i = 0; i < no; i++) {
        start[i] = ostart[i];
        count[i] = ocount[i];
    }
    count[no] = v->ny;
    count[no + 1] = v->nx;
    /* read-phase timing (raster_read_phases_take): t[] as phases_add */
    int timing = atomic_load_explicit(&chunkio_timing, memory_order_relaxed);
    double t[7] = {0};
    if (timing)
        t[0] = chunkio_clock();
    int rc = var_check_read(v, start, count, NULL);
    if (rc == RASTER_OK) /* rewritten under the handle (integrity.h) */
        rc = file_unchanged(v->file);
    if (rc)
        return rc;
    if (timing)
        t[1] = chunkio_clock();
    unsigned char *sel;
    /* one region packed is its runs in order, wherever they lie; every
     * other read places cells by their runs */
    rc = select_regions(v, ids, nids, 1,
                        layout_kind != RASTER_LAYOUT_PACKED || nids > 1, &sel);
    if (rc == RASTER_OK && !v->materialized &&
        (rc = meta_materialize(v)) != RASTER_OK)
        raster_free(sel);
    if (rc)
        return rc;
    if (timing)
        t[2] = chunkio_clock();
    size_t box[4] = {0, 0, v->ny, v->nx}, plane = v->ny * v->nx;
    if (layout_kind == RASTER_LAYOUT_BBOX) {
        sel_bbox(v, sel, box);
        plane = (box[2] - box[0]) * (box[3] - box[1]);
    } else if (layout_kind == RASTER_LAYOUT_PACKED) {
        plane = sel_cells(v, sel);
    }
    size_t planes = 1;
    for (int i = 0; i < no; i++)
        planes *= ocount[i];

    size_t np = 0;
    for (size_t r = 0; r < v->nregions; r++)
        np += sel[r] ? v->regions[r].nruns : 0;
    pieces_walk w = {.p = raster_scratch(np ? np : 1, sizeof *w.p),
                     .packed = layout_kind == RASTER_LAYOUT_PACKED,
                     .box0 = box[0], .box1 = box[1], .bw = box[3] - box[1]};
    if (!w.p) {
        raster_free(sel);
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    }
    rc = walk_runs(v, sel, visit_pieces, &w);
    raster_free(sel);
    if (timing) {
        t[3] = chunkio_clock();
        chunkio_plan_end = 0;
    }
    if (rc == RASTER_OK && layout_kind != RASTER_LAYOUT_PACKED)
        for (size_t i = 0; i < planes * plane; i++) /* fill outside them */
            memcpy((unsigned char *)out + i * v->elem, v->fill, v->elem);
    if (timing)
        t[4] = chunkio_clock();
    if (rc == RASTER_OK)
        rc = chunkio_xfer(v, w.p, w.np, start, count, NULL, out, plane, 0);
    raster_scratch_free(w.p);
    if (timing)
        t[5] = chunkio_clock();
    if (rc == RASTER_OK) /* and while it was read */
        rc = file_unchanged(v->file);
    if (timing && rc == RASTER_OK) {
        t[6] = chunkio_clock();
        phases_add(t, chunkio_plan_end);
    }
    return rc;
}

int raster_region_alloc(const raster_var *v, const int32_t *ids, size_t nids,
                        const size_t *ocount, int layout_kind, void **out,
                        size_t *bytes)
{
    if (!v || !out || !bytes || (var_nouter(v) > 0 && !ocount))
        return raster_fail(RASTER_EINVAL, "NULL argument");
    *out = NULL;
    *bytes = 0;
    size_t n;
    int rc = raster_region_size(v, ids, nids, layout_kind, &n);
    if (rc)
        return rc;
    if (raster_mul_overflows(n, v->elem, &n))
        return raster_fail(RASTER_EOVERFLOW, "%s: region buffer too large",
                           v->name);
    for (int i = 0; i < var_nouter(v); i++)
        if (raster_mul_overflows(n, ocount[i], &n))
            return raster_fail(RASTER_EOVERFLOW, "%s: region buffer too large",
                               v->name);
    void *p = n >= MAPPED_BYTES ? raster_mapped(n) : raster_calloc(1, n);
    if (!p)
        return raster_fail(RASTER_ENOMEM, "%s: no memory for %zu bytes",
                           v->name, n);
    *out = p;
    *bytes = n;
    return RASTER_OK;
}

void raster_region_free(void *buf, size_t bytes)
{
    if (!buf)
        return;
    if (bytes >= MAPPED_BYTES)
        raster_unmapped(buf, bytes);
    else
        raster_free(buf);
}

void raster_release_memory(void)
{
    raster_mapped_release();
    raster_scratch_release();
}
