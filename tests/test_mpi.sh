#!/bin/sh
# Parallel raster (MPI) with real programs under mpirun, 1, 2 and 4 ranks,
# results compared exactly with plain parallel netCDF and the serial path.
# usage: test_mpi.sh write|write2|read|bad SHIM_MPI SHIM BUILD_DIR MASK_DIR
#        (env: MPIRUN, NCDUMP, PRELOAD_FIRST for sanitized builds)
#   write  par_writer (nc_create_par, every rank its block: rows, 2-D
#          blocks, uneven, idle ranks; collective and independent access;
#          RASTER_MPIIO auto/collective/independent) under the MPI shim:
#          the file reads back (serial shim, ncdump) exactly as the plain
#          parallel file; format 5 (RASTER_FORMAT=5) too, and then also
#          without raster
#   write2 independent access; rasterbench_mpi --write (the library API);
#          rasterbench_mpi --pio (ParallelIO's NETCDF4C and NETCDF4P calls,
#          imitated; by the library and through the MPI shim) and
#          test_par_small (small collective writes held
#          back, in order with every other write), np 2
#   read   raster_region_read_par split by records and by regions, every
#          value compared with the plain file (test_par_read), formats 3
#          and 5
#   bad    a rank that cannot read the mask, ranks with other chunk shapes
#          or another mask: every rank writes plain netCDF, one warning
set -u
. "$(dirname "$0")/lib.sh"
mode=$1 shim_mpi=$2 shim=$3 build=$4 masks=$5
if [ -z "${MPIRUN:-}" ] || ! [ -x "$build/examples/par_writer" ]; then
    echo "SKIP: no MPI flavour or no mpirun"
    exit 77
fi
if [ -n "${PRELOAD_FIRST:-}" ]; then
    # the sanitized MPI flavour runs here too, with AddressSanitizer and
    # UBSan checking every access; LeakSanitizer is off for these programs
    # only: OpenMPI's components (dlopened, unloaded at MPI_Finalize) leave
    # allocations whose stacks cannot even be attributed, so no suppression
    # list can tell them from ours. raster's own leaks are checked by the
    # serial tests of the same code.
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    preload_mpi="$PRELOAD_FIRST $shim_mpi"
    preload_ser="$PRELOAD_FIRST $shim"
else
    preload_mpi=$shim_mpi preload_ser=$shim
fi
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# a sandbox may lack the network transports: shared memory is enough here
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
basins="$masks/pop_basins_384x320.nc"
ex="$build/examples"
mask="$basins:REGION_MASK"
# run NP CMD...: mpirun -np NP with the MPI shim and the mask exported
run() {
    np=$1; shift
    "$MPIRUN" --oversubscribe -np "$np" -x LD_PRELOAD="$preload_mpi" \
        -x RASTER_MASK="$mask" -x RASTER_MPIIO="${RASTER_MPIIO:-auto}" \
        -x ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$@"
}
plain_run() { np=$1; shift; "$MPIRUN" --oversubscribe -np "$np" "$@"; }
dump_plain() { "$NCDUMP" "$1" | tail -n +2; }
dump_raster() { LD_PRELOAD="$preload_ser" "$NCDUMP" "$1" | tail -n +2; }
# format 5 read without raster: the data as the plain file's, the storage
# groups (printed last) and the variables' raster_note aside
dump_foreign() {
    "$NCDUMP" "$1" | tail -n +2 | sed '/^group: raster_/,$d' |
        grep -v -e 'raster_note = ' -e '^}$' -e '^$'
}
same_foreign() {
    grep -v -e '^}$' -e '^$' "$1" > "$tmp/pf.txt"
    dump_foreign "$2" > "$tmp/rf5.txt"
    same "$tmp/pf.txt" "$tmp/rf5.txt" "$3"
}
same() { if cmp -s "$1" "$2"; then ok; else fail "$3"; diff "$1" "$2" | head -5; fi; }
stored() {
    if "$NCDUMP" -h "$1" | grep -q "group: raster_TEMP"; then ok
    else fail "$2: TEMP not stored by region"; fi
}
args="--ntime 2 --ndepth 3"

