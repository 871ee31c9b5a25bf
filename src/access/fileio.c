/*
 * fileio.c - raster's own access to the file below netCDF (see fileio.h).
 */
#include "fileio.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <netcdf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "mask.h"
#include "unfilter.h"

/* raster's own HDF5 handle on the file, opened once: read-only for the
 * fast path's byte offsets, read-write in a writable file (direct.c writes
 * chunks through it; a read-only id could not). HDF5 shares the file
 * netCDF has open, so both see one file state. */
int64_t fileio_h5(raster_file *f)
{
    if (f->h5 >= 0)
        return f->h5;
    unsigned mode = f->writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1;
    if (fapl >= 0) {
        /* every open of one file must use the same close degree: netCDF
         * 4.9 opens with HDF5's default ("weak"), other builds "semi";
         * a lean open (lean.c) comes first and must let netCDF open
         * after it */
        if (H5Pset_fclose_degree(fapl, H5F_CLOSE_WEAK) >= 0)
            fid = H5Fopen(f->path, mode, fapl);
        if (fid < 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI) >= 0)
            fid = H5Fopen(f->path, mode, fapl);
        H5Pclose(fapl);
    }
    f->h5 = fid;
    return fid;
}

int64_t fileio_dataset(raster_file *f, int grpid, const char *name)
{
    hid_t fid = (hid_t)fileio_h5(f);
    size_t len;
    char path[4096];
    if (fid < 0 || nc_inq_grpname_full(grpid, &len, NULL) != NC_NOERR ||
        len + strlen(name) + 2 > sizeof path ||
        nc_inq_grpname_full(grpid, &len, path) != NC_NOERR)
        return -1;
    if (len > 1) /* the root group's full name is "/" */
        strcat(path, "/");
    strcat(path, name);
    return H5Dopen2(fid, path, H5P_DEFAULT);
}

int64_t fileio_var_dataset(raster_var *v, const char *rel)
{
    if (!v->file->lean) {
        const char *slash = strchr(rel, '/');
        if (!slash) /* in the variable's own group */
            return fileio_dataset(v->file, v->grpid, rel);
        char grp[NC_MAX_NAME + 1];
        int g;
        if ((size_t)(slash - rel) >= sizeof grp)
            return -1;
        memcpy(grp, rel, (size_t)(slash - rel));
        grp[slash - rel] = '\0';
        return nc_inq_grp_ncid(v->grpid, grp, &g) == NC_NOERR
                   ? fileio_dataset(v->file, g, slash + 1)
                   : -1;
    }
    /* no netCDF ids yet (lean.c): by its path */
    hid_t fid = (hid_t)fileio_h5(v->file);
    char path[4096];
    if (fid < 0 || (size_t)snprintf(path, sizeof path, "%s/%s", v->h5path,
                                    rel) >= sizeof path)
        return -1;
    return H5Dopen2(fid, path, H5P_DEFAULT);
}

int64_t fileio_placeholder(raster_var *v)
{
    if (!v->file->lean)
        return fileio_dataset(v->file, v->parent, v->name);
    /* beside its storage group */
    hid_t fid = (hid_t)fileio_h5(v->file);
    const char *slash = strrchr(v->h5path, '/');
    int len = slash ? (int)(slash - v->h5path) : 0;
    char path[4096];
    if (fid < 0 || !slash ||
        (size_t)snprintf(path, sizeof path, "%.*s/%s", len, v->h5path,
                         v->name) >= sizeof path)
        return -1;
    return H5Dopen2(fid, path, H5P_DEFAULT);
}

void fileio_close_stores(raster_var *v)
{
    if (v->chunks_did > 0)
        H5Dclose((hid_t)v->chunks_did);
    v->chunks_did = 0;
    for (size_t s = 0; v->store_did && s <= v->nregions; s++)
        if (v->store_did[s] >= 0)
            H5Dclose((hid_t)v->store_did[s]);
    raster_free(v->store_did);
    v->store_did = NULL;
}

