"""Job `raster_terrain`: hillshade, slope and aspect by Horn's method (gdaldem's default), window by window with a
one-pixel halo, whole or by tiles (`workers.gdal.windowed`).

Horn's gradient of the 3×3 window  a b c / d e f / g h i  (rows north to south):

    dz/dx = ((c + 2f + i) - (a + 2d + g)) / (8 · ew)      dz/dy = ((a + 2b + c) - (g + 2h + i)) / (8 · ns)

with `ew` and `ns` the pixel's width and height on the ground. In a projected CRS they are the transform's pixel
size, in the CRS's unit (elevations are taken in that unit; `z_factor` converts). In a geographic CRS they are
measured on the CRS's ellipsoid at each row's latitude (the radii of curvature in the prime vertical and the
meridian), so slopes in degree-gridded DEMs are right at every latitude instead of off by the factor gdaldem's
single `-s` scale leaves. Cells whose window reaches past the raster or into nodata are nodata, or (`edges=compute`,
as `gdaldem -compute_edges`) the raster is extended linearly past its border and a nodata neighbour takes the centre
cell's value.
"""

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numexpr
import numpy as np
import rasterio
from pydantic import JsonValue
from pyproj import CRS
from rasterio.enums import MaskFlags
from rasterio.windows import Window

from schemas.tools.raster import OutputRef
from schemas.tools.raster_ops import RasterTerrainArgs, RasterTerrainResult
from schemas.tools.tiling import TileWindow
from workers.gdal.errors import check_bands, open_raster, reading, require_georeferenced
from workers.gdal.windowed import count_valid, output_profile, run_whole
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace

SLOPE_NODATA = -9999.0
"""gdaldem's nodata for slope and aspect."""
DEGREES = 180.0 / math.pi
_NEIGHBOURS = {"a": (0, 0), "b": (0, 1), "c": (0, 2), "d": (1, 0), "f": (1, 2), "g": (2, 0), "h": (2, 1), "i": (2, 2)}
_DX = "((c + 2*f + i) - (a + 2*d + g)) * kx"
_DY = "((a + 2*b + c) - (g + 2*h + i)) * ky"


