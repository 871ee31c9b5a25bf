#!/bin/sh
# Integration test of rastergen: tiny CESM- and WRF-like files on the bundled
# masks (dimensions, chunking, attributes, fill exactly where the mask is 0,
# finite values elsewhere, the mask copied), determinism, --seed, the size
# presets (--dry-run), input errors (exit 1, nothing left behind) and usage
# errors (exit 2).
# usage: test_rastergen.sh RASTERGEN TESTS_DIR   (env: NCGEN, NCDUMP, PYTHON)
set -u
gen=$1 src=$2
. "$(dirname "$0")/lib.sh"
need_python

masks=$src/../datasets/masks
pop=$masks/pop_basins_384x320.nc:REGION_MASK
admin=$masks/admin_300x425.nc:REGION_MASK

# header_has FILE DESC PATTERN...: `ncdump -s -h FILE` matches every pattern
header_has() {
    f=$1 what=$2
    shift 2
    "$NCDUMP" -s -h "$f" > "$tmp/hdr" 2>&1 || { fail "$what: ncdump"; return; }
    for p in "$@"; do
        grep -q -- "$p" "$tmp/hdr" || { fail "$what: no '$p' in the header"; return; }
    done
    ok
}

# check FILE MASKFILE VAR...: fill exactly where REGION_MASK == 0, finite
# values in a plausible range elsewhere, REGION_MASK equal to the source's
check() {
    "$PY" - "$@" <<'PY'
import sys
import numpy as np
from netCDF4 import Dataset
path, mask_path, names = sys.argv[1], sys.argv[2], sys.argv[3:]
ranges = {"TEMP": (-3, 35), "SALT": (30, 40), "T2": (200, 340),
          "Q2": (0, 0.1), "PSFC": (9e4, 1.1e5)}
with Dataset(mask_path) as m:
    src = m["REGION_MASK"][:].filled(0)
with Dataset(path) as ds:
    ds.set_auto_mask(False)
    mask = ds["REGION_MASK"][:]
    assert mask.dtype == np.int32 and (mask == src).all(), "REGION_MASK differs"
    assert ds["REGION_MASK"].getncattr("flag_meanings")
    land = mask == 0
    for n in names:
        v = ds[n]
        fill = np.float32(v.getncattr("_FillValue"))
        assert fill == np.float32(9.96921e36), fill
        assert v.dtype == np.float32
        for k in (v.getncattr("long_name"), v.getncattr("units")):
            assert k
        a = v[:]
        grid = a.reshape((-1,) + land.shape)
        isfill = grid == fill
        assert (isfill == land[None]).all(), n + ": fill not exactly on mask 0"
        vals = grid[:, ~land]
        assert np.isfinite(vals).all(), n + ": non-finite values"
        lo, hi = ranges[n]
        assert lo <= vals.min() and vals.max() <= hi, (n, vals.min(), vals.max())
        assert vals.std() > 0, n + ": constant field"
    # cesm: TAREA, every cell's area on the sphere: positive, larger near
    # the equator than near the poles, the grid's band of the sphere
    if "z_t" in ds.dimensions:
        a = ds["TAREA"][:]
        assert a.shape == land.shape and (a > 0).all(), "TAREA"
        lat = ds[ds["TAREA"].coordinates.split()[1]][:]
        lat2 = np.broadcast_to(lat[:, None] if lat.ndim == 1 else lat, a.shape)
        eq, pole = np.abs(lat2).argmin(), np.abs(lat2).argmax()
        assert a.flat[eq] > a.flat[pole], "TAREA: poles as large as the equator"
        band = (np.sin(np.radians(min(90, lat2.max()))) -
                np.sin(np.radians(max(-90, lat2.min())))) / 2
        frac = a.sum() / (4 * np.pi * 6.371e8 ** 2)
        assert abs(frac - band) < 0.05, ("TAREA sum", frac, band)
PY
}

# same_data A B VAR...: the variables hold identical values (1: they differ,
# but with fill in the same cells)
same_data() {
    "$PY" - "$@" <<'PY'
import sys
import numpy as np
from netCDF4 import Dataset
a, b = Dataset(sys.argv[1]), Dataset(sys.argv[2])
a.set_auto_mask(False); b.set_auto_mask(False)
same = True
for n in sys.argv[3:]:
    x, y = a[n][:], b[n][:]
    assert x.shape == y.shape
    assert ((x > 1e30) == (y > 1e30)).all(), n + ": fill pattern differs"
    same = same and np.array_equal(x, y)
sys.exit(0 if same else 1)
PY
}

