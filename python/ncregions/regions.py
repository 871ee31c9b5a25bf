"""Region reads and regional reductions as xarray DataArrays.

region() reads the cells of one or more regions and nothing else:
``layout="packed"`` gives (outer..., cell) in numpy's
``var[..., isin(mask, ids)]`` order with each cell's grid row and column
(cell_y, cell_x), region id and the file's 2-D coordinates (TLAT/TLONG,
XLAT/XLONG: those the variable's ``coordinates`` attribute names) as
coordinates; ``layout="bbox"`` gives (outer..., y, x) over the regions'
bounding box, NaN outside them. reduce() computes mean, sum, min, max or
std over a region's cells (optionally weighted) from the packed read.
Both decode values as xarray does for netCDF (``_FillValue`` to NaN,
scale_factor/add_offset).
"""
from __future__ import annotations

import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import xarray as xr

from ._lib import RasterError
from .core import File, Variable

__all__ = ["region", "reduce", "RegionAccessor"]

Regions = Union[int, str, Sequence[Union[int, str]]]
_HOWS = ("mean", "sum", "min", "max", "std")


def _warm_xarray() -> None:
    """xarray imports optional array modules (cupy, pint, sparse...) on
    first need; a failed import's traceback keeps the frames it ran under,
    and so the first region() call's whole result, alive for the life of
    the process. Done here, at import, those frames hold nothing large."""
    v = xr.Variable(("cell",), np.zeros(1, np.float32))
    c = {"cell_y": xr.Variable("cell", np.zeros(1, np.intp))}
    _ = xr.Dataset({"v": v}, coords=c)["v"].values
    t = xr.Variable(("t",), np.zeros(1), attrs={
        "units": "days since 0001-01-01", "calendar": "noleap"})
    _ = xr.conventions.decode_cf_variable("t", t).values


_warm_xarray()


def _source(source, var: Optional[str]) -> Tuple[File, str, bool]:
    """(File, variable name, whether we opened the File) for a path, a
    File, or a Dataset/DataArray opened by engine="ncregions"."""
    if isinstance(source, File):
        f, own = source, False
    elif isinstance(source, (str, os.PathLike)):
        f, own = File(source), True
    elif isinstance(source, (xr.Dataset, xr.DataArray)):
        enc = source.encoding
        path = enc.get("source")
        if isinstance(source, xr.DataArray) and var is None:
            var = enc.get("ncregions_var", source.name)
        if not path:
            raise RasterError(1, "this xarray object carries no source file "
                              "(open it with engine='ncregions')")
        f, own = File(path), True
    else:
        raise TypeError("source: a path, an ncregions.File, or an xarray "
                        "object opened with engine='ncregions'")
    if var is None:
        if own:
            f.close()
        raise RasterError(1, "which variable? (var=...)")
    return f, var, own


# attributes that make xarray's CF decoding more than fill values to NaN
_CODED = ("scale_factor", "add_offset", "_Unsigned", "dtype")
_FILLS = ("_FillValue", "missing_value")
_BLOCK = 1 << 20  # values per block of in-place work: temporaries stay small
_POOL = None


