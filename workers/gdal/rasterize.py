"""Job `vector_rasterize`: a layer's geometries burnt into a GeoTIFF window by window with
rasterio.features.rasterize (GDAL's rasterizer), holding one row of windows of the output at a time.

Each window burns, in the layer's order (a later feature overwrites an earlier one), the features whose bounding
box comes within a pixel of the window, on the window's own transform: a feature farther away touches none of its
pixels, so the choice only saves GDAL the work. The call runs whole, on one worker (why it is not tiled:
docs/tiles.md, "Mosaic pays, rasterize does not").
"""

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import rasterio
import rasterio.features
import rasterio.windows
import shapely
from affine import Affine
from pydantic import JsonValue
from pyproj import CRS, Transformer
from rasterio.transform import from_origin
from rasterio.windows import Window

from schemas.tools.analysis import VectorRasterizeArgs, VectorRasterizeResult
from schemas.tools.base import Reprojection
from schemas.tools.raster import OutputRef
from schemas.tools.tiling import TileWindow
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.errors import open_raster, require_georeferenced
from workers.gdal.info import crs_text
from workers.gdal.vector_io import Layer, read_layer
from workers.gdal.windowed import run_whole
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import raster_input, resolve_in_workspace


def _grid(args: VectorRasterizeArgs, layer: Layer, ctx: JobContext) -> tuple[int, int, rasterio.Affine, str | None]:
    """Width, height, transform and CRS of the output grid: `like`'s, or the layer's extent at `resolution`."""
    if args.like is not None:
        with open_raster(raster_input(args.like, ctx.roots, ctx.settings, field="like"), "like") as like:
            require_georeferenced(like, "like")
            return like.width, like.height, like.transform, crs_text(like.crs)
    assert args.resolution is not None
    present = layer.geometry[~shapely.is_missing(layer.geometry) & ~shapely.is_empty(layer.geometry)]
    if not len(present):
        raise JobFailed("layer.empty", "uri: the layer has no geometries to rasterize", field="uri")
    left, bottom, right, top = shapely.total_bounds(present).tolist()
    xres, yres = args.resolution
    width, height = max(1, math.ceil((right - left) / xres)), max(1, math.ceil((top - bottom) / yres))
    return width, height, from_origin(left, top, xres, yres), layer.crs


def _in_crs(geometry: np.ndarray, src: str | None, dst: str | None) -> np.ndarray:
    if src is None or dst is None or CRS.from_user_input(src) == CRS.from_user_input(dst):
        return geometry
    move = Transformer.from_crs(CRS.from_user_input(src), CRS.from_user_input(dst), always_xy=True)
    return shapely.transform(geometry, lambda xy: np.column_stack(move.transform(xy[:, 0], xy[:, 1])))


def _burn_values(args: VectorRasterizeArgs, layer: Layer) -> np.ndarray:
    if args.attribute is None:
        return np.full(len(layer.geometry), args.burn_value, dtype="float64")
    if args.attribute not in layer.fields:
        raise JobFailed(
            "field.not_found", f"attribute: {args.attribute!r} is not one of {layer.fields}", field="attribute"
        )
    column = layer.columns[layer.fields.index(args.attribute)]
    if column.dtype.kind not in "iuf":
        raise JobFailed("option.unsupported", f"attribute: {args.attribute!r} is not numeric", field="attribute")
    return column.astype("float64")


