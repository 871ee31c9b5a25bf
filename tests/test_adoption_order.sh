#!/bin/sh
# Issue 39: every chosen variable is stored by region, whatever order a
# program defines and writes in. A matrix of writers under the shim with a
# mask (tests/adoption_prog.c: C without nc_enddef, with it, nc_redef
# cycles, reverse order, a variable defined after the first write, fill
# values and compression set before the first write in each order, two
# files at once, a file closed without data; Debian's python3-netcdf4 with
# two and five variables; xarray's to_netcdf; netcdf-fortran without
# nf90_enddef; two MPI ranks). In every case: rasterstat lists exactly the
# variables expected as stored by region, h5ls -r shows no
# raster_abandoned_ group, the shim warns of nothing, and ncdump under the
# shim equals ncdump of the same program's plain run.
# usage: test_adoption_order.sh SHIM BUILD_DIR SRC_DIR SHIM_MPI|none
#        (env: NCDUMP, PYTHON, MPIRUN, PRELOAD_FIRST)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2 src=$3 shim_mpi=$4
use_shim "$shim"
prog=$build/tests/adoption_prog
stat=$build/tools/rasterstat
need_python
if ! command -v h5ls > /dev/null; then
    echo "SKIP: no h5ls (hdf5-tools)"
    exit 77
fi

# the mask: 60 x 70, three regions, one of them not a rectangle
"$PY" - "$tmp/mask.nc" <<'EOF' || { fail "writing the mask"; report adoption_order; exit 1; }
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "w") as d:
    d.createDimension("y", 60)
    d.createDimension("x", 70)
    m = np.ones((60, 70), "i4")
    m[:, 35:] = 2
    m[20:40, 10:50] = 3
    d.createVariable("m", "i4", ("y", "x"))[:] = m
EOF
export RASTER_MASK="$tmp/mask.nc:m"

# check CASE WANT PLAIN RASTER: RASTER (written under the shim) stores
# exactly the variables WANT (blank-separated, in rasterstat's order), has
# no abandoned group, and reads under the shim as PLAIN does without it
check() {
    case=$1 want=$2 plain=$3 raster=$4
    got=$(on_disk "$stat" "$raster" 2>&1 | sed -n 's/^var  *[^:]*:\([^ ]*\) .*/\1/p' |
          tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ] && ok || fail "$case: stored by region: '$got', wanted '$want'"
    if on_disk h5ls -r "$raster" | grep -q raster_abandoned_; then
        fail "$case: an abandoned group in the file"
        on_disk h5ls -r "$raster" | grep raster_abandoned_ | head -3
    else ok; fi
    on_disk "$NCDUMP" "$plain" | tail -n +2 > "$tmp/d_plain"
    under "$NCDUMP" "$raster" | tail -n +2 > "$tmp/d_raster"
    if [ -s "$tmp/d_plain" ] && cmp -s "$tmp/d_plain" "$tmp/d_raster"; then ok
    else fail "$case: ncdump under the shim differs from the plain run"
        diff "$tmp/d_plain" "$tmp/d_raster" | head -5; fi
}

# writer CASE WANT CMD... : CMD OUT.nc run plain and under the shim (with
# nothing on stderr), then check
writer() {
    case=$1 want=$2
    shift 2
    mkdir -p "$tmp/plain" "$tmp/raster"
    on_disk "$@" "$tmp/plain/$case.nc" 2> "$tmp/err" ||
        { fail "$case: plain run failed: $(tail -2 "$tmp/err")"; return; }
    under "$@" "$tmp/raster/$case.nc" 2> "$tmp/err" ||
        { fail "$case: run under the shim failed: $(tail -2 "$tmp/err")"; return; }
    if [ -s "$tmp/err" ]; then fail "$case: the shim said: $(head -3 "$tmp/err")"; else ok; fi
    check "$case" "$want" "$tmp/plain/$case.nc" "$tmp/raster/$case.nc"
}

# ---- C (tests/adoption_prog.c) ------------------------------------------
for mode in noenddef enddef reverse after redef redef_open coord_first \
            settings settings2 nodata; do
    writer "c_$mode" "A B" "$prog" "$mode"
