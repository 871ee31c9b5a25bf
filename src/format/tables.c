/*
 * tables.c - a variable's index tables, written from its layout or checked
 * against it (docs/FORMAT.md).
 *
 * The tables steer where a read finds its cells: `chunks` and `runs` (per
 * region in format 2; shared by the regions in format 3 and 4, each owning
 * a row range its summary names), `mixed_chunks` and `shares`, and in
 * format 3 and 4 their checksums (integrity.h). The writer writes them
 * (meta_materialize); an open of a writable file, and the full check of a
 * read-only one (meta_ensure_layout), compares every one with the layout
 * rebuilt from the stored mask.
 */
#include "tables.h"

#include <string.h>

#include "alloc.h"
#include "error.h"
#include "integrity.h"

int tables_ncfail(int st, const char *what, const char *name)
{
    return raster_fail_nc(RASTER_ENETCDF, st, "%s %s: %s", what, name,
                          nc_strerror(st));
}

/* 1, with rc set and the failure recorded, when netCDF status st is an
 * error: the long define sequences check every step with
 * `if (tables_nc_failed(call, what, v->name, &rc)) goto fail;`. */
int tables_nc_failed(int st, const char *what, const char *name, int *rc)
{
    if (st == NC_NOERR)
        return 0;
    *rc = tables_ncfail(st, what, name);
    return 1;
}

/* The variable's summary of its regions (regions.h) from the layout:
 * rows[] gets REGIONS_SUMMARY_FIELDS per region, its rows of the shared
 * tables (format 3) back to back in id order. Writers place the regions'
 * table rows by it, and the checks compare with it. */
void tables_summary_rows(const raster_var *v, long long *rows)
{
    const layout *lay = v->lay;
    size_t chunk0 = 0, run0 = 0;
    for (size_t r = 0; r < lay->nregions; r++) {
        size_t nlist;
        const size_t *list;
        raster_mesh_region_chunks(v->mesh, lay->ids[r], &list, &nlist);
        long long row[REGIONS_SUMMARY_FIELDS] = {
            lay->ids[r],
            (long long)lay->pure_cells[r],
            (long long)lay->mixed_cells[r],
            /* format 5: its pure store's cells (whole tiles) */
            (long long)(var_tiled(v) ? lay->pure_store[r] : lay->mixed_off[r]),
            (long long)chunk0,
            (long long)nlist,
            (long long)run0,
            (long long)v->regions[r].nruns};
        memcpy(rows + r * REGIONS_SUMMARY_FIELDS, row, sizeof row);
        chunk0 += nlist;
        run0 += v->regions[r].nruns;
    }
}

/* Row `field` of region r in summary rows[]. */
size_t tables_summary_at(const long long *rows, size_t r,
                         enum regions_summary_field field)
{
    return (size_t)rows[r * REGIONS_SUMMARY_FIELDS + (size_t)field];
}

/* Format 3: writes (write=1) or checks against the file (write=0) the
 * summary rows[] (tables_summary_rows). A file written before the summary
 * existed has none: nothing to check. */
