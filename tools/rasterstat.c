/*
 * rasterstat - per-region statistics of a region mesh: how many chunks each
 * region needs and how much less it reads than a chunked netCDF read of its
 * bounding box (the data reduction rate, RASTER paper Eq. 1); optionally the
 * mesh as a picture (--plot) and each region's predicted I/O speedup from
 * this machine's read bandwidths (--measure-bw, --bw; paper Eq. 2).
 */
#include <getopt.h>
#include <hdf5.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bandwidth.h"
#include "cli.h"
#include "copy.h"
#include "plot.h"
#include "raster.h"
#include "stat.h"
#include "suggest.h"

static void usage(FILE *f)
{
    fputs(
"usage: rasterstat --mask FILE:VAR [--names FILE] --chunk H,W [options]\n"
"       rasterstat RASTERFILE [--var V] [options]\n"
"       rasterstat RASTERFILE --stats [--var V] [--region R] [--json]\n"
"       rasterstat --mask FILE:VAR --suggest-tile [--chunk H,W] [--region R]\n"
"                  [--overhead BYTES] [--json]   (or RASTERFILE --suggest-tile)\n"
"\n"
"First form: cuts the 2-D region mask VAR of netCDF file FILE into H x W\n"
"tiles, builds the RASTER chunks (same-region pure tiles of a tile-row\n"
"merged, mixed tiles alone) and prints per-region statistics.\n"
"Second form: the same for each raster variable of a raster file (or only\n"
"V), plus bytes: the region's bytes (= what raster reads), the bytes of its\n"
"pure chunks and whole mixed chunks (the paper's accounting), and the bytes a\n"
"chunked netCDF read of its tile-aligned bounding box reads, over all\n"
"records of the outer dimensions; and the variable's filters (deflate level,\n"
"shuffle, fletcher32, quantization, other HDF5 filters: every store has\n"
"them) with its stores' bytes on disk against their raw bytes (cells x\n"
"records x value bytes) and the ratio (JSON: compression, stored_bytes,\n"
"raw_bytes, stored_ratio).\n"
"\n"
"  --mask FILE:VAR   mask variable (integer, or float with integral values;\n"
"                    _FillValue, missing_value and NaN cells get id 0);\n"
"                    FILE is split at the last ':'\n"
CLI_NAMES_HELP
"  --chunk H,W       tile height and width in cells; with more than two values\n"
"                    (a variable's full chunk shape) the last two are used\n"
"  --region R        only region R: an id, or a name or abbreviation (the\n"
"                    mask's CF flag_meanings, or --names; case-insensitive,\n"
"                    '_' or ' '); repeatable\n"
"  --var V           second form: only raster variable V\n"
"  --stats           a raster file's data statistics instead: per variable\n"
"                    (or V) and region (or R), the records whose statistics\n"
"                    the file keeps (fresh; stale: a partial write not yet\n"
"                    recomputed) and, over all records, the count of valid\n"
"                    values (not fill, not NaN), their mean, min, max,\n"
"                    population std and, with the weights kept, weighted\n"
"                    mean (from the kept statistics where fresh, else from\n"
"                    the data)\n"
"  --chunks          also list the chunks (with --region, only theirs)\n"
"  --json            print one JSON object instead of tables\n"
"  --plot FILE.png   draw the mesh as a PNG: regions in colour (land/0\n"
"                    grey), thin dark lines along chunk boundaries, mixed\n"
"                    chunks hatched, region names or ids where they fit,\n"
"                    a legend (id, name, share of cells). Row 0 of the mask\n"
"                    is at the BOTTOM (latitude up). Small grids get a few\n"
"                    px per cell, large ones one px per k x k cells (the\n"
"                    most frequent id). With several raster variables, one\n"
"                    picture each, named FILE_VAR.png\n"
"  --measure-bw      measure this machine's cold sequential (4 MiB reads)\n"
"                    and random (one tile's bytes, at least 4 KiB, at\n"
"                    random aligned offsets) read bandwidth on a scratch\n"
"                    file, and print beside each region's DRR the paper's\n"
"                    Eq. 2 predicted I/O speedup = DRR x seq/rand. The file:\n"
"                    RASTER_BW_MB MiB (default 256) in RASTER_BW_DIR, else\n"
"                    $TMPDIR, else /tmp, removed after; a few seconds\n"
"  --bw SEQ,RAND     the same prediction from given bandwidths (MB/s)\n"
"  --suggest-tile    compare candidate tile shapes for the mask (squares,\n"
"                    1:2 and 2:1 rectangles from 2 to 256 cells a side, tiles\n"
"                    dividing the grid, the current --chunk or the file's\n"
"                    tile; clipped to the grid, at most 65536 tiles each)\n"
"                    and print them best first, the recommendation marked\n"
"                    '*', the current tile '='; then why, in one sentence\n"
"                    for the choice and one per region (the 20 largest).\n"
"                    --region scores only those regions. With --chunk,\n"
"                    outer sizes before H,W (e.g. 1,60,50,50) count in the\n"
"                    chunk's bytes; values are 4\n"
"                    bytes in the mask form, the variable's in a file.\n"
"                    Not with --plot, --chunks, --measure-bw, --bw\n"
"  --overhead BYTES  --suggest-tile: what one chunk request costs, in bytes\n"
"                    of transfer (latency x bandwidth; K, M, G suffixes);\n"
"                    default 64K (NVMe-class; a parallel file system or a\n"
"                    disk: 1M or more)\n"
"  --help            this text\n"
"  --version         print raster's version\n"
"\n"
"Columns: cells of the region (per record); its pure chunks and the mixed\n"
"chunks it has\n"
"cells in; its exact bounding box [y0,y1) x [x0,x1); bbox_tile_cells, the\n"
"cells a tile-chunked read of that box touches; read_cells, the cells of its\n"
"pure chunks plus the mixed chunks it touches; DRR = bbox_tile_cells /\n"
"read_cells; pred_x (with --measure-bw or --bw) = DRR x seq/rand. MB is\n"
"10^6 bytes.\n"
"\n"
"--suggest-tile score. raster itself reads a region as two contiguous runs\n"
"per record (its pure store and its share of the mixed store), so its own\n"
"bytes do not depend on the tile; a chunk costs it one index row and\n"
"bookkeeping. The tile matters to readers that go chunk by chunk: netCDF\n"
"(the same data chunked the same way; one chunk lookup and one request per\n"
"chunk) and the paper's chunk-granular read (pure chunks + whole mixed\n"
"chunks). Per region r, charging every chunk read the overhead O:\n"
"  effDRR_r = (bbox_tile_bytes + netcdf chunks x O) /\n"
"             (read_bytes + chunks read x O)\n"
"i.e. the data reduction rate with request costs on both sides; small tiles\n"
"raise DRR but multiply chunks, large tiles make more cells mixed.\n"
"score = (cell-weighted geometric mean of effDRR_r) x min(1, chunk bytes /\n"
"O): tiles whose chunk is smaller than O are penalised, since there every\n"
"netCDF read (whole fields, hyperslabs) costs more in per-chunk overhead\n"
"than in transfer. The recommendation is thus about the smallest tile that\n"
"keeps chunks above O with the best DRR. The table also gives chunks,\n"
"mixed shares of tiles and cells, index rows, DRR (weighted geometric mean\n"
"and worst region) and per-record bytes. JSON: {\"candidates\":[...],\n"
"\"recommended\":{\"tile\":[h,w],...}, \"current\":{...}}. A grid where\n"
"fewer than two tile shapes fit (1 x 1) is an input error.\n"
"\n"
"Exit status: 0 ok, 1 bad input or I/O error, 2 bad usage.\n", f);
}

