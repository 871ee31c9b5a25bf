#!/bin/sh
# Integration test of rasterstat: the mask form on the paper's worked example
# through the JSON output, input errors (exit 1) and usage errors (exit 2);
# the raster file form's filters and stored bytes of a variable's stores.
# usage: test_rasterstat.sh RASTERSTAT TESTS_DIR   (env: NCGEN, PYTHON)
set -u
rs=$1 src=$2
. "$(dirname "$0")/lib.sh"

"$NCGEN" -4 -o "$tmp/t1.nc" "$src/../datasets/table1_band.cdl" || exit 1
cat > "$tmp/masks.cdl" <<'CDL'
netcdf masks {
dimensions:
    y = 3 ; x = 4 ; z = 2 ;
variables:
    float fmask(y, x) ;
    double frac(y, x) ;
    int cube(z, y, x) ;
    char text(y, x) ;
    short smask(y, x) ;
        smask:flag_values = -5s, 0s, 6s ;
        smask:flag_meanings = "Red_Sea Land Atlantic_Ocean" ;
data:
 fmask = 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3 ;
 frac = 1, 1.5, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3 ;
 cube = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 ;
 text = "abcd", "efgh", "ijkl" ;
 smask = 6, 6, 0, -5, 6, 6, 0, -5, 0, 0, 0, 0 ;
}
CDL
"$NCGEN" -4 -o "$tmp/masks.nc" "$tmp/masks.cdl" || exit 1

# The paper's Table 1: 7 chunks, Ocean -> 1,2,4,5,6,7 and Land -> 2,3,4,6
# (0-based here), and the per-region statistics.
expect 0 "table1 json" "$rs" --mask "$tmp/t1.nc:mask" --chunk 4,4 --chunks --json
cp "$tmp/out" "$tmp/t1.json"
if "$PYTHON" - "$tmp/t1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["grid"] == [4, 80] and d["tile"] == [4, 4], d
want = [(0, 0, 4, 28, False, [2]), (0, 28, 4, 4, True, [0, 2]),
        (0, 32, 4, 20, False, [0]), (0, 52, 4, 4, True, [0, 2]),
        (0, 56, 4, 8, False, [2]), (0, 64, 4, 4, True, [0, 2]),
        (0, 68, 4, 12, False, [2])]
got = [(c["y"], c["x"], c["h"], c["w"], c["mixed"], c["regions"]) for c in d["chunks"]]
assert got == want, got
assert [c["id"] for c in d["chunks"]] == list(range(7))
r = {x["id"]: x for x in d["regions"]}
assert sorted(r) == [0, 2]
land, ocean = r[0], r[2]
assert ocean["name"] == "Ocean" and land["name"] == "Land"
# Ocean: 3 pure (28+8+12 cols) + 3 mixed; reads 4*(28+8+12+3*4) = 240 cells
assert (ocean["pure_chunks"], ocean["mixed_chunks"], ocean["read_cells"]) == (3, 3, 240)
assert ocean["bbox_tile_cells"] == 320 and ocean["cells"] == 220
assert abs(ocean["data_reduction_rate"] - 320 / 240) < 1e-6
# Land: 1 pure (20 cols) + 3 mixed = 32 columns, 128 cells; bbox cols 30..66
assert (land["pure_chunks"], land["mixed_chunks"], land["read_cells"]) == (1, 3, 128)
assert land["bbox"] == [0, 30, 4, 67] and land["bbox_tile_cells"] == 4 * 40
assert abs(land["data_reduction_rate"] - 160 / 128) < 1e-6
PY
then ok; else fail "table1 values"; fi

# Regions by id and by name; the chunk list narrowed to them.
expect 0 "region by name" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2,2 \
    --region "atlantic ocean" --region -5 --json --chunks
