#!/bin/sh
# rasterbench in its small, fast form: it must generate and convert its
# dataset once (cached), run every case of issue 6 with every method in
# both cache states, and write JSON whose records are complete and whose
# byte counts make sense (raster reads about the regions' bytes, netCDF
# reads at least the bounding boxes'). No speed is asserted here: speed
# targets are rasterbench's own summary (docs/PERFORMANCE.md).
# usage: test_rasterbench.sh RASTERBENCH SRCDIR PRELOAD|none
#   (env: PYTHON)
set -u
rb=$1 src=$2 preload=$3
. "$(dirname "$0")/lib.sh"

need_python
mask="$src/datasets/masks/pop_basins_384x320.nc:REGION_MASK"
shim="--preload $preload"
[ "$preload" = none ] && shim=--no-shim

expect 0 "tiny run" "$rb" --dir "$tmp/cache" --mask "$mask" --size tiny \
    --reps 1 $shim --json "$tmp/out.json"
cp "$tmp/out" "$tmp/run1.txt"
ls "$tmp/cache"/*.raster.nc > /dev/null 2>&1 && ok ||
    fail "no cached raster file"
grep -q 'single_speedup_geomean' "$tmp/run1.txt" && ok ||
    fail "no summary printed"

"$PY" - "$tmp/out.json" "$preload" <<'PY' && ok || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
shim = sys.argv[2] != "none"
cases = d["cases"]
singles = {"Southern", "Pacific", "Indian", "Atlantic", "Arctic"}
multis = {"Arctic+Pacific+Indian", "Pacific+Indian+Atlantic",
          "Indian+Atlantic+Southern", "Atlantic+Pacific+Southern",
          "Southern+Pacific+Arctic"}
def get(case, method, cache):
    hits = [c for c in cases if c["case"] == case and c["method"] == method
            and c["cache"] == cache]
    assert len(hits) == 1, (case, method, cache, len(hits))
    return hits[0]
for case in singles | multis:
    for cache in ("warm", "cold"):
        n, r, f, m = (get(case, k, cache) for k in
                      ("netcdf", "raster", "floor", "raster_malloc"))
        for x in (n, r, f, m):
            assert x["median_s"] > 0 and x["peak_rss"] > 0, x
            assert x["kind"] == ("multi" if "+" in case else "single"), x
        rb = r["region_bytes"]
        assert rb > 0
        # the floor reads exactly the regions' bytes; raster those plus
        # its small tables; netCDF at least the bounding box
        # (rchar also counts reading /proc/self/io itself: ~100 bytes)
        assert rb <= f["bytes_read"] < rb + 4096, (case, f["bytes_read"], rb)
        assert rb <= r["bytes_read"] < rb + 8 * 1024 * 1024, (case, r, rb)
        assert n["bytes_read"] >= rb, (case, n, rb)
# the Atlantic straddles the seam: its bounding box is the whole width
a = get("Atlantic", "netcdf", "warm")
assert a["bytes_read"] > 3 * get("Atlantic", "raster", "warm")["bytes_read"]
if shim:
    for case in ("full variable", "thin column band"):
        for cache in ("warm", "cold"):
            for m in ("plain", "shim"):
                assert get(case, m, cache)["median_s"] > 0
    get("record-by-record write", "plain", "warm")
    get("record-by-record write", "shim", "warm")
s = d["summary"]
keys = ["single_speedup_geomean", "multi_speedup_geomean", "floor_ratio_max",
        "cold_speedup_geomean", "cold_floor_ratio_max",
        "packed_mem_ratio_max", "full_read_ratio", "thin_hyperslab_ratio",
        "write_ratio"]
assert sorted(s) == sorted(keys), sorted(s)
for k in keys:
    if shim or k not in ("full_read_ratio", "thin_hyperslab_ratio",
                         "write_ratio"):
        assert isinstance(s[k], (int, float)) and s[k] > 0, (k, s[k])
assert d["dataset"]["shape"][-2:] == [384, 320], d["dataset"]
PY

# the dataset is cached: a second run generates nothing
expect 0 "cached run" "$rb" --dir "$tmp/cache" --mask "$mask" --size tiny \
    --reps 1 --warm --no-shim --case Atlantic_Ocean
grep -q generating "$tmp/out" && fail "generated again" || ok
grep -q '^Atlantic ' "$tmp/out" && ok || fail "no Atlantic line"

# --only-write: the write case alone (with a shim to measure it)
if [ "$preload" != none ]; then
    expect 0 "only the write" "$rb" --dir "$tmp/cache" --mask "$mask" \
        --size tiny --reps 1 $shim --only-write
    grep -q '^record-by-record write ' "$tmp/out" && ok ||
        fail "--only-write: no write line"
    grep -q -e '^Atlantic ' -e '^full variable ' "$tmp/out" &&
        fail "--only-write ran other cases" || ok
fi
expect 2 "--only-write --no-shim" "$rb" --only-write --no-shim
expect 2 "--only-write --cold" "$rb" --only-write --cold

# bad input and bad usage
expect 1 "unknown region" "$rb" --dir "$tmp/cache" --mask "$mask" \
    --size tiny --reps 1 --no-shim --case Atlantis
expect 2 "--plain without --raster" "$rb" --plain "$tmp/x.nc"
expect 2 "--reps 0" "$rb" --reps 0
expect 2 "unknown option" "$rb" --frobnicate
expect 2 "--thin 0" "$rb" --thin 0
expect 1 "missing files" "$rb" --plain "$tmp/none.nc" --raster \
    "$tmp/none.raster.nc" --var TEMP
report rasterbench
