#!/bin/sh
# CF-complete extracts (issue 26): rasterget of a WRF-like and a POP-like
# file carries what the variable depends on (its `coordinates`, the time
# variable and `Times`, `bounds`), 2-D latitude/longitude gathered per cell
# for the packed layout, whose list variable has CF's `compress` attribute
# (compression by gathering, CF 8.2) so the grid can be scattered back; the
# bbox and full layouts keep the box's slices. Both tools add a line to
# `history`. The outputs go through the CF checker (cfchecker from PyPI, in
# a venv cached under BUILD_DIR/cf-venv, checking against small local
# tables: no network at check time) when it installs; the attributes CF
# requires are asserted with python in any case.
# usage: test_cf_extract.sh RASTERGET RASTERCONVERT BUILD_DIR
#        (env: NCGEN, PYTHON)
set -u
rg=$1 rc=$2 build=$3
. "$(dirname "$0")/lib.sh"
need_python

# ---- the CF checker (cached venv; optional) --------------------------------
venv="$build/cf-venv"
cfchecks=
if [ -x "$venv/bin/cfchecks" ] && [ -f "$venv/.ready" ]; then
    cfchecks=$venv/bin/cfchecks
elif ! [ -e "$venv/.failed" ]; then
    rm -rf "$venv"
    if "$PY" -m venv "$venv" > "$tmp/venv.log" 2>&1 &&
       timeout 600 "$venv/bin/python" -m pip install --quiet \
           --disable-pip-version-check cfchecker > "$tmp/pip.log" 2>&1; then
        touch "$venv/.ready"
        cfchecks=$venv/bin/cfchecks
    else
        echo "note: cfchecker did not install; checking attributes only"
        tail -3 "$tmp/pip.log" 2>/dev/null
        rm -rf "$venv"; mkdir -p "$venv" && touch "$venv/.failed"
    fi
fi
# cfchecker's tables, cut down to the names these files use
cat > "$tmp/names.xml" <<'XML'
<?xml version="1.0"?>
<standard_name_table><version_number>0</version_number>
<last_modified>test</last_modified>
<entry id="latitude"><canonical_units>degree_north</canonical_units></entry>
<entry id="longitude"><canonical_units>degree_east</canonical_units></entry>
<entry id="time"><canonical_units>s</canonical_units></entry>
<entry id="air_temperature"><canonical_units>K</canonical_units></entry>
<entry id="sea_water_potential_temperature"><canonical_units>K</canonical_units></entry>
<entry id="depth"><canonical_units>m</canonical_units></entry>
</standard_name_table>
XML
printf '<?xml version="1.0"?>\n<t><version_number>0</version_number><date>test</date></t>\n' \
    > "$tmp/list.xml"

# cf_ok FILE DESC: no CF errors in FILE (when the checker is there)
cf_ok() {
    [ -n "$cfchecks" ] || return 0
    (cd "$tmp" && "$cfchecks" -s names.xml -a list.xml -r list.xml "$1") \
        > "$tmp/cf.log" 2>&1
    if grep -q '^ERRORS detected: 0$' "$tmp/cf.log"; then ok; else
        fail "$2: the CF checker found errors"; grep -B3 'ERROR' "$tmp/cf.log"
    fi
}

# ---- a WRF-like file: Times, XTIME, XLAT/XLONG over Time -------------------
cat > "$tmp/wrf.cdl" <<'CDL'
netcdf wrf {
dimensions:
    Time = UNLIMITED ; DateStrLen = 19 ; south_north = 5 ; west_east = 6 ;
variables:
    char Times(Time, DateStrLen) ;
    float XLAT(Time, south_north, west_east) ;
        XLAT:units = "degree_north" ; XLAT:standard_name = "latitude" ;
    float XLONG(Time, south_north, west_east) ;
        XLONG:units = "degree_east" ; XLONG:standard_name = "longitude" ;
    float XTIME(Time) ;
        XTIME:units = "minutes since 2020-01-01 00:00:00" ;
        XTIME:standard_name = "time" ;
    float T2(Time, south_north, west_east) ;
        T2:units = "K" ; T2:standard_name = "air_temperature" ;
        T2:coordinates = "XLONG XLAT XTIME" ;
    int PROV(south_north, west_east) ;
        PROV:flag_values = 1, 2, 3 ;
        PROV:flag_meanings = "north middle south" ;
        PROV:long_name = "province" ;
    :Conventions = "CF-1.8" ; :history = "made by ncgen" ;
data:
 Times = "2020-01-01_00:00:00", "2020-01-01_03:00:00", "2020-01-01_06:00:00" ;
 XTIME = 0, 180, 360 ;
 PROV = 1, 1, 1, 1, 2, 2,  1, 1, 1, 2, 2, 2,  3, 1, 2, 2, 2, 2,
        3, 3, 3, 2, 2, 2,  3, 3, 3, 3, 3, 2 ;
}
CDL
"$NCGEN" -4 -o "$tmp/wrf.nc" "$tmp/wrf.cdl" || exit 1
# the fields: different in every record (a record mix-up shows)
"$PY" - "$tmp/wrf.nc" <<'PY' || exit 1
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as d:
    t, ny, nx = 3, 5, 6
    y, x = np.mgrid[0:ny, 0:nx]
    for k in range(t):
        d["XLAT"][k] = 40 + y + 0.01 * x + 0.1 * k
        d["XLONG"][k] = 10 + x + 0.01 * y + 0.1 * k
        d["T2"][k] = 270 + y * nx + x + 100 * k
