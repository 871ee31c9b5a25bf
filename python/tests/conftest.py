"""Test files: a plain netCDF-4 file written by the netCDF4 wheel, and the
same file stored by region (the package's rasterconvert). Small: a 24 x 32
grid of 5 regions, variables of several types."""
import os

import numpy as np
import pytest

NY, NX = 24, 32
NAMES = ["Land", "Atlantic_Ocean", "Pacific_Ocean", "Indian_Ocean",
         "Arctic_Ocean"]
# variable -> (type, dims, fill value or None)
VARS = {
    "TEMP": ("f4", ("time", "z_t", "nlat", "nlon"), np.float32(9.96921e36)),
    "SALT": ("f8", ("time", "nlat", "nlon"), -1.0e30),
    "COUNT": ("i2", ("time", "nlat", "nlon"), np.int16(-999)),
    "FLAGS": ("u1", ("time", "nlat", "nlon"), None),
    "BIG": ("i8", ("z_t", "nlat", "nlon"), None),
    "WORDS": ("u4", ("time", "nlat", "nlon"), np.uint32(7)),
    "TINY": ("i1", ("time", "nlat", "nlon"), None),
}
RASTER_VARS = list(VARS)


def make_mask():
    y, x = np.mgrid[0:NY, 0:NX]
    m = np.zeros((NY, NX), np.int32)
    m[(x > 3) & (x < 14)] = 1                       # Atlantic: a band
    m[(x >= 14) & (x < 28) & (y > 4)] = 2           # Pacific
    m[(x >= 16) & (y <= 4)] = 3                     # Indian, top right
    m[(y > 20) & (x > 1)] = 4                       # Arctic, bottom rows
    m[(y + x) % 7 == 0] = 0                         # land specks
    return m


def make_plain(path, ntime=3, nz=4):
    import netCDF4
    rng = np.random.default_rng(42)
    mask = make_mask()
    with netCDF4.Dataset(path, "w") as d:
        d.title = "ncregions test"
        d.createDimension("time", None)
        d.createDimension("z_t", nz)
        d.createDimension("nlat", NY)
        d.createDimension("nlon", NX)
        t = d.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = np.arange(ntime) * 30.0
        z = d.createVariable("z_t", "f4", ("z_t",))
        z.units = "cm"
        z[:] = np.arange(nz) * 1000.0 + 500
        lat = d.createVariable("TLAT", "f8", ("nlat", "nlon"))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-80, 80, NY)[:, None] + 0.01 * np.arange(NX)
        lon = d.createVariable("TLONG", "f8", ("nlat", "nlon"))
        lon.units = "degrees_east"
        lon[:] = np.linspace(0, 350, NX)[None, :] + 0.02 * np.arange(NY)[:, None]
        area = d.createVariable("TAREA", "f8", ("nlat", "nlon"))
        area.units = "cm^2"
        area[:] = 1.0 + np.cos(np.deg2rad(lat[:]))
        m = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon"))
        m.flag_values = np.arange(len(NAMES), dtype="i4")
        m.flag_meanings = " ".join(NAMES)
        m[:] = mask
        for name, (typ, dims, fill) in VARS.items():
            v = d.createVariable(name, typ, dims, fill_value=fill)
            v.coordinates = "TLONG TLAT"
            v.long_name = f"test variable {name}"
            shape = tuple(ntime if n == "time" else nz if n == "z_t" else
                          NY if n == "nlat" else NX for n in dims)
            info = np.iinfo(typ) if typ[0] in "iu" else None
            if info:
                lo, hi = max(info.min, -10**6), min(info.max, 10**6)
                vals = rng.integers(lo, hi, size=shape, dtype=typ,
                                    endpoint=True)
            else:
                vals = rng.normal(10, 5, size=shape).astype(typ)
            if fill is not None:  # land is missing
                vals[..., mask == 0] = fill
            v[:] = vals
        v = d["COUNT"]
        v.scale_factor = np.float32(0.5)
        v.add_offset = np.float32(3.0)


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """(plain path, raster path) of the test files."""
    from ncregions.convert import rasterconvert
    d = tmp_path_factory.mktemp("data")
    plain = str(d / "plain.nc")
    rast = str(d / "raster.nc")
    make_plain(plain)
    rasterconvert("--mask", f"{plain}:REGION_MASK", "--vars",
                  ",".join(RASTER_VARS), "--chunk", "1,1,5,6", plain, rast)
    return plain, rast


@pytest.fixture(scope="session")
def bigfile(tmp_path_factory):
    """A raster file where one record is a small part of TEMP (for the
    bytes-read test)."""
    from ncregions.convert import rasterconvert
    d = tmp_path_factory.mktemp("big")
    plain = str(d / "plain.nc")
    rast = str(d / "raster.nc")
    make_plain(plain, ntime=8, nz=6)
    rasterconvert("--mask", f"{plain}:REGION_MASK", "--vars", "TEMP",
                  "--chunk", "1,1,8,8", "--no-compress", plain, rast)
    return plain, rast