def _pool():
    """Threads for the blocks of large decodes and reductions (raster's
    own reads use threads too); made on first use."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(max(1, min(8, os.cpu_count() or 1)),
                                   thread_name_prefix="ncregions")
    return _POOL


def _fill_values(dtype: np.dtype, attrs: Mapping) -> List:
    """The fill values (_FillValue, missing_value) of raw values of
    `dtype`, NaN aside."""
    fills = set()
    for k in _FILLS:
        if k in attrs:
            for f in np.ravel(np.asarray(attrs[k], dtype)):
                if not (dtype.kind == "f" and np.isnan(f)):
                    fills.add(f.item())
    return sorted(fills)


def _mask_fills(values: np.ndarray, attrs: Mapping) -> None:
    """Sets the fill values (_FillValue, missing_value) of float `values`
    to NaN in place, block by block."""
    fills = _fill_values(values.dtype, attrs)
    if not fills or values.size == 0:
        return
    flat = values.reshape(-1)

    def one(i):
        blk = flat[i:i + _BLOCK]
        for f in fills:
            hit = blk == f
            if hit.any():  # most blocks of a region hold none
                np.putmask(blk, hit, np.nan)
    blocks = range(0, flat.size, _BLOCK)
    if len(blocks) > 1:
        list(_pool().map(one, blocks))
    elif blocks:
        one(0)


def _decode(name: str, dims, values: np.ndarray, attrs: Mapping,
            decode: bool) -> xr.Variable:
    if decode and values.dtype.kind == "f" and values.flags.writeable and \
            values.flags.c_contiguous and not any(k in attrs for k in _CODED):
        # what xarray's decoding does to such data (fills to NaN, the fill
        # attributes dropped), in place: no copy of a region-sized array
        _mask_fills(values, attrs)
        return xr.Variable(dims, values, attrs={
            k: a for k, a in attrs.items() if k not in _FILLS})
    v = xr.Variable(dims, values, attrs=dict(attrs))
    if not decode:
        return v
    out = xr.conventions.decode_cf_variable(name, v, decode_times=False)
    return xr.Variable(out.dims, np.asarray(out.values), attrs=out.attrs)


def _coord_names(f: File, v: Variable) -> List[str]:
    """The 2-D coordinate variables on v's grid: those its `coordinates`
    attribute names, else those with latitude/longitude units or
    standard_name."""
    grid = v.dimensions[-2:]
    named = str(v.attrs.get("coordinates", "")).split()
    out = [n for n in named if n in f.variables and
           f.variables[n].dimensions == grid]
    if out or named:
        return out
    for n, c in f.variables.items():
        if c.dimensions != grid or n == v.name:
            continue
        a = c.attrs
        if str(a.get("units", "")).startswith("degree") or \
                a.get("standard_name") in ("latitude", "longitude"):
            out.append(n)
    return out


def _outer_coords(f: File, v: Variable, outer) -> Dict[str, xr.Variable]:
    """The 1-D coordinate variables of v's outer dimensions, subset."""
    coords = {}
    for d, k in zip(v.dimensions[:-2], outer):
        if d in f.variables and f.variables[d].dimensions == (d,):
            c = f.variables[d]
            key = k if isinstance(k, slice) else slice(int(k), int(k) + 1)
            vals = c[key]
            dv = xr.conventions.decode_cf_variable(
                d, xr.Variable((d,), vals, attrs=c.attrs))
            if isinstance(k, slice):
                coords[d] = dv
            else:
                coords[d] = xr.Variable((), dv.values[0], attrs=dv.attrs)
    return coords


def _outer_key(v: Variable, isel: Optional[Mapping[str, Union[int, slice]]]):
    outer = [slice(None)] * (v.ndim - 2)
    for d, k in (isel or {}).items():
        if d not in v.dimensions[:-2]:
            raise RasterError(1, f"{v.name} has no outer dimension {d!r} "
                              f"(outer: {list(v.dimensions[:-2])})")
        outer[v.dimensions.index(d)] = k
    return outer


def _region_ids_of_cells(v: Variable, ids: Sequence[int], ys, xs,
                         box) -> np.ndarray:
    """The region id of each packed cell (a bbox-sized scratch grid)."""
    y0, x0, y1, x1 = box
    grid = np.zeros((y1 - y0, x1 - x0), np.int32)
    for rid in ids:
        ry, rx = v.region_cells([rid])
        grid[ry - y0, rx - x0] = rid
    return grid[ys - y0, xs - x0]


