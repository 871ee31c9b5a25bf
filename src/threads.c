/*
 * threads.c - helper threads started on another core than their caller's
 * (threads.h says why).
 */
#include "threads.h"

#include <sched.h>

#include "alloc.h"

/* What a helper runs, and the cores it may use once it runs: the start's
 * mask only places it. Kept, it would hold helpers that outlast their
 * caller's busy spell (the direct writer, the statistics' row threads)
 * off the caller's core when that core goes idle. */
typedef struct launch {
    void *(*fn)(void *);
    void *arg;
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t allowed;
#endif
} launch;

static void *trampoline(void *p)
{
    launch l = *(launch *)p;
    raster_free(p);
#if defined(__linux__) && defined(CPU_SETSIZE)
    (void)sched_setaffinity(0, sizeof l.allowed, &l.allowed); /* a hint */
#endif
    return l.fn(l.arg);
}

/* Sets attr's cores to the allowed ones but the caller's: 1 when set,
 * the allowed ones in *l. */
static int away_from_caller(pthread_attr_t *attr, launch *l)
{
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t away;
    int here = sched_getcpu();
    if (here < 0 || here >= CPU_SETSIZE ||
        sched_getaffinity(0, sizeof l->allowed, &l->allowed) != 0 ||
        !CPU_ISSET(here, &l->allowed) || CPU_COUNT(&l->allowed) < 2)
        return 0;
    away = l->allowed;
    CPU_CLR(here, &away);
    return pthread_attr_setaffinity_np(attr, sizeof away, &away) == 0;
#else
    (void)attr;
    (void)l;
    return 0;
#endif
}

static int start(pthread_t *tid, int detached, int away,
                 void *(*fn)(void *), void *arg, int *placed)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    if (detached)
        rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    launch *l = rc == 0 && away ? raster_malloc(sizeof *l) : NULL;
    *placed = l && away_from_caller(&attr, l);
    if (*placed) {
        l->fn = fn;
        l->arg = arg;
        rc = pthread_create(tid, &attr, trampoline, l);
        if (rc != 0)
            raster_free(l);
    } else {
        raster_free(l);
        if (rc == 0)
            rc = pthread_create(tid, &attr, fn, arg);
    }
    (void)pthread_attr_destroy(&attr);
    return rc;
}

int thread_start(pthread_t *tid, int detached, void *(*fn)(void *),
                 void *arg)
{
    int placed = 0, rc = start(tid, detached, 1, fn, arg, &placed);
    /* cores that went away since they were asked for: anywhere, then */
    if (rc != 0 && placed)
        rc = start(tid, detached, 0, fn, arg, &placed);
    return rc;
}