typedef struct options {
    char *mask_file, *mask_var;
    const char *names; /* --names FILE */
    const char *raster_file, *var;
    size_t tile_h, tile_w;
    size_t outer_chunk; /* product of --chunk's sizes before the last two */
    char **regions;
    size_t nregions;
    int list_chunks, json;
    const char *plot;   /* --plot FILE */
    int measure_bw;     /* --measure-bw */
    int given_bw;       /* --bw SEQ,RAND */
    bw_figures bw;      /* the figures, once known */
    size_t bw_block;    /* random read size they were measured with */
    int suggest;        /* --suggest-tile */
    size_t overhead;    /* --overhead BYTES (0: not given) */
    int stats;          /* --stats */
} options;

/* What one report is about: a mask (first form) or a raster variable. */
typedef struct view {
    const char *file, *var;
    const raster_mask *mask;
    const raster_mesh *mesh;
    size_t records; /* product of the outer dimensions; 0 in the first form */
    size_t elem;    /* bytes per value; 0 in the first form */
    const char *plot; /* where its picture went, or NULL */
    plot_info pinfo;
    const bw_figures *bw; /* bandwidths for Eq. 2, or NULL */
    int tiled;      /* the mesh's tile is the current one (not a stand-in) */
    size_t outer;   /* values per cell in one chunk (outer chunk sizes) */
    /* second form: the stores' filters and bytes */
    const raster_compression *z;
    unsigned long long stored, raw; /* on disk; cells x value bytes */
} view;

/* ---- the stores' bytes ------------------------------------------------- */

/* Bytes of the stores (datasets `data`) under each storage group, by the
 * group's path from the root (no leading '/'). */
typedef struct store_bytes {
    char *group;
    unsigned long long stored, raw;
} store_bytes;

typedef struct store_list {
    store_bytes *v;
    size_t n, cap;
    int failed;
} store_list;

/* Format 5 keeps the values in the variable itself: for storage group
 * `name` (a version 5 one), the path of the variable its raster_variable
 * names, beside it, in var (NUL-terminated); 0, or -1 when it is none. */
static int tiled_var_path(hid_t root, const char *name, char *var, size_t cap)
{
    hid_t g = H5Gopen2(root, name, H5P_DEFAULT);
    if (g < 0)
        return -1;
    int rc = -1;
    long long version = 0;
    hid_t a = H5Aexists(g, "raster_format_version") > 0
                  ? H5Aopen(g, "raster_format_version", H5P_DEFAULT)
                  : -1;
    if (a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, &version) >= 0 &&
        version >= 5) {
        hid_t b = H5Aexists(g, "raster_variable") > 0
                      ? H5Aopen(g, "raster_variable", H5P_DEFAULT)
                      : -1;
        hid_t t = b >= 0 ? H5Aget_type(b) : -1;
        size_t len = t >= 0 ? H5Tget_size(t) : 0;
        const char *slash = strrchr(name, '/');
        size_t plen = slash ? (size_t)(slash - name) + 1 : 0;
        if (t >= 0 && H5Tget_class(t) == H5T_STRING &&
            !H5Tis_variable_str(t) && len > 0 && plen + len < cap) {
            memcpy(var, name, plen);
            if (H5Aread(b, t, var + plen) >= 0) {
                var[plen + len] = '\0';
                rc = 0;
            }
        }
        if (t >= 0)
            H5Tclose(t);
        if (b >= 0)
            H5Aclose(b);
    }
    if (a >= 0)
        H5Aclose(a);
    H5Gclose(g);
    return rc;
}

