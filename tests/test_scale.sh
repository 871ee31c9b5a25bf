#!/bin/sh
# Masks of many regions (issue #27): a mask of 40,000 regions, and one of
# 3,300 regions for 11 variables, each past the 32,767 groups netCDF-C
# numbers in a file when every region had its own group (format 3). The
# shim crashed the writing program (exit 139, a 239-byte file) and
# rasterconvert crashed inside nc_def_grp, leaving its .tmp file. Now:
# format 4 (no group per region), the program exits 0, every value reads
# back as written (ncdump under the shim against the plain file), the
# tools pass (rasterstat builds the mesh: the full check), no temporary
# is left; format 3 asked for explicitly is refused with a message; a
# program whose own groups leave no room keeps a plain variable.
# With the MPI flavour and mpirun, 2 ranks of par_writer write the
# 40,000 regions under the MPI shim (collective, then independent).
# usage: test_scale.sh SHIM BUILD_DIR [SHIM_MPI]  (env: NCDUMP, MPIRUN)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2 shim_mpi=${3:-}
writer="$build/tests/record_writer"
scale_mask="$build/tests/scale_mask"
rasterconvert="$build/tools/rasterconvert"
rasterstat="$build/tools/rasterstat"
use_shim "$shim"  # lib.sh: $preload, with the sanitizer runtime first
preload_mpi=${PRELOAD_FIRST:+$PRELOAD_FIRST }$shim_mpi

# values FILE VARS [SHIM]: the data section of ncdump -v VARS of FILE
values() {
    if [ -n "${3:-}" ]; then
        LD_PRELOAD="$3" "$NCDUMP" -v "$2" "$1" | sed -n '/^data:/,$p'
    else
        on_disk "$NCDUMP" -v "$2" "$1" | sed -n '/^data:/,$p'
    fi
}

# same_values PLAIN RASTER VARS WHAT: RASTER under the shim reads as PLAIN
same_values() {
    values "$1" "$3" > "$tmp/want" || { fail "$4: ncdump of $1"; return; }
    if ! values "$2" "$3" "$preload" > "$tmp/got" 2> "$tmp/err"; then
        fail "$4: ncdump under the shim"; cat "$tmp/err"; return
    fi
    if ! [ -s "$tmp/want" ] || ! cmp -s "$tmp/want" "$tmp/got"; then
        fail "$4: values differ from the plain file"; return
    fi
    ok
}

# format FILE VAR: raster_format_version of raster_VAR, read without raster
format() {
    on_disk "$NCDUMP" -h "$1" | awk -v g="group: raster_$2 {" '
        $0 ~ g { inside = 1 }
        inside && /:raster_format_version/ { print $3; exit }'
}

# case NAME NY NX BH BW NVARS: a mask of NY x NX cells in BH x BW blocks
case_of() {
    name=$1 ny=$2 nx=$3 bh=$4 bw=$5 nvars=$6
    vars=TEMP k=2
    while [ "$k" -le "$nvars" ]; do vars="$vars,TEMP_$k"; k=$((k + 1)); done
    "$scale_mask" "$tmp/$name.mask.nc" "$ny" "$nx" "$bh" "$bw" > /dev/null ||
        exit 1
    "$writer" "$tmp/$name.mask.nc" "$tmp/$name.plain.nc" 2 0 "$nvars" \
        > /dev/null || exit 1
    expect 0 "$name: the writing program under the shim" env \
        RASTER_MASK="$tmp/$name.mask.nc:REGION_MASK" \
        LD_PRELOAD="$preload" "$writer" "$tmp/$name.mask.nc" \
        "$tmp/$name.shim.nc" 2 0 "$nvars"
    if [ -s "$tmp/err" ]; then
        fail "$name: the shim left a variable plain"; cat "$tmp/err"
    else
        ok
    fi
    got=$(format "$tmp/$name.shim.nc" TEMP)
    [ "$got" = 4 ] && ok || fail "$name: shim file of format '$got'"
    same_values "$tmp/$name.plain.nc" "$tmp/$name.shim.nc" "$vars" \
        "$name: shim"
    expect 0 "$name: rasterstat of the shim's file" \
        "$rasterstat" "$tmp/$name.shim.nc"
    # tiles of 50 x 50 (the source's chunks are the whole grid): a
    # hyperslab read handles whole tiles, and ncdump reads row by row
    expect 0 "$name: rasterconvert" "$rasterconvert" --chunk 50,50 \
        --mask "$tmp/$name.mask.nc:REGION_MASK" \
        "$tmp/$name.plain.nc" "$tmp/$name.conv.nc"
    if ls -a "$tmp" | grep -q '\.tmp'; then
        fail "$name: rasterconvert left a temporary"
    else
        ok
    fi
    got=$(format "$tmp/$name.conv.nc" "TEMP_$nvars")
    [ "$nvars" = 1 ] && got=$(format "$tmp/$name.conv.nc" TEMP)
    [ "$got" = 4 ] && ok || fail "$name: converted file of format '$got'"
    expect 0 "$name: rasterstat (the full check)" \
        "$rasterstat" "$tmp/$name.conv.nc"
    same_values "$tmp/$name.plain.nc" "$tmp/$name.conv.nc" "$vars" \
        "$name: rasterconvert"
}

