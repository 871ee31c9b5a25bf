#!/usr/bin/env bash
# demo.sh BUILD_DIR - the main job end to end on the bundled data (called by
# ./run.sh demo after the build): the region mesh of the paper's worked
# example and of the bundled real basin masks, how fast the mesh builds; a
# small CESM-like dataset (rastergen) copied by nccopy under the shim (the
# raster file reads back identical) and its mesh drawn; each basin read by
# netCDF (bounding box + mask) and by raster: speed-up and peak memory; one
# basin checked value by value; from Python (when a venv is there), one
# basin's regional mean by ncregions against xarray's where().mean(); the
# plain file restored.
set -euo pipefail
build=$1
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$build/demo"
mkdir -p "$out"
rs="$build/tools/rasterstat"

section() { printf '\n=== %s ===\n' "$*"; }

section "The RASTER paper's worked example (Table 1): one 4 x 80 band, 4 x 4 tiles"
ncgen -4 -o "$out/table1_band.nc" "$top/datasets/table1_band.cdl"
"$rs" --mask "$out/table1_band.nc:mask" --chunk 4,4 --chunks
echo "(paper: 7 chunks; Ocean -> 1,2,4,5,6,7 and Land -> 2,3,4,6, numbered from 1)"

small="$top/datasets/masks/pop_basins_384x320.nc"
large="$top/datasets/masks/pop_basins_2400x3600.nc"
if [ -f "$small" ]; then
    section "CESM POP-like basins, 384 x 320 grid, 50 x 50 tiles"
    "$rs" --mask "$small:REGION_MASK" --chunk 50,50
fi
if [ -f "$large" ]; then
    section "0.1-degree-class basins, 2400 x 3600 grid, 50 x 50 tiles"
    "$rs" --mask "$large:REGION_MASK" --chunk 50,50
    section "Mesh build time, 2400 x 3600 mask, 50 x 50 tiles"
    "$build/tests/bench_mesh" "$large:REGION_MASK" 50,50
else
    section "Mesh build time, synthetic 2400 x 3600 mask, 50 x 50 tiles"
    "$build/tests/bench_mesh"
fi

if [ -f "$small" ]; then
    py=/usr/bin/python3
    shim="$build/preload/libraster_preload.so"
    section "A small CESM-like dataset (rastergen), copied through the shim by an unmodified netCDF-C program (nccopy)"
    "$build/tools/rastergen" --kind cesm --mask "$small:REGION_MASK" \
        --size small --quiet "$out/cesm_plain.nc"
    RASTER_MASK="$small:REGION_MASK" RASTER_VARS=TEMP RASTER_LOG=info \
        LD_PRELOAD="$shim" nccopy "$out/cesm_plain.nc" "$out/cesm_raster.nc"
    ls -l "$out/cesm_plain.nc" "$out/cesm_raster.nc" | awk '{print $5, $9}'
    if cmp -s <(ncdump "$out/cesm_plain.nc" | tail -n +2) \
              <(LD_PRELOAD="$shim" ncdump "$out/cesm_raster.nc" | tail -n +2); then
        echo "ncdump of the raster file under the shim = ncdump of the plain file"
    else
        echo "ncdump differs between the plain and the raster file"; exit 1
    fi
    "$rs" "$out/cesm_raster.nc" --var TEMP --plot "$out/mesh_384x320.png" \
        --region Atlantic_Ocean --region Pacific_Ocean --region Indian_Ocean \
        --region Southern_Ocean --region Arctic_Ocean > "$out/rasterstat.txt"
    sed -n '1,/^(region_bytes/p' "$out/rasterstat.txt"
    echo "mesh picture: $out/mesh_384x320.png"

    section "Reading each basin: netCDF (bounding box, then the mask) against raster (warm cache, median of 5)"
    "$build/tools/rasterbench" --plain "$out/cesm_plain.nc" \
        --raster "$out/cesm_raster.nc" --var TEMP --reps 5 --warm --no-shim \
        --case Southern_Ocean --case Pacific_Ocean --case Indian_Ocean \
        --case Atlantic_Ocean --case Arctic_Ocean \
        --case Pacific_Ocean+Indian_Ocean+Atlantic_Ocean \
        --json "$out/bench.json" > "$out/bench.txt"
    "$py" - "$out/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
runs = {}
for c in d["cases"]:
    if c["cache"] == "warm" and c["method"] in ("netcdf", "raster"):
        runs.setdefault(c["case"], {})[c["method"]] = c
mib = 1 << 20
print(f"{'basin':26} {'MiB':>6} {'netCDF s':>9} {'raster s':>9} {'speed-up':>9}"
      f" {'netCDF peak MiB':>16} {'raster peak MiB':>16}")
