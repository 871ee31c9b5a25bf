#!/bin/sh
# The installed tree works on its own (issue #24): `meson install --destdir`,
# then
#  - the tools run from DESTDIR/prefix/bin without LD_LIBRARY_PATH (their
#    rpath finds libraster), and make a raster file (rastergen,
#    rasterconvert);
#  - examples/region_reader.c builds with `pkg-config --cflags --libs
#    raster` against the installed header and library, and its region
#    means equal those computed from the plain file by ncdump and awk;
#  - raster_mpi.pc, when the MPI flavour is installed, gives a parallel
#    program (tests/test_par_read.c) that compiles and links;
#  - the installed shim finds its core and libraster beside it and reads
#    the raster file through ncdump as the plain file reads.
# usage: test_install.sh MESON BUILD_DIR SOURCE_DIR PREFIX LIBDIR BINDIR
#   (LIBDIR, BINDIR absolute; env: CC, SAN_CFLAGS (the sanitizer flags of a
#   sanitized build, given to the example too), NCDUMP, PRELOAD_FIRST)
set -u
meson=$1 build=$2 src=$3 prefix=$4 libdir=$5 bindir=$6
. "$(dirname "$0")/lib.sh"
unset LD_LIBRARY_PATH
dest=$tmp/dest

if ! "$meson" install -C "$build" --destdir "$dest" --no-rebuild --quiet \
        > "$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: meson install"
    exit 1
fi
bin=$dest$bindir lib=$dest$libdir

# the tools, from the prefix
for t in rasterstat rasterget rasterconvert rastergen rasterbench; do
    expect 0 "$t --help from the prefix" "$bin/$t" --help
done
if ldd "$bin/rasterstat" | grep 'libraster\.so' | grep -q -F "$dest/"; then
    ok
else
    fail "rasterstat's libraster is not the installed one:"
    ldd "$bin/rasterstat" | grep raster
fi

mask=$src/datasets/masks/pop_basins_384x320.nc:REGION_MASK
expect 0 "installed rastergen" "$bin/rastergen" --kind cesm --mask "$mask" \
    --size tiny "$tmp/in.nc"
expect 0 "installed rasterconvert" "$bin/rasterconvert" \
    --mask "$tmp/in.nc:REGION_MASK" "$tmp/in.nc" "$tmp/r.nc"
[ -s "$tmp/r.nc" ] || { fail "no raster file"; report install; exit 1; }

# raster.pc as installed, its prefix moved to where DESTDIR put it (what a
# relocated tree needs; --define-variable would move the prefix of the
# netCDF and MPI .pc files too)
mkdir -p "$tmp/pc"
for pc in "$lib"/pkgconfig/raster*.pc; do
    sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" > "$tmp/pc/${pc##*/}"
done
export PKG_CONFIG_PATH="$tmp/pc"
if ! flags=$(pkg-config --cflags --libs raster); then
    fail "pkg-config raster"; report install; exit 1
fi
case $flags in
    *"-I$dest"*"-L$dest"*) ok ;;
    *) fail "pkg-config raster does not point into the install: $flags" ;;
esac
[ -f "$dest$prefix/include/raster_version.h" ] && ok ||
    fail "raster_version.h not installed beside raster.h"
# issue 40: the internal header stays home, and libraster.so exports what
# raster.h declares plus the calls raster_internal.h names for the shim
# and rasterbench, nothing else
[ ! -e "$dest$prefix/include/raster_internal.h" ] && ok ||
    fail "raster_internal.h installed"
sed -n 's/^RASTER_API[^(]*[ *]\([a-z_0-9]*\)(.*/\1/p' \
    "$dest$prefix/include/raster.h" "$src/include/raster_internal.h" |
    sort > "$tmp/declared"
so=$(ls "$lib"/libraster.so.*.*.* 2> /dev/null | head -1)
if [ -n "$so" ] && nm -D --defined-only "$so" | awk '$3 ~ /^raster_/ {print $3}' |
        sort > "$tmp/exported" && [ -s "$tmp/exported" ]; then
    # (the serial library leaves raster.h's MPI calls out)
    extra=$(comm -13 "$tmp/declared" "$tmp/exported")
    [ -z "$extra" ] && ok ||
        fail "libraster.so exports more than its headers declare: $extra"
    grep -qx raster_attach_view "$tmp/exported" &&
        grep -qx raster_region_read "$tmp/exported" && ok ||
        fail "libraster.so lacks raster_attach_view or raster_region_read"
else
    fail "no installed libraster.so.X.Y.Z to list"
fi
# shellcheck disable=SC2086
if ${CC:-cc} -std=c11 ${SAN_CFLAGS:-} -o "$tmp/region_reader" \
        "$src/examples/region_reader.c" $flags 2> "$tmp/cc.err"; then
    ok
else
    fail "building region_reader with pkg-config raster"; cat "$tmp/cc.err"
    report install; exit 1
fi

# mean_of REGION: the mean of TEMP over the cells of REGION_MASK == REGION
# and the count, from the plain file ("CELLS RECORDS MEAN")
"$NCDUMP" -p 9,17 -v REGION_MASK,TEMP "$tmp/in.nc" > "$tmp/dump" ||
    fail "ncdump"
