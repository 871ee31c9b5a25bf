"""ncregions against plain netCDF (the PyPI netCDF4 wheel), element by
element: every variable and type, hyperslabs, every region packed and
bbox, reductions, laziness, dask, pickling, bad input."""
import os
import pickle
import subprocess
import sys

import netCDF4
import numpy as np
import pytest
import xarray as xr

import ncregions
from ncregions import RasterError

from conftest import NAMES, NX, NY, RASTER_VARS, VARS


def raw_plain(path, name):
    with netCDF4.Dataset(path) as d:
        v = d[name]
        v.set_auto_maskandscale(False)
        return np.asarray(v[:]), {k: v.getncattr(k) for k in v.ncattrs()}


def eq(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.dtype.kind == "f":
        assert np.array_equal(a, b, equal_nan=True)
    else:
        assert np.array_equal(a, b)


# ---- the low-level API ---------------------------------------------------------
@pytest.mark.parametrize("name", RASTER_VARS + ["TLAT", "TAREA",
                                                "REGION_MASK", "time"])
def test_raw_values_equal_plain(files, name):
    plain, rast = files
    want, wattrs = raw_plain(plain, name)
    with ncregions.File(rast) as f:
        v = f[name]
        assert v.is_raster == (name in RASTER_VARS)
        eq(v[...], want)
        assert v.dtype == want.dtype
        got = v.attrs
        assert set(got) == set(wattrs)  # raster's note left out
        for k in wattrs:
            eq(np.asarray(got[k]), np.asarray(wattrs[k]))


@pytest.mark.parametrize("name", ["TEMP", "COUNT", "BIG", "TINY"])
def test_hyperslabs_equal_plain(files, name):
    plain, rast = files
    want, _ = raw_plain(plain, name)
    keys = [(0,), (-1, slice(2, 9), slice(None, None, 3)),
            (Ellipsis, slice(None, None, -2)), (slice(1, 3), 2),
            (Ellipsis, 7, slice(30, 1, -4)), (slice(5, 2),)]
    with ncregions.File(rast) as f:
        for k in keys:
            eq(f[name][k], want[k])


def test_file_contents(files):
    plain, rast = files
    with ncregions.File(rast) as f, netCDF4.Dataset(plain) as d:
        assert f.raster_variables == RASTER_VARS
        assert list(f.variables) == list(d.variables)
        assert f.dimensions == {k: len(v) for k, v in d.dimensions.items()}
        assert f.unlimited == ["time"]
        # rasterconvert prepends its line to the CF history
        assert set(f.attrs) == {"title", "history"}, f.attrs
        assert f.attrs["title"] == "ncregions test"
        assert "rasterconvert" in f.attrs["history"].splitlines()[0]
        assert f["TEMP"].dimensions == d["TEMP"].dimensions
        assert f["TEMP"].chunks() == (1, 1, 5, 6)
    assert "closed" in repr(f)


# ---- xarray -----------------------------------------------------------------
def test_xarray_equals_netcdf4_engine(files):
    plain, rast = files
    with xr.open_dataset(rast, engine="ncregions") as a, \
            xr.open_dataset(plain, engine="netcdf4") as b:
        assert set(a.variables) == set(b.variables)
        assert set(a.coords) == set(b.coords)
        for name in b.variables:
            va, vb = a[name], b[name]
            assert va.dims == vb.dims
            eq(va.values, vb.values)
            assert va.attrs.keys() == vb.attrs.keys(), name
            for k in va.attrs:
                eq(va.attrs[k], vb.attrs[k])
            for k in ("_FillValue", "scale_factor", "add_offset", "dtype"):
                assert (k in va.encoding) == (k in vb.encoding), (name, k)
        assert a.TEMP.isnull().sum() > 0  # _FillValue became NaN
        assert a.encoding["unlimited_dims"] == {"time"}
        # lazy indexing, int and slices
        eq(a.TEMP[1, 2].values, b.TEMP[1, 2].values)
        eq(a.COUNT.isel(nlat=5).values, b.COUNT.isel(nlat=5).values)
        eq(a.TEMP[:, ::-1, 3:20:4, -1].values, b.TEMP[:, ::-1, 3:20:4, -1].values)


def rchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="no /proc")
def test_lazy_reads_only_what_it_needs(bigfile):
    _, rast = bigfile
    with xr.open_dataset(rast, engine="ncregions") as ds:
        ds.TEMP[7, 5].values  # warm up: tables read once
        r0 = rchar()
        one = ds.TEMP[0, 0].values
        r1 = rchar()
    # the whole variable from a file opened afresh (its tables counted too):
    # an open file keeps the bytes of its small reads (libraster's span
    # cache), which are not read again
    with xr.open_dataset(rast, engine="ncregions") as ds:
        w0 = rchar()
        whole = ds.TEMP.values
        w1 = rchar()
    eq(one, whole[0, 0])
    nrec = whole.shape[0] * whole.shape[1]
    one_bytes, all_bytes = r1 - r0, w1 - w0
    assert all_bytes >= whole.nbytes  # the counter sees the data
    # one record of 48 costs about a 48th (tables and tile edges aside)
    assert one_bytes < 3 * one.nbytes, (one_bytes, one.nbytes)
    assert one_bytes * nrec < 3 * all_bytes, (one_bytes, all_bytes)


