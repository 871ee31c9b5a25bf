#!/bin/sh
# Issue #27, "wrong data with exit 0": damage that keeps every table of a
# raster file self-consistent, which reads of a read-only file used to
# serve as data (only the full check noticed). Each case damages a fresh
# copy with python3-netCDF4 and checks that the tools refuse it: exit 1
# with a message, never exit 0 with permuted values.
#   T1 two mask cells of different regions swapped inside a mixed tile
#      (every count unchanged): --restore, the shim (ncdump) and rasterstat
#      refuse it; rasterget's full layout places values by their runs
#      (checked against their checksums) and gives the values written
#   T2 the offsets of two equal-length runs of one region swapped: rasterget
#   T3 groups region_1 and region_2 swapped by name; T4 their region_id
#      attributes swapped too: rasterget, --restore, rasterstat
#   T5 a checksum itself changed: refused, not ignored
#   T6 a file without checksums (written before them): read as before,
#      values identical
# Undamaged files must read back identically (T0).
# (A file replaced under an open handle: test_storage_errors.c,
# test_file_replaced_under_reader.)
# usage: test_integrity.sh RASTERGET RASTERCONVERT RASTERSTAT SHIM
#        (env: NCDUMP, PYTHON)
set -u
rg=$1 rc=$2 rs=$3 shim=$4
. "$(dirname "$0")/lib.sh"

need_python
NCDUMP=${NCDUMP:-ncdump}

# Regions 1 (left half) and 2 (right half) mirror each other, cell for cell,
# so that their groups can be swapped without a shape telling; region 3's
# cells make tiles (4 x 5) of both halves mixed.
cat > "$tmp/gen.py" <<'PY'
import sys, numpy as np, netCDF4
ny, nx, nz, nt = 16, 20, 2, 3
mask = np.ones((ny, nx), np.int32)
mask[:, 10:] = 2
for y, x in [(5, 2), (6, 3), (9, 7), (13, 1)]:
    mask[y, x] = 3
    mask[y, x + 10] = 3
rng = np.random.default_rng(5)
with netCDF4.Dataset(sys.argv[1], "w", format="NETCDF4") as d:
    d.createDimension("time", None); d.createDimension("z", nz)
    d.createDimension("y", ny); d.createDimension("x", nx)
    T = d.createVariable("TEMP", "f4", ("time", "z", "y", "x"))
    T[:] = rng.standard_normal((nt, nz, ny, nx)).astype(np.float32)
    R = d.createVariable("REGION_MASK", "i4", ("y", "x"))
    R[:] = mask
PY

# damage.py CASE FILE
cat > "$tmp/damage.py" <<'PY'
import sys, numpy as np, netCDF4
case, path = sys.argv[1:3]
d = netCDF4.Dataset(path, "a")
g = d["raster_TEMP"]
summary = np.asarray(g.getncattr("raster_regions")).reshape(-1, 8)
def rows(rid, first_col):
    row = summary[summary[:, 0] == rid][0]
    return int(row[first_col]), int(row[first_col + 1])
if case == "mask-swap":
    m = g["mask"]; m.set_auto_mask(False)
    a = m[:]
    th, tw = 4, 5
    done = False
    for ty in range(a.shape[0] // th):
        for tx in range(a.shape[1] // tw):
            t = a[ty*th:(ty+1)*th, tx*tw:(tx+1)*tw]
            if len(np.unique(t)) > 1 and not done:
                ys, xs = np.nonzero(t == 3)
                y1, x1 = ys[0], xs[0]
                y2, x2 = [(y, x) for y in range(th) for x in range(tw)
                          if t[y, x] != 3][0]
                Y1, X1 = ty*th + y1, tx*tw + x1
                Y2, X2 = ty*th + y2, tx*tw + x2
                a[Y1, X1], a[Y2, X2] = a[Y2, X2], a[Y1, X1]
                done = True
    m[:] = a
elif case == "runs-swap":
    first, count = rows(1, 6)
    r = g["runs"]; r.set_auto_mask(False)
    t = r[first:first + count, :]
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)
             if t[i, 2] == t[j, 2] and t[i, 3] != t[j, 3]]
    i, j = pairs[0]
    t[i, 3], t[j, 3] = t[j, 3], t[i, 3]
    r[first:first + count, :] = t
