"""Tiled and whole runs give the same result (issue 29): reproject, convert (GeoTIFF and COG) and stats, on rasters
whose sizes are not multiples of the tile, with nodata, several bands and two dtypes. Each call runs through the
real lifecycle (`run_call`) on a fakeredis log: the plan appends its tiles, every queued message is run in turn,
and the fan-in assembles."""

import hashlib
from pathlib import Path

import numpy as np
import pytest
import rasterio

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolFannedOut
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from tests.support import drain_queue
from tests.unit.workers.gdal.conftest import RasterFactory
from workers.run import runner
from workers.tools import load_all

load_all()

SIZE = (601, 733)
"""Rows, columns: 3×3 tiles of 256 with ragged edges."""


def settings_for(root: Path, *, tiled: bool) -> Settings:
    minimum = 65_536 if tiled else 1 << 40
    return Settings(redis_url="redis://unused", workspaces=str(root), tile_min_pixels=minimum, tile_size=256)


def call(store: EventStore, settings: Settings, tool: str, **args: object) -> tuple[str, dict]:
    """Publish `tool` with `args`, run it and everything it enqueues; its outcome's result (or error)."""
    valid = TOOLS[tool].args.model_validate(args).model_dump(mode="json")
    call_id = new_id()
    event = request_event(TOOLS[tool], valid, call_id=call_id, actor="tester")
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, settings, "host:p", encode(event))
    drain_queue(store, settings)
    state = store.call_state(call_id)
    assert state is not None and state.terminal, state
    assert state.status == "succeeded", (state.error_code, state.error_message)
    return call_id, state.result


def both(fake_store: EventStore, root: Path, tool: str, **args: object) -> tuple[dict, dict, str]:
    whole = call(fake_store, settings_for(root, tiled=False), tool, **{**args, **_out(args, "whole")})[1]
    call_id, tiled = call(fake_store, settings_for(root, tiled=True), tool, **{**args, **_out(args, "tiled")})
    return whole, tiled, call_id


def _out(args: dict, name: str) -> dict:
    return {"output": f"{name}{Path(str(args['output'])).suffix}"} if "output" in args else {}


def pixels(path: str) -> tuple[np.ndarray, dict]:
    with rasterio.open(path) as src:
        keep = ("crs", "transform", "width", "height", "count", "dtype", "nodata")
        return src.read(), {k: src.profile[k] for k in keep}


def digested(result: dict) -> bool:
    """The output's sha256 in the result is that of its file (taken while tiles ran, or read back)."""
    return result["output"]["sha256"] == hashlib.sha256(Path(result["output"]["path"]).read_bytes()).hexdigest()


def tile_types(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_a_tiled_nearest_reprojection_equals_the_whole_one_pixel_for_pixel(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, dtype: str
) -> None:
    make_raster(dtype=dtype, size=SIZE, count=2, nodata=-7)
    args = {"uri": "src.tif", "output": "out.tif", "dst_crs": "EPSG:3857", "resampling": "nearest"}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_reproject", **args)

    (a, meta_a), (b, meta_b) = pixels(whole["output"]["path"]), pixels(tiled["output"]["path"])
    assert meta_a == meta_b
    assert np.array_equal(a, b)
    assert digested(tiled) and digested(whole)
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert not (tmp_path / ".geogate").exists()


def test_a_tiled_bilinear_reprojection_equals_the_whole_one_pixel_for_pixel(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    """GDAL's approximate transformer interpolates coordinates over each window it warps: the whole job warps the
    same windows as the tiles, so even interpolating kernels give the same bits."""
    make_raster(dtype="float32", size=SIZE, nodata=-9999)
    args = {"uri": "src.tif", "output": "out.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"}

    whole, tiled, _ = both(fake_store, tmp_path, "raster_reproject", **args)

    (a, meta_a), (b, meta_b) = pixels(whole["output"]["path"]), pixels(tiled["output"]["path"])
    assert meta_a == meta_b
    assert np.array_equal(a, b)
    assert digested(tiled) and digested(whole)


@pytest.mark.parametrize("size", [(30_000, 3), (3, 30_000)], ids=["tall", "wide"])
def test_a_thin_raster_is_reprojected_in_strips_of_a_tile_the_same_whole_or_tiled(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, size: tuple[int, int]
) -> None:
    """A grid thinner than a tile is cut into a few strips of about a tile's area (`workers.tiling.grid`), not
    into slivers of one tile's side; whole and tiled runs warp the same strips."""
    make_raster(dtype="float32", size=size, crs="EPSG:3857")
    args = {"uri": "src.tif", "output": "out.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_reproject", **args)

    (a, meta_a), (b, meta_b) = pixels(whole["output"]["path"]), pixels(tiled["output"]["path"])
    assert meta_a == meta_b and np.array_equal(a, b)
    events = fake_store.read_aggregate(call_aggregate(call_id))
    assert [e.payload(ToolFannedOut).tiles for e in events if e.type == "tool.fanned_out"] == [2]


@pytest.mark.parametrize(
    ("driver", "options"), [("GTiff", {}), ("GTiff", {"compression": "deflate"}), ("COG", {"compression": "deflate"})]
)
def test_a_tiled_conversion_equals_the_whole_one(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, driver: str, options: dict
) -> None:
    make_raster(dtype="int16", size=SIZE, count=3, nodata=-1)
    args = {"uri": "src.tif", "output": "out.tif", "driver": driver, **options}

    whole, tiled, _ = both(fake_store, tmp_path, "raster_convert", **args)

    (a, meta_a), (b, meta_b) = pixels(whole["output"]["path"]), pixels(tiled["output"]["path"])
    assert meta_a == meta_b and np.array_equal(a, b)
    assert digested(tiled) and digested(whole)
    assert (tiled["driver"], tiled["compression"], tiled["overviews_built"]) == (
        whole["driver"],
        whole["compression"],
        whole["overviews_built"],
    )


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_tiled_statistics_equal_the_whole_ones(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, dtype: str
) -> None:
    data = np.random.default_rng(7).normal(100, 30, (2, *SIZE)).astype(dtype)
    data[0, 10:50, 20:90] = -5  # nodata patch
    make_raster(dtype=dtype, data=data, nodata=-5)
    args = {"uri": "src.tif", "include_histogram": True, "histogram_bins": 37, "percentiles": [1.0, 33.3, 99.9]}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_stats", **args)

    for a, b in zip(whole["band_stats"], tiled["band_stats"], strict=True):
        exact = ("band", "min", "max", "valid_count", "nodata_count", "median", "percentile_25", "percentile_75")
        assert {k: a[k] for k in exact} == {k: b[k] for k in exact}
        assert a["percentiles"] == b["percentiles"]
        assert a["histogram"] == b["histogram"]
        assert b["mean"] == pytest.approx(a["mean"], rel=1e-12)
        assert b["std"] == pytest.approx(a["std"], rel=1e-9)
    assert whole["total_pixels"] == tiled["total_pixels"]
    assert not (tmp_path / ".geogate" / "tiles" / call_id).exists()
