#!/bin/sh
# Integration test of rasterconvert --upgrade (issue 41, item 5): raster
# files written as the previous release wrote them (rasterconvert's default,
# format 3; --format 4 and 2; deflate + shuffle; quantized; an unlimited
# dimension with weighted statistics and its own chunk shape; nccopy under
# the shim) are upgraded in place to format 5, and then
#   - every storage group says raster_format_version = 5 and no variable
#     carries raster's marker filter (47137);
#   - ncdump and nccopy without raster, and ncdump under the shim, give the
#     values of the file's --restore made before the upgrade;
#   - ncdump -hs of everything but raster's own (storage groups, notes, the
#     marker) is unchanged: dimensions, groups, attributes in order,
#     chunking, compression and fill mode of every variable, history;
#   - each variable's mask (values and names), base chunk shape, type,
#     dimensions and statistics weights are kept (check.py), its values bit
#     for bit those of the restored file read by netCDF4-python;
#   - rasterget of a region (values, and a weighted mean) is the same;
#   - the file keeps its permissions and is sealed (docs/FORMAT.md).
# Files with nothing to upgrade stay byte for byte (exit 0); a missing
# file, a file that is not netCDF, a read-only directory and a write that
# fails half-way (a file size limit) exit 1 and leave the file byte for
# byte, with no temporary file; usage errors exit 2.
# usage: test_upgrade.sh RASTERCONVERT RASTERGET SHIM
#        (env: NCDUMP, NCCOPY, PYTHON; PRELOAD_FIRST in a sanitized build)
# Needs a python3 with numpy and netCDF4 (skips, exit 77, without one).
set -u
rc=$1 rg=$2
. "$(dirname "$0")/lib.sh"
use_shim "$3"
NCDUMP=${NCDUMP:-ncdump} NCCOPY=${NCCOPY:-nccopy}
need_python

# ---- inputs ----------------------------------------------------------------
cat > "$tmp/gen.py" <<'PY'
import sys, numpy as np, netCDF4
out = sys.argv[1]
ny, nx, nz, nt = 23, 31, 3, 4
rng = np.random.default_rng(41)
mask = np.zeros((ny, nx), np.int32)
mask[:, :10] = 2; mask[:, 10:20] = 6; mask[:5, 20:] = -5; mask[5:, 20:] = 1
mask[12:15, 3:25] = 0
mask[rng.random((ny, nx)) < 0.05] = 10
with netCDF4.Dataset(out, "w", format="NETCDF4") as d:
    d.title = "upgrade test"; d.Conventions = "CF-1.8"
    d.history = "made by test_upgrade.sh"
    d.createDimension("time", None); d.createDimension("z_t", nz)
    d.createDimension("nlat", ny); d.createDimension("nlon", nx)
    d.createDimension("strlen", 8)
    t = d.createVariable("time", "f8", ("time",))
    t.units = "days since 0001-01-01"; t[:] = np.arange(nt) * 30.0
    z = d.createVariable("z_t", "f4", ("z_t",)); z.units = "cm"
    z[:] = [500, 1500, 2500]
    A = d.createVariable("TAREA", "f8", ("nlat", "nlon"))
    A.units = "cm^2"; A[:] = 1 + rng.random((ny, nx))
    T = d.createVariable("TEMP", "f4", ("time", "z_t", "nlat", "nlon"),
                         fill_value=np.float32(9.96921e36),
                         chunksizes=(1, 1, 8, 8))
    T.units = "degC"; T.long_name = "Potential Temperature"
    T.valid_range = np.array([-5, 40], np.float32)
    data = rng.standard_normal((nt, nz, ny, nx)).astype(np.float32) * 5 + 10
    T[:] = np.ma.masked_where(np.broadcast_to(mask == 0, data.shape), data)
    S = d.createVariable("SSH", "f8", ("time", "nlat", "nlon"),
                         fill_value=-1e30)
    S.units = "cm"; S.coordinates = "TLAT TLONG"
    S[:] = rng.standard_normal((nt, ny, nx))
    Z = d.createVariable("ztrans", ">f4", ("time", "z_t"), zlib=True,
                         complevel=4, shuffle=True, fletcher32=True,
                         endian="big", chunksizes=(2, 3))
    Z.units = "Sv"; Z[:] = rng.random((nt, nz)).astype(np.float32)
    N = d.createVariable("nofill", "i4", ("z_t",), fill_value=False)
    N[:] = [1, 2, 3]
    R = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon"))
    R.flag_values = np.array([-5, 0, 1, 2, 6, 10], np.int32)
    R.flag_meanings = ("Red_Sea Land Southern_Ocean Pacific_Ocean "
                       "Atlantic_Ocean Arctic_Ocean")
    R[:] = mask
    L = d.createVariable("label", "S1", ("z_t", "strlen"))
    L[:] = netCDF4.stringtochar(np.array(["surface", "middle", "deep"], "S8"))
    g = d.createGroup("diag"); g.note = "subgroup"; g.count = np.int16(3)
    g.createDimension("n", 5)
    v = g.createVariable("counts", "i8", ("n",)); v[:] = np.arange(5)
    h = g.createVariable("HMXL", "f4", ("time", "nlat", "nlon"))
    h.units = "m"; h[:] = rng.random((nt, ny, nx)).astype(np.float32)
    s = g.createVariable("names", str, ("n",))
    s[:] = np.array(["a", "bb", "ccc", "", "e"], dtype=object)
    gg = g.createGroup("deeper"); gg.depth = 2.5
    e = gg.createVariable("EDGE", "f8", ("nlat", "nlon"))
    e[:] = rng.random((ny, nx))
