#!/bin/sh
# Unmodified netCDF-C programs under libraster_preload.so: the example
# writers store chosen variables region by region, and ncdump, nccopy and
# Python's netCDF4 read them back exactly as the plain files; files raster
# does not manage, and variables it cannot take, behave as without it.
# usage: test_shim.sh SHIM BUILD_DIR MASK_DIR
#        (env: NCDUMP, NCGEN, NCCOPY, PRELOAD_FIRST for sanitized builds)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2 masks=$3
ex="$build/examples"
basins="$masks/pop_basins_384x320.nc"
admin="$masks/admin_300x425.nc"
# in the sanitized build, with the sanitizer runtime first (lib.sh)
use_shim "$shim"

# dump FILE [under]: ncdump without its first line (the file name)
dump() { "$NCDUMP" "$1" | tail -n +2; }
dump_under() { under "$NCDUMP" "$1" | tail -n +2; }
# same A B DESC: files A and B have equal contents
same() { if cmp -s "$1" "$2"; then ok; else fail "$3"; diff "$1" "$2" | head -5; fi; }
# groups FILE: names of the file's top-level groups, without the shim
groups() { "$NCDUMP" -h "$1" | sed -n 's/^group: \(.*\) {/\1/p' | tr '\n' ' '; }

# ---- zero-code mode: RASTER_MASK -------------------------------------------
"$ex/cesm_writer" "$basins" "$tmp/plain.nc" 2 3 || exit 1
dump "$tmp/plain.nc" > "$tmp/plain.txt"
RASTER_MASK="$basins:REGION_MASK" expect 0 "cesm writer under the shim" \
    under "$ex/cesm_writer" "$basins" "$tmp/raster.nc" 2 3
[ "$(groups "$tmp/raster.nc")" = "raster_TEMP raster_SALT " ] && ok ||
    fail "TEMP and SALT not stored by region: $(groups "$tmp/raster.nc")"
dump_under "$tmp/raster.nc" > "$tmp/raster.txt"
same "$tmp/plain.txt" "$tmp/raster.txt" "ncdump under the shim differs from the plain file"
"$NCDUMP" -s -h "$tmp/plain.nc" | tail -n +2 > "$tmp/h1"
under "$NCDUMP" -s -h "$tmp/raster.nc" | tail -n +2 > "$tmp/h2"
same "$tmp/h1" "$tmp/h2" "ncdump -s -h (chunking, storage) differs"
expect 0 "nccopy of a raster file under the shim" \
    under "$NCCOPY" "$tmp/raster.nc" "$tmp/copy.nc"
dump "$tmp/copy.nc" > "$tmp/copy.txt"
same "$tmp/plain.txt" "$tmp/copy.txt" "nccopy output differs from the plain file"
[ -z "$(groups "$tmp/copy.nc")" ] && ok || fail "nccopy copied raster groups"
# the region-read API reads what the writer wrote
expect 0 "region reader" "$ex/region_reader" "$tmp/raster.nc" TEMP Atlantic_Ocean
grep -q "TEMP region 6: 12107 cells x 6 records" "$tmp/out" && ok ||
    fail "region reader: $(cat "$tmp/out")"

# under the shim the reader shares the shim's open-file state
expect 0 "region reader under the shim" under "$ex/region_reader" "$tmp/raster.nc" TEMP Atlantic_Ocean
grep -q "TEMP region 6: 12107 cells x 6 records.*(state shared with the shim)" "$tmp/out" && ok ||
    fail "region reader under the shim: $(cat "$tmp/out")"

# a point's series (a few chunks: open, the variable's rank and dimensions,
# one read, close; or the read alone) by an unmodified reader: format 5's
# through netCDF, with nothing of raster loaded (raster_view_var_plain,
# raster_view_reads_through), format 3's through raster; and by ncks, which
# asks more of the variable first
RASTER_FORMAT=5 RASTER_MASK="$basins:REGION_MASK" expect 0 \
    "cesm writer under the shim, format 5" \
    under "$ex/cesm_writer" "$basins" "$tmp/raster5.nc" 2 3
