/*
 * route.c - libraster_preload.so itself: the exported netCDF-C entry points
 * of the shim, each of which sends its call to the libnetcdf copy its caller
 * would have reached without the shim.
 *
 * Why a separate, netCDF-free library: everything an LD_PRELOAD library
 * depends on joins the global lookup scope, ahead of libraries a program
 * later opens with RTLD_LOCAL. A PyPI wheel (netCDF4, h5py) carries its own
 * libnetcdf and libhdf5 and opens them RTLD_LOCAL; if the preload library
 * linked the system libnetcdf, the wheel's references to nc_* and H5* (even
 * ones the shim never wraps) would bind to the system copies and the
 * program would crash mixing two libraries' state. So this library links
 * only libc; the shim proper (shim.c, files.c, config.c, with libraster,
 * the system libnetcdf and libhdf5) is the separate libraster_shim.so,
 * opened RTLD_LOCAL on first need, and only when a caller's libnetcdf is
 * the system one raster was built against (RASTER_NETCDF_PATH).
 *
 * Routing: a wrapper looks up its return address in a small lock-free table
 * of known callers (address range of the calling object -> its libnetcdf
 * copy). A new caller is resolved once, under a lock: its copy is the first
 * nc_inq_libvers in the global scope (what every object reaches first) or,
 * failing that, in the caller's own dependency tree (dlopen(RTLD_NOLOAD) +
 * dlsym on its handle: how an RTLD_LOCAL library sees its libnetcdf). The
 * calls of libraster, of the shim core, of a libnetcdf and of a libhdf5
 * are netCDF's own business: they go straight to the copy's functions.
 * Only the program's calls (and other libraries') through the system copy
 * go to the same-named wrapper in libraster_shim.so; calls through any
 * other copy go straight to that copy's function, untouched. Every call
 * made on a thread while one of the first two kinds runs goes straight to
 * netCDF too (inside_depth, below).
 */
#include <dlfcn.h>
#include <link.h>
#include <netcdf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ncapi.h"

#ifndef RASTER_NETCDF_PATH
#error "RASTER_NETCDF_PATH (the libnetcdf raster links) must be defined"
#endif
#ifndef RASTER_SHIM_CORE
#error "RASTER_SHIM_CORE (file name of the shim core library) must be defined"
#endif

#define SHIM_API __attribute__((visibility("default")))

/* ---- the wrapped functions, by index ------------------------------------ */

#define NCAPI_CONST_put const
#define NCAPI_CONST_get

/* ROUTE_DATA(dir, kind, sfx, ctype, memtype) over the ten data calls of one
 * memory type; ROUTE_DATA is redefined for each use. */
#define ROUTE_DATA_KINDS(sfx, ctype, memtype)                                 \
    NCAPI_DATA_CALLS(ROUTE_DATA, sfx, ctype, memtype)

/* ROUTE_ATT(name, params, args) over nc_get_att of one memory type;
 * ROUTE_ATT is redefined for each use, as ROUTE_DATA. */
#define ROUTE_ATTS(sfx, ctype, memtype)                                       \
    NCAPI_GET_ATT(ROUTE_ATT, sfx, ctype, memtype)

#define ROUTE_CALL_ENUM(name, params, args) FN_##name,
#define ROUTE_DATA(dir, kind, sfx, ctype, memtype) FN_nc_##dir##_##kind##sfx,
#define ROUTE_ATT ROUTE_CALL_ENUM
enum {
    NCAPI_CALLS(ROUTE_CALL_ENUM)
    NCAPI_MEMTYPES(ROUTE_DATA_KINDS)
    NCAPI_MEMTYPES(ROUTE_ATTS)
    FN_COUNT
};
#undef ROUTE_DATA
#undef ROUTE_ATT

