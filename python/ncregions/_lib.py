"""ctypes binding of libraster (and of the libnetcdf it links).

The library is loaded by path from the package directory with RTLD_LOCAL:
its libnetcdf/libhdf5 (the system's) stay private to it, so the PyPI
netCDF4 and h5py wheels, which bring their own copies, work in the same
process whichever is imported first. netCDF's functions are looked up
through libraster's handle (dlsym searches a library's dependencies), so
they are those of the libnetcdf libraster itself uses.
"""
from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (POINTER, c_char_p, c_int, c_int32, c_size_t, c_ssize_t,
                    c_void_p)

import numpy as np

__all__ = ["lib", "RasterError", "check", "nccheck", "NC_LOCK", "NC_TYPES"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _find() -> str:
    # NCREGIONS_LIBRASTER: a libraster to use instead of the package's own
    # (the test suite of a build tree)
    for cand in (os.environ.get("NCREGIONS_LIBRASTER"),
                 os.path.join(_HERE, "libraster.so")):
        if cand and os.path.exists(cand):
            return cand
    raise ImportError("ncregions: libraster.so not found in " + _HERE)


lib = ctypes.CDLL(_find(), mode=os.RTLD_LOCAL | os.RTLD_NOW)

c_size_p = POINTER(c_size_t)
c_int32_p = POINTER(c_int32)
c_ptrdiff_p = POINTER(c_ssize_t)


def _fn(name: str, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# ---- raster ------------------------------------------------------------------
raster_version_string = _fn("raster_version_string", c_char_p)
raster_strerror = _fn("raster_strerror", c_char_p, c_int)
raster_errmsg = _fn("raster_errmsg", c_char_p)
raster_open = _fn("raster_open", c_int, c_char_p, c_int, POINTER(c_void_p))
raster_close = _fn("raster_close", c_int, c_void_p)
raster_file_ncid = _fn("raster_file_ncid", c_int, c_void_p)
raster_file_nvars = _fn("raster_file_nvars", c_size_t, c_void_p)
raster_file_var = _fn("raster_file_var", c_void_p, c_void_p, c_size_t)
raster_var_find = _fn("raster_var_find", c_int, c_void_p, c_char_p,
                      POINTER(c_void_p))
raster_var_by_varid = _fn("raster_var_by_varid", c_void_p, c_void_p, c_int,
                          c_int)
raster_var_name = _fn("raster_var_name", c_char_p, c_void_p)
raster_var_type = _fn("raster_var_type", c_int, c_void_p)
raster_var_ndims = _fn("raster_var_ndims", c_int, c_void_p)
raster_var_dims = _fn("raster_var_dims", c_int, c_void_p, POINTER(c_int),
                      c_size_p, c_size_p)
raster_var_attributes = _fn("raster_var_attributes", None, c_void_p,
                            POINTER(c_int), POINTER(c_int))
raster_var_get_typed = _fn("raster_var_get_typed", c_int, c_void_p, c_size_p,
                           c_size_p, c_ptrdiff_p, c_ptrdiff_p, c_void_p,
                           c_int)
raster_nc_status = _fn("raster_nc_status", c_int)
raster_region_lookup = _fn("raster_region_lookup", c_int, c_void_p, c_char_p,
                           c_int32_p)
raster_region_size = _fn("raster_region_size", c_int, c_void_p, c_int32_p,
                         c_size_t, c_int, c_size_p)
raster_region_bbox = _fn("raster_region_bbox", c_int, c_void_p, c_int32_p,
                         c_size_t, c_size_p)
raster_region_cells = _fn("raster_region_cells", c_int, c_void_p, c_int32_p,
                          c_size_t, c_size_p, c_size_p)
raster_region_read = _fn("raster_region_read", c_int, c_void_p, c_int32_p,
                         c_size_t, c_size_p, c_size_p, c_int, c_void_p)
raster_region_alloc = _fn("raster_region_alloc", c_int, c_void_p, c_int32_p,
                          c_size_t, c_size_p, c_int, POINTER(c_void_p),
                          c_size_p)
raster_region_free = _fn("raster_region_free", None, c_void_p, c_size_t)
raster_var_mask = _fn("raster_var_mask", c_void_p, c_void_p)
raster_mask_region_name = _fn("raster_mask_region_name", c_char_p, c_void_p,
                              c_int32)

# ---- netCDF (libraster's own libnetcdf) ---------------------------------------
nc_strerror = _fn("nc_strerror", c_char_p, c_int)
nc_inq = _fn("nc_inq", c_int, c_int, POINTER(c_int), POINTER(c_int),
             POINTER(c_int), POINTER(c_int))
nc_inq_dimids = _fn("nc_inq_dimids", c_int, c_int, POINTER(c_int),
                    POINTER(c_int), c_int)
nc_inq_unlimdims = _fn("nc_inq_unlimdims", c_int, c_int, POINTER(c_int),
                       POINTER(c_int))
nc_inq_dim = _fn("nc_inq_dim", c_int, c_int, c_int, c_char_p, c_size_p)
nc_inq_varid = _fn("nc_inq_varid", c_int, c_int, c_char_p, POINTER(c_int))
nc_inq_varids = _fn("nc_inq_varids", c_int, c_int, POINTER(c_int),
                    POINTER(c_int))
nc_inq_var = _fn("nc_inq_var", c_int, c_int, c_int, c_char_p, POINTER(c_int),
                 POINTER(c_int), POINTER(c_int), POINTER(c_int))
nc_inq_attname = _fn("nc_inq_attname", c_int, c_int, c_int, c_int, c_char_p)
nc_inq_att = _fn("nc_inq_att", c_int, c_int, c_int, c_char_p, POINTER(c_int),
                 c_size_p)
nc_get_att = _fn("nc_get_att", c_int, c_int, c_int, c_char_p, c_void_p)
nc_get_att_string = _fn("nc_get_att_string", c_int, c_int, c_int, c_char_p,
                        POINTER(c_char_p))
nc_free_string = _fn("nc_free_string", c_int, c_size_t, POINTER(c_char_p))
nc_get_vars = _fn("nc_get_vars", c_int, c_int, c_int, c_size_p, c_size_p,
                  c_ptrdiff_p, c_void_p)
nc_inq_var_chunking = _fn("nc_inq_var_chunking", c_int, c_int, c_int,
                          POINTER(c_int), c_size_p)

NC_GLOBAL = -1
NC_MAX_NAME = 256
NC_CHAR = 2
NC_STRING = 12
NC_ERANGE = -60
# netCDF type id -> numpy dtype (NC_CHAR: bytes of one character)
NC_TYPES = {1: np.dtype("i1"), 2: np.dtype("S1"), 3: np.dtype("i2"),
            4: np.dtype("i4"), 5: np.dtype("f4"), 6: np.dtype("f8"),
            7: np.dtype("u1"), 8: np.dtype("u2"), 9: np.dtype("u4"),
            10: np.dtype("i8"), 11: np.dtype("u8")}

# HDF5 (thread-safe builds) keeps its error printing per thread, and
# netCDF turns it off only on the thread that initialised it: on a dask
# worker thread netCDF's probes of absent attributes would print HDF5's
# error stacks. Every thread calling the library turns it off first.
H5Eset_auto2 = _fn("H5Eset_auto2", c_int, ctypes.c_int64, c_void_p, c_void_p)
_THREAD = threading.local()


def quiet_thread() -> None:
    """Turns HDF5's error printing off on the calling thread, once."""
    if not getattr(_THREAD, "quiet", False):
        H5Eset_auto2(0, None, None)  # H5E_DEFAULT
        _THREAD.quiet = True


class _NcLock:
    """netCDF-C is not thread-safe: every call through it (plain variables,
    attributes, inquiries) holds this lock. raster's own reads need none."""

    def __init__(self):
        self._lock = threading.RLock()

    def __enter__(self):
        quiet_thread()
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()


NC_LOCK = _NcLock()


class RasterError(Exception):
    """A failed libraster (or netCDF) call.

    Attributes:
        code: raster's status (RASTER_E*, 1..12), or netCDF's (< 0) for a
            netCDF call.
        message: the detailed message (raster_errmsg() / nc_strerror()).
    """

    def __init__(self, code: int, message: str, what: str = ""):
        self.code = code
        self.message = message
        text = f"{what}: {message}" if what else message
        super().__init__(text)

    def __reduce__(self):
        # exceptions cross process boundaries (dask workers)
        return (RasterError, (self.code, self.message))


def check(rc: int, what: str = "") -> None:
    """Raises RasterError for a raster status other than RASTER_OK."""
    if rc != 0:
        msg = (raster_errmsg() or b"").decode(errors="replace")
        if not msg:
            msg = raster_strerror(rc).decode()
        raise RasterError(rc, msg, what)


def nccheck(st: int, what: str = "") -> None:
    """Raises RasterError for a netCDF status other than NC_NOERR."""
    if st != 0:
        raise RasterError(st, nc_strerror(st).decode(errors="replace"), what)


def sizes(seq) -> "ctypes.Array":
    return (c_size_t * max(1, len(seq)))(*[int(v) for v in seq])


def ptrdiffs(seq) -> "ctypes.Array":
    return (c_ssize_t * max(1, len(seq)))(*[int(v) for v in seq])


def ids_array(ids) -> "ctypes.Array":
    return (c_int32 * max(1, len(ids)))(*[int(v) for v in ids])
