#!/usr/bin/env bash
# demo.sh BUILD_DIR - the main job end to end on the bundled data (called by
# ./run.sh demo after the build): the region mesh of the paper's worked
# example and of the bundled real basin masks, how fast the mesh builds, and
# a CESM-like variable stored region by region, read back by region and
# restored. Later stages (writes through the shim, timings) join as they
# land.
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
    section "Storing a CESM-like variable region by region (384 x 320, 4 records x 10 levels)"
    "$py" "$top/tools/demo_data.py" "$small" "$out/cesm_small.nc" 4 10
    "$build/tools/rasterconvert" --mask "$small:REGION_MASK" --vars TEMP \
        "$out/cesm_small.nc" "$out/cesm_small.raster.nc"
    ls -l "$out/cesm_small.nc" "$out/cesm_small.raster.nc" | awk '{print $5, $9}'
    "$rs" "$out/cesm_small.raster.nc" --var TEMP --region Atlantic_Ocean \
        --region Pacific_Ocean --region Indian_Ocean

    section "Reading the Atlantic back (packed) and checking it against the plain file"
    "$build/tools/rasterget" "$out/cesm_small.raster.nc" --var TEMP \
        --region "atlantic ocean" -o "$out/atlantic.nc"
    "$py" - "$out/cesm_small.nc" "$out/atlantic.nc" <<'PY'
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
    "$build/tools/rasterconvert" --restore "$out/cesm_small.raster.nc" \
        "$out/cesm_small.restored.nc"
    if cmp -s <(ncdump "$out/cesm_small.nc" | tail -n +2) \
              <(ncdump "$out/cesm_small.restored.nc" | tail -n +2); then
        echo "restored file: ncdump identical to the original"
    else
        echo "restored file differs from the original"; exit 1
    fi
fi

section "Files"
echo "demo files in $out; tools in $build/tools; library $build/src/libraster.so"