# ---- CESM-like, tiny ------------------------------------------------------
expect 0 "cesm tiny" "$gen" --kind cesm --mask "$pop" --size tiny "$tmp/c.nc"
grep -q 'TEMP(time=2, z_t=3, nlat=384, nlon=320) float, chunks 1 x 3 x 50 x 50: 2949120 bytes' \
    "$tmp/out" || fail "cesm tiny: plan line"
header_has "$tmp/c.nc" "cesm tiny header" \
    'time = UNLIMITED ; // (2 currently)' 'z_t = 3 ;' 'nlat = 384 ;' \
    'nlon = 320 ;' 'float TEMP(time, z_t, nlat, nlon)' \
    'TEMP:_ChunkSizes = 1, 3, 50, 50 ;' 'TEMP:_Storage = "chunked"' \
    'TEMP:units = "degC"' 'TEMP:long_name = "Potential Temperature"' \
    'double time(time)' 'time:calendar = "noleap"' 'float z_t(z_t)' \
    'double lat(nlat)' 'double lon(nlon)' 'int REGION_MASK(nlat, nlon)' \
    'REGION_MASK:flag_values = -14' 'REGION_MASK:coordinates = "lat lon"' \
    ':source = "rastergen (raster)"' ':history = ".*rastergen --kind cesm' \
    ':title = ' ':Conventions = "CF-1.8"'
if grep -q 'TEMP:_DeflateLevel\|TEMP:_Shuffle' "$tmp/hdr"; then
    fail "cesm tiny: TEMP is compressed"
fi
if check "$tmp/c.nc" "$masks/pop_basins_384x320.nc" TEMP; then ok
else fail "cesm tiny values"; fi

# ---- WRF-like, tiny -------------------------------------------------------
expect 0 "wrf tiny" "$gen" --kind wrf --mask "$admin" --size tiny \
    --vars T2,Q2,PSFC "$tmp/w.nc"
header_has "$tmp/w.nc" "wrf tiny header" \
    'Time = UNLIMITED ; // (6 currently)' 'south_north = 300 ;' \
    'west_east = 425 ;' 'float T2(Time, south_north, west_east)' \
    'float Q2(Time, south_north, west_east)' \
    'float PSFC(Time, south_north, west_east)' \
    'T2:_ChunkSizes = 1, 50, 50 ;' 'PSFC:_ChunkSizes = 1, 50, 50 ;' \
    'T2:units = "K"' 'float XLAT(south_north, west_east)' \
    'float XLONG(south_north, west_east)' 'float XTIME(Time)' \
    'char Times(Time, DateStrLen)' 'int REGION_MASK(south_north, west_east)' \
    'REGION_MASK:flag_codes' ':MAP_PROJ = 1' ':DX = 12000.f'
if check "$tmp/w.nc" "$masks/admin_300x425.nc" T2 Q2 PSFC; then ok
else fail "wrf tiny values"; fi
"$NCDUMP" -v Times "$tmp/w.nc" | grep -q '"2000-01-01_05:00:00"' || fail "wrf Times"

# ---- determinism, seed, chunking ------------------------------------------
# Same arguments: the same values (and, same output name, the same bytes);
# another chunk shape: still the same values; another seed: other values,
# same fill.
expect 0 "cesm again" "$gen" --kind cesm --mask "$pop" --size tiny "$tmp/c2.nc"
if same_data "$tmp/c.nc" "$tmp/c2.nc" TEMP REGION_MASK lat lon z_t time; then ok
else fail "two runs give different data"; fi
cp "$tmp/c.nc" "$tmp/c_keep.nc"
expect 0 "cesm same name" "$gen" --kind cesm --mask "$pop" --size tiny "$tmp/c.nc"
cmp -s "$tmp/c.nc" "$tmp/c_keep.nc" || fail "same command: files not byte-identical"
expect 0 "cesm other chunks" "$gen" --kind cesm --mask "$pop" --size tiny \
    --chunk 2,1,30,70 --vars SALT,TEMP --quiet "$tmp/c3.nc"
[ -s "$tmp/out" ] && fail "--quiet printed something"
header_has "$tmp/c3.nc" "cesm --chunk" 'TEMP:_ChunkSizes = 2, 1, 30, 70 ;' \
    'SALT:_ChunkSizes = 2, 1, 30, 70 ;' 'SALT:units = "gram/kilogram"'