mean_of() {
    awk -v want="$1" '
        /^data:/ { data = 1; next }
        !data { next }
        /^ *[a-zA-Z_]+ =/ { var = "" }
        /^ *REGION_MASK =/ { var = "m"; sub(/^[^=]*=/, "") }
        /^ *TEMP =/ { var = "t"; sub(/^[^=]*=/, "") }
        var != "" {
            gsub(/[;,]/, " ")
            for (i = 1; i <= NF; i++) {
                if (var == "m") { mask[nm++] = $i }
                else { if (mask[nt % nm] == want) { cells++; if ($i != "_") { s += $i; n++ } } nt++ }
            }
        }
        END {
            per = 0
            for (c = 0; c < nm; c++) if (mask[c] == want) per++
            printf "%d %d %.6f\n", per, per ? cells / per : 0, n ? s / n : 0
        }' "$tmp/dump"
}
for region in 6 Atlantic_Ocean -5 2; do
    id=$region
    [ "$region" = Atlantic_Ocean ] && id=6
    set -- $(mean_of "$id")
    cells=$1 records=$2 mean=$3
    if ! LD_LIBRARY_PATH=$lib "$tmp/region_reader" "$tmp/r.nc" TEMP "$region" \
            > "$tmp/out" 2> "$tmp/err"; then
        fail "region_reader region $region: $(cat "$tmp/err")"
        continue
    fi
    # "TEMP region 6: 12107 cells x 6 records, mean 7.783221"
    set -- $(sed 's/[:,]//g' "$tmp/out")
    if [ "$3" != "$id" ] || [ "$4" != "$cells" ] || [ "$7" != "$records" ] ||
       ! awk -v a="${10}" -v b="$mean" 'BEGIN {
            d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (b < 0 ? -b : b) + 1e-6) }'; then
        fail "region $region: region_reader says '$(cat "$tmp/out")'," \
            "the plain file $cells cells x $records records, mean $mean"
    else
        ok
    fi
done
[ "$cells" -gt 0 ] || fail "region 2 has no cells: the check proves nothing"

# the MPI flavour's .pc compiles and links a parallel program
if [ -f "$tmp/pc/raster_mpi.pc" ]; then
    # shellcheck disable=SC2046
    if ${CC:-cc} -std=c11 -D_GNU_SOURCE ${SAN_CFLAGS:-} -o "$tmp/par_read" \
            "$src/tests/test_par_read.c" \
            $(pkg-config --cflags --libs raster_mpi) 2> "$tmp/cc.err"; then
        ok
    else
        fail "building test_par_read with pkg-config raster_mpi"
        cat "$tmp/cc.err"
    fi
fi

# the installed shim loads its core and libraster from beside it (a
# sanitized shim after the sanitizer runtime, PRELOAD_FIRST, as in
# test_integrity.sh)
"$NCDUMP" -v TEMP "$tmp/r.nc" > /dev/null 2>&1 &&
    fail "ncdump without the shim read the placeholder"
LD_PRELOAD="${PRELOAD_FIRST:+$PRELOAD_FIRST }$lib/libraster_preload.so" \
    "$NCDUMP" -v TEMP "$tmp/r.nc" > "$tmp/shim.out" 2> "$tmp/shim.err" ||
    fail "ncdump under the installed shim: $(head -3 "$tmp/shim.err")"
# (rasterconvert added a line to the history)
"$NCDUMP" -v TEMP "$tmp/in.nc" | tail -n +2 | grep -v ':history = ' > "$tmp/plain.out"
tail -n +2 "$tmp/shim.out" | grep -v ':history = ' | cmp -s - "$tmp/plain.out" && ok ||
    fail "ncdump under the installed shim differs from the plain file"
# a man page for every tool, made from its --help, and bash completion
# (issue 26)
for t in rasterstat rasterget rasterconvert rastergen rasterbench; do
    page=$dest$MANDIR/man1/$t.1
    T=$(echo "$t" | tr a-z A-Z)
    if [ -f "$page" ] && head -n 1 "$page" | grep -q "^\.TH $T 1 " &&
       grep -q -F "$t \\- " "$page"; then ok; else fail "$t: man page $page"; fi
    # every option of --help is in the page (hyphens as roff's \-)
    for opt in $("$bin/$t" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
        grep -q -F -- "$(echo "$opt" | sed 's/-/\\-/g')" "$page" ||
            fail "$t: man page lacks $opt"
    done
    [ -f "$dest$DATADIR/bash-completion/completions/$t" ] && ok ||
        fail "$t: no bash completion installed"
done
# rasterbench --peers finds its companion in the prefix's share/raster
[ -f "$dest$DATADIR/raster/bench_peers.py" ] && ok ||
    fail "bench_peers.py not installed in share/raster"
# complete_words WORD...: what the installed completion offers for the last
# word of the command line WORD...
complete_words() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
             _raster_tool; printf "%s\n" "${COMPREPLY[@]}"' \
        sh "$dest$DATADIR/bash-completion/completions/rasterget" "$@"
}
got=$(complete_words "$bin/rasterget" --lay)
[ "$got" = --layout ] && ok || fail "completion of --lay: $got"
got=$(complete_words "$bin/rasterget" --layout b)
[ "$got" = bbox ] && ok || fail "completion of --layout b: $got"
got=$(complete_words "$bin/rastergen" --kind "")
[ "$got" = "$(printf 'cesm\nwrf')" ] && ok || fail "completion of --kind: $got"

report install