if "$PYTHON" - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["id"] for r in d["regions"]] == [-5, 6], d["regions"]
assert d["regions"][0]["name"] == "Red_Sea"
assert d["regions"][1]["cells"] == 4 and d["regions"][1]["pure_chunks"] == 1
assert all(set(c["regions"]) & {-5, 6} for c in d["chunks"])
PY
then ok; else fail "region filter values"; fi

# A float mask with integral values, a full chunk shape (last two used),
# and the table output.
expect 0 "float mask" "$rs" --mask "$tmp/masks.nc:fmask" --chunk 1,1,2,2
grep -q 'grid 3 x 4, 3 regions' "$tmp/out" || fail "float mask table"
grep -q 'tiles   2 x 2: 4 tiles, 0 mixed' "$tmp/out" || fail "float mask tiles"

# A mask without names, _FillValue cells among its ids (they are id 0,
# never a region of their own), and the names from a table: --region by
# name (with a space, any case, '_' for ' ') and by abbreviation.
cat > "$tmp/prov.cdl" <<'CDL'
netcdf prov {
dimensions:
    y = 3 ; x = 4 ;
variables:
    int prov(y, x) ;
        prov:_FillValue = -2147483647 ;
    double rm(y, x) ;
        rm:_FillValue = NaN ;
data:
 prov = 17, 17, 42, 42, 17, 17, 42, _, _, _, 5, 5 ;
 rm = 17, 17, 42, 42, 17, 17, 42, NaN, NaN, NaN, 5, 5 ;
}
CDL
"$NCGEN" -4 -o "$tmp/prov.nc" "$tmp/prov.cdl" || exit 1
cat > "$tmp/names.csv" <<'CSV'
id,name,abbrev
# a names table: comments, blanks and quotes allowed
17,Hubei,HB

42,"Inner Mongolia",NM
5,Hunan,   HN
CSV
for var in prov rm; do
    expect 0 "names table ($var)" "$rs" --mask "$tmp/prov.nc:$var" \
        --names "$tmp/names.csv" --chunk 1,2 --json --region Hubei \
        --region "inner_MONGOLIA" --region hn
    if "$PYTHON" - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["id"]: x for x in d["regions"]}
assert sorted(r) == [5, 17, 42], d["regions"]
assert r[17]["name"] == "Hubei" and r[17]["cells"] == 4
assert r[42]["name"] == "Inner Mongolia" and r[42]["cells"] == 3
assert r[5]["name"] == "Hunan" and r[5]["cells"] == 2
PY
    then ok; else fail "names table values ($var)"; fi
    # all regions: the 3 no-data cells are region 0, unnamed
    expect 0 "no-data cells ($var)" "$rs" --mask "$tmp/prov.nc:$var" \
        --chunk 1,2 --json
    if "$PYTHON" - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["id"]: x for x in d["regions"]}
assert sorted(r) == [0, 5, 17, 42], sorted(r)
assert r[0]["cells"] == 3 and "name" not in r[0], r[0]
PY
    then ok; else fail "no-data cells values ($var)"; fi
done
# without the table the mask has no names
expect 1 "no names without --names" "$rs" --mask "$tmp/prov.nc:prov" \
    --chunk 1,2 --region Hubei
grep -q "no region named 'Hubei'" "$tmp/err" || fail "unnamed mask message"
printf '17,Hubei\n42,Hunan\n17,Hebei\n' > "$tmp/dup.csv"
expect 1 "names table with a duplicate id" "$rs" --mask "$tmp/prov.nc:prov" \
    --names "$tmp/dup.csv" --chunk 1,2
grep -q 'region id 17 is given twice (lines 1 and 3)' "$tmp/err" ||
    fail "duplicate id message"
printf '17,Hubei\n42,HUBEI\n' > "$tmp/dupname.csv"
expect 1 "names table with a duplicate name" "$rs" \
    --mask "$tmp/prov.nc:prov" --names "$tmp/dupname.csv" --chunk 1,2