"$build/tests/point_prog" "$tmp/plain.nc" TEMP 200 100 > "$tmp/point.txt"
for f in raster raster5; do
    under "$build/tests/point_prog" "$tmp/$f.nc" TEMP 200 100 \
        > "$tmp/point_$f.txt"
    same "$tmp/point.txt" "$tmp/point_$f.txt" "a point's series of $f.nc"
    # the read as the first call about the variable
    under "$build/tests/point_prog" "$tmp/$f.nc" TEMP 200 100 2 3 \
        > "$tmp/point_$f.txt"
    same "$tmp/point.txt" "$tmp/point_$f.txt" "a blind point's series of $f.nc"
done
if command -v ncks > /dev/null 2>&1; then
    ncks -H -C -v TEMP -d nlat,200 -d nlon,100 "$tmp/plain.nc" |
        tail -n +2 > "$tmp/point.txt"
    for f in raster raster5; do
        under ncks -H -C -v TEMP -d nlat,200 -d nlon,100 "$tmp/$f.nc" |
            tail -n +2 > "$tmp/point_$f.txt"
        same "$tmp/point.txt" "$tmp/point_$f.txt" "ncks: a point's series of $f.nc"
    done
else
    echo "SKIP: ncks (Debian nco) not available: no point series by ncks"
fi

# RASTER_VARS narrows the choice
RASTER_MASK="$basins:REGION_MASK" RASTER_VARS=SALT expect 0 "RASTER_VARS" \
    under "$ex/cesm_writer" "$basins" "$tmp/vars.nc" 2 3
[ "$(groups "$tmp/vars.nc")" = "raster_SALT " ] && ok || fail "RASTER_VARS=SALT: $(groups "$tmp/vars.nc")"
dump_under "$tmp/vars.nc" > "$tmp/vars.txt"
same "$tmp/plain.txt" "$tmp/vars.txt" "RASTER_VARS file differs"

# RASTER_CHUNK sets the tile
RASTER_MASK="$basins:REGION_MASK" RASTER_CHUNK=32,40 expect 0 "RASTER_CHUNK" \
    under "$ex/cesm_writer" "$basins" "$tmp/chunk.nc" 1 2
"$NCDUMP" -h "$tmp/chunk.nc" | grep -q 'raster_chunk = 1ULL, 1ULL, 32ULL, 40ULL' && ok ||
    fail "RASTER_CHUNK=32,40 not used"

# ---- the chunk-spec route (paper's way, made safe) -------------------------
expect 1 "spec writer without the shim fails loudly" \
    "$ex/cesm_writer_spec" "$basins" "$tmp/nospec.nc" 1 2
grep -q "Bad chunk sizes" "$tmp/err" && ok || fail "no NC_EBADCHUNK message"
expect 0 "spec writer under the shim" \
    under "$ex/cesm_writer_spec" "$basins" "$tmp/spec.nc" 2 3
[ "$(groups "$tmp/spec.nc")" = "raster_TEMP " ] && ok || fail "spec: $(groups "$tmp/spec.nc")"
dump_under "$tmp/spec.nc" > "$tmp/spec.txt"
same "$tmp/plain.txt" "$tmp/spec.txt" "spec-written file differs"

# ---- WRF-like writer on the many-region mask --------------------------------
"$ex/wrf_writer" "$admin" "$tmp/wrf_plain.nc" 3 || exit 1
RASTER_MASK="$admin:REGION_MASK" expect 0 "wrf writer under the shim" \
    under "$ex/wrf_writer" "$admin" "$tmp/wrf.nc" 3
# XLAT and XLONG have the grid's shape too, but are coordinates: plain
[ "$(groups "$tmp/wrf.nc")" = "raster_T2 " ] && ok ||
    fail "wrf: $(groups "$tmp/wrf.nc")"
dump "$tmp/wrf_plain.nc" > "$tmp/w1"; dump_under "$tmp/wrf.nc" > "$tmp/w2"
same "$tmp/w1" "$tmp/w2" "WRF-like file differs"