int tables_summary_io(raster_var *v, const long long *rows, int write)
{
    size_t n = v->lay->nregions * REGIONS_SUMMARY_FIELDS;
    int rc = RASTER_OK;
    if (write) {
        if (tables_nc_failed(nc_put_att_longlong(v->grpid, NC_GLOBAL,
                                                 REGIONS_SUMMARY, NC_INT64, n,
                                                 rows),
                             "describing regions of", v->name, &rc))
            goto fail;
        if (tables_nc_failed(nc_put_att_text(v->grpid, NC_GLOBAL,
                                             REGIONS_SUMMARY "_columns",
                                             strlen(REGIONS_SUMMARY_COLUMNS),
                                             REGIONS_SUMMARY_COLUMNS),
                             "describing regions of", v->name, &rc))
            goto fail;
        return RASTER_OK;
    }
    nc_type type;
    size_t len;
    if (nc_inq_att(v->grpid, NC_GLOBAL, REGIONS_SUMMARY, &type, &len) !=
        NC_NOERR) { /* format 4: the only description of its regions */
        if (v->format >= 4)
            return raster_fail(RASTER_EFORMAT, "%s: no attribute %s", v->name,
                               REGIONS_SUMMARY);
        return RASTER_OK;
    }
    long long *got = raster_reallocarray(NULL, n, sizeof *got);
    if (!got)
        return raster_fail(RASTER_ENOMEM, "out of memory checking %s",
                           v->name);
    int same = type == NC_INT64 && len == n &&
               nc_get_att_longlong(v->grpid, NC_GLOBAL, REGIONS_SUMMARY,
                                   got) == NC_NOERR &&
               memcmp(got, rows, n * sizeof *got) == 0;
    raster_free(got);
    if (!same)
        return raster_fail(RASTER_EFORMAT,
                           "%s: attribute %s does not match the stored mask",
                           v->name, REGIONS_SUMMARY);
    return RASTER_OK;
fail:
    return rc;
}

/* The rows of region r's index table, or of the mixed tables. */
static void region_rows(const raster_var *v, size_t r, long long *rows)
{
    const raster_mesh *m = v->mesh;
    const layout *lay = v->lay;
    size_t nlist;
    const size_t *list;
    raster_mesh_region_chunks(m, lay->ids[r], &list, &nlist);
    for (size_t i = 0; i < nlist; i++) {
        const mesh_chunk *c = &m->chunks[list[i]];
        long long *row = rows + i * CHUNK_FIELDS;
        size_t off = lay->chunk_off[list[i]], cells = c->h * c->w;
        if (c->mixed) {
            for (size_t k = c->share0; k < c->share0 + c->nshares; k++)
                if (m->shares[k].id == lay->ids[r]) {
                    off = lay->share_off[k];
                    cells = m->shares[k].cells;
                }
        }
        long long vals[CHUNK_FIELDS] = {(long long)list[i], (long long)c->y0,
                                        (long long)c->x0,   (long long)c->h,
                                        (long long)c->w,    c->mixed,
                                        (long long)off,     (long long)cells};
        memcpy(row, vals, sizeof vals);
    }
}

static void mixed_rows(const raster_var *v, long long *chunks,
                       long long *shares)
{
    const raster_mesh *m = v->mesh;
    size_t nc = 0, ns = 0;
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        if (!c->mixed)
            continue;
        long long vals[MIXED_FIELDS] = {(long long)ci, (long long)c->y0,
                                        (long long)c->x0, (long long)c->h,
                                        (long long)c->w};
        memcpy(chunks + nc++ * MIXED_FIELDS, vals, sizeof vals);
        for (size_t k = c->share0; k < c->share0 + c->nshares; k++) {
            long long sv[SHARE_FIELDS] = {(long long)ci, m->shares[k].id,
                                          (long long)m->shares[k].cells,
                                          (long long)v->lay->share_off[k]};
            memcpy(shares + ns++ * SHARE_FIELDS, sv, sizeof sv);
        }
    }
}

/* Where one index table's rows lie: table `name` of group g, whose
 * total rows are `total`; the rows in question start at `row0`. Format 2
 * keeps a table per region (row0 0, total its rows), format 3 one shared
 * by all regions. */
typedef struct table_ref {
    int g;
    const char *name;
    size_t row0, total;
} table_ref;

/* Writes (write=1) or checks against the file (write=0) rows
 * [t.row0, t.row0 + n) of an index table, whose expected content is
 * rows[0 .. n*fields). */
