#!/usr/bin/env python3
"""Rasterize real country borders onto a WRF-like Lambert conformal grid.

Input (offline): DCW-GMT 2.1.1, the Digital Chart of the World country
polygons packaged for GMT (Debian package gmt-dcw, file
/usr/share/gmt-dcw/dcw-gmt.nc), read through `gmt coast -E<ISO> -M`
(Debian package gmt).  Country bounding boxes come from the min/max
attributes of that netCDF file, to dump only countries that can touch the
domain.

Grid: WRF-style Lambert conformal conic on a sphere of radius 6370 km
(MAP_PROJ = 1), domain centre (CEN_LAT, CEN_LON), true latitudes TRUELAT1/2,
STAND_LON, DX = DY, e_we x e_sn mass points; row 0 is the southernmost row.

Rule: a cell takes the id of the country whose polygon contains the cell
centre (even-odd rule over all the country's rings, scanline fill in the
projected plane); where two countries claim a cell (border rounding,
enclaves) the smaller country wins.  0 = no country (sea, or outside DCW).
Ids 1..N follow the ISO 3166-1 alpha-2 codes in alphabetical order, over the
countries that have at least one cell.

Usage:
  /usr/bin/python3 datasets/make_admin_mask.py
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata

import numpy as np
import netCDF4

DCW_NC = "/usr/share/gmt-dcw/dcw-gmt.nc"
DCW_COUNTRIES = "/usr/share/gmt-dcw/dcw-countries.txt"
DCW_STATES = "/usr/share/gmt-dcw/dcw-states.txt"
EARTH_RADIUS = 6370000.0   # WRF's sphere

# WRF namelist-like domains.
DOMAINS = {
    # Europe, d01-style 10 km: countries.
    "europe": dict(
        e_we=600, e_sn=500, dx=10000.0, dy=10000.0,
        cen_lat=52.0, cen_lon=15.0, truelat1=35.0, truelat2=65.0, stand_lon=15.0,
        subdivide=(), what="countries"),
    # Contiguous US, the classic 12 km CONUS layout: US states and Canadian
    # provinces, other countries whole.
    "conus": dict(
        e_we=425, e_sn=300, dx=12000.0, dy=12000.0,
        cen_lat=38.5, cen_lon=-97.5, truelat1=38.5, truelat2=38.5, stand_lon=-97.5,
        subdivide=("US", "CA"), what="US states, Canadian provinces and countries"),
}


class LambertConformal:
    """Spherical Lambert conformal conic (Snyder 1987, eqs. 15-1..15-5)."""

    def __init__(self, truelat1, truelat2, stand_lon, R=EARTH_RADIUS):
        p1, p2 = np.radians(truelat1), np.radians(truelat2)
        if abs(truelat1 - truelat2) < 1e-9:
            self.n = np.sin(p1)
        else:
            self.n = (np.log(np.cos(p1) / np.cos(p2)) /
                      np.log(np.tan(np.pi / 4 + p2 / 2) / np.tan(np.pi / 4 + p1 / 2)))
        self.F = np.cos(p1) * np.tan(np.pi / 4 + p1 / 2) ** self.n / self.n
        self.R = R
        self.lon0 = stand_lon

    def rho(self, lat):
        return self.R * self.F / np.tan(np.pi / 4 + np.radians(lat) / 2) ** self.n

    def forward(self, lat, lon):
        """lon must already be continuous (not wrapped) near lon0."""
        r = self.rho(lat)
        th = self.n * np.radians(np.asarray(lon) - self.lon0)
        return r * np.sin(th), -r * np.cos(th)

    def inverse(self, x, y):
        r = np.sign(self.n) * np.hypot(x, y)
        th = np.arctan2(np.sign(self.n) * x, -np.sign(self.n) * y)
        lat = np.degrees(2 * np.arctan((self.R * self.F / r) ** (1 / self.n)) - np.pi / 2)
        lon = self.lon0 + np.degrees(th / self.n)
        return lat, np.mod(lon + 180.0, 360.0) - 180.0


class Domain:
    def __init__(self, d):
        self.d = d
        self.nx, self.ny = d["e_we"], d["e_sn"]
        self.proj = LambertConformal(d["truelat1"], d["truelat2"], d["stand_lon"])
        xc, yc = self.proj.forward(d["cen_lat"], d["cen_lon"])
        self.x0 = xc - (self.nx - 1) / 2.0 * d["dx"]     # centre of cell i = 0
        self.y0 = yc - (self.ny - 1) / 2.0 * d["dy"]     # centre of row j = 0
        x = self.x0 + np.arange(self.nx) * d["dx"]
        y = self.y0 + np.arange(self.ny) * d["dy"]
        X, Y = np.meshgrid(x, y)
        self.XLAT, self.XLONG = self.proj.inverse(X, Y)
        # Bounding box of the domain boundary (cell edges), for pre-filtering.
        xe = self.x0 + (np.arange(self.nx + 1) - 0.5) * d["dx"]
        ye = self.y0 + (np.arange(self.ny + 1) - 0.5) * d["dy"]
        bx = np.concatenate([xe, np.full(ye.size, xe[-1]), xe[::-1], np.full(ye.size, xe[0])])
        by = np.concatenate([np.full(xe.size, ye[0]), ye, np.full(xe.size, ye[-1]), ye[::-1]])
        blat, blon = self.proj.inverse(bx, by)
        self.bbox = (blon.min(), blon.max(), blat.min(), min(90.0, blat.max()))
        # A pole inside the domain would need lon -180..180; not the case here.

    def to_index(self, lat, lon):
        x, y = self.proj.forward(lat, lon)
        return (x - self.x0) / self.d["dx"], (y - self.y0) / self.d["dy"]


def dcw_units(subdivide=()):
    """[(code, name, (west, east, south, north))] for every DCW country, with
    the countries listed in `subdivide` replaced by their states/provinces
    (code 'US.TX', name 'Texas')."""
    countries, states = {}, {}
    with open(DCW_COUNTRIES, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            countries[parts[1]] = " ".join(parts[2:])
    with open(DCW_STATES, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            if parts[0] in subdivide:
                # 'Quebec (Québec)': keep the English name
                states[parts[0] + "." + parts[1]] = " ".join(parts[2:]).split(" (")[0]
    units = [(c, n) for c, n in countries.items() if c not in subdivide]
    units += list(states.items())
    out = []
    with netCDF4.Dataset(DCW_NC) as d:
        for code, name in sorted(units):
            var = code.replace(".", "")
            if var + "_lon" not in d.variables:
                continue
            vx, vy = d.variables[var + "_lon"], d.variables[var + "_lat"]
            out.append((code, name, (float(vx.min), float(vx.max),
                                     float(vy.min), float(vy.max))))
    return out


def dcw_rings(iso, workdir):
    """Polygon rings of one country as a list of (lon, lat) arrays.
    GMT runs in workdir (it leaves a gmt.history file behind)."""
    txt = subprocess.run(["gmt", "coast", "-E" + iso, "-M"], check=True, cwd=workdir,
                         capture_output=True, text=True).stdout
    rings = []
    for seg in txt.split(">")[1:]:
        nl = seg.find("\n")
        vals = np.array(seg[nl + 1:].split(), dtype=np.float64)
        if vals.size >= 6:
            rings.append((vals[0::2], vals[1::2]))
    return rings


def unwrap_lon(lon, lon0):
    """Make a ring's longitudes continuous and centred within 180 of lon0."""
    lon = np.degrees(np.unwrap(np.radians(lon)))
    shift = np.round((np.mean(lon) - lon0) / 360.0) * 360.0
    return lon - shift