def region(source, var: Optional[str] = None, regions: Regions = (),
           layout: str = "packed",
           isel: Optional[Mapping[str, Union[int, slice]]] = None,
           decode: bool = True) -> xr.DataArray:
    """Reads variable `var` over `regions` (ids or names, one or several),
    reading only those regions' bytes.

    Args:
        source: a raster file's path, an ncregions.File, or a Dataset or
            DataArray opened with engine="ncregions" (a DataArray names
            the variable itself).
        var: the variable (stored by region).
        regions: a region id, a name (CF flag_meanings, case-insensitive,
            '_' matching ' '), or a list of them (their union).
        layout: "packed": dims (outer..., "cell"), numpy's
            ``var[..., isin(mask, ids)]`` order, with coordinates cell_y,
            cell_x, region and the 2-D coordinate variables per cell;
            "bbox": dims (outer..., y, x) over the regions' bounding box,
            NaN outside the regions, with the box's coordinates.
        isel: ints or unit-step slices for outer dimensions, by name
            (e.g. ``{"time": 0}``); default all.
        decode: apply CF decoding (_FillValue/missing_value to NaN,
            scale_factor, add_offset) as xarray does.

    Returns:
        An xarray DataArray named `var`.

    Raises:
        RasterError: no such file, variable or region; ValueError: bad
        layout.
    """
    if layout not in ("packed", "bbox"):
        raise ValueError(f"layout {layout!r}: 'packed' or 'bbox'")
    f, name, own = _source(source, var)
    try:
        v = f[name]
        if not v.is_raster:
            raise RasterError(1, f"{name} is not stored by region")
        ids = v.region_ids(regions)
        outer = _outer_key(v, isel)
        raw = v.read_region(ids, layout, outer)
        odims = [d for d, k in zip(v.dimensions[:-2], outer)
                 if isinstance(k, slice)]
        coords = _outer_coords(f, v, outer)
        ys, xs = v.region_cells(ids)
        box = v.region_bbox(ids)
        if len(ids) == 1:
            rids = np.full(ys.size, ids[0], np.int32)
        else:
            rids = _region_ids_of_cells(v, ids, ys, xs, box)
        y0, x0, y1, x1 = box
        gy, gx = v.dimensions[-2:]
        cnames = _coord_names(f, v)
        if layout == "packed":
            data = _decode(name, odims + ["cell"], raw, v.attrs, decode)
            coords["cell_y"] = xr.Variable("cell", ys)
            coords["cell_x"] = xr.Variable("cell", xs)
            coords["region"] = xr.Variable("cell", rids)
            for c in cnames:
                cv = f[c]
                sub = cv.read([y0, x0], [y1 - y0, x1 - x0])
                coords[c] = _decode(c, ["cell"], sub[ys - y0, xs - x0],
                                    cv.attrs, decode)
        else:
            data = _decode(name, odims + [gy, gx], raw, v.attrs, decode)
            vals = data.values
            if not np.issubdtype(vals.dtype, np.floating):
                vals = vals.astype(np.float64)
            inside = np.zeros((y1 - y0, x1 - x0), bool)
            inside[ys - y0, xs - x0] = True
            vals = np.where(inside, vals, np.nan).astype(vals.dtype)
            data = xr.Variable(data.dims, vals, attrs=data.attrs)
            for d, a, b in ((gy, y0, y1), (gx, x0, x1)):
                if d in f.variables and f[d].dimensions == (d,):
                    cv = f[d]
                    coords[d] = _decode(d, [d], cv[a:b], cv.attrs, decode)
            for c in cnames:
                cv = f[c]
                coords[c] = _decode(c, [gy, gx], cv.read(
                    [y0, x0], [y1 - y0, x1 - x0]), cv.attrs, decode)
        # through a Dataset: DataArray(coords=...) deep-copies every
        # coordinate (cell_y, cell_x, region: region-sized arrays)
        da = xr.Dataset({name: data}, coords=coords)[name]
        da.attrs.pop("coordinates", None)  # they are coordinates now
        da.attrs["regions"] = ids
        da.attrs["bbox"] = list(box)  # y0, x0, y1, x1, half-open
        return da
    finally:
        if own:
            f.close()


