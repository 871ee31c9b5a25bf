"""to_raster(): an xarray Dataset and a region mask written as a raster file.

The route is the simplest correct one: the Dataset (with the mask added as
a variable) is written as a netCDF-4 temporary file by xarray's netCDF4
engine, then converted by rasterconvert, the package's copy of the tool
built with libraster. The conversion is therefore exactly rasterconvert's:
the same choice of variables, chunking and compression.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Optional, Sequence, Union

import numpy as np

from ._lib import RasterError

__all__ = ["to_raster", "rasterconvert"]

_TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "rasterconvert")


def rasterconvert(*args: str) -> str:
    """Runs the package's rasterconvert with `args`; returns its stdout.
    Raises RasterError (code 1, the tool's stderr as message) when it
    fails."""
    tool = os.environ.get("NCREGIONS_RASTERCONVERT", _TOOL)
    p = subprocess.run([tool, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RasterError(p.returncode, p.stderr.strip() or
                          f"rasterconvert exited with {p.returncode}")
    return p.stdout


def to_raster(ds, mask, path: Union[str, os.PathLike],
              vars: Optional[Sequence[str]] = None,
              compression: Union[None, str, int, dict] = None,
              chunk: Optional[Sequence[int]] = None,
              names: Optional[Union[str, os.PathLike]] = None,
              mask_name: str = "region_mask") -> str:
    """Writes xarray Dataset `ds` as raster file `path`, stored by `mask`.

    Args:
        ds: the Dataset; its variables on the mask's grid are stored by
            region (or those of `vars`), the rest copied.
        mask: the 2-D integer region mask: a DataArray on the Dataset's
            last two dimensions (e.g. from regionmask's ``.mask(ds)``; its
            flag_values/flag_meanings name the regions), a numpy array of
            that shape, or the name of a variable of `ds`. NaN cells belong
            to no region (id 0).
        path: the output file (overwritten).
        vars: names of the variables to store by region; None: the data
            variables rasterconvert chooses.
        compression: None keeps each variable's own (xarray's encoding);
            "none" stores everything unfiltered; an int 1-9 deflates at
            that level (with shuffle); a dict with keys deflate (int),
            shuffle (bool), quantize ("bitround,9", ...).
        chunk: the base chunk shape (its last two sizes are the tile).
        names: a names table (CSV id,name[,abbreviation]) naming the regions.
        mask_name: the name the mask gets in the file when it is not a
            variable of `ds` already.

    Returns:
        rasterconvert's report (stdout).
    """
    import xarray as xr

    if isinstance(mask, str):
        if mask not in ds.variables:
            raise RasterError(8, f"mask {mask!r} is not a variable of the "
                              "Dataset")
        mask_var, full = mask, ds
    else:
        if isinstance(mask, xr.DataArray):
            m = mask
        else:
            arr = np.asarray(mask)
            if arr.ndim != 2:
                raise RasterError(7, f"mask of {arr.ndim} dimensions, not 2")
            grid = _grid_dims(ds, arr.shape)
            m = xr.DataArray(arr, dims=grid)
        if m.ndim != 2:
            raise RasterError(7, f"mask of {m.ndim} dimensions, not 2")
        # the mask's own coordinates (regionmask's lat/lon) are the data's
        m = m.reset_coords(drop=True).drop_vars(list(m.coords),
                                                errors="ignore")
        mask_var = mask_name
        full = ds.assign({mask_var: m})
    args = ["--mask", f"{{tmp}}:{mask_var}"]
    if vars:
        args += ["--vars", ",".join(vars)]
    if chunk:
        args += ["--chunk", ",".join(str(int(c)) for c in chunk)]
    if names:
        args += ["--names", os.fspath(names)]
    if compression is not None:
        if compression == "none":
            args += ["--no-compress"]
        elif isinstance(compression, (int, np.integer)):
            args += ["--deflate", str(int(compression))]
            if compression:
                args += ["--shuffle"]
        elif isinstance(compression, dict):
            bad = set(compression) - {"deflate", "shuffle", "quantize"}
            if bad:
                raise ValueError(f"compression keys {sorted(bad)}: deflate, "
                                 "shuffle, quantize")
            if "deflate" in compression:
                args += ["--deflate", str(int(compression["deflate"]))]
            if compression.get("shuffle"):
                args += ["--shuffle"]
            if compression.get("quantize"):
                args += ["--quantize", str(compression["quantize"])]
        else:
            raise ValueError(f"compression {compression!r}: None, 'none', "
                             "a deflate level or a dict")
    out = os.fspath(path)
    d = os.path.dirname(os.path.abspath(out))
    with tempfile.TemporaryDirectory(dir=d, prefix=".to_raster-") as tmpd:
        tmp = os.path.join(tmpd, "in.nc")
        full.to_netcdf(tmp, format="NETCDF4", engine="netcdf4")
        args = [a.replace("{tmp}", tmp) for a in args]
        return rasterconvert(*args, tmp, out)


def _grid_dims(ds, shape):
    """The Dataset's two dimensions of lengths `shape` that its variables
    end with."""
    for v in ds.data_vars.values():
        if v.ndim >= 2 and v.shape[-2:] == tuple(shape):
            return v.dims[-2:]
    raise RasterError(7, f"no variable of the Dataset ends with a grid of "
                      f"shape {tuple(shape)}")