case $mode in
write)
    plain_run 2 "$ex/par_writer" "$basins" "$tmp/plain.nc" $args || exit 1
    dump_plain "$tmp/plain.nc" > "$tmp/plain.txt"
    # every decomposition at 2 ranks, a few at 1 and 4 (4 ranks share 2
    # cores here: slow), each RASTER_MPIIO choice at least once
    cases="1:rows:auto 2:rows:collective 2:blocks:auto 2:uneven:independent
           2:idle:auto 4:blocks:independent 4:uneven:collective 4:idle:auto"
    # sanitized programs run several times slower: fewer cases, each
    # RASTER_MPIIO choice and 1, 2 and 4 ranks still
    [ -n "${PRELOAD_FIRST:-}" ] &&
        cases="1:rows:auto 2:blocks:collective 2:uneven:independent 4:idle:auto"
    for c in $cases; do
        np=${c%%:*} d=${c#*:} io=${d#*:} d=${d%:*}
        {
            RASTER_MPIIO=$io expect 0 "np $np $d ($io)" \
                run $np "$ex/par_writer" "$basins" "$tmp/r.nc" --decomp $d $args
            [ -s "$tmp/err" ] && fail "np $np $d: $(head -3 "$tmp/err")"
            stored "$tmp/r.nc" "np $np $d"
            dump_raster "$tmp/r.nc" > "$tmp/r.txt"
            same "$tmp/plain.txt" "$tmp/r.txt" "np $np $d ($io) reads differently"
        }
    done
    # format 5: the ranks write the variable itself (HDF5 places its
    # chunks); it reads as the plain file's with raster and without
    cases="1:rows:auto 2:blocks:collective 2:uneven:independent 4:idle:auto"
    [ -n "${PRELOAD_FIRST:-}" ] && cases="2:blocks:collective 4:idle:auto"
    for c in $cases; do
        np=${c%%:*} d=${c#*:} io=${d#*:} d=${d%:*}
        RASTER_MPIIO=$io expect 0 "format 5 np $np $d ($io)" \
            run $np -x RASTER_FORMAT=5 "$ex/par_writer" "$basins" "$tmp/r5.nc" \
            --decomp $d $args
        [ -s "$tmp/err" ] && fail "format 5 np $np $d: $(head -3 "$tmp/err")"
        if "$NCDUMP" -h "$tmp/r5.nc" | grep -q "raster_format_version = 5 "
        then ok; else fail "format 5 np $np $d: not format 5"; fi
        dump_raster "$tmp/r5.nc" > "$tmp/r.txt"
        same "$tmp/plain.txt" "$tmp/r.txt" "format 5 np $np $d reads differently"
        same_foreign "$tmp/plain.txt" "$tmp/r5.nc" \
            "format 5 np $np $d reads differently without raster"
    done
    ;;
write2)
    # independent access (time fixed: independent writes cannot extend)
    plain_run 2 "$ex/par_writer" "$basins" "$tmp/plainf.nc" $args --fixed-time \
        --access independent || exit 1
    dump_plain "$tmp/plainf.nc" > "$tmp/plainf.txt"
    for np in 2 4; do
        expect 0 "independent np $np" run $np "$ex/par_writer" "$basins" \
            "$tmp/rf.nc" --decomp blocks $args --fixed-time --access independent
        stored "$tmp/rf.nc" "independent np $np"
        dump_raster "$tmp/rf.nc" > "$tmp/rf.txt"
        same "$tmp/plainf.txt" "$tmp/rf.txt" "independent np $np reads differently"
    done
    # format 5, independent access: the program's own writes
    expect 0 "RASTER_FORMAT=5 independent np 2" run 2 -x RASTER_FORMAT=5 \
        "$ex/par_writer" "$basins" "$tmp/r5.nc" --decomp blocks $args \
        --fixed-time --access independent
    if "$NCDUMP" -h "$tmp/r5.nc" | grep -q "raster_format_version = 5 "; then ok
    else fail "RASTER_FORMAT=5 in parallel: not format 5"; fi
    dump_raster "$tmp/r5.nc" > "$tmp/r5.txt"
    same "$tmp/plainf.txt" "$tmp/r5.txt" "RASTER_FORMAT=5 np 2 reads differently"
    same_foreign "$tmp/plainf.txt" "$tmp/r5.nc" \
        "RASTER_FORMAT=5 np 2 reads differently without raster"
    # the library API (raster_create_par, raster_var_put_typed)
    expect 0 "rasterbench_mpi --write" plain_run 2 "$build/tools/rasterbench_mpi" \
        --write --mask "$mask" --dir "$tmp" --ntime 2 --ndepth 2 --reps 1
    dump_plain "$tmp/bench_plain.nc" > "$tmp/bp.txt"
    dump_raster "$tmp/bench_raster.nc" > "$tmp/br.txt"
    same "$tmp/bp.txt" "$tmp/br.txt" "API-written raster file reads differently"
    # ParallelIO's call sequences (one call per strip-row), both I/O types
    expect 0 "rasterbench_mpi --pio" plain_run 2 "$build/tools/rasterbench_mpi" \
        --pio --mask "$mask" --dir "$tmp" --ntime 2 --ndepth 2 --reps 1 \
        --json "$tmp/pio.json"
    grep -q '"pio_write_ratio"' "$tmp/pio.json" && ok || fail "--pio JSON"
    for t in nc4c nc4p; do
        dump_plain "$tmp/pio_${t}_plain.nc" > "$tmp/pp.txt"
        dump_raster "$tmp/pio_${t}_raster.nc" > "$tmp/pr.txt"
        stored "$tmp/pio_${t}_raster.nc" "--pio $t"
        same "$tmp/pp.txt" "$tmp/pr.txt" "--pio $t: raster file reads differently"
    done
    # the same calls through the MPI shim (--netcdf-only), against a run
    # without it
    mkdir -p "$tmp/pp" "$tmp/ps"
    expect 0 "--pio --netcdf-only" plain_run 2 "$build/tools/rasterbench_mpi" \
        --pio --netcdf-only --mask "$mask" --dir "$tmp/pp" --ntime 2 \
        --ndepth 2 --reps 1 --json "$tmp/pp.json"
    expect 0 "--pio --netcdf-only under the shim" run 2 \
        "$build/tools/rasterbench_mpi" --pio --netcdf-only --baseline \
        "$tmp/pp.json" --mask "$mask" --dir "$tmp/ps" --ntime 2 --ndepth 2 \
        --reps 1 --json "$tmp/ps.json"
    grep -q '"pio_write_ratio"' "$tmp/ps.json" && ok || fail "--baseline JSON"
    for t in nc4c nc4p; do
        stored "$tmp/ps/pio_${t}_plain.nc" "--pio $t under the shim"
        dump_plain "$tmp/pp/pio_${t}_plain.nc" > "$tmp/pp.txt"
        dump_raster "$tmp/ps/pio_${t}_plain.nc" > "$tmp/pr.txt"
        same "$tmp/pp.txt" "$tmp/pr.txt" "--pio $t under the shim reads differently"
    done
    # held-back writes against every other write, value by value
    for np in 1 2; do
        expect 0 "small collective writes, np $np" plain_run $np \
            "$build/tests/test_par_small" "$basins" "$tmp"
    done
    ;;
read)
    plain_run 2 "$ex/par_writer" "$basins" "$tmp/plain.nc" $args || exit 1
    run 2 "$ex/par_writer" "$basins" "$tmp/r.nc" --decomp blocks $args || exit 1
    for np in 1 2 4; do
        expect 0 "parallel region reads, np $np" plain_run $np \
            "$build/tests/test_par_read" "$tmp/r.nc" "$tmp/plain.nc" TEMP SALT SSH
    done
    # format 5 written in parallel, read in parallel
    run 2 -x RASTER_FORMAT=5 "$ex/par_writer" "$basins" "$tmp/r5.nc" \
        --decomp rows $args || exit 1
    for np in 1 2; do
        expect 0 "format 5 parallel region reads, np $np" plain_run $np \
            "$build/tests/test_par_read" "$tmp/r5.nc" "$tmp/plain.nc" TEMP SALT SSH
    done
    expect 0 "rasterbench_mpi reads" plain_run 2 "$build/tools/rasterbench_mpi" \
        --raster "$tmp/r.nc" --var TEMP --case 2 --case 2+6 --reps 2 \
        --split regions --json "$tmp/b.json"
    grep -q '"agg_MBps"' "$tmp/b.json" && ok || fail "rasterbench_mpi JSON"
    ;;