for case, m in runs.items():
    n, r = m["netcdf"], m["raster"]
    print(f"{case:26} {r['region_bytes'] / mib:6.1f} {n['median_s']:9.4f}"
          f" {r['median_s']:9.4f} {n['median_s'] / r['median_s']:8.1f}x"
          f" {n['peak_rss'] / mib:16.1f} {r['peak_rss'] / mib:16.1f}")
PY
    echo "(MiB: the basin's data; peak: the reading process's peak memory;"
    echo " every measurement, bytes read included: $out/bench.txt)"

    section "Reading the Atlantic back (packed) and checking it against the plain file"
    "$build/tools/rasterget" "$out/cesm_raster.nc" --var TEMP \
        --region "atlantic ocean" -o "$out/atlantic.nc"
    "$py" - "$out/cesm_plain.nc" "$out/atlantic.nc" <<'PY'
import sys
import numpy as np
from netCDF4 import Dataset
with Dataset(sys.argv[1]) as a, Dataset(sys.argv[2]) as b:
    mask = a["REGION_MASK"][:]
    want = a["TEMP"][:].data[..., mask == 6]
    got = b["TEMP"][:].data
    same = want.shape == got.shape and np.array_equal(want, got)
    print(f"Atlantic: {got.shape[-1]} cells x {got.shape[0] * got.shape[1]} "
          f"records; equal to TEMP[..., mask == 6] of the plain file: {same}")
    sys.exit(0 if same else 1)
PY
    section "From Python: the Atlantic's mean temperature, ncregions against xarray's way"
    # a venv the tests or rasterbench --peers made (numpy, xarray, netCDF4
    # from PyPI): the checkout's ncregions installed into it (incremental)
    # (each venv's package build directory as its maker keeps it)
    pyv= pyb=
    if [ -f "$build/python-venv/.ready" ]; then
        pyv=$build/python-venv pyb=$build/python-build
    elif [ -f "$build/peers-venv/.ready" ]; then
        pyv=$build/peers-venv pyb=$build/peers-venv/ncregions-build
    fi
    if [ -n "$pyv" ] && "$pyv/bin/python" -m pip install --quiet \
            --disable-pip-version-check --no-deps --no-build-isolation \
            -Cbuild-dir="$pyb" "$top" \
            > "$out/pip.log" 2>&1; then
        "$pyv/bin/python" - "$out/cesm_plain.nc" "$out/cesm_raster.nc" <<'PY'
import sys, time
import numpy as np
import xarray as xr
import ncregions

plain, rast = sys.argv[1:3]
def timed(fn, reps=5):
    fn()  # warm: the page cache, the imports' first use
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return out, sorted(ts)[reps // 2]

def by_ncregions():
    return ncregions.reduce(rast, "TEMP", "Atlantic Ocean", how="mean")

def by_xarray():
    with xr.open_dataset(plain) as ds:
        return ds.TEMP.where(ds.REGION_MASK == 6).mean(("nlat", "nlon")).load()

got, t1 = timed(by_ncregions)
want, t2 = timed(by_xarray)
print('ncregions.reduce(rast, "TEMP", "Atlantic Ocean", how="mean"):')
print(f"  {t1 * 1e3:7.1f} ms; surface, first record: "
      f"{float(got[0, 0]):.4f} {got.attrs.get('units', '')}")
print("xarray: ds.TEMP.where(ds.REGION_MASK == 6).mean((\"nlat\", \"nlon\")):")
print(f"  {t2 * 1e3:7.1f} ms  ({t2 / t1:.1f}x ncregions' time)")
diff = float(np.max(np.abs(got.values - want.values) / np.abs(want.values)))
print(f"same means (largest relative difference {diff:.1e}; xarray sums "
      f"float32 in float32)")
sys.exit(0 if diff < 1e-5 else 1)
PY
        echo "(warm, median of 5; the whole-size comparison: rasterbench --peers)"
    else
        echo "Python route skipped: no venv yet (./run.sh test makes" \
            "build/python-venv; or: pip install $top, docs/PYTHON.md)"
    fi

    "$build/tools/rasterconvert" --restore "$out/cesm_raster.nc" \
        "$out/cesm_restored.nc"
    # the restored file's history has a line more (the restore's)
    if cmp -s <(ncdump "$out/cesm_plain.nc" | tail -n +2 | grep -v ':history = ') \
              <(ncdump "$out/cesm_restored.nc" | tail -n +2 | grep -v ':history = '); then
        echo "restored file (rasterconvert --restore): ncdump identical to the plain file (history aside)"
    else
        echo "restored file differs from the original"; exit 1
    fi
fi

section "Files"
echo "demo files in $out; tools in $build/tools; library $build/src/libraster.so"