PY
"$rc" --mask "$tmp/wrf.nc:PROV" "$tmp/wrf.nc" "$tmp/wr.nc" 2> /dev/null ||
    { echo "FAIL: rasterconvert of the WRF-like file"; exit 1; }

# the history line: the time (lib.sh fixes it with SOURCE_DATE_EPOCH) and
# the command line as typed, words with blanks quoted
"$PY" - "$tmp/wr.nc" "$rc" "$tmp" <<'PY' || fail "rasterconvert history"
import sys, netCDF4
h = netCDF4.Dataset(sys.argv[1]).history.split("\n")
want = "2023-11-14T22:13:20Z: %s --mask %s/wrf.nc:PROV %s/wrf.nc %s/wr.nc" % (
    sys.argv[2], *[sys.argv[3]] * 3)
assert h == [want, "made by ncgen"], h
PY
# without SOURCE_DATE_EPOCH: now, in the same form
printf '1,north\n2,middle\n3,south\n' > "$tmp/my names.csv"
(unset SOURCE_DATE_EPOCH; "$rc" --mask "$tmp/wrf.nc:PROV" \
    --names "$tmp/my names.csv" "$tmp/wrf.nc" "$tmp/x.nc" 2> /dev/null) ||
    fail "rasterconvert --names"
"$PY" - "$tmp/x.nc" "$rc" "$tmp" <<'PY' || fail "rasterconvert history (now)"
import sys, re, time, netCDF4
h = netCDF4.Dataset(sys.argv[1]).history.split("\n")
m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ): (.*)", h[0])
assert m and m.group(1) != "2023-11-14T22:13:20Z", h
assert m.group(2) == "%s --mask %s/wrf.nc:PROV --names '%s/my names.csv' %s/wrf.nc %s/x.nc" % (
    sys.argv[2], *[sys.argv[3]] * 4), h
PY

# check.py OUT IN VAR MASKVAR IDS LAYOUT START COUNT: the extract's
# dependencies equal the input's, sliced, gathered or boxed
cat > "$tmp/check.py" <<'PY'
import sys, re, numpy as np, netCDF4
out, inp, var, mvar, ids, layout, start, count = sys.argv[1:9]
ids = [int(i) for i in ids.split(",")]
i, o = netCDF4.Dataset(inp), netCDF4.Dataset(out)
i.set_auto_mask(False); o.set_auto_mask(False)
mask = i[mvar][:]
ny, nx = mask.shape
sel = np.isin(mask, ids)
v = i[var]; w = o[var]
outer = [int(s) for s in start.split(",")], [int(c) for c in count.split(",")]
osl = tuple(slice(s, s + c) for s, c in zip(*outer))
want = v[:][osl]
deps = w.coordinates.split()
if layout == "packed":
    # CF 8.2: the list variable, of type int, names the grid dimensions
    lv = o["cell"]
    assert lv.dimensions == ("cell",) and lv.dtype == np.int32, lv
    assert lv.compress == "%s %s" % v.dimensions[-2:], lv.compress
    assert [o.dimensions[d].size for d in v.dimensions[-2:]] == [ny, nx]
    assert w.dimensions[-1] == "cell"
    cells = lv[:]
    assert np.array_equal(cells, np.flatnonzero(sel)), cells
    # scattered back, the grid is the input's inside the regions
    full = np.zeros(want.shape[:-2] + (ny * nx,), want.dtype)
    full[..., cells] = w[:]
    got = full.reshape(want.shape)
    assert np.array_equal(got[..., sel], want[..., sel])