static int kept_slots(raster_var *v)
{
    if (!v->store_did) {
        v->store_did = raster_reallocarray(NULL, v->nregions + 1,
                                           sizeof *v->store_did);
        if (!v->store_did)
            return -1;
        for (size_t k = 0; k <= v->nregions; k++)
            v->store_did[k] = -1;
    }
    return 0;
}

int64_t fileio_store_kept(raster_var *v, size_t s)
{
    if (kept_slots(v) != 0)
        return -1;
    if (v->store_did[s] < 0 && v->file->lean) {
        /* fileio_store keeps it, with the caller's reference more */
        hid_t d = (hid_t)fileio_store(v, s);
        if (d >= 0)
            H5Idec_ref(d);
    } else if (v->store_did[s] < 0) {
        v->store_did[s] = fileio_store(v, s);
    }
    return v->store_did[s];
}

int64_t fileio_store(raster_var *v, size_t s)
{
    if (v->file->lean) {
        char rel[48];
        if (v->store_cells[s] == 0)
            return -1;
        /* a lean file's store, opened by path, stays open (store_did) and
         * is handed out with a reference more, which the caller's H5Dclose
         * drops: the first read of a store opened it twice (its checks,
         * then its chunk index), a tenth of a point's first read */
        if (v->store_did && v->store_did[s] >= 0)
            return H5Iinc_ref((hid_t)v->store_did[s]) > 0
                       ? v->store_did[s]
                       : -1;
        fileio_store_path(v, s, rel, sizeof rel);
        hid_t d = (hid_t)fileio_var_dataset(v, rel);
        /* the slots come with the variable (lean.c, load_var) */
        if (d >= 0 && v->store_did && H5Iinc_ref(d) > 0)
            v->store_did[s] = d;
        return d;
    }
    if (v->store_var[s] < 0)
        return -1;
    /* the store variable (define.c, define_store) */
    return fileio_dataset(v->file, v->store_grp[s], "data");
}

/* 1 when did's type is the native one of elem bytes. */
static int native_type(hid_t did, size_t elem)
{
    hid_t type = H5Dget_type(did);
    hid_t native = type >= 0 ? H5Tget_native_type(type, H5T_DIR_ASCEND) : -1;
    int plain = native >= 0 && H5Tequal(type, native) > 0 &&
                H5Tget_size(type) == elem;
    if (native >= 0)
        H5Tclose(native);
    if (type >= 0)
        H5Tclose(type);
    return plain;
}

int fileio_plain(int64_t did, int64_t dcpl, size_t elem)
{
    return dcpl >= 0 && H5Pget_nfilters((hid_t)dcpl) == 0 &&
           native_type((hid_t)did, elem);
}

int64_t fileio_contiguous(int64_t did, size_t elem)
{
    haddr_t addr = H5Dget_offset((hid_t)did);
    return addr != HADDR_UNDEF && addr <= (haddr_t)INT64_MAX &&
                   native_type((hid_t)did, elem)
               ? (int64_t)addr
               : -1;
}

int fileio_filters(int64_t did, int64_t dcpl, size_t elem,
                   unsigned char *filt, int *nfilt)
{
    hid_t type = H5Dget_type((hid_t)did);
    hid_t native = type >= 0 ? H5Tget_native_type(type, H5T_DIR_ASCEND) : -1;
    int ok = dcpl >= 0 && native >= 0 && H5Tequal(type, native) > 0 &&
             H5Tget_size(type) == elem;
    int n = ok ? H5Pget_nfilters((hid_t)dcpl) : -1;
    unsigned seen = 0;
    ok = ok && n >= 1 && n <= FILEIO_MAX_FILTERS;
    for (int i = 0; ok && i < n; i++) {
        unsigned flags = 0, cd[4] = {0};
        size_t ncd = 4;
        char name[64];
        H5Z_filter_t id = H5Pget_filter2((hid_t)dcpl, (unsigned)i, &flags,
                                         &ncd, cd, sizeof name, name, NULL);
        /* each known filter once; shuffle by the element size HDF5
         * recorded for it */
        if ((id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE &&
             id != H5Z_FILTER_FLETCHER32) ||
            (seen & (1u << id)) ||
            (id == H5Z_FILTER_SHUFFLE && (ncd < 1 || cd[0] != elem)))
            ok = 0;
        else {
            seen |= 1u << id;
            filt[i] = (unsigned char)id;
        }
    }
    if (native >= 0)
        H5Tclose(native);
    if (type >= 0)
        H5Tclose(type);
    if (ok)
        *nfilt = n;
    return ok;
}

