#!/bin/sh
# run_fuzz.sh - builds the file-reader fuzz target with clang's libFuzzer
# (AddressSanitizer and UndefinedBehaviorSanitizer on) and runs it.
# usage: run_fuzz.sh SRC_DIR WORK_DIR SECONDS [extra libFuzzer options...]
#   SRC_DIR   the project's source tree
#   WORK_DIR  where the binary, the working corpus and crash files go
#   SECONDS   -max_total_time of the run
# env RASTER_BUILD_DIR: the meson build directory whose include/ holds the
#   generated raster_version.h (default: WORK_DIR's parent, as in build/fuzz)
# Exit status: 0 no finding, 1 a finding (the input is saved in WORK_DIR as
# crash-*, leak-*, timeout-* or slow-unit-*), 77 no clang with libFuzzer
# here (the test is skipped).
# The long run (docs/BAD_INPUTS.md):
#   tests/fuzz/run_fuzz.sh . build/fuzz 900 -rss_limit_mb=8192 -malloc_limit_mb=2048
set -u
src=$1 work=$2 secs=$3
shift 3
CLANG=${CLANG:-clang}
if ! command -v "$CLANG" > /dev/null 2>&1; then
    echo "SKIP: no clang (apt-get install clang libclang-rt-14-dev)"
    exit 77
fi
mkdir -p "$work" && work=$(cd "$work" && pwd) && src=$(cd "$src" && pwd) || exit 1
geninc=${RASTER_BUILD_DIR:-$work/..}/include
if [ ! -f "$geninc/raster_version.h" ]; then
    echo "FAIL: no generated raster_version.h in $geninc (set RASTER_BUILD_DIR)"
    exit 1
fi
bin="$work/fuzz_raster_file"
probe="$work/probe.c"
# libFuzzer present?
if [ ! -x "$bin" ]; then
    printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$probe"
    if ! "$CLANG" -fsanitize=fuzzer,address "$probe" -o "$work/probe" > /dev/null 2>&1; then
        echo "SKIP: $CLANG has no libFuzzer runtime (apt-get install libclang-rt-14-dev)"
        exit 77
    fi
fi
# (re)build when a source is newer than the binary
# the serial library: every source but the MPI flavour's own
sources="$src/tests/fuzz/fuzz_raster_file.c $(ls "$src"/src/*/*.c | grep -v -e '/parallel\.c$' -e '/parwrite\.c$')"
stale=0
[ -x "$bin" ] || stale=1
for f in $sources "$src"/src/*/*.h "$src"/include/raster.h "$geninc/raster_version.h"; do
    [ "$f" -nt "$bin" ] && stale=1
done
if [ $stale = 1 ]; then
    # Debian's serial HDF5 by its own name, else the plain hdf5.pc
    hdf5=hdf5-serial
    pkg-config --exists hdf5-serial || hdf5=hdf5
    flags=$(pkg-config --cflags --libs netcdf $hdf5 zlib) || exit 1  # zlib: unfilter.c without libdeflate
    echo "building $bin"
    # shellcheck disable=SC2086
    "$CLANG" -std=c11 -D_GNU_SOURCE -DRASTER_BUILDING -g -O1 \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$src/include" -I"$geninc" $(printf ' -I%s' "$src"/src/*/) $sources $flags -lm -lpthread \
        -o "$bin.new" || { echo "FAIL: building the fuzz target"; exit 1; }
    mv "$bin.new" "$bin"
fi
corpus="$work/corpus"
mkdir -p "$corpus"
cp "$src"/tests/fuzz/corpus/* "$corpus/" 2> /dev/null
export RASTER_FUZZ_DIR="$work"
# HDF5's free lists and netCDF's global state are not leaks of an input
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$src/tests/fuzz/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
export HDF5_DISABLE_VERSION_CHECK=1
cd "$work" || exit 1
"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=1024 \
    -print_final_stats=1 "$@" "$corpus" > fuzz.log 2>&1
status=$?
grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)' fuzz.log
if [ $status -ne 0 ]; then
    tail -n 60 fuzz.log
    echo "FAIL: the fuzz target found something (status $status); see $work"
    exit 1
fi
echo "fuzz: ok"
