/*
 * error.h - internal error plumbing: set the thread's detailed message and
 * return a code in one statement.
 */
#ifndef RASTER_ERROR_H
#define RASTER_ERROR_H

#include "raster.h"

/* Records a printf-style message for raster_errmsg() and returns `code`. */
int raster_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's message (used by tests). */
void raster_errmsg_clear(void);

/* Return `code` with a message when `cond` holds. Never hides a jump other
 * than this explicit return. */
#define RETURN_ERROR_IF(cond, code, ...)                                      \
    do {                                                                      \
        if (cond)                                                             \
            return raster_fail((code), __VA_ARGS__);                          \
    } while (0)

#endif
