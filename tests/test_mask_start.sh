#!/bin/sh
# RASTER_MASK is loaded on first need (issue #27): a program that defines
# no variable never opens it, and a mask that is not a regular file (a
# FIFO, a directory, a device) is refused with one warning, never opened,
# so nothing hangs. A mask file that changes after it was loaded leaves the
# variables defined from then on plain, with one warning. The labels are
# docs/BAD_INPUTS.md's rows.
# usage: test_mask_start.sh SHIM   (env: NCDUMP, NCGEN, NCCOPY, PYTHON,
#        PRELOAD_FIRST for sanitized builds)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1
use_shim "$shim"  # lib.sh: under, with the sanitizer runtime first
cd "$tmp" || exit 1
cat > in.cdl <<'CDL'
netcdf in {
dimensions:
    time = UNLIMITED ; y = 4 ; x = 5 ;
variables:
    float t(time, y, x) ;
    int mask(y, x) ;
data:
 t = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 ;
 mask = 1, 1, 2, 2, 2, 1, 1, 2, 2, 2, 3, 3, 3, 2, 2, 3, 3, 3, 2, 2 ;
}
CDL
"$NCGEN" -4 -o in.nc in.cdl || exit 1
cp in.nc m.nc
"$NCDUMP" in.nc | tail -n +2 > plain.txt
"$NCDUMP" -h in.nc > plain_h.txt
mkfifo fifo || exit 1

# A run that hangs (a FIFO opened) is ended after HANG seconds: far more
# than the second or so a run takes sanitized on a busy machine, so that
# only a hang ends there
HANG=60
# header ROW DESC SPEC [ENV...]: ncdump -h of an unrelated file under the
# shim with RASTER_MASK=SPEC ends in time, exits 0, prints what ncdump
# prints without the shim and nothing on stderr (the mask is not opened)
header() {
    row=$1 desc=$2 spec=$3
    shift 3
    timeout $HANG env RASTER_MASK="$spec" "$@" LD_PRELOAD="$preload" \
        "$NCDUMP" -h in.nc > out 2> err
    st=$?
    [ $st -eq 0 ] && ok || fail "$row $desc: ncdump -h exit $st (124: hung)"
    cmp -s plain_h.txt out && ok || fail "$row $desc: ncdump -h output differs"
    [ -s err ] && fail "$row $desc: ncdump -h printed: $(cat err)" || ok
}
# define ROW DESC SPEC PATTERN: a program that defines a matching variable
# (nccopy) ends in time with one warning matching PATTERN, plain netCDF
define() {
    row=$1 desc=$2 spec=$3 pat=$4
    rm -f out.nc
    timeout $HANG env RASTER_MASK="$spec" RASTER_VARS=t LD_PRELOAD="$preload" \
        "$NCCOPY" in.nc out.nc > out 2> err
    st=$?
    [ $st -eq 0 ] && ok || fail "$row $desc: nccopy exit $st (124: hung)"
    [ "$(grep -c . err)" = 1 ] && grep -q "$pat" err && ok ||
        fail "$row $desc: wanted one warning matching '$pat': $(cat err)"
    "$NCDUMP" -h out.nc | grep -q 'group: raster_' &&
        fail "$row $desc: a variable was stored by region" || ok
    "$NCDUMP" out.nc | tail -n +2 > copy.txt
    cmp -s plain.txt copy.txt && ok || fail "$row $desc: the copy's data differ"
}

header E29 "RASTER_MASK a FIFO" fifo:mask
define E29 "RASTER_MASK a FIFO" fifo:mask 'cannot use RASTER_MASK=fifo:mask .*is a FIFO'
header E30 "RASTER_MASK a directory" "$tmp:mask"
define E30 "RASTER_MASK a directory" "$tmp:mask" 'cannot use RASTER_MASK=.*is a directory'
header E31 "RASTER_MASK a device" /dev/null:mask
define E31 "RASTER_MASK a device" /dev/null:mask 'cannot use RASTER_MASK=.*is a character device'
# a mask that is missing, or good: ncdump -h never loads it (debug says
# when a mask is loaded)
header E32 "RASTER_MASK missing, ncdump -h" none.nc:mask
RASTER_LOG=debug RASTER_MASK=none.nc:mask under "$NCDUMP" -h in.nc > out 2> err
grep -q 'mask' err && fail "E32 ncdump -h opened a missing mask: $(cat err)" || ok
RASTER_LOG=debug RASTER_MASK=m.nc:mask under "$NCDUMP" -h in.nc > out 2> err
grep -q 'loading mask' err && fail "E32 ncdump -h loaded the mask: $(cat err)" || ok
RASTER_LOG=debug RASTER_MASK=m.nc:mask RASTER_VARS=t under \
    "$NCCOPY" in.nc out.nc > out 2> err
[ "$(grep -c 'loading mask m.nc:mask' err)" = 1 ] && ok ||
    fail "E32 nccopy did not load the mask once: $(cat err)"
"$NCDUMP" -h out.nc | grep -q 'group: raster_t' && ok ||
    fail "E32 the good mask stored nothing by region"
header E1 "RASTER_MASK not FILE:VAR, ncdump -h" m.nc

# E33: the mask file rewritten after it was loaded: the first file's
# variable is stored by region, the second's stays plain, one warning
need_python
cat > twice.py <<'PY'
import os, sys, netCDF4, numpy as np
def write(path):
    d = netCDF4.Dataset(path, "w")
    d.createDimension("time", None)
    d.createDimension("y", 4)
    d.createDimension("x", 5)
    v = d.createVariable("t", "f4", ("time", "y", "x"))
    v[0:1] = np.arange(20, dtype="f4").reshape(1, 4, 5)
    d.close()
write("a.nc")
st = os.stat("m.nc")
os.utime("m.nc", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
write("b.nc")
PY
RASTER_MASK=m.nc:mask expect 0 "E33 two files, mask changed between" \
    under "$PY" twice.py
[ "$(grep -c . "$tmp/err")" = 1 ] && grep -q 'changed since it was loaded' "$tmp/err" && ok ||
    fail "E33 wanted one warning: $(cat "$tmp/err")"
"$NCDUMP" -h a.nc | grep -q 'group: raster_t' && ok || fail "E33 a.nc not stored by region"
"$NCDUMP" -h b.nc | grep -q 'group: raster_' && fail "E33 b.nc stored by region" || ok
"$NCDUMP" -v t b.nc | grep -q '15, 16, 17, 18, 19 ;' && ok || fail "E33 b.nc data"
report mask_start
