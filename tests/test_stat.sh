#!/bin/sh
# Integration test of rasterget --stat: the statistic of regions of a file
# made by rasterconvert, printed as JSON and written as netCDF, must equal
# numpy's float64 statistics of the original file (masked to the regions,
# fill values and NaN left out, weights applied) within 1e-9 relative, for
# every numeric type, over --start/--count boxes; usage and input errors.
# The statistics kept in the file (docs/FORMAT.md, "Stored statistics") by
# rasterconvert --weights and by a program under the shim (RASTER_WEIGHTS;
# whole-record writes, partial writes, overwrites, an append) equal numpy's
# region by region and record by record.
# rasterstat --stats reports them.
# usage: test_stat.sh RASTERGET RASTERCONVERT SHIM RASTERSTAT (env: PYTHON)
set -u
rg=$1 rc=$2 rs=$4
. "$(dirname "$0")/lib.sh"
use_shim "$3"

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

# stored.py FILE PLAIN VAR WEIGHTS: the stats dataset of VAR in raster file
# FILE (read on disk, without the shim) equals numpy's statistics of the
# values of PLAIN (a plain file, or FILE read through the shim), per record
# and region; weighted fields kept when WEIGHTS is not "-"
cat > "$tmp/stored.py" <<'PY'
import sys, numpy as np, netCDF4
raster, plain, var, wname = sys.argv[1:5]
with netCDF4.Dataset(plain) as d:
    v = d[var]; v.set_auto_mask(False)
    raw = v[:]
    x = raw.astype(np.float64)
    x[raw == v._FillValue] = np.nan
    area = d["TAREA"][:].filled(np.nan).astype(np.float64)
with netCDF4.Dataset(raster) as d:
    g = [s for s in d.groups.values()
         if getattr(s, "raster_variable", None) == var][0]
    g["stats"].set_auto_mask(False)
    st = g["stats"][:]
    ids = np.asarray(g.raster_regions).reshape(-1, 8)[:, 0]
    mask = g["mask"][:]
    kept = getattr(g["stats"], "weights", "-")
    cols = g["stats"].columns.split()
bad = 0
if kept != wname:
    print(f"FAIL: {var}: weights {kept!r}, wanted {wname!r}"); bad += 1
for idx in np.ndindex(*x.shape[:-2]):
    for r, rid in enumerate(ids):
        row = dict(zip(cols, st[idx + (r,)]))
        c = x[idx][mask == rid]
        w = area[mask == rid]
        ok = ~np.isnan(c)
        wok = ok & ~np.isnan(w)
        if row["state"] not in (1, 2) and not ok.any():
            continue  # never written: left to the data (count 0)
        if row["state"] != 1:
            print(f"FAIL: {var} {idx} region {rid}: state {row['state']}")
            bad += 1; continue
        want = {"count": ok.sum(), "sum": c[ok].sum(),
                "sumsq": (c[ok] ** 2).sum(),
                "m2": ((c[ok] - c[ok].mean()) ** 2).sum() if ok.any() else 0,
                "min": c[ok].min() if ok.any() else np.nan,
                "max": c[ok].max() if ok.any() else np.nan}
        if wname != "-":
            wm = np.average(c[wok], weights=w[wok]) if wok.any() else 0
            want.update({"wcount": wok.sum(), "wsum": (c[wok] * w[wok]).sum(),
                         "wtotal": w[wok].sum(),
                         "wm2": (w[wok] * (c[wok] - wm) ** 2).sum()})
        else:
            want.update({"weights_crc32c": -1})
        scale = np.abs(c[ok]).max() if ok.any() else 0
        for k, want_v in want.items():
            got = row[k]
            s = scale * (np.nanmax(w) if k.startswith("w") else 1)
            s = s * s if k in ("sumsq",) else s
            if not ((np.isnan(got) and np.isnan(want_v)) or
                    abs(got - want_v) <= 1e-9 * max(abs(want_v), s)):
                print(f"FAIL: {var} {idx} region {rid} {k}: {got!r} != "
                      f"{want_v!r}"); bad += 1
sys.exit(1 if bad else 0)
PY

# rasterconvert --weights: every type's statistics kept, weighted
expect 0 "convert --weights" "$rc" --mask "$tmp/in.nc:REGION_MASK" \
    --weights TAREA "$tmp/in.nc" "$tmp/rw.nc"
for v in Vb VB Vs VS Vi VI Vl VL Vf Vd; do
    if "$PY" "$tmp/stored.py" "$tmp/rw.nc" "$tmp/in.nc" $v TAREA; then ok
    else fail "stored statistics of $v (rasterconvert --weights)"; fi
done
if "$PY" "$tmp/stored.py" "$tmp/r.nc" "$tmp/in.nc" Vd -; then ok
else fail "stored statistics of Vd (rasterconvert)"; fi
expect 2 "--weights with --format 2" "$rc" --mask "$tmp/in.nc:REGION_MASK" \
    --weights TAREA --format 2 "$tmp/in.nc" "$tmp/x.nc"
expect 1 "--weights naming no variable" "$rc" \
    --mask "$tmp/in.nc:REGION_MASK" --weights NOPE "$tmp/in.nc" "$tmp/x.nc"
no_output "$tmp/x.nc" "--weights naming no variable"
# from the stored weighted statistics: what numpy says
p=$("$rg" "$tmp/rw.nc" --var Vf --region Atlantic_Ocean --stat mean \
    --weights TAREA --json) || fail "rasterget on rw.nc"
q=$("$rg" "$tmp/r.nc" --var Vf --region Atlantic_Ocean --stat mean \
    --weights TAREA --json) || fail "rasterget on r.nc"