int fileio_holds(int64_t h5type, int xtype)
{
    hid_t type = (hid_t)h5type;
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    H5T_sign_t sign = cls == H5T_INTEGER ? H5Tget_sign(type) : H5T_SGN_ERROR;
    switch (xtype) {
    case NC_FLOAT: return cls == H5T_FLOAT && size == 4;
    case NC_DOUBLE: return cls == H5T_FLOAT && size == 8;
    case NC_BYTE: return size == 1 && sign == H5T_SGN_2;
    case NC_UBYTE: return size == 1 && sign == H5T_SGN_NONE;
    case NC_SHORT: return size == 2 && sign == H5T_SGN_2;
    case NC_USHORT: return size == 2 && sign == H5T_SGN_NONE;
    case NC_INT: return size == 4 && sign == H5T_SGN_2;
    case NC_UINT: return size == 4 && sign == H5T_SGN_NONE;
    case NC_INT64: return size == 8 && sign == H5T_SGN_2;
    case NC_UINT64: return size == 8 && sign == H5T_SGN_NONE;
    default: return -1;
    }
}

int64_t fileio_mem_type(int xtype)
{
    switch (xtype) {
    case NC_BYTE: return H5T_NATIVE_SCHAR;
    case NC_UBYTE: return H5T_NATIVE_UCHAR;
    case NC_SHORT: return H5T_NATIVE_SHORT;
    case NC_USHORT: return H5T_NATIVE_USHORT;
    case NC_INT: return H5T_NATIVE_INT;
    case NC_UINT: return H5T_NATIVE_UINT;
    case NC_INT64: return H5T_NATIVE_LLONG;
    case NC_UINT64: return H5T_NATIVE_ULLONG;
    case NC_FLOAT: return H5T_NATIVE_FLOAT;
    case NC_DOUBLE: return H5T_NATIVE_DOUBLE;
    default: return -1;
    }
}

int fileio_att(int64_t obj, const char *name, int xtype, void *buf,
                   size_t cap, size_t *n)
{
    /* H5Aexists first only where HDF5 would print the failed open of an
     * absent one: a second lookup by name, 7 K instructions (netCDF turns
     * the printing off at its start, and lean.c while it loads) */
    H5E_auto2_t efunc = NULL;
    void *edata;
    int quiet = H5Eget_auto2(H5E_DEFAULT, &efunc, &edata) >= 0 && !efunc;
    hid_t a = obj >= 0 && (quiet || H5Aexists((hid_t)obj, name) > 0)
                  ? H5Aopen((hid_t)obj, name, H5P_DEFAULT) : -1;
    hid_t type = a >= 0 ? H5Aget_type(a) : -1;
    hid_t space = a >= 0 ? H5Aget_space(a) : -1;
    hssize_t got = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    int ok = type >= 0 && got >= 1 && (size_t)got <= cap &&
             fileio_holds(type, xtype) == 1 &&
             H5Aread(a, (hid_t)fileio_mem_type(xtype), buf) >= 0;
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (a >= 0)
        H5Aclose(a);
    if (ok && n)
        *n = (size_t)got;
    return ok ? 0 : -1;
}

void fileio_close(raster_file *f)
{
    for (raster_var *v = f->vars; v; v = v->next)
        fileio_close_stores(v);
    /* munmap fails only for a range never mapped: nothing to undo */
    if (f->map && munmap(f->map, f->map_len) == 0)
        f->map = NULL;
    f->map = NULL;
    f->map_len = 0;
    f->map_tried = 0;
    f->map_loads = 0;
    atomic_store(&f->map_shrunk, 0);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->h5 >= 0)
        H5Fclose((hid_t)f->h5);
    f->h5 = -1;
    while (f->ninflaters > 0)
        unfilter_free(f->inflaters[--f->ninflaters]);
}

int fileio_mapping = 1;

static atomic_size_t map_hits;