#define ROUTE_CALL_NAME(name, params, args) #name,
#define ROUTE_DATA(dir, kind, sfx, ctype, memtype) "nc_" #dir "_" #kind #sfx,
#define ROUTE_ATT ROUTE_CALL_NAME
static const char *const fn_name[FN_COUNT] = {
    NCAPI_CALLS(ROUTE_CALL_NAME)
    NCAPI_MEMTYPES(ROUTE_DATA_KINDS)
    NCAPI_MEMTYPES(ROUTE_ATTS)
};
#undef ROUTE_DATA
#undef ROUTE_ATT

/* ---- messages ----------------------------------------------------------- */

enum { LOG_OFF, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* RASTER_LOG, read once (the shim core reads it again for its own
 * messages; both follow the same rule). */
static int log_level(void)
{
    static atomic_int level = -1;
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        const char *s = getenv("RASTER_LOG");
        l = LOG_WARN;
        if (s && strcmp(s, "off") == 0)
            l = LOG_OFF;
        else if (s && strcmp(s, "info") == 0)
            l = LOG_INFO;
        else if (s && strcmp(s, "debug") == 0)
            l = LOG_DEBUG;
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return l;
}

__attribute__((format(printf, 2, 3)))
static void route_log(int level, const char *fmt, ...)
{
    if (level > log_level())
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    fprintf(stderr, "raster: %s\n", line);
}

/* ---- libnetcdf copies --------------------------------------------------- */

/* One libnetcdf copy seen in the process. Entries are filled under `lock`
 * and published through `ncopies`/the caller table; `fn` slots are filled
 * lazily by any thread (a racing second store writes the same value). */
typedef struct copy {
    struct link_map *map;          /* the copy's object */
    void *handle;                  /* a reference on it: never unloaded */
    int system;                    /* the one raster is built against */
    int explained;                 /* explain_foreign said its piece */
    _Atomic(void *) fn[FN_COUNT];  /* where its calls go */
    _Atomic(void *) raw[FN_COUNT]; /* its own functions (direct calls) */
} copy;

#define MAX_COPIES 8
static copy copies[MAX_COPIES];
static int ncopies;

/* The caller table: [lo, hi) address range of a calling object -> its
 * copy. Entries are written once, then published by a release store of
 * nspans; the per-call lookup reads nspans with acquire and scans. */
typedef struct span {
    uintptr_t lo, hi;
    copy *c;
    int direct;  /* the calling object's calls go straight (is_direct) */
} span;

#define MAX_SPANS 64
static span spans[MAX_SPANS];
static atomic_int nspans;

/* Recursive: opening the shim core runs constructors that may, in
 * principle, call netCDF and come back here on the same thread. */
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* 1 when files a and b are the same file (symbolic links followed). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Says once, per foreign copy, why its calls are not raster's. */
static void explain_foreign(const char *path)
{
    const char *base = base_name(path);
#ifdef RASTER_MPI
    int other_flavour = strncmp(base, "libnetcdf.so", 12) == 0;
#else
    int other_flavour = strstr(base, "netcdf_mpi") != NULL;
#endif
    if (other_flavour)
        route_log(LOG_WARN, "%s is not the netCDF flavour this shim was "
#ifdef RASTER_MPI
                  "built for (MPI); use libraster_preload.so. "
#else
                  "built for (serial); use libraster_preload_mpi.so. "
#endif
                  "Passing everything through", path);
    else
        route_log(LOG_INFO, "%s is another libnetcdf than raster's (%s): "
                  "calls through it pass through untouched, raster files "
                  "read through it show their storage groups", path,
                  RASTER_NETCDF_PATH);
}

/* The copy whose object is `map`, registered on first sight. Under lock. */
static copy *copy_of(struct link_map *map)
{
    for (int i = 0; i < ncopies; i++)
        if (copies[i].map == map)
            return &copies[i];
    if (ncopies == MAX_COPIES)
        return NULL;
    const char *path = map->l_name && map->l_name[0] ? map->l_name : NULL;
    /* a reference, so that the copy (and the pointers taken from it) stays
     * valid for the life of the process */
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    copy *c = &copies[ncopies++];
    c->map = map;
    c->handle = h;
    c->system = path && same_file(path, RASTER_NETCDF_PATH);
    if (c->system)
        route_log(LOG_DEBUG, "%s is raster's libnetcdf", path);
    return c;
}

/* ---- the shim core ------------------------------------------------------ */

static void *core;            /* libraster_shim.so, or NULL */
static int core_state;        /* 0 not tried, 1 loading, 2 done */

/* Opens the shim core beside this library, RTLD_LOCAL, once. It must use
 * the system copy `sys`: a different object of the same soname loaded
 * first would capture it, and raster cannot work through that one. Under
 * lock. */
static void *core_get(const copy *sys)
{
    if (core_state != 0)
        return core;  /* loaded, failed, or being loaded (re-entry) */
    core_state = 1;
    Dl_info self;
    char path[4096];
    const char *why = NULL;
    if (!dladdr((void *)&core_get, &self) || !self.dli_fname) {
        why = "cannot find the preload library's own directory";
    } else {
        const char *slash = strrchr(self.dli_fname, '/');
        int dirlen = slash ? (int)(slash - self.dli_fname + 1) : 0;
        int n = snprintf(path, sizeof path, "%.*s%s", dirlen, self.dli_fname,
                         RASTER_SHIM_CORE);
        if (n < 0 || (size_t)n >= sizeof path)
            why = "path too long";
    }
    void *h = why ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!why && !h)
        why = dlerror();
    if (h) {
        /* The core's libnetcdf must be the caller's copy, and no other copy
         * may sit in the global scope: the core's and libraster's calls to
         * functions the shim does not wrap would bind to that one. */
        void *sym = dlsym(h, "nc_inq_libvers");
        void *global = dlsym(RTLD_DEFAULT, "nc_inq_libvers");
        Dl_info info;
        struct link_map *map = NULL, *gmap = NULL;
        if (!sym || !dladdr1(sym, &info, (void **)&map, RTLD_DL_LINKMAP) ||
            map != sys->map ||
            (global && (!dladdr1(global, &info, (void **)&gmap,
                                 RTLD_DL_LINKMAP) || gmap != sys->map))) {
            why = "it would use another libnetcdf than the program's";
            dlclose(h);
            h = NULL;
        }
    }
    if (why)
        route_log(LOG_WARN, "shim core %s unavailable (%s); passing "
                  "everything through", RASTER_SHIM_CORE,
                  why ? why : "unknown error");
    core = h;
    core_state = 2;
    return core;
}

