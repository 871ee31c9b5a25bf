#!/bin/sh
# Open everywhere (issue 41): a raster file of format 5 keeps each
# variable's values in the variable itself, laid out region by region, so a
# reader without raster gets exactly the values the variable holds, and
# under the shim everything reads as before. Written here by the shim
# (RASTER_FORMAT=5): nccopy's copy of a plain file, then records appended
# and a box rewritten by a second run; and by rasterconvert --format 5 for
# every numeric type.
# usage: test_open_everywhere.sh SHIM BUILD_DIR
#   (env: NCGEN, NCDUMP, NCCOPY, PYTHON, PRELOAD_FIRST)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2
use_shim "$shim"  # lib.sh: under, with the sanitizer runtime first
NCCOPY=${NCCOPY:-nccopy}
convert="$build/tools/rasterconvert"

# ---- a plain file, and its copy under the shim in format 5 -----------------
cat > "$tmp/plain.cdl" <<'CDL'
netcdf plain {
dimensions:
    time = UNLIMITED ; z = 2 ; y = 7 ; x = 9 ;
variables:
    double time(time) ;
        time:units = "days since 2000-01-01" ;
    float TEMP(time, z, y, x) ;
        TEMP:units = "degC" ;
        TEMP:_FillValue = -99.f ;
    int region(y, x) ;
data:
 time = 0, 1, 2 ;
 region = 1, 1, 1, 2, 2, 2, 3, 3, 3,
          1, 1, 2, 2, 2, 3, 3, 3, 3,
          1, 1, 2, 2, 3, 3, 3, 3, 3,
          4, 4, 4, 4, 4, 4, 3, 3, 3,
          4, 4, 4, 4, 4, 4, 4, 4, 4,
          4, 4, 4, 0, 0, 0, 0, 0, 0,
          4, 4, 4, 0, 0, 0, 0, 0, 0 ;
}
CDL
"$NCGEN" -4 -o "$tmp/plain.nc" "$tmp/plain.cdl" ||
    { fail "ncgen"; report open_everywhere; exit 1; }
need_python
# TEMP: 3 records, one value left as the fill value
"$PY" - "$tmp/plain.nc" <<'PY' || fail "writing TEMP"
import sys, netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "a")
v = np.arange(3 * 2 * 7 * 9, dtype="f4").reshape(3, 2, 7, 9) * 0.5 - 40
v[1, 0, 2, 3] = -99.0
d["TEMP"][:] = v
d.close()
PY
# tiles of 3 x 4: edge tiles on both sides, pure and mixed ones
RASTER_FORMAT=5 RASTER_MASK="$tmp/plain.nc:region" RASTER_CHUNK=3,4 expect 0 \
    "nccopy under the shim writes format 5" under "$NCCOPY" "$tmp/plain.nc" "$tmp/r.nc"
"$NCDUMP" -h "$tmp/r.nc" | grep -q 'raster_format_version = 5' && ok ||
    fail "TEMP not stored in format 5"

# Compares the data sections of two files (the storage group and raster's
# note aside), as ncdump prints them.
data_of() {
    "$NCDUMP" "$1" | sed -n '/^data:/,$p' | sed '/^group: raster_/,$d' |
        sed -e '/^}$/d' -e '/^$/d'
}
same_data() { # what, file a, file b
    data_of "$2" > "$tmp/da"
    data_of "$3" > "$tmp/db"
    cmp -s "$tmp/da" "$tmp/db" && ok ||
        { fail "$1"; diff "$tmp/da" "$tmp/db" | head -5; }
}

# ---- netCDF-C without raster: the values -----------------------------------
same_data "ncdump without raster: the plain file's data" "$tmp/plain.nc" "$tmp/r.nc"
"$NCDUMP" -h "$tmp/r.nc" | grep -q 'TEMP:raster_note = "Laid out by region' &&
    ok || fail "no note on TEMP"
expect 0 "nccopy without raster" on_disk "$NCCOPY" "$tmp/r.nc" "$tmp/copy.nc"
same_data "nccopy's copy holds the plain file's data" "$tmp/plain.nc" "$tmp/copy.nc"

# ---- under the shim: the plain file exactly --------------------------------
"$NCDUMP" "$tmp/plain.nc" | tail -n +2 > "$tmp/d_plain"
under "$NCDUMP" "$tmp/r.nc" > "$tmp/d_shim" 2> "$tmp/err" || fail "ncdump under the shim"
tail -n +2 "$tmp/d_shim" > "$tmp/d_shim2"
cmp -s "$tmp/d_plain" "$tmp/d_shim2" && ok ||
    { fail "ncdump under the shim differs from the plain file"; diff "$tmp/d_plain" "$tmp/d_shim2" | head; }

# ---- a second run under the shim: records appended, a box rewritten -------
cat > "$tmp/append.py" <<'PY'
import sys, netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "a")
t = d["TEMP"]
t[3:5] = np.arange(2 * 2 * 7 * 9, dtype="f4").reshape(2, 2, 7, 9) + 1000
t[1, 1, 2:5, 3:8] = -np.arange(15, dtype="f4").reshape(3, 5) - 1
d["time"][3:5] = [3, 4]
d.close()
PY
cp "$tmp/plain.nc" "$tmp/plain2.nc"
"$PY" "$tmp/append.py" "$tmp/plain2.nc" || fail "appending to the plain file"
RASTER_MASK="$tmp/plain.nc:region" expect 0 "a second run appends under the shim" \
    under "$PY" "$tmp/append.py" "$tmp/r.nc"
