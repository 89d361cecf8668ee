"""Job `vector_rasterize`: a layer's geometries burnt into a GeoTIFF window by window (whole, or by tiles:
`workers.gdal.windowed`) with rasterio.features.rasterize (GDAL's rasterizer).

Each window burns, in the layer's order (a later feature overwrites an earlier one), the features whose bounding
box comes within a pixel of the window, on the window's own transform: a feature farther away touches none of its
pixels, so the choice only saves GDAL the work. Whole and tiled calls burn the same windows with the same features
and write the same pixels. A tiled call's planner reads the layer once and leaves the features in the parts folder
(WKB, values and bounding boxes, in the output's CRS, as plain NumPy arrays: nothing pickled), so that each tile
decodes only the features near its window instead of reading the layer again.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import rasterio.features
import rasterio.windows
import shapely
from affine import Affine
from pydantic import JsonValue
from rasterio.windows import Window

from schemas.tools.analysis import VectorRasterizeArgs, VectorRasterizeResult
from schemas.tools.raster import OutputRef
from schemas.tools.tiling import TileWindow
from workers.context import JobContext
from workers.files import resolve_in_workspace
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.shapes import _burn_values, _grid, _in_crs
from workers.gdal.vector_io import read_layer
from workers.gdal.windowed import WindowOp, declare_tiles, run_whole
from workers.jobs import job

FEATURES = "features.npz"
"""In the parts folder: the features every tile burns from."""


@dataclass
class Burn:
    """One `vector_rasterize`: its features in the output's CRS (geometries, or their WKB decoded on demand), the
    value each burns, their bounding boxes, and the output profile."""

    values: np.ndarray
    bounds: np.ndarray
    """(features, 4): min x, min y, max x, max y."""
    profile: dict[str, Any]
    all_touched: bool
    geometry: np.ndarray | None = None
    wkb: np.ndarray | None = None
    """Without `geometry`: every feature's WKB end to end, as bytes (uint8), feature i at `offsets[i]:offsets[i+1]`."""
    offsets: np.ndarray | None = None

    def compute(self, window: TileWindow) -> np.ndarray:
        """The burnt pixels of `window`, shape (1, height, width)."""
        target = Window(window.col_off, window.row_off, window.width, window.height)
        transform = rasterio.windows.transform(target, self.profile["transform"])
        near = np.flatnonzero(self._near(transform, window.width, window.height))
        shape, fill, dtype = (window.height, window.width), self.profile["nodata"], self.profile["dtype"]
        if not len(near):
            return np.full((1, *shape), fill, dtype=dtype)
        burnt = rasterio.features.rasterize(
            zip(self._geometries(near), self.values[near], strict=True), out_shape=shape, transform=transform,
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

    def _geometries(self, chosen: np.ndarray) -> np.ndarray:
        if self.geometry is not None:
            return self.geometry[chosen]
        assert self.wkb is not None and self.offsets is not None
        wkb, offsets = self.wkb, self.offsets
        return shapely.from_wkb([wkb[offsets[i] : offsets[i + 1]].tobytes() for i in chosen])

    def valid(self, block: np.ndarray) -> int:
        return int(np.count_nonzero(block != self.profile["nodata"]))

    def to_plan(self) -> dict[str, JsonValue]:
        transform: list[JsonValue] = list(self.profile["transform"])[:6]
        plan: dict[str, JsonValue] = {"transform": transform, "dtype": self.profile["dtype"]}
        plan |= {"nodata": repr(self.profile["nodata"]), "all_touched": self.all_touched}
        return plan | {"features": len(self.values), "crs": self.profile.get("crs")}

    def close(self) -> None:
        self.geometry = self.wkb = self.offsets = None


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
    keep = ~shapely.is_missing(geometry) & ~shapely.is_empty(geometry) & ~np.isnan(values)
    profile = {"driver": "GTiff", "width": width, "height": height, "count": 1, "dtype": args.dtype, "crs": crs}
    profile |= {"transform": transform, "nodata": args.nodata, "tiled": True, "bigtiff": "IF_SAFER"}
    profile |= {"blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS, "interleave": "band", "compress": "deflate"}
    kept = geometry[keep]
    return Burn(values[keep], shapely.bounds(kept).reshape(-1, 4), profile, args.all_touched, geometry=kept)


def stage(op: WindowOp, folder: Path) -> dict[str, JsonValue]:
    """Leave the features in the parts folder for the tiles; the plan's entry naming the file."""
    assert isinstance(op, Burn) and op.geometry is not None
    wkb = shapely.to_wkb(op.geometry)
    offsets = np.concatenate([[0], np.cumsum([len(one) for one in wkb], dtype="int64")]).astype("int64")
    joined = np.frombuffer(b"".join(wkb), dtype="uint8")
    path = folder / FEATURES
    aside = folder / f".{FEATURES}.part"
    with aside.open("wb") as handle:
        np.savez(handle, wkb=joined, offsets=offsets, values=op.values, bounds=op.bounds)
    aside.replace(path)
    return {"staged": str(path)}


def burn_from_plan(plan: dict[str, JsonValue], ctx: JobContext) -> Burn:
    """The `Burn` a tile runs, from its plan and the features the planner staged."""
    with np.load(Path(str(plan["staged"])), allow_pickle=False) as staged:
        wkb, offsets, values, bounds = staged["wkb"], staged["offsets"], staged["values"], staged["bounds"]
    transform: list[float] = plan["transform"]  # type: ignore[assignment]
    profile = {"transform": Affine(*transform), "dtype": str(plan["dtype"]), "nodata": float(str(plan["nodata"]))}
    return Burn(values, bounds, profile, bool(plan["all_touched"]), wkb=wkb, offsets=offsets)


def burnt(
    args: VectorRasterizeArgs, output: OutputRef, valid: int, plan: dict[str, JsonValue]
) -> VectorRasterizeResult:
    with rasterio.open(output.path) as out:
        width, height, transform = out.width, out.height, out.transform
    return VectorRasterizeResult(
        output=output, width=width, height=height, crs=None if plan["crs"] is None else str(plan["crs"]),
        transform=list(transform)[:6], burned_pixels=valid, feature_count=int(str(plan["features"])),
    )  # fmt: skip


@job("vector_rasterize")
def vector_rasterize(args: VectorRasterizeArgs, ctx: JobContext) -> VectorRasterizeResult:
    """Burn `args.uri`'s geometries into a GeoTIFF at `args.output` (a value or an attribute per feature).

    Raises:
        JobFailed: a path outside the workspace, an unreadable layer or `like` raster, a missing or non-numeric
            attribute, an existing output without `overwrite`, an output past the bounds, a GDAL write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    return burnt(args, *run_whole(burn_of, args, ctx, "like" if args.like is not None else "resolution"))


declare_tiles("vector_rasterize", burn_of, burn_from_plan, burnt, "resolution", stage=stage)
