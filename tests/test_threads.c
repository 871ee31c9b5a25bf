/*
 * test_threads.c - thread_start: helpers start away from their caller's
 * core where there is another, anywhere where there is not, and run
 * joined or detached.
 */
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "testutil.h"

#include "threads.h"

typedef struct seen {
    atomic_int ran;
    int cpu;
    cpu_set_t mask;
} seen;

static void *note(void *arg)
{
    seen *s = arg;
    s->cpu = sched_getcpu(); /* where it first ran */
    (void)sched_getaffinity(0, sizeof s->mask, &s->mask);
    atomic_store(&s->ran, 1);
    return NULL;
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

static int first_cpu(const cpu_set_t *s, int skip)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s) && c != skip)
            return c;
    return -1;
}

/* Started 20 times while the caller keeps its core: each helper first
 * runs elsewhere (before thread_start, 13 of 20 ran on the caller's core
 * on the bench VM), then may use every allowed core again. */
static void test_away_from_caller(void **state)
{
    (void)state;
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2)
        skip();
    int checked = 0;
    for (int i = 0; i < 20; i++) {
        seen s = {0};
        pthread_t tid;
        int before = sched_getcpu();
        assert_int_equal(thread_start(&tid, 0, note, &s), 0);
        int after = sched_getcpu();
        volatile double x = 0; /* the caller stays busy on its core */
        for (long k = 0; k < 200000; k++)
            x += (double)k;
        assert_int_equal(pthread_join(tid, NULL), 0);
        assert_int_equal(atomic_load(&s.ran), 1);
        assert_true(CPU_EQUAL(&s.mask, &allowed));
        if (before == after) { /* the caller did not move meanwhile */
            assert_int_not_equal(s.cpu, before);
            checked++;
        }
    }
    assert_true(checked > 0);
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
    /* detached: not joinable, so wait for its mark */
    for (int i = 0; i < 10000 && !atomic_load(&s.ran); i++)
        usleep(1000);
    assert_int_equal(atomic_load(&s.ran), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_away_from_caller),
        cmocka_unit_test(test_single_core_anywhere),
        cmocka_unit_test(test_detached_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
