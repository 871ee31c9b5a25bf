/*
 * imports.c - points one loaded library's calls of a named function at
 * another function, by rewriting that library's own import slots (its
 * global offset table entries for the symbol).
 *
 * Why not export the function from the preload library: an exported H5*
 * symbol would catch the calls of every HDF5 copy in the process (a PyPI
 * wheel's included), which then would have to be routed back. An import
 * slot belongs to one library: only the system libnetcdf raster links is
 * changed, and every other caller reaches HDF5 as before.
 */
#include "imports.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SLOT_JUMP R_X86_64_JUMP_SLOT
#define SLOT_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SLOT_JUMP R_AARCH64_JUMP_SLOT
#define SLOT_DATA R_AARCH64_GLOB_DAT
#endif

#if defined(SLOT_JUMP) && __SIZEOF_POINTER__ == 8
#define RELA_TYPE(info) ELF64_R_TYPE(info)
#define RELA_SYM(info) ELF64_R_SYM(info)

/* The library's read-only-after-relocation range (PT_GNU_RELRO), to put
 * back the protection of a slot there. */
typedef struct relro {
    ElfW(Addr) base;
    uintptr_t lo, hi;
} relro;

static int find_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    relro *r = arg;
    if (info->dlpi_addr != r->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            r->lo = r->base + ph->p_vaddr;
            r->hi = r->lo + ph->p_memsz;
        }
    }
    return 1;
}

/* glibc relocates the dynamic section's addresses in place on most
 * targets and leaves them as offsets on others. */
static uintptr_t dyn_addr(const struct link_map *map, ElfW(Addr) a)
{
    return a < map->l_addr ? map->l_addr + a : a;
}

static int write_slot(void **slot, void *fn, const relro *r)
{
    long psz = sysconf(_SC_PAGESIZE);
    if (psz <= 0)
        return -1;
    uintptr_t page = (uintptr_t)slot & ~((uintptr_t)psz - 1);
    int in_relro = (uintptr_t)slot >= r->lo && (uintptr_t)slot < r->hi;
    if (mprotect((void *)page, (size_t)psz, PROT_READ | PROT_WRITE) != 0)
        return -1;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    if (in_relro && mprotect((void *)page, (size_t)psz, PROT_READ) != 0)
        return -1;
    return 0;
}

int imports_replace(struct link_map *map, const char *name, void *fn)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *tables[2] = {NULL, NULL};
    size_t sizes[2] = {0, 0};
    int rela = 1;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            symtab = (const void *)dyn_addr(map, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = (const void *)dyn_addr(map, d->d_un.d_ptr);
            break;
        case DT_JMPREL:
            tables[0] = (const void *)dyn_addr(map, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            sizes[0] = d->d_un.d_val;
            break;
        case DT_PLTREL:
            rela = d->d_un.d_val == DT_RELA;
            break;
        case DT_RELA:
            tables[1] = (const void *)dyn_addr(map, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            sizes[1] = d->d_un.d_val;
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab || !rela)
        return -1;
    relro r = {map->l_addr, 0, 0};
    dl_iterate_phdr(find_relro, &r);
    int replaced = 0;
    for (int t = 0; t < 2; t++) {
        size_t n = tables[t] ? sizes[t] / sizeof(ElfW(Rela)) : 0;
        for (size_t i = 0; i < n; i++) {
            const ElfW(Rela) *e = &tables[t][i];
            unsigned type = (unsigned)RELA_TYPE(e->r_info);
            size_t sym = RELA_SYM(e->r_info);
            if ((type != SLOT_JUMP && type != SLOT_DATA) || sym == 0 ||
                strcmp(strtab + symtab[sym].st_name, name) != 0)
                continue;
            if (write_slot((void **)(map->l_addr + e->r_offset), fn, &r) != 0)
                return -1;
            replaced++;
        }
    }
    return replaced;
}

#else /* other targets: nothing replaced, callers keep the full behaviour */

int imports_replace(struct link_map *map, const char *name, void *fn)
{
    (void)map;
    (void)name;
    (void)fn;
    return -1;
}

#endif
