#!/bin/sh
# Real data, compressed as users compress it (issue #23): Ferret's bundled
# datasets (Debian's ferret-datasets: the Levitus and NODC ocean atlases,
# COADS, Navy winds; measured fields, not generated ones) made netCDF-4
# with deflate 5 + shuffle by nccopy, then converted by rasterconvert with
# its defaults (the input's filters kept). Each converted file must be no
# larger than 1.10 x its deflated original, keep the filters on its stores
# (rasterstat), and give back exactly the original values: --restore's
# output equals the input value for value (ncdump of the data), and region
# reads equal numpy's masking of the original.
# The region mask is made on each file's own grid: land where the first
# field is missing, the ocean cut into basins by longitude and latitude.
# usage: test_real_files.sh RASTERCONVERT RASTERSTAT RASTERGET
#        (env: NCCOPY, NCDUMP, PYTHON; FERRET_DATA overrides the data folder)
set -u
conv=$1 stat=$2 get=$3
. "$(dirname "$0")/lib.sh"
data=${FERRET_DATA:-/usr/share/ferret-vis/data}
if ! [ -f "$data/ocean_atlas_subset.nc" ]; then
    echo "SKIP: no Ferret datasets in $data (Debian: ferret-datasets)"
    exit 77
fi
need_python

cat > "$tmp/mask.py" <<'PY'
import sys
import numpy as np
from netCDF4 import Dataset
src, var, out = sys.argv[1:4]
with Dataset(src) as d:
    v = d[var]
    ydim, xdim = v.dimensions[-2:]
    lat = np.asarray(d[ydim][:], float)
    lon = np.asarray(d[xdim][:], float) % 360
    land = np.ma.getmaskarray(v[(0,) * (v.ndim - 2)])
LON, LAT = np.meshgrid(lon, lat)
m = np.where((LON >= 20) & (LON < 120), 3,
             np.where((LON >= 120) & (LON < 290), 2, 6))
m = np.where(LAT < -50, 1, np.where(LAT > 66, 10, m))
m = np.where(land, 0, m).astype(np.int32)
with Dataset(out, "w") as o:
    o.createDimension(ydim, len(lat))
    o.createDimension(xdim, len(lon))
    r = o.createVariable("REGION_MASK", "i4", (ydim, xdim))
    r.flag_values = np.array([0, 1, 2, 3, 6, 10], np.int32)
    r.flag_meanings = ("Land Southern_Ocean Pacific_Ocean Indian_Ocean "
                       "Atlantic_Ocean Arctic_Ocean")
    r[:] = m
PY

# region reads (rasterget, packed) against numpy on the deflated original
cat > "$tmp/regions.py" <<'PY'
import sys
import numpy as np
from netCDF4 import Dataset
orig, mask, var, got, rid = sys.argv[1:6]
with Dataset(mask) as m:
    sel = m["REGION_MASK"][:] == int(rid)
with Dataset(orig) as d:
    d.set_auto_mask(False)
    want = d[var][:][..., sel]
with Dataset(got) as g:
    g.set_auto_mask(False)
    have = g[var][:]
assert have.shape == want.shape, (have.shape, want.shape)
assert np.array_equal(have.view(np.uint32), want.view(np.uint32)), var
PY

# check FILE VAR...: one dataset through the whole route
check() {
    name=$1; shift
    src="$data/$name" base="$tmp/${name%.*}"
    if ! "$NCCOPY" -k nc4 -d 5 -s "$src" "$base.d5.nc" 2> "$tmp/err"; then
        fail "$name: nccopy -d 5 -s"; cat "$tmp/err"; return
    fi
    if ! "$PY" "$tmp/mask.py" "$base.d5.nc" "$1" "$base.mask.nc"; then
        fail "$name: making its mask"; return
    fi
    vars=$(printf '%s,' "$@"); vars=${vars%,}
    expect 0 "$name: rasterconvert" "$conv" --quiet --mask \
        "$base.mask.nc:REGION_MASK" --vars "$vars" "$base.d5.nc" "$base.r.nc"
    [ -f "$base.r.nc" ] || return
    a=$(stat -c %s "$base.d5.nc") b=$(stat -c %s "$base.r.nc")
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    echo "$name ($vars): deflated $a bytes, raster $b bytes, ratio $ratio"
    if awk -v r="$ratio" 'BEGIN { exit !(r <= 1.10) }'; then ok; else
        fail "$name: raster file $ratio x its deflated original"; fi
    # the filters kept on every store of every variable
    expect 0 "$name: rasterstat" "$stat" "$base.r.nc"
    n=$(grep -c '^stores  filters: deflate level 5, shuffle' "$tmp/out")
    if [ "$n" -eq $# ]; then ok; else
        fail "$name: $n of $# variables' stores deflated (level 5, shuffle)"
        grep '^stores' "$tmp/out"; fi
    # the values back, every one
    expect 0 "$name: --restore" "$conv" --quiet --restore "$base.r.nc" \
        "$base.back.nc"
    for v in "$@"; do
        "$NCDUMP" -v "$v" "$base.d5.nc" | sed -n '/^data:/,$p' > "$tmp/a"
        "$NCDUMP" -v "$v" "$base.back.nc" | sed -n '/^data:/,$p' > "$tmp/b"
        if [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then ok; else
            fail "$name: $v restored differs from the original"; fi
    done
    for r in 2 6; do
        expect 0 "$name: rasterget region $r" "$get" "$base.r.nc" \
            --var "$1" --region "$r" -o "$base.g$r.nc"
        if "$PY" "$tmp/regions.py" "$base.d5.nc" "$base.mask.nc" "$1" \
            "$base.g$r.nc" "$r"; then ok; else
            fail "$name: region $r of $1 differs from numpy's"; fi
    done
}

check ocean_atlas_subset.nc TEMP
check levitus_climatology.cdf TEMP SALT
check coads_climatology.cdf SST AIRT SPEH WSPD UWND VWND
check monthly_navy_winds.cdf UWND VWND
report real_files
