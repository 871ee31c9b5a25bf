/*
 * var.h - the in-memory state of an open raster file and of its
 * reorganised variables: data only (and a few inline accessors); state.c
 * makes and frees it. Shared by every module that works on an open file.
 */
#ifndef RASTER_VAR_H
#define RASTER_VAR_H

#include <netcdf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "mask.h"
#include "raster.h"

#define RASTER_MAX_DIMS 32

/* store_addr.addr[] entry of a chunk not looked up yet */
#define CHUNK_UNKNOWN INT64_MIN

/* Where a store's bytes lie, for the pread fast path. */
typedef struct store_addr {
    int prepared;        /* looked at (chunkio_prepare_store) */
    int checked;         /* type and shape checked (meta_check_store) */
    int ok;              /* 1: readable with pread (uncompressed, native
                            order, contiguous or chunked whole-row) */
    int64_t base;        /* contiguous: byte offset of element 0; -1: never
                            written */
    /* chunked stores: ck[] is the chunk shape over the outer dimensions,
     * nck[] the chunks along each (one allocation, nck = ck + outer
     * dimensions: a variable has a store_addr per region, and most are
     * never chunked or empty), ckc/nckc the same along the cells, addr[]
     * the byte offset of each chunk (row-major over the chunk grid; -1
     * unwritten) */
    int chunked;
    size_t *ck, *nck;
    size_t ckc, nckc;    /* cells per chunk, chunks along the cells */
    int64_t *addr;       /* [outer chunk][cell chunk]; CHUNK_UNKNOWN not
                            looked up yet */
    size_t unknown;      /* entries of addr[] not looked up yet */
    int walked;          /* chunkmap_read tried on its chunk index */
    /* chunked stores HDF5 keeps through filters raster undoes itself
     * (unfilter.c; ok is 1 too): filt[] the HDF5 filter ids in the
     * pipeline's order, csize[] each chunk's stored bytes (as addr[]) */
    int inflate;
    int nfilt;
    unsigned char filt[4];
    uint32_t *csize;
    /* writes to a filtered store whose chunks hold several records of the
     * innermost outer dimension: spans cut at multiples of wcut cells, so
     * that one call can carry every record of a chunk (0: not cut) */
    int wsized;          /* wcut worked out */
    size_t wcut;
    size_t ck_records;   /* those records in one chunk (1: not chunked so) */
    size_t tcut;         /* format 5: cells of a tile, where every span
                            and piece is cut (tilestore.h); 0 otherwise */
} store_addr;

/* `len` cells of grid row y from column x on: store cells off.. of store
 * `store` (the region's pure store, or the mixed store). */
typedef struct region_run {
    uint32_t y, x, len, store;
    uint64_t off;
} region_run;

/* One region of a variable (src/format/regions.h). */
typedef struct region_info {
    int32_t id;
    size_t pure_cells;   /* its cells in pure chunks */
    size_t pure_store;   /* cells of its pure store: pure_cells, or in
                            format 5 its pure tiles whole (tilestore.h) */
    size_t mixed_cells;  /* cells of its run in the mixed store */
    size_t mixed_off;    /* where that run starts */
    size_t nruns;        /* known once defined or loaded */
    region_run *runs;    /* grid order; NULL until first needed */
    size_t box[4];       /* y0 x0 y1 x1 of its cells, once runs are known */
    size_t run0, run_rows; /* format 3, loaded: its rows of the shared runs
                              table (attribute run_rows) */
    size_t chunk0, chunk_rows; /* and of the chunks table, when the
                                  variable's raster_regions gave them
                                  (chunk_rows 0: ask the region group) */
    int on_mask;         /* loaded runs checked to lie on its mask cells */
} region_info;

/* Handle tags (issue #27): set when a handle is made, poisoned before it
 * is freed, checked on entry to the public calls that take one, so a use
 * after close most often gets RASTER_EINVAL instead of a crash. Best
 * effort only (freed memory may be reused); raster_close and
 * raster_abandon check a registry of live files instead, without reading
 * the handle (file.c). */
#define FILE_MAGIC 0x52535446u /* "RSTF" */
#define VAR_MAGIC 0x52535456u  /* "RSTV" */
#define DEAD_MAGIC 0xdeadbeefu

/* A small write held back (writeback.c, pend_add): len cells of store
 * `store` from cell soff, in plane `outer` (outer indices row-major), its
 * values from cell voff of pend_write.vals; seq: arrival order. */
