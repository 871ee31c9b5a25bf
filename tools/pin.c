/*
 * pin.c - files held in the page cache for rasterbench's warm cases (see
 * pin.h).
 */
#include "pin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int noted;

static void note(const char *path, const char *why)
{
    if (!noted)
        fprintf(stderr, "rasterbench: note: %s not held in the page cache "
                "for warm cases (%s); warm figures may include evictions\n",
                path, why);
    noted = 1;
}

void pin_files(const char *const *paths, size_t n, pinned *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < n && i < PIN_MAX_FILES; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
            note(paths[i], fd < 0 ? strerror(errno) : "empty or unreadable");
            if (fd >= 0)
                close(fd);
            continue;
        }
        size_t len = (size_t)st.st_size;
        void *a = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        close(fd); /* the mapping keeps the file */
        if (a == MAP_FAILED) {
            note(paths[i], strerror(errno));
            continue;
        }
        if (mlock(a, len) != 0) {
            note(paths[i], strerror(errno));
            munmap(a, len);
            continue;
        }
        p->addr[p->n] = a;
        p->len[p->n] = len;
        p->n++;
    }
}

void unpin_files(pinned *p)
{
    for (size_t i = 0; i < p->n; i++) {
        munlock(p->addr[i], p->len[i]);
        munmap(p->addr[i], p->len[i]);
    }
    p->n = 0;
}