size_t fileio_map_hits(void) { return atomic_load(&map_hits); }

int fileio_map_check(raster_file *f)
{
    struct stat st;
    if (!f->map)
        return RASTER_OK;
    if (fstat(f->fd, &st) == 0 && (uint64_t)st.st_size >= f->map_len)
        return RASTER_OK;
    /* the file shrank (or cannot be asked): the mapping's pages past its
     * end would kill the process (SIGBUS); preads report it instead. The
     * mapping stays until fileio_close: another thread may be copying. */
    atomic_store(&f->map_shrunk, 1);
    return RASTER_OK;
}

/* The mapping's read-ahead on faults: none while loads run. */
static void map_advise(raster_file *f, int delta)
{
    lazy_lock(f);
    int was = f->map_loads;
    f->map_loads += delta;
    if (f->map && (was == 0) != (f->map_loads == 0))
        (void)madvise(f->map, f->map_len,
                      f->map_loads > 0 ? MADV_RANDOM : MADV_NORMAL);
    lazy_unlock(f);
}

void fileio_map_load_begin(raster_file *f) { map_advise(f, 1); }

void fileio_map_load_end(raster_file *f) { map_advise(f, -1); }

/* f's mapping, made at the first call (NULL: none, or not to be used). */
static unsigned char *map_of(raster_file *f)
{
    if (f->writable || !fileio_mapping || atomic_load(&f->map_shrunk))
        return NULL;
    lazy_lock(f);
    if (!f->map_tried && f->fd >= 0) {
        f->map_tried = 1;
        struct stat st;
        if (fstat(f->fd, &st) == 0 && st.st_size > 0) {
            void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED,
                           f->fd, 0);
            if (m != MAP_FAILED) {
                f->map = m;
                f->map_len = (size_t)st.st_size;
                if (f->map_loads > 0)
                    (void)madvise(m, f->map_len, MADV_RANDOM);
            }
        }
    }
    unsigned char *map = f->map;
    lazy_unlock(f);
    return map;
}

int fileio_map_ready(raster_file *f) { return map_of(f) != NULL; }

const unsigned char *fileio_map(raster_file *f, off_t off, size_t len)
{
    unsigned char *map = off >= 0 ? map_of(f) : NULL;
    if (!map || (size_t)off > f->map_len || len > f->map_len - (size_t)off)
        return NULL;
#ifdef MADV_POPULATE_READ
    /* the range's pages mapped in one call rather than a fault at a time;
     * a kernel before 5.14 refuses it (EINVAL), and the copies then fault
     * them in: not asked again */
    static atomic_int populate = 1;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), lo = (size_t)off / pg * pg;
    if (atomic_load(&populate) &&
        madvise(map + lo, (size_t)off + len - lo, MADV_POPULATE_READ) != 0 &&
        errno == EINVAL)
        atomic_store(&populate, 0);
#endif
    atomic_fetch_add(&map_hits, 1);
    return map + off;
}