done
writer c_twofiles "A B" "$prog" twofiles
check c_twofiles.2 "A B" "$tmp/plain/c_twofiles.nc.2" "$tmp/raster/c_twofiles.nc.2"
# coordinates named only after the first data call: depth was chosen as
# data by then (docs/SHIM.md), and reads back the same
writer c_late_att "A B depth" "$prog" late_att

# the settings reached the stores: deflate on A, quantize on B, fletcher32
on_disk "$stat" "$tmp/raster/c_settings.nc" --var A | grep -q 'filters: deflate level 2, shuffle' &&
    ok || fail "c_settings: A's stores not deflated: $(on_disk "$stat" "$tmp/raster/c_settings.nc" --var A | grep filters)"
on_disk "$stat" "$tmp/raster/c_settings.nc" --var B | grep -q 'quantize' &&
    ok || fail "c_settings: B's stores not quantized: $(on_disk "$stat" "$tmp/raster/c_settings.nc" --var B | grep filters)"
on_disk "$stat" "$tmp/raster/c_settings2.nc" --var A | grep -q 'fletcher32' &&
    ok || fail "c_settings2: A without fletcher32: $(on_disk "$stat" "$tmp/raster/c_settings2.nc" --var A | grep filters)"

# ---- Python: Debian's python3-netcdf4 and xarray ------------------------
writer py_two "TEMP SALT" "$PY" "$src/adoption_order.py" two
writer py_five "TEMP SALT UVEL VVEL RHO" "$PY" "$src/adoption_order.py" five
if "$PY" -c 'import xarray' 2> /dev/null; then
    writer py_xarray "TEMP SALT SSH" "$PY" "$src/adoption_order.py" xarray
else
    fail "no xarray for $PY (python3-xarray)"
fi

# ---- netcdf-fortran without nf90_enddef ---------------------------------
if command -v gfortran > /dev/null && command -v nf-config > /dev/null; then
    # shellcheck disable=SC2046 # nf-config's flags are words
    if gfortran $(nf-config --fflags) "$src/adoption_order.f90" \
            $(nf-config --flibs) -o "$tmp/adoption_f" 2> "$tmp/err"; then
        writer fortran "A B" "$tmp/adoption_f"
    else
        fail "gfortran: $(tail -3 "$tmp/err")"
    fi
else
    fail "no gfortran or nf-config (gfortran, libnetcdff-dev)"
fi

# ---- two MPI ranks, collective, without nc_enddef -----------------------
if [ "$shim_mpi" != none ] && [ -n "${MPIRUN:-}" ] &&
        [ -x "$build/tests/adoption_prog_mpi" ]; then
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
    # LeakSanitizer off under mpirun, as in test_mpi.sh: OpenMPI's own
    # allocations cannot be told from ours (the sanitized build)
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    mpi_preload=${PRELOAD_FIRST:+$PRELOAD_FIRST }$shim_mpi
    for mode in noenddef reverse after coord_first; do
        case=mpi_$mode
        "$MPIRUN" --oversubscribe -np 2 "$build/tests/adoption_prog_mpi" \
            "$mode" "$tmp/plain/$case.nc" 2> "$tmp/err" ||
            { fail "$case: plain run failed: $(tail -2 "$tmp/err")"; continue; }
        "$MPIRUN" --oversubscribe -np 2 -x LD_PRELOAD="$mpi_preload" \
            -x RASTER_MASK -x ASAN_OPTIONS \
            "$build/tests/adoption_prog_mpi" "$mode" "$tmp/raster/$case.nc" \
            2> "$tmp/err" ||
            { fail "$case: run under the shim failed: $(tail -2 "$tmp/err")"; continue; }
        if grep -q 'raster:' "$tmp/err"; then
            fail "$case: the shim said: $(grep 'raster:' "$tmp/err" | head -3)"
        else ok; fi
        check "$case" "A B" "$tmp/plain/$case.nc" "$tmp/raster/$case.nc"
    done
else
    echo "note: no MPI flavour or mpirun: the MPI cases were not run"
fi

report adoption_order