static herr_t store_visit(hid_t root, const char *name, const H5L_info_t *info,
                          void *arg)
{
    store_list *l = arg;
    const char *base = strrchr(name, '/');
    char tiled[4096];
    base = base ? base : name - 1;
    size_t glen;
    const char *dpath = name;
    if (info->type != H5L_TYPE_HARD)
        return 0;
    if (strncmp(base + 1, "raster_", 7) == 0 &&
        tiled_var_path(root, name, tiled, sizeof tiled) == 0) {
        /* format 5: its store is the variable itself */
        glen = strlen(name);
        dpath = tiled;
    } else {
        if (base < name || strcmp(base, "/data") != 0)
            return 0;
        /* STORAGE/region_<id>/data or STORAGE/Mixed_Chunks/data */
        const char *up = base;
        while (up > name && up[-1] != '/')
            up--;
        if (up == name)
            return 0;
        glen = (size_t)(up - 1 - name);
    }
    hid_t d = H5Dopen2(root, dpath, H5P_DEFAULT);
    if (d < 0)
        return 0; /* not a dataset */
    hid_t sp = H5Dget_space(d), ty = H5Dget_type(d);
    hssize_t npts = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    size_t tsize = ty >= 0 ? H5Tget_size(ty) : 0;
    hsize_t stored = H5Dget_storage_size(d);
    if (sp >= 0)
        H5Sclose(sp);
    if (ty >= 0)
        H5Tclose(ty);
    H5Dclose(d);
    if (npts < 0 || tsize == 0) {
        l->failed = 1;
        return -1;
    }
    size_t i = 0;
    while (i < l->n && (strlen(l->v[i].group) != glen ||
                        strncmp(l->v[i].group, name, glen) != 0))
        i++;
    if (i == l->n) {
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 16;
            store_bytes *v = realloc(l->v, cap * sizeof *v);
            if (!v) {
                l->failed = 1;
                return -1;
            }
            l->v = v;
            l->cap = cap;
        }
        l->v[i] = (store_bytes){.group = strndup(name, glen)};
        if (!l->v[i].group) {
            l->failed = 1;
            return -1;
        }
        l->n++;
    }
    l->v[i].stored += stored;
    l->v[i].raw += (unsigned long long)npts * tsize;
    return 0;
}

/* Every storage group's store bytes of file `path`, read through HDF5
 * before raster opens the file; 0 or -1 (message printed). */
static int store_sizes(const char *path, store_list *l)
{
    /* HDF5's error stack would print on a link that is no dataset */
    H5E_auto2_t func;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    herr_t st = f < 0 ? -1 : H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC,
                                      store_visit, l);
    if (f >= 0)
        H5Fclose(f);
    H5Eset_auto2(H5E_DEFAULT, func, data);
    if (f < 0) {
        fprintf(stderr, "rasterstat: %s: HDF5 cannot open it to measure "
                "the stores\n", path);
        return -1;
    }
    if (st < 0 || l->failed) {
        fprintf(stderr, "rasterstat: %s: cannot measure the stores\n", path);
        return -1;
    }
    return 0;
}

static void store_list_free(store_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].group);
    free(l->v);
}

/* The store bytes of raster variable v: its storage group is the subgroup
 * of its parent that raster_is_raster_group() knows and whose
 * raster_variable names v. 0, or -1 when none is found. */
static int var_store_bytes(const store_list *l, const raster_var *v,
                           unsigned long long *stored,
                           unsigned long long *raw)
{
    int parent = raster_var_parent(v), n = 0;
    *stored = *raw = 0;
    if (nc_inq_grps(parent, &n, NULL) != NC_NOERR || n <= 0)
        return -1;
    int *ids = malloc((size_t)n * sizeof *ids);
    if (!ids || nc_inq_grps(parent, NULL, ids) != NC_NOERR) {
        free(ids);
        return -1;
    }
    int found = -1;
    for (int i = 0; i < n && found < 0; i++) {
        char who[NC_MAX_NAME + 1] = "";
        size_t len = 0;
        if (!raster_is_raster_group(ids[i]) ||
            nc_inq_attlen(ids[i], NC_GLOBAL, "raster_variable", &len) !=
                NC_NOERR || len > NC_MAX_NAME ||
            nc_get_att_text(ids[i], NC_GLOBAL, "raster_variable", who) !=
                NC_NOERR)
            continue;
        who[len] = '\0';
        if (strcmp(who, raster_var_name(v)) != 0)
            continue;
        size_t plen = 0;
        char *full = NULL;
        if (nc_inq_grpname_full(ids[i], &plen, NULL) == NC_NOERR &&
            (full = calloc(plen + 1, 1)) &&
            nc_inq_grpname_full(ids[i], NULL, full) == NC_NOERR) {
            const char *key = full[0] == '/' ? full + 1 : full;
            found = 0;
            /* a store-less variable (no region written) has no entry */
            for (size_t k = 0; k < l->n; k++)
                if (strcmp(l->v[k].group, key) == 0) {
                    *stored = l->v[k].stored;
                    *raw = l->v[k].raw;
                }
        }
        free(full);
    }
    free(ids);
    return found;
}


/* Resolves --region arguments to ids; 0 on success. */
static int resolve_regions(const options *o, const raster_mask *mask,
                           const raster_mesh *mesh, int32_t *ids)
{
    for (size_t i = 0; i < o->nregions; i++) {
        if (cli_parse_int32(o->regions[i], &ids[i]) != 0 &&
            raster_mask_region_by_name(mask, o->regions[i], &ids[i]) !=
                RASTER_OK) {
            /* not found, or a name two regions share */
            fprintf(stderr, "rasterstat: %s\n", raster_errmsg());
            return -1;
        }
        raster_region_stats st;
        if (raster_mesh_region_stats(mesh, ids[i], &st) != RASTER_OK) {
            fprintf(stderr, "rasterstat: region %d has no cells in the "
                    "mask\n", (int)ids[i]);
            return -1;
        }
    }
    return 0;
}

