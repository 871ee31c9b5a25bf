"""Files and variables: the low-level API over libraster."""
from __future__ import annotations

import ctypes
import os
import threading
import weakref
from ctypes import byref, c_int, c_int32, c_size_t, c_void_p
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib as L
from ._lib import NC_LOCK, RasterError, check, nccheck

__all__ = ["File", "Variable", "LAYOUTS", "open_file"]

RASTER_EINVAL = 1
RASTER_ENOTFOUND = 8
LAYOUTS = {"packed": 0, "bbox": 1, "full": 2}

Key = Union[int, slice]


def _name(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode()


def _read_attrs(ncid: int, varid: int, natts: int,
                skip: Iterable[str] = ()) -> Dict[str, object]:
    """The attributes of (ncid, varid) as netCDF stores them (raw: no
    decoding, so xarray decodes _FillValue, scale_factor, ... itself)."""
    attrs: Dict[str, object] = {}
    buf = ctypes.create_string_buffer(L.NC_MAX_NAME + 1)
    for i in range(natts):
        nccheck(L.nc_inq_attname(ncid, varid, i, buf), "attribute name")
        name = _name(buf.raw)
        if name in skip:
            continue
        xtype, n = c_int(), c_size_t()
        nccheck(L.nc_inq_att(ncid, varid, name.encode(), byref(xtype),
                             byref(n)), f"attribute {name}")
        if xtype.value == L.NC_CHAR:
            raw = ctypes.create_string_buffer(n.value + 1)
            nccheck(L.nc_get_att(ncid, varid, name.encode(), raw), name)
            attrs[name] = raw.raw[:n.value].split(b"\0", 1)[0].decode(
                errors="replace")
        elif xtype.value == L.NC_STRING:
            arr = (ctypes.c_char_p * max(1, n.value))()
            nccheck(L.nc_get_att_string(ncid, varid, name.encode(), arr),
                    name)
            vals = [(arr[k] or b"").decode(errors="replace")
                    for k in range(n.value)]
            L.nc_free_string(n.value, arr)
            attrs[name] = vals[0] if len(vals) == 1 else vals
        elif xtype.value in L.NC_TYPES:
            val = np.empty(n.value, L.NC_TYPES[xtype.value])
            nccheck(L.nc_get_att(ncid, varid, name.encode(),
                                 val.ctypes.data_as(c_void_p)), name)
            attrs[name] = val[0] if n.value == 1 else val
        # user-defined types: left out
    return attrs


def _normalise_key(key, shape: Sequence[int]):
    """start, count, stride and the axes to drop, for a basic index key
    (ints and slices; negative steps read forward then flip)."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + \
            key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"{len(key)} indices for {len(shape)} dimensions")
    key = key + (slice(None),) * (len(shape) - len(key))
    start, count, stride, drop, flip = [], [], [], [], []
    for ax, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            idx = range(*k.indices(n))
            if len(idx) and idx.step < 0:
                idx = idx[::-1]
                flip.append(ax)
            start.append(idx.start if len(idx) else 0)
            count.append(len(idx))
            stride.append(idx.step if len(idx) else 1)
        else:
            i = int(k)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {k} out of range for length {n}")
            start.append(i)
            count.append(1)
            stride.append(1)
            drop.append(ax)
    return start, count, stride, drop, flip


class File:
    """A raster file opened read-only (raster_open).

    Holds every variable of the root group: raster variables (stored by
    region) and plain netCDF ones, read through the same libnetcdf. Use as
    a context manager or call close(); any use after close raises
    RasterError. Pickles by path (the copy reopens the file).
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.path.abspath(os.fspath(path))
        h = c_void_p()
        check(L.raster_open(self.path.encode(), 0, byref(h)))  # names it
        self._h: Optional[int] = h.value
        self._ncid: Optional[int] = None
        self._vars: Optional[Dict[str, "Variable"]] = None
        self._byname: Dict[str, "Variable"] = {}
        self._lock = threading.Lock()

    # -- life cycle ---------------------------------------------------------
    def __reduce__(self):
        return (File, (self.path,))

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def closed(self) -> bool:
        return self._h is None

    def close(self) -> None:
        """Closes the file; later use of it or its variables raises."""
        with self._lock:
            h, self._h = self._h, None
        if h is not None:
            with NC_LOCK:
                check(L.raster_close(h), f"closing {self.path}")

    @property
    def handle(self) -> int:
        h = self._h
        if h is None:
            raise RasterError(RASTER_EINVAL, f"{self.path} is closed")
        return h

    @property
    def ncid(self) -> int:
        """netCDF id of the root group (libraster's libnetcdf)."""
        if self._ncid is None:
            with NC_LOCK:
                ncid = L.raster_file_ncid(self.handle)
                if ncid < 0:  # netCDF failed to open it (errmsg says why)
                    check(4, f"opening {self.path} through netCDF")
                self._ncid = ncid
        self.handle  # closed since?
        return self._ncid

    # -- contents -----------------------------------------------------------
    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.variables)} variables"
        return f"<ncregions.File {self.path!r}: {state}>"

    @property
    def raster_variables(self) -> List[str]:
        """Names of the variables stored by region."""
        h = self.handle
        out = []
        for i in range(L.raster_file_nvars(h)):
            v = L.raster_file_var(h, i)
            out.append(L.raster_var_name(v).decode())
        return out

    @property
    def dimensions(self) -> Dict[str, int]:
        """Root group dimensions: name -> current length."""
        return dict(self._dims()[0])

    @property
    def unlimited(self) -> List[str]:
        return list(self._dims()[1])

    def _dims(self):
        ncid = self.ncid
        with NC_LOCK:
            n = c_int()
            nccheck(L.nc_inq_dimids(ncid, byref(n), None, 0), "dimensions")
            ids = (c_int * max(1, n.value))()
            nccheck(L.nc_inq_dimids(ncid, byref(n), ids, 0), "dimensions")
            buf = ctypes.create_string_buffer(L.NC_MAX_NAME + 1)
            dims = {}
            for i in range(n.value):
                ln = c_size_t()
                nccheck(L.nc_inq_dim(ncid, ids[i], buf, byref(ln)), "dim")
                dims[_name(buf.raw)] = ln.value
            nu = c_int()
            nccheck(L.nc_inq_unlimdims(ncid, byref(nu), None), "unlimited")
            uids = (c_int * max(1, nu.value))()
            nccheck(L.nc_inq_unlimdims(ncid, byref(nu), uids), "unlimited")
            unl = []
            for i in range(nu.value):
                nccheck(L.nc_inq_dim(ncid, uids[i], buf, None), "dim")
                unl.append(_name(buf.raw))
        return dims, unl

    def dim_name(self, dimid: int) -> str:
        with NC_LOCK:
            buf = ctypes.create_string_buffer(L.NC_MAX_NAME + 1)
            nccheck(L.nc_inq_dim(self.ncid, dimid, buf, None), "dimension")
        return _name(buf.raw)

    @property
    def attrs(self) -> Dict[str, object]:
        """Global attributes, raw."""
        ncid = self.ncid
        with NC_LOCK:
            natts = c_int()
            nccheck(L.nc_inq(ncid, None, None, byref(natts), None), "nc_inq")
            return _read_attrs(ncid, L.NC_GLOBAL, natts.value)

    @property
    def variables(self) -> Dict[str, "Variable"]:
        """Every variable of the root group, in file order."""
        if self._vars is None:
            ncid = self.ncid
            with NC_LOCK:
                n = c_int()
                nccheck(L.nc_inq_varids(ncid, byref(n), None), "variables")
                ids = (c_int * max(1, n.value))()
                nccheck(L.nc_inq_varids(ncid, byref(n), ids), "variables")
                vars_ = {}
                for i in range(n.value):
                    v = Variable(self, ids[i])
                    # one object per variable: the one __getitem__ gave
                    vars_[v.name] = self._byname.get(v.name, v)
                self._vars = vars_
        self.handle
        return self._vars

    def __getitem__(self, name: str) -> "Variable":
        h = self.handle  # raises once closed
        if self._vars is None:
            # a raster variable by name: no netCDF open (see Variable)
            hit = self._byname.get(name)
            if hit is not None:
                return hit
            rv = c_void_p()
            if L.raster_var_find(h, name.encode(), byref(rv)) == 0:
                v = Variable(self, None, rv.value, name)
                self._byname[name] = v
                return v
        try:
            return self.variables[name]
        except KeyError:
            raise RasterError(RASTER_ENOTFOUND,
                              f"no variable {name!r} in {self.path}") from None

    def __contains__(self, name: str) -> bool:
        return name in self.variables


