#!/bin/sh
# Safe raster files (issue #21): a program without raster never reads a
# placeholder's fill values as data and never writes to it. Each reader and
# writer people have is tried on a raster file without the shim (it must
# refuse the raster variable and serve the rest) and under it (the plain
# file's values, exactly).
# usage: test_safe_files.sh SHIM BUILD_DIR
#   (env: NCGEN, NCDUMP, NCCOPY, PYTHON, PRELOAD_FIRST)
# The PyPI wheels (netCDF4, h5py, h5netcdf, xarray) live in a venv made once
# under BUILD_DIR/safe-venv; without network or pip the Python part is
# skipped, the netCDF-C part still runs.
set -u
. "$(dirname "$0")/lib.sh"
shim=$1 build=$2
use_shim "$shim"  # lib.sh: under, with the sanitizer runtime first
NCCOPY=${NCCOPY:-nccopy}

# ---- the files: a plain one, and its copy with TEMP stored by region ------
cat > "$tmp/plain.cdl" <<'CDL'
netcdf plain {
dimensions:
    time = UNLIMITED ; z = 2 ; y = 6 ; x = 8 ;
variables:
    double time(time) ;
        time:units = "days since 2000-01-01" ;
    float lat(y, x) ;
        lat:units = "degrees_north" ;
    float TEMP(time, z, y, x) ;
        TEMP:units = "degC" ;
        TEMP:_FillValue = -99.f ;
    int region(y, x) ;
data:
 time = 0, 1, 2 ;
 lat = 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
       4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5 ;
 region = 1, 1, 1, 2, 2, 2, 3, 3, 1, 1, 2, 2, 2, 3, 3, 3,
          1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 3, 3,
          4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0 ;
}
CDL
"$NCGEN" -4 -o "$tmp/plain.nc" "$tmp/plain.cdl" || { fail "ncgen"; report safe_files; exit 1; }
# TEMP's values: 3 records of 2 x 6 x 8, one of them left unwritten (fill)
need_python
"$PY" - "$tmp/plain.nc" <<'PY' || fail "writing TEMP"
import sys, netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "a")
v = np.arange(3 * 2 * 6 * 8, dtype="f4").reshape(3, 2, 6, 8) * 0.5 - 40
v[1, 0, 2, 3] = -99.0
d["TEMP"][:] = v
d.close()
PY
RASTER_MASK="$tmp/plain.nc:region" RASTER_CHUNK=3,4 expect 0 \
    "nccopy under the shim stores TEMP by region" under "$NCCOPY" "$tmp/plain.nc" "$tmp/r.nc"
"$NCDUMP" -h "$tmp/r.nc" | grep -q 'group: raster_TEMP' && ok || fail "TEMP not stored by region"

# ---- netCDF-C without raster ------------------------------------------------
# ncdump: the header, then the plain variables, then an error at TEMP
expect 1 "ncdump without raster refuses TEMP" "$NCDUMP" "$tmp/r.nc"
grep -q 'Filter error' "$tmp/err" && ok || fail "ncdump: $(cat "$tmp/err")"
grep -q 'float TEMP(time, z, y, x)' "$tmp/out" && ok || fail "ncdump: no header"
grep -A1 '^ lat =' "$tmp/out" | grep -q '^  0, 0, 0' && ok || fail "ncdump: lat not printed"
grep -A1 '^ TEMP =' "$tmp/out" | grep -q -- '-40' && fail "ncdump printed TEMP's values" || ok
sed -n '/^data:/,$p' "$tmp/out" | grep -q -- '-99' && fail "ncdump printed fill values for TEMP" || ok
expect 0 "ncdump -v lat without raster" "$NCDUMP" -v lat "$tmp/r.nc"
# the marker, for whoever looks (ncdump -s)
"$NCDUMP" -hs "$tmp/r.nc" | grep -q 'TEMP:_Filter = "47137,' && ok ||
    fail "ncdump -s: no marker on TEMP"
# and a sentence saying where the data is and how to read it
grep -q 'TEMP:raster_note = "Stored by region in the group raster_TEMP .*rasterconvert --restore' "$tmp/out" && ok ||
    fail "ncdump: no note on TEMP"
expect 1 "nccopy without raster fails" "$NCCOPY" "$tmp/r.nc" "$tmp/copy.nc"

# ---- the same under the shim: the plain file exactly ------------------------
"$NCDUMP" "$tmp/plain.nc" | tail -n +2 > "$tmp/d_plain"
under "$NCDUMP" "$tmp/r.nc" > "$tmp/d_shim" 2> "$tmp/err" || fail "ncdump under the shim"
tail -n +2 "$tmp/d_shim" > "$tmp/d_shim2"
cmp -s "$tmp/d_plain" "$tmp/d_shim2" && ok ||
    { fail "ncdump under the shim differs from the plain file"; diff "$tmp/d_plain" "$tmp/d_shim2" | head; }
under "$NCDUMP" -hs "$tmp/r.nc" | grep -q '_Filter' &&
    fail "the shim shows the marker: $(under "$NCDUMP" -hs "$tmp/r.nc" | grep _Filter)" || ok
