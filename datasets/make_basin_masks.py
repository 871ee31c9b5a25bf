#!/usr/bin/env python3
"""Derive CESM-POP-like ocean basin region masks from real land/sea data.

Inputs (all offline, see datasets/README.md for provenance and licences):
  * global-land-mask 1.0.0 (PyPI): the GLOBE 30-arc-second (~1 km) land/sea
    grid, 21600 x 43200 booleans (True = ocean; inland lakes are land).
  * GSHHG 2.3.7 intermediate-resolution shorelines (Debian gmt-gshhg-low),
    sampled with `gmt grdlandmask` (Debian gmt) for two things GLOBE lacks:
    the Caspian Sea outline (GLOBE marks the Caspian as land) and the
    Antarctic ice-shelf fronts (GLOBE marks floating ice shelves as ocean;
    POP, like GSHHG's default, treats them as land).

Output: netCDF-4 files with REGION_MASK(nlat, nlon) using POP's codes
  1 Southern Ocean, 2 Pacific, 3 Indian, 4 Persian Gulf, -5 Red Sea,
  6 Atlantic, 7 Mediterranean, 8 Labrador Sea and Baffin Bay, 9 GIN Seas,
  10 Arctic, 11 Hudson Bay, -12 Baltic, -13 Black Sea, -14 Caspian, 0 land.

Grid: regular latitude/longitude, rows from south to north (row 0 is the
southernmost, as in POP), latitude edges from -79 to +89 degrees;
columns start at 320 degrees east (cell edge) and increase eastward,
wrapping through 360 -> 0, so the Atlantic straddles the seam between the
last and the first column, as in POP's gx1 grids.

Usage:
  /usr/bin/python3 datasets/make_basin_masks.py            # both grids
  /usr/bin/python3 datasets/make_basin_masks.py --grid 384x320

The script is deterministic: same inputs -> same values (and same bytes).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import netCDF4

LAT_SOUTH = -79.0      # southern edge of row 0
LAT_NORTH = 89.0       # northern edge of the last row
LON_WEST = 320.0       # western edge of column 0 (degrees east)

GRIDS = {"384x320": (384, 320), "2400x3600": (2400, 3600)}

# Region ids and names (POP REGION_MASK codes).
REGIONS = [
    (-14, "Caspian_Sea"),
    (-13, "Black_Sea"),
    (-12, "Baltic_Sea"),
    (-5, "Red_Sea"),
    (0, "Land"),
    (1, "Southern_Ocean"),
    (2, "Pacific_Ocean"),
    (3, "Indian_Ocean"),
    (4, "Persian_Gulf"),
    (6, "Atlantic_Ocean"),
    (7, "Mediterranean_Sea"),
    (8, "Labrador_Sea_and_Baffin_Bay"),
    (9, "GIN_Seas"),
    (10, "Arctic_Ocean"),
    (11, "Hudson_Bay"),
]
NAME = dict(REGIONS)

# Tunable rule parameters (documented in datasets/README.md).
WATER_THRESHOLD = 0.5   # a cell is water when >= this fraction of it is water
SOUTHERN_LAT = -34.0    # Southern Ocean: remaining open ocean south of this
ARCTIC_LAT = 66.0       # Arctic: remaining open ocean north of this
ANTARCTIC_FIX_LAT = -60.0  # ice-shelf correction applies south of this

# Polygons (lon in [-180, 180), lat) for the open-ocean split between the
# Southern-Ocean and Arctic limits.  Their edges run over land except where
# they cross a strait on purpose (Singapore/Sunda/Bali/Lombok/Ombai straits,
# the Timor Sea from Timor to Cape Londonderry, Bass Strait) or follow the
# conventional meridians south of the continents (20E south of Africa, 147E
# south of Tasmania, 68W through Drake Passage), which only matter if
# SOUTHERN_LAT is moved south of the continents.
# Everything left over (west of the Americas, east of Asia/Indonesia/
# Australia) is Pacific.
ATLANTIC_POLY = [
    (-68.0, -80.0), (-68.0, -56.0), (-71.5, -45.0), (-70.5, -34.0),
    (-68.5, -20.0), (-75.0, -10.0), (-78.5, -2.0), (-76.0, 3.0),
    (-77.4, 7.9), (-79.6, 9.15), (-81.0, 8.4), (-82.5, 8.6), (-83.6, 9.6),
    (-85.0, 12.0), (-88.5, 15.0), (-92.0, 16.5), (-94.8, 17.3),
    (-100.0, 24.0), (-100.0, 90.0), (45.0, 90.0), (45.0, 30.0),
    (20.0, 30.0), (20.0, -80.0),
]
INDIAN_POLY = [
    (20.0, -80.0), (20.0, 30.0), (100.0, 30.0), (98.8, 15.0), (98.9, 10.5),
    (100.6, 6.5), (102.3, 3.0), (103.55, 1.45), (103.2, 0.2),
    (104.5, -2.5), (105.85, -5.9), (110.0, -7.4), (114.4, -8.2),
    (115.2, -8.35), (116.3, -8.6), (117.8, -8.6), (121.0, -8.7),
    (123.0, -8.4), (124.5, -8.3), (125.5, -8.9), (127.2, -8.5),
    (126.6, -13.9), (134.0, -25.0), (140.0, -34.0), (146.4, -39.0),
    (147.0, -41.0), (147.0, -80.0),
]


# ----------------------------------------------------------------------------
# Grid and land/sea fractions
# ----------------------------------------------------------------------------

def lat_edges_for(nlat, spacing):
    """Latitude cell edges (ascending, nlat + 1 values) from LAT_SOUTH to
    LAT_NORTH.  'regular': uniform.  'gx1like': POP-gx1-like meridional
    refinement, spacing 0.5*d at the equator growing smoothly to d poleward
    (d(phi) proportional to 1 - 0.5*exp(-(phi/12)^2)), as gx1v6 has about
    0.27 deg near the equator and about 0.54 deg elsewhere."""
    if spacing == "regular":
        return LAT_SOUTH + (LAT_NORTH - LAT_SOUTH) * np.arange(nlat + 1) / nlat
    phi = np.linspace(LAT_SOUTH, LAT_NORTH, 200001)
    dens = 1.0 / (1.0 - 0.5 * np.exp(-(phi / 12.0) ** 2))   # rows per degree (relative)
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(phi))])
    cum *= nlat / cum[-1]
    e = np.interp(np.arange(nlat + 1, dtype=np.float64), cum, phi)
    e[0], e[-1] = LAT_SOUTH, LAT_NORTH
    return e


class Grid:
    def __init__(self, nlat, nlon, spacing="regular"):
        self.nlat, self.nlon = nlat, nlon
        self.spacing = spacing
        self.lat_edges = lat_edges_for(nlat, spacing)
        self.dlon = 360.0 / nlon
        i = np.arange(nlon, dtype=np.float64)
        self.lat = 0.5 * (self.lat_edges[1:] + self.lat_edges[:-1])
        self.lon = np.mod(LON_WEST + (i + 0.5) * self.dlon, 360.0)
        self.LAT, LON = np.meshgrid(self.lat, self.lon, indexing="ij")
        self.LONW = np.mod(LON + 180.0, 360.0) - 180.0   # [-180, 180)
        self.dlat_cell = np.diff(self.lat_edges)

    def row_of(self, lat):
        j = np.searchsorted(self.lat_edges, lat, side="right") - 1
        return np.where((lat < LAT_SOUTH) | (lat >= LAT_NORTH), -1, j)

    def col_of(self, lon):
        return (np.floor(np.mod(np.asarray(lon, dtype=np.float64) - LON_WEST, 360.0)
                         / self.dlon).astype(np.int64) % self.nlon)

    def cell_of(self, lat, lon):
        j = int(self.row_of(np.array([lat]))[0])
        return min(max(j, 0), self.nlat - 1), int(self.col_of(lon))


def globe_path():
    import global_land_mask
    return os.path.join(os.path.dirname(global_land_mask.__file__),
                        "globe_combined_mask_compressed.npz")


def aggregate(grid, fine, lat_north, lon_west, per=120):
    """Fraction of True in each target cell of a fine boolean grid.

    `fine` has rows from north to south starting at edge lat_north and
    columns eastward from edge lon_west, 1/per degree cells.  Every fine
    cell is assigned to the target cell containing its centre; the result
    is (true count)/(total count), NaN where no fine cell falls.
    """
    nrow, ncol = fine.shape
    latc = lat_north - (np.arange(nrow) + 0.5) / per
    lonc = lon_west + (np.arange(ncol) + 0.5) / per
    jrow = grid.row_of(latc)
    icol = grid.col_of(lonc)
    ncnt = np.bincount(icol, minlength=grid.nlon).astype(np.float64)
    num = np.zeros((grid.nlat, grid.nlon))
    den = np.zeros((grid.nlat, grid.nlon))
    for j in np.unique(jrow[jrow >= 0]):
        ks = np.nonzero(jrow == j)[0]
        colsum = fine[ks[0]:ks[-1] + 1].sum(axis=0, dtype=np.int64)
        num[j] = np.bincount(icol, weights=colsum, minlength=grid.nlon)
        den[j] = ncnt * len(ks)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def gshhg_sample(w, e, s, n, workdir, per=120):
    """GSHHG classes (0 ocean, 1 land, 2 lake) on a 1/per degree pixel grid
    (rows north to south) from gmt grdlandmask, intermediate shorelines."""
    nx, ny = int(round((e - w) * per)), int(round((n - s) * per))
    out = os.path.join(workdir, "gshhg.nc")
    cmd = ["gmt", "grdlandmask", "-R%.10f/%.10f/%.10f/%.10f" % (w, e, s, n),
           "-I%d+n/%d+n" % (nx, ny), "-r", "-Di", "-N0/1/2/1/2",
           "-G%s=nb" % out]
    subprocess.run(cmd, check=True, cwd=workdir)
    with netCDF4.Dataset(out) as d:
        z = np.asarray(d.variables["z"][:], dtype=np.int8)
        lat = np.asarray(d.variables["lat"][:])
    os.remove(out)
    if z.shape != (ny, nx):
        raise SystemExit("unexpected grdlandmask shape %s" % (z.shape,))
    if lat[0] < lat[-1]:
        z = z[::-1]
    return z


# ----------------------------------------------------------------------------
# Connected components (4-connectivity, periodic in longitude)
# ----------------------------------------------------------------------------

def label(mask, periodic=True):
    """Label 4-connected components of a boolean 2-D array.

    Columns wrap (the last column touches the first) when periodic.
    Returns (labels int32 array with 0 = background, sizes array where
    sizes[l] is the cell count of label l).  Labels are numbered in
    row-major order of each component's first cell.
    """
    ny, nx = mask.shape
    pad = np.zeros((ny, nx + 2), dtype=np.int8)
    pad[:, 1:-1] = mask
    d = np.diff(pad, axis=1)
    sr, sc = np.nonzero(d == 1)
    er, ec = np.nonzero(d == -1)
    nrun = len(sr)
    lab = np.zeros((ny, nx), dtype=np.int32)
    if nrun == 0:
        return lab, np.zeros(1, dtype=np.int64)
    big = np.int64(nx + 2)
    sr64 = sr.astype(np.int64)
    key_s = sr64 * big + sc
    key_e = sr64 * big + ec
    b = np.nonzero(sr > 0)[0]
    y = sr64[b] - 1
    lo = np.searchsorted(key_e, y * big + sc[b], side="right")
    hi = np.searchsorted(key_s, y * big + ec[b], side="left")
    cnt = np.maximum(hi - lo, 0)
    tot = int(cnt.sum())
    B = np.repeat(b, cnt)
    A = (np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt)
         + np.repeat(lo, cnt))
    if periodic:
        rows = np.nonzero(mask[:, 0] & mask[:, -1])[0]
        if len(rows):
            first = np.searchsorted(key_s, rows.astype(np.int64) * big)
            last = np.searchsorted(key_s, (rows.astype(np.int64) + 1) * big) - 1
            A = np.concatenate([A, first])
            B = np.concatenate([B, last])
    par = np.arange(nrun, dtype=np.int64)
    while True:
        ra, rb = par[A], par[B]
        if np.array_equal(ra, rb):
            break
        np.minimum.at(par, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            nxt = par[par]
            if np.array_equal(nxt, par):
                break
            par = nxt
    roots, runlab = np.unique(par, return_inverse=True)
    runlab = (runlab + 1).astype(np.int32)
    length = ec - sc
    start = sr64 * nx + sc
    pos = (np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length)
           + np.repeat(start, length))
    lab.ravel()[pos] = np.repeat(runlab, length)
    sizes = np.bincount(lab.ravel(), minlength=len(roots) + 1)
    sizes[0] = 0
    return lab, sizes


def points_in_polygon(x, y, poly):
    """Even-odd rule; x, y arrays; poly list of (x, y)."""
    inside = np.zeros(x.shape, dtype=bool)
    n = len(poly)
    for k in range(n):
        x1, y1 = poly[k]
        x2, y2 = poly[(k + 1) % n]
        if y1 == y2:
            continue
        cond = (y1 > y) != (y2 > y)
        xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= cond & (x < xc)
    return inside


# ----------------------------------------------------------------------------
# Region rules
# ----------------------------------------------------------------------------

def lerp(x, x0, x1, y0, y1):
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def gin_south(lon):
    """Southern limit of the GIN Seas: Greenland-Iceland-Faroe-Scotland
    ridge and the 61N Shetland-Norway line."""
    s = np.full(lon.shape, 61.0)
    s = np.where(lon <= -1.0, lerp(lon, -7.0, -1.0, 62.0, 60.5), s)
    s = np.where(lon <= -7.0, lerp(lon, -13.5, -7.0, 64.5, 62.0), s)
    s = np.where(lon <= -13.5, 64.5, s)
    s = np.where(lon <= -22.0, 66.0, s)
    s = np.where(lon > -1.0, lerp(np.clip(lon, -1.0, 5.0), -1.0, 5.0, 60.5, 61.0), s)
    return s


def gin_east(lat):
    """Eastern limit of the GIN Seas: North Cape (25.8E, 71.2N) - Bear Island -
    South Cape of Spitsbergen (16.5E, 76.5N), then 16.5E up to 80N."""
    e = np.full(lat.shape, 25.8)
    e = np.where(lat > 71.2, lerp(np.clip(lat, 71.2, 76.5), 71.2, 76.5, 25.8, 16.5), e)
    return e


def labrador_south(lon):
    """Southern limit of the Labrador Sea: Newfoundland (55.5W, 52N) to
    Cape Farewell (44W, 60N); 52N west of 55.5W (closes the Strait of
    Belle Isle)."""
    return np.where(lon <= -55.5, 52.0, lerp(np.clip(lon, -55.5, -44.0), -55.5, -44.0, 52.0, 60.0))


def marginal_seas(g):
    """(code, allowed-box mask, seeds) for the seas cut by box + flood fill,
    in the order they are claimed.  Lon is g.LONW in [-180, 180)."""
    LAT, LON = g.LAT, g.LONW
    box = lambda w, e, s, n: (LON >= w) & (LON <= e) & (LAT >= s) & (LAT <= n)
    black = box(27.0, 42.0, 40.9, 47.6) & ~((LON < 30.0) & (LAT < 41.15))
    med = box(-5.6, 37.0, 30.0, 46.0) & ~((LON > 32.0) & (LAT < 31.0))
    red = box(32.0, 43.6, 12.4, 30.5)
    persian = box(47.5, 56.2, 23.5, 31.0)
    baltic = box(9.5, 31.0, 53.0, 66.5) & ~((LON < 12.2) & (LAT > 57.7))
    hudson = (box(-96.0, -64.5, 50.5, 70.5) & ~((LON > -68.5) & (LAT > 62.0))
              & ~((LAT > 68.8) & (LON < -82.0)))
    labrador = box(-80.0, -44.0, 50.0, 79.5) & (LAT >= labrador_south(LON))
    gin = (box(-44.0, 26.0, 60.0, 80.0) & (LAT >= gin_south(LON))
           & (LON <= gin_east(LAT)))
    return [
        (-13, black, [(43.0, 34.0), (46.0, 36.5)]),
        (7, med, [(35.0, 18.0), (39.0, 5.0), (43.0, 15.0), (38.0, 25.0),
                  (40.75, 28.0), (36.0, -4.0)]),
        (-5, red, [(20.0, 38.5), (28.5, 33.0), (28.8, 34.7)]),
        (4, persian, [(27.0, 51.0)]),
        (-12, baltic, [(56.0, 18.0), (61.5, 19.5), (64.5, 23.0),
                       (59.8, 25.5), (57.7, 23.5)]),
        (11, hudson, [(60.0, -85.0), (52.5, -80.5), (67.0, -79.0),
                      (62.0, -72.0), (59.5, -67.5)]),
        (8, labrador, [(58.0, -55.0), (73.0, -65.0)]),
        (9, gin, [(70.0, 0.0), (75.0, -5.0), (65.0, 0.0)]),
    ]


def claim_from_seeds(g, avail, seeds, max_dist_deg=2.0):
    """Union of the 4-connected components of `avail` that contain the seeds
    (a seed on a non-available cell takes the nearest available cell within
    max_dist_deg)."""
    lab, _ = label(avail)
    out = np.zeros(avail.shape, dtype=bool)
    jj, ii = np.nonzero(avail)
    for lat, lon in seeds:
        j, i = g.cell_of(lat, lon)
        if avail[j, i]:
            l = lab[j, i]
        else:
            if len(jj) == 0:
                continue
            di = np.abs(ii - i)
            di = np.minimum(di, g.nlon - di) * g.dlon
            dj = g.lat[jj] - g.lat[j]
            d2 = di * di + dj * dj
            k = int(np.argmin(d2))
            if d2[k] > max_dist_deg ** 2:
                continue
            l = lab[jj[k], ii[k]]
        out |= lab == l
    return out


def build_mask(g, globe_ocean, workdir, log):
    # GLOBE rows run from 90N southward, columns from 180W eastward.
    frac = aggregate(g, globe_ocean, 90.0, -180.0)
    log("  GLOBE water fraction done")

    # Antarctic ice shelves: south of ANTARCTIC_FIX_LAT a cell's water
    # fraction is the smaller of GLOBE's and GSHHG's (GSHHG's Antarctic
    # coastline is the ice front, so floating ice shelves count as land).
    z = gshhg_sample(-180.0, 180.0, LAT_SOUTH, ANTARCTIC_FIX_LAT, workdir)
    oc = aggregate(g, z == 0, ANTARCTIC_FIX_LAT, -180.0)
    fix = ~np.isnan(oc)
    frac[fix] = np.minimum(frac[fix], oc[fix])
    water = frac >= WATER_THRESHOLD

    # Caspian Sea: GLOBE marks it as land; take GSHHG lake (level 2) cells
    # inside a box and keep the water body containing the seed points.
    z = gshhg_sample(46.0, 56.0, 36.0, 48.0, workdir)
    lake = aggregate(g, z == 2, 48.0, 46.0)
    caspian_water = np.nan_to_num(lake, nan=0.0) >= WATER_THRESHOLD
    log("  GSHHG corrections done")

    R = np.zeros((g.nlat, g.nlon), dtype=np.int32)
    R[claim_from_seeds(g, caspian_water & ~water, [(42.0, 51.0), (44.5, 50.5), (46.0, 52.0)])] = -14

    lab, sizes = label(water)
    main = lab == int(np.argmax(sizes))

    for code, allowed, seeds in marginal_seas(g):
        avail = water & allowed & (R == 0)
        R[claim_from_seeds(g, avail, seeds)] = code

    rem = main & (R == 0)
    LAT, LON = g.LAT, g.LONW
    arctic = rem & ((LAT >= ARCTIC_LAT) | ((LON >= 30.0) & (LON <= 45.0) & (LAT >= 63.5)))
    R[arctic] = 10
    rem &= ~arctic
    south = rem & (LAT < SOUTHERN_LAT)
    R[south] = 1
    rem &= ~south
    atl = rem & points_in_polygon(LON, LAT, ATLANTIC_POLY)
    R[atl] = 6
    rem &= ~atl
    ind = rem & points_in_polygon(LON, LAT, INDIAN_POLY)
    R[ind] = 3
    rem &= ~ind
    R[rem] = 2
    # Water not connected to the world ocean and not a named sea (lakes,
    # lagoons, isolated coastal pockets) stays land (0).
    merge_fragments(R, (1, 2, 3, 6, 10))
    return R, water


def merge_fragments(R, codes):
    """A piece of an open-ocean region cut off from that region's main body
    by the straight-line rules (e.g. Spencer Gulf north of the Southern
    Ocean limit, a bay reachable only through Hudson Strait) joins the
    neighbouring water region it shares the longest border with.  Repeated
    until stable."""
    for _ in range(10):
        changed = False
        for code in codes:
            lab, sizes = label(R == code)
            if len(sizes) <= 2:
                continue
            keep = int(np.argmax(sizes))
            for l in range(1, len(sizes)):
                if l == keep:
                    continue
                piece = lab == l
                nb = np.zeros_like(piece)
                nb[1:] |= piece[:-1]
                nb[:-1] |= piece[1:]
                nb |= np.roll(piece, 1, axis=1) | np.roll(piece, -1, axis=1)
                vals = R[nb & ~piece]
                vals = vals[(vals != 0) & (vals != code)]
                if len(vals) == 0:
                    continue
                u, c = np.unique(vals, return_counts=True)
                R[piece] = u[int(np.argmax(c))]
                changed = True
        if not changed:
            break


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------

TITLE = "CESM POP-like ocean basin region mask (REGION_MASK) on a %dx%d lat/lon grid"
SOURCE = ("Derived from the GLOBE 30-arc-second land/sea mask shipped in the PyPI package "
          "global-land-mask 1.0.0 (GLOBE Task Team / NOAA NGDC; package MIT licence, "
          "Todd Karin), with GSHHG 2.3.7 intermediate shorelines (Debian gmt-gshhg-low, "
          "via GMT 6.4 grdlandmask) for the Caspian Sea outline and Antarctic ice-shelf "
          "fronts. Basins cut by the rule set in datasets/make_basin_masks.py.")
REFERENCES = ("GLOBE Task Team et al. (1999), The Global One-km Base Elevation (GLOBE) "
              "Digital Elevation Model, Version 1.0, NOAA NGDC, doi:10.7289/V52R3PMS; "
              "Wessel and Smith (1996), A global, self-consistent, hierarchical, "
              "high-resolution shoreline database, JGR 101(B4), 8741-8743; "
              "region codes after the CESM POP2 REGION_MASK (gx1v6)")
LICENSE = ("Derived data. Inputs: GLOBE (NOAA NGDC, public domain), global-land-mask "
           "(MIT), GSHHG (LGPL-3.0-or-later). Redistribute under LGPL-3.0-or-later terms.")


def write_nc(path, g, R, history):
    ids = np.array(sorted(int(v) for v in np.unique(R)), dtype=np.int32)
    names = " ".join(NAME[int(v)] for v in ids)
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF4") as d:
        d.createDimension("nlat", g.nlat)
        d.createDimension("nlon", g.nlon)
        v = d.createVariable("lat", "f8", ("nlat",), zlib=True, complevel=9, shuffle=True)
        v.long_name = "latitude of cell centre"
        v.standard_name = "latitude"
        v.units = "degrees_north"
        v[:] = g.lat
        v = d.createVariable("lon", "f8", ("nlon",), zlib=True, complevel=9, shuffle=True)
        v.long_name = "longitude of cell centre (starts near 320E, increases eastward, wraps at 360)"
        v.standard_name = "longitude"
        v.units = "degrees_east"
        v[:] = g.lon
        # Row-band chunks of at most ~9 MiB (one chunk for 384x320, four
        # 600-row bands for 2400x3600).
        nchunk = -(-g.nlat * g.nlon * 4 // (9 << 20))
        chunk_rows = -(-g.nlat // nchunk)
        v = d.createVariable("REGION_MASK", "i4", ("nlat", "nlon"), zlib=True,
                             complevel=9, shuffle=True,
                             chunksizes=(min(chunk_rows, g.nlat), g.nlon))
        v.long_name = "ocean basin region mask"
        v.flag_values = ids
        v.flag_meanings = names
        v.coordinates = "lat lon"
        v.comment = ("POP REGION_MASK codes; 0 = land (including lakes and ice shelves); "
                     "negative ids are marginal seas as in POP")
        v[:] = R
        d.Conventions = "CF-1.8"
        d.title = TITLE % (g.nlat, g.nlon)
        d.source = SOURCE
        d.history = history
        d.references = REFERENCES
        d.license = LICENSE
        if g.spacing == "regular":
            latdesc = "regular latitude, edges %.4f..%.4f step %.6g deg" % (
                LAT_SOUTH, LAT_NORTH, (LAT_NORTH - LAT_SOUTH) / g.nlat)
        else:
            latdesc = ("gx1-like latitude (equatorial refinement), edges %.4f..%.4f, "
                       "steps %.4g..%.4g deg" % (LAT_SOUTH, LAT_NORTH,
                                                 g.dlat_cell.min(), g.dlat_cell.max()))
        d.grid = ("lat/lon grid: %s, row 0 southernmost; longitude edges from %.1fE, "
                  "step %.6g deg eastward, wrapping through 360" % (latdesc, LON_WEST, g.dlon))
    os.replace(tmp, path)


def shares(R):
    ids, cnt = np.unique(R, return_counts=True)
    return [(int(i), NAME[int(i)], int(c), 100.0 * c / R.size) for i, c in zip(ids, cnt)]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", choices=sorted(GRIDS) + ["all"], default="all")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--outdir", default=os.path.join(here, "masks"))
    ap.add_argument("--lat-spacing", choices=["regular", "gx1like"], default="regular",
                    help="latitude spacing (default regular)")
    args = ap.parse_args()
    if shutil.which("gmt") is None:
        sys.exit("gmt not found: apt-get install gmt gmt-gshhg-low")
    log = lambda s: print(s, file=sys.stderr, flush=True)
    os.makedirs(args.outdir, exist_ok=True)
    log("loading GLOBE mask from %s" % globe_path())
    with np.load(globe_path()) as f:
        globe_ocean = f["mask"]
    names = sorted(GRIDS) if args.grid == "all" else [args.grid]
    history = "/usr/bin/python3 datasets/make_basin_masks.py --grid %s" % args.grid
    if args.lat_spacing != "regular":
        history += " --lat-spacing %s" % args.lat_spacing
    with tempfile.TemporaryDirectory() as workdir:
        for name in names:
            nlat, nlon = GRIDS[name]
            log("grid %s" % name)
            g = Grid(nlat, nlon, args.lat_spacing)
            R, _ = build_mask(g, globe_ocean, workdir, log)
            path = os.path.join(args.outdir, "pop_basins_%dx%d.nc" % (nlat, nlon))
            write_nc(path, g, R, history)
            print("%s  (%d bytes)" % (path, os.path.getsize(path)))
            for i, n, c, p in shares(R):
                print("  %4d %-28s %9d %7.3f%%" % (i, n, c, p))


if __name__ == "__main__":
    main()
