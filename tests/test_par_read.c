/*
 * test_par_read - parallel region reads checked value by value.
 *
 * usage: mpirun -np N test_par_read RASTER.nc PLAIN.nc VAR...
 * Every rank opens the raster file with raster_open_par and reads, for each
 * region alone, for all regions together and for two regions, its share
 * (raster_region_read_par, split by records and by regions, packed and
 * full layouts). It compares every byte with the same cells read from the
 * plain netCDF file with nc_get_vara (the mask's cells, from
 * raster_region_cells), so the parallel read is checked against netCDF
 * itself. The union of the shares must be the whole request. Exit 0 when
 * every rank found everything equal.
 */
#include <mpi.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raster.h"

static int rank, nranks, failures;

#define FAIL(...)                                                             \
    do {                                                                      \
        fprintf(stderr, "test_par_read (rank %d): ", rank);                   \
        fprintf(stderr, __VA_ARGS__);                                         \
        fprintf(stderr, "\n");                                                \
        failures++;                                                           \
    } while (0)

static size_t type_size(int t)
{
    switch (t) {
    case NC_BYTE: case NC_UBYTE: return 1;
    case NC_SHORT: case NC_USHORT: return 2;
    case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
    default: return 8;
    }
}

/* Checks one request; adds this rank's share of cells*planes to *covered. */
static void check(raster_var *v, const unsigned char *plain, const size_t *shape,
                  const int32_t *ids, size_t nids, int split, int layout,
                  unsigned long long *covered)
{
    int no = raster_var_ndims(v) - 2;
    size_t ny = shape[no], nx = shape[no + 1], elem = type_size(raster_var_type(v));
    size_t ostart[32] = {0}, ocount[32], ms[32], mc[32], mn = 0;
    int32_t mine[64];
    for (int i = 0; i < no; i++)
        ocount[i] = shape[i];
    if (raster_region_split(v, ids, nids, ostart, ocount, split, rank, nranks,
                            ms, mc, mine, &mn) != RASTER_OK) {
        FAIL("split: %s", raster_errmsg());
        return;
    }
    size_t plane = 0, planes = 1;
    for (int i = 0; i < no; i++)
        planes *= mc[i];
    if (mn > 0 && raster_region_size(v, mine, mn, layout, &plane) != RASTER_OK) {
        FAIL("size: %s", raster_errmsg());
        return;
    }
    unsigned char *out = malloc(plane * planes * elem + 1);
    size_t *ys = NULL, *xs = NULL, packed = 0;
    if (mn > 0)
        raster_region_size(v, mine, mn, RASTER_LAYOUT_PACKED, &packed);
    ys = malloc((packed + 1) * sizeof *ys);
    xs = malloc((packed + 1) * sizeof *xs);
    if (!out || !ys || !xs) {
        FAIL("out of memory");
        goto done;
    }
    size_t gs[32], gc[32], gn = 0;
    int32_t gids[64];
    if (raster_region_read_par(v, ids, nids, ostart, ocount, layout, split,
                               MPI_COMM_WORLD, out, gs, gc, gids, &gn) !=
        RASTER_OK) {
        FAIL("read: %s", raster_errmsg());
        goto done;
    }
    if (gn != mn || memcmp(gs, ms, (size_t)no * sizeof *gs) ||
        memcmp(gc, mc, (size_t)no * sizeof *gc))
        FAIL("read_par returned another share than region_split");
    if (mn == 0)
        goto done;
    if (raster_region_cells(v, mine, mn, ys, xs) != RASTER_OK) {
        FAIL("cells: %s", raster_errmsg());
        goto done;
    }
    *covered += (unsigned long long)packed * planes;
    /* every plane of the share, against the plain file's values */
    size_t idx[32] = {0};
    for (size_t p = 0; p < planes; p++) {
        size_t flat = 0;
        for (int i = 0; i < no; i++)
            flat = flat * shape[i] + ms[i] + idx[i];
        const unsigned char *src = plain + flat * ny * nx * elem;
        unsigned char *got = out + p * plane * elem;
        for (size_t k = 0; k < packed; k++) {
            size_t cell = ys[k] * nx + xs[k];
            size_t at = layout == RASTER_LAYOUT_PACKED ? k : cell;
            if (memcmp(got + at * elem, src + cell * elem, elem) != 0) {
                FAIL("plane %zu cell (%zu, %zu) differs from the plain file",
                     p, ys[k], xs[k]);
                goto done;
            }
        }
        for (int i = no - 1; i >= 0; i--) {
            if (++idx[i] < mc[i])
                break;
            idx[i] = 0;
        }
    }
done:
    free(out);
    free(ys);
    free(xs);
}