def rasterize(dom, rings):
    """Boolean mask of cells whose centre lies inside the rings (even-odd)."""
    ny, nx = dom.ny, dom.nx
    toggles = np.zeros((ny, nx + 1), dtype=np.int32)
    for lon, lat in rings:
        lon = unwrap_lon(lon, dom.d["stand_lon"])
        u, v = dom.to_index(lat, lon)
        u1, v1 = u, v
        u2, v2 = np.roll(u, -1), np.roll(v, -1)
        lo = np.ceil(np.minimum(v1, v2)).astype(np.int64)     # rows j with
        hi = np.ceil(np.maximum(v1, v2)).astype(np.int64)     # min <= j < max
        lo = np.maximum(lo, 0)
        hi = np.minimum(hi, ny)
        cnt = np.maximum(hi - lo, 0)
        if cnt.sum() == 0:
            continue
        e = np.repeat(np.arange(u1.size), cnt)
        j = (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
             + np.repeat(lo, cnt))
        uc = u1[e] + (j - v1[e]) * (u2[e] - u1[e]) / (v2[e] - v1[e])
        pos = np.clip(np.ceil(uc), 0, nx).astype(np.int64)
        np.add.at(toggles, (j, pos), 1)
    return (np.cumsum(toggles, axis=1)[:, :nx] & 1).astype(bool)


