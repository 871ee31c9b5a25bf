#!/bin/sh
# Integration test of rasterget: region reads of a file made by rasterconvert
# must equal numpy masking of the original file exactly (packed:
# var[..., isin(mask, ids)] with cell_y/cell_x; bbox and full: the values
# inside the regions, the fill value outside, the bounding box as
# attributes), over --start/--count boxes, by id and by name; input errors
# (exit 1, no output left behind) and usage errors (exit 2).
# usage: test_rasterget.sh RASTERGET RASTERCONVERT   (env: NCDUMP, PYTHON)
# Needs a python3 with numpy and netCDF4 (skips, exit 77, without one).
set -u
rg=$1 rc=$2
. "$(dirname "$0")/lib.sh"

need_python

# A CESM-like file: time x depth x nlat x nlon with fill values over land,
# coordinates, a subgroup, a 2-D integer mask with CF names (ids negative,
# zero and positive; one region scattered over the grid).
cat > "$tmp/gen.py" <<'PY'
import sys, numpy as np, netCDF4
ny, nx, nz, nt = 29, 37, 3, 5
rng = np.random.default_rng(11)
mask = np.zeros((ny, nx), np.int32)
mask[:, :12] = 2; mask[:, 12:25] = 6; mask[:6, 25:] = -5; mask[6:, 25:] = 1
mask[14:17, 3:30] = 0
mask[rng.random((ny, nx)) < 0.04] = 10
with netCDF4.Dataset(sys.argv[1], "w", format="NETCDF4") as d:
    d.title = "rasterget test"
    d.createDimension("time", None); d.createDimension("z_t", nz)
    d.createDimension("nlat", ny); d.createDimension("nlon", nx)
    t = d.createVariable("time", "f8", ("time",)); t.units = "days"
    t[:] = np.arange(nt) * 30.0 + 15
    z = d.createVariable("z_t", "f4", ("z_t",)); z.units = "cm"
    z[:] = [500, 1500, 2500]
    lat = d.createVariable("nlat", "f4", ("nlat",)); lat[:] = np.linspace(-80, 80, ny)
    T = d.createVariable("TEMP", "f4", ("time", "z_t", "nlat", "nlon"),
                         fill_value=np.float32(9.96921e36), chunksizes=(1, 1, 10, 10))
    T.units = "degC"; T.long_name = "Potential Temperature"
    data = rng.standard_normal((nt, nz, ny, nx)).astype(np.float32) * 5 + 10
    T[:] = np.ma.masked_where(np.broadcast_to(mask == 0, data.shape), data)
    K = d.createVariable("KMT", "i2", ("nlat", "nlon"))   # no _FillValue
    K.long_name = "k index"; K[:] = rng.integers(1, 60, (ny, nx))
    R = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon"))
    R.flag_values = np.array([-5, 0, 1, 2, 6, 10], np.int32)
    R.flag_meanings = ("Red_Sea Land Southern_Ocean Pacific_Ocean "
                       "Atlantic_Ocean Arctic_Ocean")
    R[:] = mask
    g = d.createGroup("diag")
    h = g.createVariable("HMXL", "f8", ("time", "nlat", "nlon"), fill_value=-1.0)
    h.units = "m"; h[:] = rng.random((nt, ny, nx))
PY
"$PY" "$tmp/gen.py" "$tmp/in.nc" || exit 1
# KMT is 2-D: converted only when named
"$rc" --mask "$tmp/in.nc:REGION_MASK" --vars TEMP,KMT,HMXL --chunk 1,1,8,8 \
    "$tmp/in.nc" "$tmp/r.nc" 2> /dev/null ||
    { echo "FAIL: rasterconvert"; exit 1; }