static int chosen(const int32_t *ids, size_t n, int32_t id)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

static int chunk_chosen(const raster_chunk *c, const int32_t *ids, size_t n)
{
    for (size_t k = 0; k < c->nshares; k++)
        if (chosen(ids, n, c->shares[k].id))
            return 1;
    return 0;
}

static void print_json(const options *o, const view *vw, const int32_t *ids)
{
    const raster_mask *mask = vw->mask;
    const raster_mesh *mesh = vw->mesh;
    size_t ny, nx, th, tw;
    raster_mesh_shape(mesh, &ny, &nx, &th, &tw);
    printf("{\"%s\":", vw->elem ? "file" : "mask");
    cli_json_string(stdout, vw->file);
    printf(",\"var\":");
    cli_json_string(stdout, vw->var);
    printf(",\"grid\":[%zu,%zu],\"tile\":[%zu,%zu]", ny, nx, th, tw);
    if (vw->elem)
        printf(",\"records\":%zu,\"value_bytes\":%zu", vw->records,
               vw->elem);
    if (vw->z) {
        const raster_compression *z = vw->z;
        printf(",\n \"compression\":{\"deflate_level\":%d,\"shuffle\":%s,"
               "\"fletcher32\":%s,\"quantize_mode\":%d,\"quantize_nsd\":%d,"
               "\"filters\":[", z->deflate_level,
               z->shuffle ? "true" : "false",
               z->fletcher32 ? "true" : "false", z->quantize_mode,
               z->quantize_nsd);
        for (unsigned i = 0; i < z->nfilters && i < RASTER_MAX_FILTERS; i++) {
            printf("%s{\"id\":%u,\"params\":[", i ? "," : "",
                   z->filters[i].id);
            for (size_t k = 0; k < z->filters[i].nparams &&
                               k < RASTER_MAX_FILTER_PARAMS; k++)
                printf("%s%u", k ? "," : "", z->filters[i].params[k]);
            printf("]}");
        }
        printf("]},\"stored_bytes\":%llu,\"raw_bytes\":%llu,"
               "\"stored_ratio\":%.6f", vw->stored, vw->raw,
               vw->raw ? (double)vw->stored / (double)vw->raw : 0.0);
    }
    printf(",\"nchunks\":%zu", raster_mesh_nchunks(mesh));
    if (vw->plot) {
        printf(",\n \"plot\":{\"file\":");
        cli_json_string(stdout, vw->plot);
        const plot_info *p = &vw->pinfo;
        printf(",\"width\":%zu,\"height\":%zu,\"map_px\":{\"x\":%zu,"
               "\"y\":%zu,\"w\":%zu,\"h\":%zu},\"px_per_cell\":%zu,"
               "\"cells_per_px\":%zu,\"outlines\":%s,\"labels\":%zu,"
               "\"row0\":\"bottom\"}", p->width, p->height, p->map_x,
               p->map_y, p->map_w, p->map_h, p->px_per_cell, p->cells_per_px,
               p->outlines ? "true" : "false", p->labelled);
    }
    const bw_figures *bw = vw->bw;
    if (bw) {
        printf(",\n \"seq_bw_mbs\":%.3f,\"rand_bw_mbs\":%.3f,"
               "\"bw_ratio\":%.6f,\"bandwidth\":{\"source\":\"%s\"",
               bw->seq_mbs, bw->rand_mbs, bw->seq_mbs / bw->rand_mbs,
               bw->measured ? "measured" : "given");
        if (bw->measured) {
            printf(",\"dir\":");
            cli_json_string(stdout, bw->dir);
            printf(",\"file_bytes\":%zu,\"seq_read_bytes\":%zu,"
                   "\"rand_read_bytes\":%zu,\"rand_reads\":%zu,"
                   "\"seq_secs\":%.6f,\"rand_secs\":%.6f,"
                   "\"cached_after_eviction\":%.4f,\"in_memory\":%s",
                   bw->file_bytes, bw->seq_read_bytes, bw->rand_read_bytes,
                   bw->rand_reads, bw->seq_secs, bw->rand_secs, bw->resident,
                   bw->in_memory ? "true" : "false");
        }
        printf("}");
    }
    if (o->list_chunks) {
        printf(",\n \"chunks\":[");
        const char *sep = "";
        for (size_t i = 0; i < raster_mesh_nchunks(mesh); i++) {
            raster_chunk c;
            raster_mesh_chunk(mesh, i, &c);
            if (!chunk_chosen(&c, ids, o->nregions))
                continue;
            printf("%s\n  {\"id\":%zu,\"y\":%zu,\"x\":%zu,\"h\":%zu,\"w\":%zu,"
                   "\"mixed\":%s,\"regions\":[", sep, c.id, c.y0, c.x0, c.h,
                   c.w, c.mixed ? "true" : "false");
            for (size_t k = 0; k < c.nshares; k++)
                printf("%s%d", k ? "," : "", (int)c.shares[k].id);
            printf("],\"cells\":[");
            for (size_t k = 0; k < c.nshares; k++)
                printf("%s%zu", k ? "," : "", c.shares[k].cells);
            printf("]}");
            sep = ",";
        }
        printf("]");
    }
    printf(",\n \"regions\":[");
    const char *sep = "";
    for (size_t i = 0; i < raster_mesh_nregions(mesh); i++) {
        raster_region_stats s;
        raster_mesh_region(mesh, i, &s);
        if (!chosen(ids, o->nregions, s.id))
            continue;
        printf("%s\n  {\"id\":%d,", sep, (int)s.id);
        const char *name = raster_mask_region_name(mask, s.id);
        if (name) {
            printf("\"name\":");
            cli_json_string(stdout, name);
            printf(",");
        }
        printf("\"cells\":%zu,\"pure_chunks\":%zu,\"mixed_chunks\":%zu,"
               "\"bbox\":[%zu,%zu,%zu,%zu],\"bbox_cells\":%zu,"
               "\"bbox_tile_cells\":%zu,\"read_cells\":%zu,"
               "\"data_reduction_rate\":%.6f",
               s.cells, s.pure_chunks, s.mixed_chunks, s.bbox_y0, s.bbox_x0,
               s.bbox_y1, s.bbox_x1, s.bbox_cells, s.bbox_tile_cells,
               s.read_cells, s.data_reduction_rate);
        if (bw)
            printf(",\"predicted_speedup\":%.6f",
                   s.data_reduction_rate * bw->seq_mbs / bw->rand_mbs);
        if (vw->elem) {
            size_t per = vw->records * vw->elem;
            printf(",\"region_bytes\":%zu,\"raster_read_bytes\":%zu,"
                   "\"chunk_read_bytes\":%zu,\"netcdf_bbox_bytes\":%zu,"
                   "\"raster_reduction\":%.6f",
                   s.cells * per, s.cells * per, s.read_cells * per,
                   s.bbox_tile_cells * per,
                   (double)s.bbox_tile_cells / (double)s.cells);
        }
        printf("}");
        sep = ",";
    }
    printf("]}\n");
}

