/*
 * cli.c - argument parsing and JSON helpers for the command-line tools.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char *prog_name = "raster";

void cli_set_prog(const char *name) { prog_name = name; }

const char *cli_prog(void) { return prog_name; }

int cli_split_spec(const char *spec, char **file, char **var)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || colon[1] == '\0')
        return -1;
    *file = strndup(spec, (size_t)(colon - spec));
    *var = strdup(colon + 1);
    if (!*file || !*var) {
        free(*file);
        free(*var);
        return -1;
    }
    return 0;
}

int cli_mask_option(const char *prog, const char *arg, char **file,
                    char **var)
{
    free(*file);
    free(*var);
    *file = *var = NULL;
    if (cli_split_spec(arg, file, var) != 0) {
        fprintf(stderr, "%s: --mask wants FILE:VAR, got '%s'\n", prog, arg);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

int cli_load_mask(const char *file, const char *var, const char *names,
                  raster_mask **out)
{
    int rc = raster_mask_load(file, var, out);
    if (rc == RASTER_OK && names &&
        (rc = raster_mask_set_names_file(*out, names)) != RASTER_OK) {
        raster_mask_free(*out);
        *out = NULL;
    }
    return rc;
}

/* "A,B,..." of whole numbers of at least `min` into out[0..max). */
static int parse_list(const char *text, unsigned long long min, size_t *out,
                      size_t max, size_t *n)
{
    *n = 0;
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        if (*p < '0' || *p > '9')
            return -1;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || v < min || v > SIZE_MAX || *n == max)
            return -1;
        out[(*n)++] = (size_t)v;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

int cli_parse_sizes(const char *text, size_t *out, size_t max, size_t *n)
{
    return parse_list(text, 1, out, max, n);
}

int cli_parse_indices(const char *text, size_t *out, size_t max, size_t *n)
{
    return parse_list(text, 0, out, max, n);
}

int cli_parse_bytes(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    if (*text < '0' || *text > '9')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (errno || *end != '\0' || v == 0 || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

int cli_parse_int32(const char *text, int32_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < INT32_MIN ||
        v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    return 0;
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void cli_shim_settings_off(void)
{
    static const char *const names[] = {"RASTER_MASK", "RASTER_VARS",
                                        "RASTER_CHUNK", "RASTER_NAMES"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unsetenv(names[i]);
}

int cli_bad_option(const char *prog, int opt, char **argv)
{
    /* the word getopt stopped at: a long option as typed, or -X */
    const char *word = optind > 0 ? argv[optind - 1] : "";
    char shortopt[3] = {'-', (char)optopt, '\0'};
    int is_long = strncmp(word, "--", 2) == 0;
    if (!is_long && optopt > 0 && optopt < 128)
        word = shortopt;
    const char *eq = is_long ? strchr(word, '=') : NULL;
    if (opt == ':')
        fprintf(stderr, "%s: option '%s' needs a value", prog, word);
    else if (eq && optopt)
        fprintf(stderr, "%s: option '%.*s' takes no value", prog,
                (int)(eq - word), word);
    else
        fprintf(stderr, "%s: unknown option '%s'", prog, word);
    fprintf(stderr, "; try '%s --help'\n", prog);
    return CLI_EUSAGE;
}
