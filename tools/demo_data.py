#!/usr/bin/env python3
"""demo_data.py MASK.nc OUT.nc [NTIME NDEPTH] - a small CESM-like plain
netCDF-4 file for the demo: TEMP(time, z_t, nlat, nlon) float, a smooth field
with noise, _FillValue on land (REGION_MASK == 0), chunked 1 x z_t x 50 x 50
as CESM output commonly is; plus the mask itself. Deterministic."""
import sys

import numpy as np
from netCDF4 import Dataset

mask_path, out_path = sys.argv[1], sys.argv[2]
ntime = int(sys.argv[3]) if len(sys.argv) > 3 else 4
ndepth = int(sys.argv[4]) if len(sys.argv) > 4 else 10

with Dataset(mask_path) as src:
    mvar = src["REGION_MASK"]
    mask = mvar[:].filled(0).astype(np.int32)
    flags = {a: mvar.getncattr(a) for a in ("long_name", "flag_values",
                                            "flag_meanings")}
ny, nx = mask.shape
rng = np.random.default_rng(20241122)
lat = np.linspace(-79, 89, ny)[:, None]
lon = np.linspace(0, 360, nx, endpoint=False)[None, :]
fill = np.float32(9.96921e36)

with Dataset(out_path, "w", format="NETCDF4") as ds:
    ds.title = "raster demo: CESM-like ocean temperature (synthetic values)"
    ds.createDimension("time", None)
    ds.createDimension("z_t", ndepth)
    ds.createDimension("nlat", ny)
    ds.createDimension("nlon", nx)
    m = ds.createVariable("REGION_MASK", "i4", ("nlat", "nlon"))
    m.setncatts(flags)
    m[:] = mask
    t = ds.createVariable("TEMP", "f4", ("time", "z_t", "nlat", "nlon"),
                          fill_value=fill,
                          chunksizes=(1, ndepth, min(50, ny), min(50, nx)))
    t.long_name = "Potential Temperature"
    t.units = "degC"
    depth = np.linspace(5, 5000, ndepth)[:, None, None]
    for k in range(ntime):
        field = (28 * np.cos(np.radians(lat)) ** 2 - 1.5
                 + 2 * np.sin(np.radians(lon * 3 + 40 * k)))[None]
        field = field * np.exp(-depth / 1000.0) + 2
        field = field + rng.normal(0, 0.05, field.shape)
        field = np.where(mask[None] == 0, fill, field).astype(np.float32)
        t[k] = field