static int table_io(raster_var *v, table_ref t, size_t n, size_t fields,
                    const long long *rows, int write)
{
    int varid, st, ndims, dimids[2];
    nc_type type;
    const char *name = t.name;
    if ((st = nc_inq_varid(t.g, name, &varid)) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: index table '%s' missing",
                           v->name, name);
    size_t start[2] = {t.row0, 0}, count[2] = {n, fields};
    if (write) {
        st = n ? nc_put_vara_longlong(t.g, varid, start, count, rows)
               : NC_NOERR;
        return st == NC_NOERR ? RASTER_OK
                              : tables_ncfail(st, "writing index of", v->name);
    }
    size_t len[2] = {0, 0};
    if ((st = nc_inq_var(t.g, varid, NULL, &type, &ndims, dimids, NULL)) !=
            NC_NOERR ||
        type != NC_INT64 || ndims != 2 ||
        nc_inq_dimlen(t.g, dimids[0], &len[0]) != NC_NOERR ||
        nc_inq_dimlen(t.g, dimids[1], &len[1]) != NC_NOERR ||
        len[0] != t.total || len[1] != fields || t.row0 + n > t.total)
        return raster_fail(RASTER_EFORMAT,
                           "%s: index table '%s' has the "
                           "wrong type or shape",
                           v->name, name);
    long long *got = raster_reallocarray(NULL, n > 0 ? n * fields : 1,
                                         sizeof *got);
    if (!got)
        return raster_fail(RASTER_ENOMEM, "out of memory checking %s",
                           v->name);
    st = n ? nc_get_vara_longlong(t.g, varid, start, count, got) : NC_NOERR;
    int same = st == NC_NOERR &&
               memcmp(got, rows, n * fields * sizeof *got) == 0;
    raster_free(got);
    if (st != NC_NOERR)
        return tables_ncfail(st, "reading index of", v->name);
    if (!same)
        return raster_fail(
            RASTER_EFORMAT,
            "%s: index table '%s' does not match the stored mask", v->name,
            name);
    return RASTER_OK;
}

/* Format 3: checks that region r's group claims rows [first, first+count)
 * of a shared table in attribute `att`. */
static int rows_att_io(raster_var *v, size_t r, const char *att, size_t first,
                       size_t count, int write)
{
    int g = v->store_grp[r];
    if (write || v->format >= 4) /* written at definition; format 4: no
                                    region group, the summary says it */
        return RASTER_OK;
    nc_type type;
    size_t len;
    unsigned long long got[2];
    if (nc_inq_att(g, NC_GLOBAL, att, &type, &len) != NC_NOERR ||
        type != NC_UINT64 || len != 2 ||
        nc_get_att_ulonglong(g, NC_GLOBAL, att, got) != NC_NOERR ||
        got[0] != first || got[1] != count)
        return raster_fail(RASTER_EFORMAT,
                           "%s: region %d's %s do not match the stored mask",
                           v->name, (int)v->regions[r].id, att);
    return RASTER_OK;
}

/* Writes or verifies the runs table of region r (format 2). */
static int runs_io(raster_var *v, size_t r, table_ref t, int write)
{
    const region_run *runs;
    size_t n;
    int rc = regions_runs(v, r, &runs, &n);
    if (rc)
        return rc;
    long long *rows = raster_reallocarray(NULL, n * REGIONS_RUN_FIELDS,
                                          sizeof *rows);
    if (!rows)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    regions_table_rows(v, r, rows);
    rc = table_io(v, t, n, REGIONS_RUN_FIELDS, rows, write);
    raster_free(rows);
    return rc;
}

/* Rows of the shared tables (format 3 and 4) gathered per netCDF call:
 * one call per region made writing or checking 100,000 regions' tables
 * take seconds. */
#define TABLE_BATCH_BYTES ((size_t)4 << 20)

/* A batch of consecutive rows of one shared table: rows [row0, row0 + n)
 * held in buf (room for cap rows). */
typedef struct batch {
    table_ref t;
    size_t fields, n, cap;
    long long *buf;
} batch;

static int batch_flush(raster_var *v, batch *b, int write)
{
    int rc = b->n ? table_io(v, b->t, b->n, b->fields, b->buf, write)
                  : RASTER_OK;
    b->t.row0 += b->n;
    b->n = 0;
    return rc;
}

