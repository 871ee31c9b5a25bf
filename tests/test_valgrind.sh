#!/bin/sh
# The shim's key paths under valgrind (memcheck): an unmodified writer
# storing a variable by region, ncdump, nccopy and ncgen of raster and plain
# files, nccopy under a mask, Python's netCDF4 reading a raster file. Any
# invalid access, use of uninitialised memory or definite leak fails the
# test (--error-exitcode); tests/valgrind.supp holds only third-party noise.
# Tiny files: valgrind is slow.
# usage: test_valgrind.sh SHIM BUILD_DIR SUPPRESSIONS  (env: NCDUMP, NCGEN, NCCOPY)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2 supp=$3
writer="$build/tests/record_writer"
if [ -n "${PRELOAD_FIRST:-}" ]; then
    echo "SKIP: valgrind runs over the plain build's shim"
    exit 77
fi
if ! command -v valgrind > /dev/null 2>&1; then
    echo "SKIP: no valgrind (apt-get install valgrind)"
    exit 77
fi
vg() {
    log=$1
    shift
    valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --suppressions="$supp" \
        --log-file="$tmp/$log.vg" "$@"
}
# check LOG DESC CMD...: CMD under valgrind and the shim exits 0, valgrind
# reports nothing
check() {
    log=$1 desc=$2
    shift 2
    LD_PRELOAD="$shim" vg "$log" "$@" > "$tmp/$log.out" 2> "$tmp/$log.err"
    st=$?
    if [ $st -eq 0 ] && ! [ -s "$tmp/$log.vg" ]; then ok; else
        fail "$desc: exit $st under valgrind"
        head -n 40 "$tmp/$log.vg" "$tmp/$log.err"
    fi
}
same() { if cmp -s "$1" "$2"; then ok; else fail "$3"; diff "$1" "$2" | head -5; fi; }

awk 'BEGIN { ny = 12; nx = 16
  print "netcdf m {\ndimensions: nlat = " ny " ; nlon = " nx " ;"
  print "variables: int REGION_MASK(nlat, nlon) ;\ndata:\n REGION_MASK ="
  for (y = 0; y < ny; y++) for (x = 0; x < nx; x++) {
    id = x < 6 ? 1 : x < 11 ? 2 : 0
    if ((x + y) % 7 == 0) id = -4
    printf " %d%s", id, (y == ny - 1 && x == nx - 1) ? " ;\n}\n" : ","
  } }' > "$tmp/m.cdl"
"$NCGEN" -4 -o "$tmp/m.nc" "$tmp/m.cdl" || exit 1
"$writer" "$tmp/m.nc" "$tmp/plain.nc" 3 1 || exit 1
"$NCDUMP" "$tmp/plain.nc" | tail -n +2 > "$tmp/plain.txt"
mask="$tmp/m.nc:REGION_MASK"

RASTER_MASK=$mask check write "record_writer storing TEMP by region" \
    "$writer" "$tmp/m.nc" "$tmp/r.nc" 3 1
"$NCDUMP" -h "$tmp/r.nc" | grep -q 'group: raster_TEMP' && ok || fail "TEMP not stored by region"
check dump "ncdump of a raster file" "$NCDUMP" "$tmp/r.nc"
tail -n +2 "$tmp/dump.out" > "$tmp/r.txt"
same "$tmp/plain.txt" "$tmp/r.txt" "ncdump of the raster file under valgrind differs"
check copy "nccopy of a raster file" "$NCCOPY" "$tmp/r.nc" "$tmp/c.nc"
"$NCDUMP" "$tmp/c.nc" | tail -n +2 > "$tmp/c.txt"
same "$tmp/plain.txt" "$tmp/c.txt" "nccopy of the raster file differs"
check plaindump "ncdump of a plain file" "$NCDUMP" "$tmp/plain.nc"
tail -n +2 "$tmp/plaindump.out" > "$tmp/p.txt"
same "$tmp/plain.txt" "$tmp/p.txt" "ncdump of a plain file differs under the shim"
check gen "ncgen" "$NCGEN" -4 -o "$tmp/g.nc" "$tmp/m.cdl"
"$NCDUMP" "$tmp/g.nc" | tail -n +2 > "$tmp/g.txt"
"$NCDUMP" "$tmp/m.nc" | tail -n +2 > "$tmp/m.txt"
same "$tmp/m.txt" "$tmp/g.txt" "ncgen under the shim wrote another file"
RASTER_MASK=$mask check maskcopy "nccopy of a plain file under a mask" \
    "$NCCOPY" "$tmp/plain.nc" "$tmp/mc.nc"
LD_PRELOAD="$shim" "$NCDUMP" "$tmp/mc.nc" | tail -n +2 > "$tmp/mc.txt"
same "$tmp/plain.txt" "$tmp/mc.txt" "nccopy under a mask changed the data"
check classic "nccopy to a classic file under the shim" \
    "$NCCOPY" -k classic "$tmp/r.nc" "$tmp/cl.nc"
if /usr/bin/python3 -c 'import netCDF4' 2> /dev/null; then
    # Python's own allocator confuses memcheck; its leaks are not ours
    PYTHONMALLOC=malloc LD_PRELOAD="$shim" valgrind -q --error-exitcode=99 \
        --leak-check=no --suppressions="$supp" --log-file="$tmp/py.vg" \
        /usr/bin/python3 -c "
import sys, netCDF4
a, b = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
assert (a['TEMP'][:] == b['TEMP'][:]).all()
assert (a['TEMP'][1, 2:9, ::3] == b['TEMP'][1, 2:9, ::3]).all()
print('same')" "$tmp/plain.nc" "$tmp/r.nc" > "$tmp/py.out" 2> "$tmp/py.err"
    st=$?
    if [ $st -eq 0 ] && ! [ -s "$tmp/py.vg" ] && grep -qx same "$tmp/py.out"; then ok; else
        fail "python netCDF4 under valgrind: exit $st"
        head -n 40 "$tmp/py.vg" "$tmp/py.err"
    fi
fi
report valgrind
