"""What the tiled tools that trace a band into a vector layer share: their plan, their part files of geometries,
the seams of a window, and the publishing of the stitched layer from the parts folder."""

import os
from pathlib import Path

import numpy as np
import shapely
from affine import Affine
from pydantic import JsonValue

from schemas.tools.analysis import RasterToVectorArgs
from schemas.tools.raster import OutputRef
from schemas.tools.tiling import TileResult, TileWindow
from workers.gdal.errors import check_bands, open_raster, require_georeferenced
from workers.gdal.outputs import file_ref
from workers.gdal.staging import assembly_target, publish
from workers.gdal.vector_io import Layer, output_driver, write_layer
from workers.jobkit.context import JobContext
from workers.jobkit.files import output_path, resolve_in_workspace
from workers.jobkit.limits import check_raster, widest
from workers.tiling.declare import Plan
from workers.tiling.grid import parts_folder, root_of, tile_side, windows, worth_tiling

BLOCK = 256
"""Windows are whole multiples of this many pixels (a GeoTIFF's usual block)."""
ONE_FILE = frozenset({"GPKG", "FlatGeobuf", "GeoJSON", "GeoJSONSeq"})
"""Drivers that write a layer as one file, which the fan-in publishes by the same restartable rename as a raster's;
a layer of several files (a Shapefile and its sidecars) is written by the whole run."""


def plan_trace(
    args: RasterToVectorArgs,
    ctx: JobContext,
    *,
    traced_as: str | None = None,
    min_pixels: int = 0,
    **shared: JsonValue,
) -> Plan | None:
    """The band's grid cut into windows when it is large (and at least `min_pixels`), its source in the workspace
    and its output one file; else None (the call runs whole). The checks of the whole run come first, with the same
    refusals: the output, its driver, the band, a georeferenced source and the bytes of the band read (`traced_as`)."""
    if args.uri.split(":", 1)[0].lower() in ("http", "https"):
        return None
    source = resolve_in_workspace(args.uri, ctx.roots)
    dst = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    driver = output_driver(args.driver, dst)
    with open_raster(source) as src:
        check_bands([args.band], src.count, "band")
        require_georeferenced(src)
        dtype = src.dtypes[args.band - 1]
        check_raster(ctx, src.width, src.height, 1, widest([traced_as or dtype, dtype]), "uri", read=True)
        width, height, transform = src.width, src.height, src.transform
        crs = src.crs.to_string() if src.crs else None
    side = tile_side(ctx, BLOCK)
    if driver not in ONE_FILE or width * height < min_pixels or not worth_tiling(ctx, width, height, side):
        return None
    folder = parts_folder(root_of(dst, ctx.roots), ctx.call_id)
    tiles, columns, rows = windows(width, height, side)
    shared |= {
        "source": str(source), "band": args.band, "dtype": dtype, "width": width, "height": height,
        "transform": list(transform)[:6], "crs": crs, "driver": driver, "folder": str(folder),
    }  # fmt: skip
    return Plan(tiles, columns, rows, side, width, height, folder, shared)


def transform_of(plan: dict[str, JsonValue]) -> Affine:
    coefficients = plan["transform"]
    assert isinstance(coefficients, list), "the planner keeps the transform as a list"
    return Affine(*[float(str(c)) for c in coefficients])


def whole_number(plan: dict[str, JsonValue], key: str) -> int:
    """An integer the planner kept (`width`, `height`, `band`)."""
    return int(str(plan[key]))


def counted(tiles: list[TileResult], key: str) -> int:
    """The sum of `key` over the tiles' partial results."""
    return sum(int(str(t.partial[key])) for t in tiles if isinstance(t.partial, dict))


def seams(window: TileWindow, width: int, height: int) -> tuple[list[int], list[int]]:
    """The columns and rows (pixel edges) where `window` meets another window; the grid's own edges are none."""
    right, bottom = window.col_off + window.width, window.row_off + window.height
    columns = [c for c in (window.col_off, right) if 0 < c < width]
    rows = [r for r in (window.row_off, bottom) if 0 < r < height]
    return columns, rows


def save_part(folder: Path, name: str, geometry: np.ndarray, values: np.ndarray) -> None:
    """Keep `geometry` (as WKB) with one value each in `name` in the parts folder, written aside then renamed."""
    wkb = shapely.to_wkb(geometry) if len(geometry) else np.empty(0, dtype=object)
    sizes = np.array([len(b) for b in wkb], dtype="int64")
    blob = np.frombuffer(b"".join(wkb), dtype="uint8")
    path = folder / f"{name}.npz"
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    with aside.open("wb") as handle:
        np.savez(handle, blob=blob, sizes=sizes, values=values)
    aside.replace(path)


def load_part(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The geometries and values `save_part` kept under `name`."""
    with np.load(folder / f"{name}.npz") as part:
        blob, sizes, values = part["blob"].tobytes(), part["sizes"], part["values"]
    ends = np.cumsum(sizes)
    wkb = np.empty(len(sizes), dtype=object)
    wkb[:] = [blob[end - size : end] for end, size in zip(ends.tolist(), sizes.tolist(), strict=True)]
    return (shapely.from_wkb(wkb) if len(wkb) else np.empty(0, dtype=object)), values


def publish_layer(args: RasterToVectorArgs, plan: dict[str, JsonValue], layer: Layer, ctx: JobContext) -> OutputRef:
    """Write `layer` in the parts folder under the output's name, then publish it at `args.output` (a hard link
    and a rename, restartable: an output this call already published is its own)."""
    driver, crs = str(plan["driver"]), plan["crs"]
    staging = Path(str(plan["folder"])) / Path(args.output).name
    target = assembly_target(args.output, staging, ctx, overwrite=args.overwrite)
    write_layer(layer, staging, driver, None if crs is None else str(crs), fence=ctx.fence)
    return file_ref(target, driver, publish(staging, target, ctx))
