/*
 * threads.h - helper threads started on another core than their caller's
 *
 * A thread a reader or writer starts to share its work wants the other
 * core, and Linux often queues a new thread on its creator's core: while
 * the creator stays busy, the helper waited 1.5-5 ms there before the load
 * balancer moved it (13 of 20 starts on the bench VM; 0.05-0.15 ms when
 * started on the idle core), which is the whole of a region's move on two
 * threads (docs/PERFORMANCE.md, "Helpers started late").
 */
#ifndef RASTER_THREADS_H
#define RASTER_THREADS_H

#include <pthread.h>
#include <sched.h>

/* pthread_create(tid, ..., fn, arg), detached when `detached`, started on
 * any core the caller may use but its current one, then free to use them
 * all (a hint: none where there is a single core or the kernel refuses
 * it). Returns pthread_create's result. */
int thread_start(pthread_t *tid, int detached, void *(*fn)(void *),
                 void *arg);

/* A caller and the helpers that share its busy spell (a read's threads).
 * Left free, Linux now and then moved one of them onto the other's core
 * while both were busy, for milliseconds: a region's move on two threads
 * took 7.8-8.1 ms in half the runs and 9-16 ms in the rest (the bench VM,
 * Atlantic); with the caller held on its core and its helpers off it,
 * 7.8-8.3 ms in 28 runs of 28 (docs/PERFORMANCE.md, "Threads held").
 * thread_team_begin() holds the calling thread on the core it runs on
 * (when it may use another: nothing to hold otherwise), saving its
 * cores; thread_team_start() starts a helper as thread_start() does but,
 * in a held team, keeps it off the caller's core for its whole life (so
 * helpers must not outlast the spell), and does not start one it cannot
 * place there (nonzero: the caller does that share itself);
 * thread_team_end() gives the caller its cores back, before it waits for
 * its helpers. */
typedef struct thread_team {
    int held;
#if defined(__linux__) && defined(CPU_SETSIZE)
    cpu_set_t cores; /* the caller's, restored at the end */
    int here;
#endif
} thread_team;

void thread_team_begin(thread_team *t);
int thread_team_start(thread_team *t, pthread_t *tid, int detached,
                      void *(*fn)(void *), void *arg);
void thread_team_end(thread_team *t);

#if defined(__linux__) && defined(CPU_SETSIZE)
/* Called by a helper: the core it first ran on (-1: not started by
 * thread_start or thread_team_start, or not placed), and in *mask the
 * cores it was started on. For tests: once it runs, a helper may be moved
 * to any core its widened mask allows, so where it runs later proves
 * nothing about where it was placed. */
int thread_started(cpu_set_t *mask);
#endif

#endif
