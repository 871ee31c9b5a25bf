/*
 * resolve.c - real-function lookup for the preload shim.
 */
#include "resolve.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

typedef struct search {
    const char *name;
    void *self;   /* the shim's own symbol, to skip */
    void *found;
} search;

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    search *s = data;
    if (s->found || !info->dlpi_name || !info->dlpi_name[0])
        return s->found != NULL;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *sym = dlsym(h, s->name);
    if (sym && sym != s->self)
        s->found = sym;
    dlclose(h); /* NOLOAD took a reference; the object stays loaded */
    return s->found != NULL;
}

void *resolve_real(const char *name, void *self)
{
    void *sym = dlsym(RTLD_NEXT, name);
    if (sym && sym != self)
        return sym;
    search s = {.name = name, .self = self, .found = NULL};
    dl_iterate_phdr(visit, &s);
    return s.found;
}

int resolve_flavour_ok(char *path, unsigned len)
{
    Dl_info info;
    void *real = resolve_real("nc_open", dlsym(RTLD_DEFAULT, "nc_open"));
    path[0] = '\0';
    if (!real || !dladdr(real, &info) || !info.dli_fname)
        return 0;
    snprintf(path, len, "%s", info.dli_fname);
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    int is_mpi = strstr(base, "netcdf_mpi") != NULL;
#ifdef RASTER_MPI
    return is_mpi;
#else
    return !is_mpi;
#endif
}