else:
    y0, x0, y1, x1 = (0, 0, ny, nx) if layout == "full" else (
        int(w.getncattr("raster_bbox_" + k)) for k in ("y0", "x0", "y1", "x1"))
    box = (slice(y0, y1), slice(x0, x1))
    assert np.array_equal(w[:][..., sel[box]], want[..., box[0], box[1]][..., sel[box]])
for name in deps + sys.argv[9:]:
    a, b = i[name], o[name]
    assert b.ncattrs() == a.ncattrs() and all(
        np.array_equal(np.asarray(b.getncattr(k)), np.asarray(a.getncattr(k)))
        for k in a.ncattrs()), name
    x = a[:]
    # outer dimensions sliced, grid gathered or boxed, others whole
    for k, d in enumerate(a.dimensions):
        if d in v.dimensions[:-2]:
            j = v.dimensions.index(d)
            x = x.take(range(outer[0][j], outer[0][j] + outer[1][j]), axis=k)
    gd = [k for k, d in enumerate(a.dimensions) if d in v.dimensions[-2:]]
    if len(gd) == 2 and layout == "packed":
        x = x.reshape(x.shape[:gd[0]] + (ny * nx,) + x.shape[gd[1] + 1:])
        x = x.take(cells, axis=gd[0])
    elif len(gd) == 2:
        x = x[(slice(None),) * gd[0] + box]
    elif len(gd) == 1 and layout == "bbox":
        x = x.take(range(box[0].start, box[0].stop) if a.dimensions[gd[0]] == v.dimensions[-2]
                   else range(box[1].start, box[1].stop), axis=gd[0])
    assert b[:].shape == x.shape and np.array_equal(b[:], x), (name, b[:], x)
h = o.history.split("\n")
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: .*rasterget .*", h[0]), h
assert "rasterconvert --" in h[1] and h[2:] == i.history.split("\n"), h
PY

# get DESC ARGS...: rasterget writes $tmp/x.nc with ARGS
get() {
    what=$1; shift
    rm -f "$tmp/x.nc"
    expect 0 "$what" "$rg" "$@" -o "$tmp/x.nc"
}

get "WRF packed" "$tmp/wr.nc" --var T2 --region middle
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/wrf.nc" T2 PROV 2 packed 0 3 Times ||
    fail "WRF packed: dependencies"
cf_ok x.nc "WRF packed"
get "WRF packed, records 1-2" "$tmp/wr.nc" --var T2 --region north \
    --region south --start 1 --count 2
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/wrf.nc" T2 PROV 1,3 packed 1 2 Times ||
    fail "WRF packed, records 1-2: dependencies"
cf_ok x.nc "WRF packed, records 1-2"
get "WRF bbox" "$tmp/wr.nc" --var T2 --region south --layout bbox
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/wrf.nc" T2 PROV 3 bbox 0 3 Times ||
    fail "WRF bbox: dependencies"
cf_ok x.nc "WRF bbox"

# XLAT/XLONG stored by region too: read through libraster
"$rc" --vars T2,XLAT,XLONG --mask "$tmp/wrf.nc:PROV" "$tmp/wrf.nc" \
    "$tmp/wr3.nc" 2> /dev/null || { echo "FAIL: rasterconvert --vars"; exit 1; }
get "WRF packed, raster XLAT" "$tmp/wr3.nc" --var T2 --region south --start 2
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/wrf.nc" T2 PROV 3 packed 2 1 Times ||
    fail "WRF packed, raster XLAT: dependencies"
get "WRF bbox, raster XLAT" "$tmp/wr3.nc" --var T2 --region north --layout bbox
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/wrf.nc" T2 PROV 1 bbox 0 3 Times ||
    fail "WRF bbox, raster XLAT: dependencies"
cf_ok x.nc "WRF bbox, raster XLAT"

