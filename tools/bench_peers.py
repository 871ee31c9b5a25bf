#!/usr/bin/env python3
"""bench_peers.py - rasterbench's peers (rasterbench --peers runs it).

The same region cases that rasterbench reads with raster's C API, read by
what a user would otherwise use (docs/PERFORMANCE.md, "Peers"):

  xarray_netcdf4, xarray_h5netcdf
      xr.open_dataset(PLAIN, engine=...), then
      ds[VAR].where(mask == r, drop=True).load()
  xarray_netcdf4_mean, xarray_h5netcdf_mean
      ds[VAR].where(mask == r).mean(the two grid dims)
  ncregions, ncregions_mean
      ncregions.region(RASTER, VAR, r) (packed, decoded: an xarray
      DataArray with its cell coordinates), and
      ncregions.reduce(RASTER, VAR, r, how="mean")
  ncregions_read
      ncregions.File(RASTER)[VAR].read_region(r): the packed raw values
      as numpy, what raster_region_read gives a C program (rasterbench's
      raster method), so the cost of the Python layer alone; with
      --rasterbench it runs in rounds alternating with that C method's
      worker (recorded as raster_paired), so that the two are timed at
      the same moment of a busy machine; its record's last field is the
      median over the rounds of its fastest repetition / the C worker's
  adios2_records
      the variable in an ADIOS2 BP5 file written as a model writes it (one
      step per record of the first dimension, one block per step), read
      by the regions' bounding box over all steps, then the mask applied
  adios2_tiles
      ADIOS2's best case: the same data written as one block per tile
      (--tile), reading only the blocks that hold region cells, then the
      mask applied; its writer's cost (time, size) is reported beside the
      one-block-per-record writer's

Each method runs in its own process (this script with --worker, under the
venv's Python): one untimed warm-up, then N timed repetitions, each
opening the file and closing it; the driver takes the median, the bytes
read by the last repetition (/proc/self/io rchar) and the worker's peak
RSS (wait4). Masks are read before timing (as rasterbench's netcdf method
does). Each worker also prints a check value (the sum of the valid values
it returned) so that the methods can be compared with each other.

The driver needs only the standard library: it makes (once) a venv with
numpy, xarray, dask, netCDF4, h5netcdf and adios2 from PyPI, installs the
ncregions package of the checkout into it (pip install SOURCE, as
tests/test_python.sh does), writes the ADIOS2 files once (cached beside
the raster file), runs the workers and writes one tab-separated line per
measurement to --out for rasterbench:

  record CASE METHOD KIND MEDIAN_S RCHAR PEAK_BYTES REGION_BYTES FILE_BYTES CHECK

Exit status: 0 measured, 77 skipped (no venv could be made: the reason on
stderr), 1 a failed measurement, 2 bad usage.
"""
import argparse
import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
import time

PACKAGES = ["numpy", "xarray", "dask", "netCDF4", "h5netcdf", "h5py", "adios2",
            "meson-python", "meson", "ninja"]
READS = ["xarray_netcdf4", "xarray_h5netcdf", "ncregions", "ncregions_read",
         "adios2_records", "adios2_tiles", "xarray_netcdf4_mean",
         "xarray_h5netcdf_mean", "ncregions_mean", "xarray_netcdf4_wmean"]
SKIP = 77


def say(msg):
    print(f"bench_peers: {msg}", file=sys.stderr, flush=True)


# ---- worker (the venv's Python) -------------------------------------------

def rchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return -1


def read_mask(spec):
    """The mask FILE:VAR as a numpy array (netCDF4, untimed)."""
    import netCDF4
    path, name = spec.rsplit(":", 1)
    with netCDF4.Dataset(path) as d:
        m = d[name]
        m.set_auto_maskandscale(False)
        return m[:]


def valid_sum(x, fill):
    """The float64 sum of x's values that are neither NaN nor `fill`, in
    blocks: the check must not add to the worker's peak memory (blocks of
    1 Mi values, a float64 copy, its mask and its selection, added 16 MB
    to the Indian basin's ncregions worker: 201 MB against 185)."""
    import numpy as np
    flat = np.asarray(x).reshape(-1)
    total = 0.0
    for i in range(0, flat.size, 1 << 16):
        b = flat[i:i + (1 << 16)].astype(np.float64)
        ok = ~np.isnan(b)
        if fill is not None:
            ok &= b != float(fill)
        total += float(b[ok].sum())
    return total


