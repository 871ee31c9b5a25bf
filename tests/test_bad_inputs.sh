#!/bin/sh
# Bad settings and arguments (docs/BAD_INPUTS.md, rows "env" and "tool"):
# under the shim a bad RASTER_* variable never fails the program nor
# changes its data: the variables stay plain netCDF (or the setting is
# ignored) with one clear warning; the tools refuse bad arguments and bad
# files with a message and exit 1 (bad input) or 2 (bad usage), leaving no
# output behind. Each check is labelled with its BAD_INPUTS.md row.
# usage: test_bad_inputs.sh SHIM BUILD_DIR   (env: NCDUMP, NCGEN, NCCOPY,
#        PRELOAD_FIRST for sanitized builds)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2
tools="$build/tools"
use_shim "$shim"  # lib.sh: $preload, with the sanitizer runtime first
cd "$tmp" || exit 1
cat > in.cdl <<'CDL'
netcdf in {
dimensions:
    time = UNLIMITED ; y = 6 ; x = 8 ; z = 2 ;
variables:
    float t(time, y, x) ;
        t:units = "K" ;
    int mask(y, x) ;
    int mask3(z, y, x) ;
    float fmask(y, x) ;
    char cmask(y, x) ;
data:
 t = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
     20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,
     38, 39, 40, 41, 42, 43, 44, 45, 46, 47 ;
 mask = 1, 1, 1, 2, 2, 2, 0, 0, 1, 1, 1, 2, 2, 2, 0, 0, 1, 1, 1, 2, 2, 2,
     0, 0, -3, -3, 1, 2, 2, 2, 0, 0, -3, -3, 1, 2, 2, 2, 0, 0, -3, -3, 1, 2,
     2, 2, 0, 0 ;
 fmask = 1, 1.5, 1, 2, 2, 2, 0, 0, 1, 1, 1, 2, 2, 2, 0, 0, 1, 1, 1, 2, 2,
     2, 0, 0, -3, -3, 1, 2, 2, 2, 0, 0, -3, -3, 1, 2, 2, 2, 0, 0, -3, -3, 1,
     2, 2, 2, 0, 0 ;
}
CDL
"$NCGEN" -4 -o in.nc in.cdl || exit 1
printf 'not a netCDF file\n' > text.nc
"$NCDUMP" in.nc | tail -n +2 > plain.txt

# shim_case ROW DESC WARNING-PATTERN ENV...: nccopy under the shim with ENV
# exits 0, says WARNING-PATTERN once (no pattern: nothing), stores no
# variable by region, and the copy holds the same data
shim_case() {
    row=$1 desc=$2 pat=$3
    shift 3
    rm -f out.nc
    env RASTER_VARS=t "$@" LD_PRELOAD="$preload" "$NCCOPY" in.nc out.nc > out 2> err
    st=$?
    [ $st -eq 0 ] && ok || { fail "$row $desc: nccopy exit $st"; cat err; }
    if [ -n "$pat" ]; then
        [ "$(grep -c "$pat" err)" = 1 ] && ok ||
            fail "$row $desc: wanted one warning matching '$pat': $(cat err)"
    else
        [ -s err ] && fail "$row $desc: unexpected output: $(cat err)" || ok
    fi
    on_disk "$NCDUMP" -h out.nc | grep -q 'group: raster_' &&
        fail "$row $desc: a variable was stored by region" || ok
    on_disk "$NCDUMP" out.nc | tail -n +2 > copy.txt
    cmp -s plain.txt copy.txt && ok || fail "$row $desc: the copy's data differ"
}
# chunk_case ROW DESC VALUE: a bad RASTER_CHUNK is ignored with one warning
# and the default tile is used (t is stored by region)
chunk_case() {
    row=$1 desc=$2
    rm -f out.nc
    RASTER_VARS=t RASTER_MASK=in.nc:mask RASTER_CHUNK="$3" LD_PRELOAD="$preload" \
        "$NCCOPY" in.nc out.nc > out 2> err
    st=$?
    [ $st -eq 0 ] && ok || fail "$row $desc: nccopy exit $st"
    [ "$(grep -c 'RASTER_CHUNK=.*ignoring it' err)" = 1 ] && ok ||
        fail "$row $desc: no single warning: $(cat err)"
    on_disk "$NCDUMP" -h out.nc | grep -q 'raster_chunk = 1ULL, 6ULL, 8ULL' && ok ||
        fail "$row $desc: the default tile was not used"
    LD_PRELOAD="$preload" "$NCDUMP" out.nc | tail -n +2 > copy.txt
    cmp -s plain.txt copy.txt && ok || fail "$row $desc: data differ"
}

