"""Large overlays and joins as spatial partitions run across the workers as tiles (docs/tiles.md).

The planner lays a grid over the first layer's extent with about `GEOGATE_VECTOR_PARTITION_FEATURES` features of
both layers per cell. A feature belongs to the cell that holds its bounding box's centre (the outer cells reach to
infinity, so every feature has one, whatever extent a file declares). A partition reads its own features by bounding
box, then every feature of the other layer that can meet them, computes the result features its own features make
(`workers.vector.parts`), and leaves them as a part with their source ids (GeoParquet's table in an Arrow file); the
fan-in puts the parts together in the ids' order and writes the layer, as one process writes it. In an object root
the plan names the layers and the parts folder by their `s3://` URIs, and each part is an object put whole under the
call's prefix (`workers.tiling.part_objects`).

A join whose second layer is small beside its first (`BROADCAST_RATIO`, at most `BROADCAST_FEATURES`) is cut instead
into runs of the first layer's features in file order, each joined against the whole second layer, which a worker
process reads once for all the runs of a call it takes (`Partition.broadcast`). Its cells would read their features
through the first layer's spatial index: in a GeoPackage, a rowid seek a feature, which for 1,000,000 points cost
3.0 s of the cells' 11.1 s, against 0.24 s for the layer read in file order.
"""

import io
import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyogrio
import shapely
from pydantic import JsonValue
from pyproj import CRS, Transformer

from schemas.tools.overlay import TwoLayerArgs
from schemas.tools.tiling import TileArgs, TileWindow
from workers.gdal import geoparquet
from workers.gdal.errors import reading
from workers.jobkit import objects
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace
from workers.jobkit.limits import limits_of
from workers.tiling import part_objects
from workers.tiling.declare import Plan
from workers.tiling.grid import parts_folder, root_of, settings_of
from workers.vector.assemble import part_table
from workers.vector.layers import Box, Rows, layer_of, quoted, read_frame, target, validated

_DIMENSIONS = {"point": 0, "linestring": 1, "polygon": 2}
BROADCAST_RATIO = 8
"""A join runs in runs of its first layer when its second has at most an eighth as many features: each worker process
reads the second whole once, little beside the runs it takes (100,000 polygons: 0.3 s against 3 s of runs of
1,000,000 points on 2 workers)."""
BROADCAST_FEATURES = 10
"""... and at most this many times `GEOGATE_VECTOR_PARTITION_FEATURES` features, which each worker process holds."""