# the plain file's own chunks are others: xarray's warning says so
@pytest.mark.filterwarnings("ignore:The specified chunks separate")
@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_dask_two_workers(files, scheduler):
    import dask
    plain, rast = files
    chunks = {"time": 1, "z_t": 2, "nlat": 10, "nlon": 32}
    with xr.open_dataset(rast, engine="ncregions", chunks=chunks) as a, \
            xr.open_dataset(plain, engine="netcdf4", chunks=chunks) as b:
        assert a.TEMP.chunks == b.TEMP.chunks
        with dask.config.set(scheduler=scheduler, num_workers=2):
            got = a.TEMP.mean(("nlat", "nlon")).compute()
            full = a.SALT.compute()
        # the same chunks reduce in the same order: the same bits
        want = b.TEMP.mean(("nlat", "nlon")).compute(scheduler="sync")
        eq(got.values, want.values)
        eq(full.values, b.SALT.values)


def test_pickle_by_path(files):
    plain, rast = files
    with xr.open_dataset(rast, engine="ncregions") as a:
        blob = pickle.dumps(a.TEMP)
        assert len(blob) < 20000  # no data inside: a path
    da = pickle.loads(blob)
    eq(da.values, xr.open_dataset(plain).TEMP.values)
    f = ncregions.File(rast)
    g = pickle.loads(pickle.dumps(f))
    assert g.path == f.path and not g.closed
    f.close(), g.close()


# ---- regions ------------------------------------------------------------------
def plain_arrays(plain, name):
    with xr.open_dataset(plain, engine="netcdf4") as b:
        return b[name].load(), b.REGION_MASK.values, b.TLAT.values, \
            b.TAREA.values


@pytest.mark.parametrize("name", RASTER_VARS)
def test_every_region_packed_and_bbox(files, name):
    plain, rast = files
    want, mask, tlat, _ = plain_arrays(plain, name)
    raw, _ = raw_plain(plain, name)
    with ncregions.File(rast) as f:
        for rid in range(len(NAMES)):
            sel = mask == rid
            # raw, the low-level API
            eq(f[name].read_region(rid), raw[..., sel])
            # decoded DataArray, packed
            got = ncregions.region(f, name, rid)
            eq(got.values, want.values[..., sel])
            assert got.dims == want.dims[:-2] + ("cell",)
            ys, xs = np.nonzero(sel)
            eq(got.cell_y.values, ys.astype(np.intp))
            eq(got.cell_x.values, xs.astype(np.intp))
            eq(got.TLAT.values, tlat[sel])
            assert (got.region.values == rid).all()
            # bbox: NaN outside the region
            box = ncregions.region(f, name, NAMES[rid], layout="bbox")
            y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
            exp = want.values[..., y0:y1, x0:x1].astype(box.dtype)
            exp = np.where(sel[y0:y1, x0:x1], exp, np.nan)
            eq(box.values, exp)
            eq(box.TLAT.values, tlat[y0:y1, x0:x1])
            assert box.attrs["bbox"] == [y0, x0, y1, x1]


def test_region_read_without_netcdf(files):
    """File[name] and read_region need raster alone (as the C API's
    raster_var_find + raster_region_read): the file is not opened through
    netCDF until attributes or dimension names are asked, and then the
    variable is the one variables lists."""
    plain, rast = files
    raw, attrs = raw_plain(plain, "TEMP")
    with netCDF4.Dataset(plain) as d:
        mask = d["REGION_MASK"][:].data
    with ncregions.File(rast) as f:
        v = f["TEMP"]
        eq(v.read_region("Atlantic Ocean"), raw[..., mask == 1])
        assert v.shape == raw.shape and v.ndim == raw.ndim
        assert f._ncid is None
        assert v.attrs["_FillValue"] == attrs["_FillValue"]
        assert f._ncid is not None
        assert v.dimensions == ("time", "z_t", "nlat", "nlon")
        assert f.variables["TEMP"] is v


def test_several_regions_and_names(files):
    plain, rast = files
    want, mask, _, _ = plain_arrays(plain, "TEMP")
    ids = [3, 1]
    got = ncregions.region(rast, "TEMP", ["indian ocean", "Atlantic_Ocean"])
    sel = np.isin(mask, ids)
    eq(got.values, want.values[..., sel])
    eq(got.region.values, mask[sel])
    one = ncregions.region(rast, "TEMP", ids, isel={"time": 2,
                                                    "z_t": slice(1, 3)})
    eq(one.values, want.values[2, 1:3][..., sel])
    assert one.dims == ("z_t", "cell")


