/*
 * chunkmap.c - every chunk's byte offset in one pass over a dataset's
 * version-1 chunk B-tree.
 *
 * The structures read here are those of the HDF5 file format
 * specification: the object header (version 1, or version 2 with its
 * "OHDR"/"OCHK" blocks), its data layout message (version 3, chunked) and
 * the version-1 B-tree of raw data chunks ("TREE" nodes). Every length and
 * count is checked against the bytes actually read, and the result is
 * compared with HDF5's own answers before anyone uses it (the first
 * chunk's address, the last one's stored size, and the number of chunks
 * when the walk left slots empty): a parse that is wrong anywhere is
 * dropped, not trusted.
 */
#include "chunkmap.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"

#define MSG_CONTINUATION 0x10
#define MSG_LAYOUT 0x08
#define MAX_BLOCKS 64    /* object header blocks followed */
#define MAX_DEPTH 32     /* B-tree levels */
#define MAX_RANK 33
#define NODE_GUESS 4096  /* bytes read for a B-tree node at first */

typedef struct walk {
    int fd;
    size_t sa, ss;       /* sizes of addresses and lengths in the file */
    int no;              /* outer dimensions; the layout has no+2 */
    const size_t *ck, *nck;
    size_t elem, chunk_bytes;
    int64_t *addr;
    uint32_t *sizes;     /* filtered chunks: each one's stored bytes */
    size_t total, found, nodes;
    unsigned char *buf;
    size_t cap;
    int oom;             /* an allocation failed */
} walk;

