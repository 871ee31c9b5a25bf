#!/bin/sh
# Integration test of rasterstat's pictures and predictions: --plot writes a
# valid PNG of the reported size with the regions' colours, hatching and
# chunk outlines where they belong (row 0 at the bottom); --bw predictions
# are DRR x seq/rand; --measure-bw measures positive figures on a small
# scratch file and leaves nothing behind; bad --bw, unwritable --plot.
# usage: test_plot.sh RASTERSTAT TESTS_DIR RASTERCONVERT   (env: NCGEN)
set -u
rs=$1 src=$2 rc=$3
. "$(dirname "$0")/lib.sh"
need_python

"$NCGEN" -4 -o "$tmp/t1.nc" "$src/../datasets/table1_band.cdl" || exit 1
# Rows 0-1: region 1 left, 2 right; row 2: land left, 2 right; row 3 land.
# Tiles 2 x 3: pure 1, pure 2, pure 0 and one mixed tile (2 and 0).
cat > "$tmp/flip.cdl" <<'CDL'
netcdf flip {
dimensions:
    y = 4 ; x = 6 ; t = 2 ;
variables:
    int mask(y, x) ;
        mask:flag_values = 0, 1, 2 ;
        mask:flag_meanings = "Land West East" ;
    float a(t, y, x) ;
    float b(t, y, x) ;
data:
 mask = 1, 1, 1, 2, 2, 2,
        1, 1, 1, 2, 2, 2,
        0, 0, 0, 2, 2, 2,
        0, 0, 0, 0, 0, 0 ;
 a = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
     20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,
     38, 39, 40, 41, 42, 43, 44, 45, 46, 47 ;
 b = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
     20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,
     38, 39, 40, 41, 42, 43, 44, 45, 46, 47 ;
}
CDL
"$NCGEN" -4 -o "$tmp/flip.nc" "$tmp/flip.cdl" || exit 1

# png.py FILE.png JSON CHECKS: decodes the PNG with zlib alone (chunk CRCs,
# IHDR, filters), checks its size against the JSON's "plot", then runs
# CHECKS (python) with px(x, y) = the RGB of map pixel (x, y), the map's
# top-left pixel being (0, 0).
cat > "$tmp/png.py" <<'PY'
import json, struct, sys, zlib
png, js, checks = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(js))
if isinstance(d, list):
    d = d[0]