/* ---- callers ------------------------------------------------------------ */

typedef struct found {
    uintptr_t addr;
    uintptr_t lo, hi;        /* the whole object's loaded range */
    const char *name;
    int hit;
} found;

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    found *f = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (f->addr - lo >= hi - lo)
        return 0;
    f->lo = lo;
    f->hi = hi;
    f->name = info->dlpi_name;
    f->hit = 1;
    return 1;
}

/* The copy that an object's references to nc_* bind to: the global scope
 * first (what the dynamic linker searches first for every object), then
 * the object's own dependencies. `name` NULL or "" is the program. */
static copy *copy_for_caller(const char *name)
{
    void *sym = dlsym(RTLD_DEFAULT, "nc_inq_libvers");
    if (!sym && name && name[0]) {
        void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            sym = dlsym(h, "nc_inq_libvers");
            /* keep the reference: the caller's range stays in the table,
             * so its object must never be unloaded and replaced */
            if (!sym)
                dlclose(h);
        }
    }
    Dl_info info;
    struct link_map *map = NULL;
    if (!sym || !dladdr1(sym, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return NULL;
    return copy_of(map);
}

/* 1 when the object loaded at [lo, hi) as `name` defines `sym` itself. */
static int defines(const char *name, uintptr_t lo, uintptr_t hi,
                   const char *sym)
{
    void *h = dlopen(name && name[0] ? name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    uintptr_t addr = (uintptr_t)dlsym(h, sym);
    dlclose(h);
    return addr && addr - lo < hi - lo;
}

/* 1 when the calls of the object loaded at [lo, hi) as `name` go straight
 * to its copy's functions, never to the shim core: libraster (it defines
 * raster_version_number; a program that links it statically and exports
 * its symbols is one), the shim core itself (its own netCDF calls), a
 * libnetcdf (it defines nc_inq_libvers: its calls of its own exported
 * functions) and a libhdf5. Only the program's own calls, and those of
 * other libraries, are the program's business with netCDF. */
static int is_direct(const char *name, uintptr_t lo, uintptr_t hi)
{
    const char *base = name && name[0] ? base_name(name) : "";
    return strcmp(base, RASTER_SHIM_CORE) == 0 ||
           strncmp(base, "libhdf5", 7) == 0 ||
           defines(name, lo, hi, "raster_version_number") ||
           defines(name, lo, hi, "nc_inq_libvers");
}

/* Slow path: a caller not yet in the table. */
static copy *learn_caller(uintptr_t ret, int *direct)
{
    if (pthread_mutex_lock(&lock) != 0)
        return NULL;
    copy *c = NULL;
    int n = atomic_load_explicit(&nspans, memory_order_acquire);
    for (int i = 0; i < n && !c; i++)
        if (ret - spans[i].lo < spans[i].hi - spans[i].lo) {
            c = spans[i].c;
            *direct = spans[i].direct;
        }
    if (!c) {
        found f = {.addr = ret};
        dl_iterate_phdr(find_object, &f);
        c = copy_for_caller(f.hit ? f.name : NULL);
        *direct = f.hit && is_direct(f.name, f.lo, f.hi);
        if (c && !c->system && !c->explained && !*direct) {
            /* said for the first caller that is neither libraster (which
             * works through whatever copy it links: raster's tools under
             * the other flavour's exported shim) nor netCDF itself */
            c->explained = 1;
            explain_foreign(c->map->l_name[0] ? c->map->l_name
                                              : "the program");
        }
        if (c && f.hit && n < MAX_SPANS) {
            spans[n] = (span){f.lo, f.hi, c, *direct};
            atomic_store_explicit(&nspans, n + 1, memory_order_release);
            route_log(LOG_DEBUG, "calls from %s go to %s%s",
                      f.name[0] ? f.name : "the program",
                      c->map->l_name[0] ? c->map->l_name : "the program",
                      *direct ? " directly" : "");
        }
        /* a full table (or code outside any object) only costs this
         * lookup on every call; the answer is the same */
    }
    pthread_mutex_unlock(&lock);
    return c;
}

static inline copy *caller_copy(uintptr_t ret, int *direct)
{
    int n = atomic_load_explicit(&nspans, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (ret - spans[i].lo < spans[i].hi - spans[i].lo) {
            *direct = spans[i].direct;
            return spans[i].c;
        }
    return learn_caller(ret, direct);
}

/* This library's own definition of wrapper `fn`, never a target. */
static void *own_fn(int fn);

/* Slow path of route(): fills c->fn[fn]. */
static void *resolve_fn(copy *c, int fn)
{
    void *p = NULL;
    int settled = 1;
    if (c->system) {
        if (pthread_mutex_lock(&lock) != 0)
            return NULL;
        void *h = core_get(c);
        /* a call made while the core is being opened (same thread) passes
         * through, but must not fix the route for later calls */
        settled = core_state == 2;
        pthread_mutex_unlock(&lock);
        if (h)
            p = dlsym(h, fn_name[fn]);  /* the core's wrapper */
    }
    if (!p)  /* a foreign copy, or no core: the copy's own function */
        p = dlsym(c->handle, fn_name[fn]);
    if (p == own_fn(fn))
        p = NULL;  /* the program's "copy" is the global scope: not us */
    if (p && settled)
        atomic_store_explicit(&c->fn[fn], p, memory_order_release);
    return p;
}

/* The copy's own function `fn`, filled into c->raw[fn]. */
static void *raw_fn(copy *c, int fn)
{
    void *p = atomic_load_explicit(&c->raw[fn], memory_order_acquire);
    if (!p) {
        p = dlsym(c->handle, fn_name[fn]);
        if (p == own_fn(fn))
            p = NULL;
        atomic_store_explicit(&c->raw[fn], p, memory_order_release);
    }
    return p;
}

/* A call routed to the system copy (to the shim core, or straight to
 * netCDF) or made by a direct caller (is_direct) is entered: until it
 * returns, every call on its thread goes straight to that copy's functions.
 * Those are netCDF's calls of its own exported functions, libraster's and
 * the core's: never the program's. The return address alone cannot tell:
 * a call netCDF makes as a tail call returns to whoever called netCDF (the
 * core, or this library), and a program linked with libraster (the tools)
 * must run under an exported LD_PRELOAD as without it. */
static _Thread_local int inside_depth;
static _Thread_local copy *inside_copy;

/* Where wrapper `fn`, called from return address `ret`, must go; NULL when
 * the caller has no libnetcdf that defines it. *cp: the caller's copy;
 * *enter: 1 when the call is entered (above). */
static inline void *route(int fn, void *ret, copy **cp, int *enter)
{
    *enter = 0;
    if (inside_depth > 0) {
        *cp = inside_copy;
        return raw_fn(inside_copy, fn);
    }
    int direct = 0;
    copy *c = *cp = caller_copy((uintptr_t)ret, &direct);
    if (!c)
        return NULL;
    *enter = direct || c->system;
    if (direct)
        return raw_fn(c, fn);
    void *p = atomic_load_explicit(&c->fn[fn], memory_order_acquire);
    return p ? p : resolve_fn(c, fn);
}

/* ---- raster files opened through another copy ---------------------------- */

/* A foreign copy just opened `path` as `ncid`. Raster cannot serve it there
 * (raster's groups are only understood by the copy libraster links), so a
 * raster variable reads as its empty placeholder: netCDF's default fill
 * value, which a reader may take for data. Say so, once per process, when
 * the file has a raster storage group. Only inquiries, through the copy's
 * own functions: the program's result and the file are untouched. */
static void foreign_opened(copy *c, const char *path, int ncid)
{
    static atomic_int warned;
    if (atomic_load_explicit(&warned, memory_order_relaxed) ||
        log_level() < LOG_WARN)
        return;
    int (*inq_grps)(int, int *, int *) =
        (int (*)(int, int *, int *))dlsym(c->handle, "nc_inq_grps");
    int (*inq_att)(int, int, const char *, nc_type *, size_t *) =
        (int (*)(int, int, const char *, nc_type *, size_t *))dlsym(
            c->handle, "nc_inq_att");
    int n = 0;
    if (!inq_grps || !inq_att || inq_grps(ncid, &n, NULL) != NC_NOERR ||
        n <= 0)
        return;
    int *grps = malloc((size_t)n * sizeof *grps);
    if (!grps)
        return;
    int raster = 0;
    if (inq_grps(ncid, NULL, grps) == NC_NOERR) {
        for (int i = 0; i < n && !raster; i++) {
            nc_type type;
            size_t len;
            raster = inq_att(grps[i], NC_GLOBAL, "raster_format_version",
                             &type, &len) == NC_NOERR;
        }
    }
    free(grps);
    if (raster && !atomic_exchange(&warned, 1))
        route_log(LOG_WARN, "%s holds raster variables, but it was opened "
                  "through %s, which raster does not serve: their values "
                  "are refused (placeholders beside raster_* storage "
                  "groups). Read it through %s (e.g. Debian's python3-netcdf4) "
                  "or convert it with rasterconvert", path ? path : "a file",
                  c->map->l_name[0] ? c->map->l_name : "the program's libnetcdf",
                  RASTER_NETCDF_PATH);
}

/* ---- the entry points --------------------------------------------------- */

/* A caller that reaches a wrapper has a libnetcdf in its scope, so NULL
 * here means the process changed under us (or a copy lacks a function its
 * caller was linked against): report an internal error, do not crash. */
#define ROUTE_CALL_DEFINE(name, params, args)                                 \
    SHIM_API int name params                                                  \
    {                                                                         \
        copy *c_;                                                             \
        int enter_;                                                           \
        void *fn_ = route(FN_##name, __builtin_return_address(0), &c_,       \
                          &enter_);                                           \
        if (!fn_)                                                             \
            return NC_EINTERNAL;                                              \
        if (!enter_) /* a tail call: the callee sees the caller's address */ \
            return ((__typeof__(&name))fn_) args;                             \
        inside_copy = c_;                                                     \
        inside_depth++;                                                       \
        int st_ = ((__typeof__(&name))fn_) args;                              \
        inside_depth--;                                                       \
        return st_;                                                           \
    }
NCAPI_OTHER_CALLS(ROUTE_CALL_DEFINE)

#define ROUTE_OPEN_DEFINE(name, params, args)                                 \
    SHIM_API int name params                                                  \
    {                                                                         \
        copy *c_;                                                             \
        int enter_;                                                           \
        int inside_ = inside_depth > 0;                                       \
        void *fn_ = route(FN_##name, __builtin_return_address(0), &c_,       \
                          &enter_);                                           \
        if (!fn_)                                                             \
            return NC_EINTERNAL;                                              \
        if (enter_) {                                                         \
            inside_copy = c_;                                                 \
            inside_depth++;                                                   \
        }                                                                     \
        int st_ = ((__typeof__(&name))fn_) args;                              \
        inside_depth -= enter_;                                               \
        /* not libraster's own opens (it serves raster files through any     \
         * copy): through a foreign copy, enter_ is the caller's directness */\
        if (st_ == NC_NOERR && !c_->system && ncidp && !enter_ && !inside_)   \
            foreign_opened(c_, path, *ncidp);                                 \
        return st_;                                                           \
    }
NCAPI_OPEN_CALLS(ROUTE_OPEN_DEFINE)

#define ROUTE_DATA(dir, kind, sfx, ctype, memtype)                            \
    ROUTE_CALL_DEFINE(nc_##dir##_##kind##sfx,                                 \
                      (int ncid, int varid NCAPI_KIND_##kind##_PARAMS,        \
                       NCAPI_CONST_##dir ctype *data),                        \
                      (ncid, varid NCAPI_KIND_##kind##_ARGS, data))
NCAPI_MEMTYPES(ROUTE_DATA_KINDS)
#undef ROUTE_DATA
#define ROUTE_ATT ROUTE_CALL_DEFINE
NCAPI_MEMTYPES(ROUTE_ATTS)
#undef ROUTE_ATT

#define ROUTE_CALL_ADDR(name, params, args) (void *)&name,
#define ROUTE_DATA(dir, kind, sfx, ctype, memtype)                            \
    (void *)&nc_##dir##_##kind##sfx,
#define ROUTE_ATT ROUTE_CALL_ADDR
static void *own_fn(int fn)
{
    static void *const own[FN_COUNT] = {
        NCAPI_CALLS(ROUTE_CALL_ADDR)
        NCAPI_MEMTYPES(ROUTE_DATA_KINDS)
        NCAPI_MEMTYPES(ROUTE_ATTS)
    };
    return own[fn];
}
#undef ROUTE_DATA
#undef ROUTE_ATT