# ---- environment -------------------------------------------------------
shim_case E1 "RASTER_MASK without ':'" 'is not FILE:VAR' RASTER_MASK=in.nc
shim_case E2 "RASTER_MASK empty variable" 'is not FILE:VAR' RASTER_MASK=in.nc:
shim_case E3 "RASTER_MASK empty file" 'is not FILE:VAR' RASTER_MASK=:mask
shim_case E4 "RASTER_MASK missing file" 'cannot use RASTER_MASK' RASTER_MASK=none.nc:mask
shim_case E5 "RASTER_MASK not netCDF" 'cannot use RASTER_MASK' RASTER_MASK=text.nc:mask
shim_case E6 "RASTER_MASK missing variable" 'cannot use RASTER_MASK' RASTER_MASK=in.nc:nomask
shim_case E7 "RASTER_MASK 3-D" 'cannot use RASTER_MASK.*dimensions' RASTER_MASK=in.nc:mask3
shim_case E8 "RASTER_MASK non-integral float" 'cannot use RASTER_MASK.*not an int32' RASTER_MASK=in.nc:fmask
shim_case E9 "RASTER_MASK char" 'cannot use RASTER_MASK.*not numeric' RASTER_MASK=in.nc:cmask
shim_case E10 "RASTER_MASK names a dimension" 'cannot use RASTER_MASK' RASTER_MASK=in.nc:y
shim_case E11 "RASTER_VARS naming nothing" '' RASTER_MASK=in.nc:mask RASTER_VARS=nothing
shim_case E12 "RASTER_VARS only commas" '' RASTER_MASK=in.nc:mask RASTER_VARS=,,,
shim_case E13 "RASTER_LOG unknown" 'RASTER_LOG=loud is not' RASTER_LOG=loud
shim_case E14 "RASTER_LOG=off silences a bad mask" '' RASTER_LOG=off RASTER_MASK=none.nc:mask
chunk_case E15 "RASTER_CHUNK zero" 0,5
chunk_case E16 "RASTER_CHUNK negative" -1,5
chunk_case E17 "RASTER_CHUNK overflowing" 99999999999999999999999,5
chunk_case E18 "RASTER_CHUNK not numbers" abc,def
chunk_case E19 "RASTER_CHUNK one size" 5
chunk_case E20 "RASTER_CHUNK more than 32 sizes" \
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,3,4
chunk_case E21 "RASTER_CHUNK empty entry" 3,,4
shim_case E22 "RASTER_CHUNK tile larger than the grid" 'larger than the grid' \
    RASTER_MASK=in.nc:mask RASTER_CHUNK=100,100
shim_case E23 "RASTER_THREADS not a count" 'RASTER_THREADS=two is not' RASTER_THREADS=two
shim_case E24 "RASTER_THREADS zero" 'RASTER_THREADS=0 is not' RASTER_THREADS=0
printf '1,A\n2,B\n1,C\n' > dup.csv
shim_case E26 "RASTER_NAMES with a duplicate id" \
    'cannot use RASTER_MASK=in.nc:mask with RASTER_NAMES=dup.csv.*region id 1 is given twice' \
    RASTER_MASK=in.nc:mask RASTER_NAMES=dup.csv
shim_case E27 "RASTER_NAMES missing file" \
    'cannot use RASTER_MASK=in.nc:mask with RASTER_NAMES=none.csv' \
    RASTER_MASK=in.nc:mask RASTER_NAMES=none.csv