def build(dom, workdir, log):
    w, e, s, n = dom.bbox
    cands = []
    for iso, name, (cw, ce, cs, cn) in dcw_units(dom.d["subdivide"]):
        if cn < s - 1 or cs > n + 1:
            continue
        # DCW longitudes may be given in 0..360 or -180..180.
        if all(ce + k < w - 1 or cw + k > e + 1 for k in (-360.0, 0.0, 360.0)):
            continue
        cands.append((iso, name))
    log("%d candidate units intersect lon %.1f..%.1f lat %.1f..%.1f"
        % (len(cands), w, e, s, n))
    masks = []
    for iso, name in cands:
        m = rasterize(dom, dcw_rings(iso, workdir))
        if m.any():
            masks.append((iso, name, m))
    # Paint large countries first so that small ones (enclaves) win.
    order = sorted(range(len(masks)), key=lambda k: (-int(masks[k][2].sum()), masks[k][0]))
    present = sorted(masks, key=lambda t: t[0])
    ident = {iso: k + 1 for k, (iso, _, _) in enumerate(present)}
    R = np.zeros((dom.ny, dom.nx), dtype=np.int32)
    for k in order:
        iso, _, m = masks[k]
        R[m] = ident[iso]
    # Countries completely overwritten by smaller ones would leave gaps in
    # the id sequence; renumber to 1..N over the ids that survive.
    survivors = [t for t in present if (R == ident[t[0]]).any()]
    remap = np.zeros(len(present) + 1, dtype=np.int32)
    for k, (iso, _, _) in enumerate(survivors):
        remap[ident[iso]] = k + 1
    R = remap[R]
    return R, [(k + 1, iso, name) for k, (iso, name, _) in enumerate(survivors)]


def flag_name(name):
    """ASCII word for flag_meanings: accents dropped, other marks -> '_'."""
    name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    s = "".join(c if c.isalnum() else "_" for c in name)
    while "__" in s:
        s = s.replace("__", "_")
    return s.strip("_")