elif case in ("groups-swap", "groups-swap-ids"):
    g.renameGroup("region_1", "region_tmp")
    g.renameGroup("region_2", "region_1")
    g.renameGroup("region_tmp", "region_2")
    if case == "groups-swap-ids":
        g["region_1"].region_id = np.int32(1)
        g["region_2"].region_id = np.int32(2)
elif case == "sum-changed":
    r = g["runs"]
    s = np.asarray(r.getncattr("raster_crc32c")).astype(np.uint32)
    s[0] ^= 1
    r.setncattr("raster_crc32c", s)
elif case == "no-sums":
    g.delncattr("raster_regions_crc32c")
d.close()
PY

# same.py PLAIN.nc COPY.nc: TEMP equal element by element
cat > "$tmp/same.py" <<'PY'
import sys, numpy as np, netCDF4
a = netCDF4.Dataset(sys.argv[1])["TEMP"][:]
b = netCDF4.Dataset(sys.argv[2])["TEMP"][:]
sys.exit(0 if a.shape == b.shape and np.array_equal(a, b) else 1)
PY

# region.py PLAIN.nc GOT.nc ID: rasterget's packed output equals numpy's
cat > "$tmp/region.py" <<'PY'
import sys, numpy as np, netCDF4
p = netCDF4.Dataset(sys.argv[1]); rid = int(sys.argv[3])
want = p["TEMP"][:][..., p["REGION_MASK"][:] == rid]
got = netCDF4.Dataset(sys.argv[2])["TEMP"][:]
sys.exit(0 if np.array_equal(np.asarray(want), np.asarray(got)) else 1)
PY

# full.py PLAIN.nc GOT.nc ID: rasterget's full layout holds the region's
# values where numpy's mask puts them, fill elsewhere
cat > "$tmp/full.py" <<'PY'
import sys, numpy as np, netCDF4
p = netCDF4.Dataset(sys.argv[1]); rid = int(sys.argv[3])
sel = np.asarray(p["REGION_MASK"][:]) == rid
want = np.asarray(p["TEMP"][:])
got = netCDF4.Dataset(sys.argv[2])["TEMP"][:]
ok = np.array_equal(np.asarray(got)[..., sel], want[..., sel]) and \
    np.ma.count(got[..., ~sel]) == 0
sys.exit(0 if ok else 1)
PY

"$PY" "$tmp/gen.py" "$tmp/in.nc" || exit 1
"$rc" --mask "$tmp/in.nc:REGION_MASK" --vars TEMP --chunk 1,1,4,5 \
    "$tmp/in.nc" "$tmp/r.nc" 2> /dev/null || { echo "FAIL: rasterconvert"; exit 1; }

# shim_dump FILE OUT: the shim's view of TEMP's values
shim_dump() {
    LD_PRELOAD="${PRELOAD_FIRST:+$PRELOAD_FIRST }$shim" "$NCDUMP" -v TEMP "$1" \
        > "$2" 2> "$tmp/shim.err"
}
"$NCDUMP" -v TEMP "$tmp/in.nc" | sed -n '/^data:/,$p' > "$tmp/plain.cdl"

# check_reads NAME FILE: every read of FILE gives exactly in.nc's values
check_reads() {
    rm -f "$tmp/back.nc" "$tmp/g.nc"
    expect 0 "$1: --restore" "$rc" --restore "$2" "$tmp/back.nc"
    [ -s "$tmp/back.nc" ] && { "$PY" "$tmp/same.py" "$tmp/in.nc" "$tmp/back.nc" &&
        ok || fail "$1: --restore gave other values"; }
    for id in 1 2 3; do
        rm -f "$tmp/g.nc"
        expect 0 "$1: rasterget region $id" "$rg" "$2" --var TEMP \
            --region $id -o "$tmp/g.nc"
        [ -s "$tmp/g.nc" ] && { "$PY" "$tmp/region.py" "$tmp/in.nc" "$tmp/g.nc" $id &&
            ok || fail "$1: rasterget region $id gave other values"; }
    done
    if [ "$shim" != none ]; then
        if shim_dump "$2" "$tmp/shim.cdl" &&
           sed -n '/^data:/,$p' "$tmp/shim.cdl" | cmp -s - "$tmp/plain.cdl"; then
            ok
        else
            fail "$1: ncdump under the shim differs"; cat "$tmp/shim.err"
        fi
    fi
}

