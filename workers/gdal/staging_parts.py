"""The staging file of a tiled raster call whose output is in an object root, where no folder is shared by the
workers: each tile puts its window as a part object under the call's prefix (`workers.tiling.part_objects`), and
the fan-in makes the staging file in its own scratch (the mirror of the parts prefix) exactly as the planner of a
folder root makes it, writes every part into its window, and publishes it as a folder root's fan-in does. So the
output has the bytes it would have in a folder.

The planner makes nothing: the staging file's layout (its rasterio profile and tags) goes in the plan instead.
"""

from pathlib import Path
from typing import Any

import rasterio
from affine import Affine
from pydantic import BaseModel, ConfigDict, JsonValue
from rasterio.windows import Window

from schemas.tools.tiling import TileResult
from workers.gdal.errors import writing
from workers.jobkit import objects
from workers.tiling import part_objects

PART = "tile-{index}.npy"
"""A tile's part, beside the staging file's name under the call's prefix."""


class Layout(BaseModel):
    """What the fan-in needs to make the staging file the planner of a folder root would have made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: dict[str, str | int | float | bool | None]
    """The staging profile without its CRS and transform; `nodata` as `repr` (NaN has no JSON number)."""
    crs: str | None
    """As the profile had it: a user string (`EPSG:32633`) as it was, a CRS object as WKT."""
    transform: tuple[float, float, float, float, float, float]
    tags: dict[str, str]


def layout_of(profile: dict[str, Any], tags: dict[str, str] | None) -> dict[str, JsonValue]:
    """The plan's `layout` of a staging file of `profile` (already a staging profile) with `tags`.

    Raises:
        ValidationError: a profile value with no JSON form (the call then runs whole).
    """
    kept = {k: v for k, v in profile.items() if k not in ("crs", "transform", "nodata")}
    nodata = profile.get("nodata")
    kept["nodata"] = None if nodata is None else repr(float(nodata))
    crs = profile.get("crs")
    shown = crs if crs is None or isinstance(crs, str) else crs.to_wkt()
    transform = tuple(profile["transform"])[:6]
    return Layout(profile=kept, crs=shown, transform=transform, tags=tags or {}).model_dump(mode="json")


def profile_of(layout: Layout) -> dict[str, Any]:
    """The staging profile a `Layout` describes."""
    nodata = layout.profile.get("nodata")
    profile = {**layout.profile, "nodata": None if nodata is None else float(str(nodata))}
    return profile | {"crs": layout.crs, "transform": Affine(*layout.transform)}


def part_uri(staging: str, index: int) -> str:
    """Where tile `index` of the call whose staging file is named `staging` (an `s3://` URI) puts its window."""
    return f"{staging.rsplit('/', 1)[0]}/{PART.format(index=index)}"


def local_folder(staging: str) -> Path:
    """The folder of this job's mirror that stands for the parts prefix of `staging` (created)."""
    folder = Path(objects.local_name(staging, "output")).parent
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def fill(made: Path, staging: str, layout: Layout, tiles: list[TileResult]) -> None:
    """Write every tile's part into its window of the staging file `made` (fetched one at a time, in row-major order).

    Raises:
        JobFailed: `tiles.missing`, `tiles.invalid_part`, `storage.failed`; `gdal.write_failed`.
    """
    count, dtype = int(layout.profile["count"] or 1), str(layout.profile["dtype"])
    with writing(), rasterio.open(made, "r+") as dst:
        for tile in sorted(tiles, key=lambda t: t.index):
            w = tile.window
            data = part_objects.get_array(part_uri(staging, tile.index), (count, w.height, w.width), dtype)
            dst.write(data, window=Window(w.col_off, w.row_off, w.width, w.height))
