#!/usr/bin/env bash
# run.sh - the project's entry point.
#   ./run.sh demo    build, then run the main job end to end on bundled data
#   ./run.sh test    build, then run the test suite (also sanitized); with
#                    --full also the heavier variants (meson suite 'full')
#   ./run.sh build   only build (into build/)
# Each installs the Debian packages it needs when they are missing.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$top"

# Debian packages the build, the tests and the demo need.
# The MPI flavour (and its tests under mpirun) needs the last line; without
# it the build skips that flavour and the MPI tests report "skipped".
packages=(meson ninja-build pkg-config gcc libc6-dev
          libnetcdf-dev libhdf5-dev libcmocka-dev uthash-dev libpng-dev
          libdeflate-dev              # inflating deflated stores (zlib without)
          netcdf-bin python3 python3-numpy python3-netcdf4
          python3-venv                # the wheel test's virtual environment
          ferret-datasets             # real ocean and air data (real_files test)
          hdf5-filter-plugin          # bzip2, lz4 HDF5 filters (compress_shim)
          libudunits2-0               # the CF checker (cfunits) of test_cf_extract
          clang valgrind              # fuzz target, valgrind test
          gfortran libnetcdff-dev python3-xarray hdf5-tools  # adoption_order
          cdo gdal-bin                # foreign readers of open_everywhere
          nco                         # its foreign writer (ncks -A, ncap2)
          openmpi-bin libopenmpi-dev libnetcdf-mpi-dev libhdf5-openmpi-dev)
# plus clang's runtime (libFuzzer) for the clang installed: its version
# differs between releases (14 on bookworm, 19 on trixie)

say() { printf 'run.sh: %s\n' "$*" >&2; }

# install_missing PACKAGE...: apt-get install those not installed.
install_missing() {
    local missing=() p
    if ! command -v dpkg-query >/dev/null 2>&1; then
        say "no dpkg/apt here: install by hand the equivalents of: $*"
        return 0  # the build below says what is really missing
    fi
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo -n)
        else
            say "missing packages ${missing[*]}; run as root or install them:"
            say "  apt-get install ${missing[*]}"
            exit 1
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "missing packages ${missing[*]} and no apt-get to install them"
        exit 1
    fi
    say "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The libclang-rt-N-dev of the clang installed (N: its major version).
install_clang_runtime() {
    command -v clang >/dev/null 2>&1 || return 0
    local v
    v=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
    case $v in
        ''|*[!0-9]*) say "clang gave no version; its runtime is not installed" ;;
        *) install_missing "libclang-rt-$v-dev" ;;
    esac
}

# quietly LOG COMMAND...: runs COMMAND with its output in LOG; on failure
# shows the end of LOG (a CI log must say why the build failed).
quietly() {
    local log=$1
    shift
    if ! "$@" > "$log" 2>&1; then
        say "failed: $* (the end of $log:)"
        tail -n 60 "$log" >&2
        return 1
    fi
}

# setup DIR [meson options...]: configure DIR on first use.
setup() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        local werror=()
        [ -n "${CI:-}" ] && werror=(-Dwerror=true)
        quietly "$top/.meson-setup-${dir##*/}.log" \
            meson setup "$dir" "${werror[@]}" "$@"
    fi
}

build() {
    install_missing "${packages[@]}"
    install_clang_runtime
    setup build
    quietly build/ninja-output.txt ninja -C build
    say "built: build/src/libraster.so, build/preload/libraster_preload.so, build/tools/"
}

# run_suite DIR [meson test options]: meson test in DIR; prints its
# summary, returns its status.
run_suite() {
    local dir=$1 status=0
    shift
    # timeouts catch hangs; a busy machine (a CI host, a second job) runs
    # the slow tests at a third of their idle speed
    meson test -C "$dir" --print-errorlogs --num-processes 2 \
        --timeout-multiplier 3 "$@" \
        > "$dir/test-output.txt" 2>&1 || status=$?
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir/test-output.txt" || true
    if [ $status -ne 0 ]; then
        sed -n '/^Summary of Failures/,$p;/^--- /,/^---/p' "$dir/test-output.txt" | tail -n 200
    fi
    return $status
}

# count DIR WORD: the number meson's summary gives for WORD (Ok, Fail, ...).
count() {
    awk -v w="$2:" '$1 == w { n = $2 } END { print n + 0 }' "$1/test-output.txt"
}

# run_tests [--full]: both builds' suites; the 'full' suite only with --full
run_tests() {
    local start=$SECONDS select=(--no-suite full) what="test suite"
    case ${1:-} in
        --full) select=() what="full test suite" ;;
        '') ;;
        *) echo "usage: ./run.sh test [--full]" >&2; return 2 ;;
    esac
    build
    # UBSan must fail a test, not only print: no recovery.
    setup build-san -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args=-fno-sanitize-recover=undefined
    quietly build-san/ninja-output.txt ninja -C build-san
    local status=0 passed=0 failed=0 skipped=0 dir
    for dir in build build-san; do
        say "$what in $dir/"
        run_suite "$dir" "${select[@]}" || status=1
        passed=$((passed + $(count "$dir" Ok)))
        failed=$((failed + $(count "$dir" Fail) + $(count "$dir" Timeout)))
        skipped=$((skipped + $(count "$dir" Skipped)))
    done
    local took=$((SECONDS - start))
    echo "raster: $passed passed, $failed failed, $skipped skipped" \
         "($what, $((took / 60)) min $((took % 60)) s with the builds)"
    return $status
}

demo() {
    build
    "$top/tools/demo.sh" "$top/build"
}

case "${1:-}" in
    demo) demo ;;
    test) run_tests "${2:-}" ;;
    build) build ;;
    *) echo "usage: ./run.sh demo|test [--full]|build" >&2; exit 2 ;;
esac
