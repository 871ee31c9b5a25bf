/*
 * fanout.c - large reads on several threads.
 *
 * A large fast-path read, a read of many short staged spans (a thin band)
 * and a read by windows are split by plane among raster's threads, the
 * caller's included: each takes the next turn (a plane's spans, or fewer)
 * until none is left, with buffers of its own, so that a thread the host
 * holds back reads less instead of holding the read back. Helpers are
 * detached and cancelled when they have not started by the time the
 * caller has taken every turn. Here too: how many threads a read gets
 * (raster_set_threads, $RASTER_THREADS, idle cores).
 */
#include "fanout.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "threads.h"
#include "windows.h"

static atomic_size_t threads_ran; /* helpers that ran */

size_t chunkio_threads_ran(void) { return atomic_load(&threads_ran); }

/* Fast-path reads of at least this many bytes are split among threads by
 * plane: the copies out of the page cache (and the first touch of the
 * output's pages) then run on several cores. */
#define THREAD_MIN_BYTES ((size_t)16 << 20)

static atomic_int threads_set; /* raster_set_threads(); 0: the default */

void chunkio_set_threads(int n) { atomic_store(&threads_set, n); }

/* Online cores, asked once: glibc reads /sys for it (three system calls) */
static long online_cores(void)
{
    static atomic_long cores_seen;
    long cores = atomic_load_explicit(&cores_seen, memory_order_relaxed);
    if (cores == 0) {
        cores = sysconf(_SC_NPROCESSORS_ONLN);
        cores = cores > 0 ? cores : 1;
        atomic_store_explicit(&cores_seen, cores, memory_order_relaxed);
    }
    return cores;
}

/* Threads for one large read: raster_set_threads(), else $RASTER_THREADS
 * (1 = none), else 2 where there are 2 cores or more; 1 in the MPI flavour,
 * whose ranks already share the cores. */
int fanout_read_threads(void)
{
    int set = atomic_load(&threads_set);
    if (set > 0)
        return set > MAX_READ_THREADS ? MAX_READ_THREADS : set;
    const char *e = getenv("RASTER_THREADS");
    if (e && *e) {
        char *end;
        long n = strtol(e, &end, 10);
        if (*end == '\0' && n >= 1)
            return n > MAX_READ_THREADS ? MAX_READ_THREADS : (int)n;
        return 1; /* not a count: no threads (the shim warns) */
    }
#ifdef RASTER_MPI
    return 1;
#else
    return online_cores() >= 2 ? 2 : 1;
#endif
}

/* 1 when the read threads were set (raster_set_threads, $RASTER_THREADS) */
int fanout_threads_chosen(void)
{
    const char *e = getenv("RASTER_THREADS");
    return atomic_load(&threads_set) > 0 || (e && *e);
}

static atomic_int idle_set = -2; /* chunkio_set_idle */

void chunkio_set_idle(int n) { atomic_store(&idle_set, n); }

/* Cores nothing is running on at this instant (the runnable count of
 * /proc/loadavg, the caller included), -1 when unknown. A helper of a
 * thin read pays only on an idle core: on a busy one it took turns with
 * the caller or another program, and the read was 8% slower than on one
 * thread (docs/PERFORMANCE.md). */