# 40,000 regions: 400 x 400 cells in 2 x 2 blocks
case_of r40k 400 400 2 2 1
# 3,300 regions (a cell each) for 11 variables: 36,300 region groups
case_of r3300x11 60 55 1 1 11

# parallel: par_writer's values, plain and under the MPI shim
par_writer="$build/examples/par_writer"
if [ -n "${MPIRUN:-}" ] && [ -n "$shim_mpi" ] &&
    [ -x "$par_writer" ] && [ -e "$shim_mpi" ]; then
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
    # LeakSanitizer off in the ranks: OpenMPI's own leaks (test_mpi.sh)
    mpi_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    for access in collective independent; do
        "$MPIRUN" -np 2 -x ASAN_OPTIONS="$mpi_asan" "$par_writer" "$tmp/r40k.mask.nc" \
            "$tmp/par.plain.nc" --ntime 2 --ndepth 2 --fixed-time \
            > /dev/null 2>&1 || { fail "par_writer, plain"; break; }
        expect 0 "par_writer under the MPI shim ($access)" "$MPIRUN" -np 2 \
            -x RASTER_MASK="$tmp/r40k.mask.nc:REGION_MASK" \
            -x LD_PRELOAD="$preload_mpi" \
            -x ASAN_OPTIONS="$mpi_asan" "$par_writer" "$tmp/r40k.mask.nc" \
            "$tmp/par.nc" --ntime 2 --ndepth 2 --fixed-time --access "$access"
        got=$(format "$tmp/par.nc" TEMP)
        [ "$got" = 4 ] && ok || fail "par_writer ($access): format '$got'"
        same_values "$tmp/par.plain.nc" "$tmp/par.nc" TEMP \
            "par_writer ($access)"
    done
fi

# a program that made 32,766 groups itself: no room even for format 4's
# two groups; the variable stays plain with one warning, the program
# exits 0 and its values are in the plain variable
"$writer" "$tmp/r40k.mask.nc" "$tmp/full.plain.nc" 2 0 1 32766 \
    > /dev/null || exit 1
expect 0 "32,766 groups of the program's: the program" env \
    RASTER_MASK="$tmp/r40k.mask.nc:REGION_MASK" LD_PRELOAD="$preload" \
    "$writer" "$tmp/r40k.mask.nc" "$tmp/full.shim.nc" 2 0 1 32766
n=$(grep -c 'stays plain' "$tmp/err")
[ "$n" = 1 ] && grep -q 'netCDF-C counts at most 32767' "$tmp/err" &&
    ok || { fail "32,766 groups: not one warning"; cat "$tmp/err"; }
values "$tmp/full.plain.nc" TEMP > "$tmp/want"
values "$tmp/full.shim.nc" TEMP > "$tmp/got"
[ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got" && ok ||
    fail "32,766 groups: the plain variable's values differ"

# format 3 asked for where it cannot be stored: refused, nothing left
expect 1 "rasterconvert --format 3 of 40,000 regions" "$rasterconvert" \
    --format 3 --mask "$tmp/r40k.mask.nc:REGION_MASK" \
    "$tmp/r40k.plain.nc" "$tmp/f3.nc"
grep -q 'groups' "$tmp/err" && ok ||
    { fail "--format 3: no word of the group limit"; cat "$tmp/err"; }
no_output "$tmp/f3.nc" "rasterconvert --format 3"

report test_scale
