"""Tiled and whole runs of the tracing tools give the same features: `raster_polygonize`'s polygons stitched across
the seams of 3×3 windows and `raster_contours`' lines joined across them, with regions and lines that cross several
seams, holes and nodata. Each call runs through the real lifecycle on a fakeredis log (`test_tiled.call`)."""

import hashlib
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import shapely

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from schemas.tools.analysis import RasterContoursArgs
from schemas.tools.tiling import TileArgs
from tests.support import drain_queue
from tests.unit.workers.gdal.conftest import RasterFactory
from tests.unit.workers.gdal.test_tiled import call, settings_for
from workers.jobkit.context import JobContext
from workers.run import runner
from workers.tiling.declare import TILERS

SIZE = (601, 733)
"""Rows, columns: 3×3 windows of 256 with ragged edges."""


def classes(nodata: int) -> np.ndarray:
    """Rings around a centre near a window corner (regions across four seams, each ring a hole of the next), stripes
    across a whole row of windows, a patch of noise on a seam, a nodata band across seams and a window of nodata."""
    rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
    band = (np.hypot(rows - 250.0, cols - 270.0) // 40 % 4).astype("int16")
    band[rows > 450] = 10 + (cols[rows > 450] // 90) % 3
    noise = np.random.default_rng(7).integers(20, 23, (40, 60))
    band[236:276, 480:540] = noise
    band[100:120, 200:700] = nodata
    band[512:, 512:] = nodata  # the last window holds no valid pixel
    return band


def surface() -> np.ma.MaskedArray:
    """A smooth surface whose levels wander across many seams, with closed rings, and nodata holes on seams."""
    rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]].astype("float64")
    z = np.sin(cols / 61.0) * 40 + np.cos(rows / 47.0) * 30 + cols * 0.05
    z[250:262, 300:330] = -9999  # on the seam of row 256
    z[400:440, 510:515] = -9999  # on the seam of column 512
    z[512:, :256] = -9999  # a window without a valid pixel
    return z.astype("float32")


def layer(result: dict) -> tuple[np.ndarray, np.ndarray]:
    _, _, wkb, columns = pyogrio.raw.read(result["output"]["path"])
    return shapely.from_wkb(wkb), columns[0]


def unmatched(whole: tuple[np.ndarray, np.ndarray], tiled: tuple[np.ndarray, np.ndarray]) -> int:
    """How many of the whole run's features have no feature of the tiled run of the same value and an equal
    geometry (shapely's `equals`, or no area or length of difference beyond 1e-9 of their size), one for one."""
    (geoms, values), (others, other_values) = whole, tiled
    tree, taken, missing = shapely.STRtree(others), set(), 0
    for geom, value in zip(geoms, values, strict=True):
        match = next((j for j in tree.query(geom) if j not in taken and other_values[j] == value
                      and _equal(geom, others[j])), None)  # fmt: skip
        if match is None:
            missing += 1
        else:
            taken.add(match)
    return missing


def _equal(a: shapely.Geometry, b: shapely.Geometry) -> bool:
    if shapely.equals(a, b):
        return True
    size = shapely.area if shapely.get_dimensions(a) == 2 else shapely.length
    return float(size(shapely.symmetric_difference(a, b))) <= 1e-9 * float(size(a))


def tiling(root: Path) -> Settings:
    """`test_tiled`'s tiling settings, with `raster_polygonize` tiled too (it runs whole by default)."""
    return settings_for(root, tiled=True).model_copy(update={"tile_polygonize_min_pixels": 65_536})


def run_both(store: EventStore, root: Path, tool: str, **args: object) -> tuple[dict, dict, str]:
    whole = call(store, settings_for(root, tiled=False), tool, **args, output="whole.gpkg")[1]
    call_id, tiled = call(store, tiling(root), tool, **args, output="tiled.gpkg")
    return whole, tiled, call_id


def failed(store: EventStore, settings: Settings, tool: str, **args: object) -> str:
    """Publish `tool` with `args` and run it and everything it enqueues; its id, once it has failed."""
    call_id = new_id()
    event = request_event(TOOLS[tool], TOOLS[tool].args.model_validate(args).model_dump(mode="json"),
                          call_id=call_id, actor="tester")  # fmt: skip
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, settings, "host:p", encode(event))
    drain_queue(store, settings)
    state = store.call_state(call_id)
    assert state is not None and state.status == "failed", state
    return call_id


def fanned_out(store: EventStore, call_id: str) -> bool:
    return "tool.fanned_out" in [e.type for e in store.read_aggregate(call_aggregate(call_id))]


