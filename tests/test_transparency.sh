#!/bin/sh
# Issue #27, renames and transparency: a raster file stays readable after
# nc_rename_dim / nc_rename_var under the shim and after renames made
# without it (ncrename does what names_prog does here: netCDF's own
# calls); under the shim a program never meets raster's storage: it may
# create a group named like a storage group, full-name lookups into them
# fail as for groups that do not exist, and its dimension ids are those of
# the plain file (a netCDF-3 style loop over 0..ndims-1 after a dimension
# was added in append mode); a read raster refuses says why on stderr.
# Every check compares with the plain file treated the same way without
# the shim.
# usage: test_transparency.sh SHIM BUILD_DIR TESTS_DIR
#        (env: NCDUMP, NCGEN, NCCOPY, PRELOAD_FIRST for sanitized builds)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2 tests=$3
prog="$build/tests/names_prog"
rget="$build/tools/rasterget"
use_shim "$shim"  # lib.sh: under, with the sanitizer runtime first
# dump FILE: ncdump without the first line (the file name), plain / under
dump() { "$NCDUMP" "$1" | tail -n +2; }
dump_under() { under "$NCDUMP" "$1" | tail -n +2; }
# same A B DESC: files A and B have equal contents
same() { if cmp -s "$1" "$2"; then ok; else fail "$3"; diff "$1" "$2" | head -8; fi; }

# t(time, y, x) stored by region, its mask from the file itself
"$NCGEN" -4 -o "$tmp/plain.nc" "$tests/data/small_time_mask.cdl" || exit 1
RASTER_MASK="$tmp/plain.nc:mask" RASTER_CHUNK=1,2,2 \
    under "$NCCOPY" "$tmp/plain.nc" "$tmp/raster.nc" || exit 1
"$NCDUMP" -h "$tmp/raster.nc" | grep -q 'group: raster_t ' ||
    { fail "t not stored by region"; report transparency; exit 1; }
fresh() { cp "$tmp/raster.nc" "$tmp/$1.nc"; cp "$tmp/plain.nc" "$tmp/$1_plain.nc"; }

# R1-R2: renames under the shim; R3-R4: the same without it (ncrename)
for how in under plain; do
    for what in "rename-dim y lat" "rename-var t temp"; do
        set -- $what
        fresh ren
        if [ $how = under ]; then
            expect 0 "$1 under the shim" under "$prog" $1 "$tmp/ren.nc" $2 $3
        else
            expect 0 "$1 without the shim" "$prog" $1 "$tmp/ren.nc" $2 $3
        fi
        "$prog" $1 "$tmp/ren_plain.nc" $2 $3 || exit 1
        dump "$tmp/ren_plain.nc" > "$tmp/want.txt"
        dump_under "$tmp/ren.nc" > "$tmp/got.txt" 2> "$tmp/err"
        same "$tmp/want.txt" "$tmp/got.txt" "$1 ($how): ncdump under the shim differs from the plain file renamed"
        [ -s "$tmp/err" ] && fail "$1 ($how): ncdump said: $(cat "$tmp/err")"
        var=t; [ $1 = rename-var ] && var=$3
        expect 0 "rasterget after $1 ($how)" "$rget" "$tmp/ren.nc" --var $var --region 2 -o "$tmp/ren_get.nc"
        "$NCDUMP" "$tmp/ren_get.nc" | grep -q '6, 7,' && ok ||
            fail "rasterget after $1 ($how): region 2 not 6, 7"
    done
done

# G1: a group named like t's storage group: created as without the shim,
# and both the program's group and t read back
fresh grp
expect 0 "nc_def_grp raster_t under the shim" under "$prog" def-grp "$tmp/grp.nc" raster_t
"$prog" def-grp "$tmp/grp_plain.nc" raster_t || exit 1
dump "$tmp/grp_plain.nc" > "$tmp/want.txt"
dump_under "$tmp/grp.nc" > "$tmp/got.txt"
same "$tmp/want.txt" "$tmp/got.txt" "group raster_t: ncdump under the shim differs from the plain file"
grep -q 'mine = 7, 8, 9' "$tmp/got.txt" && ok || fail "group raster_t: its variable lost"

# G2: a variable of that name, then a group of the name raster moved to
fresh grp
under "$prog" def-var "$tmp/grp.nc" raster_t || fail "nc_def_var raster_t under the shim"
"$prog" def-var "$tmp/grp_plain.nc" raster_t || exit 1
under "$prog" def-grp "$tmp/grp.nc" raster_t_1 || fail "nc_def_grp raster_t_1 under the shim"
"$prog" def-grp "$tmp/grp_plain.nc" raster_t_1 || exit 1
dump "$tmp/grp_plain.nc" > "$tmp/want.txt"
dump_under "$tmp/grp.nc" > "$tmp/got.txt"
same "$tmp/want.txt" "$tmp/got.txt" "variable raster_t, group raster_t_1: ncdump under the shim differs from the plain file"

# L1: lookups into raster's groups fail as for groups that do not exist
for f in raster plain; do
    under "$prog" lookup "$tmp/$f.nc" raster_t raster_t/region_1 \
        raster_t/Mixed_Chunks /raster_t/region_m3 region_1 > "$tmp/look_$f.txt" ||
        fail "lookup in $f"
done
same "$tmp/look_plain.txt" "$tmp/look_raster.txt" "lookups into raster's groups differ from the plain file"

# D1: a dimension added in append mode, then every id 0..63 and the ids
# of variables: as in the plain file (raster's cells, chunk, ... never met)
fresh dim
under "$prog" add-dim "$tmp/dim.nc" extra 5 > "$tmp/got.txt" || fail "add-dim under the shim"
"$prog" add-dim "$tmp/dim_plain.nc" extra 5 > "$tmp/want.txt" || exit 1
same "$tmp/want.txt" "$tmp/got.txt" "the new dimension's id differs from the plain file's"
under "$prog" dims "$tmp/dim.nc" > "$tmp/got.txt" || fail "dims under the shim"
"$prog" dims "$tmp/dim_plain.nc" > "$tmp/want.txt" || exit 1
same "$tmp/want.txt" "$tmp/got.txt" "dimension ids under the shim differ from the plain file's"
dump "$tmp/dim_plain.nc" > "$tmp/want.txt"
dump_under "$tmp/dim.nc" > "$tmp/got.txt"
same "$tmp/want.txt" "$tmp/got.txt" "ncdump after add-dim differs from the plain file"
# and a dimension renamed by its shim id after that
under "$prog" rename-dim "$tmp/dim.nc" extra more || fail "rename after add-dim"
"$prog" rename-dim "$tmp/dim_plain.nc" extra more || exit 1
under "$prog" dims "$tmp/dim.nc" > "$tmp/got.txt"
"$prog" dims "$tmp/dim_plain.nc" > "$tmp/want.txt"
same "$tmp/want.txt" "$tmp/got.txt" "dimension ids after a rename differ"

# C1: damage found when a read first uses it (a chunks table offset):
# ncdump fails, and raster's reason is on stderr at the default level
fresh bad
"$prog" poke "$tmp/bad.nc" raster_t chunks 0 6 99 || exit 1
expect 1 "ncdump of a damaged raster file" under "$NCDUMP" "$tmp/bad.nc"
grep -q "^raster: reading t: not a raster file or corrupt raster file: .*chunks" "$tmp/err" && ok ||
    fail "no raster message for the refused read: $(cat "$tmp/err")"

report transparency
