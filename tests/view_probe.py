"""Writes (mode w) or describes (mode r) a file whose dimensions are
defined before and after a raster variable's storage, in the root group and
in a subgroup, on the grid of MASK's REGION_MASK; run under the shim it
is how test_shim.sh checks that a read-only open (a view) numbers the
dimensions as a whole open and the plain file do.
usage: view_probe.py w FILE MASK | view_probe.py r FILE [chdir]
(chdir: into / after the open, before any read: a view loads its
variables at the first read, by the path it resolved at the open)"""
import os
import sys

import netCDF4
import numpy as np


def write(path, mask):
    with netCDF4.Dataset(mask) as m:
        ny, nx = m["REGION_MASK"].shape
    d = netCDF4.Dataset(path, "w")
    d.createDimension("time", None)
    d.createDimension("y", ny)
    d.createDimension("x", nx)
    t = d.createVariable("T", "f4", ("time", "y", "x"), chunksizes=(1, 32, 32))
    t[0:2] = np.arange(2 * ny * nx, dtype="f4").reshape(2, ny, nx)
    d.sync()  # T is raster's now: its storage takes dimension ids
    d.createDimension("bnds", 2)
    b = d.createVariable("time_bnds", "f8", ("time", "bnds"))
    b[0:2] = [[0, 1], [1, 2]]
    g = d.createGroup("sub")
    g.createDimension("s", 5)
    v = g.createVariable("v", "i4", ("s", "y"))
    v[:] = np.arange(5 * ny, dtype="i4").reshape(5, ny)
    d.close()


def walk(g, out):
    for name, dim in g.dimensions.items():
        out.append(f"{g.path} dim {name} id {dim._dimid} len {len(dim)} "
                   f"unlimited {dim.isunlimited()}")
    for name, var in g.variables.items():
        out.append(f"{g.path} var {name} {var.dimensions} "
                   f"sum {float(np.asarray(var[:], dtype='f8').sum())}")
    out.append(f"{g.path} groups {list(g.groups)}")
    for sub in g.groups.values():
        walk(sub, out)


if sys.argv[1] == "w":
    write(sys.argv[2], sys.argv[3])
else:
    d = netCDF4.Dataset(sys.argv[2])
    if sys.argv[3:] == ["chdir"]:
        os.chdir("/")
    lines = []
    walk(d, lines)
    print("\n".join(lines))
    d.close()