PY
"$PY" "$tmp/gen.py" "$tmp/cesm.nc" || exit 1

# check.py ORIG NEW PLAIN: NEW, the upgrade of raster file ORIG, holds the
# same raster variables, each of format 5 with ORIG's mask (values, names),
# type, dimensions, base chunk shape and statistics weights, and the values
# and storage settings of PLAIN, ORIG's --restore, read without raster.
cat > "$tmp/check.py" <<'PY'
import sys, numpy as np, netCDF4
def storage(g, out):
    for sub in g.groups.values():
        if "raster_format_version" in sub.ncattrs():
            out[(g.path, sub.raster_variable)] = sub
        else:
            storage(sub, out)
    return out
bad = []
with netCDF4.Dataset(sys.argv[1]) as o, netCDF4.Dataset(sys.argv[2]) as n, \
        netCDF4.Dataset(sys.argv[3]) as p:
    so, sn = storage(o, {}), storage(n, {})
    if sorted(so) != sorted(sn):
        bad.append("raster variables %s, upgraded %s" % (sorted(so), sorted(sn)))
    for key in sorted(set(so) & set(sn)):
        a, b = so[key], sn[key]
        path = key[0].rstrip("/") + "/" + key[1]
        if not a.raster_format_version < 5 or b.raster_format_version != 5:
            bad.append("%s: format %d -> %d" % (path, a.raster_format_version,
                                                b.raster_format_version))
        for att in ["raster_type", "raster_dims", "raster_dimids",
                    "raster_chunk"]:
            if not np.array_equal(np.asarray(a.getncattr(att)),
                                  np.asarray(b.getncattr(att))):
                bad.append("%s: %s %r -> %r" % (path, att, a.getncattr(att),
                                               b.getncattr(att)))
        ma, mb = a["mask"], b["mask"]
        if ma.dtype != mb.dtype or not np.array_equal(ma[:], mb[:]):
            bad.append(path + ": mask values differ")
        for att in ["long_name", "flag_values", "flag_meanings"]:
            x = ma.getncattr(att) if att in ma.ncattrs() else None
            y = mb.getncattr(att) if att in mb.ncattrs() else None
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                bad.append("%s: mask:%s %r -> %r" % (path, att, x, y))
        wa = a["stats"].getncattr("weights") if "stats" in a.variables and \
            "weights" in a["stats"].ncattrs() else None
        wb = b["stats"].getncattr("weights") if "stats" in b.variables and \
            "weights" in b["stats"].ncattrs() else None
        if wa != wb:
            bad.append("%s: statistics weights %r -> %r" % (path, wa, wb))
        if "stats" in a.variables and "stats" not in b.variables:
            bad.append(path + ": statistics no longer kept")
        vn, vp = n[path], p[path]
        vn.set_auto_maskandscale(False); vp.set_auto_maskandscale(False)
        for what, f in [("filters", lambda v: v.filters()),
                        ("quantization", lambda v: v.quantization()),
                        ("chunking", lambda v: v.chunking()),
                        ("endian", lambda v: v.endian()),
                        ("type", lambda v: v.dtype),
                        ("dimensions", lambda v: v.dimensions)]:
            if f(vn) != f(vp):
                bad.append("%s: %s %r, restored %r" % (path, what, f(vn), f(vp)))
        x, y = vn[...], vp[...]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            bad.append(path + ": values differ from the restored file's")
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
PY

