#!/bin/sh
# Integration test of rasterget --stat: the statistic of regions of a file
# made by rasterconvert, printed as JSON and written as netCDF, must equal
# numpy's float64 statistics of the original file (masked to the regions,
# fill values and NaN left out, weights applied) within 1e-9 relative, for
# every numeric type, over --start/--count boxes; usage and input errors.
# usage: test_stat.sh RASTERGET RASTERCONVERT   (env: PYTHON)
set -u
rg=$1 rc=$2
. "$(dirname "$0")/lib.sh"

need_python

# A POP-like file: time x z_t x nlat x nlon of every numeric type, fill
# values over land and here and there, NaN in the floating ones; a cell
# area TAREA with a fill value of its own; a named mask.
cat > "$tmp/gen.py" <<'PY'
import sys, numpy as np, netCDF4
ny, nx, nz, nt = 13, 17, 2, 5
rng = np.random.default_rng(5)
mask = np.full((ny, nx), 2, np.int32)
mask[:, 6:] = 6; mask[:4, 10:] = 1; mask[6:8, 2:15] = 0
mask[rng.random((ny, nx)) < 0.05] = 10
types = {"b": "i1", "B": "u1", "s": "i2", "S": "u2", "i": "i4", "I": "u4",
         "l": "i8", "L": "u8", "f": "f4", "d": "f8"}
with netCDF4.Dataset(sys.argv[1], "w", format="NETCDF4") as d:
    d.createDimension("time", None); d.createDimension("z_t", nz)
    d.createDimension("nlat", ny); d.createDimension("nlon", nx)
    t = d.createVariable("time", "f8", ("time",)); t.units = "days since 2000-01-01"
    t[:] = np.arange(nt) * 30.0 + 15
    a = d.createVariable("TAREA", "f8", ("nlat", "nlon"), fill_value=-1.0)
    a.units = "cm^2"
    area = 1 + rng.random((ny, nx)) * 3
    area[3, 3] = -1.0                  # a weight that is the fill value
    a[:] = area
    R = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon"))
    R.flag_values = np.array([0, 1, 2, 6, 10], np.int32)
    R.flag_meanings = "Land Southern_Ocean Pacific_Ocean Atlantic_Ocean Arctic_Ocean"
    R[:] = mask
    for name, t in types.items():
        info = np.iinfo(t) if t[0] in "iu" else None
        lo, hi = (max(info.min, -1e15), min(info.max, 1e15)) if info else (-1e3, 1e3)
        x = rng.uniform(lo / 2, hi / 2, (nt, nz, ny, nx))
        if t == "f8":
            x = 1e6 + x / 1e3          # a large mean: a one-pass std would show
        x = x.astype(t)
        fill = np.array(7 if t[0] in "iu" else -999.5, t)
        v = d.createVariable("V" + name, t, ("time", "z_t", "nlat", "nlon"),
                             fill_value=fill)
        v.units = "K"; v.cell_methods = "time: mean"
        holes = rng.random(x.shape) < 0.1
        holes[:, :, mask == 0] = True
        x[holes] = fill
        if t[0] == "f":
            x[rng.random(x.shape) < 0.05] = np.nan
        v.set_auto_mask(False)
        v[:] = x
PY
"$PY" "$tmp/gen.py" "$tmp/in.nc" || exit 1
"$rc" --mask "$tmp/in.nc:REGION_MASK" "$tmp/in.nc" "$tmp/r.nc" 2> "$tmp/err" ||
    { echo "FAIL: rasterconvert"; cat "$tmp/err"; exit 1; }

# check.py: every type, region set, statistic, weighting and box against
# numpy; prints FAIL lines, and "N checks" last
cat > "$tmp/check.py" <<'PY'
import sys, json, subprocess, numpy as np, netCDF4
rg, src, raster, tmp = sys.argv[1:5]
names = {"Southern_Ocean": 1, "Pacific_Ocean": 2, "Atlantic_Ocean": 6,
         "Arctic_Ocean": 10}
d = netCDF4.Dataset(src)
mask = d["REGION_MASK"][:]
area = d["TAREA"][:].filled(np.nan).astype(np.float64)
checks = fails = 0
def fail(msg):
    global fails
    fails += 1
    print("FAIL:", msg)
def expect(x, stat, weighted):
    # x: (..., cells) float64 with NaN where not valid
    ok = ~np.isnan(x)
    if weighted:
        w = np.broadcast_to(area, x.shape) if x.ndim == area.ndim else None
    out = np.full(x.shape[:-1], np.nan)
    for idx in np.ndindex(*x.shape[:-1]):
        v = x[idx]; m = ok[idx]
        if weighted and stat in ("mean", "sum", "std"):
            ww = W.copy(); m = m & ~np.isnan(ww)
            if stat == "sum":
                out[idx] = np.sum(v[m] * ww[m]); continue
            if ww[m].sum() == 0:
                continue
            mu = np.average(v[m], weights=ww[m])
            out[idx] = mu if stat == "mean" else \
                np.sqrt(np.average((v[m] - mu) ** 2, weights=ww[m]))
            continue
        if stat == "count":
            out[idx] = m.sum(); continue
        if stat == "sum":
            out[idx] = v[m].sum(); continue
        if not m.any():
            continue
        out[idx] = {"mean": np.mean, "min": np.min, "max": np.max,
                    "std": np.std}[stat](v[m])
    return out