static uint64_t le(const unsigned char *p, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the common widths in one load: a B-tree walk decodes five values
     * an entry, a few hundred entries a store */
    if (n == 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    if (n == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
#endif
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

static int undefined(uint64_t a, size_t sa)
{
    return sa >= 8 ? a == UINT64_MAX : a == (((uint64_t)1 << (8 * sa)) - 1);
}

/* Reads up to n bytes at file address a into w->buf, at least `least`
 * (less than n only at the end of the file); the count in *got: 0 on
 * success. */
static int fetch_some(walk *w, uint64_t a, size_t n, size_t least,
                      size_t *got)
{
    if (n > w->cap) {
        unsigned char *b = raster_realloc(w->buf, n);
        if (!b) {
            w->oom = 1;
            return -1;
        }
        w->buf = b;
        w->cap = n;
    }
    if (a > (uint64_t)INT64_MAX - n)
        return -1;
    *got = 0;
    while (*got < n) {
        ssize_t r = pread(w->fd, w->buf + *got, n - *got, (off_t)(a + *got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    return *got >= least ? 0 : -1;
}

/* Reads n bytes at file address a into w->buf: 0 on success. */
static int fetch(walk *w, uint64_t a, size_t n)
{
    size_t got;
    return fetch_some(w, a, n, n, &got);
}

/* The B-tree address in a version-3 chunked layout message, after
 * checking its chunk shape; 0 when it is anything else. */
static uint64_t layout_btree(const walk *w, const unsigned char *m,
                             size_t len)
{
    size_t dims = (size_t)w->no + 2; /* outer..., cells, element bytes */
    if (len < 3 + w->sa + 4 * dims || m[0] != 3 || m[1] != 2 ||
        m[2] != dims)
        return 0;
    const unsigned char *d = m + 3 + w->sa;
    for (size_t i = 0; i + 1 < dims; i++)
        if (le(d + 4 * i, 4) != w->ck[i])
            return 0;
    if (le(d + 4 * (dims - 1), 4) != w->elem)
        return 0;
    uint64_t a = le(m + 3, w->sa);
    return undefined(a, w->sa) ? 0 : a;
}

/* Finds the layout message in the object header at `oh`; its B-tree
 * address, or 0. */
static uint64_t find_btree(walk *w, uint64_t oh)
{
    uint64_t blk[MAX_BLOCKS], blen[MAX_BLOCKS];
    size_t nblk = 0, k = 0;
    int v2 = 0, order = 0;
    if (fetch(w, oh, 32) != 0)
        return 0;
    if (memcmp(w->buf, "OHDR", 4) == 0) {
        if (w->buf[4] != 2)
            return 0;
        unsigned flags = w->buf[5];
        size_t at = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
        size_t szlen = (size_t)1 << (flags & 3);
        if (at + szlen > 32)
            return 0;
        v2 = 1;
        order = (flags & 0x04) != 0;
        blk[0] = oh + at + szlen; /* messages, then a 4-byte checksum */
        blen[0] = le(w->buf + at, szlen);
        nblk = 1;
    } else if (w->buf[0] == 1) {
        blk[0] = oh + 16; /* 12-byte prefix, aligned to 8 */
        blen[0] = le(w->buf + 8, 4);
        nblk = 1;
    } else {
        return 0;
    }
    size_t hdr = v2 ? 4 + (order ? 2 : 0) : 8;
    for (k = 0; k < nblk; k++) {
        if (blen[k] > ((size_t)1 << 24) || fetch(w, blk[k], blen[k]) != 0)
            return 0;
        size_t at = 0, end = blen[k];
        if (v2 && k > 0) { /* continuation: "OCHK", messages, checksum */
            if (end < 8 || memcmp(w->buf, "OCHK", 4) != 0)
                return 0;
            at = 4;
            end -= 4;
        }
        while (at + hdr <= end) {
            const unsigned char *p = w->buf + at;
            unsigned type = v2 ? p[0] : (unsigned)le(p, 2);
            size_t len = v2 ? (size_t)le(p + 1, 2) : (size_t)le(p + 2, 2);
            const unsigned char *m = p + hdr;
            if (at + hdr + len > end)
                return 0;
            if (type == MSG_LAYOUT)
                return layout_btree(w, m, len);
            if (type == MSG_CONTINUATION) {
                if (len < w->sa + w->ss || nblk == MAX_BLOCKS)
                    return 0;
                blk[nblk] = le(m, w->sa);
                blen[nblk] = le(m + w->sa, w->ss);
                nblk++;
            }
            at += hdr + len;
        }
    }
    return 0;
}

/* Walks the B-tree node at `a` (level expected, or -1 at the root). */
static int walk_node(walk *w, uint64_t a, int level, int depth)
{
    size_t dims = (size_t)w->no + 2, keylen = 8 + 8 * dims;
    size_t head = 8 + 2 * w->sa, got = 0;
    /* the header and, most often, the whole node in one read */
    if (depth > MAX_DEPTH || ++w->nodes > 2 * w->total + 64 ||
        fetch_some(w, a, NODE_GUESS, head, &got) != 0 ||
        memcmp(w->buf, "TREE", 4) != 0 || w->buf[4] != 1 ||
        (level >= 0 && w->buf[5] != level))
        return -1;
    int lev = w->buf[5];
    size_t n = (size_t)le(w->buf + 6, 2);
    if (n == 0)
        return 0;
    size_t bytes = n * (keylen + w->sa) + keylen;
    if (head + bytes > got && fetch(w, a, head + bytes) != 0)
        return -1;
    const unsigned char *body = w->buf + head;
    /* children of an inner node: copied out, w->buf is reused below */
    uint64_t *kids = lev > 0 ? raster_reallocarray(NULL, n, sizeof *kids)
                             : NULL;
    if (lev > 0 && !kids) {
        w->oom = 1;
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const unsigned char *key = body + i * (keylen + w->sa);
        uint64_t child = le(key + keylen, w->sa);
        if (undefined(child, w->sa)) {
            rc = -1;
        } else if (lev > 0) {
            kids[i] = child;
        } else {
            /* a chunk: plain bytes, whole (or, filtered, every filter
             * applied and no larger than a filter could make it), at a
             * grid position */
            uint64_t size = le(key, 4), mask = le(key + 4, 4);
            size_t lin = 0;
            uint64_t most = w->chunk_bytes + w->chunk_bytes / 2 + 4096;
            if ((w->sizes ? size == 0 || size > most
                          : size != w->chunk_bytes) ||
                mask != 0 || le(key + 8 + 8 * (dims - 1), 8) != 0)
                rc = -1;
            for (size_t d = 0; d + 1 < dims && rc == 0; d++) {
                uint64_t off = le(key + 8 + 8 * d, 8);
                if (off % w->ck[d] != 0 || off / w->ck[d] >= w->nck[d])
                    rc = -1;
                else
                    lin = lin * w->nck[d] + (size_t)(off / w->ck[d]);
            }
            if (rc == 0 && (w->addr[lin] != -1 || child > INT64_MAX))
                rc = -1; /* a chunk listed twice */
            if (rc == 0) {
                w->addr[lin] = (int64_t)child;
                if (w->sizes)
                    w->sizes[lin] = (uint32_t)size;
                w->found++;
            }
        }
    }
    /* a cold index: every child asked of the disk at once, which the
     * walk below then reads one after another from the page cache (a
     * leaf a random read each: 267 of them in the bench file) */
    for (size_t i = 0; lev > 0 && i < n && rc == 0 && kids[i] <= INT64_MAX;
         i++)
        (void)posix_fadvise(w->fd, (off_t)kids[i], NODE_GUESS,
                            POSIX_FADV_WILLNEED);
    for (size_t i = 0; lev > 0 && i < n && rc == 0; i++)
        rc = walk_node(w, kids[i], lev - 1, depth + 1);
    raster_free(kids);
    return rc;
}

/* HDF5's own answer for chunk `lin`: its address, -1 when unwritten, -2
 * on error (or, with sizes, a stored size or filter mask that differs
 * from the walk's). */
static int64_t h5_addr(hid_t did, const walk *w, size_t lin)
{
    hsize_t off[MAX_RANK];
    size_t rest = lin;
    for (int d = w->no; d >= 0; d--) {
        off[d] = (hsize_t)((rest % w->nck[d]) * w->ck[d]);
        rest /= w->nck[d];
    }
    haddr_t a = HADDR_UNDEF;
    hsize_t size = 0;
    unsigned mask = 0;
    if (H5Dget_chunk_info_by_coord(did, off, &mask, &a, &size) < 0)
        return -2;
    if (w->sizes && a != HADDR_UNDEF &&
        (mask != 0 || size != w->sizes[lin]))
        return -2;
    return a == HADDR_UNDEF ? -1 : (int64_t)a;
}

/* 1 when HDF5 finds chunk `lin` with the stored size the walk read: by
 * H5Dget_chunk_storage_size, which looks the one chunk up in the B-tree
 * (H5Dget_chunk_info_by_coord iterates over the chunks before it: the
 * whole tree for the last one); 0 when it differs, -1 on error. */
static int h5_size(hid_t did, const walk *w, size_t lin)
{
    hsize_t off[MAX_RANK], size = 0;
    size_t rest = lin;
    for (int d = w->no; d >= 0; d--) {
        off[d] = (hsize_t)((rest % w->nck[d]) * w->ck[d]);
        rest /= w->nck[d];
    }
    if (H5Dget_chunk_storage_size(did, off, &size) < 0)
        return -1;
    return size == (w->sizes ? w->sizes[lin] : w->chunk_bytes);
}

/* Sizes of addresses and lengths of the file, from its superblock, when
 * that is at the file's start (no user block: addresses are then file
 * offsets; HDF5 looks there first): 0 when they are usable here. One
 * 16-byte read; HDF5's own answer (H5Fget_create_plist, a copy of the
 * property list, and its close) cost 40 K instructions. A misread size
 * cannot pass: the walk's first and last chunks are checked with HDF5. */
static int file_sizes(walk *w)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F',
                                         '\r', '\n', 0x1a, '\n'};
    if (fetch(w, 0, 16) != 0 || memcmp(w->buf, sig, sizeof sig) != 0)
        return -1;
    unsigned version = w->buf[8];
    size_t sa, ss;
    if (version <= 1) { /* then versions of the free space, the root
                           group's entry, a reserved byte, shared headers */
        sa = w->buf[13];
        ss = w->buf[14];
    } else if (version <= 3) {
        sa = w->buf[9];
        ss = w->buf[10];
    } else {
        return -1;
    }
    if (sa < 2 || sa > 8 || ss < 2 || ss > 8)
        return -1;
    w->sa = sa;
    w->ss = ss;
    return 0;
}

/* Chunks written: HDF5 1.10 wants the dataset's own dataspace here, not
 * H5S_ALL. */
static int num_chunks(hid_t did, hsize_t *n)
{
    hid_t space = H5Dget_space(did);
    int rc = space >= 0 && H5Dget_num_chunks(did, space, n) >= 0 ? 0 : -1;
    if (space >= 0)
        H5Sclose(space);
    return rc;
}

/* The file address of did's object header: 0 when known. HDF5 1.12 made
 * object addresses tokens; the native VOL connector turns them back. */
static int header_addr(hid_t did, uint64_t *oh)
{
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t oi;
    haddr_t a = HADDR_UNDEF;
    if (H5Oget_info3(did, &oi, H5O_INFO_BASIC) < 0 ||
        H5VLnative_token_to_addr(did, oi.token, &a) < 0 || a == HADDR_UNDEF)
        return -1;
    *oh = (uint64_t)a;
    return 0;
#elif H5_VERSION_GE(1, 10, 3)
    H5O_info_t oi;
    if (H5Oget_info2(did, &oi, H5O_INFO_BASIC) < 0)
        return -1;
    *oh = (uint64_t)oi.addr;
    return 0;
#else
    (void)did;
    (void)oh;
    return -1; /* not walked before 1.10.3 */
#endif
}

int chunkmap_read(int fd, int64_t did, int no, const size_t *ck,
                  const size_t *nck, size_t elem, int64_t *addr,
                  size_t total)
{
    return chunkmap_read_sized(fd, did, no, ck, nck, elem, addr, NULL,
                               total);
}

int chunkmap_read_sized(int fd, int64_t did, int no, const size_t *ck,
                        const size_t *nck, size_t elem, int64_t *addr,
                        uint32_t *sizes, size_t total)
{
    walk w = {.fd = fd, .no = no, .ck = ck, .nck = nck, .total = total};
    if (no < 0 || no + 2 > MAX_RANK || total == 0 || fd < 0)
        return 0;
    w.elem = elem;
    w.chunk_bytes = elem;
    for (int d = 0; d <= no; d++)
        if (raster_mul_overflows(w.chunk_bytes, ck[d], &w.chunk_bytes))
            return 0;
    uint64_t oh = 0;
    hsize_t nalloc = 0;
    if (file_sizes(&w) != 0 || header_addr((hid_t)did, &oh) != 0) {
        raster_free(w.buf);
        return w.oom ? -1 : 0;
    }
    w.addr = raster_reallocarray(NULL, total, sizeof *w.addr);
    w.sizes = sizes ? raster_reallocarray(NULL, total, sizeof *w.sizes)
                    : NULL;
    if (!w.addr || (sizes && !w.sizes)) {
        raster_free(w.addr);
        raster_free(w.sizes);
        raster_free(w.buf);
        return -1;
    }
    for (size_t i = 0; i < total; i++)
        w.addr[i] = -1;
    uint64_t root = find_btree(&w, oh);
    /* every chunk HDF5 holds found: a walk that filled every slot of the
     * grid (chunks listed twice refused) cannot have missed one, so HDF5's
     * count, a walk of the whole tree of its own, is asked only when some
     * slots stayed empty (unwritten, or skipped by a bad parse) */
    int ok = root != 0 && walk_node(&w, root, -1, 0) == 0 &&
             (w.found == total ||
              (num_chunks((hid_t)did, &nalloc) == 0 &&
               w.found == (size_t)nalloc));
    /* HDF5 must agree on the first and the last chunk written */
    size_t first = total, last = total;
    for (size_t i = 0; ok && i < total; i++)
        if (w.addr[i] >= 0) {
            if (first == total)
                first = i;
            last = i;
        }
    if (ok && first < total)
        ok = h5_addr((hid_t)did, &w, first) == w.addr[first] &&
             h5_size((hid_t)did, &w, last) == 1;
    if (ok)
        memcpy(addr, w.addr, total * sizeof *addr);
    if (ok && sizes)
        memcpy(sizes, w.sizes, total * sizeof *sizes);
    raster_free(w.addr);
    raster_free(w.sizes);
    raster_free(w.buf);
    return w.oom ? -1 : ok;
}