b = open(png, "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
pos, chunks = 8, []
while pos < len(b):
    n, kind = struct.unpack(">I4s", b[pos:pos + 8])
    body = b[pos + 8:pos + 8 + n]
    crc, = struct.unpack(">I", b[pos + 8 + n:pos + 12 + n])
    assert zlib.crc32(kind + body) & 0xffffffff == crc, "CRC of %r" % kind
    chunks.append((kind, body))
    pos += 12 + n
assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", "chunk order"
w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
assert (depth, ctype, inter) == (8, 2, 0), "8-bit RGB, not interlaced"
p = d["plot"]
assert (w, h) == (p["width"], p["height"]), ((w, h), p)
raw = zlib.decompress(b"".join(c for k, c in chunks if k == b"IDAT"))
stride = 3 * w
assert len(raw) == h * (stride + 1), "IDAT size"
rows, prev = [], bytearray(stride)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - 3] if i >= 3 else 0
        c = prev[i - 3] if i >= 3 else 0
        up = prev[i]
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + up) & 255
        elif f == 3: line[i] = (line[i] + (a + up) // 2) & 255
        elif f == 4:
            pa, pb, pc = abs(up - c), abs(a - c), abs(a + up - 2 * c)
            pr = a if pa <= pb and pa <= pc else (up if pb <= pc else c)
            line[i] = (line[i] + pr) & 255
        else: assert f == 0, "filter %d" % f
    rows.append(bytes(line))
    prev = line
m = p["map_px"]
def px(x, y):
    assert 0 <= x < m["w"] and 0 <= y < m["h"], (x, y)
    r = rows[m["y"] + y]
    i = 3 * (m["x"] + x)
    return tuple(r[i:i + 3])
def raw_px(x, y):
    return tuple(rows[y][3 * x:3 * x + 3])
LAND, INK = (0xc4, 0xc4, 0xc4), (0x1a, 0x1a, 0x1a)
FIRST, SECOND = (0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)  # palette[0], [1]
exec(checks)
PY
png() { # png FILE.png JSON CHECKS DESCRIPTION
    if "$PY" "$tmp/png.py" "$1" "$2" "$3"; then ok; else fail "$4"; fi
}

# --- --plot -------------------------------------------------------------

# The paper's Table 1 band (4 x 80, tiles 4 x 4): 8 px per cell, Ocean
# (the only region besides land) in the palette's first colour, Land grey,
# a chunk boundary at column 28 (pixel 224) from top to bottom.
expect 0 "table1 plot" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 \
    --plot "$tmp/t1.png" --json
cp "$tmp/out" "$tmp/t1.json"
png "$tmp/t1.png" "$tmp/t1.json" '
assert (m["w"], m["h"]) == (640, 32) and p["px_per_cell"] == 8, m
assert p["row0"] == "bottom" and p["outlines"] is True
assert px(74 * 8 + 4, 12) == FIRST, px(74 * 8 + 4, 12)    # Ocean, pure chunk
assert px(40 * 8 + 4, 12) == LAND, px(40 * 8 + 4, 12)     # Land, pure chunk
assert all(px(224, y) == INK for y in range(32)), "outline at column 28"
assert all(px(x, 12) != INK for x in range(226, 255)), "no line inside a chunk"
# the mixed tile 28-31 is hatched: some pixels darker than the cell colour
hatch = [px(x, y) for x in range(225, 256) for y in range(32)]
assert any(c not in (LAND, FIRST, INK) for c in hatch), "hatching"
assert all(c in (LAND, FIRST) for c in
           [px(x, y) for x in range(260, 400) for y in range(32)]), "pure: plain"
# the frame around the map
assert all(raw_px(m["x"] - 1, m["y"] + y) == INK for y in range(32))
' "table1 picture"
no_output "$tmp/.t1.png.tmp" "table1 temporaries"

# Row 0 at the bottom: bottom-left is West (1), top-left land, right East (2).
# Colours go by decreasing size: East (9 cells) first, West (6) second.
expect 0 "flip plot" "$rs" --mask "$tmp/flip.nc:mask" --chunk 2,3 \
    --plot "$tmp/flip.png" --json
cp "$tmp/out" "$tmp/flip.json"
png "$tmp/flip.png" "$tmp/flip.json" '
assert (m["w"], m["h"]) == (48, 32), m
assert px(1, 30) == SECOND, px(1, 30)   # grid row 0, column 0: West
assert px(1, 1) == LAND, px(1, 1)       # grid row 3, column 0: land
assert px(46, 30) == FIRST, px(46, 30)  # grid row 0, column 5: East
assert px(24, 5) == INK and px(24, 28) == INK   # boundary at column 3
assert px(5, 15) == INK                 # boundary at row 2 (from the bottom)
assert px(5, 16) == SECOND and px(5, 14) == LAND
# hatching only in the mixed tile (rows 2-3, columns 3-5): (x + y) % 6 == 0
assert px(41, 1) != LAND and px(41, 1) != INK and sum(px(41, 1)) < sum(LAND)
assert px(5, 1) == LAND                 # same diagonal phase, pure tile
' "flip picture"

# A raster file: one picture per variable, or the one asked for.
"$rc" --mask "$tmp/flip.nc:mask" --chunk 1,2,3 "$tmp/flip.nc" \
    "$tmp/flip_r.nc" > /dev/null || fail "rasterconvert for the raster form"
expect 0 "raster file plot" "$rs" "$tmp/flip_r.nc" --plot "$tmp/r.png"
for v in a b; do
    [ -s "$tmp/r_$v.png" ] || fail "no picture r_$v.png"
done
grep -q "plot    $tmp/r_a.png: " "$tmp/out" || fail "raster form plot line"
expect 0 "raster file plot --var" "$rs" "$tmp/flip_r.nc" --var b \
    --plot "$tmp/rb.png" --json
cp "$tmp/out" "$tmp/rb.json"
png "$tmp/rb.png" "$tmp/rb.json" '
assert px(1, 30) == SECOND and px(1, 1) == LAND
' "raster form picture"

# Large grids are reduced (one pixel per k x k cells); many regions are
# labelled. Skipped when the masks are not there.
masks=$src/../datasets/masks
if [ -f "$masks/pop_basins_2400x3600.nc" ]; then
    expect 0 "2400x3600 plot" "$rs" --mask \
        "$masks/pop_basins_2400x3600.nc:REGION_MASK" --chunk 50,50 \
        --plot "$tmp/big.png" --json
    cp "$tmp/out" "$tmp/big.json"
    png "$tmp/big.png" "$tmp/big.json" '
assert p["cells_per_px"] == 3 and (m["w"], m["h"]) == (1200, 800), p
assert p["outlines"] is True and p["labels"] >= 5, p
' "2400x3600 picture"
fi

# Errors: an unwritable place (exit 1, nothing left), no file name (exit 2).
expect 1 "plot into a missing directory" "$rs" --mask "$tmp/t1.nc:mask" \
    --chunk 4,4 --plot "$tmp/nodir/x.png"
grep -q 'x.png' "$tmp/err" || fail "missing directory message"
mkdir "$tmp/isdir.png"
expect 1 "plot onto a directory" "$rs" --mask "$tmp/t1.nc:mask" \
    --chunk 4,4 --plot "$tmp/isdir.png"
expect 1 "plot into /proc" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 \
    --plot /proc/raster-test.png
expect 2 "empty plot name" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 --plot ""
expect 2 "plot without a name" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 --plot

# --- --bw: Eq. 2 with given figures ---------------------------------------

expect 0 "given bandwidths" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 \
    --bw 120,30 --json
if "$PY" - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["seq_bw_mbs"] == 120 and d["rand_bw_mbs"] == 30, d
assert d["bandwidth"]["source"] == "given"
for r in d["regions"]:
    want = r["bbox_tile_cells"] / r["read_cells"] * 120 / 30
    assert abs(r["predicted_speedup"] - want) < 5e-7, (r, want)
    assert abs(r["predicted_speedup"] - r["data_reduction_rate"] * 4) < 5e-6
ocean = [r for r in d["regions"] if r["id"] == 2][0]
assert abs(ocean["predicted_speedup"] - 320 / 240 * 4) < 5e-7
PY
then ok; else fail "--bw predictions"; fi
expect 0 "given bandwidths, table" "$rs" --mask "$tmp/t1.nc:mask" \
    --chunk 4,4 --bw 100.5,20.1
grep -q 'seq/rand 5.000' "$tmp/out" || fail "--bw ratio line"
grep -q ' pred_x$' "$tmp/out" || fail "--bw pred_x column"
# Ocean: DRR 320/240 x 5 = 6.667
grep -Eq '^ +2 Ocean .* 1\.333 +6\.667$' "$tmp/out" || fail "--bw table value"

for bad in abc 100 100,0 0,5 -1,5 1,-2 1,2,3 inf,1 1,nan , 1, ,1 "1,2x"; do
    expect 2 "bad --bw '$bad'" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 \
        --bw "$bad"
done
expect 2 "--bw with --measure-bw" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 \
    --bw 1,2 --measure-bw

# --- --measure-bw ----------------------------------------------------------

mkdir "$tmp/bw"
RASTER_BW_MB=8 RASTER_BW_DIR=$tmp/bw expect 0 "measured bandwidths" \
    "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 --measure-bw --json
if "$PY" - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, r = d["seq_bw_mbs"], d["rand_bw_mbs"]
assert s > 0 and r > 0, d
b = d["bandwidth"]
assert b["source"] == "measured" and b["file_bytes"] == 8 << 20, b
assert b["rand_read_bytes"] == 4096 and b["rand_reads"] >= 16, b  # 4x4x4 B -> 4 KiB
assert 0 <= b["cached_after_eviction"] <= 1
for x in d["regions"]:
    want = x["bbox_tile_cells"] / x["read_cells"] * s / r
    assert x["predicted_speedup"] > 0
    assert abs(x["predicted_speedup"] - want) <= 1e-4 * want, (x, want)
PY
then ok; else fail "--measure-bw figures"; fi
[ -z "$(ls -A "$tmp/bw")" ] || fail "--measure-bw left a scratch file"
RASTER_BW_MB=8 RASTER_BW_DIR=$tmp/bw expect 0 "measured bandwidths, table" \
    "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 --measure-bw
grep -Eq '^bw +sequential [0-9.]+ MB/s .* random [0-9.]+ MB/s' "$tmp/out" ||
    fail "--measure-bw table line"
grep -q '^note ' "$tmp/out" || fail "--measure-bw note"
# the tile's bytes set the random read size: 50 x 50 x 4 B -> 12 KiB
if [ -f "$masks/pop_basins_384x320.nc" ]; then
    RASTER_BW_MB=8 RASTER_BW_DIR=$tmp/bw expect 0 "random read = one tile" \
        "$rs" --mask "$masks/pop_basins_384x320.nc:REGION_MASK" \
        --chunk 50,50 --measure-bw --json
    grep -q '"rand_read_bytes":12288' "$tmp/out" || fail "random read size"
fi
RASTER_BW_MB=0 expect 1 "bad RASTER_BW_MB" "$rs" --mask "$tmp/t1.nc:mask" \
    --chunk 4,4 --measure-bw
RASTER_BW_DIR=$tmp/nodir expect 1 "missing RASTER_BW_DIR" "$rs" --mask \
    "$tmp/t1.nc:mask" --chunk 4,4 --measure-bw

# --help documents the new flags and the picture's orientation.
expect 0 "help" "$rs" --help
for word in --plot --measure-bw --bw RASTER_BW_MB RASTER_BW_DIR BOTTOM; do
    grep -q -- "$word" "$tmp/out" || fail "--help does not mention $word"
done

# A mask without names: short legend entries, the key wider than they are.
# The legend was clipped at the image's edge ("mixed chunk (hatch", issue
# 26): the right margin must hold no ink, on any row.
# (a wide map: the legend, not the title, sets the image's width)
"$PY" - "$tmp/nonames.nc" <<'PY' || exit 1
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "w") as d:
    d.createDimension("y", 20); d.createDimension("x", 400)
    m = np.ones((20, 400), np.int32); m[:, 150:] = 2; m[5:9, 100:300] = 3
    d.createVariable("mask", "i4", ("y", "x"))[:] = m
PY
expect 0 "plot, no names" "$rs" --mask "$tmp/nonames.nc:mask" --chunk 10,10 \
    --plot "$tmp/nonames.png" --json
cp "$tmp/out" "$tmp/nonames.json"
png "$tmp/nonames.png" "$tmp/nonames.json" '
ink = [(x, y) for y in range(h) for x in range(w - 12, w) if raw_px(x, y) != (255, 255, 255)]
assert not ink, ("ink in the right margin", ink[:5])
' "legend not clipped without names"

report plot