/* Room for `more` rows at the end of b: flushed first when full. */
static int batch_room(raster_var *v, batch *b, size_t more, int write)
{
    if (b->n + more > b->cap) {
        int rc = batch_flush(v, b, write);
        if (rc)
            return rc;
    }
    if (more > b->cap) { /* one region's rows alone */
        size_t cap = b->cap;
        if (raster_grow(&b->buf, &cap, more, b->fields * sizeof *b->buf) !=
            RASTER_OK)
            return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                               v->name);
        b->cap = cap;
    }
    return RASTER_OK;
}

/* Format 3 and 4: writes or verifies the regions' rows of the shared
 * `chunks` and `runs` tables, in id order, a batch per netCDF call. */
static int shared_tables_io(raster_var *v, const long long *sum,
                            size_t nchunk_rows, size_t nrun_rows, int write)
{
    size_t per = TABLE_BATCH_BYTES / sizeof(long long);
    batch c = {{v->grpid, "chunks", 0, nchunk_rows},
               CHUNK_FIELDS,
               0,
               per / CHUNK_FIELDS,
               NULL};
    batch u = {{v->grpid, "runs", 0, nrun_rows},
               REGIONS_RUN_FIELDS,
               0,
               per / REGIONS_RUN_FIELDS,
               NULL};
    c.buf = raster_reallocarray(NULL, c.cap, CHUNK_FIELDS * sizeof *c.buf);
    u.buf = raster_reallocarray(NULL, u.cap,
                                REGIONS_RUN_FIELDS * sizeof *u.buf);
    int rc = !c.buf || !u.buf
                 ? raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                               v->name)
                 : RASTER_OK;
    for (size_t r = 0; r < v->lay->nregions && rc == RASTER_OK; r++) {
        size_t n = tables_summary_at(sum, r, SUMMARY_CHUNK_COUNT);
        const region_run *runs;
        size_t nruns;
        rc = batch_room(v, &c, n, write);
        if (rc == RASTER_OK) {
            region_rows(v, r, c.buf + c.n * CHUNK_FIELDS);
            rc = rows_att_io(v, r, ATT_CHUNK_ROWS, c.t.row0 + c.n, n, write);
            c.n += n;
        }
        if (rc == RASTER_OK)
            rc = regions_runs(v, r, &runs, &nruns);
        if (rc == RASTER_OK)
            rc = batch_room(v, &u, nruns, write);
        if (rc == RASTER_OK) {
            regions_table_rows(v, r, u.buf + u.n * REGIONS_RUN_FIELDS);
            rc = rows_att_io(v, r, ATT_RUN_ROWS, u.t.row0 + u.n, nruns, write);
            u.n += nruns;
        }
    }
    if (rc == RASTER_OK)
        rc = batch_flush(v, &c, write);
    if (rc == RASTER_OK)
        rc = batch_flush(v, &u, write);
    raster_free(c.buf);
    raster_free(u.buf);
    return rc;
}

/* Format 3: writes (write=1, at definition) or checks against the file
 * (write=0, the full check; nothing to check in a file written before
 * them) the checksums of the tables (integrity.h, docs/FORMAT.md): the
 * summary's, each region's rows of `runs` and of `chunks`, `mixed_chunks`
 * and `shares` whole, and each mixed tile of the mask. */