if same_data "$tmp/c.nc" "$tmp/c3.nc" TEMP; then ok
else fail "values depend on the chunk shape"; fi
if check "$tmp/c3.nc" "$masks/pop_basins_384x320.nc" TEMP SALT; then ok
else fail "cesm TEMP,SALT values"; fi
expect 0 "cesm seed 7" "$gen" --kind cesm --mask "$pop" --size tiny --seed 7 \
    "$tmp/c7.nc"
same_data "$tmp/c.nc" "$tmp/c7.nc" TEMP
case $? in
    1) ok ;;
    0) fail "--seed 7 gives the same values as the default seed" ;;
    *) fail "--seed 7: fill pattern or shape differs" ;;
esac
expect 0 "wrf again" "$gen" --kind wrf --mask "$admin" --size tiny \
    --vars T2,Q2,PSFC "$tmp/w2.nc"
if same_data "$tmp/w.nc" "$tmp/w2.nc" T2 Q2 PSFC XLAT XLONG; then ok
else fail "two wrf runs give different data"; fi

# ---- shapes: overrides, two chunk sizes, clipping, presets -----------------
expect 0 "ntime/ndepth" "$gen" --kind cesm --mask "$pop" --ntime 3 --ndepth 2 \
    --chunk 40,60 "$tmp/c4.nc"
header_has "$tmp/c4.nc" "ntime/ndepth" 'time = UNLIMITED ; // (3 currently)' \
    'z_t = 2 ;' 'TEMP:_ChunkSizes = 1, 2, 40, 60 ;'
expect 0 "chunk clipped" "$gen" --kind wrf --mask "$admin" --ntime 2 \
    --chunk 2,500,100 "$tmp/w3.nc"
grep -q 'clipped' "$tmp/out" || fail "clipping not reported"
header_has "$tmp/w3.nc" "chunk clipped" 'T2:_ChunkSizes = 2, 300, 100 ;'
big=$masks/pop_basins_2400x3600.nc:REGION_MASK
for s in "medium 1 x 30" "paper 1 x 62" "small 1 x 1" "tiny 1 x 1"; do
    set -- $s
    expect 0 "dry run $1" "$gen" --kind cesm --mask "$big" --size "$1" \
        --dry-run "$tmp/big.nc"
    grep -q "TEMP(time=$2, z_t=$4, nlat=2400, nlon=3600)" "$tmp/out" ||
        fail "--size $1 on 2400x3600: $(cat "$tmp/out")"
done
no_output "$tmp/big.nc" "--dry-run"
expect 0 "dry run medium 384x320" "$gen" --kind cesm --mask "$pop" \
    --size medium --dry-run "$tmp/big.nc"
grep -q 'TEMP(time=73, z_t=30, nlat=384, nlon=320)' "$tmp/out" ||
    fail "--size medium on 384x320: $(cat "$tmp/out")"

# A mask without coordinates (float, integral values): lat/lon made up.
cat > "$tmp/m.cdl" <<'CDL'
netcdf m {
dimensions:
    y = 4 ; x = 6 ; z = 2 ; n = 5 ;
variables:
    float fmask(y, x) ;
        fmask:flag_values = 0.f, 1.f, 2.f ;
        fmask:flag_meanings = "Land A B" ;
        fmask:_FillValue = -1.f ;
    double frac(y, x) ;
    int cube(z, y, x) ;
    int badgrid(y, x) ;
        badgrid:coordinates = "wrong" ;
    double wrong(n) ;
data:
 fmask = 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 1, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0 ;
 frac = 0, 1.5, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 1, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0 ;
 badgrid = 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 1, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0 ;
}
CDL
"$NCGEN" -4 -o "$tmp/m.nc" "$tmp/m.cdl" || exit 1
expect 0 "float mask, no coordinates" "$gen" --kind cesm --mask "$tmp/m.nc:fmask" \
    --ntime 1 --ndepth 2 "$tmp/c5.nc"
header_has "$tmp/c5.nc" "made-up coordinates" 'double lat(nlat)' \
    'double lon(nlon)' 'REGION_MASK:flag_values = 0, 1, 2 ;' \
    'TEMP:_ChunkSizes = 1, 2, 4, 6 ;' 'REGION_MASK:coordinates = "lon lat"'
grep -q 'REGION_MASK:_FillValue' "$tmp/hdr" && fail "float mask's _FillValue copied"
expect 0 "wrf, no coordinates" "$gen" --kind wrf --mask "$tmp/m.nc:fmask" \
    --ntime 2 "$tmp/w5.nc"
header_has "$tmp/w5.nc" "made-up wrf coordinates" 'float XLAT(south_north, west_east)'

