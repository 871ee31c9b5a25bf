/*
 * test_threads.c - thread_start: helpers start away from their caller's
 * core where there is another, anywhere where there is not, and run
 * joined or detached; a team holds its caller on its core and its helpers
 * off it until the team ends, then gives the caller its cores back.
 */
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#include "threads.h"

typedef struct seen {
    atomic_int ran;
    int cpu;         /* where it ran its function */
    cpu_set_t mask;  /* its cores then */
    int first;       /* where it first ran (thread_started) */
    cpu_set_t start; /* the cores it was started on */
} seen;

static void *note(void *arg)
{
    seen *s = arg;
    s->first = thread_started(&s->start);
    s->cpu = sched_getcpu();
    (void)sched_getaffinity(0, sizeof s->mask, &s->mask);
    atomic_store(&s->ran, 1);
    return NULL;
}

/* The calling thread's context switches so far: while they stay the
 * same, it has run on one core (a move to another takes a switch). */
static long switches(void)
{
    struct rusage r;
    assert_int_equal(getrusage(RUSAGE_THREAD, &r), 0);
    return r.ru_nvcsw + r.ru_nivcsw;
}

/* Pins the calling thread to `cpu` only; returns its mask before. */
static cpu_set_t pin_to(int cpu)
{
    cpu_set_t was, one;
    assert_int_equal(sched_getaffinity(0, sizeof was, &was), 0);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    return was;
}

/* Keeps the calling thread busy on its core for a moment. */
static void keep_busy(void)
{
    volatile double x = 0;
    for (long k = 0; k < 200000; k++)
        x += (double)k;
}

static int first_cpu(const cpu_set_t *s, int skip)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s) && c != skip)
            return c;
    return -1;
}

/* Started while the caller keeps its core: each helper is started on
 * every allowed core but the caller's and first runs on one of them
 * (before thread_start, 13 of 20 ran on the caller's core on the bench
 * VM), then may use every allowed core again. Where it runs its function
 * proves nothing (on a busy machine the kernel may have moved it to the
 * caller's core by then): thread_started tells where it was placed. The
 * core left out is the caller's: checked 20 times where the caller ran on
 * one core throughout (no context switch around the start). */
static void test_away_from_caller(void **state)
{
    (void)state;
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2)
        skip();
    int checked = 0;
    for (int i = 0; i < 2000 && checked < 20; i++) {
        seen s = {0};
        pthread_t tid;
        long sw = switches();
        int before = sched_getcpu();
        assert_int_equal(thread_start(&tid, 0, note, &s), 0);
        int after = sched_getcpu();
        int stayed = switches() == sw && before == after;
        keep_busy(); /* the caller stays busy on its core */
        assert_int_equal(pthread_join(tid, NULL), 0);
        assert_int_equal(atomic_load(&s.ran), 1);
        assert_true(CPU_EQUAL(&s.mask, &allowed));
        /* started on all allowed cores but one, first ran on one of them */
        cpu_set_t in;
        CPU_AND(&in, &s.start, &allowed);
        assert_true(CPU_EQUAL(&in, &s.start));
        assert_int_equal(CPU_COUNT(&s.start), CPU_COUNT(&allowed) - 1);
        assert_true(s.first >= 0 && s.first < CPU_SETSIZE);
        assert_true(CPU_ISSET(s.first, &s.start));
        if (stayed) { /* the one left out: the caller's */
            assert_false(CPU_ISSET(before, &s.start));
            checked++;
        }
    }
    assert_int_equal(checked, 20);
}

static void test_single_core_anywhere(void **state)
{
    (void)state;
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    cpu_set_t was = pin_to(first_cpu(&allowed, -1));
    seen s = {0};
    pthread_t tid;
    /* one core allowed: started there, not refused */
    assert_int_equal(thread_start(&tid, 0, note, &s), 0);
    assert_int_equal(pthread_join(tid, NULL), 0);
    assert_int_equal(atomic_load(&s.ran), 1);
    assert_int_equal(CPU_COUNT(&s.mask), 1);
    assert_int_equal(s.cpu, first_cpu(&allowed, -1));
    assert_int_equal(sched_setaffinity(0, sizeof was, &was), 0);
}

static void test_detached_runs(void **state)
{
    (void)state;
    seen s = {0};
    pthread_t tid;
    assert_int_equal(thread_start(&tid, 1, note, &s), 0);
    /* detached: not joinable, so wait for its mark (a minute: a loaded
     * machine may start it late, one that never runs it fails) */
    struct timespec t0, t;
    assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t0), 0);
    do {
        if (atomic_load(&s.ran))
            break;
        usleep(1000);
        assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t), 0);
    } while (t.tv_sec - t0.tv_sec < 60);
    assert_int_equal(atomic_load(&s.ran), 1);
}

/* A team's helper notes its cores when it starts and again after the
 * caller's share of the work (`go`): they must not change. */
typedef struct mate {
    seen first;
    atomic_int go;
    cpu_set_t later;
} mate;

static void *team_mate(void *arg)
{
    mate *m = arg;
    (void)note(&m->first);
    while (!atomic_load(&m->go))
        sched_yield();
    (void)sched_getaffinity(0, sizeof m->later, &m->later);
    return NULL;
}

static void test_team_held(void **state)
{
    (void)state;
    cpu_set_t allowed, during, after;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2)
        skip();
    for (int i = 0; i < 5; i++) {
        thread_team team;
        mate m = {0};
        pthread_t tid;
        thread_team_begin(&team);
        int here = sched_getcpu();
        /* the caller: on its core only, the one it ran on */
        assert_int_equal(sched_getaffinity(0, sizeof during, &during), 0);
        assert_int_equal(CPU_COUNT(&during), 1);
        assert_true(CPU_ISSET(here, &during));
        assert_int_equal(thread_team_start(&team, &tid, 0, team_mate, &m),
                         0);
        keep_busy();
        thread_team_end(&team);
        atomic_store(&m.go, 1);
        assert_int_equal(pthread_join(tid, NULL), 0);
        /* the helper: every allowed core but the caller's, for its life
         * (before, it was given them all once it ran) */
        cpu_set_t away = allowed;
        CPU_CLR(here, &away);
        assert_true(CPU_EQUAL(&m.first.start, &away));
        assert_true(CPU_EQUAL(&m.first.mask, &away));
        assert_true(CPU_EQUAL(&m.later, &away));
        assert_int_not_equal(m.first.cpu, here);
        /* the caller has its cores back */
        assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
        assert_true(CPU_EQUAL(&after, &allowed));
    }
}

/* One core allowed: nothing to hold; helpers start there, as
 * thread_start's. */
static void test_team_single_core(void **state)
{
    (void)state;
    cpu_set_t allowed, after;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    cpu_set_t was = pin_to(first_cpu(&allowed, -1));
    thread_team team;
    mate m = {0};
    pthread_t tid;
    thread_team_begin(&team);
    assert_int_equal(team.held, 0);
    assert_int_equal(thread_team_start(&team, &tid, 0, team_mate, &m), 0);
    atomic_store(&m.go, 1);
    thread_team_end(&team);
    assert_int_equal(pthread_join(tid, NULL), 0);
    assert_int_equal(CPU_COUNT(&m.first.mask), 1);
    assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
    assert_int_equal(CPU_COUNT(&after), 1);
    assert_int_equal(sched_setaffinity(0, sizeof was, &was), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_away_from_caller),
        cmocka_unit_test(test_single_core_anywhere),
        cmocka_unit_test(test_detached_runs),
        cmocka_unit_test(test_team_held),
        cmocka_unit_test(test_team_single_core),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