grep -q "share the name 'hubei'" "$tmp/err" || fail "duplicate name message"
expect 1 "missing names table" "$rs" --mask "$tmp/prov.nc:prov" \
    --names "$tmp/none.csv" --chunk 1,2
grep -q 'none.csv' "$tmp/err" || fail "missing names table message"
expect 2 "--names without --mask" "$rs" --names "$tmp/names.csv" "$tmp/t1.nc"

# The second form: each raster variable's filters and its stores' bytes on
# disk against raw (cells x records x value bytes). A rastergen file
# (2 records x 2 levels on the 384 x 320 POP grid, float) converted plain,
# then its deflated copy (nccopy -d 4 -s) converted keeping its filters:
# skipped (SKIP line) while raster refuses compressed stores, which
# rasterconvert says with a warning.
tools=$(dirname "$rs")
"$tools/rastergen" --kind cesm --ntime 2 --ndepth 2 \
    --mask "$src/../datasets/masks/pop_basins_384x320.nc:REGION_MASK" \
    "$tmp/g.nc" > /dev/null || fail "rastergen"
"$tools/rasterconvert" --mask "$tmp/g.nc:REGION_MASK" "$tmp/g.nc" \
    "$tmp/g.rast.nc" 2> /dev/null || fail "rasterconvert plain"
expect 0 "raster file, plain stores" "$rs" "$tmp/g.rast.nc"
raw=$((2 * 2 * 384 * 320 * 4))
grep -q "^stores  filters: none; [0-9]* bytes on disk of $raw raw (ratio 1\.[0-9]*)$" \
    "$tmp/out" && ok || fail "plain stores line: $(grep stores "$tmp/out")"
expect 0 "raster file, plain stores, json" "$rs" "$tmp/g.rast.nc" --json
if "$PYTHON" - "$tmp/out" "$raw" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 1 and d[0]["var"] == "TEMP", d
v = d[0]
assert v["compression"] == {"deflate_level": 0, "shuffle": False,
    "fletcher32": False, "quantize_mode": 0, "quantize_nsd": 0,
    "filters": []}, v["compression"]
# every cell of the grid (land is region 0) once, in 4-byte floats; stored
# plain, the allocated chunks hold at least that
assert v["raw_bytes"] == int(sys.argv[2]), v["raw_bytes"]
assert v["raw_bytes"] <= v["stored_bytes"] <= 1.1 * v["raw_bytes"], v
assert abs(v["stored_ratio"] - v["stored_bytes"] / v["raw_bytes"]) < 1e-6
PY
then ok; else fail "plain stores json"; fi
NCCOPY=${NCCOPY:-nccopy}
"$NCCOPY" -d 4 -s "$tmp/g.nc" "$tmp/gz.nc" || fail "nccopy -d 4 -s"
"$tools/rasterconvert" --mask "$tmp/gz.nc:REGION_MASK" "$tmp/gz.nc" \
    "$tmp/gz.rast.nc" 2> "$tmp/gz.err" || fail "rasterconvert deflated"
if grep -q 'warning: TEMP stays plain netCDF' "$tmp/gz.err"; then
    echo "SKIP: this raster stores no variable compressed (raster_var_set_compression refuses): rasterstat of compressed stores"
else
    expect 0 "raster file, deflated stores" "$rs" "$tmp/gz.rast.nc"
    grep -q "^stores  filters: deflate level 4, shuffle; [0-9]* bytes on disk of $raw raw" \
        "$tmp/out" && ok || fail "deflated stores line: $(grep stores "$tmp/out")"
    expect 0 "raster file, deflated stores, json" "$rs" "$tmp/gz.rast.nc" --json
    if "$PYTHON" - "$tmp/out" "$raw" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))[0]
z = v["compression"]
assert (z["deflate_level"], z["shuffle"], z["fletcher32"], z["quantize_mode"],
        z["filters"]) == (4, True, False, 0, []), z
