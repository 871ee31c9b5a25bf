#!/bin/sh
# Integration test of rasterconvert: a CESM-like file converted to the raster
# layout and restored must give back the same netCDF file (ncdump and exact
# values), with storage settings of plain variables kept; the converted
# layout (each variable its never-written placeholder, its data in the
# storage group raster_<name> beside it, docs/FORMAT.md); --vars, --chunk,
# every numeric type, a netCDF-3 input, a group already named raster_<name>,
# small buffers; input errors (exit 1, no output left behind) and usage
# errors (exit 2).
# usage: test_convert.sh RASTERCONVERT   (env: NCGEN, NCDUMP, PYTHON)
# Needs a python3 with numpy and netCDF4 (skips, exit 77, without one).
set -u
rc=$1
. "$(dirname "$0")/lib.sh"
NCGEN=${NCGEN:-ncgen} NCDUMP=${NCDUMP:-ncdump}

# same_dump A B DESCRIPTION: ncdump of A and B agree apart from line 1
# and the global history, to which each rasterconvert adds a line
# (compare.py checks that the rest of it is A's)
nohistory() {
    sed '/^\t\t:history = /d; /^\/\/ global attributes:$/d; /^$/d'
}
# steady FILE: FILE with the summary's sizes and time (which vary with the
# HDF5 release and the machine) as SIZE and T
steady() {
    sed -E 's/ \([0-9.]+ (B|KiB|MiB|GiB)\)/ (SIZE)/g; s/, [0-9]+\.[0-9] s$/, T s/' "$1"
}
same_dump() {
    "$NCDUMP" "$1" | tail -n +2 | nohistory > "$tmp/a.cdl"
    "$NCDUMP" "$2" | tail -n +2 | nohistory > "$tmp/b.cdl"
    if cmp -s "$tmp/a.cdl" "$tmp/b.cdl"; then ok; else
        fail "$3: ncdump differs"; diff "$tmp/a.cdl" "$tmp/b.cdl" | head -20
    fi
}

need_python

# ---- inputs ----------------------------------------------------------------
cat > "$tmp/gen.py" <<'PY'
import sys, numpy as np, netCDF4
out, kind = sys.argv[1], sys.argv[2]
ny, nx, nz, nt = 23, 31, 3, 4
rng = np.random.default_rng(7)
mask = np.zeros((ny, nx), np.int32)
mask[:, :10] = 2; mask[:, 10:20] = 6; mask[:5, 20:] = -5; mask[5:, 20:] = 1
mask[12:15, 3:25] = 0
mask[rng.random((ny, nx)) < 0.05] = 10
if kind == "cesm":
    with netCDF4.Dataset(out, "w", format="NETCDF4") as d:
        d.title = "CESM-like test"; d.Conventions = "CF-1.8"
        d.createDimension("time", None); d.createDimension("z_t", nz)
        d.createDimension("nlat", ny); d.createDimension("nlon", nx)
        d.createDimension("strlen", 8)
        t = d.createVariable("time", "f8", ("time",))
        t.units = "days since 0001-01-01"; t[:] = np.arange(nt) * 30.0
        z = d.createVariable("z_t", "f4", ("z_t",)); z.units = "cm"
        z[:] = [500, 1500, 2500]
        T = d.createVariable("TEMP", "f4", ("time", "z_t", "nlat", "nlon"),
                             fill_value=np.float32(9.96921e36),
                             chunksizes=(1, 1, 8, 8))
        T.units = "degC"; T.long_name = "Potential Temperature"
        T.valid_range = np.array([-5, 40], np.float32)
        data = rng.standard_normal((nt, nz, ny, nx)).astype(np.float32) * 5 + 10
        T[:] = np.ma.masked_where(np.broadcast_to(mask == 0, data.shape), data)
        # stored plain, so that it is converted whether or not this raster
        # stores compressed variables (the section "compressed inputs")
        S = d.createVariable("SSH", "f8", ("time", "nlat", "nlon"),
                             fill_value=-1e30)
        S.units = "cm"; S[:] = rng.standard_normal((nt, ny, nx))
        # plain variables whose storage settings must survive
        Z = d.createVariable("ztrans", ">f4", ("time", "z_t"), zlib=True,
                             complevel=4, shuffle=True, fletcher32=True,
                             endian="big", chunksizes=(2, 3))
        Z.units = "Sv"; Z[:] = rng.random((nt, nz)).astype(np.float32)
        N = d.createVariable("nofill", "i4", ("z_t",), fill_value=False)
        N[:] = [1, 2, 3]
        K = d.createVariable("KMT", "i2", ("nlat", "nlon"))
        K[:] = rng.integers(0, 60, (ny, nx))
        R = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon"))
        R.flag_values = np.array([-5, 0, 1, 2, 6, 10], np.int32)
        R.flag_meanings = ("Red_Sea Land Southern_Ocean Pacific_Ocean "
                           "Atlantic_Ocean Arctic_Ocean")
        R[:] = mask
        L = d.createVariable("label", "S1", ("z_t", "strlen"))
        L[:] = netCDF4.stringtochar(np.array(["surface", "middle", "deep"], "S8"))
        g = d.createGroup("diag"); g.note = "subgroup"
        g.createDimension("n", 5)
        v = g.createVariable("counts", "i8", ("n",)); v[:] = np.arange(5)
        h = g.createVariable("HMXL", "f4", ("time", "nlat", "nlon"))
        h.units = "m"; h[:] = rng.random((nt, ny, nx)).astype(np.float32)
        s = g.createVariable("names", str, ("n",))
        s[:] = np.array(["a", "bb", "ccc", "", "e"], dtype=object)
        gg = g.createGroup("deeper")
        e = gg.createVariable("EDGE", "f8", ("nlat", "nlon"))
        e[:] = rng.random((ny, nx))
elif kind == "mask":
    with netCDF4.Dataset(out, "w") as d:
        d.createDimension("nlat", ny); d.createDimension("nlon", nx)
        R = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon")); R[:] = mask
elif kind == "smallmask":
    with netCDF4.Dataset(out, "w") as d:
        d.createDimension("y", 5); d.createDimension("x", 5)
        R = d.createVariable("m", "i4", ("y", "x")); R[:] = np.arange(25).reshape(5, 5) % 3
elif kind == "shadow":  # sub/v uses the root's time, hidden by sub's own
    with netCDF4.Dataset(out, "w") as d:
        d.createDimension("time", None); d.createDimension("nlat", ny)
        d.createDimension("nlon", nx)
        g = d.createGroup("sub"); g.createDimension("time", 2)
        v = g.createVariable("v", "f4", (d.dimensions["time"],
                             d.dimensions["nlat"], d.dimensions["nlon"]))
        v[0] = np.ones((ny, nx), np.float32)
elif kind == "types":
    with netCDF4.Dataset(out, "w") as d:
        d.createDimension("time", None); d.createDimension("nlat", ny)
        d.createDimension("nlon", nx)
        for code in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]:
            dt = np.dtype(code)
            if dt.kind == "f":
                vals = rng.standard_normal((2, ny, nx)).astype(dt)
            else:
                info = np.iinfo(dt)
                vals = rng.integers(info.min, info.max, (2, ny, nx),
                                    dtype=dt, endpoint=True)
            v = d.createVariable("v_" + code, dt, ("time", "nlat", "nlon"),
                                 fill_value=vals.flat[0])
            v.setncattr("one", dt.type(1))
            v[:] = vals