int tables_sums_io(raster_var *v, const long long *summary, int write)
{
    const raster_mesh *m = v->mesh;
    size_t nr = v->lay->nregions, nmixed = 0, nshares = 0, maxrows = 1;
    nc_type type;
    size_t len;
    if (!write && nc_inq_att(v->grpid, NC_GLOBAL, SUMS_GROUP_ATT, &type,
                             &len) != NC_NOERR)
        return RASTER_OK;
    for (size_t c = 0; c < m->nchunks; c++)
        if (m->chunks[c].mixed) {
            nmixed++;
            nshares += m->chunks[c].nshares;
        }
    for (size_t r = 0; r < nr; r++)
        if (v->regions[r].nruns * REGIONS_RUN_FIELDS > maxrows)
            maxrows = v->regions[r].nruns * REGIONS_RUN_FIELDS;
    if (m->nchunks * CHUNK_FIELDS > maxrows)
        maxrows = m->nchunks * CHUNK_FIELDS;
    if (nshares * SHARE_FIELDS > maxrows)
        maxrows = nshares * SHARE_FIELDS;
    /* want[]: the summary's, runs and chunks per region, mixed_chunks,
     * shares, the mask's mixed tiles */
    size_t nwant = 1 + 2 * nr + 2 + nmixed;
    uint32_t *want = raster_reallocarray(NULL, nwant, sizeof *want);
    uint32_t *got = raster_reallocarray(NULL, nwant, sizeof *got);
    long long *rows = raster_reallocarray(NULL, maxrows, sizeof *rows);
    long long *shares = raster_reallocarray(NULL, nshares * SHARE_FIELDS + 1,
                                            sizeof *shares);
    const int32_t *ids = raster_mask_values(v->mask);
    int rc = RASTER_OK;
    if (!want || !got || !rows || !shares || !ids) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory checksumming %s",
                         v->name);
        goto done;
    }
    uint32_t *w_runs = want + 1, *w_chunks = want + 1 + nr;
    uint32_t *w_mixed = want + 1 + 2 * nr, *w_tiles = w_mixed + 2;
    want[0] = sums_i64(0, summary, nr * REGIONS_SUMMARY_FIELDS);
    for (size_t r = 0; r < nr && rc == RASTER_OK; r++) {
        const region_run *runs;
        size_t n, nlist;
        const size_t *list;
        if ((rc = regions_runs(v, r, &runs, &n)) != RASTER_OK)
            break;
        regions_table_rows(v, r, rows);
        w_runs[r] = sums_region_rows(v->lay->ids[r], rows,
                                     n * REGIONS_RUN_FIELDS);
        raster_mesh_region_chunks(m, v->lay->ids[r], &list, &nlist);
        region_rows(v, r, rows);
        w_chunks[r] = sums_region_rows(v->lay->ids[r], rows,
                                       nlist * CHUNK_FIELDS);
    }
    if (rc)
        goto done;
    mixed_rows(v, rows, shares);
    w_mixed[0] = sums_i64(0, rows, nmixed * MIXED_FIELDS);
    w_mixed[1] = sums_i64(0, shares, nshares * SHARE_FIELDS);
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    size_t ntx = (v->nx + tw - 1) / tw, k = 0;
    for (size_t c = 0; c < m->nchunks; c++) {
        const mesh_chunk *ch = &m->chunks[c];
        if (ch->mixed)
            w_tiles[k++] = sums_tile(ch->y0 / th * ntx + ch->x0 / tw,
                                     (const int *)ids + ch->y0 * v->nx +
                                         ch->x0,
                                     v->nx, ch->h, ch->w);
    }
    /* (table, its checksums) */
    struct {
        const char *table;
        const uint32_t *w;
        size_t n;
    } t[] = {{"runs", w_runs, nr},
             {"chunks", w_chunks, nr},
             {"mixed_chunks", w_mixed, nmixed ? 1 : 0},
             {"shares", w_mixed + 1, nmixed ? 1 : 0},
             {"mask", w_tiles, nmixed}};
    if (write) {
        int st = nc_put_att_uint(v->grpid, NC_GLOBAL, SUMS_GROUP_ATT, NC_UINT,
                                 1, want);
        for (size_t i = 0; i < sizeof t / sizeof *t && st == NC_NOERR; i++) {
            int varid;
            if (t[i].n > 0 && /* no mixed tables without mixed tiles */
                nc_inq_varid(v->grpid, t[i].table, &varid) == NC_NOERR)
                st = nc_put_att_uint(v->grpid, varid, SUMS_TABLE_ATT, NC_UINT,
                                     t[i].n, t[i].w);
        }
        if (st != NC_NOERR)
            rc = tables_ncfail(st, "checksumming", v->name);
        goto done;
    }
    int same = type == NC_UINT && len == 1 &&
               nc_get_att_uint(v->grpid, NC_GLOBAL, SUMS_GROUP_ATT, got) ==
                   NC_NOERR &&
               got[0] == want[0];
    const char *bad = same ? NULL : SUMS_GROUP_ATT;
    for (size_t i = 0; i < sizeof t / sizeof *t && !bad; i++) {
        if (t[i].n == 0)
            continue;
        if ((rc = sums_table_att(v, t[i].table, t[i].n, got)) != RASTER_OK)
            goto done;
        if (memcmp(got, t[i].w, t[i].n * sizeof *got) != 0)
            bad = t[i].table;
    }
    if (bad)
        rc = raster_fail(RASTER_EFORMAT,
                         "%s: checksums of '%s' do not match "
                         "the stored mask",
                         v->name, bad);