def open_file(path: Union[str, os.PathLike]) -> File:
    """Opens a raster file read-only (same as File(path))."""
    return File(path)


class Variable:
    """One variable of a File: raster (stored by region) or plain.

    Indexing with ints and slices (``v[0, :, 10:20]``) reads that box only
    (raster_var_get_typed, or nc_get_vars for a plain variable) and returns
    a numpy array of the variable's type, fill values as stored.
    """

    def __init__(self, file: File, varid: Optional[int], rv: int = 0,
                 name: str = ""):
        # varid None: raster variable `rv` found by name (File.__getitem__),
        # its netCDF side (attributes, dimension names) read on first need:
        # a region read then never opens the file through netCDF, as a C
        # program's raster_var_find + raster_region_read does not
        self.file = file
        self._varid = varid
        self._attrs: Optional[Dict[str, object]] = None
        self._dims: Optional[Tuple[str, ...]] = None
        if varid is None:
            self._rv = rv
            self.name = name
            self.xtype = L.raster_var_type(rv)
            return
        ncid = file.ncid
        buf = ctypes.create_string_buffer(L.NC_MAX_NAME + 1)
        with NC_LOCK:
            self._rv = L.raster_var_by_varid(file.handle, ncid, varid)
        self._inquire(buf)
        self.name = _name(buf.raw)

    def _inquire(self, buf=None) -> None:
        """The netCDF side: type, attribute count, dimensions."""
        ncid = self.file.ncid
        xtype, ndims, natts = c_int(), c_int(), c_int()
        with NC_LOCK:
            if self._varid is None:
                vid = c_int()
                nccheck(L.nc_inq_varid(ncid, self.name.encode(), byref(vid)),
                        self.name)
                self._varid = vid.value
            nccheck(L.nc_inq_var(ncid, self._varid, buf, byref(xtype),
                                 byref(ndims), None, byref(natts)),
                    "variable")
            dimids = (c_int * max(1, ndims.value))()
            nccheck(L.nc_inq_var(ncid, self._varid, None, None, None, dimids,
                                 None), "variable")
        self.xtype = xtype.value
        self._natts = natts.value
        self._dimids = [dimids[i] for i in range(ndims.value)]
        self._dims = tuple(self.file.dim_name(d) for d in self._dimids)

    @property
    def varid(self) -> int:
        """netCDF id of the variable (its placeholder, for raster's)."""
        if self._varid is None or self._dims is None:
            self._inquire()
        return self._varid

    @property
    def dimensions(self) -> Tuple[str, ...]:
        if self._dims is None:
            self._inquire()
        return self._dims

    def __repr__(self) -> str:
        kind = "raster" if self.is_raster else "plain"
        return (f"<ncregions.Variable {self.name} {kind} {self.dtype} "
                f"{dict(zip(self.dimensions, self.shape))}>")

    @property
    def is_raster(self) -> bool:
        """True when the variable is stored by region."""
        return bool(self._rv)

    @property
    def handle(self) -> int:
        self.file.handle  # raises once the file is closed
        if not self._rv:
            raise RasterError(RASTER_EINVAL,
                              f"{self.name} is not stored by region")
        return self._rv

    @property
    def dtype(self) -> np.dtype:
        if self.xtype not in L.NC_TYPES:
            raise RasterError(11, f"{self.name}: netCDF type {self.xtype} "
                              "is not supported")
        return L.NC_TYPES[self.xtype]

    @property
    def shape(self) -> Tuple[int, ...]:
        if self._rv:  # raster's own, without netCDF
            n = L.raster_var_ndims(self.handle)
            shape = (c_size_t * max(1, n))()
            check(L.raster_var_dims(self.handle, None, shape, None),
                  f"{self.name}: shape")
            return tuple(shape[:n])
        dims = self.file.dimensions
        return tuple(dims[d] for d in self.dimensions)

    @property
    def ndim(self) -> int:
        if self._rv:
            return L.raster_var_ndims(self.handle)
        return len(self.dimensions)

    @property
    def attrs(self) -> Dict[str, object]:
        """The variable's attributes, raw (raster's note left out)."""
        if self._attrs is None:
            vid = self.varid  # the netCDF side first (it takes the lock)
            with NC_LOCK:
                self._attrs = _read_attrs(self.file.ncid, vid, self._natts,
                                          skip=("raster_note",))
        return dict(self._attrs)

    def chunks(self) -> Optional[Tuple[int, ...]]:
        """Base chunk shape (raster) or netCDF chunking; None: contiguous."""
        if self._rv:
            n = self.ndim
            chunk = (c_size_t * n)()
            check(L.raster_var_dims(self.handle, None, None, chunk), "chunks")
            return tuple(chunk)
        with NC_LOCK:
            st = c_int()
            chunk = (c_size_t * max(1, self.ndim))()
            nccheck(L.nc_inq_var_chunking(self.file.ncid, self.varid,
                                          byref(st), chunk), "chunking")
        return tuple(chunk[:self.ndim]) if st.value == 0 and self.ndim else None

    # -- reading ----------------------------------------------------------
    def read(self, start: Sequence[int], count: Sequence[int],
             stride: Optional[Sequence[int]] = None) -> np.ndarray:
        """Reads the box start/count/stride (as nc_get_vars) into a new
        array of shape count."""
        n = self.ndim
        if len(start) != n or len(count) != n or (stride is not None
                                                  and len(stride) != n):
            raise RasterError(RASTER_EINVAL,
                              f"{self.name}: {n} dimensions, box of "
                              f"{len(start)}/{len(count)}")
        out = np.empty(tuple(int(c) for c in count), self.dtype)
        if out.size == 0:
            return out
        st = L.sizes(start)
        ct = L.sizes(count)
        sd = L.ptrdiffs(stride) if stride is not None else None
        buf = out.ctypes.data_as(c_void_p)
        if self._rv:
            L.quiet_thread()
            rc = L.raster_var_get_typed(self.handle, st, ct, sd, None, buf, 0)
            check(rc, f"reading {self.name}")
        else:
            self.file.handle
            with NC_LOCK:
                nccheck(L.nc_get_vars(self.file.ncid, self.varid, st, ct, sd,
                                      buf), f"reading {self.name}")
        return out

    def __getitem__(self, key) -> np.ndarray:
        start, count, stride, drop, flip = _normalise_key(key, self.shape)
        out = self.read(start, count, stride)
        if flip:
            sl = [slice(None)] * out.ndim
            for ax in flip:
                sl[ax] = slice(None, None, -1)
            out = out[tuple(sl)]
        if drop:
            out = out.reshape([c for i, c in enumerate(out.shape)
                               if i not in drop])
        return out

    # -- regions ------------------------------------------------------------
    def region_ids(self, regions) -> List[int]:
        """Region ids for ids or names (raster_region_lookup: a decimal id,
        or a CF flag name, case-insensitive, '_' matching ' ')."""
        if isinstance(regions, (str, int, np.integer)):
            regions = [regions]
        ids = []
        for r in regions:
            if isinstance(r, (int, np.integer)):
                ids.append(int(r))
                continue
            if not isinstance(r, str):
                raise TypeError(f"region {r!r}: an id (int) or a name (str)")
            rid = c_int32()
            check(L.raster_region_lookup(self.handle, r.encode(), byref(rid)),
                  f"{self.name}: region {r!r}")
            ids.append(rid.value)
        if not ids:
            raise RasterError(RASTER_EINVAL, "no region given")
        return ids

    def region_name(self, rid: int) -> Optional[str]:
        """The stored name of region id `rid`, or None."""
        m = L.raster_var_mask(self.handle)
        if not m:  # the stored tables failed their check
            check(9, f"{self.name}: mask")
        s = L.raster_mask_region_name(m, int(rid))
        return s.decode() if s else None

    @staticmethod
    def _layout(layout: str) -> int:
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r}: one of "
                             f"{', '.join(LAYOUTS)}")
        return LAYOUTS[layout]

    def region_size(self, ids: Sequence[int], layout: str = "packed") -> int:
        n = c_size_t()
        check(L.raster_region_size(self.handle, L.ids_array(ids), len(ids),
                                   self._layout(layout), byref(n)),
              f"{self.name}: regions {list(ids)}")
        return n.value

    def region_bbox(self, ids: Sequence[int]) -> Tuple[int, int, int, int]:
        """The regions' bounding box (y0, x0, y1, x1), half-open."""
        box = (c_size_t * 4)()
        check(L.raster_region_bbox(self.handle, L.ids_array(ids), len(ids),
                                   box), f"{self.name}: regions {list(ids)}")
        return tuple(box)

    def region_cells(self, ids: Sequence[int]) -> Tuple[np.ndarray,
                                                        np.ndarray]:
        """Grid rows and columns of the regions' cells, in packed order."""
        n = self.region_size(ids, "packed")
        ys = np.empty(n, np.uintp)
        xs = np.empty(n, np.uintp)
        check(L.raster_region_cells(
            self.handle, L.ids_array(ids), len(ids),
            ys.ctypes.data_as(L.c_size_p), xs.ctypes.data_as(L.c_size_p)),
            f"{self.name}: regions {list(ids)}")
        # size_t and intp have one size: views, not copies
        return ys.view(np.intp), xs.view(np.intp)

    def _region_buffer(self, ids, ocount, lay: int, shape) -> np.ndarray:
        """An array of `shape` over raster_region_alloc()'s buffer (large
        ones mapped with huge-page advice: a fresh np.empty costs a page
        fault per 4 KiB on first write, which made the read several times
        slower than the C API's), freed when the array and its views go."""
        ptr, nbytes = c_void_p(), c_size_t()
        check(L.raster_region_alloc(self.handle, L.ids_array(ids), len(ids),
                                    L.sizes(ocount), lay, byref(ptr),
                                    byref(nbytes)),
              f"{self.name}: a buffer for regions {list(ids)}")
        want = int(np.prod(shape)) * self.dtype.itemsize
        if nbytes.value < want:  # not the size read_region computed
            L.raster_region_free(ptr, nbytes.value)
            raise RasterError(RASTER_EINVAL, f"{self.name}: region buffer "
                              f"of {nbytes.value} bytes for {want}")
        mem = (ctypes.c_char * nbytes.value).from_address(ptr.value)
        weakref.finalize(mem, L.raster_region_free, ptr.value, nbytes.value)
        return np.frombuffer(mem, self.dtype, int(np.prod(shape))).reshape(
            shape)

    def read_region(self, regions, layout: str = "packed",
                    outer: Optional[Sequence[Key]] = None) -> np.ndarray:
        """Reads regions (ids or names) in `layout` ("packed": (outer...,
        cells) in numpy's var[..., isin(mask, ids)] order; "bbox": (outer...,
        y, x) over their bounding box, the fill value outside; "full": the
        grid) over the outer box `outer` (ints or unit-step slices, one per
        outer dimension; default all). Raw values of the variable's type."""
        lay = self._layout(layout)
        ids = self.region_ids(regions)
        oshape = self.shape[:-2]
        if outer is None:
            outer = [slice(None)] * len(oshape)
        if not isinstance(outer, (list, tuple)):
            outer = [outer]
        if len(outer) != len(oshape):
            raise IndexError(f"{len(outer)} outer indices for "
                             f"{len(oshape)} outer dimensions")
        ost, oct_, drop = [], [], []
        for ax, (k, n) in enumerate(zip(outer, oshape)):
            if isinstance(k, slice):
                s0, s1, step = k.indices(n)
                if step != 1:
                    raise IndexError("region reads take unit-step slices")
                ost.append(s0)
                oct_.append(max(0, s1 - s0))
            else:
                i = int(k) + (n if int(k) < 0 else 0)
                if not 0 <= i < n:
                    raise IndexError(f"index {k} out of range for {n}")
                ost.append(i)
                oct_.append(1)
                drop.append(ax)
        size = self.region_size(ids, layout)
        if lay == 0:
            plane: Tuple[int, ...] = (size,)
        elif lay == 1:
            y0, x0, y1, x1 = self.region_bbox(ids)
            plane = (y1 - y0, x1 - x0)
        else:
            plane = self.shape[-2:]
        shape = tuple(oct_) + plane
        if int(np.prod(shape)) == 0:
            out = np.empty(shape, self.dtype)
        else:
            L.quiet_thread()
            out = self._region_buffer(ids, oct_, lay, shape)
            check(L.raster_region_read(
                self.handle, L.ids_array(ids), len(ids), L.sizes(ost),
                L.sizes(oct_), lay, out.ctypes.data_as(c_void_p)),
                f"reading regions {ids} of {self.name}")
        if drop:
            out = out.reshape([c for i, c in enumerate(out.shape)
                               if i not in drop])
        return out
