/*
 * ncapi.h - the lists of netCDF-C entry points the shim wraps: the data
 * family (generated below) and the other calls (NCAPI_CALLS). shim.c
 * defines what each wrapper does; route.c, the preload library itself,
 * defines the exported entry points from these lists and sends each call to
 * the libnetcdf copy its caller would have reached. A wrapper added to shim.c
 * must be added here too (test_preload.sh checks that the two export lists
 * agree).
 *
 * netCDF-C's typed calls do not funnel through one function (nc_put_var_float
 * never passes through nc_put_vara), so every member of the family must be
 * wrapped. They are generated from two lists: the memory types (suffix, C
 * type, netCDF type of the memory) and the five access kinds, for both
 * directions: 2 x 5 x (14 typed + untyped) = 150 functions.
 */
#ifndef RASTER_NCAPI_H
#define RASTER_NCAPI_H

#include <limits.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <netcdf_mem.h>
#if defined(RASTER_MPI) && RASTER_MPI
#include <netcdf_par.h>
#endif

/* nc_put_var_long and friends move C longs: 64-bit on LP64. */
#if LONG_MAX > INT_MAX
#define NCAPI_LONG_TYPE NC_INT64
#else
#define NCAPI_LONG_TYPE NC_INT
#endif

/* X(suffix, C type, netCDF memory type) */
#define NCAPI_MEMTYPES(X)                                                     \
    X(_text, char, NC_CHAR)                                                   \
    X(_schar, signed char, NC_BYTE)                                           \
    X(_uchar, unsigned char, NC_UBYTE)                                        \
    X(_short, short, NC_SHORT)                                                \
    X(_int, int, NC_INT)                                                      \
    X(_long, long, NCAPI_LONG_TYPE)                                           \
    X(_float, float, NC_FLOAT)                                                \
    X(_double, double, NC_DOUBLE)                                             \
    X(_ubyte, unsigned char, NC_UBYTE)                                        \
    X(_ushort, unsigned short, NC_USHORT)                                     \
    X(_uint, unsigned int, NC_UINT)                                           \
    X(_longlong, long long, NC_INT64)                                         \
    X(_ulonglong, unsigned long long, NC_UINT64)                              \
    X(_string, char *, NC_STRING)                                             \
    X(, void, NC_NAT) /* the untyped calls: the variable's own type */

/* The five access kinds: their extra parameters after (ncid, varid), the
 * same as arguments, and how they become shape, start, count, stride, imap
 * and whether the call is a varm one. */
#define NCAPI_KIND_var_PARAMS
#define NCAPI_KIND_var_ARGS
#define NCAPI_KIND_var_SHAPE NCAPI_WHOLE, NULL, NULL, NULL, NULL, 0

#define NCAPI_KIND_var1_PARAMS , const size_t *indexp
#define NCAPI_KIND_var1_ARGS , indexp
#define NCAPI_KIND_var1_SHAPE NCAPI_ONE, indexp, NULL, NULL, NULL, 0

#define NCAPI_KIND_vara_PARAMS , const size_t *startp, const size_t *countp
#define NCAPI_KIND_vara_ARGS , startp, countp
#define NCAPI_KIND_vara_SHAPE NCAPI_BOX, startp, countp, NULL, NULL, 0

#define NCAPI_KIND_vars_PARAMS                                                \
    , const size_t *startp, const size_t *countp, const ptrdiff_t *stridep
#define NCAPI_KIND_vars_ARGS , startp, countp, stridep
#define NCAPI_KIND_vars_SHAPE NCAPI_BOX, startp, countp, stridep, NULL, 0

#define NCAPI_KIND_varm_PARAMS                                                \
    , const size_t *startp, const size_t *countp, const ptrdiff_t *stridep,  \
        const ptrdiff_t *imapp
#define NCAPI_KIND_varm_ARGS , startp, countp, stridep, imapp
#define NCAPI_KIND_varm_SHAPE NCAPI_BOX, startp, countp, stridep, imapp, 1

/* X(dir, kind, sfx, ctype, memtype) over the ten data calls of one memory
 * type: put and get of var, var1, vara, vars and varm */
