"""ncregions: read netCDF-4 files stored region by region (raster).

raster (libraster, built into this package) stores a gridded variable by
a 2-D region mask so that reading one region reads about that region's
bytes. This package gives Python:

- File / Variable: the file's variables, hyperslab and region reads
  (numpy), errors as RasterError;
- an xarray backend: ``xr.open_dataset(path, engine="ncregions")``, lazy,
  dask-ready (``chunks=``);
- region(), reduce(): a region's cells as an xarray DataArray (packed
  cells with their coordinates, or the bounding box) and regional
  mean/sum/min/max/std with optional weights, reading only the region;
- to_raster(): an xarray Dataset and a mask written as a raster file.

See docs/PYTHON.md in the raster repository.
"""
from ._lib import RasterError
from .core import LAYOUTS, File, Variable, open_file

__all__ = ["RasterError", "File", "Variable", "open_file", "LAYOUTS",
           "region", "reduce", "to_raster", "version"]


def version() -> str:
    """The version of the libraster inside the package."""
    from . import _lib
    return _lib.raster_version_string().decode()


try:  # the xarray parts: the accessor registers itself on import
    import xarray as _xr  # noqa: F401
except ImportError:  # pragma: no cover - numpy-only installs
    _xr = None
else:
    from .regions import region, reduce  # noqa: F401


def __getattr__(name):
    # xarray is needed only by these: import it when they are used
    if name in ("region", "reduce"):
        from . import regions
        return getattr(regions, name)
    if name == "to_raster":
        from .convert import to_raster
        return to_raster
    raise AttributeError(f"module 'ncregions' has no attribute {name!r}")