# check.py OUT IN VAR LAYOUT IDS START COUNT: OUT holds what numpy gives
cat > "$tmp/check.py" <<'PY'
import sys, numpy as np, netCDF4
out, inp, var, layout, ids = sys.argv[1:6]
ids = [int(i) for i in ids.split(",")]
start = [int(s) for s in sys.argv[6].split(",")] if sys.argv[6] else []
count = [int(s) for s in sys.argv[7].split(",")] if sys.argv[7] else []
i, o = netCDF4.Dataset(inp), netCDF4.Dataset(out)
mask = i["REGION_MASK"][:].data
v = i[var]; v.set_auto_maskandscale(False)
w = o[v.name]; w.set_auto_maskandscale(False)
a = v[...]
nouter = a.ndim - 2
if not start: start = [0] * nouter
if not count: count = [a.shape[k] - start[k] for k in range(nouter)]
a = a[tuple(slice(s, s + c) for s, c in zip(start, count))]
sel = np.isin(mask, ids)
assert w.dtype == v.dtype, (w.dtype, v.dtype)
# every attribute of the input variable, _FillValue included
for k in v.ncattrs():
    assert np.array_equal(np.asarray(w.getncattr(k)), np.asarray(v.getncattr(k))), k
assert list(w.raster_regions if np.ndim(w.raster_regions) else [w.raster_regions]) == ids
assert w.raster_layout == layout
outer = list(v.dimensions[:nouter])
assert list(w.dimensions[:nouter]) == outer, w.dimensions
for k, n in enumerate(outer):
    assert len(o.dimensions[n]) == count[k]
    if n in i.variables:  # a coordinate variable, sliced
        assert np.array_equal(o[n][:], i[n][start[k]:start[k] + count[k]]), n
if layout == "packed":
    assert w.dimensions[nouter:] == ("cell",), w.dimensions
    want = a[..., sel]
    ys, xs = np.nonzero(sel)
    assert np.array_equal(o["cell_y"][:], ys) and np.array_equal(o["cell_x"][:], xs)
    assert o["cell_y"].dtype == np.int64
else:
    ys, xs = np.nonzero(sel)
    box = (ys.min(), xs.min(), ys.max() + 1, xs.max() + 1)
    got_box = tuple(int(w.getncattr("raster_bbox_" + n)) for n in ("y0", "x0", "y1", "x1"))
    assert got_box == box, (got_box, box)
    if layout == "full":
        box = (0, 0) + mask.shape
    assert w.dimensions[nouter:] == v.dimensions[nouter:]
    fill = v._FillValue if "_FillValue" in v.ncattrs() else \
        netCDF4.default_fillvals[v.dtype.str[1:]]
    ry, rx = slice(box[0], box[2]), slice(box[1], box[3])
    want = np.where(sel[ry, rx], a[..., ry, rx], np.asarray(fill, v.dtype))
    for k, n in enumerate(v.dimensions[nouter:]):
        assert len(o.dimensions[n]) == box[2 + k] - box[k]
        if n in i.variables:
            assert np.array_equal(o[n][:], i[n][box[k]:box[2 + k]]), n
got = w[...]
assert got.shape == want.shape, (got.shape, want.shape)
assert got.tobytes() == want.tobytes(), "values differ"
PY

# check DESCRIPTION OUT VAR LAYOUT IDS START COUNT
check() {
    if "$PY" "$tmp/check.py" "$2" "$tmp/in.nc" "$3" "$4" "$5" "$6" "$7"; then ok
    else fail "$1: values"; fi
}

# get DESCRIPTION VAR LAYOUT IDS START COUNT RASTERGET-ARGS...: run and check
n=0
get() {
    what=$1 var=$2 layout=$3 ids=$4 start=$5 count=$6
    shift 6
    n=$((n + 1))
    expect 0 "$what" "$rg" "$tmp/r.nc" --layout "$layout" -o "$tmp/g$n.nc" "$@"
    [ -f "$tmp/g$n.nc" ] && check "$what" "$tmp/g$n.nc" "$var" "$layout" \
        "$ids" "$start" "$count"
}