def test_accessor(files):
    plain, rast = files
    want, mask, _, _ = plain_arrays(plain, "SALT")
    with xr.open_dataset(rast, engine="ncregions") as ds:
        got = ds.SALT.ncregions.region("Pacific Ocean")
        eq(got.values, want.values[..., mask == 2])
        m = ds.SALT.ncregions.reduce("Pacific Ocean")
        np.testing.assert_allclose(m.values,
                                   want.where(mask == 2).mean(("nlat", "nlon")).values)


@pytest.mark.parametrize("how", ["mean", "sum", "min", "max", "std"])
@pytest.mark.parametrize("weights", [None, "TAREA", "cos"])
def test_reduce(files, how, weights):
    plain, rast = files
    want, mask, tlat, area = plain_arrays(plain, "TEMP")
    if weights is not None and how in ("min", "max"):
        with pytest.raises(ValueError):
            ncregions.reduce(rast, "TEMP", 1, how, weights="TAREA")
        return
    w = {None: None, "TAREA": "TAREA", "cos": np.cos(np.deg2rad(tlat))}[weights]
    wa = {None: np.ones_like(area), "TAREA": area, "cos": w}[weights] \
        if weights else np.ones_like(area)
    got = ncregions.reduce(rast, "TEMP", list(range(1, 5)), how, weights=w)
    assert got.dims == ("region", "time", "z_t")
    assert list(got.region_name.values) == NAMES[1:]
    x = want.values.astype(np.float64)
    for i, rid in enumerate(range(1, 5)):
        xs = x[..., mask == rid]
        ws = np.broadcast_to(wa[mask == rid], xs.shape)
        ok = ~np.isnan(xs)
        wz = np.where(ok, ws, 0)
        xz = np.where(ok, xs, 0)
        mean = (xz * wz).sum(-1) / wz.sum(-1)
        exp = {"mean": mean, "sum": (xz * wz).sum(-1),
               "min": np.nanmin(xs, -1), "max": np.nanmax(xs, -1),
               "std": np.sqrt((np.where(ok, xs - mean[..., None], 0) ** 2
                               * wz).sum(-1) / wz.sum(-1))}[how]
        np.testing.assert_allclose(got.values[i], exp, rtol=1e-12)
    if weights is None and how in ("mean", "min", "max", "std"):
        xr_way = getattr(want.where(mask == 2), how)(("nlat", "nlon"))
        np.testing.assert_allclose(got.values[1], xr_way.values, rtol=1e-5)
    single = ncregions.reduce(rast, "TEMP", "Arctic Ocean", how, weights=w)
    assert single.dims == ("time", "z_t")
    np.testing.assert_allclose(single.values, got.values[3])


# ---- to_raster ----------------------------------------------------------------
@pytest.mark.parametrize("compression", [None, "none", 4])
def test_to_raster(files, tmp_path, compression):
    plain, _ = files
    out = str(tmp_path / "out.nc")
    with xr.open_dataset(plain) as ds:
        mask = ds.REGION_MASK.load()
        src = ds.drop_vars("REGION_MASK").load()
    ncregions.to_raster(src, mask, out, vars=["TEMP", "SALT"],
                        compression=compression, chunk=[1, 1, 8, 8])
    with ncregions.File(out) as f:
        assert f.raster_variables == ["TEMP", "SALT"]
        assert f["TEMP"].chunks() == (1, 1, 8, 8)
        assert f["TEMP"].region_name(1) == "Atlantic_Ocean"
    with xr.open_dataset(out, engine="ncregions") as a:
        for name in ("TEMP", "SALT", "COUNT"):
            eq(a[name].values, src[name].values)
        eq(ncregions.region(a, "TEMP", "Atlantic Ocean").values,
           src.TEMP.values[..., mask.values == 1])


def test_to_raster_numpy_mask(files, tmp_path):
    plain, _ = files
    out = str(tmp_path / "np.nc")
    with xr.open_dataset(plain) as ds:
        src = ds[["SALT", "TLAT"]].load()
    m = (np.arange(NY * NX).reshape(NY, NX) % 3).astype("i4")
    ncregions.to_raster(src, m, out)
    eq(ncregions.region(out, "SALT", 2).values, src.SALT.values[..., m == 2])
    with pytest.raises(RasterError):
        ncregions.to_raster(src, m[:5], out)
    with pytest.raises(RasterError, match="rasterconvert|mask"):
        ncregions.to_raster(src, np.full((NY, NX), 0.5), out)