# ---- only data variables: the rule is asked once attributes are written ----
# ncgen defines every variable, then writes the attributes: XLAT (no units)
# is a coordinate only by T2's coordinates attribute, written after XLAT was
# defined; REGION_MASK(Time, ...) is named like the mask; HGT is 2-D.
cat > "$tmp/smask.cdl" <<'CDL'
netcdf smask {
dimensions:
    south_north = 4 ; west_east = 5 ;
variables:
    int REGION_MASK(south_north, west_east) ;
data:
 REGION_MASK = 1, 1, 1, 2, 2, 1, 1, 2, 2, 2, 3, 3, 3, 2, 2, 3, 3, 3, 3, 0 ;
}
CDL
cat > "$tmp/sw.cdl" <<'CDL'
netcdf sw {
dimensions:
    Time = UNLIMITED ; south_north = 4 ; west_east = 5 ;
variables:
    float XLAT(Time, south_north, west_east) ;
    float XLONG(Time, south_north, west_east) ;
        XLONG:units = "degree_east" ;
    int REGION_MASK(Time, south_north, west_east) ;
    float HGT(south_north, west_east) ;
    float T2(Time, south_north, west_east) ;
        T2:units = "K" ;
        T2:coordinates = "XLONG XLAT" ;
data:
 XLAT = 40, 40, 40, 40, 40, 41, 41, 41, 41, 41, 42, 42, 42, 42, 42,
     43, 43, 43, 43, 43 ;
 XLONG = -5, -4, -3, -2, -1, -5, -4, -3, -2, -1, -5, -4, -3, -2, -1,
     -5, -4, -3, -2, -1 ;
 REGION_MASK = 1, 1, 1, 2, 2, 1, 1, 2, 2, 2, 3, 3, 3, 2, 2, 3, 3, 3, 3, 0 ;
 HGT = 0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150,
     160, 170, 180, 190 ;
 T2 = 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293,
     294, 295, 296, 297, 298, 299 ;
}
CDL
"$NCGEN" -4 -o "$tmp/smask.nc" "$tmp/smask.cdl" || exit 1
"$NCGEN" -4 -o "$tmp/sw_plain.nc" "$tmp/sw.cdl" || exit 1
RASTER_LOG=info RASTER_MASK="$tmp/smask.nc:REGION_MASK" expect 0 \
    "ncgen under the shim" under "$NCGEN" -4 -o "$tmp/sw.nc" "$tmp/sw.cdl"
[ "$(groups "$tmp/sw.nc")" = "raster_T2 " ] && ok ||
    fail "ncgen: only T2 by region, got $(groups "$tmp/sw.nc")"
for line in "XLAT stays plain netCDF: named in a coordinates" \
            "XLONG stays plain netCDF: latitude/longitude" \
            "REGION_MASK stays plain netCDF: the mask variable" \
            "HGT stays plain netCDF: grid only"; do
    grep -q "raster: $line" "$tmp/err" && ok || fail "ncgen: no '$line'"
done
dump "$tmp/sw_plain.nc" > "$tmp/s1"; dump_under "$tmp/sw.nc" > "$tmp/s2"
same "$tmp/s1" "$tmp/s2" "ncgen under the shim: file differs"
# the plain ones hold their values for readers without the shim
"$NCDUMP" -v XLAT,XLONG,REGION_MASK,HGT "$tmp/sw_plain.nc" |
    sed -n '/^data:/,/^}/p' | grep -v '^}\|^$' > "$tmp/s1"
"$NCDUMP" -v XLAT,XLONG,REGION_MASK,HGT "$tmp/sw.nc" |
    sed -n '/^data:/,/^group:/p' | grep -v '^group:\|^$' > "$tmp/s2"