if "$PY" -c 'import json, sys, numpy as np
a, b = (np.array(json.loads(s)["values"], float) for s in sys.argv[1:3])
sys.exit(0 if np.allclose(a, b, rtol=1e-12, atol=0, equal_nan=True) else 1)' \
    "$p" "$q"; then ok; else fail "stored and computed weighted means differ"; fi

# a program under the shim, RASTER_WEIGHTS=TAREA: records written whole,
# in part, overwritten, and one appended after a reopen
cat > "$tmp/writer.py" <<'PY'
import sys, numpy as np, netCDF4
src, out, step = sys.argv[1:4]
with netCDF4.Dataset(src) as s:
    area = s["TAREA"][:]
    mask = s["REGION_MASK"][:]
    ny, nx = mask.shape
rng = np.random.default_rng(int(step) + 40)
if step == "0":
    with netCDF4.Dataset(out, "w", format="NETCDF4") as d:
        d.createDimension("time", None); d.createDimension("nlat", ny)
        d.createDimension("nlon", nx)
        a = d.createVariable("TAREA", "f8", ("nlat", "nlon"), fill_value=-1.0)
        a[:] = area
        t = d.createVariable("T", "f4", ("time", "nlat", "nlon"),
                             fill_value=np.float32(-99))
        for k in range(3):                       # whole records
            t[k] = rng.normal(10, 3, (ny, nx)).astype("f4")
        t[3, 2:6, 1:9] = rng.normal(0, 1, (4, 8))  # part of a new record
        t[1, 5, :] = -99                         # fill values written
        t[0, :, 3:5] = rng.normal(5, 1, (ny, 2))  # a partial overwrite
        t[2] = rng.normal(1, 1, (ny, nx))         # a whole overwrite
else:
    with netCDF4.Dataset(out, "a") as d:
        d["T"][4] = rng.normal(2, 2, (ny, nx))    # appended
        d["T"][3, 0, :] = 7.5                     # and one more row
PY
under RASTER_MASK="$tmp/in.nc:REGION_MASK" RASTER_WEIGHTS=TAREA \
    "$PY" "$tmp/writer.py" "$tmp/in.nc" "$tmp/shim.nc" 0 ||
    fail "writer under the shim"
under RASTER_MASK="$tmp/in.nc:REGION_MASK" RASTER_WEIGHTS=TAREA \
    "$PY" "$tmp/writer.py" "$tmp/in.nc" "$tmp/shim.nc" 1 ||
    fail "appending under the shim"
# the values as a program sees them, through the shim
under "$PY" -c 'import sys, netCDF4
with netCDF4.Dataset(sys.argv[1]) as s, \
     netCDF4.Dataset(sys.argv[2], "w", format="NETCDF4") as d:
    for n, dim in s.dimensions.items():
        d.createDimension(n, None if dim.isunlimited() else len(dim))
    for n, v in s.variables.items():
        o = d.createVariable(n, v.dtype, v.dimensions,
                             fill_value=v._FillValue)
        v.set_auto_mask(False); o.set_auto_mask(False); o[:] = v[:]' \
    "$tmp/shim.nc" "$tmp/shim_plain.nc" || fail "reading back under the shim"
if on_disk "$PY" "$tmp/stored.py" "$tmp/shim.nc" "$tmp/shim_plain.nc" T \
    TAREA; then ok; else fail "stored statistics written under the shim"; fi

# rasterstat --stats: kept and fresh everywhere; over all records what
# numpy says
expect 0 "rasterstat --stats --json" "$rs" "$tmp/rw.nc" --stats --var Vs \
    --region Pacific_Ocean --region 10 --json
if "$PY" - "$tmp/out" "$tmp/in.nc" <<'PY'
import sys, json, numpy as np, netCDF4
j = json.load(open(sys.argv[1]))
with netCDF4.Dataset(sys.argv[2]) as d:
    v = d["Vs"]; v.set_auto_mask(False); raw = v[:]
    x = raw.astype(np.float64); x[raw == v._FillValue] = np.nan
    mask = d["REGION_MASK"][:]
    area = d["TAREA"][:].filled(np.nan)
assert len(j) == 1 and j[0]["var"] == "Vs" and j[0]["kept"], j
assert j[0]["weights"] == "TAREA" and j[0]["records"] == x.shape[0] * x.shape[1]
assert [r["id"] for r in j[0]["regions"]] == [2, 10], j
for r in j[0]["regions"]:
    c = x[..., mask == r["id"]]
    w = np.broadcast_to(area[mask == r["id"]], c.shape)
    ok = ~np.isnan(c); wok = ok & ~np.isnan(w)
    assert r["fresh"] == j[0]["records"] and r["stale"] == 0, r
    assert r["count"] == ok.sum(), r
    for k, want in (("mean", c[ok].mean()), ("std", c[ok].std()),
                    ("min", c[ok].min()), ("max", c[ok].max()),
                    ("weighted_mean", np.average(c[wok], weights=w[wok]))):
        assert abs(r[k] - want) <= 1e-9 * abs(want), (k, r[k], want)
PY
then ok; else fail "rasterstat --stats differs from numpy"; fi
expect 0 "rasterstat --stats (tables)" "$rs" "$tmp/r.nc" --stats --var Vf
if grep -q "statistics kept" "$tmp/out" && grep -q "Atlantic_Ocean" "$tmp/out"
then ok; else fail "rasterstat --stats tables"; cat "$tmp/out"; fi
expect 2 "--stats with --plot" "$rs" "$tmp/r.nc" --stats --plot "$tmp/x.png"
expect 1 "--stats of an unknown region" "$rs" "$tmp/r.nc" --stats \
    --region Nowhere

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