# A mask with its own latitude/longitude but no `coordinates` attribute:
# 1-D lat(y)/lon(x) (CF coordinate variables), or 2-D TLAT/TLONG found by
# standard_name. rastergen used to make up a longitude range (issue 26).
cat > "$tmp/own.cdl" <<'CDL'
netcdf own {
dimensions: y = 3 ; x = 4 ;
variables:
    double y(y) ; y:standard_name = "latitude" ; y:units = "degrees_north" ;
    float x(x) ; x:units = "degrees_east" ;
    float TLAT(y, x) ; TLAT:standard_name = "latitude" ;
    float TLONG(y, x) ; TLONG:standard_name = "longitude" ;
    int m1(y, x) ;
data:
 y = -10, 0, 10 ;
 x = 100, 101, 102, 103 ;
 TLAT = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ;
 TLONG = 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 ;
 m1 = 0, 1, 1, 2, 0, 1, 1, 2, 0, 1, 2, 2 ;
}
CDL
"$NCGEN" -4 -o "$tmp/own.nc" "$tmp/own.cdl" || exit 1
expect 0 "the mask's own coordinates" "$gen" --kind cesm --mask "$tmp/own.nc:m1" \
    --ntime 1 --ndepth 1 --quiet "$tmp/own_c.nc"
expect 0 "the mask's own coordinates (wrf)" "$gen" --kind wrf \
    --mask "$tmp/own.nc:m1" --ntime 1 --quiet "$tmp/own_w.nc"
"$PY" - "$tmp/own.nc" "$tmp/own_c.nc" "$tmp/own_w.nc" <<'PY' && ok ||
import sys, numpy as np, netCDF4
m, c, w = (netCDF4.Dataset(f) for f in sys.argv[1:4])
# the first latitude and the first longitude on the grid: y(y) and x(x)
for out in (c, w):
    assert np.array_equal(out["y"][:], m["y"][:]), out["y"][:]
    assert np.array_equal(out["x"][:], m["x"][:]), out["x"][:]
    assert "lat" not in out.variables and "XLAT" not in out.variables
    assert out["REGION_MASK"].coordinates.split() in (["x", "y"], ["y", "x"])
PY
    fail "the mask's own coordinates: not used"
# 2-D only: TLAT/TLONG
"$PY" - "$tmp/own.nc" "$tmp/own2.nc" <<'PY' || exit 1
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1]) as a, netCDF4.Dataset(sys.argv[2], "w") as b:
    for d in ("y", "x"):
        b.createDimension(d, len(a.dimensions[d]))
    for n in ("TLAT", "TLONG", "m1"):
        v = a[n]
        w = b.createVariable(n, v.dtype, v.dimensions)
        w.setncatts({k: v.getncattr(k) for k in v.ncattrs()})
        w[:] = v[:]
PY
expect 0 "the mask's own 2-D coordinates" "$gen" --kind cesm \
    --mask "$tmp/own2.nc:m1" --ntime 1 --ndepth 1 --quiet "$tmp/own_c2.nc"
"$PY" - "$tmp/own2.nc" "$tmp/own_c2.nc" <<'PY' && ok ||
import sys, numpy as np, netCDF4
m, c = (netCDF4.Dataset(f) for f in sys.argv[1:3])
for n in ("TLAT", "TLONG"):
    assert np.array_equal(c[n][:], m[n][:]), n
PY
    fail "the mask's own 2-D coordinates: not used"

# ---- input errors: exit 1, nothing left behind ----------------------------
expect 1 "missing mask file" "$gen" --kind cesm --mask "$tmp/none.nc:REGION_MASK" \
    --size tiny "$tmp/e.nc"
no_output "$tmp/e.nc" "missing mask file"
expect 1 "missing mask variable" "$gen" --kind cesm --mask "$tmp/m.nc:nope" \
    --size tiny "$tmp/e.nc"
expect 1 "3-D mask" "$gen" --kind cesm --mask "$tmp/m.nc:cube" --size tiny "$tmp/e.nc"
expect 1 "non-integral mask" "$gen" --kind wrf --mask "$tmp/m.nc:frac" --size tiny \
    "$tmp/e.nc"
expect 1 "coordinates off the grid" "$gen" --kind cesm --mask "$tmp/m.nc:badgrid" \
    --size tiny "$tmp/e.nc"
grep -q 'does not match' "$tmp/err" || fail "non-matching grid message"
echo "not netcdf" > "$tmp/junk.nc"
expect 1 "not a netCDF mask" "$gen" --kind cesm --mask "$tmp/junk.nc:m" --size tiny \
    "$tmp/e.nc"