"$NCDUMP" -h "$tmp/r.nc" | grep -q 'time = UNLIMITED ; // (5 currently)' && ok ||
    fail "the appended records are not there"
same_data "after the second run, ncdump without raster" "$tmp/plain2.nc" "$tmp/r.nc"
"$NCDUMP" "$tmp/plain2.nc" | tail -n +2 > "$tmp/d_plain"
under "$NCDUMP" "$tmp/r.nc" | tail -n +2 > "$tmp/d_shim2"
cmp -s "$tmp/d_plain" "$tmp/d_shim2" && ok ||
    fail "after the second run, ncdump under the shim differs"

# ---- Python without raster (Debian's netCDF4), value by value --------------
cat > "$tmp/cmp.py" <<'PY'
import sys, netCDF4, numpy as np
a, b = (netCDF4.Dataset(p) for p in sys.argv[1:3])
for name in a.variables:
    x, y = np.ma.getdata(a[name][:]), np.ma.getdata(b[name][:])
    if x.shape != y.shape or not np.array_equal(x, y):
        sys.exit("%s differs" % name)
PY
expect 0 "netCDF4 without raster: every value" on_disk "$PY" "$tmp/cmp.py" "$tmp/plain2.nc" "$tmp/r.nc"

# ---- rasterconvert --format 5, every numeric type ---------------------------
types="i1 u1 i2 u2 i4 u4 i8 u8 f4 f8"
"$PY" - "$tmp" $types <<'PY' || fail "writing the typed files"
import sys, netCDF4, numpy as np
for t in sys.argv[2:]:
    d = netCDF4.Dataset("%s/t_%s.nc" % (sys.argv[1], t), "w")
    for n, l in (("time", None), ("z", 2), ("y", 7), ("x", 9)):
        d.createDimension(n, l)
    v = d.createVariable("TEMP", t, ("time", "z", "y", "x"))
    info = np.iinfo(t) if t[0] in "iu" else np.finfo(t)
    # the type's extremes among the values
    a = (np.arange(2 * 2 * 7 * 9) * 37 % 251).astype(t).reshape(2, 2, 7, 9)
    a[0, 0, 0, :2] = info.min, info.max
    v[:] = a
    d.close()
PY
for t in $types; do
    expect 0 "rasterconvert --format 5 ($t)" "$convert" --mask "$tmp/plain.nc:region" \
        --vars TEMP --chunk 1,1,3,4 --format 5 "$tmp/t_$t.nc" "$tmp/r_$t.nc"
    same_data "$t: ncdump without raster" "$tmp/t_$t.nc" "$tmp/r_$t.nc"
    expect 0 "$t: netCDF4 without raster, every value" on_disk "$PY" "$tmp/cmp.py" \
        "$tmp/t_$t.nc" "$tmp/r_$t.nc"
done

# ---- compressed: deflate + shuffle, and quantized ---------------------------
# the variable carries the filters any reader has; raster inflates its
# chunks itself (inflate.c)
plain_shim_same() { # what, raster file, reference file
    "$NCDUMP" "$3" | sed -n '/^data:/,$p' > "$tmp/d_ref"
    under "$NCDUMP" "$2" | sed -n '/^data:/,$p' > "$tmp/d_under"
    cmp -s "$tmp/d_ref" "$tmp/d_under" && ok ||
        { fail "$1"; diff "$tmp/d_ref" "$tmp/d_under" | head -5; }
}
expect 0 "rasterconvert --format 5 --deflate 4 --shuffle" "$convert" \
    --mask "$tmp/plain.nc:region" --vars TEMP --chunk 1,1,3,4 --format 5 \
    --deflate 4 --shuffle "$tmp/t_f4.nc" "$tmp/rz.nc"
same_data "deflated: ncdump without raster" "$tmp/t_f4.nc" "$tmp/rz.nc"
plain_shim_same "deflated: ncdump under the shim" "$tmp/rz.nc" "$tmp/t_f4.nc"
"$NCDUMP" -hs "$tmp/rz.nc" | grep -q 'TEMP:_DeflateLevel = 4' &&
    "$NCDUMP" -hs "$tmp/rz.nc" | grep -q 'TEMP:_Shuffle = "true"' && ok ||
    fail "deflated: the variable does not carry deflate and shuffle"
expect 0 "rasterconvert --format 5 --quantize bitround,6" "$convert" \
    --mask "$tmp/plain.nc:region" --vars TEMP --chunk 1,1,3,4 --format 5 \
    --quantize bitround,6 "$tmp/t_f8.nc" "$tmp/rq.nc"
# the values quantized once: the same without raster and through it
"$NCDUMP" "$tmp/rq.nc" | sed -n '/^data:/,$p' | sed '/^group: raster_/,$d' |
    sed -e '/^}$/d' -e '/^$/d' > "$tmp/d_q"
under "$NCDUMP" "$tmp/rq.nc" | sed -n '/^data:/,$p' | sed -e '/^}$/d' \
    -e '/^$/d' > "$tmp/d_qs"
cmp -s "$tmp/d_q" "$tmp/d_qs" && ok ||
    { fail "quantized: without raster and under the shim differ"; diff "$tmp/d_q" "$tmp/d_qs" | head -5; }
data_of "$tmp/t_f8.nc" > "$tmp/d_f8"
cmp -s "$tmp/d_q" "$tmp/d_f8" && fail "quantized: values unchanged" || ok

report open_everywhere