void fileio_map_release(raster_file *f, off_t off, size_t len)
{
    unsigned char *map = f->map;
    if (!map || off < 0 || (size_t)off >= f->map_len || len == 0)
        return;
    /* A fault (MADV_POPULATE_READ's too) maps the whole cached folio it
     * lands in, up to a page table's reach (2 MiB with 4 KiB pages): a
     * byte touched put 2 MiB in the resident set here (kernel 6.18, ext4).
     * Let go of those windows whole, or the set grows chunk after chunk
     * (the Indian basin's read: 24 MB more). A neighbour's pages let go
     * this way only fault again. */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t win = (uintptr_t)pg * (pg / sizeof(void *));
    uintptr_t base = (uintptr_t)map, end = base + f->map_len;
    uintptr_t lo = (base + (uintptr_t)off) / win * win;
    uintptr_t hi = (base + (uintptr_t)off + len + win - 1) / win * win;
    if (lo < base)
        lo = base;
    if (hi > end)
        hi = (end + pg - 1) / pg * pg;
    /* fails only for a range not mapped: its pages were never resident */
    if (madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        return;
}

/* pread of exactly `len` bytes at `off` (EINTR and short reads retried). */
int fileio_pread(int fd, unsigned char *buf, size_t len, off_t off,
                      const char *name)
{
    while (len > 0) {
        ssize_t got = pread(fd, buf, len, off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return raster_fail(RASTER_EIO, "reading %s: %s", name,
                               strerror(errno));
        if (got == 0)
            return raster_fail(
                RASTER_EIO, "reading %s: file ends early (truncated?)", name);
        buf += got;
        len -= (size_t)got;
        off += got;
    }
    return RASTER_OK;
}

int fileio_page_cached(int fd, off_t off)
{
#ifdef RWF_NOWAIT
    unsigned char byte;
    struct iovec iov = {&byte, 1};
    return off >= 0 && preadv2(fd, &iov, 1, off, RWF_NOWAIT) == 1;
#else
    (void)fd, (void)off;
    return 0;
#endif
}

void fileio_thread_quiet(void)
{
    hbool_t safe = 0;
    /* without thread safety the setting is the process's (the program's
     * own): left alone */
    if (H5is_library_threadsafe(&safe) >= 0 && safe)
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

int fileio_dataset_state(int grpid, const char *varname)
{
    size_t plen, glen;
    char path[4096], dset[4096];
    if (nc_inq_path(grpid, &plen, NULL) != NC_NOERR || plen == 0 ||
        plen >= sizeof path || nc_inq_path(grpid, NULL, path) != NC_NOERR ||
        nc_inq_grpname_full(grpid, &glen, NULL) != NC_NOERR ||
        glen + strlen(varname) + 2 > sizeof dset ||
        nc_inq_grpname_full(grpid, NULL, dset) != NC_NOERR)
        return -1;
    path[plen] = '\0';
    if (strcmp(dset, "/") != 0)
        strcat(dset, "/");
    strcat(dset, varname);
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int result = -1;
    /* the file is open in netCDF already: HDF5 shares it, so what netCDF
     * wrote but did not flush is seen too */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1;
    if (fapl >= 0) {
        H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI);
        fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        if (fid < 0) {
            H5Pset_fclose_degree(fapl, H5F_CLOSE_WEAK);
            fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        }
        H5Pclose(fapl);
    }
    if (fid >= 0) {
        /* no link of that name: netCDF has not created the dataset (a
         * group not yet created either: HDF5 cannot tell, -1) */
        htri_t there = H5Lexists(fid, dset, H5P_DEFAULT);
        hid_t did = there > 0 ? H5Dopen2(fid, dset, H5P_DEFAULT) : -1;
        if (there == 0)
            result = FILEIO_NOT_CREATED;
        if (did >= 0) {
            result = H5Dget_storage_size(did) > 0 ? FILEIO_HAS_DATA
                                                  : FILEIO_CREATED;
            H5Dclose(did);
        }
        H5Fclose(fid);
    }
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return result;
}

void fileio_group_name(int32_t id, char *buf, size_t len)
{
    if (id < 0)
        snprintf(buf, len, "region_m%lld", -(long long)id);
    else
        snprintf(buf, len, "region_%d", (int)id);
}

void fileio_store_path(const raster_var *v, size_t s, char *buf,
                        size_t len)
{
    char grp[32] = "Mixed_Chunks";
    if (s < v->nregions)
        fileio_group_name(v->regions[s].id, grp, sizeof grp);
    snprintf(buf, len, "%s/data", grp);
}

/* Extent of dataset d: rank and dims; -1 when unreadable. */
int fileio_extent(hid_t d, hsize_t *dims, hsize_t *maxdims)
{
    hid_t space = H5Dget_space(d);
    int rank = space >= 0 &&
               H5Sget_simple_extent_ndims(space) <= RASTER_MAX_DIMS + 1
                   ? H5Sget_simple_extent_dims(space, dims, maxdims)
                   : -1;
    if (space >= 0)
        H5Sclose(space);
    return rank;
}

/* 1 when HDF5 type `type` holds one of types[0..n). */
int fileio_holds_any(hid_t type, const int *types, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fileio_holds(type, types[i]) == 1)
            return 1;
    return 0;
}

/* Dataset `name` of v's group, H5Dopen2 with HDF5's printing off. */
static hid_t var_dataset(const raster_var *v, const char *name)
{
    return (hid_t)fileio_var_dataset((raster_var *)v, name);
}

/* 2-D dataset `name` of v's group, of one of the netCDF types[] on disk,
 * with want_cols columns (0: any): its id and extent, or -1. HDF5's
 * printing is the caller's to turn off. */
static int is_2d(hid_t d, const int *types, size_t ntypes, size_t want_cols,
                 hsize_t *dims)
{
    hid_t type = d >= 0 ? H5Dget_type(d) : -1;
    hsize_t maxdims[RASTER_MAX_DIMS + 1], ext[RASTER_MAX_DIMS + 1];
    int ok = type >= 0 && fileio_holds_any(type, types, ntypes) &&
             fileio_extent(d, ext, maxdims) == 2 &&
             (want_cols == 0 || ext[1] == want_cols);
    if (type >= 0)
        H5Tclose(type);
    if (ok) {
        dims[0] = ext[0];
        dims[1] = ext[1];
    }
    return ok;
}

static hid_t open_2d(const raster_var *v, const char *name, const int *types,
                     size_t ntypes, size_t want_cols, hsize_t *dims)
{
    hid_t d = var_dataset(v, name);
    if (d >= 0 && !is_2d(d, types, ntypes, want_cols, dims)) {
        H5Dclose(d);
        return -1;
    }
    return d;
}

/* The kept dataset of table `name` of v (fileio_table_kept), or -1. */
static hid_t kept_table(const raster_var *v, const char *name)
{
    return v->chunks_did > 0 && strcmp(name, "chunks") == 0
               ? (hid_t)v->chunks_did
               : -1;
}

int64_t fileio_table_kept(raster_var *v, const char *name)
{
    /* only the `chunks` table of a lean read-only file: a point's first
     * read opens it for its checksums and then reads its rows (tiles.c,
     * the partial index); HDF5's printing is the caller's to turn off */
    if (strcmp(name, "chunks") != 0 || !v->file->lean || v->file->writable)
        return -1;
    lazy_lock(v->file); /* recursive: the index loads hold it already */
    if (v->chunks_did <= 0) {
        hid_t d = var_dataset(v, name);
        v->chunks_did = d > 0 ? d : 0;
    }
    int64_t d = v->chunks_did > 0 ? v->chunks_did : -1;
    lazy_unlock(v->file);
    return d;
}

/* Whole rows [y0, y0+ny) of table d (nx int64 per row) of a read-only
 * file read with pread into buf when HDF5 stores them as plain bytes in
 * one piece: 1 when read. H5Dread of a few rows cost about 100 K
 * instructions, a tenth of a point's first read (tiles.c, load_region). */
static int table_direct(const raster_var *v, hid_t d, size_t y0, size_t ny,
                        size_t nx, void *buf)
{
    const raster_file *f = v->file;
    if (f->writable || f->fd < 0)
        return 0;
    int64_t addr = fileio_contiguous(d, sizeof(long long));
    size_t row = nx * sizeof(long long);
    int ok = addr >= 0 &&
             (uint64_t)(y0 + ny) <= ((uint64_t)INT64_MAX - addr) / row;
    if (!ok)
        return 0;
    /* a failed pread leaves the table to HDF5, which reports it */
    return fileio_pread(f->fd, buf, ny * row, (off_t)(addr + y0 * row),
                        "a table") == RASTER_OK;
}

/* Reads the block [y0, y0+ny) x [x0, x0+nx) of open_2d's dataset `name`
 * into buf, of type mem in memory, checked to lie inside it. */
static int read_block(const raster_var *v, const char *name,
                      const int *types, size_t ntypes, hid_t mem,
                      size_t want_cols, size_t y0, size_t ny, size_t x0,
                      size_t nx, void *buf)
{
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hsize_t dims[2];
    hid_t kept = kept_table(v, name);
    hid_t d = kept < 0 ? open_2d(v, name, types, ntypes, want_cols, dims)
              : is_2d(kept, types, ntypes, want_cols, dims) ? kept
                                                            : -1;
    int rc = d >= 0 && ny <= dims[0] && y0 <= dims[0] - ny && nx <= dims[1] &&
                     x0 <= dims[1] - nx
                 ? RASTER_OK
                 : raster_fail(RASTER_EFORMAT, "%s: %s of the wrong type or "
                               "shape", v->name, name);
    if (rc == RASTER_OK && ny > 0 && nx > 0 && nx == dims[1] &&
        mem == H5T_NATIVE_LLONG && table_direct(v, d, y0, ny, nx, buf)) {
        /* read with pread */
    } else if (rc == RASTER_OK && ny > 0 && nx > 0) {
        hsize_t start[2] = {y0, x0}, count[2] = {ny, nx};
        hid_t fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
        if (fs < 0 || ms < 0 ||
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count,
                                NULL) < 0 ||
            H5Dread(d, mem, ms, fs, H5P_DEFAULT, buf) < 0)
            rc = raster_fail(RASTER_EFORMAT, "%s: reading %s failed",
                             v->name, name);
        if (ms >= 0)
            H5Sclose(ms);
        if (fs >= 0)
            H5Sclose(fs);
    }
    if (d >= 0 && d != kept)
        H5Dclose(d);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return rc;
}