# damaged CASE: a fresh damaged copy, $tmp/d.nc
damaged() {
    cp "$tmp/r.nc" "$tmp/d.nc"
    on_disk "$PY" "$tmp/damage.py" "$1" "$tmp/d.nc" || { fail "damage $1"; return 1; }
}

# refused LABEL WHAT CMD...: CMD exits 1 with a message naming a checksum,
# a region or the mask
refused() {
    label=$1 what=$2
    shift 2
    expect 1 "$label: $what" "$@"
}

# T0: undamaged
check_reads T0 "$tmp/r.nc"

# T1: two mask cells swapped inside a mixed tile
if damaged mask-swap; then
    rm -f "$tmp/back.nc"
    refused T1 "--restore" "$rc" --restore "$tmp/d.nc" "$tmp/back.nc"
    no_output "$tmp/back.nc" "T1: --restore"
    grep -q "checksum" "$tmp/err" || fail "T1: message: $(cat "$tmp/err")"
    # a region read places values by their runs, checked against their
    # checksums (the mask is not read): the values where they were written
    rm -f "$tmp/g1.nc"
    expect 0 "T1: rasterget --layout full" "$rg" "$tmp/d.nc" --var TEMP \
        --region 3 --layout full -o "$tmp/g1.nc"
    [ -s "$tmp/g1.nc" ] && { "$PY" "$tmp/full.py" "$tmp/in.nc" "$tmp/g1.nc" 3 &&
        ok || fail "T1: rasterget --layout full gave other values"; }
    if [ "$shim" != none ]; then
        if shim_dump "$tmp/d.nc" "$tmp/shim.cdl"; then
            fail "T1: ncdump under the shim served the damaged file"
        else
            ok
        fi
    fi
    refused T1 "rasterstat" "$rs" "$tmp/d.nc"
fi

# T2: offsets of two equal-length runs of region 1 swapped
if damaged runs-swap; then
    refused T2 "rasterget" "$rg" "$tmp/d.nc" --var TEMP --region 1 \
        -o "$tmp/g2.nc"
    grep -q "checksum" "$tmp/err" || fail "T2: message: $(cat "$tmp/err")"
    refused T2 "rasterstat" "$rs" "$tmp/d.nc"
fi

# T3, T4: region groups swapped by name (and their region_id too)
for c in groups-swap groups-swap-ids; do
    label=T3; [ $c = groups-swap-ids ] && label=T4
    damaged $c || continue
    refused $label "rasterget" "$rg" "$tmp/d.nc" --var TEMP --region 1 \
        -o "$tmp/g3.nc"
    grep -q "holds the data of another region" "$tmp/err" ||
        fail "$label: message: $(cat "$tmp/err")"
    rm -f "$tmp/back.nc"
    refused $label "--restore" "$rc" --restore "$tmp/d.nc" "$tmp/back.nc"
    refused $label "rasterstat" "$rs" "$tmp/d.nc"
done

# T5: a checksum changed
if damaged sum-changed; then
    refused T5 "rasterget" "$rg" "$tmp/d.nc" --var TEMP --region 1 \
        -o "$tmp/g5.nc"
    refused T5 "rasterstat" "$rs" "$tmp/d.nc"
fi

# T6: without checksums, as written before them: read as before
if damaged no-sums; then
    check_reads T6 "$tmp/d.nc"
    expect 0 "T6: rasterstat" "$rs" "$tmp/d.nc"
fi

report integrity
