#!/bin/sh
# raster's own tools under an exported LD_PRELOAD (docs/PARALLEL.md tells
# Slurm users to export it for the whole job): libraster's calls to netCDF
# must reach netCDF, not the shim, so every tool gives what it gives
# without the shim. Issue #24: rasterget failed ("naming dimension 0: Not
# a valid ID"), rasterstat saw the file "changed since it was opened".
# The MPI flavour exported (docs/PARALLEL.md's Slurm job) over the serial
# tools: libraster reads through its own libnetcdf, so no warning says the
# file's raster variables are refused; the one warning left is true (the
# program's own calls pass through).
# usage: test_preloaded_tools.sh SHIM TOOLS_DIR MASKS_DIR [SHIM_MPI|none]
#   (env: NCDUMP, PRELOAD_FIRST)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 tools=$2 masks=$3 shim_mpi=${4:-none}
modes="plain preload preload_nolean"
[ "$shim_mpi" != none ] && modes="$modes preload_mpi"
# lib.sh: $preload, with the sanitizer runtime first in the sanitized build
use_shim "$shim_mpi"; preload_mpi=$preload
use_shim "$shim"
mask="$masks/pop_basins_384x320.nc:REGION_MASK"
"$tools/rastergen" --kind cesm --mask "$mask" --size tiny "$tmp/in.nc" \
    > /dev/null 2>&1 || { fail "rastergen"; report preloaded_tools; exit 1; }
"$tools/rasterconvert" --mask "$tmp/in.nc:REGION_MASK" "$tmp/in.nc" \
    "$tmp/r.nc" 2> /dev/null || fail "rasterconvert"

# run NAME OUT CMD...: CMD plain, then with LD_PRELOAD exported (and with
# the netCDF open instead of the lean one); the outputs (OUT, a file the
# command writes, else its stdout) and the messages must be the same, byte
# for byte
run() {
    name=$1 out=$2
    shift 2
    for mode in $modes; do
        rm -f "$out"
        case $mode in
            plain) "$@" ;;
            preload) LD_PRELOAD="$preload" "$@" ;;
            preload_nolean) RASTER_NO_LEAN=1 LD_PRELOAD="$preload" "$@" ;;
            *) LD_PRELOAD="$preload_mpi" "$@" ;;
        esac > "$tmp/$mode.out" 2> "$tmp/$mode.all"
        st=$?
        # the MPI flavour's one true warning: the program's own calls; the
        # summary's time varies from run to run
        grep -v 'is not the netCDF flavour this shim was built for (MPI)' \
            "$tmp/$mode.all" | sed -E 's/, [0-9]+\.[0-9] s$/, T s/' \
            > "$tmp/$mode.err"
        if [ $st -ne 0 ]; then
            fail "$name ($mode): exit $st: $(cat "$tmp/$mode.err")"
            continue
        fi
        if [ "$out" != - ]; then
            cp "$out" "$tmp/$mode.file"
            "$NCDUMP" "$out" | tail -n +2 > "$tmp/$mode.out"
        fi
        if [ $mode != plain ]; then
            cmp -s "$tmp/plain.out" "$tmp/$mode.out" && ok || {
                fail "$name ($mode) differs"
                diff "$tmp/plain.out" "$tmp/$mode.out" | head -5; }
            cmp -s "$tmp/plain.err" "$tmp/$mode.err" && ok || {
                fail "$name ($mode): other messages"
                diff "$tmp/plain.err" "$tmp/$mode.err" | head -5; }
            if [ "$out" != - ]; then
                cmp -s "$tmp/plain.file" "$tmp/$mode.file" && ok ||
                    fail "$name ($mode): the files differ"
            fi
        fi
    done
}
run "rasterget packed" "$tmp/g.nc" "$tools/rasterget" "$tmp/r.nc" --var TEMP --region 6 -o "$tmp/g.nc"
run "rasterget bbox" "$tmp/b.nc" "$tools/rasterget" "$tmp/r.nc" --var TEMP --region 2 --layout bbox -o "$tmp/b.nc"
# the full grid: the mask's shape
run "rasterget full" "$tmp/f.nc" "$tools/rasterget" "$tmp/r.nc" --var TEMP --region 2 --layout full -o "$tmp/f.nc"
run "rasterstat" - "$tools/rasterstat" "$tmp/r.nc"
run "rasterstat --json" - "$tools/rasterstat" --json "$tmp/r.nc"
run "rasterconvert --restore" "$tmp/back.nc" "$tools/rasterconvert" --restore "$tmp/r.nc" "$tmp/back.nc"
run "rasterconvert" "$tmp/r2.nc" "$tools/rasterconvert" --mask "$tmp/in.nc:REGION_MASK" "$tmp/in.nc" "$tmp/r2.nc"
run "rasterconvert --vars" "$tmp/r3.nc" "$tools/rasterconvert" --mask "$tmp/in.nc:REGION_MASK" --vars REGION_MASK "$tmp/in.nc" "$tmp/r3.nc"
run "rastergen" "$tmp/gen.nc" "$tools/rastergen" --kind cesm --mask "$mask" --size tiny "$tmp/gen.nc"
# A job that exports the shim with a mask (docs/PARALLEL.md): the tools'
# own plain outputs stay plain, byte for byte as without the shim (issue
# #24: rasterconvert --restore, rasterget --layout full and rastergen wrote
# TEMP stored by region)
export_mask() {
    name=$1 out=$2
    shift 2
    rm -f "$out"
    "$@" > /dev/null 2>&1 && cp "$out" "$tmp/mask_plain.file"
    rm -f "$out"
    LD_PRELOAD="$preload" RASTER_MASK="$tmp/in.nc:REGION_MASK" "$@" > /dev/null \
        2> "$tmp/mask.err" || fail "$name (RASTER_MASK exported): exit $?"
    cmp -s "$tmp/mask_plain.file" "$out" && ok ||
        fail "$name (RASTER_MASK exported): the file differs from the plain run"
}
export_mask "rasterconvert --restore" "$tmp/back.nc" "$tools/rasterconvert" --restore "$tmp/r.nc" "$tmp/back.nc"
export_mask "rasterget full" "$tmp/f.nc" "$tools/rasterget" "$tmp/r.nc" --var TEMP --region 2 --layout full -o "$tmp/f.nc"
export_mask "rastergen" "$tmp/gen.nc" "$tools/rastergen" --kind cesm --mask "$mask" --size tiny "$tmp/gen.nc"
report preloaded_tools
