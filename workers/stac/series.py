"""Job `stac_zonal_series`: one asset's statistics per zone and per date of a search's items, as rows of a table.

The zones are moved into the first asset's CRS and the grid is that asset's, over the zones' extent (snapped to
its pixels). For each day (the items' UTC date, in order), the items of that day are mosaicked onto the grid by the
composite's own window (`workers.stac.composite`, reducer `first`: the first item in search order with a value,
its mask and nodata left out; only the blocks under the zones read), and exactextract measures each zone on that
mosaic as `zonal_stats` does (pixels weighed by the share a zone covers).
"""

from itertools import groupby

import numpy as np
import shapely
from pyproj import CRS
from rasterio.io import MemoryFile

from geogate.settings import Settings
from schemas.tools.stac import SeriesRow, StacItem, StacZonalSeriesArgs, StacZonalSeriesResult
from schemas.tools.tiling import TileWindow
from workers.gdal.vector_io import read_layer
from workers.gdal.zonal import check_polygons, extract, ids_of, to_raster_crs
from workers.jobkit.context import JobContext
from workers.jobkit.files import raster_input, resolve_in_workspace
from workers.jobkit.limits import check_raster, check_zones
from workers.stac.composite import Composite, Report
from workers.stac.scenes import Grid, asset_grid, found_items, scenes_of, snapped

_DEFAULTS = Settings.defaults()


def zonal_series(args: StacZonalSeriesArgs, ctx: JobContext) -> StacZonalSeriesResult:
    """Statistics `args.stats` of `args.asset` per zone of `args.zones` and per date of the search's items.

    Raises:
        JobFailed: the search's errors, a missing asset, a host not allowed, an unreadable asset or layer, a zone
            that is no polygon, an `id_field` that does not exist, zones past `GEOGATE_LIMIT_ZONES`, a grid past
            `GEOGATE_LIMIT_OUTPUT_BYTES`, `area.empty` (the zones cover less than a pixel).
        JobCancelled: the call was cancelled.
    """
    settings = ctx.settings or _DEFAULTS
    zones_path = resolve_in_workspace(args.zones, ctx.roots, field="zones")
    layer = read_layer(zones_path, args.layer, ctx, field="zones", counted=lambda n: check_zones(ctx, n, "zones"))
    check_polygons(layer.geometry)
    ids = ids_of(layer, args.id_field)
    items = found_items(args.search, [args.asset], args.mask, settings)
    own = asset_grid(raster_input(items[0].assets[args.asset].href, ctx.roots, settings, field="assets"))
    geometry, _ = to_raster_crs(layer, CRS.from_user_input(own.crs))
    grid = snapped(own, own.crs, own.res, tuple(shapely.total_bounds(geometry)), "zones")
    check_raster(ctx, grid.width, grid.height, 1, grid.dtype, "zones", read=True)
    days = [(day, list(group)) for day, group in groupby(sorted(items, key=_day), key=_day)]
    rows: list[SeriesRow] = []
    for number, (day, group) in enumerate(days):
        mosaic = _mosaic(group, args, grid, ctx, _day_report(ctx, number, len(days), day))
        measured = _measure(mosaic, grid, geometry, list(args.stats))
        names = [item.id for item in group]
        rows += [SeriesRow(id=zone, date=day, items=names, **row) for zone, row in zip(ids, measured, strict=True)]
    return StacZonalSeriesResult(
        asset=args.asset,
        crs=own.crs.to_string(),
        resolution=own.res,
        dates=[day for day, _ in days],
        feature_count=len(ids),
        stats=list(args.stats),
        rows=rows,
    )


def _day(item: StacItem) -> str:
    return (item.datetime or "")[:10]


def _day_report(ctx: JobContext, number: int, days: int, day: str) -> Report:
    def report(window: TileWindow, share: float, message: str) -> None:
        ctx.progress(number + share, days, f"{day}: {message}")

    return report


def _mosaic(
    group: list[StacItem], args: StacZonalSeriesArgs, grid: Grid, ctx: JobContext, report: Report
) -> tuple[np.ndarray, float | None]:
    """The day's items on `grid`, the first with a value on top, shape (1, rows, columns), and its nodata."""
    mask = args.mask.asset if args.mask else None
    scenes = scenes_of(group, [args.asset], mask, grid.crs)
    drop = list(args.mask.drop) if args.mask else []
    composite = Composite(scenes, grid, "first", drop, "nearest", ctx, report)
    try:
        whole = TileWindow(col_off=0, row_off=0, width=grid.width, height=grid.height)
        return composite.compute(whole), composite.profile["nodata"]
    finally:
        composite.close()


def _measure(day: tuple[np.ndarray, float | None], grid: Grid, geometry: np.ndarray, stats: list[str]) -> list[dict]:
    """exactextract's statistics of each zone on the day's mosaic (an in-memory GeoTIFF with its nodata)."""
    mosaic, nodata = day
    profile = {"driver": "GTiff", "width": grid.width, "height": grid.height, "count": 1, "dtype": mosaic.dtype.name}
    profile |= {"crs": grid.crs, "transform": grid.transform, "nodata": nodata}
    with MemoryFile() as memory:
        with memory.open(**profile) as dst:
            dst.write(mosaic)
        with memory.open() as src:
            return extract(src, 1, geometry, stats, "fraction", _quiet)


def _quiet(done: int, total: int) -> None:
    """Zones measured on one day's mosaic: progress is the days'."""