#define NCAPI_DATA_CALLS(X, sfx, ctype, memtype)                            \
    X(put, var, sfx, ctype, memtype) X(put, var1, sfx, ctype, memtype)        \
    X(put, vara, sfx, ctype, memtype) X(put, vars, sfx, ctype, memtype)       \
    X(put, varm, sfx, ctype, memtype) X(get, var, sfx, ctype, memtype)        \
    X(get, var1, sfx, ctype, memtype) X(get, vara, sfx, ctype, memtype)       \
    X(get, vars, sfx, ctype, memtype) X(get, varm, sfx, ctype, memtype)

/* X(name, (parameters), (arguments)) for nc_get_att<sfx> of one memory
 * type: the attribute-reading family, generated like the data family. */
#define NCAPI_GET_ATT(X, sfx, ctype, memtype)                                 \
    X(nc_get_att##sfx, (int ncid, int varid, const char *name, ctype *value), \
      (ncid, varid, name, value))

/* The Fortran interface's chunking call; libnetcdf exports it but netcdf.h
 * does not declare it. */
int nc_def_var_chunking_ints(int ncid, int varid, int contiguous,
                             int *chunksizesp);
int nc_inq_var_chunking_ints(int ncid, int varid, int *storagep,
                             int *chunksizesp);

/* X(name, (parameters), (arguments)) for every wrapped call outside the data
 * family; all return int. The opening calls come first, each with a `path`
 * and an `ncidp` parameter (route.c looks at the files they open). */
#define NCAPI_CALLS(X) NCAPI_OPEN_CALLS(X) NCAPI_OTHER_CALLS(X)

#define NCAPI_OPEN_CALLS(X)                                                   \
    X(nc_open, (const char *path, int mode, int *ncidp), (path, mode, ncidp)) \
    X(nc__open, (const char *path, int mode, size_t *chunksizehintp,          \
                 int *ncidp),                                                 \
      (path, mode, chunksizehintp, ncidp))                                    \
    X(nc__open_mp, (const char *path, int mode, int basepe,                   \
                    size_t *chunksizehintp, int *ncidp),                      \
      (path, mode, basepe, chunksizehintp, ncidp))                            \
    X(nc_open_mem, (const char *path, int mode, size_t size, void *memory,    \
                    int *ncidp),                                              \
      (path, mode, size, memory, ncidp))                                      \
    X(nc_open_memio, (const char *path, int mode, NC_memio *info,             \
                      int *ncidp),                                            \
      (path, mode, info, ncidp))