no_output "$tmp/e.nc" "input errors"
expect 1 "output directory missing" "$gen" --kind cesm --mask "$pop" --size tiny \
    "$tmp/nodir/e.nc"
mkdir "$tmp/adir"
expect 1 "output is a directory" "$gen" --kind cesm --mask "$pop" --size tiny \
    "$tmp/adir"
# Interrupted (SIGTERM) while writing a 1 GiB file, once its temporary
# file exists: no output, no temporary file.
mkdir "$tmp/int"
"$gen" --kind cesm --mask "$pop" --size medium --quiet "$tmp/int/big.nc" \
    > /dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 200 ] && ! ls -a "$tmp/int" | grep -q '\.tmp'; do
    sleep 0.05; i=$((i + 1))
done
sleep 0.2
kill -TERM $pid 2>/dev/null
wait $pid 2>/dev/null
st=$?
if [ $i -ge 200 ]; then fail "interrupted: no temporary file seen"
elif [ $st -eq 0 ]; then fail "interrupted: finished before the signal"
else ok; fi
no_output "$tmp/int/big.nc" "interrupted"

# ---- usage errors: exit 2 -------------------------------------------------
expect 2 "no arguments" "$gen"
expect 2 "no output" "$gen" --kind cesm --mask "$pop" --size tiny
expect 2 "two outputs" "$gen" --kind cesm --mask "$pop" --size tiny a.nc b.nc
expect 2 "no kind" "$gen" --mask "$pop" --size tiny "$tmp/e.nc"
expect 2 "bad kind" "$gen" --kind mom --mask "$pop" --size tiny "$tmp/e.nc"
expect 2 "no mask" "$gen" --kind cesm --size tiny "$tmp/e.nc"
expect 2 "mask without variable" "$gen" --kind cesm --mask "$masks/admin_300x425.nc" \
    --size tiny "$tmp/e.nc"
expect 2 "no size" "$gen" --kind cesm --mask "$pop" "$tmp/e.nc"
expect 2 "ntime without ndepth" "$gen" --kind cesm --mask "$pop" --ntime 2 "$tmp/e.nc"
expect 2 "bad size" "$gen" --kind cesm --mask "$pop" --size huge "$tmp/e.nc"
expect 2 "zero ntime" "$gen" --kind cesm --mask "$pop" --size tiny --ntime 0 "$tmp/e.nc"
expect 2 "junk ndepth" "$gen" --kind cesm --mask "$pop" --size tiny --ndepth 3x "$tmp/e.nc"
expect 2 "ndepth for wrf" "$gen" --kind wrf --mask "$admin" --size tiny --ndepth 3 \
    "$tmp/e.nc"
expect 2 "zero chunk" "$gen" --kind cesm --mask "$pop" --size tiny --chunk 0,50 "$tmp/e.nc"
expect 2 "one chunk size" "$gen" --kind cesm --mask "$pop" --size tiny --chunk 50 "$tmp/e.nc"
expect 2 "too many chunk sizes" "$gen" --kind wrf --mask "$admin" --size tiny \
    --chunk 1,1,50,50 "$tmp/e.nc"
expect 2 "unknown variable" "$gen" --kind cesm --mask "$pop" --size tiny --vars TEMP,U \
    "$tmp/e.nc"
expect 2 "variable of the other kind" "$gen" --kind cesm --mask "$pop" --size tiny \
    --vars T2 "$tmp/e.nc"
expect 2 "variable twice" "$gen" --kind cesm --mask "$pop" --size tiny \
    --vars TEMP,TEMP "$tmp/e.nc"
expect 2 "negative seed" "$gen" --kind cesm --mask "$pop" --size tiny --seed -1 "$tmp/e.nc"
expect 2 "unknown flag" "$gen" --kind cesm --mask "$pop" --size tiny --frobnicate \
    "$tmp/e.nc"
err_is "unknown flag" "rastergen: unknown option '--frobnicate'; try 'rastergen --help'"
no_output "$tmp/e.nc" "usage errors"

# --help documents every flag; --version.
expect 0 "help" "$gen" --help
for flag in --kind --mask --size --ntime --ndepth --vars --chunk --seed \
            --dry-run --quiet --help --version tiny small medium paper; do
    grep -q -- "$flag" "$tmp/out" || fail "--help does not mention $flag"
done
expect 0 "version" "$gen" --version
grep -q '^rastergen (raster) ' "$tmp/out" || fail "--version output"

report rastergen