int fanout_idle_cores(void)
{
    int forced = atomic_load(&idle_set);
    if (forced >= -1)
        return forced;
    char b[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    (void)close(fd);
    if (n <= 0)
        return -1;
    b[n] = '\0';
    char *p = b, *end; /* "0.50 0.40 0.30 2/345 6789": the fourth field */
    for (int f = 0; f < 3 && p; f++)
        if ((p = strchr(p, ' ')) != NULL)
            p++;
    if (!p)
        return -1;
    long running = strtol(p, &end, 10);
    if (end == p || *end != '/' || running < 1)
        return -1;
    long idle = online_cores() - running;
    return idle > 0 ? (int)idle : 0;
}

/* 1 when a read is worth threads: every span on the fast path, and bytes
 * enough to pay for starting them. */
int fanout_threads_pay(const xfer *x, const span *spans, size_t nspans,
                       const size_t *ocount)
{
    const raster_var *v = x->v;
    size_t planes = 1, cells = 0;
    for (int i = 0; i < var_nouter(v); i++)
        planes *= ocount[i];
    for (size_t i = 0; i < nspans; i++) {
        if (!v->addr[spans[i].store].ok || v->file->fd < 0)
            return 0;
        cells += spans[i].covered;
    }
    return planes >= 2 && cells * v->elem * planes >= THREAD_MIN_BYTES;
}

/* Reads of many short spans (a thin band: a pread of about 10 KB per tile
 * and plane) take threads from this many bytes pread on: their time is the
 * kernel's, a system call and a page-cache copy per span, which 2 cores
 * halve; a thread's start costs about what 0.3 MB of such reads do. */
#define THREAD_MIN_STAGED ((size_t)2 << 20)
#define THREAD_MIN_PREADS 128
static atomic_size_t staged_min_set[2]; /* chunkio_set_staged_min; 0: above */

void chunkio_set_staged_min(size_t bytes, size_t reads)
{
    atomic_store(&staged_min_set[0], bytes);
    atomic_store(&staged_min_set[1], reads);
}

/* 1 when a read of many staged spans is worth threads: every span on the
 * fast path, none from the span cache (a handle's repeated thin reads copy
 * a few values out of memory), and enough preads and bytes. */
int fanout_staged_pay(const xfer *x, const span *spans, size_t nspans,
                      const size_t *ocount)
{
    const raster_var *v = x->v;
    size_t planes = 1, bytes = 0, reads = 0;
    if (x->cache || x->win || v->file->fd < 0)
        return 0;
    for (int i = 0; i < var_nouter(v); i++)
        planes *= ocount[i];
    for (size_t i = 0; i < nspans; i++) {
        const span *s = &spans[i];
        if (!v->addr[s->store].ok)
            return 0;
        if (s->strided ||
            s->covered * v->elem < STAGE_PIECE_BYTES * (s->p1 - s->p0)) {
            bytes += (size_t)(s->hi - s->lo) * v->elem;
            reads++;
        }
    }
    size_t min_bytes = atomic_load(&staged_min_set[0]);
    size_t min_reads = atomic_load(&staged_min_set[1]);
    return planes >= 2 &&
           reads * planes >= (min_reads ? min_reads : THREAD_MIN_PREADS) &&
           bytes * planes >= (min_bytes ? min_bytes : THREAD_MIN_STAGED);
}

typedef struct worker {
    xfer x; /* its own stage, iovecs and junk */
    const span *spans;
    size_t nspans;
    const size_t *flat, *plane; /* the planes to read: [0, np) */
    size_t np;
    size_t per;          /* spans a turn: a plane's, or fewer */
    atomic_size_t *next; /* the next turn nobody has taken */
    int rc;
    char msg[512]; /* the error message, from its thread */
} worker;

/* A read thread: takes turns (a plane's spans, or fewer) one at a time
 * until none is left, so that a thread whose vCPU the host holds back
 * reads fewer planes instead of holding the read back (an even split
 * waited for the slower half). */
static void *work(void *arg)
{
    worker *w = arg;
    const xfer *x = &w->x;
    /* a turn: spans [g * per, (g + 1) * per) of plane i */
    size_t groups = w->nspans ? (w->nspans + w->per - 1) / w->per : 1;
    for (size_t u; w->rc == RASTER_OK &&
                   (u = atomic_fetch_add(w->next, 1)) < w->np * groups;) {
        size_t i = u / groups, g = u % groups;
        if (x->fault && g == 0)
            spans_prefault(spans_plane_ptr(x, w->plane[i], 0),
                           x->plane_cells * x->v->elem);
        if (x->win)
            w->rc = windows_read(&w->x, w->flat[i], w->plane[i]);
        size_t k1 = (g + 1) * w->per < w->nspans ? (g + 1) * w->per
                                                 : w->nspans;
        for (size_t k = g * w->per; !x->win && k < k1 && w->rc == RASTER_OK;
             k++)
            w->rc = spans_read_direct(&w->x, &w->spans[k], w->flat[i],
                                      w->plane[i], 1);
    }
    if (w->rc)
        snprintf(w->msg, sizeof w->msg, "%s", raster_errmsg());
    return NULL;
}

/* A helper thread's hold on its worker. The thread is detached: when it
 * has not started by the time the caller has taken every plane (the other
 * core busy), the caller cancels it instead of waiting for the scheduler
 * to run it (a join then cost up to a time slice, more than a thin band's
 * whole read); a thread that claimed its worker is waited for. The slot
 * outlives the read until both sides let go of it. */
enum { SLOT_POSTED, SLOT_CLAIMED, SLOT_CANCELLED };
typedef struct wslot {
    atomic_int state;
    atomic_int refs; /* 2: the thread and the caller */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    worker *w; /* touched only once claimed */
} wslot;

static atomic_int helpers_mode; /* chunkio_set_helpers */

void chunkio_set_helpers(int mode) { atomic_store(&helpers_mode, mode); }

static void slot_release(wslot *sl)
{
    if (atomic_fetch_sub(&sl->refs, 1) != 1)
        return;
    pthread_cond_destroy(&sl->cv);
    pthread_mutex_destroy(&sl->mu);
    raster_free(sl);
}

static void *work_thread(void *arg)
{
    wslot *sl = arg;
    int posted = SLOT_POSTED;
    if (atomic_compare_exchange_strong(&sl->state, &posted, SLOT_CLAIMED)) {
        fileio_thread_quiet();
        work(sl->w);
        pthread_mutex_lock(&sl->mu);
        sl->done = 1;
        pthread_cond_signal(&sl->cv);
        pthread_mutex_unlock(&sl->mu);
    }
    slot_release(sl);
    return NULL;
}

/* A cancelled helper may run after the read returned, in this library's
 * code: the library is pinned (never unmapped by dlclose) before the first
 * one starts. Statically linked, this finds the program: harmless. */
static void pin_library(void)
{
    Dl_info info;
    if (dladdr((void *)pin_library, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* A detached thread of team t on worker w: its slot, or NULL (no
 * thread). */
static wslot *slot_start(thread_team *t, worker *w)
{
    static pthread_once_t pinned = PTHREAD_ONCE_INIT;
    (void)pthread_once(&pinned, pin_library);
    wslot *sl = raster_calloc(1, sizeof *sl);
    if (!sl)
        return NULL;
    atomic_init(&sl->state, SLOT_POSTED);
    atomic_init(&sl->refs, 2);
    sl->w = w;
    int ok = pthread_mutex_init(&sl->mu, NULL) == 0;
    if (ok && pthread_cond_init(&sl->cv, NULL) != 0) {
        pthread_mutex_destroy(&sl->mu);
        ok = 0;
    }
    if (!ok) {
        raster_free(sl);
        return NULL;
    }
    pthread_t tid;
    if (atomic_load(&helpers_mode) == 2) /* a test: as if never started */
        atomic_store(&sl->state, SLOT_CANCELLED);
    int started = thread_team_start(t, &tid, 1, work_thread, sl) == 0;
    if (!started) {
        atomic_store(&sl->refs, 1);
        slot_release(sl);
        return NULL;
    }
    return sl;
}

/* After the caller's own share: 1 when the slot's thread had claimed its
 * worker (now finished), 0 when it was cancelled before it started. */
static int slot_finish(wslot *sl)
{
    int state = SLOT_POSTED, ran = 1;
    if (atomic_load(&helpers_mode) == 1)
        state = SLOT_CLAIMED; /* a test: waited for, whenever it starts */
    else if (atomic_compare_exchange_strong(&sl->state, &state,
                                            SLOT_CANCELLED))
        state = SLOT_CANCELLED;
    if (state == SLOT_CANCELLED)
        ran = 0;
    else {
        pthread_mutex_lock(&sl->mu);
        while (!sl->done)
            pthread_cond_wait(&sl->cv, &sl->mu);
        pthread_mutex_unlock(&sl->mu);
    }
    slot_release(sl);
    return ran;
}

/* Reads every plane of the outer box on n threads (the caller's included),
 * each with buffers of its own, each taking the next turn (`per` spans of
 * a plane; a whole plane by windows) in turn. Returns -1 (nothing read)
 * when the plan cannot be made, else a status. */
int fanout_read_threaded(const xfer *x0, const span *spans, size_t nspans,
                         const size_t *ostart, const size_t *ocount,
                         const ptrdiff_t *ostride, int n, size_t per)
{
    raster_var *v = x0->v;
    int no = var_nouter(v);
    size_t np = 1;
    for (int i = 0; i < no; i++)
        np *= ocount[i];
    size_t *flat = raster_reallocarray(NULL, np, 2 * sizeof *flat);
    worker *w = raster_calloc((size_t)n, sizeof *w);
    wslot *slot[MAX_READ_THREADS] = {NULL};
    int rc = RASTER_OK;
    atomic_size_t next = 0;
    if (!flat || !w) {
        raster_free(flat);
        raster_free(w);
        return -1;
    }
    size_t *plane = flat + np;
    for (size_t p = 0; p < np; p++) { /* plane p: its flat outer index */
        size_t rest = p, f = 0, idx[RASTER_MAX_DIMS];
        for (int i = no - 1; i >= 0; i--) {
            idx[i] = rest % ocount[i];
            rest /= ocount[i];
        }
        for (int i = 0; i < no; i++)
            f = f * x0->full[i] + ostart[i] +
                idx[i] * (size_t)(ostride ? ostride[i] : 1);
        flat[p] = f;
        plane[p] = p;
    }
    /* a helper's stage: what read_staged reads at once, at most (a thin
     * band's span: 10 KB, where a fresh 1 MiB cost the helper a mapping) */
    size_t need = windows_stage_bytes(x0->win);
    if (!x0->win) {
        need = 64;
        for (size_t i = 0; i < nspans; i++) {
            size_t b = (size_t)(spans[i].hi - spans[i].lo) * x0->v->elem;
            b = b < STAGE_BYTES ? b : STAGE_BYTES;
            need = b > need ? b : need;
        }
    }
    for (int t = 0; t < n; t++) {
        w[t].x = *x0;
        w[t].x.iov = NULL;
        w[t].x.iov_cap = 0;
        w[t].x.tmp = NULL;
        w[t].x.junk = raster_malloc(GAP_BYTES + 64);
        /* the caller's own stage serves its share */
        w[t].x.stage = t == 0 ? x0->stage : raster_scratch(need, 1);
        w[t].spans = spans;
        w[t].nspans = nspans;
        w[t].flat = flat;
        w[t].plane = plane;
        w[t].np = np;
        /* windows go a plane at a time */
        w[t].per = x0->win || per == 0 || per > nspans ? nspans : per;
        if (w[t].per == 0)
            w[t].per = 1;
        w[t].next = &next;
        if (!w[t].x.junk || !w[t].x.stage)
            rc = -1;
    }
    thread_team team;
    thread_team_begin(&team);
    for (int t = 1; t < n && rc == RASTER_OK; t++)
        slot[t] = slot_start(&team, &w[t]);
    if (rc == RASTER_OK)
        work(&w[0]);
    thread_team_end(&team);
    if (rc == RASTER_OK) {
        for (int t = 1; t < n; t++) {
            /* no thread, or one cancelled: nothing left, or its error */
            if (!slot[t] || !slot_finish(slot[t]))
                work(&w[t]);
            else
                atomic_fetch_add(&threads_ran, 1);
        }
        for (int t = 0; t < n && rc == RASTER_OK; t++)
            if (w[t].rc)
                rc = raster_fail(w[t].rc, "%s", w[t].msg);
    }
    for (int t = 0; t < n; t++) {
        raster_free(w[t].x.junk);
        if (t > 0)
            raster_scratch_free(w[t].x.stage);
        raster_free(w[t].x.iov);
    }
    raster_free(w);
    raster_free(flat);
    return rc;
}