for layout in packed bbox full; do
    get "$layout one id" TEMP $layout 6 "" "" --var TEMP --region 6
    get "$layout by name" TEMP $layout 6 "" "" --var TEMP --region "atlantic ocean"
    get "$layout set, box" TEMP $layout 6,-5,10 1,1 3,2 --var TEMP \
        --region 6 --region Red_Sea --region ARCTIC_OCEAN --start 1,1 --count 3,2
    get "$layout land (id 0)" TEMP $layout 0 4,2 1,1 --var TEMP --region 0 \
        --start 4,2 --count 1,1
    get "$layout 2-D, no fill" KMT $layout 1,2 "" "" --var KMT --region 1 --region 2
    get "$layout subgroup" diag/HMXL $layout 10 2 "" --var /diag/HMXL \
        --region 10 --start 2
    get "$layout tiny buffer" TEMP $layout -5,1 "" "" --var TEMP --region -5 \
        --region 1 --buffer 100
done
# a repeated region counts once
get "duplicate region" TEMP packed 2 "" "" --var TEMP --region 2 --region Pacific_Ocean
# a start alone runs to the end
get "start only" TEMP packed 6 3,1 2,2 --var TEMP --region 6 --start 3,1
# on success: one summary line on stderr (sizes and time vary: SIZE, T)
steady() {
    sed -E 's/[0-9.]+ (B|KiB|MiB|GiB)/SIZE/g; s/, [0-9]+\.[0-9] s$/, T s/' "$1"
}
cells=$("$PY" -c 'import sys, netCDF4
print(len(netCDF4.Dataset(sys.argv[1]).dimensions["cell"]))' "$tmp/g$n.nc")
echo "rasterget: TEMP: $cells cells of 1 region x 4 records, packed -> $tmp/g$n.nc (SIZE), T s" \
    > "$tmp/want"
steady "$tmp/err" > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" && ok ||
    { fail "summary line"; diff "$tmp/want" "$tmp/got"; }
# --quiet: nothing
expect 0 "--quiet" "$rg" "$tmp/r.nc" --var TEMP --region 6 --quiet -o "$tmp/q.nc"
[ -s "$tmp/err" ] && fail "--quiet printed: $(cat "$tmp/err")" || ok
# progress on a non-terminal (a batch log): a line at each tenth crossed,
# here one record (of 15) a step, then the summary
expect 0 "progress lines" env RASTER_PROGRESS_DELAY=0 "$rg" "$tmp/r.nc" \
    --var TEMP --region 6 --buffer 1 -o "$tmp/p.nc"
for pct in 13 20 33 40 53 60 73 80 93 100; do
    echo "rasterget: $pct% done, SIZE of SIZE, T s"
done > "$tmp/want"
echo "rasterget: TEMP: $cells cells of 1 region x 15 records, packed -> $tmp/p.nc (SIZE), T s" \
    >> "$tmp/want"
steady "$tmp/err" > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" && ok ||
    { fail "progress lines"; diff "$tmp/want" "$tmp/got"; }
expect 0 "progress --quiet" env RASTER_PROGRESS_DELAY=0 "$rg" "$tmp/r.nc" \
    --var TEMP --region 6 --buffer 1 --quiet -o "$tmp/p.nc"
[ -s "$tmp/err" ] && fail "progress --quiet printed: $(cat "$tmp/err")" || ok

# ---- bad input: exit 1 and no output -----------------------------------------
expect 1 "plain netCDF file" "$rg" "$tmp/in.nc" --var TEMP --region 6 -o "$tmp/bad.nc"
grep -q 'not a raster file' "$tmp/err" || fail "plain file message"
no_output "$tmp/bad.nc" "plain netCDF file"
expect 1 "missing file" "$rg" "$tmp/none.nc" --var TEMP --region 6 -o "$tmp/bad.nc"
echo "not netcdf" > "$tmp/junk.nc"
expect 1 "not netCDF" "$rg" "$tmp/junk.nc" --var TEMP --region 6 -o "$tmp/bad.nc"
expect 1 "unknown variable" "$rg" "$tmp/r.nc" --var NOPE --region 6 -o "$tmp/bad.nc"
expect 1 "plain variable" "$rg" "$tmp/r.nc" --var REGION_MASK --region 6 -o "$tmp/bad.nc"
expect 1 "unknown region id" "$rg" "$tmp/r.nc" --var TEMP --region 7 -o "$tmp/bad.nc"
grep -q "7" "$tmp/err" || fail "unknown id message"
expect 1 "unknown region name" "$rg" "$tmp/r.nc" --var TEMP --region Indian_Ocean \
    -o "$tmp/bad.nc"
grep -q "Indian_Ocean" "$tmp/err" || fail "unknown name message"
expect 1 "one unknown of two" "$rg" "$tmp/r.nc" --var TEMP --region 6 --region 99 \
    -o "$tmp/bad.nc"
expect 1 "start out of range" "$rg" "$tmp/r.nc" --var TEMP --region 6 --start 5,0 \
    -o "$tmp/bad.nc"
expect 1 "count out of range" "$rg" "$tmp/r.nc" --var TEMP --region 6 --start 1,0 \
    --count 5,1 -o "$tmp/bad.nc"
expect 1 "too few start values" "$rg" "$tmp/r.nc" --var TEMP --region 6 --start 1 \
    -o "$tmp/bad.nc"
expect 1 "too many count values" "$rg" "$tmp/r.nc" --var KMT --region 6 --count 1 \
    -o "$tmp/bad.nc"
no_output "$tmp/bad.nc" "input errors"
expect 1 "output directory missing" "$rg" "$tmp/r.nc" --var TEMP --region 6 \
    -o "$tmp/nodir/out.nc"
mkdir "$tmp/ro"
chmod 555 "$tmp/ro"
if ! touch "$tmp/ro/probe" 2>/dev/null; then  # not root: the mode holds
    expect 1 "output directory not writable" "$rg" "$tmp/r.nc" --var TEMP \
        --region 6 -o "$tmp/ro/out.nc"
    [ -z "$(ls -A "$tmp/ro")" ] && ok || fail "files left in read-only dir"
elif [ -d /proc/self ]; then  # root writes anywhere but in /proc
    expect 1 "output directory not writable (/proc)" "$rg" "$tmp/r.nc" \
        --var TEMP --region 6 -o /proc/out.nc
fi
chmod 755 "$tmp/ro"
expect 1 "output is a directory" "$rg" "$tmp/r.nc" --var TEMP --region 6 -o "$tmp"
# names from a names table (rasterconvert --names): stored with the file
# (a blank as '_'), replacing the mask's own, found with blanks or '_'
printf 'id,name\n6,"North Atlantic Ocean"\n2,Pacific\n' > "$tmp/names.csv"
expect 0 "convert with a names table" "$rc" --mask "$tmp/in.nc:REGION_MASK" \
    --names "$tmp/names.csv" --chunk 1,1,8,8 "$tmp/in.nc" "$tmp/rn.nc"
on_disk "$PY" -c "import netCDF4,sys; m=netCDF4.Dataset(sys.argv[1])['raster_TEMP']['mask']; assert m.flag_meanings=='Pacific North_Atlantic_Ocean', m.flag_meanings; assert list(m.flag_values)==[2, 6], m.flag_values" "$tmp/rn.nc" ||
    fail "names table: stored flag_meanings"
expect 0 "region named by the table" "$rg" "$tmp/rn.nc" --var TEMP \
    --region "north atlantic_OCEAN" -o "$tmp/gn.nc"
check "region named by the table" "$tmp/gn.nc" TEMP packed 6 "" ""
expect 1 "names replaced by the table" "$rg" "$tmp/rn.nc" --var TEMP \
    --region Red_Sea -o "$tmp/bad.nc"
no_output "$tmp/bad.nc" "names replaced by the table"

# -o naming the input (itself, through a symbolic or a hard link) is
# refused and the input left as it was
cp "$tmp/r.nc" "$tmp/self.nc"
ln -s self.nc "$tmp/self_link.nc"
ln "$tmp/self.nc" "$tmp/self_hard.nc"
sum0=$(cksum < "$tmp/self.nc")
for out in self.nc self_link.nc self_hard.nc; do
    expect 1 "-o $out onto the input" "$rg" "$tmp/self.nc" --var TEMP --region 6 \
        -o "$tmp/$out"
    grep -q 'is the input' "$tmp/err" || fail "-o $out: message: $(cat "$tmp/err")"
done
[ "$(cksum < "$tmp/self.nc")" = "$sum0" ] && ok || fail "-o onto the input changed it"
[ -L "$tmp/self_link.nc" ] && ok || fail "-o replaced the symbolic link"
ls -a "$tmp" | grep -q '\.tmp' && fail "temporary file left" || ok
# an incomplete raster file (its writer never closed it) is refused: the
# marker is on TEMP's storage group raster_TEMP (TEMP is its placeholder)
cp "$tmp/r.nc" "$tmp/inc.nc"
on_disk "$PY" -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); g=d.groups['raster_TEMP']; assert g.raster_variable=='TEMP' and g.raster_complete==1 and 'raster_complete' not in d['TEMP'].ncattrs(); g.raster_complete=0; d.close()" "$tmp/inc.nc" ||
    fail "no raster_TEMP group with a completeness marker"