elif kind == "collide":  # a user group already named raster_TEMP
    with netCDF4.Dataset(out, "w") as d:
        d.createDimension("time", None); d.createDimension("nlat", ny)
        d.createDimension("nlon", nx)
        T = d.createVariable("TEMP", "f4", ("time", "nlat", "nlon"),
                             fill_value=np.float32(-1))
        T.units = "K"
        T[:] = rng.standard_normal((2, ny, nx)).astype(np.float32)
        R = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon")); R[:] = mask
        g = d.createGroup("raster_TEMP"); g.note = "the user's"
        v = g.createVariable("counts", "i4", ("nlat",)); v[:] = np.arange(ny)
PY
"$PY" "$tmp/gen.py" "$tmp/cesm.nc" cesm || exit 1
"$PY" "$tmp/gen.py" "$tmp/mask.nc" mask || exit 1
"$PY" "$tmp/gen.py" "$tmp/small.nc" smallmask || exit 1
"$PY" "$tmp/gen.py" "$tmp/types.nc" types || exit 1
"$PY" "$tmp/gen.py" "$tmp/shadow.nc" shadow || exit 1
"$PY" "$tmp/gen.py" "$tmp/collide.nc" collide || exit 1

# compare.py A B: every variable of A equals B's exactly (type, dims,
# attributes, values bit for bit), in every group, in the same order.
cat > "$tmp/compare.py" <<'PY'
import sys, numpy as np, netCDF4
import re
# the history lines rasterconvert adds: a timestamp and its command line
tool_line = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: \S*rasterconvert .*")
def history(a, b):
    h = b.history.split("\n")
    n = 0
    while n < len(h) and tool_line.fullmatch(h[n]):
        n += 1
    assert n >= 1, h  # the restore's own line at least
    rest = h[n:]
    if "history" in a.ncattrs():
        assert rest == a.history.split("\n"), (h, a.history)
    else:
        assert rest == [], h
def atts(x):
    return [k for k in x.ncattrs() if k != "history" or x.parent]
def walk(a, b, path):
    if a.parent is None:
        history(a, b)
    assert list(a.dimensions) == list(b.dimensions), (path, list(a.dimensions), list(b.dimensions))
    for n, d in a.dimensions.items():
        e = b.dimensions[n]
        assert (len(d), d.isunlimited()) == (len(e), e.isunlimited()), (path, n)
    assert list(a.variables) == list(b.variables), (path, list(a.variables), list(b.variables))
    assert atts(a) == atts(b), path
    for k in atts(a):
        assert np.array_equal(np.asarray(a.getncattr(k)), np.asarray(b.getncattr(k))), (path, k)
    for n, v in a.variables.items():
        w = b.variables[n]
        v.set_auto_maskandscale(False); w.set_auto_maskandscale(False)
        assert v.dtype == w.dtype and v.dimensions == w.dimensions, (path, n)
        assert v.ncattrs() == w.ncattrs(), (path, n, v.ncattrs(), w.ncattrs())
        for k in v.ncattrs():
            x, y = np.asarray(v.getncattr(k)), np.asarray(w.getncattr(k))
            assert x.dtype == y.dtype and np.array_equal(x, y), (path, n, k)
        x, y = v[...], w[...]
        if v.dtype == str:
            assert list(np.ravel(x)) == list(np.ravel(y)), (path, n)
        else:
            assert x.tobytes() == y.tobytes(), (path, n)
    assert list(a.groups) == list(b.groups), (path, list(a.groups), list(b.groups))
    for n in a.groups:
        walk(a.groups[n], b.groups[n], path + n + "/")
with netCDF4.Dataset(sys.argv[1]) as a, netCDF4.Dataset(sys.argv[2]) as b:
    walk(a, b, "/")
PY

# ---- convert, automatic choice, mask from the input itself ------------------
expect 0 "convert cesm" "$rc" --mask "$tmp/cesm.nc:REGION_MASK" \
    "$tmp/cesm.nc" "$tmp/cesm.rast.nc"
# stderr (not a terminal: no progress bar) lists each variable's fate
cat > "$tmp/want" <<'EOF'
rasterconvert: leave time: coordinate variable
rasterconvert: leave z_t: coordinate variable
rasterconvert: convert TEMP
rasterconvert: convert SSH
rasterconvert: leave ztrans: last two dimensions are not the mask's grid
rasterconvert: leave nofill: not of 2 to 32 dimensions
rasterconvert: leave KMT: grid only, no outer dimension
rasterconvert: leave REGION_MASK: the mask variable
rasterconvert: leave label: not numeric
rasterconvert: leave diag/counts: not of 2 to 32 dimensions
rasterconvert: convert diag/HMXL
rasterconvert: leave diag/names: not numeric
rasterconvert: leave diag/deeper/EDGE: grid only, no outer dimension
EOF
echo "rasterconvert: $tmp/cesm.nc (SIZE) -> $tmp/cesm.rast.nc (SIZE): 3 variables stored by region, 10 copied, T s" >> "$tmp/want"
steady "$tmp/err" > "$tmp/err.steady"
if cmp -s "$tmp/want" "$tmp/err.steady"; then ok; else
    fail "convert's list of choices"; diff "$tmp/want" "$tmp/err.steady"; fi
[ -f "$tmp/cesm.rast.nc" ] || fail "convert wrote no output"
if on_disk "$PY" - "$tmp/cesm.rast.nc" "$tmp/cesm.nc" <<'PY'
import sys, numpy as np, netCDF4
d, i = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
nctype = {"f4": 5, "f8": 6, "i2": 3}
# converted: each variable stays where it was as its placeholder (same
# varid, type, dimensions, attributes; never written), and its data goes to
# the storage group raster_<name> beside it
for path, names in [("", ["TEMP", "SSH"]), ("diag", ["HMXL"])]:
    g, gi = (d[path], i[path]) if path else (d, i)
    for n in names:
        p, s = g[n], g.groups["raster_" + n]
        assert n not in g.groups, n
        assert p._varid == gi[n]._varid, (n, p._varid, gi[n]._varid)
        assert p.dtype == gi[n].dtype and p.dimensions == gi[n].dimensions, n
        # the input's attributes, and raster's note for readers without it
        assert p.ncattrs() == ["raster_note"] + gi[n].ncattrs(), (n, p.ncattrs())
        assert "group raster_%s " % n in p.raster_note, p.raster_note
        for k in gi[n].ncattrs():
            a, b = np.asarray(p.getncattr(k)), np.asarray(gi[n].getncattr(k))
            assert a.dtype == b.dtype and np.array_equal(a, b), (n, k)
        assert p.chunking() == [int(c) for c in s.raster_chunk], (n, p.chunking())
        # netCDF without raster refuses the placeholder's values: its
        # filter (raster's marker) is not registered here
        try:
            p[...]
            raise AssertionError(n + ": the placeholder read without raster")
        except RuntimeError as e:
            assert "filter" in str(e).lower(), (n, str(e))
        assert sorted(s.ncattrs()) == sorted([
            "raster_format_version", "raster_variable", "raster_complete",
            "raster_type", "raster_dims", "raster_dimids", "raster_chunk",
            "raster_regions", "raster_regions_columns",
            "raster_regions_crc32c", "raster_extent"]), \
            (n, s.ncattrs())  # no raster_varid any more
        # the shape the close fitted the placeholder to
        assert list(s.raster_extent) == list(p.shape), (n, s.raster_extent)
        # the regions' summary: what each region group's attributes say
        summ = np.asarray(s.raster_regions).reshape(-1, 8)
        assert len(summ) == len(s.groups) - 1, (n, summ)
        for row, (gname, rg) in zip(summ, list(s.groups.items())[:-1]):
            assert [row[0], row[1], row[2], row[3]] == [
                rg.region_id, rg.pure_cells, rg.mixed_cells,
                rg.mixed_offset], (n, gname, row)
            assert list(row[4:6]) == list(rg.chunk_rows), (n, gname, row)
            assert list(row[6:8]) == list(rg.run_rows), (n, gname, row)
        assert s.raster_format_version == 3 and s.raster_complete == 1
        assert s.raster_variable == n
        assert s.raster_type == nctype[p.dtype.str[1:]], (n, s.raster_type)
        assert s.raster_dims == "/".join(p.dimensions), (n, s.raster_dims)
        ids = [g.dimensions[k]._dimid if k in g.dimensions else
               d.dimensions[k]._dimid for k in p.dimensions]
        assert list(np.atleast_1d(s.raster_dimids)) == ids, (n, s.raster_dimids)
        # format 3: the index tables, shared by the regions, beside the
        # mask; the statistics kept (docs/FORMAT.md)
        assert list(s.variables) == ["mask", "chunks", "runs",
                                     "mixed_chunks", "shares", "stats"], \
            (n, list(s.variables))
        assert list(s.groups) == ["region_m5", "region_0", "region_1",
                                  "region_2", "region_6", "region_10",
                                  "Mixed_Chunks"], (n, list(s.groups))
        assert (s["mask"][:] == i["REGION_MASK"][:]).all()
        assert s["mask"].dtype == np.int8, s["mask"].dtype  # narrowest type
        # each region's runs: its cells in grid order, nothing else; the
        # regions' rows back to back in id order
        m = np.asarray(i["REGION_MASK"][:])
        allruns, row = np.asarray(s["runs"][:]), 0
        for k, rg in s.groups.items():
            if k == "Mixed_Chunks":
                assert list(rg.variables) == ["data"], (n, k)
                continue
            assert list(rg.variables) in (["data"], []), (n, k)
            first, count = (int(x) for x in rg.run_rows)
            assert first == row, (n, k, first, row)
            row += count
            runs = allruns[first:first + count]
            ys = np.repeat(runs[:, 0], runs[:, 2])
            xs = np.concatenate([np.arange(x, x + l) for x, l in
                                 zip(runs[:, 1], runs[:, 2])])
            wy, wx = np.nonzero(m == rg.region_id)
            assert (ys == wy).all() and (xs == wx).all(), (n, k)
            cells = rg.pure_cells + rg.mixed_cells
            assert sorted(np.concatenate([np.arange(o, o + l) for o, l in
                          zip(runs[:, 3], runs[:, 2])])) == list(range(cells))
        assert row == len(allruns), (n, row, len(allruns))
        for k in s.groups:
            assert "raster_format_version" not in s[k].ncattrs(), (n, k)