/* The caveats of a measurement, one line each, after `prefix`. */
static void print_bw_note(FILE *f, const bw_figures *bw, const char *prefix)
{
    if (bw->in_memory)
        fprintf(f, "%s%s is in memory (tmpfs): these are memory, not disk, "
                "figures; set RASTER_BW_DIR to a disk directory\n", prefix,
                bw->dir);
    else if (bw->resident > 0.05)
        fprintf(f, "%sposix_fadvise(DONTNEED) left %.0f%% of the scratch "
                "file cached: the figures are partly warm\n", prefix,
                100.0 * bw->resident);
    fprintf(f, "%scold = fdatasync + posix_fadvise(DONTNEED) in this kernel; "
            "a VM or container host may still cache the file below it, "
            "in which case both figures are optimistic\n", prefix);
}

static void print_plot_line(const view *vw)
{
    const plot_info *p = &vw->pinfo;
    printf("plot    %s: %zu x %zu px, ", vw->plot, p->width, p->height);
    if (p->cells_per_px > 1)
        printf("1 px = %zu x %zu cells", p->cells_per_px, p->cells_per_px);
    else
        printf("%zu x %zu px per cell", p->px_per_cell, p->px_per_cell);
    printf(", row 0 at the bottom\n");
}

static void print_bw_lines(const bw_figures *bw)
{
    if (!bw->measured) {
        printf("bw      sequential %.1f MB/s, random %.1f MB/s (given): "
               "seq/rand %.3f\n", bw->seq_mbs, bw->rand_mbs,
               bw->seq_mbs / bw->rand_mbs);
        return;
    }
    printf("bw      sequential %.1f MB/s (%zu MiB reads), random %.1f MB/s "
           "(%zu reads of %zu bytes): seq/rand %.3f\n", bw->seq_mbs,
           bw->seq_read_bytes >> 20, bw->rand_mbs, bw->rand_reads,
           bw->rand_read_bytes, bw->seq_mbs / bw->rand_mbs);
    printf("        measured cold on a %zu MiB scratch file in %s (removed)",
           bw->file_bytes >> 20, bw->dir);
    if (bw->resident >= 0)
        printf("; %.1f%% of it still cached after eviction",
               100.0 * bw->resident);
    printf("\n");
    print_bw_note(stdout, bw, "note    ");
}