static const int int64[] = {NC_INT64};

int fileio_table_rows(const raster_var *v, const char *name, size_t fields,
                    size_t *n)
{
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hsize_t dims[2];
    hid_t d = open_2d(v, name, int64, 1, fields, dims);
    if (d >= 0) {
        *n = (size_t)dims[0];
        H5Dclose(d);
    }
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return d >= 0 ? RASTER_OK
                  : raster_fail(RASTER_EFORMAT, "%s: table %s missing or of "
                                "the wrong type or shape", v->name, name);
}

int fileio_table(const raster_var *v, const char *name, size_t fields,
               size_t first, size_t n, long long *rows)
{
    return read_block(v, name, int64, 1, H5T_NATIVE_LLONG, fields, first, n,
                      0, fields, rows);
}


int fileio_mask_rows(const raster_var *v, size_t y0, size_t ny, size_t x0,
                   size_t nx, int *buf)
{
    return read_block(v, "mask", mask_stored_types, MASK_STORED_NTYPES,
                      H5T_NATIVE_INT,
                      v->nx, y0, ny, x0, nx, buf);
}

/* ---- the span cache ------------------------------------------------------ */

/* A read-only file keeps what its thin reads pread (spans.c's staged
 * spans, maskio.c's mask rows): a band a cell or a few wide pays a pread
 * per tile span and plane, each copying the whole span (about 100 times
 * the values a one-column band needs), and mask rows for its mixed tiles,
 * every time it is read, where netCDF's chunk cache keeps the chunks in
 * the process after the first read. Up to FILEIO_KEPT_BYTES per file,
 * emptied whole when full; region reads (large) never turn it on. */
