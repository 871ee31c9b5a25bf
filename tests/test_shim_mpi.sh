#!/bin/sh
# The MPI flavour of the shim under a program linked to libnetcdf_mpi (run
# serially): it stores the chosen variables by region, and the file reads
# back (through the serial shim) exactly as the plain one.
# usage: test_shim_mpi.sh SHIM_MPI SHIM BUILD_DIR MASK_DIR
#        (env: NCDUMP, PRELOAD_FIRST for sanitized builds)
set -u
. "$(dirname "$0")/lib.sh"
shim_mpi=$1 shim=$2 build=$3 masks=$4
use_shim "$shim_mpi"; preload_mpi=$preload  # lib.sh: with the
use_shim "$shim"  # sanitizer runtime first in the sanitized build
basins="$masks/pop_basins_384x320.nc"
writer="$build/examples/cesm_writer_mpi"
"$writer" "$basins" "$tmp/plain.nc" 2 3 || exit 1
RASTER_MASK="$basins:REGION_MASK" LD_PRELOAD="$preload_mpi" expect 0 \
    "MPI-linked writer under the MPI shim" "$writer" "$basins" "$tmp/raster.nc" 2 3
[ "$(grep -c 'raster:' "$tmp/err")" = 0 ] && ok || fail "warnings: $(cat "$tmp/err")"
"$NCDUMP" -h "$tmp/raster.nc" | grep -q "group: raster_TEMP" && ok || fail "TEMP not stored by region"
"$NCDUMP" "$tmp/plain.nc" | tail -n +2 > "$tmp/a"
LD_PRELOAD="$preload" "$NCDUMP" "$tmp/raster.nc" | tail -n +2 > "$tmp/b"
cmp -s "$tmp/a" "$tmp/b" && ok || fail "MPI-flavour file reads differently"
report shim_mpi