# ---- a POP-like file: 2-D TLAT/TLONG, time with bounds, depth ------------
cat > "$tmp/pop.cdl" <<'CDL'
netcdf pop {
dimensions:
    time = UNLIMITED ; d2 = 2 ; z_t = 2 ; nlat = 4 ; nlon = 5 ;
variables:
    double time(time) ;
        time:units = "days since 0001-01-01 00:00:00" ;
        time:standard_name = "time" ; time:calendar = "noleap" ;
        time:bounds = "time_bound" ;
    double time_bound(time, d2) ;
    float z_t(z_t) ;
        z_t:units = "m" ; z_t:standard_name = "depth" ; z_t:positive = "down" ;
    double TLAT(nlat, nlon) ;
        TLAT:units = "degrees_north" ; TLAT:standard_name = "latitude" ;
    double TLONG(nlat, nlon) ;
        TLONG:units = "degrees_east" ; TLONG:standard_name = "longitude" ;
    float TEMP(time, z_t, nlat, nlon) ;
        TEMP:units = "K" ;
        TEMP:standard_name = "sea_water_potential_temperature" ;
        TEMP:coordinates = "TLONG TLAT ULAT z_t time" ;
        TEMP:_FillValue = -1.f ;
    int REGION_MASK(nlat, nlon) ;
        REGION_MASK:flag_values = 0, 1, 2 ;
        REGION_MASK:flag_meanings = "Land Pacific Atlantic" ;
    :Conventions = "CF-1.8" ; :history = "pop run" ;
data:
 time = 15.5, 45, 74.5 ;
 time_bound = 0, 31, 31, 59, 59, 90 ;
 z_t = 5, 15 ;
 TLAT = -60, -60, -60, -60, -60, -20, -20, -20, -20, -20,
        20, 20, 20, 20, 20, 60, 60, 60, 60, 60 ;
 TLONG = 0, 72, 144, 216, 288, 1, 73, 145, 217, 289,
         2, 74, 146, 218, 290, 3, 75, 147, 219, 291 ;
 REGION_MASK = 1, 1, 0, 2, 2,  1, 1, 0, 2, 2,  1, 0, 0, 2, 2,  0, 1, 1, 2, 0 ;
}
CDL
"$NCGEN" -4 -o "$tmp/pop.nc" "$tmp/pop.cdl" || exit 1
"$PY" - "$tmp/pop.nc" <<'PY' || exit 1
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as d:
    d["TEMP"][0:3] = 270 + np.arange(3 * 2 * 4 * 5).reshape(3, 2, 4, 5) * 0.5
PY
"$rc" --mask "$tmp/pop.nc:REGION_MASK" "$tmp/pop.nc" "$tmp/pr.nc" 2> /dev/null ||
    { echo "FAIL: rasterconvert of the POP-like file"; exit 1; }
get "POP packed" "$tmp/pr.nc" --var TEMP --region Atlantic
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/pop.nc" TEMP REGION_MASK 2 packed 0,0 3,2 time_bound ||
    fail "POP packed: dependencies"
cf_ok x.nc "POP packed"
# a name in `coordinates` the input lacks (ULAT) is left out
"$PY" -c 'import sys, netCDF4; c = netCDF4.Dataset(sys.argv[1])["TEMP"].coordinates
assert c == "TLONG TLAT z_t time", c' "$tmp/x.nc" || fail "POP packed: coordinates"
get "POP bbox, record 2" "$tmp/pr.nc" --var TEMP --region Pacific \
    --layout bbox --start 2,0 --count 1,2
"$PY" - "$tmp/x.nc" "$tmp/pop.nc" <<'PY' || fail "POP bbox: dependencies"
import sys, numpy as np, netCDF4
o, i = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
t = o["TEMP"]
assert (t.raster_bbox_y0, t.raster_bbox_x0, t.raster_bbox_y1, t.raster_bbox_x1) == (0, 0, 4, 3)
assert np.array_equal(o["TLAT"][:], i["TLAT"][:, 0:3]), o["TLAT"][:]
assert np.array_equal(o["TLONG"][:], i["TLONG"][:, 0:3]), o["TLONG"][:]
assert np.array_equal(o["time"][:], [74.5]) and o["time"].bounds == "time_bound"
assert np.array_equal(o["time_bound"][:], [[59, 90]])
assert np.array_equal(o["z_t"][:], [5, 15])
PY
cf_ok x.nc "POP bbox"
get "POP full" "$tmp/pr.nc" --var TEMP --region Pacific --layout full
"$PY" "$tmp/check.py" "$tmp/x.nc" "$tmp/pop.nc" TEMP REGION_MASK 1 full 0,0 3,2 time_bound ||
    fail "POP full: dependencies"
cf_ok x.nc "POP full"

report test_cf_extract