def _weights_of_cells(f: File, v: Variable, weights, ys, xs, box):
    if weights is None:
        return None
    y0, x0, y1, x1 = box
    if isinstance(weights, str):
        w = f[weights]
        if w.dimensions != v.dimensions[-2:]:
            raise RasterError(1, f"weights {weights!r} are not on the grid "
                              f"{v.dimensions[-2:]}")
        sub = w.read([y0, x0], [y1 - y0, x1 - x0])
        w = np.asarray(_decode(weights, ["y", "x"], sub, w.attrs,
                               True).values, np.float64)
        ys, xs = ys - y0, xs - x0
    else:
        w = np.asarray(weights, np.float64)
        if w.shape != v.shape[-2:]:
            raise RasterError(1, f"weights of shape {w.shape}, grid "
                              f"{v.shape[-2:]}")
    w = w[ys, xs]
    if np.isnan(w).any():  # as xarray's weighted(): no silent NaN results
        raise RasterError(1, "weights are missing (NaN) on cells of the "
                          "region")
    return w


def _reduce_cells(x: np.ndarray, w: Optional[np.ndarray], how: str):
    """Reduces the last axis of x (NaN: missing) with weights w."""
    x = x.astype(np.float64, copy=False)
    valid = ~np.isnan(x)
    if how in ("min", "max"):
        if w is not None:
            raise ValueError(f"weights do not apply to {how}")
        with np.errstate(all="ignore"):
            fn = np.fmin.reduce if how == "min" else np.fmax.reduce
            out = fn(x, axis=-1) if x.shape[-1] else np.full(x.shape[:-1],
                                                            np.nan)
        return out
    wt = np.ones(x.shape[-1]) if w is None else w
    wv = np.where(valid, wt, 0.0)
    xz = np.where(valid, x, 0.0)
    s = (xz * wv).sum(axis=-1)
    if how == "sum":
        return s
    n = wv.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / n
        if how == "mean":
            return mean
        dev = np.where(valid, x - mean[..., None], 0.0)
        return np.sqrt((dev * dev * wv).sum(axis=-1) / n)


def _sum_mean(x: np.ndarray, how: str, fills) -> np.ndarray:
    """Unweighted sum or mean of x's last axis skipping NaN and the raw
    fill values `fills`, accumulated in float64 without a float64 copy of
    x (the common case, and the one that must cost little more than the
    read): the plain sums first (a NaN among the values makes its row's
    sum NaN), a masked sum only for the rows that have NaN or fills."""
    # einsum sums float32 into float64 faster than add.reduce's buffered
    # cast (the same sums)
    s = np.asarray(np.einsum("...i->...", x, dtype=np.float64), np.float64)
    redo = np.isnan(s)
    for f in fills:
        redo |= (x == f).any(axis=-1)
    n = np.full(s.shape, x.shape[-1], np.float64)
    if redo.any():
        sub = x[redo]
        bad = np.isnan(sub)
        for f in fills:
            bad |= sub == f
        s[redo] = np.add.reduce(sub, axis=-1, dtype=np.float64, where=~bad)
        n[redo] = sub.shape[-1] - np.count_nonzero(bad, axis=-1)
    if how == "sum":
        return s
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / n


