# lib.sh - the pass/fail harness shared by the shell tests of the tools
# (test_convert.sh, test_rasterget.sh, test_rasterstat.sh). Source it, after
# `set -u`, as
#     . "$(dirname "$0")/lib.sh"
# It makes a temporary directory $tmp, removed on exit, and defines:
#   ok, fail MESSAGE            count a passed / failed check
#   on_disk CMD...              CMD without the shim even if LD_PRELOAD is set
#   use_shim SHIM               sets $preload, the shim under preloads
#   under [VAR=VALUE...] CMD... CMD with the shim preloaded (see use_shim)
#   expect STATUS DESC CMD...   a check that CMD exits with STATUS
#   no_output FILE DESC         a check that FILE was not left behind
#   err_is DESC LINE...         a check that expect's stderr is LINE...
#   need_python                 PY = a python3 with numpy and netCDF4, or
#                               skip the test (exit 77)
#   report NAME                 prints "NAME: N passed, N failed"; its
#                               status is 0 when nothing failed

# RASTER_TEST_TMP=DIR (test_exported_preload.sh): DIR, kept, instead of a
# fresh temporary directory, so that two runs can be compared file by file.
if [ -n "${RASTER_TEST_TMP:-}" ]; then
    tmp=$RASTER_TEST_TMP
    mkdir -p "$tmp" || exit 1
    cleanup() { chmod -R u+w "$tmp" 2>/dev/null; }
else
    tmp=$(mktemp -d)
    cleanup() { chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; }
fi
trap cleanup EXIT
# The tools' history lines carry the time (extract.h): a fixed one makes the
# outputs of two runs compare byte for byte (test_preloaded_tools.sh,
# test_exported_preload.sh).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
export SOURCE_DATE_EPOCH
# Progress lines come once a copy has taken a second (progress.c), so a
# slow run on a busy machine printed one that a fast run did not, and
# test_preloaded_tools.sh failed comparing their messages. None unless a
# check asks for them (RASTER_PROGRESS_DELAY=0 on its command).
RASTER_PROGRESS_DELAY=1000000
export RASTER_PROGRESS_DELAY
fails=0 passes=0

ok()   { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS DESCRIPTION COMMAND...: the command exits with STATUS (and,
# when STATUS is not 0, says why on stderr); its output is left in
# $tmp/out and $tmp/err
expect() {
    want=$1 what=$2
    shift 2
    "$@" > "$tmp/out" 2> "$tmp/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$what: exit $got, wanted $want"; cat "$tmp/err"; return
    fi
    if [ "$want" -ne 0 ] && ! [ -s "$tmp/err" ]; then
        fail "$what: no message on stderr"; return
    fi
    ok
}

# err_is DESCRIPTION LINE...: the last command's stderr (expect's $tmp/err)
# is exactly LINE...
err_is() {
    what=$1; shift
    printf '%s\n' "$@" > "$tmp/err.want"
    if cmp -s "$tmp/err.want" "$tmp/err"; then ok; else
        fail "$what: stderr differs"; diff "$tmp/err.want" "$tmp/err"; fi
}

# no_output FILE DESCRIPTION: neither FILE nor a temporary beside it exists
no_output() {
    if [ -e "$1" ]; then fail "$2: $1 left behind"; return; fi
    if ls -a "$(dirname "$1")" | grep -q '\.tmp'; then
        fail "$2: temporary file left in $(dirname "$1")"; return
    fi
    ok
}

# need_python: sets PY to the first of /usr/bin/python3, $PYTHON and python3
# that imports numpy and netCDF4; without one, the test is skipped (exit 77)
need_python() {
    PY=
    for p in /usr/bin/python3 "${PYTHON:-}" python3; do
        [ -n "$p" ] || continue
        if "$p" -c 'import numpy, netCDF4' 2>/dev/null; then PY=$p; break; fi
    done
    if [ -z "$PY" ]; then
        echo "SKIP: no python3 with numpy and netCDF4"
        exit 77
    fi
}

# on_disk COMMAND...: COMMAND without raster's shim even when LD_PRELOAD is
# exported for every process (test_exported_preload.sh): for the checks
# that look at raster's storage as it is on disk (the shim hides it from
# programs, by design) and for the plain baselines the shim is compared with
on_disk() { env -u LD_PRELOAD "$@"; }

# use_shim SHIM: under preloads SHIM. In the sanitized build (PRELOAD_FIRST:
# the sanitizer runtime and what must start after it, tests/meson.build)
# PRELOAD_FIRST comes first: programs not built with the runtime (ncdump,
# nccopy, ncgen, python3, sh) need it loaded before the sanitized shim.
use_shim() {
    preload=${PRELOAD_FIRST:+$PRELOAD_FIRST }$1
}

# under [VAR=VALUE...] COMMAND...: COMMAND with the shim of use_shim
# preloaded (and the variables set). In the sanitized build LeakSanitizer
# checks every program under the shim but python3: the interpreter leaves
# hundreds of its own blocks at exit.
under() {
    for _arg in "$@"; do
        case $_arg in *=*) ;; *) break ;; esac
    done
    case ${PRELOAD_FIRST:+${_arg##*/}} in
        python*) env LD_PRELOAD="$preload" \
            ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@" ;;
        *) env LD_PRELOAD="$preload" "$@" ;;
    esac
}

# report NAME: the summary line; fails unless every check passed
report() {
    echo "$1: $passes passed, $fails failed"
    [ "$fails" -eq 0 ]
}