static void check_var(raster_file *f, int plain_nc, const char *name)
{
    raster_var *v;
    if (raster_var_find(f, name, &v) != RASTER_OK) {
        FAIL("%s: %s", name, raster_errmsg());
        return;
    }
    size_t shape[32], total = 1, elem = type_size(raster_var_type(v));
    int nd = raster_var_ndims(v), pv;
    raster_var_dims(v, NULL, shape, NULL);
    for (int i = 0; i < nd; i++)
        total *= shape[i];
    unsigned char *plain = malloc(total * elem);
    if (!plain || nc_inq_varid(plain_nc, name, &pv) != NC_NOERR ||
        nc_get_var(plain_nc, pv, plain) != NC_NOERR) {
        FAIL("%s: reading the plain file", name);
        free(plain);
        return;
    }
    const raster_mesh *m = raster_var_mesh(v);
    size_t nreg = raster_mesh_nregions(m);
    int32_t all[64];
    size_t nall = 0;
    for (size_t r = 0; r < nreg && nall < 64; r++) {
        raster_region_stats st;
        raster_mesh_region(m, r, &st);
        all[nall++] = st.id;
    }
    int splits[2] = {RASTER_SPLIT_OUTER, RASTER_SPLIT_REGIONS};
    int layouts[2] = {RASTER_LAYOUT_PACKED, RASTER_LAYOUT_FULL};
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < 2; l++) {
            /* every region alone, then two, then all together */
            for (size_t r = 0; r <= nall + 1; r++) {
                const int32_t *ids = r < nall ? &all[r] : all;
                size_t n = r < nall ? 1 : r == nall ? 2 : nall;
                if (n > nall)
                    n = nall;
                unsigned long long mine = 0, sum = 0, want = 0;
                check(v, plain, shape, ids, n, splits[s], layouts[l], &mine);
                MPI_Allreduce(&mine, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                              MPI_COMM_WORLD);
                size_t cells = 0, planes = 1;
                raster_region_size(v, ids, n, RASTER_LAYOUT_PACKED, &cells);
                for (int i = 0; i < nd - 2; i++)
                    planes *= shape[i];
                want = (unsigned long long)cells * planes;
                if (sum != want && rank == 0)
                    FAIL("%s: shares cover %llu cells of %llu", name, sum,
                         want);
            }
        }
    free(plain);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: test_par_read RASTER.nc PLAIN.nc VAR...\n");
        MPI_Finalize();
        return 2;
    }
    raster_file *f;
    int plain_nc;
    if (raster_open_par(argv[1], RASTER_READ, MPI_COMM_WORLD, MPI_INFO_NULL,
                        &f) != RASTER_OK) {
        FAIL("%s: %s", argv[1], raster_errmsg());
    } else {
        if (nc_open(argv[2], NC_NOWRITE, &plain_nc) != NC_NOERR) {
            FAIL("cannot open %s", argv[2]);
        } else {
            for (int i = 3; i < argc; i++)
                check_var(f, plain_nc, argv[i]);
            nc_close(plain_nc);
        }
        if (raster_close(f) != RASTER_OK)
            FAIL("close: %s", raster_errmsg());
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_par_read: %d ranks, %s\n", nranks,
               all ? "FAILED" : "all values equal to the plain file");
    MPI_Finalize();
    return all ? 1 : 0;
}
