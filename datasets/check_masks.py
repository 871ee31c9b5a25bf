#!/usr/bin/env python3
"""Sanity-check the region masks in datasets/masks and print region shares.

For every masks/*.nc: REGION_MASK is a 2-D int32 variable, deflate level 9
with shuffle; flag_values is ascending, equals the set of ids present and
matches flag_meanings word for word; coordinates are present.  Prints one
table per file (id, name, cells, share %).  Exit status 1 on any failure.

  /usr/bin/python3 datasets/check_masks.py [--markdown] [files...]
"""

import glob
import os
import sys

import numpy as np
import netCDF4


def check(path, markdown):
    errs = []
    with netCDF4.Dataset(path) as d:
        v = d.variables["REGION_MASK"]
        R = np.asarray(v[:])
        if v.dtype != np.int32 or R.ndim != 2:
            errs.append("REGION_MASK must be 2-D int32")
        filt = v.filters()
        if not (filt.get("zlib") and filt.get("complevel") == 9 and filt.get("shuffle")):
            errs.append("REGION_MASK filters %s" % filt)
        fv = np.asarray(v.flag_values)
        names = v.flag_meanings.split()
        present = np.unique(R)
        if fv.dtype != np.int32:
            errs.append("flag_values dtype %s" % fv.dtype)
        if not np.all(np.diff(fv) > 0):
            errs.append("flag_values not strictly ascending")
        if not np.array_equal(fv, present):
            errs.append("flag_values %s != ids present %s" % (fv.tolist(), present.tolist()))
        if len(names) != len(fv):
            errs.append("%d flag_meanings for %d flag_values" % (len(names), len(fv)))
        for c in v.coordinates.split():
            if c not in d.variables:
                errs.append("coordinate %s missing" % c)
        for a in ("title", "source", "history", "references", "license"):
            if a not in d.ncattrs():
                errs.append("global attribute %s missing" % a)
        dims = v.dimensions
        codes = v.flag_codes.split() if "flag_codes" in v.ncattrs() else None
        if codes is not None and len(codes) != len(fv):
            errs.append("%d flag_codes for %d flag_values" % (len(codes), len(fv)))
        cnt = {int(i): int((R == i).sum()) for i in present}
    size = os.path.getsize(path)
    name = os.path.basename(path)
    if markdown:
        print("`%s` (%s = %d x %d, %d bytes)\n" % (name, " x ".join(dims), R.shape[0], R.shape[1], size))
        if codes:
            print("| id | code | region | cells | share (%) |")
            print("|---:|---|---|---:|---:|")
        else:
            print("| id | region | cells | share (%) |")
            print("|---:|---|---:|---:|")
        for k, (i, n) in enumerate(zip(fv, names)):
            c = cnt.get(int(i), 0)
            code = "| %s " % codes[k] if codes else ""
            print("| %d %s| %s | %d | %.3f |" % (i, code, n, c, 100.0 * c / R.size))
        print()
    else:
        print("%s  %s %s  %d bytes" % (name, dims, R.shape, size))
        for i, n in zip(fv, names):
            print("  %4d %-32s %9d %7.3f%%" % (i, n, cnt.get(int(i), 0), 100.0 * cnt.get(int(i), 0) / R.size))
    for e in errs:
        print("  ERROR: %s" % e)
    return not errs


def main():
    args = [a for a in sys.argv[1:] if a != "--markdown"]
    markdown = "--markdown" in sys.argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    files = args or sorted(glob.glob(os.path.join(here, "masks", "*.nc")))
    ok = all([check(f, markdown) for f in files])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