expect 1 "incomplete file" "$rg" "$tmp/inc.nc" --var TEMP --region 6 -o "$tmp/bad.nc"
grep -q 'completeness marker' "$tmp/err" || fail "incomplete file message"
no_output "$tmp/bad.nc" "incomplete file"

# ---- bad usage: exit 2 -------------------------------------------------------
expect 2 "no arguments" "$rg"
expect 2 "no output" "$rg" "$tmp/r.nc" --var TEMP --region 6
expect 2 "no region" "$rg" "$tmp/r.nc" --var TEMP -o "$tmp/bad.nc"
expect 2 "no var" "$rg" "$tmp/r.nc" --region 6 -o "$tmp/bad.nc"
expect 2 "no file" "$rg" --var TEMP --region 6 -o "$tmp/bad.nc"
expect 2 "bad layout" "$rg" "$tmp/r.nc" --var TEMP --region 6 --layout dense -o "$tmp/bad.nc"
expect 2 "zero count" "$rg" "$tmp/r.nc" --var TEMP --region 6 --count 0,1 -o "$tmp/bad.nc"
expect 2 "junk start" "$rg" "$tmp/r.nc" --var TEMP --region 6 --start 1,x -o "$tmp/bad.nc"
expect 2 "negative start" "$rg" "$tmp/r.nc" --var TEMP --region 6 --start -1,0 -o "$tmp/bad.nc"
expect 2 "stray argument" "$rg" "$tmp/r.nc" extra --var TEMP --region 6 -o "$tmp/bad.nc"
expect 2 "unknown option" "$rg" "$tmp/r.nc" --var TEMP --region 6 --frobnicate -o "$tmp/bad.nc"
err_is "unknown option" "rasterget: unknown option '--frobnicate'; try 'rasterget --help'"
expect 2 "unknown short option" "$rg" "$tmp/r.nc" --var TEMP --region 6 -x -o "$tmp/bad.nc"
err_is "unknown short option" "rasterget: unknown option '-x'; try 'rasterget --help'"
expect 2 "-o without a value" "$rg" "$tmp/r.nc" --var TEMP --region 6 -o
err_is "-o without a value" "rasterget: option '-o' needs a value; try 'rasterget --help'"
expect 2 "unknown flag" "$rg" "$tmp/r.nc" --var TEMP --region 6 --frob -o "$tmp/bad.nc"
no_output "$tmp/bad.nc" "usage errors"

expect 0 "help" "$rg" --help
for flag in --var --region --layout --start --count --output --buffer --help --version; do
    grep -q -- "$flag" "$tmp/out" || fail "--help does not mention $flag"
done
expect 0 "version" "$rg" --version

report rasterget