# strip: ncdump's text without raster's own: the storage groups, the
# placeholders' notes, the marker filter, blank lines, line 1 (the name)
cat > "$tmp/strip.awk" <<'AWK'
NR == 1 { next }
skip == "" && /^[ \t]*group: raster_[A-Za-z0-9_]+ \{$/ { skip = $2; next }
skip != "" { if ($0 ~ ("^[ \t]*} // group " skip "$")) skip = ""; next }
/^[ \t]*[A-Za-z0-9_]+:raster_note = / { next }
/^[ \t]*[A-Za-z0-9_]+:_Filter = "47137,/ { next }
/^[ \t]*$/ { next }
{ print }
AWK
strip() { awk -f "$tmp/strip.awk"; }
# ... and without the global history, which --restore adds a line to
nohistory() { sed '/^\t\t:history = /d'; }

# same A B DESCRIPTION: files A and B have the same text
same() {
    if cmp -s "$1" "$2"; then ok; else
        fail "$3"; diff "$1" "$2" | head -20; fi
}

# upgraded_ok X N: the last run upgraded N variables of X
upgraded_ok() {
    if grep -q "HDF5 cannot change a variable's filters in place" "$tmp/err" &&
            tail -n 1 "$tmp/err" | grep -Eq "^rasterconvert: .*$1.*: upgraded $2 variables? to format 5 through a temporary file, [0-9]+ copied, [0-9.]+ s$"; then
        ok
    else
        fail "$1: closing line"; cat "$tmp/err"
    fi
}

# no_tmp DIR DESCRIPTION: no temporary file left in DIR
no_tmp() {
    if ls -A "$1" | grep -q '\.tmp'; then fail "$2: temporary file left"
    else ok; fi
}

# ---- files as the previous release wrote them ------------------------------
m="$tmp/cesm.nc:REGION_MASK"
mkdir "$tmp/f"
expect 0 "make f3" "$rc" --quiet --mask "$m" "$tmp/cesm.nc" "$tmp/f/f3.nc"
expect 0 "make f4" "$rc" --quiet --format 4 --mask "$m" "$tmp/cesm.nc" \
    "$tmp/f/f4.nc"
expect 0 "make f2" "$rc" --quiet --format 2 --mask "$m" "$tmp/cesm.nc" \
    "$tmp/f/f2.nc"
expect 0 "make fz" "$rc" --quiet --deflate 4 --shuffle --mask "$m" \
    "$tmp/cesm.nc" "$tmp/f/fz.nc"
expect 0 "make fq" "$rc" --quiet --quantize bitround,10 --deflate 1 \
    --mask "$m" "$tmp/cesm.nc" "$tmp/f/fq.nc"
expect 0 "make fw" "$rc" --quiet --weights TAREA --chunk 1,2,10,12 \
    --mask "$m" "$tmp/cesm.nc" "$tmp/f/fw.nc"
# nccopy (nofill, every variable) under the shim, as programs wrote them
if under RASTER_MASK="$m" "$NCCOPY" "$tmp/cesm.nc" "$tmp/f/fs.nc" \
        2> "$tmp/err"; then ok; else fail "make fs"; cat "$tmp/err"; fi

for x in f3 f4 f2 fz fq fw fs; do
    f=$tmp/f/$x.nc
    [ -f "$f" ] || continue
    on_disk "$NCDUMP" -h "$f" > "$tmp/$x.h0" || { fail "$x: ncdump -h"; continue; }
    nvars=$(grep -c ':raster_format_version = ' "$tmp/$x.h0")
    if [ "$nvars" -eq 3 ] &&
            ! grep -q ':raster_format_version = 5 ;' "$tmp/$x.h0"; then ok
    else fail "$x: 3 variables of format < 5 wanted, got:"
        grep ':raster_format_version' "$tmp/$x.h0"; fi
    # the references, taken before the upgrade
    cp -p "$f" "$tmp/$x.orig.nc"
    expect 0 "$x: restore" "$rc" --quiet --restore "$f" "$tmp/$x.plain.nc"
    on_disk "$NCDUMP" "$tmp/$x.plain.nc" | strip | nohistory > "$tmp/$x.want"
    on_disk "$NCDUMP" -hs "$f" | strip > "$tmp/$x.hs0"
    expect 0 "$x: rasterget before" "$rg" "$f" --quiet --var TEMP \
        --region Atlantic_Ocean --region Red_Sea --layout bbox \
        -o "$tmp/$x.get0.nc"
    "$rg" "$f" --var TEMP --region Atlantic_Ocean --stat mean \
        --weights TAREA --json > "$tmp/$x.stat0" 2> "$tmp/err" ||
        fail "$x: rasterget --stat before"
    [ "$x" = fz ] && chmod 640 "$f"

    expect 0 "$x: upgrade" "$rc" --upgrade "$f"
    upgraded_ok "$x.nc" "$nvars"
    no_tmp "$tmp/f" "$x"

    # format 5 everywhere, no marker
    on_disk "$NCDUMP" -hs "$f" > "$tmp/$x.hs" 2> "$tmp/err" ||
        fail "$x: ncdump -hs after"
    if [ "$(grep -c ':raster_format_version = 5 ;' "$tmp/$x.hs")" -eq "$nvars" ] &&
            [ "$(grep -c ':raster_format_version = ' "$tmp/$x.hs")" -eq "$nvars" ]
    then ok; else fail "$x: not every storage group of format 5"
        grep ':raster_format_version' "$tmp/$x.hs"; fi
    if grep -q '47137' "$tmp/$x.hs"; then fail "$x: marker left"
        grep 47137 "$tmp/$x.hs"; else ok; fi
    # everything but raster's own unchanged, storage settings included
    strip < "$tmp/$x.hs" > "$tmp/$x.hs1"
    same "$tmp/$x.hs0" "$tmp/$x.hs1" "$x: ncdump -hs of the rest changed"
    # values without raster (ncdump, nccopy) and under the shim
    on_disk "$NCDUMP" "$f" > "$tmp/$x.cdl" 2> "$tmp/err" ||
        { fail "$x: ncdump without raster failed"; cat "$tmp/err"; }
    strip < "$tmp/$x.cdl" | nohistory > "$tmp/$x.got"
    same "$tmp/$x.want" "$tmp/$x.got" "$x: ncdump without raster"
    if on_disk "$NCCOPY" "$f" "$tmp/$x.copy.nc" 2> "$tmp/err"; then
        on_disk "$NCDUMP" "$tmp/$x.copy.nc" | strip | nohistory > "$tmp/$x.got"
        same "$tmp/$x.want" "$tmp/$x.got" "$x: nccopy without raster"
    else fail "$x: nccopy without raster failed"; cat "$tmp/err"; fi
    under "$NCDUMP" "$f" 2> "$tmp/err" | strip | nohistory > "$tmp/$x.got"
    same "$tmp/$x.want" "$tmp/$x.got" "$x: ncdump under the shim"
    # each variable's mask, chunks, compression, weights; values bit for bit
    if on_disk "$PY" "$tmp/check.py" "$tmp/$x.orig.nc" "$f" \
            "$tmp/$x.plain.nc" > "$tmp/out" 2>&1; then ok
    else fail "$x: check.py"; cat "$tmp/out"; fi
    # raster's reads as before
    expect 0 "$x: rasterget after" "$rg" "$f" --quiet --var TEMP \
        --region Atlantic_Ocean --region Red_Sea --layout bbox \
        -o "$tmp/$x.get1.nc"
    on_disk "$NCDUMP" "$tmp/$x.get0.nc" | tail -n +2 | nohistory > "$tmp/$x.g0"
    on_disk "$NCDUMP" "$tmp/$x.get1.nc" | tail -n +2 | nohistory > "$tmp/$x.g1"
    same "$tmp/$x.g0" "$tmp/$x.g1" "$x: rasterget of two regions"
    "$rg" "$f" --var TEMP --region Atlantic_Ocean --stat mean \
        --weights TAREA --json > "$tmp/$x.stat1" 2> "$tmp/err" ||
        fail "$x: rasterget --stat after"
    same "$tmp/$x.stat0" "$tmp/$x.stat1" "$x: weighted mean"
    # sealed: the file's time is its storage groups' seal
    seal=$(sed -n 's/^.*:raster_seal = \([0-9]*\)LL ;$/\1/p' "$tmp/$x.hs" |
           sort -u)
    if [ "$seal" = "$(stat -c %Y "$f")" ]; then ok
    else fail "$x: seal '$seal', file time $(stat -c %Y "$f")"; fi
done

# the weights and the permissions went along
grep -q 'stats:weights = "TAREA"' "$tmp/fw.hs" && ok ||
    fail "fw: statistics weights lost"
[ "$(stat -c %a "$tmp/f/fz.nc")" = 640 ] && ok ||
    fail "fz: permissions $(stat -c %a "$tmp/f/fz.nc"), wanted 640"

# ---- nothing to upgrade: exit 0, the file byte for byte ---------------------
cp -p "$tmp/cesm.nc" "$tmp/plain.nc"
expect 0 "plain file" "$rc" --upgrade "$tmp/plain.nc"
grep -q 'holds no raster variable: nothing to upgrade' "$tmp/err" && ok ||
    { fail "plain file: message"; cat "$tmp/err"; }
same "$tmp/cesm.nc" "$tmp/plain.nc" "plain file changed"
cp -p "$tmp/f/f3.nc" "$tmp/again.nc"
expect 0 "upgraded file again" "$rc" --upgrade "$tmp/again.nc"
grep -q 'format 5 already: nothing to upgrade' "$tmp/err" && ok ||
    { fail "upgraded file again: message"; cat "$tmp/err"; }
same "$tmp/f/f3.nc" "$tmp/again.nc" "upgraded file changed by a second run"
[ "$(stat -c %Y "$tmp/again.nc")" = "$(stat -c %Y "$tmp/f/f3.nc")" ] && ok ||
    fail "upgraded file: touched by a second run"
expect 0 "make f5" "$rc" --quiet --format 5 --mask "$m" "$tmp/cesm.nc" \
    "$tmp/f5.nc"
cp -p "$tmp/f5.nc" "$tmp/f5.orig.nc"
expect 0 "format 5 file" "$rc" --upgrade "$tmp/f5.nc"
grep -q 'its 3 raster variables are of format 5 already' "$tmp/err" && ok ||
    { fail "format 5 file: message"; cat "$tmp/err"; }
same "$tmp/f5.orig.nc" "$tmp/f5.nc" "format 5 file changed"

# ---- errors: exit 1, the file byte for byte, nothing left -------------------
mkdir "$tmp/e"
expect 1 "missing file" "$rc" --upgrade "$tmp/e/none.nc"
grep -q 'none.nc' "$tmp/err" && ok || fail "missing file: message names it"
echo "not netcdf" > "$tmp/e/junk.nc"
cp "$tmp/e/junk.nc" "$tmp/junk.orig"
expect 1 "not netCDF" "$rc" --upgrade "$tmp/e/junk.nc"
same "$tmp/junk.orig" "$tmp/e/junk.nc" "not netCDF: file changed"
no_tmp "$tmp/e" "not netCDF"
# a read-only directory: no temporary file can be made. root writes
# anywhere: it runs without the capability that lets it (setpriv)
mkdir "$tmp/ro"
cp -p "$tmp/f3.orig.nc" "$tmp/ro/x.nc"
chmod 555 "$tmp/ro"
asuser=
if touch "$tmp/ro/probe" 2>/dev/null; then
    rm -f "$tmp/ro/probe"
    if command -v setpriv > /dev/null &&
            ! setpriv --bounding-set=-dac_override,-dac_read_search \
              touch "$tmp/ro/probe" 2>/dev/null; then
        asuser="setpriv --bounding-set=-dac_override,-dac_read_search"
    else
        echo "SKIP: read-only directory (root, no setpriv)"
        asuser=none
    fi
fi
if [ "$asuser" != none ]; then
    expect 1 "read-only directory" $asuser "$rc" --upgrade "$tmp/ro/x.nc"
    grep -q 'cannot create a file beside' "$tmp/err" &&
        grep -q 'x.nc left as it was' "$tmp/err" && ok ||
        { fail "read-only directory: message"; cat "$tmp/err"; }
    same "$tmp/f3.orig.nc" "$tmp/ro/x.nc" "read-only directory: file changed"
    [ "$(ls -A "$tmp/ro")" = x.nc ] && ok ||
        fail "read-only directory: left $(ls -A "$tmp/ro")"
fi
chmod 755 "$tmp/ro"
# a write that fails half-way: the temporary file may not grow past 32 KiB
# (EFBIG, SIGXFSZ ignored). HDF5 1.10 may then crash closing the file or
# at exit (test_diskfull.sh; --restore and conversions alike): any
# failing status, after the message
cp -p "$tmp/f3.orig.nc" "$tmp/e/big.nc"
sh -c 'trap "" XFSZ; ulimit -f 64 && exec "$0" --upgrade "$1"' "$rc" \
    "$tmp/e/big.nc" > "$tmp/out" 2> "$tmp/err"
st=$?
[ "$st" -ne 0 ] && [ "$st" -ne 2 ] && ok ||
    fail "write fails half-way: exit $st"
grep -q 'big.nc left as it was' "$tmp/err" && ok ||
    { fail "write fails half-way: message"; cat "$tmp/err"; }
same "$tmp/f3.orig.nc" "$tmp/e/big.nc" "write fails half-way: file changed"
no_tmp "$tmp/e" "write fails half-way"
# a symbolic link stays one; the file it names is upgraded
cp -p "$tmp/f4.orig.nc" "$tmp/e/target.nc"
ln -s target.nc "$tmp/e/link.nc"
expect 0 "through a link" "$rc" --upgrade "$tmp/e/link.nc"
[ -L "$tmp/e/link.nc" ] && ok || fail "through a link: the link replaced"
on_disk "$NCDUMP" -h "$tmp/e/target.nc" | grep -q 'raster_format_version = 5' &&
    ok || fail "through a link: target not upgraded"

# ---- usage: exit 2 -----------------------------------------------------------
expect 2 "upgrade two files" "$rc" --upgrade "$tmp/f/f3.nc" "$tmp/x.nc"
expect 2 "upgrade no file" "$rc" --upgrade
expect 2 "upgrade with --format" "$rc" --upgrade --format 5 "$tmp/f/f3.nc"
expect 2 "upgrade with --restore" "$rc" --upgrade --restore "$tmp/f/f3.nc"
"$rc" --help | grep -q -- '--upgrade' && ok || fail "--help names --upgrade"

report test_upgrade
