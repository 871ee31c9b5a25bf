/*
 * rasterstat - per-region statistics of a region mesh: how many chunks each
 * region needs and how much less it reads than a chunked netCDF read of its
 * bounding box (the data reduction rate, RASTER paper Eq. 1).
 */
#include <getopt.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "raster.h"

static void usage(FILE *f)
{
    fputs(
"usage: rasterstat --mask FILE:VAR --chunk H,W [options]\n"
"       rasterstat RASTERFILE [--var V] [options]\n"
"\n"
"First form: cuts the 2-D region mask VAR of netCDF file FILE into H x W\n"
"tiles, builds the RASTER chunks (same-region pure tiles of a tile-row\n"
"merged, mixed tiles alone) and prints per-region statistics.\n"
"Second form: the same for each raster variable of a raster file (or only\n"
"V), plus bytes: the region's bytes (= what raster reads), the bytes of its\n"
"pure chunks and whole mixed chunks (the paper's accounting), and the bytes a\n"
"chunked netCDF read of its tile-aligned bounding box reads, over all\n"
"records of the outer dimensions.\n"
"\n"
"  --mask FILE:VAR   mask variable (integer, or float with integral values);\n"
"                    FILE is split at the last ':'\n"
"  --chunk H,W       tile height and width in cells; with more than two values\n"
"                    (a variable's full chunk shape) the last two are used\n"
"  --region R        only region R: an id, or a name from the mask's CF\n"
"                    flag_meanings (case-insensitive, '_' or ' '); repeatable\n"
"  --var V           second form: only raster variable V\n"
"  --chunks          also list the chunks (with --region, only theirs)\n"
"  --json            print one JSON object instead of tables\n"
"  --help            this text\n"
"  --version         print raster's version\n"
"\n"
"Columns: cells of the region (per record); its pure chunks and the mixed\n"
"chunks it has\n"
"cells in; its exact bounding box [y0,y1) x [x0,x1); bbox_tile_cells, the\n"
"cells a tile-chunked read of that box touches; read_cells, the cells of its\n"
"pure chunks plus the mixed chunks it touches; DRR = bbox_tile_cells /\n"
"read_cells.\n"
"\n"
"Exit status: 0 ok, 1 bad input or I/O error, 2 bad usage.\n", f);
}

typedef struct options {
    char *mask_file, *mask_var;
    const char *raster_file, *var;
    size_t tile_h, tile_w;
    char **regions;
    size_t nregions;
    int list_chunks, json;
} options;

/* What one report is about: a mask (first form) or a raster variable. */
typedef struct view {
    const char *file, *var;
    const raster_mask *mask;
    const raster_mesh *mesh;
    size_t records; /* product of the outer dimensions; 0 in the first form */
    size_t elem;    /* bytes per value; 0 in the first form */
} view;

