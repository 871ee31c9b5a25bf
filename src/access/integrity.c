/*
 * integrity.c - CRC32C checksums of raster's tables and the identity of an
 * open file (see integrity.h).
 *
 * CRC32C (the Castagnoli polynomial, reflected: 0x82F63B78) because x86-64
 * computes it in hardware (SSE4.2), and table-driven eight bytes at a time
 * elsewhere. The two give the same values.
 */
#include "integrity.h"

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <netcdf.h>

#include <hdf5.h>

#include "error.h"
#include "fileio.h"

#define CRC32C_POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* table[0] is the byte-at-a-time table; table[j][b] advances b's CRC
 * through j more zero bytes (slice-by-8). */
static void make_table(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int j = 1; j < 8; j++)
            table[j][b] = (table[j - 1][b] >> 8) ^
                          table[0][table[j - 1][b] & 0xff];
}

static uint32_t crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
    pthread_once(&table_once, make_table);
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                           (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
            table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
            table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
            table[0][p[7]];
    }
    while (n--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The instruction's latency (3 cycles) bounds one chain of it to a third
 * of its throughput: three chains run at once over three blocks of
 * HW_BLOCK bytes each, then the register of block A is carried over the
 * HW_BLOCK bytes of B (a multiplication by x^(8 * HW_BLOCK) modulo the
 * polynomial, linear in the register: four table lookups, shift[][]) and
 * B's added, and the same for C. */
#define HW_BLOCK 1024

static uint32_t shift[4][256];

/* a * b modulo the polynomial, reflected (bit 31 is x^0). */
static uint32_t mulmod(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        if (a & (0x80000000u >> i))
            prod ^= b;
        b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return prod;
}

static void make_shift(void)
{
    pthread_once(&table_once, make_table);
    /* x^(8 * HW_BLOCK): the register of polynomial 1 (0x80000000) carried
     * over HW_BLOCK zero bytes */
    uint32_t k = 0x80000000u;
    for (int i = 0; i < HW_BLOCK; i++)
        k = (k >> 8) ^ table[0][k & 0xff];
    for (int j = 0; j < 4; j++)
        for (uint32_t b = 0; b < 256; b++)
            shift[j][b] = mulmod(b << (8 * j), k);
}

static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static uint32_t carry(uint32_t c)
{
    return shift[0][c & 0xff] ^ shift[1][(c >> 8) & 0xff] ^
           shift[2][(c >> 16) & 0xff] ^ shift[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
    if (n >= 3 * HW_BLOCK)
        pthread_once(&shift_once, make_shift);
    for (; n >= 3 * HW_BLOCK; n -= 3 * HW_BLOCK, p += 3 * HW_BLOCK) {
        uint64_t a = c, b = 0, d = 0;
        for (size_t i = 0; i < HW_BLOCK; i += 8) {
            uint64_t wa, wb, wd; /* x86 is little-endian, as the CRC wants */
            memcpy(&wa, p + i, 8);
            memcpy(&wb, p + HW_BLOCK + i, 8);
            memcpy(&wd, p + 2 * HW_BLOCK + i, 8);
            a = __builtin_ia32_crc32di(a, wa);
            b = __builtin_ia32_crc32di(b, wb);
            d = __builtin_ia32_crc32di(d, wd);
        }
        c = carry(carry((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)d;
    }
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static int have_hw(void)
{
    static int known = -1; /* a benign race: every thread finds the same */
    if (known < 0)
        known = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    return known;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t n)
{
    uint32_t c = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (have_hw())
        return ~crc_hw(c, buf, n);
#endif
    return ~crc_soft(c, buf, n);
}

/* Values converted to little-endian bytes a block at a time. */
#define LE_BLOCK 256

static int little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

uint32_t sums_i64(uint32_t crc, const long long *vals, size_t n)
{
    if (little_endian())
        return crc32c(crc, vals, n * sizeof *vals);
    unsigned char buf[LE_BLOCK * 8];
    while (n > 0) {
        size_t k = n < LE_BLOCK ? n : LE_BLOCK;
        for (size_t i = 0; i < k; i++) {
            unsigned long long u = (unsigned long long)vals[i];
            for (int b = 0; b < 8; b++)
                buf[i * 8 + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        crc = crc32c(crc, buf, k * 8);
        vals += k;
        n -= k;
    }
    return crc;
}

uint32_t sums_region_rows(int32_t id, const long long *vals, size_t n)
{
    long long lid = id;
    return sums_i64(sums_i64(0, &lid, 1), vals, n);
}

uint32_t sums_tile(size_t k, const int *m, size_t mw, size_t h, size_t w)
{
    long long lk = (long long)k;
    uint32_t crc = sums_i64(0, &lk, 1);
    int le = little_endian() && sizeof(int) == 4;
    unsigned char buf[LE_BLOCK * 4];
    if (le && mw == w) /* rows back to back: one call, in blocks */
        return crc32c(crc, m, h * w * sizeof *m);
    for (size_t y = 0; y < h; y++) {
        const int *row = m + y * mw;
        if (le) {
            crc = crc32c(crc, row, w * sizeof *row);
            continue;
        }
        for (size_t x0 = 0; x0 < w; x0 += LE_BLOCK) {
            size_t kk = w - x0 < LE_BLOCK ? w - x0 : LE_BLOCK;
            for (size_t i = 0; i < kk; i++) {
                uint32_t u = (uint32_t)row[x0 + i];
                for (int b = 0; b < 4; b++)
                    buf[i * 4 + (size_t)b] = (unsigned char)(u >> (8 * b));
            }
            crc = crc32c(crc, buf, kk * 4);
        }
    }
    return crc;
}

/* Through HDF5: the attribute of dataset `table` of v's group. */
static int att_h5(const raster_var *v, const char *table, size_t n,
                  uint32_t *out)
{
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* on the table's dataset when its rows are read next through it
     * (fileio_table_kept); else by name: opening the dataset itself costs
     * more than the read */
    hid_t kept = (hid_t)fileio_table_kept((raster_var *)v, table);
    hid_t fid = (hid_t)fileio_h5(v->file);
    char path[4096];
    int named = (size_t)snprintf(path, sizeof path, "%s/%s", v->h5path,
                                 table) < sizeof path;
    hid_t a = kept >= 0 ? H5Aopen(kept, SUMS_TABLE_ATT, H5P_DEFAULT)
              : fid >= 0 && named ? H5Aopen_by_name(fid, path, SUMS_TABLE_ATT,
                                                    H5P_DEFAULT, H5P_DEFAULT)
                                  : -1;
    hid_t space = a >= 0 ? H5Aget_space(a) : -1;
    hid_t type = a >= 0 ? H5Aget_type(a) : -1;
    int ok = space >= 0 && type >= 0 &&
             H5Sget_simple_extent_npoints(space) == (hssize_t)n &&
             fileio_holds(type, NC_UINT) == 1 &&
             H5Aread(a, H5T_NATIVE_UINT32, out) >= 0;
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (a >= 0)
        H5Aclose(a);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return ok ? 0 : -1;
}

int sums_table_att(const raster_var *v, const char *table, size_t n,
                   uint32_t *out)
{
    int ok;
    if (v->file->lean) {
        ok = att_h5(v, table, n, out) == 0;
    } else {
        int varid;
        nc_type type;
        size_t len;
        ok = nc_inq_varid(v->grpid, table, &varid) == NC_NOERR &&
             nc_inq_att(v->grpid, varid, SUMS_TABLE_ATT, &type, &len) ==
                 NC_NOERR &&
             type == NC_UINT && len == n &&
             (n == 0 || nc_get_att_uint(v->grpid, varid, SUMS_TABLE_ATT,
                                        (unsigned *)out) == NC_NOERR);
    }
    if (!ok)
        return raster_fail(RASTER_EFORMAT, "%s: checksums of table '%s' "
                           "missing or of the wrong type or length (%zu "
                           "wanted)", v->name, table, n);
    return RASTER_OK;
}

static void identity_of(const struct stat *st, int64_t *id)
{
    id[0] = (int64_t)st->st_dev;
    id[1] = (int64_t)st->st_ino;
    id[2] = (int64_t)st->st_size;
    id[3] = (int64_t)st->st_mtim.tv_sec;
    id[4] = (int64_t)st->st_mtim.tv_nsec;
}

void file_identity_record(raster_file *f)
{
    struct stat st;
    f->ident_known = f->fd >= 0 && fstat(f->fd, &st) == 0;
    if (f->ident_known)
        identity_of(&st, f->ident);
}

int file_unchanged(raster_file *f)
{
    if (!f->ident_known || f->writable)
        return RASTER_OK;
    struct stat st;
    int64_t now[FILE_IDENT_FIELDS];
    if (fstat(f->fd, &st) != 0)
        return raster_fail(RASTER_EIO, "%s: %s", f->path, strerror(errno));
    identity_of(&st, now);
    if (memcmp(now, f->ident, sizeof now) != 0)
        return raster_fail(RASTER_EFORMAT, "%s changed on disk since it was "
                           "opened (size or modification time); refusing "
                           "to read it: reopen it", f->path);
    return RASTER_OK;
}

/* ---- the seal ----------------------------------------------------------- */

/* The file a writable open is about to open, as it was before it. */
static _Thread_local struct {
    int known;
    struct stat st;
} before;

void seal_before_open(const char *path)
{
    before.known = path && stat(path, &before.st) == 0;
}

int64_t seal_of(raster_var *v)
{
    long long t = 0;
    if (v->grpid >= 0) {
        nc_type type;
        size_t len;
        if (nc_inq_att(v->grpid, NC_GLOBAL, SEAL_ATT, &type, &len) !=
                NC_NOERR ||
            type != NC_INT64 || len != 1 ||
            nc_get_att_longlong(v->grpid, NC_GLOBAL, SEAL_ATT, &t) !=
                NC_NOERR)
            t = 0;
    } else if (v->h5path) { /* a lean file's (lean.c) */
        hid_t fid = (hid_t)fileio_h5(v->file);
        hid_t g = fid >= 0 ? H5Gopen2(fid, v->h5path, H5P_DEFAULT) : -1;
        if (g < 0 || fileio_att(g, SEAL_ATT, NC_INT64, &t, 1, NULL) != 0)
            t = 0;
        if (g >= 0)
            H5Gclose(g);
    }
    return (int64_t)t;
}

int seal_intact(raster_file *f)
{
    struct stat st;
    if (!f->path || (f->fd >= 0 ? fstat(f->fd, &st) : stat(f->path, &st)) != 0)
        return 0;
    if (f->writable) { /* the open wrote it: its time before */
        int same = before.known && before.st.st_dev == st.st_dev &&
                   before.st.st_ino == st.st_ino;
        before.known = 0;
        if (!same)
            return 0;
        st.st_mtim = before.st.st_mtim;
    }
    if (st.st_mtim.tv_nsec != 0)
        return 0;
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int ok = 1;
    for (raster_var *v = f->vars; v && ok; v = v->next)
        if (var_tiled(v))
            ok = seal_of(v) == (int64_t)st.st_mtim.tv_sec;
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return ok;
}

int seal_trusted(raster_file *f)
{
    int tiled = 0;
    for (raster_var *v = f->vars; v && !tiled; v = v->next)
        tiled = var_tiled(v);
    if (!tiled)
        return 1; /* no program without raster writes their values */
    if (f->seal == 0)
        f->seal = seal_intact(f) ? 1 : -1;
    return f->seal > 0;
}

int seal_put(raster_file *f, int64_t *t)
{
    struct timespec now;
    *t = 0;
    if (f->seal > 0 && clock_gettime(CLOCK_REALTIME, &now) == 0)
        *t = (int64_t)now.tv_sec;
    long long val = (long long)*t;
    for (raster_var *v = f->vars; v; v = v->next) {
        int st = var_tiled(v) ? nc_put_att_longlong(v->grpid, NC_GLOBAL,
                                                    SEAL_ATT, NC_INT64, 1,
                                                    &val)
                              : NC_NOERR;
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "%s: sealing it: %s",
                                  v->name, nc_strerror(st));
    }
    return RASTER_OK;
}

int seal_stamp(const char *path, int64_t t)
{
    struct timespec times[2] = {{0, UTIME_OMIT}, {(time_t)t, 0}};
    if (!path || t <= 0)
        return RASTER_OK;
    if (utimensat(AT_FDCWD, path, times, 0) != 0)
        return raster_fail(RASTER_EIO, "%s: setting its modification time "
                           "(the seal): %s", path, strerror(errno));
    return RASTER_OK;
}