same "$tmp/s1" "$tmp/s2" "ncgen under the shim: coordinates not plain"
# RASTER_VARS names variables explicitly: taken whatever the rule says
RASTER_VARS=T2,XLAT RASTER_MASK="$tmp/smask.nc:REGION_MASK" expect 0 \
    "ncgen under the shim, RASTER_VARS" under "$NCGEN" -4 -o "$tmp/sw2.nc" "$tmp/sw.cdl"
case "$(groups "$tmp/sw2.nc")" in
    "raster_T2 raster_XLAT "|"raster_XLAT raster_T2 ") ok ;;
    *) fail "RASTER_VARS=T2,XLAT: $(groups "$tmp/sw2.nc")" ;;
esac

# ---- ordinary files and fallbacks --------------------------------------------
# plain files behave byte for byte as without the shim
dump_under "$tmp/plain.nc" > "$tmp/plain_under.txt"
same "$tmp/plain.txt" "$tmp/plain_under.txt" "plain file reads differently under the shim"
# without a mask nothing changes: nccopy writes the same bytes
"$NCCOPY" "$tmp/plain.nc" "$tmp/plain_copy_ref.nc"
expect 0 "nccopy of a plain file" under "$NCCOPY" "$tmp/plain.nc" "$tmp/plain_copy.nc"
cmp -s "$tmp/plain_copy.nc" "$tmp/plain_copy_ref.nc" && ok ||
    fail "nccopy under the shim wrote other bytes"
# with a mask, the copy's matching variables are stored by region and read
# back the same
RASTER_MASK="$basins:REGION_MASK" expect 0 "nccopy of a plain file under a mask" \
    under "$NCCOPY" "$tmp/plain.nc" "$tmp/masked_copy.nc"
[ "$(groups "$tmp/masked_copy.nc")" = "raster_TEMP raster_SALT " ] && ok ||
    fail "nccopy under a mask: $(groups "$tmp/masked_copy.nc")"
dump_under "$tmp/masked_copy.nc" > "$tmp/pc"
same "$tmp/plain.txt" "$tmp/pc" "nccopy under a mask changed the data"
# a classic-format file keeps its format, silently at the default level (a
# model writes many files raster rightly leaves alone), said once at info
RASTER_MASK="$basins:REGION_MASK" expect 0 "classic-format copy" \
    under "$NCCOPY" -k classic "$tmp/plain.nc" "$tmp/classic.nc"
[ -s "$tmp/err" ] && fail "classic-format copy printed: $(cat "$tmp/err")" || ok
"$NCDUMP" -k "$tmp/classic.nc" | grep -qx classic && ok || fail "classic file changed kind"
RASTER_LOG=info RASTER_MASK="$basins:REGION_MASK" expect 0 "classic-format copy, info" \
    under "$NCCOPY" -k classic "$tmp/plain.nc" "$tmp/classic.nc"
[ "$(grep -c 'not a netCDF-4 file' "$tmp/err")" = 1 ] && ok ||
    fail "classic-format note not once at info: $(cat "$tmp/err")"
# a bad mask: everything stays plain, one warning, data kept
RASTER_MASK="$tmp/none.nc:REGION_MASK" expect 0 "missing mask file" \
    under "$ex/cesm_writer" "$basins" "$tmp/nomask.nc" 2 3
[ "$(grep -c 'raster:' "$tmp/err")" = 1 ] && ok || fail "missing mask: not one warning: $(cat "$tmp/err")"
[ -z "$(groups "$tmp/nomask.nc")" ] && ok || fail "missing mask: groups made"
dump "$tmp/nomask.nc" > "$tmp/nomask.txt"
same "$tmp/plain.txt" "$tmp/nomask.txt" "missing mask: data differs"
# a mask of another grid: variables stay plain without a word (none match)
RASTER_MASK="$admin:REGION_MASK" expect 0 "mask of another grid" \
    under "$ex/cesm_writer" "$basins" "$tmp/othergrid.nc" 1 2
