#!/usr/bin/env bash
# demo.sh BUILD_DIR - the main job end to end on the bundled data (called by
# ./run.sh demo after the build). For now: the region mesh of the paper's
# worked example and of the bundled real basin masks, and how fast the mesh
# builds; later stages (write through the shim, region reads) join as they
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

section "Files"
echo "demo files in $out; tools in $build/tools; library $build/src/libraster.so"