#define NCAPI_OTHER_CALLS(X)                                                  \
    X(nc_create, (const char *path, int cmode, int *ncidp),                   \
      (path, cmode, ncidp))                                                   \
    X(nc__create, (const char *path, int cmode, size_t initialsz,             \
                   size_t *chunksizehintp, int *ncidp),                       \
      (path, cmode, initialsz, chunksizehintp, ncidp))                        \
    X(nc__create_mp, (const char *path, int cmode, size_t initialsz,          \
                      int basepe, size_t *chunksizehintp, int *ncidp),        \
      (path, cmode, initialsz, basepe, chunksizehintp, ncidp))                \
    X(nc_create_mem, (const char *path, int mode, size_t initialsize,         \
                      int *ncidp),                                            \
      (path, mode, initialsize, ncidp))                                       \
    X(nc_close, (int ncid), (ncid))                                           \
    X(nc_abort, (int ncid), (ncid))                                           \
    X(nc_enddef, (int ncid), (ncid))                                          \
    X(nc__enddef, (int ncid, size_t h_minfree, size_t v_align,                \
                   size_t v_minfree, size_t r_align),                         \
      (ncid, h_minfree, v_align, v_minfree, r_align))                         \
    X(nc_sync, (int ncid), (ncid))                                            \
    X(nc_def_var, (int ncid, const char *name, nc_type xtype, int ndims,      \
                   const int *dimidsp, int *varidp),                          \
      (ncid, name, xtype, ndims, dimidsp, varidp))                            \
    X(nc_def_var_chunking, (int ncid, int varid, int storage,                 \
                            const size_t *chunksizesp),                       \
      (ncid, varid, storage, chunksizesp))                                    \
    X(nc_def_var_chunking_ints, (int ncid, int varid, int contiguous,         \
                                 int *chunksizesp),                           \
      (ncid, varid, contiguous, chunksizesp))                                 \
    X(nc_inq_var_chunking, (int ncid, int varid, int *storagep,               \
                            size_t *chunksizesp),                             \
      (ncid, varid, storagep, chunksizesp))                                   \
    X(nc_inq_var_chunking_ints, (int ncid, int varid, int *storagep,          \
                                 int *chunksizesp),                           \
      (ncid, varid, storagep, chunksizesp))                                   \
    X(nc_inq_grps, (int ncid, int *numgrps, int *ncids),                      \
      (ncid, numgrps, ncids))                                                 \
    X(nc_inq_grp_ncid, (int ncid, const char *name, int *grp_ncid),           \
      (ncid, name, grp_ncid))                                                 \
    X(nc_inq_ncid, (int ncid, const char *name, int *grp_ncid),               \
      (ncid, name, grp_ncid))                                                 \
    X(nc_inq_grp_full_ncid, (int ncid, const char *full_name, int *grp_ncid), \
      (ncid, full_name, grp_ncid))                                            \
    X(nc_put_att, (int ncid, int varid, const char *name, nc_type xtype,      \
                   size_t len, const void *op),                               \
      (ncid, varid, name, xtype, len, op))                                    \
    X(nc_rename_var, (int ncid, int varid, const char *name),                 \
      (ncid, varid, name))                                                    \
    X(nc_def_grp, (int parent_ncid, const char *name, int *new_ncid),         \
      (parent_ncid, name, new_ncid))                                          \
    X(nc_rename_grp, (int grpid, const char *name), (grpid, name))            \
    X(nc_def_compound, (int ncid, size_t size, const char *name,              \
                        nc_type *typeidp),                                    \
      (ncid, size, name, typeidp))                                            \
    X(nc_def_vlen, (int ncid, const char *name, nc_type base_typeid,          \
                    nc_type *xtypep),                                         \
      (ncid, name, base_typeid, xtypep))                                      \
    X(nc_def_enum, (int ncid, nc_type base_typeid, const char *name,          \
                    nc_type *typeidp),                                        \
      (ncid, base_typeid, name, typeidp))                                     \
    X(nc_def_opaque, (int ncid, size_t size, const char *name,                \
                      nc_type *xtypep),                                       \
      (ncid, size, name, xtypep))                                             \
    X(nc_def_dim, (int ncid, const char *name, size_t len, int *idp),         \
      (ncid, name, len, idp))                                                 \
    X(nc_inq_dimid, (int ncid, const char *name, int *idp),                   \
      (ncid, name, idp))                                                      \
    X(nc_inq_dim, (int ncid, int dimid, char *name, size_t *lenp),            \
      (ncid, dimid, name, lenp))                                              \
    X(nc_inq_dimname, (int ncid, int dimid, char *name),                      \
      (ncid, dimid, name))                                                    \
    X(nc_inq_dimlen, (int ncid, int dimid, size_t *lenp),                     \
      (ncid, dimid, lenp))                                                    \
    X(nc_rename_dim, (int ncid, int dimid, const char *name),                 \
      (ncid, dimid, name))                                                    \
    X(nc_inq_dimids, (int ncid, int *ndims, int *dimids,                      \
                      int include_parents),                                   \
      (ncid, ndims, dimids, include_parents))                                 \
    X(nc_inq_unlimdims, (int ncid, int *nunlimdimsp, int *unlimdimidsp),      \
      (ncid, nunlimdimsp, unlimdimidsp))                                      \
    X(nc_inq_unlimdim, (int ncid, int *unlimdimidp), (ncid, unlimdimidp))     \
    X(nc_inq, (int ncid, int *ndimsp, int *nvarsp, int *nattsp,               \
               int *unlimdimidp),                                             \
      (ncid, ndimsp, nvarsp, nattsp, unlimdimidp))                            \
    X(nc_inq_var, (int ncid, int varid, char *name, nc_type *xtypep,          \
                   int *ndimsp, int *dimidsp, int *nattsp),                   \
      (ncid, varid, name, xtypep, ndimsp, dimidsp, nattsp))                   \
    X(nc_inq_varname, (int ncid, int varid, char *name), (ncid, varid, name))  \
    X(nc_inq_vartype, (int ncid, int varid, nc_type *xtypep),                 \
      (ncid, varid, xtypep))                                                  \
    X(nc_inq_varndims, (int ncid, int varid, int *ndimsp),                    \
      (ncid, varid, ndimsp))                                                  \
    X(nc_inq_vardimid, (int ncid, int varid, int *dimidsp),                   \
      (ncid, varid, dimidsp))                                                 \
    X(nc_def_var_deflate, (int ncid, int varid, int shuffle, int deflate,     \
                           int deflate_level),                                \
      (ncid, varid, shuffle, deflate, deflate_level))                         \
    X(nc_def_var_fletcher32, (int ncid, int varid, int fletcher32),           \
      (ncid, varid, fletcher32))                                              \
    X(nc_def_var_filter, (int ncid, int varid, unsigned int id,               \
                          size_t nparams, const unsigned int *params),        \
      (ncid, varid, id, nparams, params))                                     \
    X(nc_def_var_quantize, (int ncid, int varid, int quantize_mode, int nsd), \
      (ncid, varid, quantize_mode, nsd))                                      \
    X(nc_inq_var_filter_ids, (int ncid, int varid, size_t *nfiltersp,         \
                              unsigned int *ids),                             \
      (ncid, varid, nfiltersp, ids))                                          \
    X(nc_inq_var_filter_info, (int ncid, int varid, unsigned int id,          \
                               size_t *nparamsp, unsigned int *params),       \
      (ncid, varid, id, nparamsp, params))                                    \
    X(nc_inq_var_filter, (int ncid, int varid, unsigned int *idp,             \
                          size_t *nparamsp, unsigned int *params),            \
      (ncid, varid, idp, nparamsp, params))                                   \
    X(nc_inq_varnatts, (int ncid, int varid, int *nattsp),                    \
      (ncid, varid, nattsp))                                                  \
    X(nc_inq_attname, (int ncid, int varid, int attnum, char *name),          \
      (ncid, varid, attnum, name))                                            \
    X(nc_inq_attid, (int ncid, int varid, const char *name, int *idp),        \
      (ncid, varid, name, idp))                                               \
    X(nc_inq_att, (int ncid, int varid, const char *name, nc_type *xtypep,    \
                   size_t *lenp),                                             \
      (ncid, varid, name, xtypep, lenp))                                      \
    X(nc_inq_atttype, (int ncid, int varid, const char *name,                 \
                       nc_type *xtypep),                                      \
      (ncid, varid, name, xtypep))                                            \
    X(nc_inq_attlen, (int ncid, int varid, const char *name, size_t *lenp),   \
      (ncid, varid, name, lenp))                                              \
    X(nc_del_att, (int ncid, int varid, const char *name),                    \
      (ncid, varid, name))                                                    \
    X(nc_rename_att, (int ncid, int varid, const char *name,                  \
                      const char *newname),                                   \
      (ncid, varid, name, newname))                                           \
    X(nc_copy_att, (int ncid_in, int varid_in, const char *name,              \
                    int ncid_out, int varid_out),                             \
      (ncid_in, varid_in, name, ncid_out, varid_out))                         \
    NCAPI_PAR_CALLS(X)

/* The parallel calls, wrapped by the MPI flavour only (shim_mpi.inc). */
#if defined(RASTER_MPI) && RASTER_MPI
#define NCAPI_PAR_CALLS(X)                                                    \
    X(nc_create_par, (const char *path, int cmode, MPI_Comm comm,             \
                      MPI_Info info, int *ncidp),                             \
      (path, cmode, comm, info, ncidp))                                       \
    X(nc_open_par, (const char *path, int mode, MPI_Comm comm,                \
                    MPI_Info info, int *ncidp),                               \
      (path, mode, comm, info, ncidp))                                        \
    X(nc_create_par_fortran, (const char *path, int cmode, int comm,          \
                              int info, int *ncidp),                          \
      (path, cmode, comm, info, ncidp))                                       \
    X(nc_open_par_fortran, (const char *path, int mode, int comm, int info,   \
                            int *ncidp),                                      \
      (path, mode, comm, info, ncidp))                                        \
    X(nc_var_par_access, (int ncid, int varid, int par_access),               \
      (ncid, varid, par_access))
#else
#define NCAPI_PAR_CALLS(X)
#endif

#endif