[ -z "$(groups "$tmp/othergrid.nc")" ] && ok || fail "other grid: groups made"
# a program that never loads netCDF runs unharmed
expect 0 "shell under the shim" under /bin/sh -c 'echo ok'
# an incomplete raster file is refused under the shim, with a message
cp "$tmp/raster.nc" "$tmp/inc.nc"
"$NCDUMP" -h "$tmp/inc.nc" > /dev/null
if command -v /usr/bin/python3 > /dev/null && /usr/bin/python3 -c 'import netCDF4' 2>/dev/null; then
    /usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); d.groups['raster_TEMP'].raster_complete=0; d.close()" "$tmp/inc.nc"
    expect 1 "incomplete raster file refused" under "$NCDUMP" "$tmp/inc.nc"
    grep -q "completeness" "$tmp/err" && ok || fail "incomplete: message: $(cat "$tmp/err")"
    # Python's netCDF4 reads through the shim
    under /usr/bin/python3 - "$tmp/plain.nc" "$tmp/raster.nc" <<'PY' && ok || fail "python netCDF4 through the shim"
import sys
import numpy as np
from netCDF4 import Dataset
a, b = Dataset(sys.argv[1]), Dataset(sys.argv[2])
assert list(b.groups) == [], list(b.groups)
for name in ("TEMP", "SALT"):
    assert np.array_equal(a[name][:].data, b[name][:].data), name
    assert np.array_equal(a[name][1, ::2, 7:200:5, 3].data, b[name][1, ::2, 7:200:5, 3].data)
    assert b[name].ncattrs() == a[name].ncattrs()
PY
    # many small writes (half rows, as an I/O layer cuts them) under the
    # shim: element by element as without it (issue 25)
    cat > "$tmp/small.py" <<'PY'
import sys
import numpy as np
from netCDF4 import Dataset
src = Dataset(sys.argv[1])
mask = src["REGION_MASK"][:].data
ny, nx = mask.shape
d = Dataset(sys.argv[2], "w")
d.createDimension("time", None)
d.createDimension("z_t", 2)
d.createDimension("nlat", ny)
d.createDimension("nlon", nx)
v = d.createVariable("TEMP", "f4", ("time", "z_t", "nlat", "nlon"),
                     chunksizes=(1, 1, 50, 50), fill_value=np.float32(-1e30))
for t in (0, 2):  # record 1 left as fill
    for z in range(2):
        for y in range(ny):
            for x in range(0, nx, 160):
                w = min(160, nx - x)
                v[t, z, y, x:x + w] = (t * 1000 + z * 100 + y * 0.01 +
                                       np.arange(x, x + w) * 1e-4)
v[1, 1, 10, 7:300:3] = np.arange(98, dtype="f4")  # strided
d.close()
PY
    /usr/bin/python3 "$tmp/small.py" "$basins" "$tmp/small_plain.nc" &&
        RASTER_MASK="$basins:REGION_MASK" under /usr/bin/python3 \
            "$tmp/small.py" "$basins" "$tmp/small_raster.nc" && ok ||
        fail "small writes under the shim"
    [ "$(groups "$tmp/small_raster.nc")" = "raster_TEMP " ] && ok ||
        fail "small writes: not stored by region: $(groups "$tmp/small_raster.nc")"
    under /usr/bin/python3 - "$tmp/small_plain.nc" "$tmp/small_raster.nc" <<'PY' && ok || fail "small writes read back"
import sys
import numpy as np
from netCDF4 import Dataset
a, b = Dataset(sys.argv[1])["TEMP"], Dataset(sys.argv[2])["TEMP"]
a.set_auto_maskandscale(False)
b.set_auto_maskandscale(False)
x, y = a[:], b[:]
assert x.shape == y.shape == (3, 2) + x.shape[2:], (x.shape, y.shape)
bad = np.argwhere(x != y)
assert len(bad) == 0, (len(bad), bad[:5])
PY
fi