# the variables of every group in their order, the groups after them
assert list(d.variables) == list(i.variables), list(d.variables)
assert list(d["diag"].variables) == list(i["diag"].variables)
assert list(d["diag/deeper"].variables) == ["EDGE"]
# the input's groups in their order; storage groups beside them (where
# among them is no part of the format)
def groups(g, raster):
    return [n for n, s in g.groups.items()
            if ("raster_format_version" in s.ncattrs()) == raster]
assert groups(d, False) == ["diag"] and groups(d["diag"], False) == ["deeper"]
assert groups(d["diag/deeper"], False) == []
assert sorted(groups(d, True)) == ["raster_SSH", "raster_TEMP"]
assert groups(d["diag"], True) == ["raster_HMXL"]
assert groups(d["diag/deeper"], True) == []
assert [d[n]._varid for n in ["TEMP", "SSH"]] == [2, 3]
assert d["diag/HMXL"]._varid == 1
assert d["TEMP"].chunking() == [1, 1, 8, 8]  # input chunking
assert d["TEMP"].units == "degC" and d["TEMP"]._FillValue > 9e36
assert d.title == "CESM-like test" and d["diag"].note == "subgroup"
assert len(d.dimensions["time"]) == 4 and d.dimensions["time"].isunlimited()
# plain variables are plain: data, no storage group; 2-D fields (no outer
# dimension) are left by default
for n in ["time", "z_t", "ztrans", "nofill", "KMT", "REGION_MASK", "label"]:
    assert "raster_" + n not in d.groups, n
    assert np.array_equal(d[n][...], i[n][...]), n
assert np.array_equal(d["diag/deeper/EDGE"][...], i["diag/deeper/EDGE"][...])
PY
then ok; else fail "converted layout"; fi
# plain variables keep chunking, compression, checksum, endianness, no-fill
"$NCDUMP" -s -h "$tmp/cesm.nc" | grep -E '(ztrans|nofill):_' > "$tmp/s1"
"$NCDUMP" -s -h "$tmp/cesm.rast.nc" | grep -E '(ztrans|nofill):_' > "$tmp/s2"
if cmp -s "$tmp/s1" "$tmp/s2" && grep -q '_Endianness = "big"' "$tmp/s2" &&
   grep -q '_DeflateLevel = 4' "$tmp/s2" && grep -q '_NoFill = "true"' "$tmp/s2"
then ok; else fail "plain storage settings"; diff "$tmp/s1" "$tmp/s2"; fi

expect 0 "restore cesm" "$rc" --restore "$tmp/cesm.rast.nc" "$tmp/cesm.back.nc"
same_dump "$tmp/cesm.nc" "$tmp/cesm.back.nc" "cesm round trip"
if "$PY" "$tmp/compare.py" "$tmp/cesm.nc" "$tmp/cesm.back.nc"; then ok; else
    fail "cesm round trip values"; fi
# restored raster variables are chunked with their base chunk shape
"$NCDUMP" -s -h "$tmp/cesm.back.nc" > "$tmp/s3"
grep -q 'TEMP:_ChunkSizes = 1, 1, 8, 8' "$tmp/s3" || fail "restored TEMP chunking"
grep -q 'ztrans:_DeflateLevel = 4' "$tmp/s3" || fail "restored ztrans deflate"
grep -v ':history = ' "$tmp/s3" | grep -q 'raster' &&
    fail "restored file mentions raster"

# --format 2: what raster releases before format 3 read; restored the same
expect 0 "convert --format 2" "$rc" --format 2 --mask "$tmp/cesm.nc:REGION_MASK" \
    "$tmp/cesm.nc" "$tmp/cesm.v2.nc"
on_disk "$NCDUMP" -h "$tmp/cesm.v2.nc" > "$tmp/v2h"
if grep -q 'raster_format_version = 2' "$tmp/v2h" &&
   ! grep -q 'raster_format_version = 3' "$tmp/v2h" &&
   grep -q 'int64 runs(run, run_field)' "$tmp/v2h" &&
   ! grep -q 'run_rows' "$tmp/v2h"; then ok; else fail "--format 2 layout"; fi
expect 0 "restore format 2" "$rc" --restore "$tmp/cesm.v2.nc" "$tmp/cesm.v2back.nc"
same_dump "$tmp/cesm.nc" "$tmp/cesm.v2back.nc" "format 2 round trip"

# ---- --vars, --chunk, mask from another file, small buffers -----------------
expect 0 "--vars TEMP --chunk" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    --vars TEMP,/diag/HMXL --chunk 2,1,6,9 --buffer 1K \
    "$tmp/cesm.nc" "$tmp/vars.nc"
if on_disk "$PY" - "$tmp/vars.nc" <<'PY'
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1])
assert sorted(d.groups) == ["diag", "raster_TEMP"], list(d.groups)
assert sorted(d["diag"].groups) == ["deeper", "raster_HMXL"]
assert list(d["diag/deeper"].groups) == []
assert list(d["raster_TEMP"].raster_chunk) == [2, 1, 6, 9]
assert d["TEMP"].chunking() == [2, 1, 6, 9]
# a 3-D variable takes the last three sizes
assert list(d["diag/raster_HMXL"].raster_chunk) == [1, 6, 9]
assert d["diag/HMXL"].chunking() == [1, 6, 9]
# the others stay plain, with their data
assert list(d.variables) == ["time", "z_t", "TEMP", "SSH", "ztrans", "nofill",
                             "KMT", "REGION_MASK", "label"], list(d.variables)