assert v["raw_bytes"] == int(sys.argv[2]), v["raw_bytes"]
# nccopy -d 4 -s halves these fields; raster's stores must shrink too
assert 0 < v["stored_bytes"] < 0.8 * v["raw_bytes"], v
PY
    then ok; else fail "deflated stores json"; fi
fi

# Format 5: the stores are the variable itself (its chunks), plain and
# deflated; both counted (they once showed 0 bytes on disk)
for z in plain deflated; do
    in=$tmp/g.nc; [ $z = deflated ] && in=$tmp/gz.nc
    "$tools/rasterconvert" --format 5 --mask "$in:REGION_MASK" "$in" \
        "$tmp/g5.nc" 2> /dev/null || fail "rasterconvert --format 5 ($z)"
    expect 0 "format 5, $z" "$rs" "$tmp/g5.nc" --json
    if "$PYTHON" - "$tmp/out" "$raw" $z <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))[0]
z = v["compression"]
assert v["raw_bytes"] == int(sys.argv[2]), v["raw_bytes"]
if sys.argv[3] == "plain":
    assert (z["deflate_level"], z["shuffle"]) == (0, False), z
    # the grid's edge chunks are whole on disk, as any chunked variable's
    # (1.14 here: 384 x 320 in tiles that do not divide it)
    assert v["raw_bytes"] <= v["stored_bytes"] <= 1.2 * v["raw_bytes"], v
else:
    assert (z["deflate_level"], z["shuffle"]) == (4, True), z
    assert 0 < v["stored_bytes"] < 0.8 * v["raw_bytes"], v
PY
    then ok; else fail "format 5 stores json ($z)"; fi
done
rm -f "$tmp/g5.nc" # its seal is the time it was written (exported runs)

# Bad input: exit 1 with a message.
expect 1 "non-integral mask" "$rs" --mask "$tmp/masks.nc:frac" --chunk 2,2
grep -q 'value 1.5 at (0, 1)' "$tmp/err" || fail "non-integral message"
expect 1 "3-D mask" "$rs" --mask "$tmp/masks.nc:cube" --chunk 2,2
expect 1 "char mask" "$rs" --mask "$tmp/masks.nc:text" --chunk 2,2
expect 1 "missing variable" "$rs" --mask "$tmp/masks.nc:nope" --chunk 2,2
expect 1 "missing file" "$rs" --mask "$tmp/none.nc:mask" --chunk 2,2
echo "not netcdf" > "$tmp/junk.nc"
expect 1 "not a netCDF file" "$rs" --mask "$tmp/junk.nc:mask" --chunk 2,2
expect 1 "tile larger than grid" "$rs" --mask "$tmp/masks.nc:smask" --chunk 4,4
expect 1 "unknown region id" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2,2 --region 7
expect 1 "unknown region name" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2,2 --region Pacific

# Bad usage: exit 2 with a message.
expect 2 "no arguments" "$rs"
expect 2 "no chunk" "$rs" --mask "$tmp/masks.nc:smask"
expect 2 "zero chunk" "$rs" --mask "$tmp/masks.nc:smask" --chunk 0,2
expect 2 "one chunk size" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2
expect 2 "junk chunk" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2,x
expect 2 "negative chunk" "$rs" --mask "$tmp/masks.nc:smask" --chunk -2,2
expect 2 "mask without variable" "$rs" --mask "$tmp/masks.nc" --chunk 2,2
expect 2 "unknown flag" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2,2 --frobnicate
err_is "unknown flag" "rasterstat: unknown option '--frobnicate'; try 'rasterstat --help'"
expect 2 "stray argument" "$rs" --mask "$tmp/masks.nc:smask" --chunk 2,2 extra

# --help documents every flag.
expect 0 "help" "$rs" --help
for flag in --mask --names --chunk --region --chunks --json --help --version; do
    grep -q -- "$flag" "$tmp/out" || fail "--help does not mention $flag"
done

report rasterstat
