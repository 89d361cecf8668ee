"""Each huge input (`tests.huge_inputs`, small on disk) is refused before work starts, or stopped as it passes its
bound, with a `limit.*` error on the argument that set the size, and nothing written at the output."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import LimitSettings, Settings
from schemas.codec import encode
from schemas.ids import new_id
from schemas.tools import TOOLS
from schemas.tools.analysis import RasterContoursArgs, RasterPolygonizeArgs, VectorRasterizeArgs, ZonalStatsArgs
from schemas.tools.raster import RasterConvertArgs, RasterReprojectArgs, RasterStatsArgs
from schemas.tools.raster_ops import RasterClipArgs, RasterMosaicArgs, RasterTerrainArgs
from tests.huge_inputs import ORIGIN, checkerboard, layer, pixel, sparse_raster, square, write_band, zones
from tests.support import drain_queue
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.run import runner
from workers.tools import load_all
from workers.tools.analysis import raster_contours, raster_polygonize, vector_rasterize, zonal_stats
from workers.tools.raster import raster_convert, raster_reproject, raster_stats
from workers.tools.raster_ops import raster_clip, raster_mosaic, raster_terrain

load_all()

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3

HUGE = 60_000
"""Side of a sparse uint8 raster of 3.35 GiB, past the default `GEOGATE_LIMIT_OUTPUT_BYTES` (2 GiB)."""


def context(root: Path, **limits: int) -> JobContext:
    settings = Settings(redis_url="redis://unused", workspaces=str(root), limits=LimitSettings(**limits))
    return JobContext(call_id="c", roots=[root], settings=settings)


def refused(run: Callable[[], object], code: str, field: str, root: Path) -> None:
    """`run` fails with `code` on `field`, and leaves no output (nor a temporary file) in the workspace."""
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(JobFailed) as failed:
        run()
    assert (failed.value.code, failed.value.field) == (code, field)
    assert sorted(p.name for p in root.iterdir()) == before


def test_a_fine_resolution_rasterize_is_refused_before_burning(tmp_path: Path) -> None:
    layer(tmp_path / "area.gpkg", [square(100_000.0)])
    args = VectorRasterizeArgs(uri="area.gpkg", output="mask.tif", resolution=[1.0, 1.0], burn_value=1)

    refused(lambda: vector_rasterize(args, context(tmp_path)), "limit.output_bytes", "resolution", tmp_path)


def test_a_clip_of_a_sparse_huge_raster_is_refused_before_reading_by_box_and_by_mask(tmp_path: Path) -> None:
    sparse_raster(tmp_path / "sparse.tif", HUGE, HUGE)
    layer(tmp_path / "area.gpkg", [square(HUGE)])
    left, top = ORIGIN
    box = RasterClipArgs(uri="sparse.tif", output="box.tif", bounds=[left, top - HUGE, left + HUGE, top])
    masked = RasterClipArgs(uri="sparse.tif", output="mask.tif", mask="area.gpkg")

    refused(lambda: raster_clip(box, context(tmp_path)), "limit.output_bytes", "bounds", tmp_path)
    refused(lambda: raster_clip(masked, context(tmp_path)), "limit.output_bytes", "mask", tmp_path)


def test_a_mosaic_of_two_pixels_far_apart_is_refused_for_its_extent(tmp_path: Path) -> None:
    left, top = ORIGIN
    pixel(tmp_path / "a.tif", left, top)
    pixel(tmp_path / "b.tif", left + 100_000.0, top - 100_000.0)
    args = RasterMosaicArgs(inputs=["a.tif", "b.tif"], output="mosaic.tif", resampling="nearest")

    refused(lambda: raster_mosaic(args, context(tmp_path)), "limit.output_bytes", "inputs", tmp_path)


def test_a_mosaic_within_the_bound_is_written(tmp_path: Path) -> None:
    left, top = ORIGIN
    pixel(tmp_path / "a.tif", left, top)
    pixel(tmp_path / "b.tif", left + 99.0, top - 99.0)

    result = raster_mosaic(
        RasterMosaicArgs(inputs=["a.tif", "b.tif"], output="m.tif", resampling="nearest"), context(tmp_path)
    )

    assert (result.width, result.height) == (100, 100)


@pytest.mark.parametrize(
    ("run", "field"),
    [
        (lambda ctx: raster_stats(RasterStatsArgs(uri="sparse.tif"), ctx), "uri"),
        (lambda ctx: raster_convert(RasterConvertArgs(uri="sparse.tif", output="copy.tif"), ctx), "uri"),
        (lambda ctx: raster_terrain(RasterTerrainArgs(uri="sparse.tif", output="t.tif", product="slope"), ctx), "uri"),
        (lambda ctx: raster_polygonize(RasterPolygonizeArgs(uri="sparse.tif", output="p.gpkg"), ctx), "uri"),
    ],
    ids=["raster_stats", "raster_convert", "raster_terrain", "raster_polygonize"],
)
def test_a_sparse_huge_raster_is_refused_from_its_metadata(
    tmp_path: Path, run: Callable[[JobContext], object], field: str
) -> None:
    sparse_raster(tmp_path / "sparse.tif", HUGE, HUGE)

    refused(lambda: run(context(tmp_path)), "limit.output_bytes", field, tmp_path)


def test_a_reprojection_to_a_fine_resolution_is_refused_on_resolution(tmp_path: Path) -> None:
    sparse_raster(tmp_path / "src.tif", 1000, 1000, res=100.0)
    args = RasterReprojectArgs(
        uri="src.tif", output="fine.tif", dst_crs="EPSG:32633", resolution=[1.0, 1.0], resampling="nearest"
    )

    refused(lambda: raster_reproject(args, context(tmp_path)), "limit.output_bytes", "resolution", tmp_path)


def test_a_checkerboard_polygonize_is_refused_before_a_polygon_is_traced(tmp_path: Path) -> None:
    """Its 40,000 polygons are known from the pixels (`workers.gdal.polygon_floor`) before GDAL builds them."""
    checkerboard(tmp_path / "board.tif", 200)
    args = RasterPolygonizeArgs(uri="board.tif", output="board.gpkg")
    reports: list[str | None] = []
    ctx = context(tmp_path, features=1000)
    ctx.sink = lambda progress, total, message: bool(reports.append(message))

    refused(lambda: raster_polygonize(args, ctx), "limit.features", "uri", tmp_path)
    assert "tracing polygons" not in reports


def test_nested_rings_polygonize_stops_as_the_polygons_are_counted(tmp_path: Path) -> None:
    """100 nested square rings: each a polygon with a hole, so the floor from the pixels is 1 and only the count of
    traced polygons passes the bound."""
    rows, cols = np.indices((200, 200))
    rings = (np.minimum(np.minimum(rows, cols), np.minimum(199 - rows, 199 - cols)) % 2).astype("uint8")
    write_band(tmp_path / "rings.tif", rings)
    args = RasterPolygonizeArgs(uri="rings.tif", output="rings.gpkg")

    refused(lambda: raster_polygonize(args, context(tmp_path, features=50)), "limit.features", "uri", tmp_path)
    assert raster_polygonize(args, context(tmp_path, features=100)).feature_count == 100


def test_checkerboard_contours_stop_at_the_feature_bound_on_interval_or_levels(tmp_path: Path) -> None:
    checkerboard(tmp_path / "board.tif", 200, dtype="float32")
    by_interval = RasterContoursArgs(uri="board.tif", output="a.gpkg", interval=0.5, base=0.5)
    by_levels = RasterContoursArgs(uri="board.tif", output="b.gpkg", levels=[0.5])

    ctx = context(tmp_path, features=1000)
    refused(lambda: raster_contours(by_interval, ctx), "limit.features", "interval", tmp_path)
    refused(lambda: raster_contours(by_levels, ctx), "limit.features", "levels", tmp_path)


def test_polygons_up_to_the_feature_bound_are_written(tmp_path: Path) -> None:
    checkerboard(tmp_path / "board.tif", 20)

    result = raster_polygonize(RasterPolygonizeArgs(uri="board.tif", output="b.gpkg"), context(tmp_path, features=400))

    assert result.feature_count == 400


def test_zonal_stats_of_too_many_zones_is_refused_before_the_layer_is_read(tmp_path: Path) -> None:
    checkerboard(tmp_path / "board.tif", 100)
    layer(tmp_path / "zones.gpkg", zones(101))
    args = ZonalStatsArgs(uri="board.tif", zones="zones.gpkg", output="z.gpkg")
    reads: list[float] = []
    ctx = context(tmp_path, zones=100)
    ctx.sink = lambda progress, total, message: bool(reads.append(progress))

    refused(lambda: zonal_stats(args, ctx), "limit.zones", "zones", tmp_path)
    assert reads == []  # no chunk of the layer was read


def call(store: EventStore, settings: Settings, tool: str, **args: object) -> tuple[str, str | None, int]:
    """Run `tool` through the lifecycle on a fakeredis log, with all it enqueues; its status, error code and how
    many calls ran after it (its tiles and fan-in)."""
    valid = TOOLS[tool].args.model_validate(args).model_dump(mode="json")
    call_id = new_id()
    event = request_event(TOOLS[tool], valid, call_id=call_id, actor="tester")
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, settings, "host:p", encode(event))
    ran = drain_queue(store, settings)
    state = store.call_state(call_id)
    assert state is not None and state.terminal
    return state.status, state.error_code, ran


def test_a_one_row_raster_past_the_tile_bound_fails_the_call_without_a_tile_queued(
    fake_store: EventStore, tmp_path: Path
) -> None:
    """1 × 100,000,000 pixels at `GEOGATE_TILE_SIZE` 256 are 1,526 windows of 256² pixels: past the default 1,024.
    The planner refuses; the call then runs whole, which refuses the same grid."""
    sparse_raster(tmp_path / "thin.tif", 100_000_000, 1)
    settings = Settings(redis_url="redis://unused", workspaces=str(tmp_path), tile_size=256, tile_min_pixels=65_536)

    status, code, ran = call(fake_store, settings, "raster_terrain", uri="thin.tif", output="t.tif", product="slope")

    assert (status, code, ran) == ("failed", "limit.tiles", 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thin.tif"]


def test_a_result_past_the_result_bound_fails_the_call(fake_store: EventStore, tmp_path: Path) -> None:
    checkerboard(tmp_path / "board.tif", 100)
    layer(tmp_path / "zones.gpkg", zones(2000))
    limits = LimitSettings(result_bytes=64 * 1024)
    settings = Settings(redis_url="redis://unused", workspaces=str(tmp_path), limits=limits)

    status, code, _ = call(fake_store, settings, "zonal_stats", uri="board.tif", zones="zones.gpkg")

    assert (status, code) == ("failed", "limit.result_bytes")