def test_tiled_polygons_are_the_whole_runs_polygons_stitched_across_the_seams(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    make_raster(data=classes(nodata=-1), nodata=-1, crs="EPSG:32633")

    whole, tiled, call_id = run_both(fake_store, tmp_path, "raster_polygonize", uri="src.tif")

    assert fanned_out(fake_store, call_id)
    a, b = layer(whole), layer(tiled)
    assert len(a[0]) == len(b[0]) == whole["feature_count"] == tiled["feature_count"]
    assert unmatched(a, b) == 0
    assert whole["distinct_values"] == tiled["distinct_values"]
    assert not (tmp_path / ".geogate").exists()


def test_tiled_polygons_of_a_float_band_keep_float_values(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    make_raster(data=classes(nodata=-1).astype("float32") / 4, nodata=-0.25)

    whole, tiled, _ = run_both(fake_store, tmp_path, "raster_polygonize", uri="src.tif", field_name="class")

    a, b = layer(whole), layer(tiled)
    assert b[1].dtype.kind == "f" and len(a[0]) == len(b[0])
    assert unmatched(a, b) == 0


def test_an_eight_connected_polygonize_runs_whole(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    """GDAL traces an 8-connected region as one ring touching itself at its corners; a union of pieces does not."""
    make_raster(data=classes(nodata=-1), nodata=-1)

    call_id, _ = call(fake_store, tiling(tmp_path), "raster_polygonize", uri="src.tif", output="out.gpkg",
                      connectivity=8)  # fmt: skip

    assert not fanned_out(fake_store, call_id)


def test_polygonize_runs_whole_by_default_where_other_tools_are_tiled(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    """Its fan-in's stitch costs about what its tiles save (docs/tiles.md): tiled only from
    GEOGATE_TILE_POLYGONIZE_MIN_PIXELS."""
    make_raster(data=classes(nodata=-1), nodata=-1)

    call_id, _ = call(fake_store, settings_for(tmp_path, tiled=True), "raster_polygonize", uri="src.tif",
                      output="out.gpkg")  # fmt: skip

    assert not fanned_out(fake_store, call_id)


def test_a_tiled_polygonize_past_the_feature_bound_fails_like_the_whole_one(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    make_raster(data=classes(nodata=-1), nodata=-1)
    settings = tiling(tmp_path)
    settings = settings.model_copy(update={"limits": settings.limits.model_copy(update={"features": 100})})

    call_id = failed(fake_store, settings, "raster_polygonize", uri="src.tif", output="out.gpkg")

    assert fanned_out(fake_store, call_id)
    assert fake_store.call_state(call_id).error_code == "limit.features"  # type: ignore[union-attr]
    assert not (tmp_path / "out.gpkg").exists() and not (tmp_path / ".geogate").exists()


@pytest.mark.parametrize("levels", [{"interval": 7.5, "base": 0.25}, {"levels": [-20.0, 0.0, 12.5, 35.0]}])
def test_tiled_contours_are_the_whole_runs_lines_joined_across_the_seams(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, levels: dict
) -> None:
    make_raster(data=surface(), nodata=-9999, crs="EPSG:32633")

    whole, tiled, call_id = run_both(fake_store, tmp_path, "raster_contours", uri="src.tif", **levels)

    assert fanned_out(fake_store, call_id)
    a, b = layer(whole), layer(tiled)
    assert len(a[0]) == len(b[0]) == whole["feature_count"] == tiled["feature_count"]
    assert unmatched(a, b) == 0
    assert whole["levels"] == tiled["levels"]
    assert not (tmp_path / ".geogate").exists()


def test_tiled_contours_of_whole_numbers_at_whole_levels_are_the_whole_runs(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    """Levels that pixels hold exactly: lines pass through pixel centres, some of them on seams."""
    z = surface()
    make_raster(data=np.where(z == -9999, z, np.round(z / 5) * 5), nodata=-9999, crs="EPSG:32633")

    whole, tiled, _ = run_both(fake_store, tmp_path, "raster_contours", uri="src.tif", interval=10)

    a, b = layer(whole), layer(tiled)
    assert len(a[0]) == len(b[0])
    assert unmatched(a, b) == 0


def test_tiled_contours_past_the_feature_bound_fail_on_the_argument_that_sets_the_levels(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    """The bound counts the lines of the whole call: each tile's lines off the seams, then the joined ones."""
    make_raster(data=surface(), nodata=-9999, crs="EPSG:32633")
    settings = settings_for(tmp_path, tiled=True)
    settings = settings.model_copy(update={"limits": settings.limits.model_copy(update={"features": 20})})

    call_id = failed(fake_store, settings, "raster_contours", uri="src.tif", output="out.gpkg", interval=7.5)

    state = fake_store.call_state(call_id)
    assert fanned_out(fake_store, call_id)
    assert state is not None and (state.error_code, state.error_field) == ("limit.features", "interval")
    assert not (tmp_path / "out.gpkg").exists() and not (tmp_path / ".geogate").exists()


def test_a_tracing_fan_in_run_again_after_its_publish_takes_its_own_layer_as_published(
    tmp_path: Path, make_raster: RasterFactory
) -> None:
    """A node that dies after the rename leaves a fan-in the reaper runs again: it finds the layer it published (the
    recorded digest), not `output.exists`, whatever bytes a second write of the layer would have."""
    make_raster(data=surface(), nodata=-9999, crs="EPSG:32633")
    ctx = JobContext(call_id="c1", roots=[tmp_path], settings=settings_for(tmp_path, tiled=True))
    args = RasterContoursArgs(uri="src.tif", output="out.gpkg", interval=7.5)
    tiler = TILERS["raster_contours"]
    plan = tiler.plan(args, ctx)
    assert plan is not None
    tiles = [TileArgs(parent="c1", index=i, window=w, plan=plan.shared) for i, w in enumerate(plan.windows)]
    results = [tiler.run(tile, ctx) for tile in tiles]

    first = tiler.assemble(args, tiles[0], results, ctx)
    published = (tmp_path / "out.gpkg").stat().st_mtime_ns  # the rename happened; the outcome did not land
    again = tiler.assemble(args, tiles[0], results, ctx)

    assert (
        again.output.sha256 == first.output.sha256 == hashlib.sha256((tmp_path / "out.gpkg").read_bytes()).hexdigest()
    )
    assert (tmp_path / "out.gpkg").stat().st_mtime_ns == published
