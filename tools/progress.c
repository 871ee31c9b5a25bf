/*
 * progress.c - progress bar, progress lines and summary (progress.h).
 */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static int quiet;
static double t_start;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_set_quiet(int q) { quiet = q; }

void progress_start(void) { t_start = now(); }

void progress_human(unsigned long long bytes, char *buf, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static double fraction(const copy_progress *p)
{
    double f = p->total ? (double)p->done / (double)p->total : 1.0;
    return f > 1 ? 1 : f;
}

static void draw_bar(copy_progress *p)
{
    double frac = fraction(p);
    char a[32], b[32], bar[41];
    int full = (int)(frac * 40);
    for (int i = 0; i < 40; i++)
        bar[i] = i < full ? '#' : '.';
    bar[40] = '\0';
    progress_human(p->done, a, sizeof a);
    progress_human(p->total, b, sizeof b);
    fprintf(stderr, "\r%s: [%s] %3d%% %s of %s ", cli_prog(), bar,
            (int)(frac * 100), a, b);
    fflush(stderr);
    p->shown = 1;
}

static void put_line(copy_progress *p, double t)
{
    char a[32], b[32];
    progress_human(p->done, a, sizeof a);
    progress_human(p->total, b, sizeof b);
    fprintf(stderr, "%s: %d%% done, %s of %s, %.1f s\n", cli_prog(),
            (int)(fraction(p) * 100), a, b, t - p->t0);
    p->shown = 1;
    p->last = t;
}

void copy_progress_init(copy_progress *p, unsigned long long total)
{
    p->tty = isatty(STDERR_FILENO);
    p->shown = 0;
    p->decile = 0;
    p->total = total;
    p->done = 0;
    p->t0 = p->last = now();
    p->delay = 1.0;
    const char *d = getenv("RASTER_PROGRESS_DELAY");
    if (d && *d) {
        char *end;
        double v = strtod(d, &end);
        if (*end == '\0' && v >= 0)
            p->delay = v;
    }
}

void copy_progress_add(copy_progress *p, unsigned long long bytes)
{
    p->done += bytes;
    if (quiet)
        return;
    double t = now();
    if (t - p->t0 < p->delay)
        return;
    if (p->tty) {
        if (t - p->last >= 0.1 || !p->shown) {
            p->last = t;
            draw_bar(p);
        }
        return;
    }
    int decile = (int)(fraction(p) * 10);
    if (decile > p->decile || t - p->last >= 10.0) {
        p->decile = decile;
        put_line(p, t);
    }
}

void copy_progress_end(copy_progress *p)
{
    if (quiet || !p->shown)
        return;
    if (p->tty) {
        draw_bar(p);
        fputc('\n', stderr);
    } else if (p->decile < 10 || p->done < p->total) {
        p->done = p->total;
        p->decile = 10;
        put_line(p, now());
    }
    p->shown = 0;
}

void progress_summary(const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", cli_prog());
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ", %.1f s\n", now() - t_start);
}