typedef struct pent {
    uint64_t outer, soff, voff;
    size_t seq;
    uint32_t store, len;
} pent;

typedef struct pend_write {
    pent *e;
    size_t n, cap;
    unsigned char *vals;
    size_t cells, vcap; /* vals holds cells values, room for vcap bytes */
} pend_write;

struct raster_var {
    uint32_t magic;            /* VAR_MAGIC while usable */
    raster_file *file;
    char *name;
    int grpid;                 /* the variable's group */
    int xtype;                 /* netCDF type of the values */
    size_t elem;               /* bytes per value */
    int ndims;                 /* outer dims + 2 grid dims */
    int dimids[RASTER_MAX_DIMS];
    size_t chunk[RASTER_MAX_DIMS]; /* base chunk shape */
    unsigned char fill[8];     /* fill value, in the variable's type */
    raster_mask *mask;         /* the region mask, with its names */
    int parent;                /* group the variable belongs to */
    int varid;                 /* its placeholder variable there: same name,
                                  type and dimensions, never written, and
                                  carrying the variable's attributes */
    /* a file attached as a view (raster_attach_view): the placeholder's
     * ids in the caller's handle, which lookups by varid compare */
    int view_parent, view_varid;
    int placeholder_fits; /* lean opens: the placeholder's extent is the
                             variable's shape, as netCDF shows it */
    size_t ny, nx;             /* the grid */
    size_t nregions;
    region_info *regions;      /* ascending ids */
    int table_from_layout;     /* regions[] derived from lay (writers; runs
                                  from its segments), not loaded from the
                                  file (runs loaded on first use); a
                                  read-only file keeps its loaded table
                                  also once the full check built lay */
    /* mesh and layout: built from the mask when a variable is defined or
     * a writable file is opened; in read-only files only on demand
     * (raster_var_mesh()), since reads need only the regions' runs */
    raster_mesh *mesh;
    layout *lay;
    /* stores: 0..nregions-1 pure, nregions mixed; -1 when empty */
    int *store_grp;
    int *store_var;
    size_t *store_cells;
    store_addr *addr;          /* per store, set when a read-only file loads */
    /* format 5 (tilestore.h): the tiles of store s, as tile numbers (row-
     * major over the tile grid), are stile[stile_first[s] ..
     * stile_first[s + 1]); NULL until first needed. A read-only variable
     * without its layout indexes a store at its first read, from the
     * tables: stile_done[s] 1 once store s is (NULL: all are) */
    size_t *stile, *stile_first;
    unsigned char *stile_done;
    /* and, read-only, the byte offset of each of the variable's chunks
     * (row-major over its chunk grid, -1 never written), its chunk shape
     * and counts: vaddr_state 0 not looked at, -1 not usable (netCDF
     * moves the stores), 1 usable, 2 vaddr walked, 3 its walk failed
     * (chunks looked up one by one) */
    int vaddr_state;
    int64_t *vaddr;
    size_t vck[RASTER_MAX_DIMS], vnck[RASTER_MAX_DIMS];
    /* a filtered variable's: each chunk's stored bytes (as vaddr), and the
     * filters raster undoes (store_addr's filt, nfilt) */
    uint32_t *vsize;
    unsigned char vfilt[4];
    int vnfilt;
    unsigned char *store_ncw;  /* per store: 1 once raster wrote it through
                                  netCDF in this handle (netCDF then knows
                                  it written: a late _FillValue is refused;
                                  writeback.c's small writes wait for it) */
    pend_write *pend;          /* small writes held back (writeback.c),
                                  written by chunkio_flush; NULL when none */
    int64_t *store_did;        /* per store, its dataset (hid_t) kept open
                                  for small writes (writeback.c), or -1;
                                  closed by fileio_close */
    int64_t chunks_did;        /* a lean file's `chunks` table (hid_t),
                                  kept open from its checksums' read to its
                                  rows' (fileio_table_kept), or 0; closed
                                  by fileio_close_stores */
    struct tile_index *tiles;  /* hyperslab reads of a read-only file
                                  (tiles.h); NULL until first needed */
    /* the stored mask for pread (maskio.c): 0 not looked at, 1 usable,
     * -1 not; its byte offset and bytes per value */
    int mask_io;
    /* outer shape of a read-only file, looked up once (var_outer_shape);
     * of a writable one, the lengths last seen, looked up again when a
     * read reaches past them (var_read_shape): for an unlimited dimension
     * netCDF scans every variable using it */
    int outer_known;
    size_t outer[RASTER_MAX_DIMS];
    /* a writable file's shape for writes (var_write_shape), looked up
     * once: fixed lengths never change, and along an unlimited dimension
     * the records netCDF counted then, raised by raster's own writes
     * (var_wrote) - no store reaches past it. Each nc_inq_dimlen of an
     * unlimited dimension makes netCDF measure every dataset on it,
     * raster's stores included: most of a small write's cost before. */
    int wshape_known;
    size_t wshape[RASTER_MAX_DIMS];
    unsigned char wunlim[RASTER_MAX_DIMS];
    int64_t mask_base;
    size_t mask_elem;
    /* a variable of a file opened without netCDF (src/format/lean.c): the HDF5
     * path of its group, and which outer dimensions are unlimited; its
     * netCDF ids are -1 until file_netcdf() binds them */
    char *h5path;
    unsigned char unlimited[RASTER_MAX_DIMS];
    int format;                /* format version of its tables */
    /* checksums (integrity.h): 1 when the file carries them (attribute
     * raster_regions_crc32c); each region's expected CRC32C of its rows of
     * `runs`, loaded with the first runs read (NULL until then) */
    int sums;
    uint32_t *sum_runs;
    int materialized;          /* mask and index tables written */
    /* how the stores are filtered and the values quantized (issue #23,
     * compress.h): set at definition or read from the placeholder at
     * open; comp_fixed once the stores may be in the file (a loaded
     * variable, or one written), when netCDF no longer changes them */
    raster_compression comp;
    int comp_fixed;
    int comp_later;            /* a view's comp not read yet (meta_comp) */
    int dirty;                 /* written since open: marker to rewrite */
    /* stored statistics (statstore.h): stats_looked once the group was
     * asked for its `stats` dataset, stats_var its varid then (-1: none);
     * the weight variable's name; what a writer keeps: each grid cell's
     * region position, the weights on the grid and their CRC32C
     * (stats_wread: 0 not read yet, 1 read, -1 unavailable), and the
     * records a partial write left stale (nstale of var_nouter coords) */
    int stats_looked, stats_var;
    char *stats_weights;
    int32_t *stats_cellreg;
    struct stats_run *stats_runs; /* the grid's runs of one region */
    /* the last record a partial write marked stale, and its regions
     * marked: the next small writes into it need no netCDF call */
    size_t stats_last[RASTER_MAX_DIMS];
    unsigned char *stats_last_hit;
    int stats_last_ok;
    size_t stats_nruns;
    double *stats_w;
    uint32_t *stats_wcrcs; /* per region: CRC32C of its cells' weights */
    int stats_wread;
    size_t *stats_stale;
    size_t nstale, cap_stale;
    int stats_all_stale; /* format 5, the file's seal broken: none is used,
                            and a writer recomputes every record at close */
    struct raster_var *next;
};