# ---- read-only opens: netCDF never sees the storage (views) ----------------
# dimensions defined before and after a variable's storage, in the root and
# a subgroup: a view numbers them as the plain file and a whole open do,
# also once another variable's record outgrew the placeholder; without the
# extent its last close recorded (a parallel writer's file) the storage is
# looked at, and a placeholder shorter than the stores is opened whole
if command -v /usr/bin/python3 > /dev/null && /usr/bin/python3 -c 'import netCDF4' 2>/dev/null; then
    probe="$(dirname "$0")/view_probe.py"
    /usr/bin/python3 "$probe" w "$tmp/view_plain.nc" "$basins" &&
        RASTER_MASK="$basins:REGION_MASK" RASTER_VARS=T under /usr/bin/python3 \
            "$probe" w "$tmp/view.nc" "$basins" || fail "view probe files"
    /usr/bin/python3 "$probe" r "$tmp/view_plain.nc" > "$tmp/vp.txt" || fail "view probe, plain"
    RASTER_LOG=debug under /usr/bin/python3 "$probe" r "$tmp/view.nc" > "$tmp/vv.txt" 2> "$tmp/vv.err" ||
        fail "view probe under the shim"
    RASTER_NO_LEAN=1 under /usr/bin/python3 "$probe" r "$tmp/view.nc" > "$tmp/vw.txt" ||
        fail "view probe, whole open"
    same "$tmp/vp.txt" "$tmp/vv.txt" "a view shows other dimensions or values than the plain file"
    (cd "$tmp" && under /usr/bin/python3 "$probe" r view.nc chdir) > "$tmp/vc.txt" ||
        fail "view probe, relative path and chdir"
    same "$tmp/vp.txt" "$tmp/vc.txt" "a view opened by a relative path reads otherwise after a chdir"
    same "$tmp/vp.txt" "$tmp/vw.txt" "a whole open shows other dimensions or values than the plain file"
    grep -q "opened whole" "$tmp/vv.err" && fail "the view was not taken: $(cat "$tmp/vv.err")" || ok
    grep -q "bnds id 3 " "$tmp/vv.txt" && grep -q "/sub dim s id 4 " "$tmp/vv.txt" && ok ||
        fail "view dimension ids: $(head -5 "$tmp/vv.txt")"
    # storage renamed without raster (no raster_* name to hide): found by
    # its attributes, as ever
    cp "$tmp/view.nc" "$tmp/view_ren.nc"
    /usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); d.renameGroup('raster_T','store_of_T'); d.close()" "$tmp/view_ren.nc"
    under /usr/bin/python3 "$probe" r "$tmp/view_ren.nc" > "$tmp/vr.txt" 2> /dev/null
    same "$tmp/vp.txt" "$tmp/vr.txt" "a file whose storage was renamed reads otherwise than the plain file"
    # a region's group renamed away (its store gone): a view does not look
    # for it when it loads; a read that needs the store is refused, every
    # other read serves the plain file's values
    cp "$tmp/view.nc" "$tmp/view_dmg.nc"
    /usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); g=d['raster_T']; g.renameGroup(sorted(n for n in g.groups if n.startswith('region_'))[1],'gone'); d.close()" "$tmp/view_dmg.nc"
    cat > "$tmp/dmg.py" <<'PY'
import sys
import netCDF4
import numpy as np
p, r = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
try:
    r["T"][:]
    sys.exit("the whole variable was served")
except (RuntimeError, OSError):
    pass
