/*
 * threads.c - helper threads started on another core than their caller's
 * (threads.h says why).
 */
#include "threads.h"

#include <sched.h>

/* Sets attr's cores to the allowed ones but the caller's: 1 when set. */
static int away_from_caller(pthread_attr_t *attr)
{
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t allowed;
    int here = sched_getcpu();
    if (here < 0 || here >= CPU_SETSIZE ||
        sched_getaffinity(0, sizeof allowed, &allowed) != 0 ||
        !CPU_ISSET(here, &allowed) || CPU_COUNT(&allowed) < 2)
        return 0;
    CPU_CLR(here, &allowed);
    return pthread_attr_setaffinity_np(attr, sizeof allowed, &allowed) == 0;
#else
    (void)attr;
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
    *placed = rc == 0 && away && away_from_caller(&attr);
    if (rc == 0)
        rc = pthread_create(tid, &attr, fn, arg);
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
