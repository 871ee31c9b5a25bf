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
    s->cpu = sched_getcpu();
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

static void test_away_from_caller(void **state)
{
    (void)state;
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2)
        skip();
    seen s = {0};
    pthread_t tid;
    assert_int_equal(thread_start(&tid, 0, note, &s), 0);
    assert_int_equal(pthread_join(tid, NULL), 0);
    assert_int_equal(atomic_load(&s.ran), 1);
    /* every allowed core but one: the caller's when it started it (the
     * caller may have moved since, so which one is not asked) */
    cpu_set_t both;
    CPU_AND(&both, &s.mask, &allowed);
    assert_int_equal(CPU_COUNT(&both), CPU_COUNT(&s.mask));
    assert_int_equal(CPU_COUNT(&s.mask), CPU_COUNT(&allowed) - 1);
    assert_true(CPU_ISSET(s.cpu, &s.mask));
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
