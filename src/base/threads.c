/*
 * threads.c - helper threads started on another core than their caller's
 * (threads.h says why).
 */
#include "threads.h"

#include <sched.h>

#include "alloc.h"

/* What a helper runs, and the cores it may use once it runs. By default
 * the start's mask only places it: kept, it would hold helpers that
 * outlast their caller's busy spell (the direct writer, the statistics'
 * row threads) off the caller's core when that core goes idle. A team's
 * helper (`keep`) ends with the spell and keeps it. */
typedef struct launch {
    void *(*fn)(void *);
    void *arg;
    int keep;
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t allowed;
    cpu_set_t start; /* the cores it was started on */
#endif
} launch;

#if defined(__linux__) && defined(CPU_SETSIZE)
/* thread_started's: noted before the mask is widened */
static _Thread_local int started_cpu = -1;
static _Thread_local cpu_set_t started_mask;

int thread_started(cpu_set_t *mask)
{
    *mask = started_mask;
    return started_cpu;
}
#endif

static void *trampoline(void *p)
{
    launch l = *(launch *)p;
    raster_free(p);
#if defined(__linux__) && defined(CPU_SETSIZE)
    started_cpu = sched_getcpu();
    started_mask = l.start;
    if (!l.keep)
        (void)sched_setaffinity(0, sizeof l.allowed, &l.allowed); /* a hint */
#endif
    return l.fn(l.arg);
}

#if defined(__linux__) && defined(CPU_SETSIZE)
/* The calling thread's core and the cores it may use: 1 when there is
 * another one. */
static int caller_cores(int *here, cpu_set_t *cores)
{
    *here = sched_getcpu();
    return *here >= 0 && *here < CPU_SETSIZE &&
           sched_getaffinity(0, sizeof *cores, cores) == 0 &&
           CPU_ISSET(*here, cores) && CPU_COUNT(cores) >= 2;
}
#endif

/* The caller's core and the cores it may use (a held team's: those it
 * had before the hold), in l->allowed: 1 when there is another core. */
static int helper_cores(const thread_team *team, launch *l, int *here)
{
#if defined(__linux__) && defined(CPU_SETSIZE)
    if (!team || !team->held)
        return caller_cores(here, &l->allowed);
    *here = team->here;
    l->allowed = team->cores;
    return 1;
#else
    (void)team;
    (void)l;
    (void)here;
    return 0;
#endif
}

/* Starts fn(arg) on `l`'s cores but the caller's (`away`) or on all of
 * them (a held team's helper that could not be placed: the creator's
 * own mask, one core, is what it would inherit). */
static int start_with(pthread_t *tid, pthread_attr_t *attr, launch *l,
                      int here, int away)
{
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t mask = l->allowed;
    if (away)
        CPU_CLR(here, &mask);
    if (pthread_attr_setaffinity_np(attr, sizeof mask, &mask) != 0)
        return -1;
    l->start = mask;
    return pthread_create(tid, attr, trampoline, l);
#else
    (void)tid, (void)attr, (void)l, (void)here, (void)away;
    return -1;
#endif
}

static int start(pthread_t *tid, int detached, const thread_team *team,
                 void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr), here = -1;
    if (rc != 0)
        return rc;
    if (detached)
        rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    launch *l = rc == 0 ? raster_malloc(sizeof *l) : NULL;
    int held = team && team->held, placed = -1;
    if (l && helper_cores(team, l, &here)) {
        l->fn = fn;
        l->arg = arg;
        l->keep = held;
        placed = start_with(tid, &attr, l, here, 1);
        if (placed != 0) { /* cores that went away since: any of them */
            l->keep = 0;
            placed = start_with(tid, &attr, l, here, 0);
        }
        if (placed == 0)
            l = NULL; /* the thread's now */
    }
    /* not placed: a plain start, but not from a held caller, whose one
     * core is all it would inherit (the caller does its share instead) */
    if (rc == 0 && placed != 0)
        rc = held ? -1 : pthread_create(tid, &attr, fn, arg);
    raster_free(l);
    (void)pthread_attr_destroy(&attr);
    return rc;
}

int thread_start(pthread_t *tid, int detached, void *(*fn)(void *),
                 void *arg)
{
    return start(tid, detached, NULL, fn, arg);
}

void thread_team_begin(thread_team *t)
{
    t->held = 0;
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t one;
    if (!caller_cores(&t->here, &t->cores))
        return;
    CPU_ZERO(&one);
    CPU_SET(t->here, &one);
    t->held = sched_setaffinity(0, sizeof one, &one) == 0;
#endif
}

int thread_team_start(thread_team *t, pthread_t *tid, int detached,
                      void *(*fn)(void *), void *arg)
{
    return start(tid, detached, t, fn, arg);
}

void thread_team_end(thread_team *t)
{
#if defined(__linux__) && defined(CPU_SETSIZE)
    if (t->held) /* a hint, as the hold was: cores gone since are the
                    kernel's business */
        (void)sched_setaffinity(0, sizeof t->cores, &t->cores);
#endif
    t->held = 0;
}
