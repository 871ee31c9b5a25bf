#!/bin/sh
# The preload library must leave programs unchanged: ncdump prints the same
# with and without it, and a program that never loads netCDF runs unharmed.
# usage: test_preload.sh LIBRARY FLAVOUR   (env: NCDUMP, NCGEN, PRELOAD_FIRST)
set -eu
lib=$1 flavour=$2
[ -f "$lib" ] || { echo "missing $lib"; exit 1; }
preload="$lib"
if [ -n "${PRELOAD_FIRST:-}" ]; then
    preload="$PRELOAD_FIRST $lib"
    export ASAN_OPTIONS=detect_leaks=0  # leaks of the host program, not ours
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LD_PRELOAD="$preload" /bin/sh -c 'echo shell ok' > "$tmp/sh.out"

# The preload library (route.c) must export exactly the wrappers of the shim
# core (shim.c): one missing from preload/ncapi.h would never be called.
sfx=; [ "$flavour" = mpi ] && sfx=_mpi
core="$(dirname "$lib")/libraster_shim$sfx.so"
if command -v nm > /dev/null 2>&1; then
    nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort > "$tmp/front"
    nm -D --defined-only "$core" | awk '$2 == "T" && $3 ~ /^nc_/ { print $3 }' | sort > "$tmp/core"
    if ! cmp -s "$tmp/front" "$tmp/core" || ! [ -s "$tmp/front" ]; then
        echo "FAIL: exports of $lib and $core differ:"
        diff "$tmp/front" "$tmp/core" || true
        exit 1
    fi
    # and it links nothing of netCDF or HDF5 (they would capture the
    # references of a wheel's own copies)
    if LD_PRELOAD= ldd "$lib" 2>/dev/null | grep -E 'libnetcdf|libhdf5|libraster'; then
        echo "FAIL: $lib links netCDF, HDF5 or libraster"; exit 1
    fi
fi
grep -qx 'shell ok' "$tmp/sh.out" || { echo "FAIL: shell under the preload"; exit 1; }

if [ "$flavour" = mpi ]; then
    # the MPI shim in a program linked to serial netCDF: one warning, then
    # everything passes through
    printf 'netcdf t {\ndimensions: x = 3 ;\nvariables: int v(x) ;\ndata: v = 1, 2, 3 ;\n}\n' > "$tmp/t.cdl"
    "$NCGEN" -4 -o "$tmp/t.nc" "$tmp/t.cdl"
    "$NCDUMP" "$tmp/t.nc" > "$tmp/plain.txt"
    LD_PRELOAD="$preload" "$NCDUMP" "$tmp/t.nc" > "$tmp/preload.txt" 2> "$tmp/err"
    cmp -s "$tmp/plain.txt" "$tmp/preload.txt" || { echo "FAIL: mpi shim changed ncdump"; exit 1; }
    [ "$(grep -c '^raster: .*not the netCDF flavour' "$tmp/err")" = 1 ] ||
        { echo "FAIL: flavour mismatch not warned once:"; cat "$tmp/err"; exit 1; }
fi
if [ "$flavour" = serial ]; then
    "$NCGEN" -4 -o "$tmp/in.nc" "$(dirname "$0")/data/small_time_mask.cdl"
    "$NCDUMP" -s "$tmp/in.nc" > "$tmp/plain.txt"
    LD_PRELOAD="$preload" "$NCDUMP" -s "$tmp/in.nc" > "$tmp/preload.txt"
    if ! cmp -s "$tmp/plain.txt" "$tmp/preload.txt"; then
        echo "FAIL: ncdump output differs under the preload"
        diff "$tmp/plain.txt" "$tmp/preload.txt" || true
        exit 1
    fi
    grep -q '11.5, 12.5' "$tmp/preload.txt" || { echo "FAIL: no data"; exit 1; }
fi
echo "preload pass-through ($flavour): ok"