struct raster_file {
    uint32_t magic;   /* FILE_MAGIC while open */
    struct raster_file *next_live; /* the registry of open files (file.c) */
    int ncid;         /* -1 while `lean` */
    /* opened read-only through HDF5 alone (src/format/lean.c): netCDF is opened,
     * and the variables' netCDF ids bound, by file_netcdf() when a call
     * first needs it. Cleared (release) only once every id is in place,
     * so a reader that sees 0 sees the ids; the lean paths (HDF5 handle,
     * fd, paths) stay valid after it, for readers that saw 1. */
    atomic_int lean;
    pthread_mutex_t lean_lock;
    /* what reads load on first use (runs, stores' byte offsets, the tile
     * index, the outer shape, the mesh) is loaded under this lock: a
     * handle may be read from several threads at once. Recursive, since
     * loaders call each other. */
    pthread_mutex_t lazy_lock;
    int own_ncid;     /* opened by raster_open: closed by raster_close */
    int writable;
    int fd;           /* for pread, -1 until needed */
    /* read-only files: what fd referred to when opened (integrity.h,
     * file_unchanged): device, inode, size, mtime (s, ns) */
#define FILE_IDENT_FIELDS 5
    int ident_known;
    int64_t ident[FILE_IDENT_FIELDS];
    int write_format; /* format version of variables defined from now on */
    /* format 5's kept statistics (integrity.h, the seal): 1 trusted, -1
     * not (the file changed without raster since raster last closed it),
     * 0 not looked at yet (a read-only file looks at first need) */
    int seal;
    struct span_cache *scache; /* read-only files: staged spans of thin
                                  reads kept (chunkio.c), or NULL */
    atomic_uint thin_reads;    /* thin reads so far: the first keeps none */
    /* read-only files: the whole file mapped (fileio_map), NULL until a
     * read of plain chunks first asks, or when it cannot be */
    unsigned char *map;
    size_t map_len;
    int map_tried;
    atomic_int map_shrunk; /* the file shrank since: read by pread */
    int map_loads;         /* loads running (fileio_map_load_begin) */
    int64_t h5;       /* HDF5 id of the file for the fast path's byte
                         offsets (hid_t), -1 until first needed */
    /* idle inflater states (unfilter.h) of reads of deflated stores,
     * kept for the next read (under lazy_lock): a fresh state's buffers
     * cost a page fault per 4 KiB, a tenth of a small read */
#define FILE_INFLATERS 16
    struct unfilter *inflaters[FILE_INFLATERS];
    int ninflaters;
    char *path;
    raster_var *vars;
    struct raster_file *next_attached; /* registry of raster_attach() */
    int caller_ncid;  /* the ncid raster_file_for_ncid() finds it by */
    int view;         /* raster_attach_view(): the caller's handle does not
                         see the storage; variables are found by view ids */
    /* a view whose variables load on first need (lean_view_scan): each
     * placeholder's caller ids and storage group (lean.h) */
    atomic_int view_pending;
    struct view_group *view_groups;
    size_t nview;
    struct raster_par *par; /* MPI state (parallel.c); NULL when serial */
    int tables_at_close; /* a parallel file: the mask and index tables are
                            written collectively, by every rank, at
                            raster_close (meta_materialize waits) */
};