done:
    raster_free(want);
    raster_free(got);
    raster_free(rows);
    raster_free(shares);
    return rc;
}

/* Writes or verifies every index table of v. */
int tables_io(raster_var *v, int write)
{
    const raster_mesh *m = v->mesh;
    size_t maxrows = m->nchunks > m->nshares ? m->nchunks : m->nshares;
    long long *rows = raster_reallocarray(NULL, maxrows * CHUNK_FIELDS,
                                          sizeof *rows);
    long long *shares = raster_reallocarray(NULL, m->nshares * SHARE_FIELDS,
                                            sizeof *shares);
    size_t nr = v->lay->nregions;
    long long *sum = raster_reallocarray(
        NULL, (nr ? nr : 1) * REGIONS_SUMMARY_FIELDS, sizeof *sum);
    int rc = RASTER_OK, shared = v->format >= 3;
    if (!rows || !shares || !sum) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s", v->name);
        goto done;
    }
    /* format 3: the regions' rows back to back in id order */
    tables_summary_rows(v, sum);
    size_t nchunk_rows = 0, nrun_rows = 0; /* the shared tables' lengths */
    if (nr > 0) {
        nchunk_rows = tables_summary_at(sum, nr - 1, SUMMARY_CHUNK_FIRST) +
                      tables_summary_at(sum, nr - 1, SUMMARY_CHUNK_COUNT);
        nrun_rows = tables_summary_at(sum, nr - 1, SUMMARY_RUN_FIRST) +
                    tables_summary_at(sum, nr - 1, SUMMARY_RUN_COUNT);
    }
    if (shared)
        rc = shared_tables_io(v, sum, nchunk_rows, nrun_rows, write);
    /* formats 1 and 2: each region's own tables in its group */
    for (size_t r = 0; r < nr && rc == RASTER_OK && !shared; r++) {
        size_t n = tables_summary_at(sum, r, SUMMARY_CHUNK_COUNT);
        region_rows(v, r, rows);
        table_ref ct = {v->store_grp[r], "chunks", 0, n};
        table_ref rt = {v->store_grp[r], "runs", 0, v->regions[r].nruns};
        rc = table_io(v, ct, n, CHUNK_FIELDS, rows, write);
        if (rc == RASTER_OK && v->format >= 2)
            rc = runs_io(v, r, rt, write);
    }
    size_t nmixed = 0, nms = 0;
    for (size_t c = 0; c < m->nchunks; c++)
        if (m->chunks[c].mixed) {
            nmixed++;
            nms += m->chunks[c].nshares;
        }
    if (rc == RASTER_OK && nmixed > 0) {
        int g = shared ? v->grpid : v->store_grp[v->lay->nregions];
        mixed_rows(v, rows, shares);
        rc = table_io(
            v, (table_ref){g, shared ? "mixed_chunks" : "chunks", 0, nmixed},
            nmixed, MIXED_FIELDS, rows, write);
        if (rc == RASTER_OK)
            rc = table_io(v, (table_ref){g, "shares", 0, nms}, nms,
                          SHARE_FIELDS, shares, write);
    }
    if (rc == RASTER_OK && shared && !write)
        rc = tables_summary_io(v, sum, 0);
    if (rc == RASTER_OK && shared && !write)
        rc = tables_sums_io(v, sum, 0);
done:
    raster_free(rows);
    raster_free(shares);
    raster_free(sum);
    return rc;
}
