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

/* pthread_create(tid, ..., fn, arg), detached when `detached`, started on
 * any core the caller may use but its current one, then free to use them
 * all (a hint: none where there is a single core or the kernel refuses
 * it). Returns pthread_create's result. */
int thread_start(pthread_t *tid, int detached, void *(*fn)(void *),
                 void *arg);

#endif