for n in ["SSH", "KMT", "REGION_MASK"]:
    assert not np.ma.getmaskarray(d[n][...]).all(), n
PY
then ok; else fail "--vars layout"; fi
expect 0 "restore --vars" "$rc" --restore --buffer 700 "$tmp/vars.nc" "$tmp/vars.back.nc"
same_dump "$tmp/cesm.nc" "$tmp/vars.back.nc" "--vars round trip"
"$PY" "$tmp/compare.py" "$tmp/cesm.nc" "$tmp/vars.back.nc" && ok || fail "--vars values"
"$NCDUMP" -s -h "$tmp/vars.back.nc" | grep -q 'TEMP:_ChunkSizes = 2, 1, 6, 9' ||
    fail "--chunk not used for restored chunking"

# a shorter --chunk applies to the last dimensions; larger sizes are clipped
expect 0 "--chunk H,W" "$rc" --mask "$tmp/mask.nc:REGION_MASK" --vars SSH,KMT \
    --chunk 100,7 --verbose "$tmp/cesm.nc" "$tmp/hw.nc"
grep -q 'SSH: raster, base chunk 1,23,7' "$tmp/out" || fail "--chunk H,W on SSH"
grep -q 'KMT: raster, base chunk 23,7' "$tmp/out" || fail "--chunk H,W on KMT"
expect 0 "restore H,W" "$rc" --restore "$tmp/hw.nc" "$tmp/hw.back.nc"
same_dump "$tmp/cesm.nc" "$tmp/hw.back.nc" "--chunk H,W round trip"

# the mask variable is kept plain unless named
expect 0 "mask named" "$rc" --mask "$tmp/cesm.nc:REGION_MASK" --vars REGION_MASK \
    "$tmp/cesm.nc" "$tmp/rm.nc"
on_disk "$PY" -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1]); assert sorted(d.groups)==['diag','raster_REGION_MASK']; assert d['raster_REGION_MASK'].raster_variable=='REGION_MASK'" \
    "$tmp/rm.nc" && ok || fail "--vars REGION_MASK"

# every numeric type, unlimited time, fill values
expect 0 "convert types" "$rc" --mask "$tmp/mask.nc:REGION_MASK" --chunk 1,5,5 \
    "$tmp/types.nc" "$tmp/types.rast.nc"
expect 0 "restore types" "$rc" --restore "$tmp/types.rast.nc" "$tmp/types.back.nc"
same_dump "$tmp/types.nc" "$tmp/types.back.nc" "types round trip"
"$PY" "$tmp/compare.py" "$tmp/types.nc" "$tmp/types.back.nc" && ok || fail "types values"

# a user group named raster_TEMP beside TEMP: the storage group takes the
# next free name, the user's group is kept and restored as it was
# Regression (fixed): tools/rasterconvert.c convert_group() defines the variables (and so
# the storage group raster_TEMP) before it copies the input's groups, so
# copying the user's raster_TEMP fails: exit 1, "copying group raster_TEMP:
# NetCDF: String match to name in use".
expect 0 "convert beside a group raster_TEMP" "$rc" \
    --mask "$tmp/collide.nc:REGION_MASK" "$tmp/collide.nc" "$tmp/collide.rast.nc"
if [ -f "$tmp/collide.rast.nc" ]; then
    if on_disk "$PY" - "$tmp/collide.rast.nc" <<'PY'
import sys, netCDF4
d = netCDF4.Dataset(sys.argv[1])
u = d["raster_TEMP"]
assert u.ncattrs() == ["note"] and u.note == "the user's", u.ncattrs()
assert list(u.variables) == ["counts"] and list(u.groups) == []
s = [g for g in d.groups.values() if "raster_format_version" in g.ncattrs()]
assert [g.name for g in s] == ["raster_TEMP_1"], [g.name for g in s]
assert s[0].raster_variable == "TEMP" and s[0].raster_complete == 1
PY
    then ok; else fail "layout beside a group raster_TEMP"; fi
    expect 0 "restore beside a group raster_TEMP" "$rc" --restore \
        "$tmp/collide.rast.nc" "$tmp/collide.back.nc"
    same_dump "$tmp/collide.nc" "$tmp/collide.back.nc" "raster_TEMP round trip"
    "$PY" "$tmp/compare.py" "$tmp/collide.nc" "$tmp/collide.back.nc" && ok ||
        fail "raster_TEMP round trip values"
fi

# a netCDF-3 classic input
cat > "$tmp/classic.cdl" <<'CDL'
netcdf classic {
dimensions:
    time = UNLIMITED ; y = 3 ; x = 4 ;
variables:
    int mask(y, x) ;
    short v(time, y, x) ;
        v:_FillValue = -1s ;
        v:units = "1" ;
    float t(time) ;
    :history = "classic" ;
data:
 mask = 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3 ;
 v = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
     13, 14, 15, 16, 17, 18, 19, 20, 21, 22, _, 24 ;
 t = 0, 1 ;
}
CDL
"$NCGEN" -k classic -o "$tmp/classic.nc" "$tmp/classic.cdl" || exit 1
expect 0 "convert classic" "$rc" --mask "$tmp/classic.nc:mask" --chunk 2,2 \
    "$tmp/classic.nc" "$tmp/classic.rast.nc"
expect 0 "restore classic" "$rc" --restore "$tmp/classic.rast.nc" "$tmp/classic.back.nc"
same_dump "$tmp/classic.nc" "$tmp/classic.back.nc" "classic round trip"

# the output's permissions follow the umask, not the temporary file's 0600
perm=$(stat -c %a "$tmp/cesm.back.nc")
case $(umask) in
    *022) [ "$perm" = 644 ] && ok || fail "output mode $perm, wanted 644" ;;
esac

