"""Python writers of test_adoption_order.sh (issue 39): Debian's
python3-netcdf4 never calls nc_enddef for a netCDF-4 file, and xarray's
to_netcdf writes each variable right after defining it. Under the shim with
a mask every data variable on the grid must be stored by region whatever
the order.

usage: python3 adoption_order.py MODE OUT.nc
  two      TEMP and SALT defined, SALT written first
  five     five fields and a coordinate defined, written in a shuffled order
           with the coordinate in the middle
  xarray   xarray.Dataset of three data variables with time/lat/lon
           coordinates (and 2-D TLAT, a non-dimension coordinate) through
           to_netcdf (engine netcdf4)
Values: field k at (t, y, x) is k * 100000 + t * 10000 + y * 100 + x.
"""
import sys

import numpy as np

NT, NY, NX = 2, 60, 70


def field(k):
    t, y, x = np.meshgrid(np.arange(NT), np.arange(NY), np.arange(NX),
                          indexing="ij")
    return (k * 100000 + t * 10000 + y * 100 + x).astype("f4")


def netcdf4_writer(path, names, order):
    import netCDF4
    with netCDF4.Dataset(path, "w", format="NETCDF4") as d:
        d.createDimension("time", None)
        d.createDimension("nlat", NY)
        d.createDimension("nlon", NX)
        tv = d.createVariable("time", "f8", ("time",))
        tv.units = "days since 2000-01-01"
        vs = {}
        for k, n in enumerate(names):
            v = d.createVariable(n, "f4", ("time", "nlat", "nlon"),
                                 fill_value=np.float32(-1e30))
            v.units = "1"
            vs[n] = (k, v)
        for n in order:
            if n == "time":
                tv[:] = np.arange(NT) + 0.5
                continue
            k, v = vs[n]
            v[:] = field(k)


def xarray_writer(path):
    import xarray as xr
    lat = np.linspace(-89.5, 89.5, NY)
    lon = np.linspace(0.5, 359.5, NX)
    tlat = np.repeat(lat[:, None], NX, axis=1)
    dims = ("time", "nlat", "nlon")
    ds = xr.Dataset(
        {n: (dims, field(k), {"units": "1"})
         for k, n in enumerate(["TEMP", "SALT", "SSH"])},
        coords={"time": ("time", np.arange(NT) + 0.5,
                         {"units": "days since 2000-01-01"}),
                "nlat": ("nlat", lat, {"units": "degrees_north"}),
                "nlon": ("nlon", lon, {"units": "degrees_east"}),
                "TLAT": (("nlat", "nlon"), tlat, {"units": "degrees_north"})})
    ds.to_netcdf(path, engine="netcdf4", format="NETCDF4")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "two":
        netcdf4_writer(path, ["TEMP", "SALT"], ["SALT", "TEMP"])
    elif mode == "five":
        names = ["TEMP", "SALT", "UVEL", "VVEL", "RHO"]
        netcdf4_writer(path, names,
                       ["VVEL", "TEMP", "time", "RHO", "SALT", "UVEL"])
    elif mode == "xarray":
        xarray_writer(path)
    else:
        sys.exit("adoption_order.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