#define KEPT_BYTES ((size_t)32 << 20)
#define KEPT_SLOTS0 64    /* slots at first (a power of two), doubled */
#define KEPT_SLOTS 8192   /* up to this; filled at most half */

typedef struct kept_slot {
    off_t off;
    size_t len;
    unsigned char *buf; /* NULL: empty */
} kept_slot;

struct span_cache {
    pthread_mutex_t mu;
    size_t bytes, n, cap; /* cap slots, a power of two */
    kept_slot *slot;
};

static atomic_size_t kept_hits;

size_t fileio_kept_hits(void) { return atomic_load(&kept_hits); }

static void kept_empty(struct span_cache *c)
{
    for (size_t i = 0; i < c->cap; i++) {
        raster_free(c->slot[i].buf);
        c->slot[i].buf = NULL;
    }
    c->bytes = c->n = 0;
}

void fileio_cache_free(raster_file *f)
{
    if (!f->scache)
        return;
    kept_empty(f->scache);
    pthread_mutex_destroy(&f->scache->mu);
    raster_free(f->scache->slot);
    raster_free(f->scache);
    f->scache = NULL;
}

int fileio_cache_on(raster_file *f)
{
    int rc = RASTER_OK;
    lazy_lock(f);
    if (!f->scache) {
        struct span_cache *c = raster_calloc(1, sizeof *c);
        if (c && !(c->slot = raster_calloc(KEPT_SLOTS0, sizeof *c->slot))) {
            raster_free(c);
            c = NULL;
        }
        if (c && pthread_mutex_init(&c->mu, NULL) != 0) {
            raster_free(c->slot);
            raster_free(c);
            c = NULL;
        }
        if (c)
            c->cap = KEPT_SLOTS0;
        f->scache = c;
        if (!c)
            rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                             f->path ? f->path : "a file");
    }
    lazy_unlock(f);
    return rc;
}

