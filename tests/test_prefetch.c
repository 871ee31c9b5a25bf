/*
 * test_prefetch.c - the load ahead of a read (prefetch.c): a long stretch
 * is loaded on a helper thread and waited for by offset; a stretch longer
 * than a read's load budget is only announced (nothing to wait for);
 * short ranges are only announced.
 */
#include <fcntl.h>
#include <unistd.h>

#include "testutil.h"

#include "prefetch.h"

enum { MB = 1 << 20 };

static int make_file(const char *name, off_t size, char *path, size_t len)
{
    tmpdir_path(path, len, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, size), 0); /* holes: nothing written */
    return fd;
}

/* 16 MiB in four ranges with small holes: one stretch, loaded behind */
static void test_behind(void **state)
{
    (void)state;
    char path[600];
    int fd = make_file("behind", 32 * MB, path, sizeof path);
    const off_t r[4][2] = {{MB, 4 * MB},
                           {5 * MB + 4096, 4 * MB},
                           {9 * MB + 8192, 4 * MB},
                           {13 * MB + 8192, 4 * MB}};
    size_t before = prefetch_loaded_bytes(), begun = prefetch_begun();
    prefetch *p = prefetch_begin(fd, r, 4, PREFETCH_BEHIND);
    assert_non_null(p);
    assert_true(prefetch_loads(p, MB));
    assert_true(prefetch_loads(p, 17 * MB));
    assert_false(prefetch_loads(p, MB - 1));
    assert_false(prefetch_loads(p, 17 * MB + 8192));
    prefetch_wait(p, 17 * MB + 8192);
    assert_true(prefetch_passed(p, 17 * MB + 8192));
    prefetch_end(p);
    assert_int_equal(prefetch_loaded_bytes() - before, 16 * MB + 8192);
    /* short ranges: announced, nothing to wait for */
    const off_t s[2][2] = {{0, 4096}, {8 * MB, 4096}};
    assert_null(prefetch_begin(fd, s, 2, PREFETCH_BEHIND));
    prefetch_end(NULL);
    /* both counted (a read from disk began a load); no ranges, none */
    assert_null(prefetch_begin(fd, s, 0, PREFETCH_BEHIND));
    assert_int_equal(prefetch_begun() - begun, 2);
    close(fd);
    unlink(path);
}

/* A stretch longer than a read may load (1 GiB) is announced, not loaded,
 * and leaves nothing to wait for (it once left a helper waited on for a
 * stretch it never had) */
static void test_over_budget(void **state)
{
    (void)state;
    char path[600];
    off_t size = ((off_t)1 << 30) + 16 * MB;
    int fd = make_file("budget", size, path, sizeof path);
    const off_t r[1][2] = {{0, size}};
    size_t before = prefetch_loaded_bytes();
    assert_null(prefetch_begin(fd, r, 1, PREFETCH_BEHIND));
    assert_int_equal(prefetch_loaded_bytes(), before);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    unlink(path);
}

/* PREFETCH_EXACT_ENDS: a long stretch is loaded but for its last
 * prefetch_tail bytes, which are announced; waiting for its end still
 * returns, and a stretch no longer than the tail is announced whole */
static void test_exact_ends(void **state)
{
    (void)state;
    char path[600];
    int fd = make_file("ends", 96 * MB, path, sizeof path);
    size_t tail = prefetch_tail(fd);
    assert_true(tail > 0);
    off_t len = (off_t)tail + 24 * MB;
    const off_t r[1][2] = {{MB, len}};
    for (int exact = 0; exact < 2; exact++) {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        size_t before = prefetch_loaded_bytes(), ended = prefetch_ended_bytes();
        prefetch *p = prefetch_begin(
            fd, r, 1, PREFETCH_BEHIND | (exact ? PREFETCH_EXACT_ENDS : 0));
        assert_non_null(p);
        assert_true(prefetch_loads(p, MB + len - 1));
        prefetch_wait(p, MB + len);
        assert_true(prefetch_passed(p, MB + len));
        prefetch_end(p);
        assert_int_equal(prefetch_loaded_bytes() - before,
                         exact ? (size_t)len - tail : (size_t)len);
        assert_int_equal(prefetch_ended_bytes() - ended, exact ? tail : 0);
    }
    /* no longer than the tail: announced, nothing loaded */
    const off_t s[1][2] = {{MB, (off_t)tail}};
    size_t before = prefetch_loaded_bytes(), ended = prefetch_ended_bytes();
    prefetch *p = prefetch_begin(fd, s, 1,
                                 PREFETCH_BEHIND | PREFETCH_EXACT_ENDS);
    prefetch_wait(p, MB + (off_t)tail);
    prefetch_end(p);
    assert_int_equal(prefetch_loaded_bytes(), before);
    assert_int_equal(prefetch_ended_bytes() - ended, tail);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_behind),
        cmocka_unit_test(test_over_budget),
        cmocka_unit_test(test_exact_ends),
    };
    if (tmpdir_create("prefetch") != 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, tmpdir_remove);
}