static void print_tables(const options *o, const view *vw, const int32_t *ids)
{
    const raster_mask *mask = vw->mask;
    const raster_mesh *mesh = vw->mesh;
    size_t ny, nx, th, tw, mixed = 0, n = raster_mesh_nchunks(mesh);
    raster_mesh_shape(mesh, &ny, &nx, &th, &tw);
    for (size_t i = 0; i < n; i++) {
        raster_chunk c;
        raster_mesh_chunk(mesh, i, &c);
        mixed += (size_t)c.mixed;
    }
    size_t ntiles = ((ny + th - 1) / th) * ((nx + tw - 1) / tw);
    printf("%s %s:%s  grid %zu x %zu, %zu regions\n",
           vw->elem ? "var    " : "mask   ", vw->file, vw->var, ny, nx,
           raster_mesh_nregions(mesh));
    if (vw->elem)
        printf("records %zu (outer dimensions), %zu bytes per value\n",
               vw->records, vw->elem);
    if (vw->z) {
        char what[256];
        copy_describe_compression(vw->z, what, sizeof what);
        printf("stores  filters: %s; %llu bytes on disk of %llu raw (ratio "
               "%.3f)\n", what, vw->stored, vw->raw,
               vw->raw ? (double)vw->stored / (double)vw->raw : 0.0);
    }
    printf("tiles   %zu x %zu: %zu tiles, %zu mixed (%.1f%%)\n", th, tw, ntiles,
           mixed, 100.0 * (double)mixed / (double)ntiles);
    printf("chunks  %zu: %zu pure (merged runs), %zu mixed\n", n, n - mixed,
           mixed);
    if (vw->plot)
        print_plot_line(vw);
    const bw_figures *bw = vw->bw;
    if (bw)
        print_bw_lines(bw);
    printf("\n");

    printf("%6s %-28s %10s %6s %6s %6s %-24s %12s %12s %7s", "id", "name",
           "cells", "share%", "pure", "mixed", "bbox [y0,y1)x[x0,x1)",
           "bbox_tile", "read_cells", "DRR");
    printf(bw ? " %8s\n" : "\n", "pred_x");
    for (size_t i = 0; i < raster_mesh_nregions(mesh); i++) {
        raster_region_stats s;
        raster_mesh_region(mesh, i, &s);
        if (!chosen(ids, o->nregions, s.id))
            continue;
        const char *name = raster_mask_region_name(mask, s.id);
        char box[64];
        snprintf(box, sizeof box, "[%zu,%zu)x[%zu,%zu)", s.bbox_y0, s.bbox_y1,
                 s.bbox_x0, s.bbox_x1);
        printf("%6d %-28s %10zu %6.2f %6zu %6zu %-24s %12zu %12zu %7.3f",
               (int)s.id, name ? name : "-", s.cells,
               100.0 * (double)s.cells / ((double)ny * (double)nx),
               s.pure_chunks, s.mixed_chunks, box, s.bbox_tile_cells,
               s.read_cells, s.data_reduction_rate);
        if (bw)
            printf(" %8.3f", s.data_reduction_rate * bw->seq_mbs /
                   bw->rand_mbs);
        printf("\n");
    }
    if (bw)
        printf("(pred_x: predicted I/O speedup of the region read over a "
               "chunked netCDF read, paper Eq. 2 = DRR x %.3f)\n",
               bw->seq_mbs / bw->rand_mbs);
    if (vw->elem) {
        size_t per = vw->records * vw->elem;
        printf("\n%6s %14s %14s %14s %8s %8s\n", "id", "region_bytes",
               "chunk_bytes", "netcdf_bytes", "DRR", "raster");
        for (size_t i = 0; i < raster_mesh_nregions(mesh); i++) {
            raster_region_stats s;
            raster_mesh_region(mesh, i, &s);
            if (!chosen(ids, o->nregions, s.id))
                continue;
            printf("%6d %14zu %14zu %14zu %8.3f %8.3f\n", (int)s.id,
                   s.cells * per, s.read_cells * per,
                   s.bbox_tile_cells * per, s.data_reduction_rate,
                   (double)s.bbox_tile_cells / (double)s.cells);
        }
        printf("(region_bytes: what raster reads; chunk_bytes: pure + whole "
               "mixed chunks; netcdf_bytes: tile-aligned bounding box; raster "
               "= netcdf_bytes / region_bytes)\n");
    }
    if (!o->list_chunks)
        return;
    printf("\n%8s %7s %7s %6s %6s %-5s  %s\n", "chunk", "y", "x", "h", "w",
           "kind", "regions (id:cells)");
    for (size_t i = 0; i < n; i++) {
        raster_chunk c;
        raster_mesh_chunk(mesh, i, &c);
        if (!chunk_chosen(&c, ids, o->nregions))
            continue;
        printf("%8zu %7zu %7zu %6zu %6zu %-5s ", c.id, c.y0, c.x0, c.h, c.w,
               c.mixed ? "mixed" : "pure");
        for (size_t k = 0; k < c.nshares; k++)
            printf(" %d:%zu", (int)c.shares[k].id, c.shares[k].cells);
        printf("\n");
    }
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"mask", required_argument, NULL, 'm'},
        {"names", required_argument, NULL, 'n'},
        {"chunk", required_argument, NULL, 'c'},
        {"region", required_argument, NULL, 'r'},
        {"chunks", no_argument, NULL, 'C'},
        {"var", required_argument, NULL, 'v'},
        {"json", no_argument, NULL, 'j'},
        {"plot", required_argument, NULL, 'p'},
        {"measure-bw", no_argument, NULL, 'M'},
        {"bw", required_argument, NULL, 'b'},
        {"suggest-tile", no_argument, NULL, 'S'},
        {"overhead", required_argument, NULL, 'O'},
        {"stats", no_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    size_t sizes[8], nsizes;
    opterr = 0; /* cli_bad_option() words the message */
    while ((opt = getopt_long(argc, argv, CLI_OPTSTRING(""), longopts, NULL)) != -1) {
        switch (opt) {
        case 'm':
            if (cli_mask_option("rasterstat", optarg, &o->mask_file,
                                &o->mask_var) != CLI_OK)
                return CLI_EUSAGE;
            break;
        case 'c':
            if (cli_parse_sizes(optarg, sizes, 8, &nsizes) != 0 ||
                nsizes < 2) {
                fprintf(stderr, "rasterstat: --chunk wants H,W (positive "
                        "integers), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->tile_h = sizes[nsizes - 2];
            o->tile_w = sizes[nsizes - 1];
            o->outer_chunk = 1;
            for (size_t k = 0; k + 2 < nsizes; k++)
                o->outer_chunk *= sizes[k];
            break;
        case 'n': o->names = optarg; break;
        case 'r':
            o->regions[o->nregions++] = optarg;
            break;
        case 'C': o->list_chunks = 1; break;
        case 'v': o->var = optarg; break;
        case 'j': o->json = 1; break;
        case 'p':
            if (optarg[0] == '\0') {
                fprintf(stderr, "rasterstat: --plot wants a file name\n");
                return CLI_EUSAGE;
            }
            o->plot = optarg;
            break;
        case 'M': o->measure_bw = 1; break;
        case 'b':
            if (bw_parse(optarg, &o->bw) != 0) {
                fprintf(stderr, "rasterstat: --bw wants SEQ,RAND (MB/s, "
                        "positive numbers), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->given_bw = 1;
            break;
        case 'S': o->suggest = 1; break;
        case 'T': o->stats = 1; break;
        case 'O':
            if (cli_parse_bytes(optarg, &o->overhead) != 0) {
                fprintf(stderr, "rasterstat: --overhead wants a byte count "
                        "(K, M or G suffix allowed), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'h': usage(stdout); return -1;
        case 'V': printf("rasterstat (raster) %s\n", raster_version_string());
                  return -1;
        default: return cli_bad_option("rasterstat", opt, argv);
        }
    }
    if (optind < argc)
        o->raster_file = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "rasterstat: unexpected argument '%s'\n", argv[optind]);
        return CLI_EUSAGE;
    }
    if (o->names && !o->mask_file) {
        fprintf(stderr, "rasterstat: --names goes with --mask\n");
        return CLI_EUSAGE;
    }
    if (o->raster_file && (o->mask_file || o->tile_h)) {
        fprintf(stderr, "rasterstat: give either a raster file or --mask and "
                "--chunk, not both\n");
        return CLI_EUSAGE;
    }
    if (!o->raster_file && (!o->mask_file || (!o->tile_h && !o->suggest))) {
        fprintf(stderr, "rasterstat: --mask and --chunk are required "
                "(or a raster file; try --help)\n");
        return CLI_EUSAGE;
    }
    if (o->suggest && (o->plot || o->list_chunks || o->measure_bw ||
                       o->given_bw)) {
        fprintf(stderr, "rasterstat: --suggest-tile does not go with "
                "--plot, --chunks, --measure-bw or --bw\n");
        return CLI_EUSAGE;
    }
    if (o->overhead && !o->suggest) {
        fprintf(stderr, "rasterstat: --overhead goes with --suggest-tile\n");
        return CLI_EUSAGE;
    }
    if (o->measure_bw && o->given_bw) {
        fprintf(stderr, "rasterstat: give --measure-bw or --bw, not both\n");
        return CLI_EUSAGE;
    }
    if (o->stats && (!o->raster_file || o->suggest || o->plot ||
                     o->list_chunks || o->measure_bw || o->given_bw)) {
        fprintf(stderr, "rasterstat: --stats goes with a raster file, and "
                "only with --var, --region and --json\n");
        return CLI_EUSAGE;
    }
    if (o->var && !o->raster_file) {
        fprintf(stderr, "rasterstat: --var goes with a raster file\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* Prints one view, after drawing it (--plot, to `plot`) and knowing the
 * bandwidths (--measure-bw: measured once per random read size); CLI_*
 * status. */
static int report(options *o, view *vw, int32_t *ids, const char *plot)
{
    if (resolve_regions(o, vw->mask, vw->mesh, ids) != 0)
        return CLI_EINPUT;
    if (o->suggest) {
        size_t th = 0, tw = 0;
        if (vw->tiled)
            raster_mesh_shape(vw->mesh, NULL, NULL, &th, &tw);
        suggest_opts so = {.file = vw->file, .var = vw->var,
                           .is_file = vw->elem != 0, .base_h = th,
                           .outer = vw->outer ? vw->outer : 1,
                           .base_w = tw, .elem = vw->elem ? vw->elem : 4,
                           .overhead = o->overhead ? o->overhead
                                                   : SUGGEST_DEFAULT_OVERHEAD,
                           .ids = ids, .nids = o->nregions, .json = o->json};
        int st = suggest_tile(vw->mask, &so);
        if (st == CLI_OK && (fflush(stdout) != 0 || ferror(stdout))) {
            perror("rasterstat: writing output");
            st = CLI_EINPUT;
        }
        return st;
    }
    if (plot) {
        char title[1024];
        snprintf(title, sizeof title, "%s:%s", vw->file, vw->var);
        if (plot_mesh_png(plot, title, vw->mask, vw->mesh, &vw->pinfo) != 0)
            return CLI_EINPUT;
        vw->plot = plot;
    }
    if (o->measure_bw) {
        size_t th, tw;
        raster_mesh_shape(vw->mesh, NULL, NULL, &th, &tw);
        size_t block = th * tw * (vw->elem ? vw->elem : 4);
        if (o->bw_block != block) {
            if (isatty(STDERR_FILENO))
                fprintf(stderr, "rasterstat: measuring read bandwidth "
                        "(cold sequential, then random %zu-byte reads)...\n",
                        block);
            if (bw_measure(block, &o->bw) != 0)
                return CLI_EINPUT;
            o->bw_block = block;
            if (o->json)
                print_bw_note(stderr, &o->bw, "rasterstat: note: ");
        }
    }
    if (o->measure_bw || o->given_bw)
        vw->bw = &o->bw;
    if (o->json)
        print_json(o, vw, ids);
    else
        print_tables(o, vw, ids);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("rasterstat: writing output");
        return CLI_EINPUT;
    }
    return CLI_OK;
}

/* FILE.png with "_VAR" before the extension (or at the end). */
static char *plot_name(const char *path, const char *var)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    size_t stem = dot && dot > (slash ? slash + 1 : path) ? (size_t)(dot - path)
                                                          : strlen(path);
    size_t len = strlen(path) + strlen(var) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%.*s_%s%s", (int)stem, path, var, path + stem);
    return out;
}

/* Second form: every raster variable of a raster file (or --var). */
static int report_file(options *o, int32_t *ids)
{
    raster_file *f;
    int rc = raster_open(o->raster_file, RASTER_READ, &f);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterstat: %s: %s\n", raster_strerror(rc),
                raster_errmsg());
        return CLI_EINPUT;
    }
    /* measured by HDF5 once raster has checked it is a raster file, with
     * raster's handle closed meanwhile */
    raster_close(f);
    store_list stores = {0};
    if (!o->suggest && store_sizes(o->raster_file, &stores) != 0) {
        store_list_free(&stores);
        return CLI_EINPUT;
    }
    rc = raster_open(o->raster_file, RASTER_READ, &f);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterstat: %s: %s\n", raster_strerror(rc),
                raster_errmsg());
        store_list_free(&stores);
        return CLI_EINPUT;
    }
    int status = CLI_OK, found = 0;
    if (o->json && !o->var)
        printf("[");
    for (size_t i = 0; i < raster_file_nvars(f) && status == CLI_OK; i++) {
        raster_var *v = raster_file_var(f, i);
        if (o->var && strcmp(o->var, raster_var_name(v)) != 0)
            continue;
        size_t shape[32], records = 1, elem = 0;
        int nd = raster_var_ndims(v);
        if (raster_var_dims(v, NULL, shape, NULL) != RASTER_OK ||
            nc_inq_type(raster_file_ncid(f), raster_var_type(v), NULL,
                        &elem) != NC_NOERR) {
            fprintf(stderr, "rasterstat: %s\n", raster_errmsg());
            status = CLI_EINPUT;
            break;
        }
        size_t chunk[32], outer = 1;
        raster_var_dims(v, NULL, NULL, chunk);
        for (int d = 0; d < nd - 2; d++) {
            records *= shape[d];
            outer *= chunk[d];
        }
        if (!raster_var_mesh(v) || !raster_var_mask(v)) {
            fprintf(stderr, "rasterstat: %s: %s\n", raster_var_name(v),
                    raster_errmsg());
            status = CLI_EINPUT;
            break;
        }
        view vw = {.file = o->raster_file, .var = raster_var_name(v),
                   .mask = raster_var_mask(v), .mesh = raster_var_mesh(v),
                   .records = records,
                   .elem = elem, .tiled = 1, .outer = outer};
        raster_compression z;
        if (!o->suggest) {
            if ((rc = raster_var_compression(v, &z)) != RASTER_OK ||
                var_store_bytes(&stores, v, &vw.stored, &vw.raw) != 0) {
                fprintf(stderr, "rasterstat: %s: %s\n", raster_var_name(v),
                        rc != RASTER_OK ? raster_errmsg()
                                        : "its storage group is not found");
                status = CLI_EINPUT;
                break;
            }
            vw.z = &z;
        }
        /* one picture per variable when there are several */
        char *plot = NULL;
        if (o->plot && !o->var && raster_file_nvars(f) > 1 &&
            !(plot = plot_name(o->plot, vw.var))) {
            fprintf(stderr, "rasterstat: out of memory\n");
            status = CLI_EINPUT;
            break;
        }
        if (found++)
            printf(o->json ? "," : "\n");
        status = report(o, &vw, ids, plot ? plot : o->plot);
        free(plot);
    }
    if (o->json && !o->var)
        printf("]\n");
    if (status == CLI_OK && o->var && !found) {
        fprintf(stderr, "rasterstat: no raster variable '%s' in %s\n",
                o->var, o->raster_file);
        status = CLI_EINPUT;
    }
    raster_close(f);
    store_list_free(&stores);
    return status;
}

int main(int argc, char **argv)
{
    options o = {0};
    cli_set_prog("rasterstat");
    /* at most one --region per argument */
    o.regions = calloc((size_t)argc, sizeof *o.regions);
    int32_t *ids = calloc((size_t)argc, sizeof *ids);
    raster_mask *mask = NULL;
    raster_mesh *mesh = NULL;
    int status;
    if (!o.regions || !ids) {
        fprintf(stderr, "rasterstat: out of memory\n");
        status = CLI_EINPUT;
        goto done;
    }
    status = parse_args(argc, argv, &o);
    if (status != CLI_OK) {
        if (status < 0)
            status = CLI_OK; /* --help, --version */
        goto done;
    }
    if (o.raster_file && o.stats) {
        raster_file *f;
        int rc = raster_open(o.raster_file, RASTER_READ, &f);
        if (rc != RASTER_OK) {
            fprintf(stderr, "rasterstat: %s: %s\n", raster_strerror(rc),
                    raster_errmsg());
            status = CLI_EINPUT;
            goto done;
        }
        status = stat_report(f, o.raster_file, o.var, o.regions, o.nregions,
                             o.json);
        raster_close(f);
        goto done;
    }
    if (o.raster_file) {
        status = report_file(&o, ids);
        goto done;
    }
    int rc = cli_load_mask(o.mask_file, o.mask_var, o.names, &mask);
    if (rc == RASTER_OK) {
        size_t ny, nx;
        raster_mask_shape(mask, &ny, &nx);
        /* --suggest-tile without --chunk: one whole-grid tile, only to
         * check the --region arguments */
        rc = raster_mesh_build(raster_mask_values(mask), ny, nx,
                               o.tile_h ? o.tile_h : ny,
                               o.tile_h ? o.tile_w : nx, &mesh);
    }
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterstat: %s: %s\n", raster_strerror(rc),
                raster_errmsg());
        status = CLI_EINPUT;
        goto done;
    }
    view vw = {.file = o.mask_file, .var = o.mask_var, .mask = mask,
               .mesh = mesh, .tiled = o.tile_h != 0,
               .outer = o.outer_chunk};
    status = report(&o, &vw, ids, o.plot);
done:
    raster_mesh_free(mesh);
    raster_mask_free(mask);
    free(o.mask_file);
    free(o.mask_var);
    free(o.regions);
    free(ids);
    return status;
}