shim_case E28 "RASTER_NAMES without RASTER_MASK" \
    'RASTER_NAMES=dup.csv without RASTER_MASK; ignoring it' RASTER_NAMES=dup.csv
# a good one: its names are the stored mask's (blanks as '_')
printf 'id,name,abbrev\n1,North Sea,NS\n2,Baltic\n-3,Irish Sea\n' > good.csv
rm -f out.nc
RASTER_VARS=t RASTER_MASK=in.nc:mask RASTER_NAMES=good.csv LD_PRELOAD="$preload" \
    "$NCCOPY" in.nc out.nc > out 2> err && ! [ -s err ] && ok ||
    fail "E26 RASTER_NAMES good: nccopy failed: $(cat err)"
on_disk "$NCDUMP" -h out.nc | grep -q 'flag_meanings = "Irish_Sea North_Sea Baltic"' &&
    ok || fail "E26 RASTER_NAMES good: stored names: $(on_disk "$NCDUMP" -h out.nc | grep flag_)"

# ---- tools ---------------------------------------------------------------
RASTER_VARS=t RASTER_MASK=in.nc:mask LD_PRELOAD="$preload" "$NCCOPY" in.nc r.nc || exit 1
expect 1 "T1 rasterget: missing file" "$tools/rasterget" none.nc --var t --region 1 -o o.nc
no_output "$tmp/o.nc" "T1"
expect 1 "T2 rasterget: not netCDF" "$tools/rasterget" text.nc --var t --region 1 -o o.nc
expect 1 "T3 rasterget: plain netCDF file" "$tools/rasterget" in.nc --var t --region 1 -o o.nc
expect 1 "T4 rasterget: unknown variable" "$tools/rasterget" r.nc --var nope --region 1 -o o.nc
expect 1 "T5 rasterget: unknown region" "$tools/rasterget" r.nc --var t --region 7 -o o.nc
expect 1 "T5 rasterget: region name not in the mask" "$tools/rasterget" r.nc --var t --region Atlantic -o o.nc
expect 2 "T6 rasterget: bad layout" "$tools/rasterget" r.nc --var t --region 1 --layout round -o o.nc
expect 1 "T7 rasterget: start past the records" "$tools/rasterget" r.nc --var t --region 1 --start 5 -o o.nc
expect 2 "T8 rasterget: count not a number" "$tools/rasterget" r.nc --var t --region 1 --count x -o o.nc
expect 2 "T9 rasterget: no output" "$tools/rasterget" r.nc --var t --region 1
expect 1 "T10 rasterget: output in a missing directory" "$tools/rasterget" r.nc --var t --region 1 -o no/dir/o.nc
no_output "$tmp/o.nc" "T2-T10"
expect 2 "T11 rasterconvert: zero chunk" "$tools/rasterconvert" --mask in.nc:mask --chunk 0,4 in.nc c.nc
expect 2 "T11 rasterconvert: one chunk size" "$tools/rasterconvert" --mask in.nc:mask --chunk 4 in.nc c.nc
expect 1 "T12 rasterconvert: bad mask variable" "$tools/rasterconvert" --mask in.nc:fmask in.nc c.nc
expect 1 "T12 rasterconvert: missing mask file" "$tools/rasterconvert" --mask none.nc:mask in.nc c.nc
expect 1 "T13 rasterconvert: input not netCDF" "$tools/rasterconvert" --mask in.nc:mask text.nc c.nc
no_output "$tmp/c.nc" "T11-T13"
expect 2 "T14 rasterstat: zero tile" "$tools/rasterstat" --mask in.nc:mask --chunk 0,4
expect 1 "T14 rasterstat: 3-D mask" "$tools/rasterstat" --mask in.nc:mask3 --chunk 2,2
expect 1 "T15 rasterstat: not a raster file" "$tools/rasterstat" in.nc
expect 1 "T15 rasterstat: not netCDF" "$tools/rasterstat" text.nc
report bad_inputs