@dataclass(frozen=True)
class Grid:
    """The cells of a partitioned call: `columns` × `rows` over `bounds`, in the first layer's CRS."""

    bounds: Box
    columns: int
    rows: int

    def owners(self, frame: gpd.GeoDataFrame) -> np.ndarray:
        """The cell of each feature: the one that holds its bounding box's centre (-1 without geometry)."""
        box = shapely.bounds(frame.geometry.values.to_numpy())
        x, y = (box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2
        col = self._index(x, self.bounds[0], self.bounds[2], self.columns)
        row = self._index(y, self.bounds[1], self.bounds[3], self.rows)
        return np.where(np.isnan(x), -1, row * self.columns + col)

    @staticmethod
    def _index(v: np.ndarray, low: float, high: float, cells: int) -> np.ndarray:
        width = (high - low) / cells
        if not width > 0:
            return np.zeros(len(v), dtype=np.int64)
        return np.clip(np.floor((np.nan_to_num(v, nan=low) - low) / width), 0, cells - 1).astype(np.int64)

    def box(self, index: int) -> Box:
        """Cell `index`, its sides on the grid's border open to infinity."""
        col, row = index % self.columns, index // self.columns
        width, height = (
            _span(self.bounds[0], self.bounds[2], self.columns),
            _span(self.bounds[1], self.bounds[3], self.rows),
        )
        x0 = -math.inf if col == 0 else self.bounds[0] + col * width
        x1 = math.inf if col == self.columns - 1 else self.bounds[0] + (col + 1) * width
        y0 = -math.inf if row == 0 else self.bounds[1] + row * height
        y1 = math.inf if row == self.rows - 1 else self.bounds[1] + (row + 1) * height
        return _grown((x0, y0, x1, y1), 0.0)


def _span(low: float, high: float, cells: int) -> float:
    return (high - low) / cells


def _grown(box: Box, margin: float) -> Box:
    """`box` grown by `margin` and by a little more, so that no feature on its edge is missed in rounding."""
    size = max((abs(v) for v in box if math.isfinite(v)), default=1.0)
    pad = margin + 1e-9 * max(size, 1.0)
    return (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad)


def plan(args: TwoLayerArgs, ctx: JobContext, *, needs_kind: bool, broadcast: bool = False) -> Plan | None:
    """The grid of a call whose two layers hold at least `GEOGATE_VECTOR_PARTITION_FEATURES` features together, or
    (`broadcast`, a join with a small second layer) its runs of the first layer's features; None to run it whole
    (smaller, over the feature bound, or a first layer with no single declared geometry kind when `needs_kind`, where
    the whole run says why)."""
    target(args, ctx)  # an output in the way: the whole run refuses it
    first, layer = _source(args.uri, args.layer, ctx, "uri", "layer")
    other, other_layer = _source(args.other, args.other_layer, ctx, "other", "other_layer")
    info, other_info = _info(first, layer, "uri"), _info(other, other_layer, "other")
    counts = [max(int(info["features"]), 0), max(int(other_info["features"]), 0)]
    per, bound = settings_of(ctx).vector_partition_features, limits_of(ctx.settings).features
    dimension = _DIMENSIONS.get((str(info.get("geometry_type") or "").lower().removeprefix("multi").split() or [""])[0])
    if sum(counts) < per or max(counts) > bound or (needs_kind and dimension is None):
        return None
    if not set(getattr(args, "aggregates", None) or {}) <= set(other_info["fields"]):
        return None  # the whole run names the missing field
    bounds = tuple(float(v) for v in info["total_bounds"] or (math.nan,) * 4)
    if not all(math.isfinite(v) for v in bounds):
        return None
    runs = _runs(first, layer, info, counts, per, ctx) if broadcast else None
    cells = min(math.ceil(sum(counts) / per), limits_of(ctx.settings).tiles)
    columns, rows = (len(runs), 1) if runs else _shape(bounds, cells)
    if columns * rows < 2:
        return None
    folder = parts_folder(root_of(target(args, ctx).path, ctx.roots), ctx.call_id)
    windows = [TileWindow(col_off=c, row_off=r, width=1, height=1) for r in range(rows) for c in range(columns)]
    shared: dict[str, JsonValue] = {
        "args": args.model_dump(mode="json"),
        "source": objects.shown(first),
        "layer": layer,
        "other": objects.shown(other),
        "other_layer": other_layer,
        "grid": [*bounds, columns, rows],
        "folder": part_objects.folder_uri(folder) or str(folder),
        "counts": counts,
        "geometry_type": str(info.get("geometry_type") or "Unknown"),
        "dimension": dimension,
        "crs": [info.get("crs"), other_info.get("crs")],
        "parquet": target(args, ctx).driver == geoparquet.DRIVER,
        "runs": runs,  # type: ignore[dict-item]
    }
    return Plan(windows, columns, rows, 1, columns, rows, folder, shared)


def _runs(
    path: Path, layer: str, info: dict[str, Any], counts: list[int], per: int, ctx: JobContext
) -> list[list[int | None]] | None:
    """The runs of the first layer's features a broadcast join is cut into, as `Rows`: about
    `GEOGATE_VECTOR_PARTITION_FEATURES` features each; None for cells (a second layer too large to hold, or a first
    layer that cannot be read from the middle without reading all before it)."""
    first, second = counts
    if second * BROADCAST_RATIO > first or second > BROADCAST_FEATURES * per:
        return None
    if not (geoparquet.is_parquet(path) or info.get("capabilities", {}).get("fast_set_next_by_index")):
        return None
    parts = min(math.ceil(first / per), limits_of(ctx.settings).tiles)
    starts = [first * n // parts for n in range(parts + 1)]
    ids = _ids(path, layer, info, first) if info.get("driver") == "GPKG" else None
    if ids is not None and len(ids) != first:
        return None  # the layer changed since it was counted: the cells read it by extent
    return [
        [a, b - a, *((int(ids[a]), int(ids[b - 1])) if ids is not None else (None, None))]
        for a, b in itertools.pairwise(starts)
        if b > a
    ]


def _ids(path: Path, layer: str, info: dict[str, Any], count: int) -> np.ndarray | None:
    """A GeoPackage layer's feature ids in file order, by which its runs are read: from the first and the last when
    they are consecutive (5 ms), else read (1,000,000 in 0.1 s); None without a feature id column."""
    fid = info.get("fid_column")
    if not fid:
        return None
    column, table = quoted(fid), quoted(layer)
    ends = f"{column} IN ((SELECT MIN({column}) FROM {table}), (SELECT MAX({column}) FROM {table}))"
    with reading(path, "uri"):
        read = pyogrio.read_arrow(pinned(path, "uri"), layer=layer, read_geometry=False, columns=[], return_fids=True,
                                  where=ends)  # fmt: skip
        low_high = read[1].column(0).to_numpy()
        if len(low_high) == 2 and low_high[1] - low_high[0] + 1 == count:
            return np.arange(low_high[0], low_high[1] + 1)
        read = pyogrio.read_arrow(pinned(path, "uri"), layer=layer, read_geometry=False, columns=[], return_fids=True)
    return read[1].column(0).to_numpy()


def _info(path: Path, layer: str, field: str) -> dict[str, Any]:
    """A layer's feature count, extent, fields, CRS and geometry type, read before any feature."""
    if geoparquet.is_parquet(path):
        found = geoparquet.describe(path, field)
        return {"features": found.features, "total_bounds": found.bounds, "fields": found.fields, "crs": found.crs,
                "geometry_type": found.geometry_type}  # fmt: skip
    with reading(path, field):
        return pyogrio.read_info(pinned(path, field), layer=layer, force_feature_count=True, force_total_bounds=True)


def _source(uri: str, layer: str | None, ctx: JobContext, field: str, layer_field: str) -> tuple[Path, str]:
    path = resolve_in_workspace(uri, ctx.roots, field=field)
    return path, layer_of(path, layer, field, layer_field)


def _shape(bounds: tuple[float, ...], cells: int) -> tuple[int, int]:
    """Columns and rows of about `cells` cells, as square as the extent allows."""
    width, height = bounds[2] - bounds[0], bounds[3] - bounds[1]
    if cells < 2 or (width <= 0 and height <= 0):
        return 1, 1
    if height <= 0:
        return cells, 1
    if width <= 0:
        return 1, cells
    columns = max(1, min(cells, round(math.sqrt(cells * width / height))))
    return columns, max(1, math.ceil(cells / columns))


@dataclass(frozen=True)
class Held:
    """The second layer of a broadcast join as a process holds it."""

    frame: gpd.GeoDataFrame
    repaired: int
    tree: shapely.STRtree


_HELD: dict[tuple[Any, ...], Held] = {}
"""The second layer of the broadcast join this process last ran a partition of (one at most), by its file's identity."""


@dataclass(frozen=True)
class Partition:
    """One cell of a partitioned call, as its tile sees it."""

    index: int
    grid: Grid
    plan: dict[str, Any]
    ctx: JobContext

    @classmethod
    def of(cls, tile: TileArgs, ctx: JobContext) -> "Partition":
        x0, y0, x1, y1, columns, rows = tile.plan["grid"]  # type: ignore[misc]
        grid = Grid((float(x0), float(y0), float(x1), float(y1)), int(columns), int(rows))
        return cls(tile.index, grid, dict(tile.plan), ctx)

    def read(
        self, which: int, box: Box | None, make_valid: bool, limit: int | None = None, rows: Rows | None = None
    ) -> tuple[gpd.GeoDataFrame, np.ndarray]:
        """Layer `which` (0: `uri`, 1: `other`) in the first layer's CRS: the features whose bounding box meets `box`
        (in that CRS; all of them when None), or those of the run `rows`, with their invalid geometries repaired, and
        which were."""
        field = ("uri", "other")[which]
        path = resolve_in_workspace(str(self.plan[("source", "other")[which]]), self.ctx.roots, field=field)
        own, into = self.plan["crs"][which], self.plan["crs"][0]
        moved = which == 1 and own and into and CRS(own) != CRS(into)
        read_box = _moved_box(box, CRS(into), CRS(own)) if moved and box is not None else box
        frame = read_frame(path, str(self.plan[("layer", "other_layer")[which]]), field, read_box, limit, rows)
        frame = frame.to_crs(into) if moved else frame.set_crs(into, allow_override=True)
        return validated(frame, field, make_valid)

    def near(
        self, which: int, frame: gpd.GeoDataFrame, margin: tuple[float, float], make_valid: bool
    ) -> gpd.GeoDataFrame:
        """The features of layer `which` whose bounding box comes within `margin` (x, y) of `frame`'s (none when
        `frame` has none; the layer's fields all the same)."""
        if frame.empty:
            return self.read(which, None, make_valid, limit=0)[0]
        return self.read(which, around(frame, margin), make_valid)[0]

    @property
    def runs(self) -> bool:
        """Whether the call is cut into runs of the first layer (a broadcast join) rather than cells."""
        return bool(self.plan.get("runs"))

    def run(self, make_valid: bool) -> tuple[gpd.GeoDataFrame, int]:
        """This partition's run of the first layer's features, and how many of them were repaired."""
        skip, count, low, high = self.plan["runs"][self.index]  # type: ignore[index, misc]
        frame, bad = self.read(0, None, make_valid, rows=(int(skip), int(count), low, high))
        return frame, int(bad.sum())

    def broadcast(self, make_valid: bool) -> "Held":
        """The whole second layer in the first one's CRS, with its tree and how many of its features were repaired:
        read once by this process for every run of the call it takes (the last one read is held, by file
        identity)."""
        path = resolve_in_workspace(str(self.plan["other"]), self.ctx.roots, field="other")
        stat = os.stat(pinned(path, "other"))
        key = (str(path), str(self.plan["other_layer"]), str(self.plan["crs"]), make_valid, stat.st_dev, stat.st_ino,
               stat.st_size, stat.st_mtime_ns)  # fmt: skip
        held = _HELD.get(key)
        if held is None:
            _HELD.clear()
            frame, bad = self.read(1, None, make_valid)
            # its tree's geometries are prepared by the first run that tests points against them (`join.matches`)
            held = _HELD[key] = Held(frame, int(bad.sum()), shapely.STRtree(frame.geometry.values.to_numpy()))
        return held

    def own(self, which: int, make_valid: bool) -> tuple[gpd.GeoDataFrame, int]:
        """The features of layer `which` that belong to this cell, and how many of them were repaired."""
        frame, bad = self.read(which, self.grid.box(self.index), make_valid)
        mine = self.grid.owners(frame) == self.index
        return frame[mine], int(bad[mine].sum())

    def save(self, frame: gpd.GeoDataFrame) -> None:
        """Leave this cell's result features as its part (a renamed temporary file, or an object put whole: whole
        or absent)."""
        folder = str(self.plan["folder"])
        if part_objects.is_object(folder):
            body = io.BytesIO()
            self._write(frame, body)
            if self.ctx.fence is not None:
                self.ctx.fence.check()
            part_objects.put_bytes(f"{folder}/{part_name(self.index)}", body.getvalue())
            return
        path = part_path(Path(folder), self.index)
        aside = path.with_name(f".{path.name}.{os.getpid()}")
        self._write(frame, aside)
        if self.ctx.fence is not None:
            self.ctx.fence.check()
        aside.replace(path)

    def _write(self, frame: gpd.GeoDataFrame, where: Path | io.BytesIO) -> None:
        covering = bool(self.plan.get("parquet")) and "bbox" not in frame.columns  # the output's bbox column
        # an Arrow IPC file, which the fan-in maps rather than decodes: 981,933 joined points in 10 parts read in
        # 0.005 s against 0.23-0.42 s as plain Parquet
        table = part_table(frame, covering)
        with pa.ipc.new_file(str(where) if isinstance(where, Path) else where, table.schema) as sink:
            sink.write_table(table)


def _moved_box(box: Box, into: CRS, own: CRS) -> Box | None:
    """`box` (in `into`) as a box in `own` that holds all of it; None (no filter) for an unbounded one."""
    if not all(math.isfinite(v) for v in box):
        return None
    x0, y0, x1, y1 = Transformer.from_crs(into, own, always_xy=True).transform_bounds(*box, densify_pts=21)
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        return None
    pad = 0.01 * max(x1 - x0, y1 - y0)
    return (x0 - pad, y0 - pad, x1 + pad, y1 + pad)


def around(frame: gpd.GeoDataFrame, margin: tuple[float, float] = (0.0, 0.0)) -> Box | None:
    """The bounding box of `frame`'s features grown by `margin` (along x, y); None when it has none (nothing to read
    near), or when it grows without bound."""
    if frame.empty:
        return None
    x0, y0, x1, y1 = _grown(tuple(float(v) for v in frame.total_bounds), 0.0)  # type: ignore[arg-type]
    box = (x0 - margin[0], y0 - margin[1], x1 + margin[0], y1 + margin[1])
    return box if all(math.isfinite(v) for v in box) else None


def merged(*frames: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Features of the same layer read more than once, once each, in id order."""
    frame = pd.concat([f for f in frames if len(f)] or frames[:1])
    return frame[~frame.index.duplicated()].sort_index()


def part_name(index: int) -> str:
    return f"part{index}.arrow"


def part_path(folder: Path, index: int) -> Path:
    return folder / part_name(index)


def part_paths(folder: str, indexes: list[int]) -> list[Path]:
    """The parts of cells `indexes` as local files: in the parts folder `folder`, or, for an `s3://` prefix, got
    into this job's mirror of it.

    Raises:
        JobFailed: `tiles.missing` (a part is not there), `storage.failed`.
    """
    if not part_objects.is_object(folder):
        return [part_path(Path(folder), index) for index in indexes]
    local = Path(objects.local_name(folder, "output"))
    local.mkdir(parents=True, exist_ok=True)
    for index in indexes:
        path = part_path(local, index)
        body = part_objects.get_bytes(f"{folder}/{path.name}")
        if body is None:
            raise JobFailed("tiles.missing", f"the part {path.name!r} of cell {index} is missing")
        path.write_bytes(body)
    return [part_path(local, index) for index in indexes]
