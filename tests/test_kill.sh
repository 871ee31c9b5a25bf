#!/bin/sh
# A writer killed with SIGKILL at any moment (before its first record,
# between records, in the middle of one, with or without nc_sync after
# each) leaves a file that raster refuses with a clear message: rasterget
# and rasterstat exit 1 and write nothing, ncdump under the shim fails
# naming the missing completeness marker; or, when the writer died before
# raster had created anything, the shim gives exactly what netCDF gives.
# Never a crash, never data served from an unfinished file.
# usage: test_kill.sh SHIM BUILD_DIR   (env: NCDUMP, NCGEN)
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2
writer="$build/tests/record_writer"
rasterget="$build/tools/rasterget"
rasterstat="$build/tools/rasterstat"
use_shim "$shim"  # lib.sh: $preload, with the sanitizer runtime first

# a 40 x 50 mask with five regions, pure and mixed tiles
awk 'BEGIN { ny = 40; nx = 50
  print "netcdf m {\ndimensions: nlat = " ny " ; nlon = " nx " ;"
  print "variables: int REGION_MASK(nlat, nlon) ;\ndata:\n REGION_MASK ="
  for (y = 0; y < ny; y++) for (x = 0; x < nx; x++) {
    id = x < 20 ? 1 : x < 35 ? 2 : 0
    if (y > 30 && x > 10 && x < 25) id = -3
    if ((x + y) % 17 == 0) id = 4
    printf " %d%s", id, (y == ny - 1 && x == nx - 1) ? " ;\n}\n" : ","
  } }' > "$tmp/m.cdl"
"$NCGEN" -4 -o "$tmp/m.nc" "$tmp/m.cdl" || exit 1
export RASTER_MASK="$tmp/m.nc:REGION_MASK"
# records of a killed writer: far more than it writes before the last
# kill below (0.2 s at most). 2000 took 0.13 s on 2026-11-26 once small
# writes through the shim got faster, so a kill at 0.12 s found the writer
# inside nc_close, its marker set: a finished file, rightly served
nrec=20000

# a writer that finishes: its file is served (the control)
LD_PRELOAD="$preload" "$writer" "$tmp/m.nc" "$tmp/whole.nc" 20 1 > /dev/null || exit 1
expect 0 "rasterget of a finished file" \
    "$rasterget" "$tmp/whole.nc" --var TEMP --region 2 -o "$tmp/whole_r2.nc"

# refused FILE WHAT: every reader refuses FILE, or (no raster group yet)
# the shim behaves as netCDF
refused() {
    f=$1 label=$2
    rm -f "$tmp/out.nc"
    expect 1 "$label: rasterget" \
        "$rasterget" "$f" --var TEMP --region 1 -o "$tmp/out.nc"
    no_output "$tmp/out.nc" "$label: rasterget"
    expect 1 "$label: rasterstat" "$rasterstat" "$f"
    if ! on_disk "$NCDUMP" -h "$f" > "$tmp/plain_h" 2> /dev/null; then
        # netCDF cannot open it: neither can anything under the shim
        if LD_PRELOAD="$preload" "$NCDUMP" -v TEMP "$f" > /dev/null 2> "$tmp/err"; then
            fail "$label: ncdump under the shim opened a file netCDF cannot"
        else
            ok
        fi
        echo "  $label: not a readable netCDF file" >> "$tmp/kinds"
    elif grep -q 'group: raster_TEMP' "$tmp/plain_h"; then
        if LD_PRELOAD="$preload" "$NCDUMP" -v TEMP "$f" > "$tmp/dump" 2> "$tmp/err"; then
            fail "$label: ncdump under the shim served an unfinished raster file"
        elif grep -q 'completeness' "$tmp/err"; then
            ok
        else
            fail "$label: refused without naming the marker: $(cat "$tmp/err")"
        fi
        echo "  $label: readable, raster group present, refused" >> "$tmp/kinds"
    else
        on_disk "$NCDUMP" "$f" > "$tmp/d1" 2>&1
        s1=$?
        LD_PRELOAD="$preload" "$NCDUMP" "$f" > "$tmp/d2" 2>&1
        s2=$?
        if [ $s1 -eq $s2 ] && cmp -s "$tmp/d1" "$tmp/d2"; then ok; else
            fail "$label: no raster group, but the shim differs from netCDF"
        fi
        echo "  $label: readable, no raster group yet" >> "$tmp/kinds"
    fi
}

# kills at fixed moments spread over the run (about 0.2 s), then two at
# random ones; odd trials sync after every record (and two more below, at
# a point of the writing)
i=0
for delay in 0 0.003 0.01 0.02 0.04 0.06 0.09 0.12 0.16 \
             "0.$(awk 'BEGIN { srand(); printf "%03d", rand() * 200 }')" \
             "0.$(awk 'BEGIN { srand(); printf "%03d", 7 + rand() * 150 }')"; do
    i=$((i + 1))
    sync=$((i % 2))
    f="$tmp/killed$i.nc"
    LD_PRELOAD="$preload" "$writer" "$tmp/m.nc" "$f" $nrec $sync > "$tmp/w.out" &
    pid=$!
    sleep "$delay"
    kill -9 $pid 2> /dev/null
    { wait $pid; } 2> /dev/null
    status=$?
    # killed after closing the file (a fast machine): finished all the same
    if [ $status -eq 137 ] && grep -q closed "$tmp/w.out"; then status=0; fi
    if [ $status -eq 0 ]; then
        # finished before the kill: it must be served whole
        expect 0 "trial $i (finished before the kill): rasterget" \
            "$rasterget" "$f" --var TEMP --region 1 -o "$tmp/fin.nc"
        rm -f "$tmp/fin.nc"
        echo "  trial $i: finished before the kill" >> "$tmp/kinds"
    elif [ $status -eq 137 ]; then
        if [ -e "$f" ]; then
            refused "$f" "trial $i (killed after ${delay}s, sync $sync)"
        else
            echo "  trial $i: killed before creating the file" >> "$tmp/kinds"
            ok
        fi
    else
        fail "trial $i: writer ended with status $status"
    fi
    rm -f "$f"
done
# killed once the file holds records (64 KiB: 8 of them), whatever the
# machine's speed: beside a busy CPU or sanitized, the fixed moments above
# can all fall before the writer has created anything, and then nothing
# above is refused
grown() { [ -f "$1" ] && [ "$(wc -c < "$1")" -ge 65536 ]; }
for sync in 0 1; do
    i=$((i + 1))
    f="$tmp/killed$i.nc"
    LD_PRELOAD="$preload" "$writer" "$tmp/m.nc" "$f" $nrec $sync > "$tmp/w.out" &
    pid=$!
    n=0 # a writer that fails or stalls is not waited for past a minute
    while ! grown "$f" && [ $n -lt 12000 ]; do
        sleep 0.005
        n=$((n + 1))
    done
    kill -9 $pid 2> /dev/null
    { wait $pid; } 2> /dev/null
    status=$?
    if [ $status -eq 137 ] && grown "$f" && ! grep -q closed "$tmp/w.out"; then
        refused "$f" "trial $i (killed past 64 KiB, sync $sync)"
    else
        fail "trial $i: writer not killed while writing (status $status)"
    fi
    rm -f "$f"
done
cat "$tmp/kinds"
report kill