@dataclass
class Burn:
    """One `vector_rasterize`: its features in the output's CRS, the value each burns, their bounding boxes, and the
    output profile."""

    geometry: np.ndarray
    values: np.ndarray
    profile: dict[str, Any]
    all_touched: bool
    reprojected: list[dict[str, str]] = field(default_factory=list)
    """The layer's move from its CRS into the output's (`Reprojection` fields), when it had to be moved."""
    bounds: np.ndarray = field(init=False)
    """(features, 4): min x, min y, max x, max y."""

    def __post_init__(self) -> None:
        self.bounds = shapely.bounds(self.geometry).reshape(-1, 4)

    def compute(self, window: TileWindow) -> np.ndarray:
        """The burnt pixels of `window`, shape (1, height, width)."""
        target = Window(window.col_off, window.row_off, window.width, window.height)
        transform = rasterio.windows.transform(target, self.profile["transform"])
        near = np.flatnonzero(self._near(transform, window.width, window.height))
        shape, fill, dtype = (window.height, window.width), self.profile["nodata"], self.profile["dtype"]
        if not len(near):
            return np.full((1, *shape), fill, dtype=dtype)
        burnt = rasterio.features.rasterize(
            zip(self.geometry[near], self.values[near], strict=True), out_shape=shape, transform=transform,
            fill=fill, all_touched=self.all_touched, dtype=dtype,
        )  # fmt: skip
        return burnt[np.newaxis]

    def _near(self, transform: Affine, width: int, height: int) -> np.ndarray:
        """Features whose bounding box comes within a pixel of the window (`transform`, `width` × `height`)."""
        xs, ys = transform * (np.array([0, width, width, 0]), np.array([0, 0, height, height]))
        margin = abs(transform.a) + abs(transform.b) + abs(transform.d) + abs(transform.e)
        left, right, bottom, top = xs.min() - margin, xs.max() + margin, ys.min() - margin, ys.max() + margin
        box = self.bounds
        return (box[:, 0] <= right) & (box[:, 2] >= left) & (box[:, 1] <= top) & (box[:, 3] >= bottom)

    def valid(self, block: np.ndarray) -> int:
        return int(np.count_nonzero(block != self.profile["nodata"]))

    def to_plan(self) -> dict[str, JsonValue]:
        moved: list[JsonValue] = [dict(move) for move in self.reprojected]
        return {"features": len(self.values), "crs": self.profile.get("crs"), "reprojected": moved}

    def close(self) -> None:
        self.geometry = self.values = self.bounds = np.empty(0)


def burn_of(args: VectorRasterizeArgs, ctx: JobContext) -> Burn:
    """The call's `Burn`: the layer read, its values checked, its geometries moved to the output grid's CRS, the
    missing, empty and valueless ones left out.

    Raises:
        JobFailed: an unreadable layer or `like` raster, a missing or non-numeric attribute, an empty layer.
    """
    layer = read_layer(resolve_in_workspace(args.uri, ctx.roots), args.layer, ctx)
    values = _burn_values(args, layer)
    width, height, transform, crs = _grid(args, layer, ctx)
    geometry = _in_crs(layer.geometry, layer.crs, crs)
    moved = [] if geometry is layer.geometry else [{"input": "uri", "from_crs": layer.crs, "to_crs": crs}]
    keep = ~shapely.is_missing(geometry) & ~shapely.is_empty(geometry) & ~np.isnan(values)
    profile = {"driver": "GTiff", "width": width, "height": height, "count": 1, "dtype": args.dtype, "crs": crs}
    profile |= {"transform": transform, "nodata": args.nodata, "tiled": True, "bigtiff": "IF_SAFER"}
    profile |= {"blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS, "interleave": "band", "compress": "deflate"}
    return Burn(geometry[keep], values[keep], profile, args.all_touched, moved)


def burnt(
    args: VectorRasterizeArgs, output: OutputRef, valid: int, plan: dict[str, JsonValue]
) -> VectorRasterizeResult:
    with rasterio.open(objects.readable(output.path)) as out:
        width, height, transform = out.width, out.height, out.transform
    moved = plan.get("reprojected") or []
    assert isinstance(moved, list), "the op's plan lists the layer's reprojection"
    return VectorRasterizeResult(
        output=output, width=width, height=height, crs=None if plan["crs"] is None else str(plan["crs"]),
        transform=list(transform)[:6], burned_pixels=valid, feature_count=int(str(plan["features"])),
        reprojected=[Reprojection.model_validate(move) for move in moved],
    )  # fmt: skip


def vector_rasterize(args: VectorRasterizeArgs, ctx: JobContext) -> VectorRasterizeResult:
    """Burn `args.uri`'s geometries into a GeoTIFF at `args.output` (a value or an attribute per feature).

    Raises:
        JobFailed: a path outside the workspace, an unreadable layer or `like` raster, a missing or non-numeric
            attribute, an existing output without `overwrite`, an output past the bounds, a GDAL write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    return burnt(args, *run_whole(burn_of, args, ctx, "like" if args.like is not None else "resolution"))