def write_nc(path, dom, R, table, history):
    d = dom.d
    tmp = path + ".tmp"
    ids = np.array([0] + [k for k, _, _ in table], dtype=np.int32)
    with netCDF4.Dataset(tmp, "w", format="NETCDF4") as f:
        f.createDimension("south_north", dom.ny)
        f.createDimension("west_east", dom.nx)
        kw = dict(zlib=True, complevel=9, shuffle=True)
        for vname, arr, desc, units, std in (
                ("XLAT", dom.XLAT, "LATITUDE, SOUTH IS NEGATIVE", "degree_north", "latitude"),
                ("XLONG", dom.XLONG, "LONGITUDE, WEST IS NEGATIVE", "degree_east", "longitude")):
            # Rounded to 1e-4 degree (about 10 m, 1/1000 of a cell) so that
            # the coordinates compress well; the mask itself is exact.
            v = f.createVariable(vname, "f4", ("south_north", "west_east"),
                                 least_significant_digit=4, **kw)
            v.FieldType = np.int32(104)
            v.MemoryOrder = "XY "
            v.description = desc
            v.units = units
            v.stagger = ""
            v.standard_name = std
            v[:] = arr.astype(np.float32)
        v = f.createVariable("REGION_MASK", "i4", ("south_north", "west_east"), **kw)
        v.long_name = "administrative region mask (%s)" % d["what"]
        v.flag_values = ids
        v.flag_meanings = " ".join(["Outside"] + [flag_name(nm) for _, _, nm in table])
        v.flag_codes = " ".join(["--"] + [iso for _, iso, _ in table])
        v.coordinates = "XLONG XLAT"
        v.comment = ("0 = no region (sea or outside the DCW polygons); ids 1..N in "
                     "alphabetical order of code (flag_codes: ISO 3166-1 alpha-2 country, "
                     "or country.state as in DCW-GMT)")
        v[:] = R
        f.Conventions = "CF-1.8"
        f.title = ("Administrative region mask (%s) on a WRF-like %d x %d Lambert "
                   "conformal grid, domain '%s'" % (d["what"], dom.ny, dom.nx, d["name"]))
        f.source = ("Country and state polygons of DCW-GMT 2.1.1 (Digital Chart of the World for GMT; "
                    "Debian package gmt-dcw 2.1.1-1) dumped with GMT 6.4 `gmt coast -E<ISO> -M`, "
                    "rasterized (cell-centre, even-odd rule) by datasets/make_admin_mask.py")
        f.history = history
        f.references = ("Digital Chart of the World, US Defense Mapping Agency (1992), 1:1,000,000; "
                        "DCW-GMT, P. Wessel and the GMT team, "
                        "https://github.com/GenericMappingTools/dcw-gmt")
        f.license = ("Derived from DCW-GMT, distributed under the GNU LGPL-3.0-or-later; "
                     "redistribute under the same terms. Borders are as drawn in DCW/DCW-GMT "
                     "and carry no political endorsement.")
        f.MAP_PROJ = np.int32(1)
        f.MAP_PROJ_CHAR = "Lambert Conformal"
        f.CEN_LAT = np.float32(d["cen_lat"])
        f.CEN_LON = np.float32(d["cen_lon"])
        f.TRUELAT1 = np.float32(d["truelat1"])
        f.TRUELAT2 = np.float32(d["truelat2"])
        f.STAND_LON = np.float32(d["stand_lon"])
        f.DX = np.float32(d["dx"])
        f.DY = np.float32(d["dy"])
        f.WEST_EAST_GRID_DIMENSION = np.int32(dom.nx + 1)
        f.SOUTH_NORTH_GRID_DIMENSION = np.int32(dom.ny + 1)
        f.earth_radius = EARTH_RADIUS
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--outdir", default=os.path.join(here, "masks"))
    ap.add_argument("--domain", choices=sorted(DOMAINS) + ["all"], default="all")
    args = ap.parse_args()
    if shutil.which("gmt") is None or not os.path.exists(DCW_NC):
        sys.exit("needs GMT and DCW: apt-get install gmt gmt-dcw")
    log = lambda s: print(s, file=sys.stderr, flush=True)
    os.makedirs(args.outdir, exist_ok=True)
    names = sorted(DOMAINS) if args.domain == "all" else [args.domain]
    for name in names:
        dom = Domain(dict(DOMAINS[name], name=name))
        with tempfile.TemporaryDirectory() as workdir:
            R, table = build(dom, workdir, log)
        path = os.path.join(args.outdir, "admin_%dx%d.nc" % (dom.ny, dom.nx))
        write_nc(path, dom, R, table,
                 "/usr/bin/python3 datasets/make_admin_mask.py --domain %s" % name)
        print("%s  (%d bytes)" % (path, os.path.getsize(path)))
        cnt = np.bincount(R.ravel(), minlength=len(table) + 1)
        print("  %4d %-6s %-40s %8d %7.3f%%" % (0, "--", "Outside", cnt[0], 100.0 * cnt[0] / R.size))
        for k, iso, nm in table:
            print("  %4d %-6s %-40s %8d %7.3f%%" % (k, iso, flag_name(nm), cnt[k],
                                                   100.0 * cnt[k] / R.size))


if __name__ == "__main__":
    main()