# ---- data variables only: WRF-like and POP-like files ---------------------
# Coordinates with the mask's grid (XLAT, XLONG, TLAT, TLONG), 2-D fields
# (HGT, TAREA), the mask itself (by name, or a variable holding its values:
# LANDMASK) and bounds stay plain, with their values; only T2 and TEMP are
# stored by region. XLONG has no units here: only T2's coordinates attribute
# marks it.
cat > "$tmp/wmask.cdl" <<'CDL'
netcdf wmask {
dimensions:
    south_north = 4 ; west_east = 5 ;
variables:
    int REGION_MASK(south_north, west_east) ;
data:
 REGION_MASK = 1, 1, 1, 2, 2, 1, 1, 2, 2, 2, 3, 3, 3, 2, 2, 3, 3, 3, 3, 0 ;
}
CDL
cat > "$tmp/wrf.cdl" <<'CDL'
netcdf wrf {
dimensions:
    Time = UNLIMITED ; DateStrLen = 19 ; south_north = 4 ; west_east = 5 ;
variables:
    char Times(Time, DateStrLen) ;
    float XLAT(Time, south_north, west_east) ;
        XLAT:units = "degree_north" ;
        XLAT:description = "LATITUDE, SOUTH IS NEGATIVE" ;
    float XLONG(Time, south_north, west_east) ;
        XLONG:description = "LONGITUDE, WEST IS NEGATIVE" ;
    float XTIME(Time) ;
        XTIME:units = "minutes since 2020-01-01 00:00:00" ;
    float T2(Time, south_north, west_east) ;
        T2:units = "K" ;
        T2:coordinates = "XLONG XLAT XTIME" ;
    float HGT(south_north, west_east) ;
        HGT:units = "m" ;
    int LANDMASK(Time, south_north, west_east) ;
data:
 Times = "2020-01-01_00:00:00" ;
 XLAT = 40, 40, 40, 40, 40, 41, 41, 41, 41, 41, 42, 42, 42, 42, 42,
     43, 43, 43, 43, 43 ;
 XLONG = -5, -4, -3, -2, -1, -5, -4, -3, -2, -1, -5, -4, -3, -2, -1,
     -5, -4, -3, -2, -1 ;
 XTIME = 0 ;
 T2 = 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293,
     294, 295, 296, 297, 298, 299 ;
 HGT = 0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150,
     160, 170, 180, 190 ;
 LANDMASK = 1, 1, 1, 2, 2, 1, 1, 2, 2, 2, 3, 3, 3, 2, 2, 3, 3, 3, 3, 0 ;
}
CDL
cat > "$tmp/pop.cdl" <<'CDL'
netcdf pop {
dimensions:
    time = UNLIMITED ; d2 = 2 ; z_t = 2 ; nlat = 4 ; nlon = 5 ;
variables:
    double time(time) ;
        time:units = "days since 0001-01-01" ;
        time:bounds = "time_bound" ;
    double time_bound(time, d2) ;
    float z_t(z_t) ;
        z_t:units = "centimeters" ;
    double TLAT(nlat, nlon) ;
        TLAT:units = "degrees_north" ;
    double TLONG(nlat, nlon) ;
        TLONG:units = "degrees_east" ;
    double TAREA(nlat, nlon) ;
        TAREA:units = "centimeter^2" ;
    int REGION_MASK(nlat, nlon) ;
    float zdepth(z_t, nlat, nlon) ;
        zdepth:axis = "Z" ;
    float TEMP(time, z_t, nlat, nlon) ;
        TEMP:_FillValue = 9.96921e+36f ;
        TEMP:coordinates = "TLONG TLAT z_t time" ;
        TEMP:cell_measures = "area: TAREA" ;
data:
 time = 15, 45 ;
 time_bound = 0, 30, 30, 60 ;
 z_t = 500, 1500 ;
 TLAT = -60, -60, -60, -60, -60, -20, -20, -20, -20, -20, 20, 20, 20, 20, 20,
     60, 60, 60, 60, 60 ;
 TLONG = 0, 72, 144, 216, 288, 0, 72, 144, 216, 288, 0, 72, 144, 216, 288,
     0, 72, 144, 216, 288 ;
 TAREA = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 ;
 REGION_MASK = 0, 1, 1, 2, 2, 0, 1, 1, 2, 2, 0, 6, 6, 6, 2, 0, 6, 6, 6, 6 ;
 zdepth = 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
     15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
     15, 15 ;
 TEMP = _, 1, 2, 3, 4, _, 6, 7, 8, 9, _, 11, 12, 13, 14, _, 16, 17, 18, 19,
     _, 21, 22, 23, 24, _, 26, 27, 28, 29, _, 31, 32, 33, 34, _, 36, 37, 38,
     39, _, 41, 42, 43, 44, _, 46, 47, 48, 49, _, 51, 52, 53, 54, _, 56, 57,
     58, 59, _, 61, 62, 63, 64, _, 66, 67, 68, 69, _, 71, 72, 73, 74, _, 76,
     77, 78, 79 ;
}
CDL
for f in wmask wrf pop; do
    "$NCGEN" -4 -o "$tmp/$f.nc" "$tmp/$f.cdl" || exit 1
done
# top_groups FILE: the file's top-level groups (raster_<name> beside each
# raster variable), read without raster
top_groups() { on_disk "$NCDUMP" -h "$1" | sed -n 's/^group: \(.*\) {/\1/p' | tr '\n' ' '; }
# same_values A B VARS DESC: ncdump's data of VARS (comma-separated) agree
same_values() {
    "$NCDUMP" -v "$3" "$1" | sed -n '/^data:/,/^\(group: .*\|}\)$/p' |
        sed -e '$d' -e '/^$/d' > "$tmp/va"
    "$NCDUMP" -v "$3" "$2" | sed -n '/^data:/,/^\(group: .*\|}\)$/p' |
        sed -e '$d' -e '/^$/d' > "$tmp/vb"
    if [ -s "$tmp/va" ] && cmp -s "$tmp/va" "$tmp/vb"; then ok; else
        fail "$4: values differ"; diff "$tmp/va" "$tmp/vb" | head -10; fi
}

expect 0 "convert WRF-like" "$rc" --mask "$tmp/wmask.nc:REGION_MASK" \
    "$tmp/wrf.nc" "$tmp/wrf.rast.nc"
cat > "$tmp/want" <<'EOF'
rasterconvert: leave Times: not numeric
rasterconvert: leave XLAT: latitude/longitude (standard_name or units)
rasterconvert: leave XLONG: named in a coordinates, bounds, climatology or cell_measures attribute
rasterconvert: leave XTIME: not of 2 to 32 dimensions
rasterconvert: convert T2
rasterconvert: leave HGT: grid only, no outer dimension
rasterconvert: leave LANDMASK: holds the mask's values
EOF
echo "rasterconvert: $tmp/wrf.nc (SIZE) -> $tmp/wrf.rast.nc (SIZE): 1 variable stored by region, 6 copied, T s" >> "$tmp/want"
steady "$tmp/err" > "$tmp/err.steady"
if cmp -s "$tmp/want" "$tmp/err.steady"; then ok; else
    fail "WRF-like: list of choices"; diff "$tmp/want" "$tmp/err.steady"; fi
# progress on a non-terminal: lines at the tenths, the last at 100%, then
# the summary; --quiet: not a word
expect 0 "progress lines" env RASTER_PROGRESS_DELAY=0 "$rc" --buffer 1K \
    --mask "$tmp/wmask.nc:REGION_MASK" "$tmp/wrf.nc" "$tmp/wrf.p.nc"
steady "$tmp/err" | grep -v ': leave \|: convert ' > "$tmp/got"
"$PY" - "$tmp/got" "$tmp" <<'PY' || { fail "progress lines"; cat "$tmp/got"; }
import sys, re
lines = open(sys.argv[1]).read().splitlines()
pct = [int(re.fullmatch(r"rasterconvert: (\d+)% done, [0-9.]+ K?i?B of [0-9.]+ K?i?B, T s", l).group(1))
       for l in lines[:-1]]