def fill_of(plain, var):
    import netCDF4
    with netCDF4.Dataset(plain) as d:
        v = d[var]
        for a in ("_FillValue", "missing_value"):
            if a in v.ncattrs():
                return float(v.getncattr(a))
    return None


def fill_of_raster(ncregions, path, var):
    with ncregions.File(path) as f:
        attrs = f[var].attrs
    for k in ("_FillValue", "missing_value"):
        if k in attrs:
            return float(attrs[k])
    return None


def worker(a):
    import numpy as np
    rid = a.id
    method = a.worker
    # xarray and ncregions decode fill values to NaN; ADIOS2's raw values
    # are checked without them (netCDF4 is imported by its mask read
    # anyway, and kept out of the other workers' memory)
    fill = fill_of(a.plain, a.var) if method.startswith("adios2") else None
    if method.startswith("xarray_"):
        import xarray as xr
        engine = method.split("_")[1]
        with xr.open_dataset(a.plain, engine=engine) as ds:
            dims = ds[a.var].dims[-2:]
        mask = xr.DataArray(read_mask(a.mask), dims=dims)
        inside = mask == rid
        if method.endswith("_wmean"):
            # the area-weighted regional mean series (issue #26's peer):
            # TAREA as the weights, NaN outside the region and on land
            def once():
                with xr.open_dataset(a.plain, engine=engine) as ds:
                    w = ds["TAREA"].fillna(0)
                    return (ds[a.var].where(inside).weighted(w)
                            .mean(dims).values)
        elif method.endswith("_mean"):
            def once():
                with xr.open_dataset(a.plain, engine=engine) as ds:
                    return ds[a.var].where(inside).mean(dims).values
        else:
            def once():
                with xr.open_dataset(a.plain, engine=engine) as ds:
                    return ds[a.var].where(inside, drop=True).load().values
    elif method.startswith("ncregions"):
        import ncregions
        if method == "ncregions_mean":
            def once():
                return ncregions.reduce(a.raster, a.var, rid,
                                        how="mean").values
        elif method == "ncregions_read":
            fill = fill_of_raster(ncregions, a.raster, a.var)

            def once():
                with ncregions.File(a.raster) as f:
                    return f[a.var].read_region(rid)
        else:
            def once():
                return ncregions.region(a.raster, a.var, rid).values
    elif method.startswith("adios2_"):
        import adios2.bindings as ab
        mask = read_mask(a.mask)
        ys, xs = np.nonzero(mask == rid)
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
        inside = mask[y0:y1, x0:x1] == rid
        adios = ab.ADIOS()
        with open(a.bp + ".json") as f:
            meta = json.load(f)
        shape, steps, dtype = meta["shape"], meta["steps"], meta["dtype"]
        inner = shape[:-2]  # the per-step dims above the grid
        if method == "adios2_records":
            def once():
                name = f"r{time.monotonic_ns()}"
                io = adios.DeclareIO(name)
                eng = io.Open(a.bp, ab.Mode.ReadRandomAccess)
                v = io.InquireVariable(a.var)
                v.SetStepSelection([0, steps])
                v.SetSelection([[0] * len(inner) + [int(y0), int(x0)],
                                inner + [int(y1 - y0), int(x1 - x0)]])
                box = np.empty([steps] + inner + [y1 - y0, x1 - x0], dtype)
                eng.Get(v, box, ab.Mode.Sync)
                eng.Close()
                adios.RemoveIO(name)
                return box[..., inside]
        else:
            t = meta["tile"]
            ntx = -(-shape[-1] // t[1])
            # the tiles (block ids: row-major, per step) holding the region
            tiles = []
            for ty in range(y0 // t[0], (y1 - 1) // t[0] + 1):
                for tx in range(x0 // t[1], (x1 - 1) // t[1] + 1):
                    sy, sx = ty * t[0], tx * t[1]
                    if (mask[sy:sy + t[0], sx:sx + t[1]] == rid).any():
                        tiles.append((ty * ntx + tx, sy, sx))

            def once():
                name = f"r{time.monotonic_ns()}"
                io = adios.DeclareIO(name)
                eng = io.Open(a.bp, ab.Mode.ReadRandomAccess)
                v = io.InquireVariable(a.var)
                box = np.empty([steps] + inner + [y1 - y0, x1 - x0], dtype)
                got = []
                for s in range(steps):
                    for b, sy, sx in tiles:
                        v.SetStepSelection([s, 1])
                        v.SetBlockSelection(b)
                        h = min(t[0], shape[-2] - sy)
                        w = min(t[1], shape[-1] - sx)
                        buf = np.empty(inner + [h, w], dtype)
                        eng.Get(v, buf, ab.Mode.Sync)
                        got.append((s, sy, sx, buf))
                eng.Close()
                adios.RemoveIO(name)
                for s, sy, sx, buf in got:
                    h, w = buf.shape[-2:]
                    # the tile's part inside the box
                    ay, ax = max(sy, y0), max(sx, x0)
                    by, bx = min(sy + h, y1), min(sx + w, x1)
                    box[s, ..., ay - y0:by - y0, ax - x0:bx - x0] = \
                        buf[..., ay - sy:by - sy, ax - sx:bx - sx]
                return box[..., inside]
    else:
        say(f"unknown method {method}")
        return 2
    out = once()  # warm-up: the page cache and the imports' first uses
    times = []
    for _ in range(a.reps):
        out = None  # the last result freed first, as a program would
        before = rchar()
        t0 = time.perf_counter()
        out = once()
        times.append(time.perf_counter() - t0)
        got = rchar() - before
    check = valid_sum(out, fill)
    print("ok", got, repr(check), " ".join(f"{t:.9f}" for t in times),
          flush=True)
    return 0


# ---- ADIOS2 files (the venv's Python, once per file) ----------------------

def adios_write(a):
    """Writes the variable of a.plain as BP5 at a.bp in layout a.layout
    ("records" or "tiles"), and a.bp + ".json": shape, steps, the writer's
    time (the Put/EndStep calls, the data read beforehand) and size."""
    import adios2.bindings as ab
    import netCDF4
    import numpy as np
    with netCDF4.Dataset(a.plain) as d:
        v = d[a.var]
        v.set_auto_maskandscale(False)
        shape = list(v.shape)
        steps, inner = shape[0], shape[1:]
        dtype = v.dtype.str
        adios = ab.ADIOS()
        io = adios.DeclareIO("write")
        io.SetEngine("BP5")
        tmp = a.bp + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tile = [int(t) for t in a.tile.split(",")]
        proto = np.zeros([1] * len(inner), v.dtype)
        var = io.DefineVariable(a.var, proto, inner, [0] * len(inner),
                                [1] * len(inner), False)
        eng = io.Open(tmp, ab.Mode.Write)
        spent = 0.0
        for s in range(steps):
            rec = np.ascontiguousarray(v[s])
            t0 = time.perf_counter()
            eng.BeginStep()
            if a.layout == "records":
                var.SetSelection([[0] * len(inner), inner])
                eng.Put(var, rec, ab.Mode.Sync)
            else:  # the writer cuts each record into tiles, row-major
                ny, nx = inner[-2:]
                for sy in range(0, ny, tile[0]):
                    for sx in range(0, nx, tile[1]):
                        blk = np.ascontiguousarray(
                            rec[..., sy:sy + tile[0], sx:sx + tile[1]])
                        var.SetSelection([[0] * (len(inner) - 2) + [sy, sx],
                                          list(blk.shape)])
                        eng.Put(var, blk, ab.Mode.Sync)
            eng.EndStep()
            spent += time.perf_counter() - t0
        t0 = time.perf_counter()
        eng.Close()
        spent += time.perf_counter() - t0
    size = sum(os.path.getsize(os.path.join(r, f))
               for r, _, fs in os.walk(tmp) for f in fs)
    shutil.rmtree(a.bp, ignore_errors=True)
    os.rename(tmp, a.bp)
    meta = {"shape": inner, "steps": steps, "dtype": dtype,
            "layout": a.layout, "tile": tile, "write_s": spent,
            "bytes": size}
    with open(a.bp + ".json", "w") as f:
        json.dump(meta, f)
    return 0


# ---- driver (any python3) --------------------------------------------------

def ensure_venv(venv, source, log):
    """The venv's python (made once; the checkout's ncregions installed
    into it on every run, an incremental build), or None when it cannot
    be made (the reason said)."""
    os.makedirs(os.path.dirname(os.path.abspath(venv)) or ".",
                exist_ok=True)
    lock = open(venv + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one rasterbench at a time sets up
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".ready")):
        base = None
        for p in (os.environ.get("PYTHON"), sys.executable, "python3"):
            if p and subprocess.run([p, "-m", "venv", "--help"],
                                    capture_output=True).returncode == 0:
                base = p
                break
        if not base:
            say("skipped: no python3 with the venv module")
            return None
        shutil.rmtree(venv, ignore_errors=True)
        say(f"making the peers' venv {venv} (once): {' '.join(PACKAGES)}")
        with open(log, "w") as lf:
            ok = subprocess.run([base, "-m", "venv", venv], stdout=lf,
                                stderr=lf).returncode == 0
            ok = ok and subprocess.run(
                [py, "-m", "pip", "install", "--quiet",
                 "--disable-pip-version-check", "--only-binary=:all:"] +
                PACKAGES, stdout=lf, stderr=lf, timeout=900).returncode == 0
        if not ok:
            say(f"skipped: could not make the venv from PyPI (see {log}):")
            with open(log) as lf:
                sys.stderr.write("".join(lf.readlines()[-3:]))
            shutil.rmtree(venv, ignore_errors=True)
            return None
        open(os.path.join(venv, ".ready"), "w").close()
    if source:
        say(f"installing ncregions from {source} into the venv")
        with open(log, "a") as lf:
            r = subprocess.run(
                [py, "-m", "pip", "install", "--quiet",
                 "--disable-pip-version-check", "--no-deps",
                 "--no-build-isolation",
                 "-Cbuild-dir=" + os.path.join(venv, "ncregions-build"),
                 source], stdout=lf, stderr=lf)
        if r.returncode != 0:
            say(f"pip install {source} failed (see {log})")
            raise SystemExit(1)
    return py


def run_worker(py, argv):
    """(rchar, check, times, peak_bytes) of one worker process."""
    return run_process([py, os.path.abspath(__file__)] + argv, True)


def run_process(cmd, with_check):
    """Runs a worker (this script's, or rasterbench's C worker: "ok RCHAR
    T..." without the check) and parses its line; peak RSS from wait4."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    out = p.stdout.read().decode()
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0 or not out.startswith("ok "):
        raise RuntimeError(f"worker {' '.join(cmd[1:4])} failed ({rc})")
    f = out.split()
    if "phases" in f:  # rasterbench's raster workers: phase times follow
        f = f[:f.index("phases")]
    if not with_check:
        f.insert(2, "nan")
    return (int(f[1]), float(f[2]), [float(t) for t in f[3:]],
            ru.ru_maxrss * 1024)


# ncregions_read against the C worker, alternating, a process of each a
# round. On this VM a repetition can take 2-5 times its usual time (spells
# of a few tenths of a second: 96.5 ms among 20.2-20.4 in one Python
# process, 89.7 among 19.4-20.3 in a C one), in either language; they land
# on three of five repetitions often enough to move a median. The Python
# layer's cost adds the same to every repetition, so each round compares
# the two processes' fastest repetitions, and the field is the median of
# the rounds' ratios.
ROUNDS = 7


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def driver(a):
    venv = a.venv
    log = venv + ".log"
    source = a.source if a.source and os.path.exists(
        os.path.join(a.source, "pyproject.toml")) else None
    py = ensure_venv(venv, source, log)
    if py is None:
        return SKIP
    methods = [m for m in READS if m in a.methods.split(",")]
    if "xarray_netcdf4_wmean" in methods:
        from_plain = subprocess.run(
            [py, "-c", "import netCDF4, sys; "
             "sys.exit('TAREA' not in netCDF4.Dataset(sys.argv[1]).variables)",
             a.plain])
        if from_plain.returncode != 0:
            say("xarray_netcdf4_wmean skipped: no TAREA in the plain file")
            methods.remove("xarray_netcdf4_wmean")
    if not source:
        say("ncregions methods skipped: no checkout to install it from "
            "(give --peers-source)")
        methods = [m for m in methods if not m.startswith("ncregions")]
    lines = []
    # the ADIOS2 files, once each (cached beside the raster file)
    bps = {}
    for layout in ("records", "tiles"):
        if f"adios2_{layout}" not in methods:
            continue
        tag = "" if layout == "records" else "." + a.tile.replace(",", "x")
        bp = f"{a.raster}.{layout}{tag}.bp"
        if not os.path.exists(bp + ".json"):
            say(f"writing {bp} (once)")
            r = subprocess.run([py, os.path.abspath(__file__),
                                "--adios-write", "--plain", a.plain,
                                "--var", a.var, "--bp", bp, "--layout",
                                layout, "--tile", a.tile])
            if r.returncode != 0:
                say(f"writing {bp} failed")
                return 1
        bps[layout] = bp
        with open(bp + ".json") as f:
            meta = json.load(f)
        label = ("ADIOS2 write, one block per record" if layout == "records"
                 else f"ADIOS2 write, one block per {a.tile} tile")
        lines.append(["record", label, f"adios2_write_{layout}",
                      "peer_write", f"{meta['write_s']:.6f}", "0", "0", "0",
                      str(meta["bytes"]), "nan"])
        print(f"{label:44} {meta['write_s']:8.4f} s {meta['bytes']:>12} B")
    print(f"{'peers (warm)':24} {'method':22} {'median_s':>9} {'bytes_read':>12}"
          f" {'peak_MB':>8} {'check':>14}")
    for rid, label, rbytes in a.case:
        for m in methods:
            argv = ["--worker", m, "--plain", a.plain, "--raster", a.raster,
                    "--var", a.var, "--mask", a.mask, "--id", str(rid),
                    "--reps", str(a.reps)]
            if m.startswith("adios2_"):
                argv += ["--bp", bps[m.split("_")[1]]]
            try:
                if m == "ncregions_read" and a.rasterbench:
                    # rasterbench's own raster method (C), by turns
                    cw = [a.rasterbench, "--worker", "1", a.raster, a.var,
                          "-", "-", str(rid), "0,0,0,0", "0", "0,0,0,0",
                          "0,0,0,0", "0,0,0,0", str(a.elem), str(a.reps),
                          "0"]
                    ctimes, times, pairs = [], [], []
                    for _ in range(ROUNDS):
                        cgot, _, ct, cpeak = run_process(cw, False)
                        ctimes += ct
                        got, check, pt, peak = run_worker(py, argv)
                        times += pt
                        pairs.append(min(pt) / min(ct))
                    pair = median(pairs)
                    lines.append(["record", label, "raster_paired", "peer",
                                  f"{median(ctimes):.6f}", str(cgot),
                                  str(cpeak), str(rbytes), "0", "nan"])
                    print(f"{label:24} {'raster_paired':22} "
                          f"{median(ctimes):9.4f} {cgot:12} "
                          f"{cpeak / 1e6:8.1f}", flush=True)
                else:
                    pair = None
                    got, check, times, peak = run_worker(py, argv)
            except RuntimeError as e:
                say(f"{label}: {e}")
                return 1
            t = median(times)
            kind = ("peer_mean" if m.endswith("_mean") or
                    m.endswith("_wmean") else "peer")
            lines.append(["record", label, m, kind, f"{t:.6f}", str(got),
                          str(peak), str(rbytes), "0", repr(check)] +
                         ([f"{pair:.6f}"] if pair is not None else []))
            print(f"{label:24} {m:22} {t:9.4f} {got:12} {peak / 1e6:8.1f} "
                  f"{check:14.6g}" +
                  (f"  x{pair:.3f} by rounds" if pair is not None else ""),
                  flush=True)
    with open(a.out, "w") as f:
        for line in lines:
            f.write("\t".join(line) + "\n")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--plain", required=True)
    p.add_argument("--raster")
    p.add_argument("--var", required=True)
    p.add_argument("--mask", help="FILE:VAR, the mask the peers apply")
    p.add_argument("--case", nargs=3, action="append", default=[],
                   metavar=("ID", "LABEL", "REGION_BYTES"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--venv")
    p.add_argument("--source", help="the checkout to pip install")
    p.add_argument("--out")
    p.add_argument("--tile", default="100,100",
                   help="ADIOS2 best case: tile rows,columns")
    p.add_argument("--methods", default=",".join(READS))
    p.add_argument("--rasterbench", help="rasterbench, whose C raster "
                   "worker ncregions_read alternates with")
    p.add_argument("--elem", type=int, default=4,
                   help="bytes per value (the C worker's)")
    # internal: a worker, or an ADIOS2 file's writer
    p.add_argument("--worker")
    p.add_argument("--id", type=int)
    p.add_argument("--bp")
    p.add_argument("--adios-write", action="store_true")
    p.add_argument("--layout")
    a = p.parse_args()
    a.case = [(int(i), lab, int(b)) for i, lab, b in a.case]
    if a.worker:
        return worker(a)
    if a.adios_write:
        return adios_write(a)
    if not (a.raster and a.mask and a.venv and a.out and a.case) or \
            a.reps < 1:
        p.error("the driver needs --raster, --mask, --venv, --out, --case")
    return driver(a)


if __name__ == "__main__":
    sys.exit(main())