bad)
    plain_run 2 "$ex/par_writer" "$basins" "$tmp/plain.nc" $args || exit 1
    dump_plain "$tmp/plain.nc" > "$tmp/plain.txt"
    # check DESC: the last run wrote plain netCDF, with one warning
    check() {
        if "$NCDUMP" -h "$tmp/r.nc" | grep -q "group: raster_"; then
            fail "$1: some variable stored by region"
        else ok; fi
        n=$(grep -c 'raster:' "$tmp/err")
        [ "$n" = 1 ] && ok || { fail "$1: $n warnings, wanted 1"; cat "$tmp/err"; }
        dump_plain "$tmp/r.nc" > "$tmp/r.txt"
        same "$tmp/plain.txt" "$tmp/r.txt" "$1: data differ"
    }
    # each rank's own environment through env(1): $preload_mpi may hold
    # two paths, which mpirun's -x NAME=VALUE would split (-x NAME passes
    # the variable whole)
    w="$ex/par_writer $basins $tmp/r.nc $args"
    # two ranks in one app context, rank 1 with its own RASTER_MASK and
    # RASTER_CHUNK: OpenMPI 5.0.7's mpirun (Debian trixie) crashes on any
    # MPMD (A : B) launch (open-mpi/ompi#13303)
    split_run() {
        R1_MASK=$1 R1_CHUNK=$2 P=$preload_mpi M=$mask \
        "$MPIRUN" --oversubscribe -np 2 -x R1_MASK -x R1_CHUNK -x P -x M \
            sh -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then M=$R1_MASK
                       [ -n "$R1_CHUNK" ] && export RASTER_CHUNK="$R1_CHUNK"; fi
                   exec env LD_PRELOAD="$P" RASTER_MASK="$M" "$@"' sh $w
    }
    # rank 1 cannot read the mask file
    expect 0 "unreadable mask on one rank" \
        split_run "$tmp/missing.nc:REGION_MASK" ""
    check "unreadable mask"
    # chunk shapes differ
    expect 0 "other chunk shapes" split_run "$mask" 25,25
    check "chunk shapes"
    # masks differ: the same grid, another mask (the mask itself, shifted)
    "$NCDUMP" "$basins" | sed '/ REGION_MASK =/{n;s/-*[0-9][0-9]*/9/;}' \
        > "$tmp/other.cdl"
    if "${NCGEN:-ncgen}" -4 -o "$tmp/other.nc" "$tmp/other.cdl" 2>/dev/null &&
       ! cmp -s "$basins" "$tmp/other.nc"; then
        expect 0 "other masks" split_run "$tmp/other.nc:REGION_MASK" ""
        check "masks"
    fi
    # TEMP deflated (issue #23): HDF5 writes filtered datasets only
    # collectively, so raster keeps TEMP plain netCDF with its filter and
    # says so once; SALT and SSH are still stored by region
    plain_run 2 "$ex/par_writer" "$basins" "$tmp/plainz.nc" $args \
        --deflate 1 || exit 1
    dump_plain "$tmp/plainz.nc" > "$tmp/plainz.txt"
    expect 0 "deflated TEMP, np 2" run 2 "$ex/par_writer" "$basins" \
        "$tmp/rz.nc" --decomp blocks $args --deflate 1
    n=$(grep -c 'raster:' "$tmp/err")
    if [ "$n" = 1 ] && grep -q 'TEMP' "$tmp/err"; then ok; else
        fail "deflated TEMP: $n warnings, wanted 1 naming TEMP"; cat "$tmp/err"; fi
    "$NCDUMP" -h "$tmp/rz.nc" > "$tmp/rz.h"
    if grep -q 'group: raster_TEMP' "$tmp/rz.h"; then
        fail "deflated TEMP stored by region"; else ok; fi
    grep -q 'group: raster_SALT' "$tmp/rz.h" && ok ||
        fail "deflated TEMP: SALT no longer stored by region"
    "$NCDUMP" -hs "$tmp/rz.nc" | grep -q 'TEMP:_DeflateLevel = 1' && ok ||
        fail "deflated TEMP lost its deflate filter"
    dump_raster "$tmp/rz.nc" > "$tmp/rz.txt"
    same "$tmp/plainz.txt" "$tmp/rz.txt" "deflated TEMP: data differ"
    ;;
esac
report "mpi_$mode"