/* Resolves --region arguments to ids; 0 on success. */
static int resolve_regions(const options *o, const raster_mask *mask,
                           const raster_mesh *mesh, int32_t *ids)
{
    for (size_t i = 0; i < o->nregions; i++) {
        if (cli_parse_int32(o->regions[i], &ids[i]) != 0 &&
            raster_mask_region_by_name(mask, o->regions[i], &ids[i]) !=
                RASTER_OK) {
            fprintf(stderr, "rasterstat: no region named '%s' in the mask\n",
                    o->regions[i]);
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
    printf(",\"nchunks\":%zu", raster_mesh_nchunks(mesh));
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
    printf("tiles   %zu x %zu: %zu tiles, %zu mixed (%.1f%%)\n", th, tw, ntiles,
           mixed, 100.0 * (double)mixed / (double)ntiles);
    printf("chunks  %zu: %zu pure (merged runs), %zu mixed\n\n", n, n - mixed,
           mixed);

    printf("%6s %-28s %10s %6s %6s %6s %-24s %12s %12s %7s\n", "id", "name",
           "cells", "share%", "pure", "mixed", "bbox [y0,y1)x[x0,x1)",
           "bbox_tile", "read_cells", "DRR");
    for (size_t i = 0; i < raster_mesh_nregions(mesh); i++) {
        raster_region_stats s;
        raster_mesh_region(mesh, i, &s);
        if (!chosen(ids, o->nregions, s.id))
            continue;
        const char *name = raster_mask_region_name(mask, s.id);
        char box[64];
        snprintf(box, sizeof box, "[%zu,%zu)x[%zu,%zu)", s.bbox_y0, s.bbox_y1,
                 s.bbox_x0, s.bbox_x1);
        printf("%6d %-28s %10zu %6.2f %6zu %6zu %-24s %12zu %12zu %7.3f\n",
               (int)s.id, name ? name : "-", s.cells,
               100.0 * (double)s.cells / ((double)ny * (double)nx),
               s.pure_chunks, s.mixed_chunks, box, s.bbox_tile_cells,
               s.read_cells, s.data_reduction_rate);
    }
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
        {"chunk", required_argument, NULL, 'c'},
        {"region", required_argument, NULL, 'r'},
        {"chunks", no_argument, NULL, 'C'},
        {"var", required_argument, NULL, 'v'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    size_t sizes[8], nsizes;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm':
            free(o->mask_file);
            free(o->mask_var);
            o->mask_file = o->mask_var = NULL;
            if (cli_split_spec(optarg, &o->mask_file, &o->mask_var) != 0) {
                fprintf(stderr, "rasterstat: --mask wants FILE:VAR, got "
                        "'%s'\n", optarg);
                return CLI_EUSAGE;
            }
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
            break;
        case 'r':
            o->regions[o->nregions++] = optarg;
            break;
        case 'C': o->list_chunks = 1; break;
        case 'v': o->var = optarg; break;
        case 'j': o->json = 1; break;
        case 'h': usage(stdout); return -1;
        case 'V': printf("rasterstat (raster) %s\n", raster_version_string());
                  return -1;
        default: usage(stderr); return CLI_EUSAGE;
        }
    }
    if (optind < argc)
        o->raster_file = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "rasterstat: unexpected argument '%s'\n", argv[optind]);
        return CLI_EUSAGE;
    }
    if (o->raster_file && (o->mask_file || o->tile_h)) {
        fprintf(stderr, "rasterstat: give either a raster file or --mask and "
                "--chunk, not both\n");
        return CLI_EUSAGE;
    }
    if (!o->raster_file && (!o->mask_file || !o->tile_h)) {
        fprintf(stderr, "rasterstat: --mask and --chunk are required "
                "(or a raster file; try --help)\n");
        return CLI_EUSAGE;
    }
    if (o->var && !o->raster_file) {
        fprintf(stderr, "rasterstat: --var goes with a raster file\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* Prints one view; CLI_* status. */
static int report(const options *o, const view *vw, int32_t *ids)
{
    if (resolve_regions(o, vw->mask, vw->mesh, ids) != 0)
        return CLI_EINPUT;
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

/* Second form: every raster variable of a raster file (or --var). */
static int report_file(const options *o, int32_t *ids)
{
    raster_file *f;
    int rc = raster_open(o->raster_file, RASTER_READ, &f);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterstat: %s: %s\n", raster_strerror(rc),
                raster_errmsg());
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
        for (int d = 0; d < nd - 2; d++)
            records *= shape[d];
        view vw = {.file = o->raster_file, .var = raster_var_name(v),
                   .mask = raster_var_mask(v), .mesh = raster_var_mesh(v),
                   .records = records,
                   .elem = elem};
        if (found++)
            printf(o->json ? "," : "\n");
        status = report(o, &vw, ids);
    }
    if (o->json && !o->var)
        printf("]\n");
    if (status == CLI_OK && o->var && !found) {
        fprintf(stderr, "rasterstat: no raster variable '%s' in %s\n",
                o->var, o->raster_file);
        status = CLI_EINPUT;
    }
    raster_close(f);
    return status;
}

int main(int argc, char **argv)
{
    options o = {0};
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
    if (o.raster_file) {
        status = report_file(&o, ids);
        goto done;
    }
    int rc = raster_mask_load(o.mask_file, o.mask_var, &mask);
    if (rc == RASTER_OK) {
        size_t ny, nx;
        raster_mask_shape(mask, &ny, &nx);
        rc = raster_mesh_build(raster_mask_values(mask), ny, nx, o.tile_h,
                               o.tile_w, &mesh);
    }
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterstat: %s: %s\n", raster_strerror(rc),
                raster_errmsg());
        status = CLI_EINPUT;
        goto done;
    }
    view vw = {.file = o.mask_file, .var = o.mask_var, .mask = mask,
               .mesh = mesh};
    status = report(&o, &vw, ids);
done:
    raster_mesh_free(mesh);
    raster_mask_free(mask);
    free(o.mask_file);
    free(o.mask_var);
    free(o.regions);
    free(ids);
    return status;
}
