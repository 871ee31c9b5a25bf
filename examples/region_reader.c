/*
 * region_reader - reads one region of a raster variable with libraster's
 * region-read API (packed layout: only the region's cells) and prints how
 * many values it got and their mean over the non-fill ones.
 *
 * usage: region_reader FILE VAR REGION      (REGION: an id or a name)
 *
 * Under the preload shim, nc_open already attached raster to the file: the
 * reader then shares that state (raster_file_for_ncid) instead of opening
 * the file a second time.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>

#include "raster.h"

static int fail(const char *what, int rc)
{
    fprintf(stderr, "region_reader: %s: %s: %s\n", what, raster_strerror(rc),
            raster_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: region_reader FILE VAR REGION\n");
        return 2;
    }
    raster_file *f;
    raster_var *v;
    int32_t id;
    size_t cells, shape[32], ostart[32] = {0};
    int ncid, rc = RASTER_OK, shared = 0;
    if (nc_open(argv[1], NC_NOWRITE, &ncid) == NC_NOERR) {
        f = raster_file_for_ncid(ncid);
        shared = f != NULL;
        if (!shared)
            nc_close(ncid);
    }
    if (!shared && (rc = raster_open(argv[1], RASTER_READ, &f)))
        return fail(argv[1], rc);
    if ((rc = raster_var_find(f, argv[2], &v)) ||
        (rc = raster_region_lookup(v, argv[3], &id)) ||
        (rc = raster_region_size(v, &id, 1, RASTER_LAYOUT_PACKED, &cells)) ||
        (rc = raster_var_dims(v, NULL, shape, NULL)))
        return fail(argv[2], rc);
    if (raster_var_type(v) != NC_FLOAT) {
        fprintf(stderr, "region_reader: this example reads float variables\n");
        return 1;
    }
    size_t records = 1;
    for (int i = 0; i < raster_var_ndims(v) - 2; i++)
        records *= shape[i];
    float *buf = malloc(records * cells * sizeof *buf);
    if (!buf)
        return 1;
    rc = raster_region_read(v, &id, 1, ostart, shape, RASTER_LAYOUT_PACKED,
                            buf);
    if (rc)
        return fail("reading", rc);
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < records * cells; i++)
        if (buf[i] < 1e30f) {
            sum += buf[i];
            n++;
        }
    printf("%s region %d: %zu cells x %zu records, mean %.6f%s\n", argv[2],
           (int)id, cells, records, n ? sum / (double)n : 0.0,
           shared ? " (state shared with the shim)" : "");
    free(buf);
    if (shared)
        return nc_close(ncid) == NC_NOERR ? 0 : 1;
    return raster_close(f) ? 1 : 0;
}