# ---- bad input ----------------------------------------------------------------
def test_bad_input(files, tmp_path):
    plain, rast = files
    with pytest.raises(RasterError) as e:
        ncregions.File(tmp_path / "missing.nc")
    assert e.value.code == 8 and "missing.nc" in str(e.value)
    with pytest.raises(RasterError) as e:
        xr.open_dataset(tmp_path / "missing.nc", engine="ncregions")
    assert e.value.code == 8
    with pytest.raises(RasterError) as e:  # a plain file: no raster variable
        ncregions.File(plain)
    assert e.value.code == 9
    with pytest.raises(RasterError) as e:
        ncregions.region(rast, "TEMP", "Southern Ocean")
    assert e.value.code == 8 and "Southern Ocean" in str(e.value)
    with pytest.raises(RasterError) as e:
        ncregions.region(rast, "TEMP", 77)
    assert e.value.code == 8
    with pytest.raises(ValueError, match="layout"):
        ncregions.region(rast, "TEMP", 1, layout="full-grid")
    with pytest.raises(ValueError, match="how"):
        ncregions.reduce(rast, "TEMP", 1, how="median")
    with pytest.raises(RasterError, match="not stored by region"):
        ncregions.region(rast, "TAREA", 1)
    with pytest.raises(RasterError, match="no variable"):
        ncregions.region(rast, "NOPE", 1)
    with pytest.raises(RasterError, match="outer dimension"):
        ncregions.region(rast, "TEMP", 1, isel={"nlat": 0})
    with pytest.raises(RasterError, match="weights"):
        ncregions.reduce(rast, "TEMP", 1, weights=np.ones((3, 3)))
    holes = np.ones((NY, NX))
    holes[0, 4] = np.nan  # a cell of region 1
    with pytest.raises(RasterError, match="weights are missing"):
        ncregions.reduce(rast, "TEMP", 1, weights=holes)
    ncregions.reduce(rast, "TEMP", 2, weights=holes)  # not in region 2
    f = ncregions.File(rast)
    v = f["TEMP"]
    with pytest.raises(IndexError):
        v[9]
    f.close()
    f.close()  # twice is fine
    for call in (lambda: v[0], lambda: v.read_region(1), lambda: f["TEMP"],
                 lambda: f.attrs, lambda: v.region_ids("Atlantic Ocean")):
        with pytest.raises(RasterError, match="closed"):
            call()
    ds = xr.open_dataset(rast, engine="ncregions")
    ds.close()
    with pytest.raises(RasterError, match="closed"):
        ds.TEMP.values
    with pytest.raises(RasterError, match="closed"):
        ds.TLAT.values  # a plain variable too
    with pytest.raises(RasterError, match="engine='ncregions'"):
        ncregions.region(xr.DataArray([1]), None, 1)


# ---- beside the PyPI wheels -------------------------------------------------
SCRIPT = """
import sys, numpy as np
first = sys.argv[3] == "first"
if first:
    import netCDF4, h5py
import ncregions
if not first:
    import netCDF4, h5py
with ncregions.File(sys.argv[2]) as f:
    a = f["TEMP"][...]
with netCDF4.Dataset(sys.argv[1]) as d:
    d.set_auto_mask(False)
    b = d["TEMP"][:]
with h5py.File(sys.argv[1]) as h:
    c = h["TEMP"][...]
with ncregions.File(sys.argv[2]) as f:
    r = f["TEMP"].read_region(1)
assert np.array_equal(a, b) and np.array_equal(b, c), "values differ"
print("ok", netCDF4.__netcdf4libversion__, ncregions.version())
"""


@pytest.mark.parametrize("order", ["first", "last"])
def test_beside_wheels(files, order):
    pytest.importorskip("h5py")
    plain, rast = files
    p = subprocess.run([sys.executable, "-c", SCRIPT, plain, rast, order],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok ")


QUIET = """
import sys, dask, xarray as xr, ncregions._lib as L
if sys.argv[2] == "unfixed":
    L.quiet_thread = lambda: None
ds = xr.open_dataset(sys.argv[1], engine="ncregions",
                     chunks={"time": 1, "z_t": 1})
with dask.config.set(scheduler="threads", num_workers=2):
    print(float(ds.TEMP.mean()), float(ds.TLAT.mean()), float(ds.COUNT.sum()))
"""


def test_no_hdf5_noise_on_worker_threads(files, tmp_path):
    # Bug fixed: netCDF's first look at a variable on a dask worker thread
    # printed HDF5 error stacks (HDF5's printing is per thread).
    _, rast = files
    fresh = str(tmp_path / "fresh.nc")  # metadata not yet read in any thread
    with open(rast, "rb") as a, open(fresh, "wb") as b:
        b.write(a.read())
    p = subprocess.run([sys.executable, "-c", QUIET, fresh, "fixed"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "HDF5-DIAG" not in p.stderr, p.stderr[:2000]