expect 0 "nccopy under the shim makes a plain copy" under "$NCCOPY" "$tmp/r.nc" "$tmp/back.nc"
"$NCDUMP" "$tmp/back.nc" | tail -n +2 > "$tmp/d_back"
cmp -s "$tmp/d_plain" "$tmp/d_back" && ok || fail "the copy differs from the plain file"
"$NCDUMP" -hs "$tmp/back.nc" | grep -q '_Filter' && fail "the copy carries the marker" || ok

# ---- Python: the PyPI wheels, each with its own libnetcdf / libhdf5 ----------
venv="$build/safe-venv"
py="$venv/bin/python"
if ! [ -f "$venv/.ready" ]; then
    rm -rf "$venv"
    if ! "${PYTHON:-python3}" -m venv "$venv" > "$tmp/venv.log" 2>&1 ||
       ! timeout 900 "$py" -m pip install --quiet --disable-pip-version-check \
            --only-binary=:all: netCDF4 numpy h5py h5netcdf xarray \
            > "$tmp/pip.log" 2>&1; then
        echo "SKIP (Python part): no venv or no PyPI:"; tail -3 "$tmp/pip.log" 2>/dev/null
        rm -rf "$venv"
        report safe_files
        exit $?
    fi
    touch "$venv/.ready"
fi
cat > "$tmp/py.py" <<'PY'
import sys, shutil, warnings
warnings.simplefilter("ignore")
import numpy as np, netCDF4, h5py, h5netcdf, xarray as xr
path, scratch = sys.argv[1], sys.argv[2]

def attempt(what, fn):
    try:
        fn()
        print(what, "served")
    except Exception as e:  # the kind differs per library: the fact counts
        print(what, "refused")

def nc_read():
    with netCDF4.Dataset(path) as d:
        d["TEMP"][1, 0]
def nc_write():
    shutil.copy(path, scratch)
    with netCDF4.Dataset(scratch, "a") as d:
        d["TEMP"][1] = 5.0
def nc_plain():
    with netCDF4.Dataset(path) as d:
        assert d["lat"][5, 0] == 5 and d["time"][2] == 2
def xr_values():
    with xr.open_dataset(path) as ds:
        ds.TEMP.values
def xr_plain():
    with xr.open_dataset(path) as ds:
        assert float(ds.lat[4, 1]) == 4.0
def h5_read_all():
    with h5py.File(path, "r") as f:
        f["TEMP"][...]
def h5_read_one():
    with h5py.File(path, "r") as f:
        f["TEMP"][2, 1, 5, 7]
def h5_write():
    shutil.copy(path, scratch)
    with h5py.File(scratch, "a") as f:
        f["TEMP"][0, 0, 0, 0] = 1.0
def h5netcdf_record():
    with h5netcdf.File(path, "r") as f:
        f["TEMP"][2]
def xr_h5netcdf():
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        ds.TEMP[2, 1].values

for name, fn in [("netCDF4 read", nc_read), ("netCDF4 write", nc_write),
                 ("netCDF4 plain variables", nc_plain),
                 ("xarray TEMP.values", xr_values),
                 ("xarray plain variables", xr_plain),
                 ("h5py read all", h5_read_all), ("h5py read one", h5_read_one),
                 ("h5py write", h5_write),
                 ("h5netcdf last record", h5netcdf_record),
                 ("xarray h5netcdf last record", xr_h5netcdf)]:
    attempt(name, fn)
with xr.open_dataset(path) as ds:
    print("xarray note", "raster_TEMP" in ds.TEMP.attrs.get("raster_note", ""))
with h5py.File(path, "r") as f:
    p = f["TEMP"].id.get_create_plist()
    print("h5py filter", p.get_filter(0)[0], "mandatory", p.get_filter(0)[1] == 0)
PY
"$py" "$tmp/py.py" "$tmp/r.nc" "$tmp/scratch.nc" > "$tmp/py.out" 2> "$tmp/py.err" ||
    { fail "the Python readers: $(tail -3 "$tmp/py.err")"; }
for line in "netCDF4 read refused" "netCDF4 write refused" \
            "netCDF4 plain variables served" "xarray TEMP.values refused" \
            "xarray plain variables served" "h5py read all refused" \
            "h5py read one refused" "h5py write refused" \
            "h5netcdf last record refused" "xarray h5netcdf last record refused" \
            "h5py filter 47137 mandatory True" "xarray note True"; do
    grep -qx "$line" "$tmp/py.out" && ok || fail "Python: wanted '$line'; got: $(cat "$tmp/py.out")"
done

# the refused writes changed nothing raster reads: the scratch copies
# still read as the plain file under the shim
under "$NCDUMP" "$tmp/scratch.nc" 2>/dev/null | tail -n +2 > "$tmp/d_scratch"
grep -A3 '^ TEMP =' "$tmp/d_plain" > "$tmp/t_plain"
grep -A3 '^ TEMP =' "$tmp/d_scratch" > "$tmp/t_scratch"
cmp -s "$tmp/t_plain" "$tmp/t_scratch" && ok || fail "a refused write changed TEMP"

report safe_files