def ground_spacing(transform: Any, crs: CRS | None, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pixel width and height on the ground (`ew`, `ns`), shape (len(rows), 1).

    Geographic: along the parallel N(φ)·cos φ·Δλ and along the meridian M(φ)·Δφ on the CRS's ellipsoid, φ the
    row centre's latitude. Projected (or no CRS): the transform's pixel size, constant.
    """
    if crs is None or not crs.is_geographic:
        ones = np.ones((rows.size, 1))
        return ones * abs(transform.a), ones * abs(transform.e)
    ellipsoid = crs.ellipsoid
    a, e2 = ellipsoid.semi_major_metre, 1.0 - (ellipsoid.semi_minor_metre / ellipsoid.semi_major_metre) ** 2
    phi = np.radians(transform.f + (rows + 0.5) * transform.e)[:, np.newaxis]
    w = 1.0 - e2 * np.sin(phi) ** 2
    prime_vertical, meridian = a / np.sqrt(w), a * (1.0 - e2) / w**1.5
    ew = prime_vertical * np.cos(phi) * math.radians(abs(transform.a))
    return ew, meridian * math.radians(abs(transform.e))


@dataclass
class Terrain:
    """One `raster_terrain`: the open DEM, the product and its parameters."""

    path: Path
    params: dict[str, Any]
    """band, product, slope_units, azimuth, altitude, z_factor, edges, compression (the plan's JSON)."""
    src: rasterio.DatasetReader | None = None
    crs: CRS | None = None
    profile: dict[str, Any] = field(default_factory=dict)
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def open(self) -> "Terrain":
        """Open the DEM and check it can be worked on.

        Raises:
            JobFailed: an unreadable DEM, no georeferencing, a rotated grid (`raster.rotated`), a missing band.
        """
        with contextlib.ExitStack() as opening:  # a failed open closes the DEM now (see `calc.Calc.open`)
            src = self.src = opening.enter_context(open_raster(self.path))
            require_georeferenced(src)
            check_bands([self.params["band"]], src.count, "band")
            t = src.transform
            if t.b != 0 or t.d != 0 or t.a <= 0 or t.e >= 0:
                raise JobFailed(
                    "raster.rotated",
                    "uri: the DEM's grid is rotated or not north-up; warp it first with raster_reproject",
                    field="uri",
                )
            self.crs = CRS.from_user_input(src.crs.to_wkt()) if src.crs is not None else None
            dtype, nodata = ("uint8", 0.0) if self.params["product"] == "hillshade" else ("float32", SLOPE_NODATA)
            self.profile = output_profile(src, dtype, nodata, self.params["compression"])
            self._held = opening.pop_all()
        return self

    @property
    def geographic(self) -> bool:
        return self.crs is not None and self.crs.is_geographic

    def compute(self, window: TileWindow) -> np.ndarray:
        """The product over `window`, from the window grown by one pixel on every side (NaN past the raster)."""
        grown = self._read_grown(window)
        views = {k: grown[r : r + window.height, c : c + window.width] for k, (r, c) in _NEIGHBOURS.items()}
        centre = grown[1 : 1 + window.height, 1 : 1 + window.width]
        if self.params["edges"] == "compute":
            views = {k: numexpr.evaluate("where(v != v, e, v)", {"v": v, "e": centre}) for k, v in views.items()}
        ew, ns = ground_spacing(self.src.transform, self.crs, np.arange(window.row_off, window.row_off + window.height))  # type: ignore[union-attr]
        z = float(self.params["z_factor"])
        scale = {"kx": z / (8.0 * ew), "ky": z / (8.0 * ns)}
        dx = numexpr.evaluate(_DX, views | scale)
        dy = numexpr.evaluate(_DY, views | scale)
        value = self._product(dx, dy, centre)
        return value[np.newaxis]

    def _product(self, dx: np.ndarray, dy: np.ndarray, centre: np.ndarray) -> np.ndarray:
        product, names = self.params["product"], {"dx": dx, "dy": dy, "e": centre}
        if product == "slope":
            rise = "sqrt(dx*dx + dy*dy)"
            text = f"{rise} * 100" if self.params["slope_units"] == "percent" else f"arctan({rise}) * {DEGREES!r}"
            out = numexpr.evaluate(f"where((dx != dx) | (dy != dy) | (e != e), {SLOPE_NODATA}, {text})", names)
            return out.astype(np.float32)
        if product == "aspect":  # the compass direction the slope faces (downhill), clockwise from north
            compass = f"arctan2(-dx, -dy) * {DEGREES!r}"
            text = f"where((dx == 0) & (dy == 0), {SLOPE_NODATA}, where({compass} < 0, {compass} + 360, {compass}))"
            out = numexpr.evaluate(f"where((dx != dx) | (dy != dy) | (e != e), {SLOPE_NODATA}, {text})", names)
            return out.astype(np.float32)
        return self._hillshade(names)

    def _hillshade(self, names: dict[str, np.ndarray]) -> np.ndarray:
        """GDAL's hillshade: the cosine of the angle between the surface normal and the light, mapped to 1–255."""
        az, alt = math.radians(float(self.params["azimuth"])), math.radians(float(self.params["altitude"]))
        light = {"sin_alt": math.sin(alt), "sx": math.sin(az) * math.cos(alt), "sy": math.cos(az) * math.cos(alt)}
        cang = "(sin_alt - dx * sx - dy * sy) / sqrt(1 + dx*dx + dy*dy)"
        shade = numexpr.evaluate(f"where({cang} <= 0, 1.0, 1.0 + 254.0 * {cang})", names | light)
        invalid = numexpr.evaluate("(dx != dx) | (dy != dy) | (e != e)", names)
        out = np.rint(np.where(invalid, 0.0, shade)).astype(np.uint8)
        return out

    def _read_grown(self, window: TileWindow) -> np.ndarray:
        """The DEM over `window` and one pixel around it, as float64, NaN where nodata or past the raster."""
        src, band = self.src, int(self.params["band"])
        assert src is not None
        top, left = max(window.row_off - 1, 0), max(window.col_off - 1, 0)
        bottom = min(window.row_off + window.height + 1, src.height)
        right = min(window.col_off + window.width + 1, src.width)
        target = Window(left, top, right - left, bottom - top)
        with reading(self.path):
            raw = src.read(band, window=target)
            flags = src.mask_flag_enums[band - 1]
            values = raw.astype(np.float64)
            if MaskFlags.all_valid not in flags:
                if MaskFlags.nodata in flags and src.nodata is not None and not np.isnan(src.nodata):
                    values[raw == src.nodata] = np.nan
                elif MaskFlags.nodata not in flags:
                    values[src.read_masks(band, window=target) == 0] = np.nan
        grown = np.full((window.height + 2, window.width + 2), np.nan)
        r0, c0 = top - (window.row_off - 1), left - (window.col_off - 1)
        grown[r0 : r0 + values.shape[0], c0 : c0 + values.shape[1]] = values
        if self.params["edges"] == "compute" and src.width >= 2 and src.height >= 2:
            _beyond_the_border(grown, r0, c0, values.shape)
        return grown

    def valid(self, block: np.ndarray) -> int:
        return count_valid(block, float(self.profile["nodata"]))

    def to_plan(self) -> dict[str, JsonValue]:
        return {"source": objects.shown(self.path), **self.params}

    def close(self) -> None:
        self.src = None
        self._held.close()


def _beyond_the_border(grown: np.ndarray, r0: int, c0: int, shape: tuple[int, int]) -> None:
    """Fill the halo cells past the raster's border by extending the edge linearly (2·edge − next), columns then
    rows, in place: `gdaldem -compute_edges`'s rule, but for its corner cells (gdaldem repeats the edge column on
    its first and last rows instead). Only the raster's border is missing from `grown` (a tile's own border is
    read from its neighbours), so tiles fill the same cells as the whole job."""
    rows, cols = shape
    if c0 == 1:
        grown[:, 0] = 2 * grown[:, 1] - grown[:, 2]
    if c0 + cols == grown.shape[1] - 1:
        grown[:, -1] = 2 * grown[:, -2] - grown[:, -3]
    if r0 == 1:
        grown[0] = 2 * grown[1] - grown[2]
    if r0 + rows == grown.shape[0] - 1:
        grown[-1] = 2 * grown[-2] - grown[-3]


def _params(args: RasterTerrainArgs) -> dict[str, Any]:
    keep = ("band", "product", "slope_units", "azimuth", "altitude", "z_factor", "edges", "compression")
    return {k: getattr(args, k) for k in keep}


def terrain_of(args: RasterTerrainArgs, ctx: JobContext) -> Terrain:
    return Terrain(resolve_in_workspace(args.uri, ctx.roots), _params(args)).open()


def terrain_from_plan(plan: dict[str, JsonValue], ctx: JobContext) -> Terrain:
    params = {k: v for k, v in plan.items() if k not in ("source", "staging", "layout", "compress")}
    return Terrain(resolve_in_workspace(str(plan["source"]), ctx.roots), params).open()


def terrain_result(
    args: RasterTerrainArgs, output: OutputRef, valid: int, plan: dict[str, JsonValue]
) -> RasterTerrainResult:
    with rasterio.open(objects.readable(output.path)) as out:
        width, height, dtype, nodata, crs = out.width, out.height, out.dtypes[0], out.nodata, out.crs
    units = {"hillshade": "shade", "aspect": "degrees", "slope": args.slope_units}[args.product]
    return RasterTerrainResult(
        output=output,
        product=args.product,
        units=units,
        geographic=bool(crs is not None and crs.is_geographic),
        dtype=dtype,
        nodata=float(nodata),
        width=width,
        height=height,
        valid_pixels=valid,
    )


def raster_terrain(args: RasterTerrainArgs, ctx: JobContext) -> RasterTerrainResult:
    """Derive `args.product` from the DEM at `args.uri` and write it as a GeoTIFF at `args.output`.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable,
            ungeoreferenced or rotated DEM, a missing band, a write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    return terrain_result(args, *run_whole(terrain_of, args, ctx, "uri"))