/* The slot for (off, len): the one holding it, or the empty one where it
 * would go. Under c->mu. */
static kept_slot *kept_find(struct span_cache *c, off_t off, size_t len)
{
    uint64_t h = (uint64_t)off * 0x9E3779B97F4A7C15u;
    h ^= h >> 29;
    for (size_t i = 0;; i++) {
        kept_slot *s = &c->slot[(h + i) & (c->cap - 1)];
        if (!s->buf || (s->off == off && s->len == len))
            return s;
    }
}

/* Doubles c's slots, every kept span moved over. Under c->mu. */
static int kept_grow(struct span_cache *c)
{
    kept_slot *old = c->slot;
    size_t ocap = c->cap;
    kept_slot *slot = raster_calloc(2 * ocap, sizeof *slot);
    if (!slot)
        return raster_fail(RASTER_ENOMEM, "out of memory keeping a span");
    c->slot = slot;
    c->cap = 2 * ocap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].buf)
            *kept_find(c, old[i].off, old[i].len) = old[i];
    raster_free(old);
    return RASTER_OK;
}

const unsigned char *fileio_kept(raster_file *f, off_t off, size_t len)
{
    struct span_cache *c = f->scache;
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->mu);
    kept_slot *s = kept_find(c, off, len);
    if (!s->buf) {
        pthread_mutex_unlock(&c->mu);
        return NULL;
    }
    atomic_fetch_add(&kept_hits, 1);
    return s->buf;
}

void fileio_kept_release(raster_file *f)
{
    pthread_mutex_unlock(&f->scache->mu);
}

static int keep(raster_file *f, off_t off, size_t len,
                const unsigned char *bytes);

int fileio_keep(raster_file *f, off_t off, size_t len,
                const unsigned char *bytes)
{
    return len > FILEIO_KEPT_SPAN ? RASTER_OK : keep(f, off, len, bytes);
}

int fileio_keep_chunk(raster_file *f, off_t off, size_t len,
                      const unsigned char *bytes)
{
    return len > FILEIO_KEPT_CHUNK ? RASTER_OK : keep(f, off, len, bytes);
}

static int keep(raster_file *f, off_t off, size_t len,
                const unsigned char *bytes)
{
    struct span_cache *c = f->scache;
    if (!c)
        return RASTER_OK;
    unsigned char *copy = raster_malloc(len);
    if (!copy)
        return raster_fail(RASTER_ENOMEM, "out of memory keeping a span");
    memcpy(copy, bytes, len);
    pthread_mutex_lock(&c->mu);
    int rc = RASTER_OK;
    if (c->n + 1 > c->cap / 2 && c->cap < KEPT_SLOTS)
        rc = kept_grow(c);
    if (c->bytes + len > KEPT_BYTES || c->n + 1 > c->cap / 2)
        kept_empty(c);
    kept_slot *s = kept_find(c, off, len);
    if (s->buf) { /* another thread kept it meanwhile */
        raster_free(copy);
    } else {
        *s = (kept_slot){off, len, copy};
        c->bytes += len;
        c->n++;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int fileio_pread_kept(raster_file *f, unsigned char *buf, size_t len,
                      off_t off, const char *name)
{
    const unsigned char *k = len <= FILEIO_KEPT_SPAN ? fileio_kept(f, off, len)
                                                     : NULL;
    if (k) {
        memcpy(buf, k, len);
        fileio_kept_release(f);
        return RASTER_OK;
    }
    int rc = fileio_pread(f->fd, buf, len, off, name);
    return rc ? rc : fileio_keep(f, off, len, buf);
}
