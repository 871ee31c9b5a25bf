#!/bin/sh
# A full disk under the shim: an unmodified writer gets the netCDF status
# it gets without the shim (same call failing with the same code, same exit
# status; HDF5 1.10 may even crash at exit after a failed nc_close, with or
# without the shim), ordinary variables keep what netCDF wrote, and the
# unfinished raster file is refused by every raster reader, never served.
# The disk is a 3 MiB tmpfs (we run as root), else RLIMIT_FSIZE (ulimit -f,
# SIGXFSZ ignored: writes fail with EFBIG).
# usage: test_diskfull.sh SHIM BUILD_DIR   (env: NCDUMP, NCGEN)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2
writer="$build/tests/record_writer"
rasterget="$build/tools/rasterget"
use_shim "$shim"  # lib.sh: $preload, with the sanitizer runtime first
small="$tmp/small"
mkdir "$small" || exit 1
how="RLIMIT_FSIZE"
if mount -t tmpfs -o size=3m raster-test "$small" 2> /dev/null; then
    how="a 3 MiB tmpfs"
    trap 'umount "$small" 2>/dev/null; cleanup' EXIT
fi
echo "full disk: $how"

awk 'BEGIN { ny = 40; nx = 50
  print "netcdf m {\ndimensions: nlat = " ny " ; nlon = " nx " ;"
  print "variables: int REGION_MASK(nlat, nlon) ;\ndata:\n REGION_MASK ="
  for (y = 0; y < ny; y++) for (x = 0; x < nx; x++) {
    id = x < 20 ? 1 : x < 35 ? 2 : 0
    if ((x + y) % 17 == 0) id = 4
    printf " %d%s", id, (y == ny - 1 && x == nx - 1) ? " ;\n}\n" : ","
  } }' > "$tmp/m.cdl"
"$NCGEN" -4 -o "$tmp/m.nc" "$tmp/m.cdl" || exit 1

# write OUT SYNC [env...]: record_writer filling the disk; status in $st,
# its stderr in $tmp/err_OUT
write() {
    out=$1 sync=$2
    shift 2
    rm -f "$small"/*
    ( (
        trap '' XFSZ
        [ "$how" = RLIMIT_FSIZE ] && ulimit -f 6000
        # HDF5's own crash at exit after the failed close stays a plain
        # SIGSEGV in the sanitized build too (no report of varying addresses)
        exec env "$@" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" \
            "$writer" "$tmp/m.nc" "$small/$out" 2000 "$sync" \
            2> "$tmp/err_$out"
    ) ) 2> /dev/null # the shell's "Segmentation fault" of HDF5's exit crash
    st=$?
}
# code FILE: the netCDF status record_writer printed ("[-101]")
code() { sed -n 's/^record_writer: .*\[\(-[0-9]*\)\]$/\1/p' "$1" | head -n 1; }
call() { sed -n 's/^record_writer: \([a-z_0-9]*\)(.*/\1/p' "$1" | head -n 1; }

for sync in 1 0; do
    write plain.nc $sync -u LD_PRELOAD # the baseline: never under the shim
    plain_st=$st plain_code=$(code "$tmp/err_plain.nc") plain_call=$(call "$tmp/err_plain.nc")
    [ -n "$plain_code" ] && ok || fail "sync $sync: the plain writer did not fail: $(cat "$tmp/err_plain.nc")"
    plain_time=
    on_disk "$NCDUMP" -v time "$small/plain.nc" > "$tmp/pt" 2> /dev/null && plain_time=yes
    write raster.nc $sync RASTER_MASK="$tmp/m.nc:REGION_MASK" LD_PRELOAD="$preload"
    raster_code=$(code "$tmp/err_raster.nc") raster_call=$(call "$tmp/err_raster.nc")
    echo "sync $sync: without the shim $plain_call -> $plain_code (exit $plain_st); with it $raster_call -> $raster_code (exit $st)"
    # HDF5 1.10's crash at exit after a failed nc_close (139) depends on
    # what the file held; exiting 1 after the same failure is no worse
    if [ "$st" = "$plain_st" ] || { [ "$plain_st" = 139 ] && [ "$st" = 1 ]; }; then
        ok
    else
        fail "sync $sync: exit $st under the shim, $plain_st without"
    fi
    [ "$raster_code" = "$plain_code" ] && ok ||
        fail "sync $sync: netCDF status $raster_code under the shim, $plain_code without: $(cat "$tmp/err_raster.nc")"
    [ "$raster_call" = "$plain_call" ] && ok ||
        fail "sync $sync: $raster_call failed under the shim, $plain_call without"
    if [ -e "$small/raster.nc" ]; then
        # never served by raster
        expect 1 "sync $sync: rasterget of the file of a full disk" \
            "$rasterget" "$small/raster.nc" --var TEMP --region 1 -o "$tmp/o.nc"
        if on_disk "$NCDUMP" -h "$small/raster.nc" > /dev/null 2>&1; then
            if LD_PRELOAD="$preload" "$NCDUMP" -v TEMP "$small/raster.nc" > /dev/null 2>&1; then
                fail "sync $sync: ncdump under the shim served TEMP of an unfinished file"
            else
                ok
            fi
            # the ordinary variable holds what netCDF wrote: 0, 1, 2, ...
            if [ -n "$plain_time" ]; then
                on_disk "$NCDUMP" -v time "$small/raster.nc" > "$tmp/rt" 2>&1 || fail "time unreadable"
                sed -n '/^ time = /,/;/p' "$tmp/rt" | tr -d ' \n;' | sed 's/^time=//' | tr ',' '\n' |
                    awk '$1 != NR - 1 { bad = 1 } END { exit bad || NR == 0 }' && ok ||
                    fail "sync $sync: time is not 0, 1, 2, ... under the shim"
            fi
        fi
    fi
done
report diskfull
