#!/bin/sh
# Optional pointers (issue #27): null_args calls every netCDF define and
# inquire function with each optional pointer argument NULL; under the shim
# with RASTER_MASK set (its variable temp is then stored by region) it must
# behave exactly as without the shim: same output, exit 0, no message.
# usage: test_null_args.sh SHIM BUILD_DIR MASK_DIR   (env: NCDUMP,
#        PRELOAD_FIRST for sanitized builds)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2 masks=$3
prog="$build/tests/null_args"
mask="$masks/pop_basins_384x320.nc"
preload="$shim"
if [ -n "${PRELOAD_FIRST:-}" ]; then
    preload="$PRELOAD_FIRST $shim"
    export ASAN_OPTIONS=detect_leaks=0  # netCDF's own, not ours
fi
# the same file name in two directories: nc_inq_path answers alike
mkdir "$tmp/plain" "$tmp/shimd"

expect 0 "null_args without the shim" "$prog" "$mask" REGION_MASK "$tmp/plain/n.nc"
cp "$tmp/out" "$tmp/plain.out"
[ -s "$tmp/err" ] && fail "null_args printed: $(cat "$tmp/err")" || ok
grep -q '^reopened nc_get_vara_float count NULL: 0 .* bad=0$' "$tmp/plain.out" &&
    ok || fail "the plain run did not read its data back"

RASTER_MASK="$mask:REGION_MASK" LD_PRELOAD="$preload" \
    expect 0 "null_args under the shim" "$prog" "$mask" REGION_MASK "$tmp/shimd/n.nc"
cp "$tmp/out" "$tmp/shim.out"
[ -s "$tmp/err" ] && fail "null_args under the shim printed: $(cat "$tmp/err")" || ok
# the test means something only if temp (and temp2, defined with a NULL
# varidp) really were raster variables
groups=$("$NCDUMP" -h "$tmp/shimd/n.nc" | sed -n 's/^group: \(raster_.*\) {/\1/p' | sort | tr '\n' ' ')
[ "$groups" = "raster_temp raster_temp2 " ] && ok ||
    fail "temp and temp2 not stored by region: '$groups'"
if cmp -s "$tmp/plain.out" "$tmp/shim.out"; then ok; else
    fail "output under the shim differs"
    diff "$tmp/plain.out" "$tmp/shim.out" | head -20
fi
[ "$(wc -l < "$tmp/plain.out")" -gt 500 ] && ok ||
    fail "null_args printed only $(wc -l < "$tmp/plain.out") lines"

# the file written under the shim, read without it and under it
LD_PRELOAD="$preload" "$NCDUMP" "$tmp/shimd/n.nc" | tail -n +2 > "$tmp/d2"
"$NCDUMP" "$tmp/plain/n.nc" | tail -n +2 > "$tmp/d1"
cmp -s "$tmp/d1" "$tmp/d2" && ok || fail "ncdump of the shim's file differs"
report null_args