def close(got, want, scale):
    got = np.array([np.nan if g is None else g for g in np.ravel(got)])
    want = np.ravel(want)
    tol = 1e-9 * np.maximum(np.abs(want), scale)
    same = (np.isnan(got) & np.isnan(want)) | (np.abs(got - want) <= tol)
    return bool(same.all())
for var in ["Vb", "VB", "Vs", "VS", "Vi", "VI", "Vl", "VL", "Vf", "Vd"]:
    v = d[var]; v.set_auto_mask(False)
    raw = v[:]
    x = raw.astype(np.float64)
    x[raw == v._FillValue] = np.nan
    sets = [["Pacific_Ocean"], ["Arctic_Ocean", "Atlantic_Ocean"]]
    for regs in sets + ([["1"]] if var == "Vd" else []):
        ids = [int(r) if r.isdigit() else names[r] for r in regs]
        sel = np.isin(mask, ids)
        W = area[sel]
        cells = x[..., sel]
        for stat in ("count", "sum", "mean", "min", "max", "std"):
            for weighted in (0, 1):
                boxes = [[], ["--start", "1,1", "--count", "3,1"]]
                for box in boxes if var in ("Vf", "VL") else boxes[:1]:
                    cmd = [rg, raster, "--var", var, "--stat", stat, "--json"]
                    for r in regs:
                        cmd += ["--region", r]
                    if weighted:
                        cmd += ["--weights", "TAREA"]
                    p = subprocess.run(cmd + box, capture_output=True, text=True)
                    checks += 1
                    if p.returncode != 0:
                        fail(f"{cmd}: exit {p.returncode}: {p.stderr}"); continue
                    j = json.loads(p.stdout)
                    c = cells[1:4, 1:2] if box else cells
                    want = expect(c, stat, weighted)
                    scale = np.nanmax(np.abs(c)) if np.any(~np.isnan(c)) else 0
                    if weighted and stat == "sum":
                        scale *= np.nanmax(W)
                    if not close(j["values"], want, scale):
                        fail(f"{var} {regs} {stat} w={weighted} {box}: "
                             f"{j['values']} != {want.tolist()}")
                    if j["dims"] != ["time", "z_t"] or j["var"] != var or \
                       j["stat"] != stat or j["ids"] != ids or \
                       np.shape(j["values"]) != want.shape or \
                       j["weights"] != ("TAREA" if weighted else None):
                        fail(f"{var} {regs} {stat}: JSON fields {j}")
# the netCDF series: values, cell_methods, time sliced, units
out = tmp + "/s.nc"
p = subprocess.run([rg, raster, "--var", "Vd", "--region", "Atlantic_Ocean",
                    "--stat", "mean", "--weights", "TAREA", "--start", "2,0",
                    "-o", out], capture_output=True, text=True)
checks += 1
if p.returncode != 0:
    fail(f"-o: exit {p.returncode}: {p.stderr}")
else:
    with netCDF4.Dataset(out) as o:
        s = o["Vd"]
        raw = d["Vd"][:]
        x = raw.astype(np.float64)
        x[raw == d["Vd"]._FillValue] = np.nan
        x = x[2:][..., mask == 6]
        W = area[mask == 6]
        if s.dimensions != ("time", "z_t") or s.dtype != np.float64:
            fail(f"series shape {s.dimensions} {s.dtype}")
        if s.cell_methods != "time: mean area: mean where Atlantic_Ocean " \
                             "(comment: weighted by TAREA)":
            fail(f"cell_methods {s.cell_methods!r}")
        if s.units != "K" or s.raster_stat != "mean" or \
           list(np.atleast_1d(s.raster_regions)) != [6]:
            fail("series attributes")
        if not np.array_equal(o["time"][:], d["time"][2:]):
            fail("time not sliced")
        if not close(s[:].filled(np.nan), expect(x, "mean", 1), 0):
            fail("series values")
print(f"{checks} checks")
sys.exit(1 if fails else 0)
PY
if "$PY" "$tmp/check.py" "$rg" "$tmp/in.nc" "$tmp/r.nc" "$tmp" > "$tmp/log"; then
    ok
else
    fail "statistics differ from numpy's"; head -30 "$tmp/log"
fi
tail -1 "$tmp/log"

# usage errors (2) and input errors (1), no output left behind
expect 2 "unknown statistic" "$rg" "$tmp/r.nc" --var Vd --region 1 \
    --stat median --json
expect 2 "--json with -o" "$rg" "$tmp/r.nc" --var Vd --region 1 \
    --stat mean --json -o "$tmp/x.nc"
expect 2 "--weights without --stat" "$rg" "$tmp/r.nc" --var Vd --region 1 \
    --weights TAREA -o "$tmp/x.nc"
expect 2 "--json without --stat" "$rg" "$tmp/r.nc" --var Vd --region 1 --json
expect 1 "missing weights" "$rg" "$tmp/r.nc" --var Vd --region 1 \
    --stat mean --weights NOPE -o "$tmp/x.nc"
no_output "$tmp/x.nc" "missing weights"
expect 1 "weights not on the grid" "$rg" "$tmp/r.nc" --var Vd --region 1 \
    --stat mean --weights time --json
if [ -s "$tmp/out" ]; then fail "a failed --json printed"; else ok; fi

report rasterget_stat