/* 1 when f (v) is a handle that has not been closed, as far as its tag
 * tells. */
static inline int file_ok(const raster_file *f)
{
    return f && f->magic == FILE_MAGIC;
}
static inline int var_ok(const raster_var *v)
{
    return v && v->magic == VAR_MAGIC;
}

/* The file's lazy_lock around a first-use load. */
static inline void lazy_lock(raster_file *f)
{
    pthread_mutex_lock(&f->lazy_lock);
}
static inline void lazy_unlock(raster_file *f)
{
    pthread_mutex_unlock(&f->lazy_lock);
}

/* Number of outer dimensions. */
static inline int var_nouter(const raster_var *v) { return v->ndims - 2; }

/* What v's format has: region groups (up to 3), one store shared by every
 * region (4), the values in the variable itself, its tiles the stores (5,
 * tilestore.h). */
static inline int var_grouped(const raster_var *v) { return v->format < 4; }
static inline int var_shared(const raster_var *v) { return v->format == 4; }
static inline int var_tiled(const raster_var *v) { return v->format >= 5; }

/* How v's format lays its stores out (layout.h). */
static inline layout_mode var_layout_mode(const raster_var *v)
{
    return v->format >= 5   ? LAYOUT_TILES
           : v->format >= 4 ? LAYOUT_SHARED
                            : LAYOUT_REGIONS;
}

/* Format 5: a read-only variable's reads of at most this many of its
 * chunks go through netCDF when the file is open there (raster's own
 * handle, or the caller's under the shim), as any reader's would: the
 * variable holds its values, and a point's series touches a chunk per
 * record, where raster's first read of an open file walks the variable's
 * whole chunk index. */
#define VAR_NETCDF_CHUNKS 16

/* 1 when box start/count/stride (stride may be NULL; count NULL: the
 * single value at start) of a variable of rank nd chunked ck touches at
 * most VAR_NETCDF_CHUNKS chunks (an empty box, or a dimension not
 * chunked: 0). */
static inline int var_few_chunks(int nd, const size_t *ck,
                                 const size_t *start, const size_t *count,
                                 const ptrdiff_t *stride)
{
    size_t chunks = 1;
    for (int d = 0; d < nd; d++) {
        size_t step = stride ? (size_t)stride[d] : 1, n = count ? count[d] : 1;
        if (n == 0 || ck[d] == 0)
            return 0;
        size_t last = start[d] + (n - 1) * step;
        chunks *= last / ck[d] - start[d] / ck[d] + 1;
        if (chunks > VAR_NETCDF_CHUNKS)
            return 0;
    }
    return 1;
}

#endif