served = refused = 0
_, ny, nx = r["T"].shape
for y in range(0, ny, max(1, ny // 12)):
    for x in range(0, nx, max(1, nx // 12)):
        try:
            got = r["T"][:, y, x]
        except (RuntimeError, OSError):
            refused += 1
            continue
        if not np.array_equal(got, p["T"][:, y, x]):
            sys.exit(f"cell ({y}, {x}): other values than the plain file's")
        served += 1
print(served, refused)
sys.exit(0 if served and refused else "no cell served or none refused")
PY
    under /usr/bin/python3 "$tmp/dmg.py" "$tmp/view_plain.nc" "$tmp/view_dmg.nc" > "$tmp/dmg.txt" 2> "$tmp/dmg.err" && ok ||
        fail "a view of a file without a region's group: $(cat "$tmp/dmg.txt" "$tmp/dmg.err" | tail -3)"
    # a point's series, each through a fresh view (its first read loads the
    # variable from the storage group the open recorded), equals the plain
    # file's element by element; the storage group renamed by another
    # program between the open and the first read: the read is refused
    # (the file changed), and with the file's times put back the read
    # either fails or serves the plain file's values, never others
    cp "$tmp/view.nc" "$tmp/view_pt.nc"
    cat > "$tmp/pt.py" <<'PY'
import os
import subprocess
import sys
import netCDF4
import numpy as np
plain, path = netCDF4.Dataset(sys.argv[1]), sys.argv[2]
want = plain["T"]
_, ny, nx = want.shape
for y, x in [(0, 0), (ny // 2, nx // 2), (ny - 1, nx - 1), (ny // 3, 2 * nx // 3)]:
    with netCDF4.Dataset(path) as r:
        got = r["T"][:, y, x]
    if not np.array_equal(got, want[:, y, x]):
        sys.exit(f"point ({y}, {x}): other values than the plain file's")
env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
env["HDF5_USE_FILE_LOCKING"] = "FALSE"  # the reader holds the file open
def rename(old, new, keep_times):
    st = os.stat(path)
    subprocess.run([sys.executable, "-c", "import netCDF4,sys; "
                    "d=netCDF4.Dataset(sys.argv[1],'a'); "
                    "d.renameGroup(sys.argv[2],sys.argv[3]); d.close()",
                    path, old, new], env=env, check=True)
    if keep_times:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
y, x = ny // 2, nx // 2
r = netCDF4.Dataset(path)
rename("raster_T", "moved_T", False)
try:
    r["T"][:, y, x]
    sys.exit("a read served a file changed since its open")
except (RuntimeError, OSError):
    pass
r.close()
rename("moved_T", "raster_T", False)
r = netCDF4.Dataset(path)
rename("raster_T", "moved_T", True)
try:
    got = r["T"][:, y, x]
    if not np.array_equal(got, want[:, y, x]):
        sys.exit("a storage group renamed after the open: other values")
    print("served")
except (RuntimeError, OSError):
    print("refused")
PY
    RASTER_LOG=debug under /usr/bin/python3 "$tmp/pt.py" "$tmp/view_plain.nc" "$tmp/view_pt.nc" > "$tmp/pt.txt" 2> "$tmp/pt.err" && ok ||
        fail "point series through views: $(cat "$tmp/pt.txt" "$tmp/pt.err" | tail -3)"
    grep -q "opened whole" "$tmp/pt.err" && fail "point series: a view not taken: $(grep "opened whole" "$tmp/pt.err" | head -2)" || ok
    /usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); d['time_bnds'][2]=[2,3]; d.close()" "$tmp/view.nc"
    RASTER_LOG=debug under /usr/bin/python3 "$probe" r "$tmp/view.nc" > "$tmp/vv.txt" 2> "$tmp/vv.err"
    RASTER_NO_LEAN=1 under /usr/bin/python3 "$probe" r "$tmp/view.nc" > "$tmp/vw.txt" 2> /dev/null
    same "$tmp/vw.txt" "$tmp/vv.txt" "a grown file reads otherwise than when opened whole"
    grep -q "opened whole" "$tmp/vv.err" && fail "a grown file not taken as a view: $(cat "$tmp/vv.err")" || ok
    /usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); d['raster_T'].delncattr('raster_extent'); d.close()" "$tmp/view.nc"
    RASTER_LOG=debug under /usr/bin/python3 "$probe" r "$tmp/view.nc" > "$tmp/vv.txt" 2> "$tmp/vv.err"
    same "$tmp/vw.txt" "$tmp/vv.txt" "a file without its extent reads otherwise than when opened whole"
    grep -q "opened whole: .*placeholder is not the variable's shape" "$tmp/vv.err" && ok ||
        fail "a placeholder shorter than its variable taken as a view: $(cat "$tmp/vv.err")"
fi

report shim