assert len(pct) >= 3 and pct == sorted(pct) and pct[-1] == 100, pct
assert len({p // 10 for p in pct}) == len(pct), pct  # one line a tenth
t = sys.argv[2]
assert lines[-1] == ("rasterconvert: %s/wrf.nc (SIZE) -> %s/wrf.p.nc (SIZE): "
                     "1 variable stored by region, 6 copied, T s" % (t, t)), lines[-1]
PY
expect 0 "--quiet" env RASTER_PROGRESS_DELAY=0 "$rc" --buffer 1K --quiet \
    --mask "$tmp/wmask.nc:REGION_MASK" "$tmp/wrf.nc" "$tmp/wrf.q.nc"
[ -s "$tmp/err" ] && fail "--quiet printed: $(cat "$tmp/err")" || ok
[ "$(top_groups "$tmp/wrf.rast.nc")" = "raster_T2 " ] && ok ||
    fail "WRF-like: raster variables $(top_groups "$tmp/wrf.rast.nc")"
same_values "$tmp/wrf.nc" "$tmp/wrf.rast.nc" Times,XLAT,XLONG,XTIME,HGT,LANDMASK \
    "WRF-like coordinates"
expect 0 "restore WRF-like" "$rc" --restore "$tmp/wrf.rast.nc" "$tmp/wrf.back.nc"
same_dump "$tmp/wrf.nc" "$tmp/wrf.back.nc" "WRF-like round trip"

expect 0 "convert POP-like" "$rc" --mask "$tmp/pop.nc:REGION_MASK" \
    "$tmp/pop.nc" "$tmp/pop.rast.nc"
cat > "$tmp/want" <<'EOF'
rasterconvert: leave time: coordinate variable
rasterconvert: leave time_bound: last two dimensions are not the mask's grid
rasterconvert: leave z_t: coordinate variable
rasterconvert: leave TLAT: latitude/longitude (standard_name or units)
rasterconvert: leave TLONG: latitude/longitude (standard_name or units)
rasterconvert: leave TAREA: named in a coordinates, bounds, climatology or cell_measures attribute
rasterconvert: leave REGION_MASK: the mask variable
rasterconvert: leave zdepth: has an axis attribute
rasterconvert: convert TEMP
EOF
echo "rasterconvert: $tmp/pop.nc (SIZE) -> $tmp/pop.rast.nc (SIZE): 1 variable stored by region, 8 copied, T s" >> "$tmp/want"
steady "$tmp/err" > "$tmp/err.steady"
if cmp -s "$tmp/want" "$tmp/err.steady"; then ok; else
    fail "POP-like: list of choices"; diff "$tmp/want" "$tmp/err.steady"; fi
[ "$(top_groups "$tmp/pop.rast.nc")" = "raster_TEMP " ] && ok ||
    fail "POP-like: raster variables $(top_groups "$tmp/pop.rast.nc")"
same_values "$tmp/pop.nc" "$tmp/pop.rast.nc" \
    time,time_bound,z_t,TLAT,TLONG,TAREA,REGION_MASK,zdepth "POP-like coordinates"
expect 0 "restore POP-like" "$rc" --restore "$tmp/pop.rast.nc" "$tmp/pop.back.nc"
same_dump "$tmp/pop.nc" "$tmp/pop.back.nc" "POP-like round trip"
# named variables are converted whatever the rule says (2-D, coordinate)
expect 0 "--vars of coordinates" "$rc" --mask "$tmp/wmask.nc:REGION_MASK" \
    --vars T2,XLAT,HGT "$tmp/wrf.nc" "$tmp/wrf.named.nc"
[ "$(top_groups "$tmp/wrf.named.nc")" = "raster_XLAT raster_T2 raster_HGT " ] &&
    ok || fail "--vars XLAT,HGT: $(top_groups "$tmp/wrf.named.nc")"
grep -qx 'rasterconvert: leave XLONG: not named by --vars' "$tmp/err" && ok ||
    fail "--vars: no leave line for XLONG: $(cat "$tmp/err")"
# only coordinates and 2-D fields on the grid: nothing to convert
expect 1 "no data variable" "$rc" --mask "$tmp/wmask.nc:REGION_MASK" \
    "$tmp/wmask.nc" "$tmp/bad.nc"
grep -q 'no data variable' "$tmp/err" || fail "no data variable: message"
no_output "$tmp/bad.nc" "no data variable"

# ---- stderr to a pipe nobody reads -----------------------------------------
# `rasterconvert ... 2>&1 | head -1` ends it by SIGPIPE when it writes its
# progress or summary: its temporary output must go with it
mkdir "$tmp/pipe"
cat > "$tmp/pipe.py" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)  # every write to w fails: SIGPIPE (restored to its default)
p = subprocess.run(sys.argv[1:], stderr=w, stdout=subprocess.DEVNULL,
                   restore_signals=True)
print(p.returncode)
PY
got=$(RASTER_PROGRESS_DELAY=0 "$PY" "$tmp/pipe.py" "$rc" --mask \
      "$tmp/wmask.nc:REGION_MASK" --vars T2 "$tmp/wrf.nc" "$tmp/pipe/out.nc")
[ "$got" = "-13" ] && ok || fail "stderr to a closed pipe: exit $got, not SIGPIPE"
no_output "$tmp/pipe/out.nc" "killed by SIGPIPE"

# ---- never overwrite the input ----------------------------------------------
# OUT naming IN (itself, through a symbolic or a hard link), or the mask
# file: refused before anything is written, input bytes unchanged
mkdir "$tmp/same"
cp "$tmp/pop.nc" "$tmp/same/in.nc"
cp "$tmp/pop.rast.nc" "$tmp/same/r.nc"
cp "$tmp/wmask.nc" "$tmp/same/m.nc"
ln -s in.nc "$tmp/same/link.nc"
ln "$tmp/same/in.nc" "$tmp/same/hard.nc"
sums() { (cd "$tmp/same" && cksum in.nc r.nc m.nc); }
sums > "$tmp/sums0"
for out in in.nc link.nc hard.nc; do
    expect 1 "output $out is the input" "$rc" --mask "$tmp/same/in.nc:REGION_MASK" \
        "$tmp/same/in.nc" "$tmp/same/$out"
    grep -q 'is the input' "$tmp/err" || fail "output $out: message: $(cat "$tmp/err")"
done
expect 1 "output is the input (relative path)" sh -c \
    'cd "$1/same" && exec "$2" --mask in.nc:REGION_MASK ./in.nc in.nc' sh "$tmp" "$rc"
expect 1 "output is the mask file" "$rc" --mask "$tmp/same/m.nc:REGION_MASK" \
    "$tmp/wrf.nc" "$tmp/same/m.nc"
grep -q 'is the mask file' "$tmp/err" || fail "mask file: message: $(cat "$tmp/err")"
expect 1 "restore onto its input" "$rc" --restore "$tmp/same/r.nc" "$tmp/same/r.nc"
grep -q 'is the input' "$tmp/err" || fail "restore onto input: message"
sums > "$tmp/sums1"
cmp -s "$tmp/sums0" "$tmp/sums1" && ok || fail "an input changed"
[ -L "$tmp/same/link.nc" ] && ok || fail "the symbolic link was replaced"
ls -a "$tmp/same" | grep -q '\.tmp' && fail "temporary file left in same/" || ok

# ---- bad input: exit 1, a message, and no output ------------------------------
expect 1 "mask shape matches no --vars" "$rc" --mask "$tmp/small.nc:m" \
    --vars TEMP "$tmp/cesm.nc" "$tmp/bad.nc"
grep -q 'grid' "$tmp/err" || fail "grid mismatch message"
no_output "$tmp/bad.nc" "mask shape matches no --vars"
expect 1 "mask shape matches no variable" "$rc" --mask "$tmp/small.nc:m" \
    "$tmp/cesm.nc" "$tmp/bad.nc"
no_output "$tmp/bad.nc" "mask shape matches no variable"
expect 1 "--vars of a 1-D variable" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    --vars z_t "$tmp/cesm.nc" "$tmp/bad.nc"
expect 1 "--vars of a char variable" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    --vars label "$tmp/cesm.nc" "$tmp/bad.nc"
expect 1 "--vars unknown (after others)" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    --vars TEMP,nosuch "$tmp/cesm.nc" "$tmp/bad.nc"
grep -q 'nosuch' "$tmp/err" || fail "unknown --vars message"
no_output "$tmp/bad.nc" "--vars unknown"
# raster records dimensions by name: a hidden one cannot be converted
expect 1 "--vars of a var with a shadowed dimension" "$rc" \
    --mask "$tmp/mask.nc:REGION_MASK" --vars v "$tmp/shadow.nc" "$tmp/bad.nc"
no_output "$tmp/bad.nc" "shadowed dimension"
expect 1 "missing input" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    "$tmp/none.nc" "$tmp/bad.nc"
no_output "$tmp/bad.nc" "missing input"
expect 1 "missing mask file" "$rc" --mask "$tmp/none.nc:REGION_MASK" \
    "$tmp/cesm.nc" "$tmp/bad.nc"
expect 1 "missing mask variable" "$rc" --mask "$tmp/mask.nc:NOPE" \
    "$tmp/cesm.nc" "$tmp/bad.nc"
echo "not netcdf" > "$tmp/junk.nc"
expect 1 "input not netCDF" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    "$tmp/junk.nc" "$tmp/bad.nc"
no_output "$tmp/bad.nc" "input not netCDF"
expect 1 "input already raster" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    "$tmp/cesm.rast.nc" "$tmp/bad.nc"
expect 1 "restore a plain file" "$rc" --restore "$tmp/cesm.nc" "$tmp/bad.nc"
grep -q 'not a raster file' "$tmp/err" || fail "restore plain message"
no_output "$tmp/bad.nc" "restore a plain file"
expect 1 "output directory missing" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    "$tmp/cesm.nc" "$tmp/nodir/out.nc"
mkdir "$tmp/ro"
chmod 555 "$tmp/ro"
if ! touch "$tmp/ro/probe" 2>/dev/null; then  # not root: the mode holds
    expect 1 "output directory not writable" "$rc" \
        --mask "$tmp/mask.nc:REGION_MASK" "$tmp/cesm.nc" "$tmp/ro/out.nc"
    [ -z "$(ls -A "$tmp/ro")" ] && ok || fail "files left in read-only dir"
    expect 1 "restore into read-only dir" "$rc" --restore \
        "$tmp/cesm.rast.nc" "$tmp/ro/out.nc"
    [ -z "$(ls -A "$tmp/ro")" ] && ok || fail "files left in read-only dir"
elif [ -d /proc/self ]; then  # root writes anywhere but in /proc
    expect 1 "output directory not writable (/proc)" "$rc" \
        --mask "$tmp/mask.nc:REGION_MASK" "$tmp/cesm.nc" /proc/out.nc
fi
chmod 755 "$tmp/ro"
expect 1 "output is a directory" "$rc" --mask "$tmp/mask.nc:REGION_MASK" \
    "$tmp/cesm.nc" "$tmp/ro"
# a failed run leaves an existing output alone
cp "$tmp/junk.nc" "$tmp/keep.nc"
expect 1 "failure keeps old output" "$rc" --mask "$tmp/small.nc:m" --vars TEMP \
    "$tmp/cesm.nc" "$tmp/keep.nc"
cmp -s "$tmp/junk.nc" "$tmp/keep.nc" && ok || fail "old output overwritten"
cat > "$tmp/enum.cdl" <<'CDL'
netcdf enumfile {
types:
  byte enum cloud_t {clear = 0, cloudy = 1} ;
dimensions:
    y = 3 ; x = 4 ;
variables:
    int mask(y, x) ;
    cloud_t c(y, x) ;
data:
 mask = 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3 ;
 c = clear, clear, clear, clear, clear, clear, clear, clear, clear, clear, clear, cloudy ;
}
CDL
"$NCGEN" -4 -o "$tmp/enum.nc" "$tmp/enum.cdl" || exit 1
expect 1 "user-defined type" "$rc" --mask "$tmp/enum.nc:mask" \
    "$tmp/enum.nc" "$tmp/bad.nc"
grep -q 'not supported' "$tmp/err" || fail "user-defined type message"
no_output "$tmp/bad.nc" "user-defined type"

# ---- compressed inputs (issue #23) ------------------------------------------
# A deflated input (nccopy -d 4 -s of a rastergen file, as CESM writes):
# every variable keeps its filters. Where raster refuses to store a
# variable compressed (raster_var_set_compression says
# RASTER_EUNSUPPORTED), it stays plain netCDF with its filters and one
# warning; the checks of compressed raster stores are then skipped (SKIP
# lines), found out at run time from that warning.
gen="$(dirname "$rc")/rastergen"
masks="$(dirname "$0")/../datasets/masks"
NCCOPY=${NCCOPY:-$(dirname "$(command -v "$NCDUMP")")/nccopy}
[ -x "$NCCOPY" ] || NCCOPY=nccopy
"$gen" --kind cesm --mask "$masks/pop_basins_384x320.nc:REGION_MASK" \
    --ntime 2 --ndepth 2 "$tmp/z0.nc" > /dev/null || fail "rastergen"
"$NCCOPY" -d 4 -s "$tmp/z0.nc" "$tmp/z.nc" || fail "nccopy -d 4 -s"
zm="$tmp/z.nc:REGION_MASK"
# storage lines of ncdump -s -h FILE (the root group's variables, two tabs
# in, not raster's storage groups), those matching PATTERN
tab=$(printf '\t')
filters() { on_disk "$NCDUMP" -s -h "$1" |
            grep -E "^$tab$tab[A-Za-z_]+:_(DeflateLevel|Shuffle|ChunkSizes|Fletcher32|Quantize)" |
            grep -E "${2:-.}"; }
expect 0 "convert deflated" "$rc" --mask "$zm" "$tmp/z.nc" "$tmp/z.rast.nc"
cp "$tmp/err" "$tmp/z.err"
if grep -q 'warning: TEMP stays plain netCDF' "$tmp/z.err"; then
    compresses=0
    echo "SKIP: this raster stores no variable compressed (raster_var_set_compression refuses): compressed-store checks skipped"
    # one warning naming it, no "convert TEMP"
    [ "$(grep -c 'TEMP' "$tmp/z.err")" -eq 1 ] && ok ||
        fail "refused TEMP: not exactly one line: $(cat "$tmp/z.err")"
    grep -q 'with deflate level 4, shuffle: ' "$tmp/z.err" && ok ||
        fail "refusal message says the settings: $(cat "$tmp/z.err")"
else
    compresses=1
    grep -q '^rasterconvert: convert TEMP$' "$tmp/z.err" && ok ||
        fail "deflated TEMP not converted: $(cat "$tmp/z.err")"
    grep -q 'warning' "$tmp/z.err" && fail "warnings: $(cat "$tmp/z.err")"
fi
# every variable keeps its deflate level, shuffle and chunking, converted
# (on its placeholder) or not
filters "$tmp/z.nc" > "$tmp/f0"
filters "$tmp/z.rast.nc" > "$tmp/f1"
if cmp -s "$tmp/f0" "$tmp/f1" && grep -q 'TEMP:_DeflateLevel = 4' "$tmp/f1" &&
   grep -q 'lat:_DeflateLevel = 4' "$tmp/f1"; then ok; else
    fail "deflated input: settings not kept"; diff "$tmp/f0" "$tmp/f1"; fi
size() { wc -c < "$1" | tr -d ' '; }
expect 0 "convert deflated --no-compress" "$rc" --no-compress --mask "$zm" \
    "$tmp/z.nc" "$tmp/z.plain.nc"
grep -q '^rasterconvert: convert TEMP$' "$tmp/err" && ok ||
    fail "--no-compress: TEMP not converted"
if filters "$tmp/z.plain.nc" '_(DeflateLevel|Shuffle|Fletcher32|Quantize)' |
   grep -q .; then fail "--no-compress left filters"; else ok; fi
[ "$(filters "$tmp/z.plain.nc" ChunkSizes)" = "$(filters "$tmp/z.nc" ChunkSizes)" ] &&
    ok || fail "--no-compress changed the chunking"
expect 0 "restore --no-compress" "$rc" --restore "$tmp/z.plain.nc" "$tmp/z.pback.nc"
same_dump "$tmp/z.nc" "$tmp/z.pback.nc" "--no-compress round trip"
if filters "$tmp/z.pback.nc" '_(DeflateLevel|Shuffle)' | grep -q .; then
    fail "restored --no-compress has filters"; else ok; fi
echo "sizes (bytes): rastergen plain $(size "$tmp/z0.nc"), nccopy -d 4 -s" \
     "$(size "$tmp/z.nc"), converted $(size "$tmp/z.rast.nc")," \
     "converted --no-compress $(size "$tmp/z.plain.nc")"
# --deflate 1 --shuffle for the converted variables
expect 0 "convert --deflate 1 --shuffle" "$rc" --deflate 1 --shuffle \
    --mask "$zm" "$tmp/z.nc" "$tmp/z.d1.nc"
cp "$tmp/err" "$tmp/d1.err"
# copied variables keep their own level
filters "$tmp/z.d1.nc" 'lat:_DeflateLevel = 4' > /dev/null && ok ||
    fail "--deflate changed a copied variable"
if [ $compresses = 1 ]; then
    # the restored file equals the input, each variable with its filters
    expect 0 "restore deflated" "$rc" --restore "$tmp/z.rast.nc" "$tmp/z.back.nc"
    same_dump "$tmp/z.nc" "$tmp/z.back.nc" "deflated round trip"
    "$PY" "$tmp/compare.py" "$tmp/z.nc" "$tmp/z.back.nc" && ok ||
        fail "deflated round trip values"
    filters "$tmp/z.nc" '_(DeflateLevel|Shuffle)' > "$tmp/f0"
    filters "$tmp/z.back.nc" '_(DeflateLevel|Shuffle)' > "$tmp/f1"
    cmp -s "$tmp/f0" "$tmp/f1" && ok ||
        { fail "restored deflate settings"; diff "$tmp/f0" "$tmp/f1"; }
    # compressed stores: no larger than 1.10 x the compressed input
    [ $(( $(size "$tmp/z.rast.nc") * 100 )) -le $(( $(size "$tmp/z.nc") * 110 )) ] &&
        ok || fail "converted $(size "$tmp/z.rast.nc") > 1.10 x $(size "$tmp/z.nc")"
    expect 0 "restore --deflate 1" "$rc" --restore "$tmp/z.d1.nc" "$tmp/z.d1back.nc"
    filters "$tmp/z.d1back.nc" 'TEMP:_DeflateLevel = 1' > /dev/null && ok ||
        fail "--deflate 1 not on the restored TEMP"
    same_dump "$tmp/z.nc" "$tmp/z.d1back.nc" "--deflate 1 round trip"
    # --quantize: the values netCDF stores with that quantization
    expect 0 "convert --quantize" "$rc" --quantize bitround,9 --mask "$zm" \
        "$tmp/z.nc" "$tmp/z.q.nc"
    expect 0 "restore --quantize" "$rc" --restore "$tmp/z.q.nc" "$tmp/z.qback.nc"
    if on_disk "$PY" - "$tmp/z.nc" "$tmp/z.qback.nc" <<'PY'
import sys, numpy as np, netCDF4
a, b = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
with netCDF4.Dataset(sys.argv[2] + ".want.nc", "w") as w:
    for n, d in a.dimensions.items():
        w.createDimension(n, None if d.isunlimited() else len(d))
    v = a["TEMP"]
    q = w.createVariable("TEMP", v.dtype, v.dimensions, fill_value=v._FillValue,
                         significant_digits=9, quantize_mode="BitRound")
    v.set_auto_maskandscale(False); q.set_auto_maskandscale(False)
    q[:] = v[:]
with netCDF4.Dataset(sys.argv[2] + ".want.nc") as w:
    x, y = w["TEMP"], b["TEMP"]
    x.set_auto_maskandscale(False); y.set_auto_maskandscale(False)
    assert x[:].tobytes() == y[:].tobytes(), "quantized values differ"
    assert y.quantization() == (9, "BitRound"), y.quantization()
PY
    then ok; else fail "--quantize bitround,9 values"; fi
else
    echo "SKIP: restore of compressed raster variables, the 1.10 x size bound, --deflate 1 and --quantize on stores"
    # kept plain: the output is the input, values and filters
    same_dump "$tmp/z.nc" "$tmp/z.rast.nc" "refused variables kept"
    grep -q 'TEMP stays plain netCDF with its own filters: raster cannot store it by region with deflate level 1, shuffle' \
        "$tmp/d1.err" && ok || fail "--deflate 1 refusal: $(cat "$tmp/d1.err")"
    filters "$tmp/z.d1.nc" 'TEMP:_DeflateLevel = 4' > /dev/null && ok ||
        fail "refused TEMP lost its own deflate level"
fi
# an uncompressed input converts as ever, with no warning
expect 0 "convert plain rastergen" "$rc" --mask "$tmp/z0.nc:REGION_MASK" \
    "$tmp/z0.nc" "$tmp/z0.rast.nc"
grep -q warning "$tmp/err" && fail "plain input: $(cat "$tmp/err")" || ok
expect 0 "restore plain rastergen" "$rc" --restore "$tmp/z0.rast.nc" "$tmp/z0.back.nc"
same_dump "$tmp/z0.nc" "$tmp/z0.back.nc" "plain rastergen round trip"

# ---- bad usage: exit 2 -------------------------------------------------------
m="$tmp/mask.nc:REGION_MASK"
expect 2 "no arguments" "$rc"
expect 2 "no mask" "$rc" "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "one file" "$rc" --mask "$m" "$tmp/cesm.nc"
expect 2 "--format 6" "$rc" --format 6 --mask "$m" "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "--format with --restore" "$rc" --restore --format 2 "$tmp/cesm.rast.nc" "$tmp/bad.nc"
expect 2 "three files" "$rc" --mask "$m" "$tmp/cesm.nc" "$tmp/bad.nc" "$tmp/x.nc"
expect 2 "mask without variable" "$rc" --mask "$tmp/mask.nc" "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "one chunk size" "$rc" --mask "$m" --chunk 5 "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "zero chunk" "$rc" --mask "$m" --chunk 1,0,5 "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "junk chunk" "$rc" --mask "$m" --chunk 1,x "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "empty --vars name" "$rc" --mask "$m" --vars TEMP,,SSH "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "junk buffer" "$rc" --mask "$m" --buffer 12Q "$tmp/cesm.nc" "$tmp/bad.nc"
expect 2 "restore with mask" "$rc" --restore --mask "$m" "$tmp/cesm.rast.nc" "$tmp/bad.nc"
expect 2 "unknown flag" "$rc" --frobnicate "$tmp/cesm.nc" "$tmp/bad.nc"
# one line and a hint, not the whole --help
err_is "unknown flag" "rasterconvert: unknown option '--frobnicate'; try 'rasterconvert --help'"
expect 2 "missing value" "$rc" "$tmp/cesm.nc" "$tmp/bad.nc" --mask
err_is "missing value" "rasterconvert: option '--mask' needs a value; try 'rasterconvert --help'"
expect 2 "value to a flag" "$rc" --restore=yes "$tmp/cesm.nc" "$tmp/bad.nc"
err_is "value to a flag" "rasterconvert: option '--restore' takes no value; try 'rasterconvert --help'"
for bad in "--deflate 10" "--deflate x" "--deflate -1" "--quantize bitgroom" \
           "--quantize foo,3" "--quantize bitgroom,0" "--quantize bitgroom,16" \
           "--quantize bitround,53" "--no-compress --deflate 1" \
           "--no-compress --shuffle"; do
    # shellcheck disable=SC2086 # the words of $bad are the options
    expect 2 "$bad" "$rc" $bad --mask "$m" "$tmp/cesm.nc" "$tmp/bad.nc"
done
expect 2 "--deflate with --restore" "$rc" --restore --deflate 1 \
    "$tmp/cesm.rast.nc" "$tmp/bad.nc"
no_output "$tmp/bad.nc" "usage errors"

expect 0 "help" "$rc" --help
for flag in --mask --vars --chunk --buffer --verbose --restore --help --version \
            --deflate --shuffle --quantize --no-compress; do
    grep -q -- "$flag" "$tmp/out" || fail "--help does not mention $flag"
done
expect 0 "version" "$rc" --version
grep -q 'rasterconvert (raster) [0-9]' "$tmp/out" || fail "--version output"

report rasterconvert