def _reduce_blocks(x: np.ndarray, w: Optional[np.ndarray], how: str,
                   fills=()):
    """_reduce_cells (or _sum_mean when it applies: `fills` are then x's
    raw fill values) over blocks of x's leading rows, on _pool's threads
    for large x (numpy's loops release the GIL): temporaries stay about
    _BLOCK values per thread, not several float64 copies of x."""
    fast = w is None and how in ("sum", "mean") and x.dtype.kind == "f"

    def one(blk):
        return _sum_mean(blk, how, fills) if fast else \
            _reduce_cells(_masked(blk, fills), w, how)
    if x.ndim < 2 or x.size <= _BLOCK:
        return one(x)
    rows = x.reshape(-1, x.shape[-1])
    step = max(1, _BLOCK // max(1, x.shape[-1]))
    blocks = [rows[i:i + step] for i in range(0, rows.shape[0], step)]
    out = np.concatenate(list(_pool().map(one, blocks)))
    return out.reshape(x.shape[:-1])


def _masked(x: np.ndarray, fills) -> np.ndarray:
    """x with its raw fill values as NaN (a float copy when any)."""
    if not fills:
        return x
    x = x.astype(np.float64)
    for f in fills:
        x[x == f] = np.nan
    return x


def reduce(source, var: Optional[str] = None, regions: Regions = (),
           how: str = "mean", weights: Union[None, str, np.ndarray] = None,
           isel: Optional[Mapping[str, Union[int, slice]]] = None
           ) -> xr.DataArray:
    """Reduces variable `var` over the cells of each region.

    Only the regions' cells are read (one packed read per region); the
    reduction runs in numpy over the cells, skipping NaN (fill values).

    Args:
        source, var, isel: as region().
        regions: one region (id or name): the result has the outer dims;
            a list: one result per region along a new dim "region".
        how: "mean", "sum", "min", "max" or "std" (population, weighted
            when weights are given).
        weights: None, the name of a 2-D variable of the file on the grid
            (e.g. "TAREA"), or a 2-D array of the grid's shape (e.g.
            ``np.cos(np.deg2rad(lat))``); for mean, sum and std.

    Returns:
        A DataArray over the outer dimensions (and "region").
    """
    if how not in _HOWS:
        raise ValueError(f"how {how!r}: one of {', '.join(_HOWS)}")
    single = isinstance(regions, (str, int, np.integer))
    f, name, own = _source(source, var)
    try:
        v = f[name]
        if not v.is_raster:
            raise RasterError(1, f"{name} is not stored by region")
        ids = v.region_ids(regions)
        outer = _outer_key(v, isel)
        odims = [d for d, k in zip(v.dimensions[:-2], outer)
                 if isinstance(k, slice)]
        coords = _outer_coords(f, v, outer)
        results = []
        for rid in ids:
            w = None
            if weights is not None:
                ys, xs = v.region_cells([rid])
                w = _weights_of_cells(f, v, weights, ys, xs,
                                      v.region_bbox([rid]))
            raw = v.read_region([rid], "packed", outer)
            if raw.dtype.kind == "f" and \
                    not any(k in v.attrs for k in _CODED):
                # fill values skipped where they lie: no decoding pass
                results.append(_reduce_blocks(
                    raw, w, how, _fill_values(raw.dtype, v.attrs)))
            else:
                x = _decode(name, odims + ["cell"], raw, v.attrs,
                            True).values
                results.append(_reduce_blocks(x, w, how))
                del x
            del raw
        attrs = {k: a for k, a in v.attrs.items()
                 if k in ("units", "long_name", "standard_name")}
        attrs["cell_methods"] = f"cell: {how}" + (
            f" (weighted by {weights})" if isinstance(weights, str) else
            " (weighted)" if weights is not None else "")
        if single:
            return xr.DataArray(results[0], dims=odims, coords=coords,
                                name=name, attrs=attrs)
        names = [v.region_name(r) or str(r) for r in ids]
        coords["region"] = xr.Variable("region", np.array(ids))
        coords["region_name"] = xr.Variable("region", np.array(names))
        return xr.DataArray(np.stack(results), dims=["region"] + odims,
                            coords=coords, name=name, attrs=attrs)
    finally:
        if own:
            f.close()


@xr.register_dataarray_accessor("ncregions")
class RegionAccessor:
    """``da.ncregions.region(...)`` / ``.reduce(...)`` on a DataArray
    opened with engine="ncregions": region() and reduce() of its file and
    variable, whatever it was renamed to, over the whole variable."""

    def __init__(self, da: xr.DataArray):
        self._da = da

    def region(self, regions: Regions, layout: str = "packed",
               isel=None, decode: bool = True) -> xr.DataArray:
        """region() of this variable (see ncregions.region)."""
        return region(self._da, None, regions, layout, isel, decode)

    def reduce(self, regions: Regions, how: str = "mean", weights=None,
               isel=None) -> xr.DataArray:
        """reduce() of this variable (see ncregions.reduce)."""
        return reduce(self._da, None, regions, how, weights, isel)
