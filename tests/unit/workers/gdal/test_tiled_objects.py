"""Tiled calls whose output is in an object root (issue 47): each tile puts its window as a part object under the
call's prefix, the fan-in assembles them and publishes the output by a multipart upload, and the parts go. The
workers reach the bucket only (no folder root at all), and every job (plan, each tile, fan-in) runs in a scratch
folder of its own, removed after it: nothing is shared between them but the bucket and the log. Through the real
lifecycle on a fakeredis log against moto's standalone server, as `test_tiled.py` runs tiled calls on a folder."""

import hashlib
import io
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rasterio

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolCancelRequested
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from schemas.tools.tiling import TileResult, TileWindow
from tests.support import drain_queue, make_event
from tests.unit.workers import test_objects
from tests.unit.workers.gdal.conftest import RasterFactory
from tests.unit.workers.gdal.test_tiled import SIZE, call, settings_for, tile_types
from tests.unit.workers.test_objects import BUCKET, PREFIX, ROOT
from tests.unit.workers.test_objects import keys as listed
from workers.gdal.staging import assembly_target, publish, stage, staged, write_window
from workers.jobkit import objects
from workers.jobkit.confine import confinement
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import object_roots
from workers.run import runner
from workers.tiling.grid import parts_folder
from workers.tiling.leftovers import GRACE_S, sweep_objects

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")

PARTS_PREFIX = f"{PREFIX}/.geogate/"
server, s3 = test_objects.server, test_objects.s3
"""moto's standalone server on a free port, and a client of it with the bucket made (and emptied after)."""


def bucket_settings() -> Settings:
    return Settings(redis_url="redis://unused", workspaces=ROOT, tile_min_pixels=65_536, tile_size=256)


@pytest.fixture
def scratches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """The scratch folder (object roots' mirror) each job made, in a temporary folder of the test's own."""
    made: list[Path] = []
    base = tmp_path / "scratch"
    base.mkdir()
    real = tempfile.mkdtemp

    def recorded(*args: Any, **kwargs: Any) -> str:
        if kwargs.get("prefix") != "geogate-s3-":  # not a job's mirror
            return real(*args, **kwargs)
        folder = real(*args, **{**kwargs, "dir": str(base)})
        made.append(Path(folder))
        return folder

    monkeypatch.setattr(objects.tempfile, "mkdtemp", recorded)
    yield made


def upload(s3: Any, path: Path, name: str) -> None:
    s3.upload_file(str(path), BUCKET, f"{PREFIX}/{name}")


def body(s3: Any, name: str) -> bytes:
    return s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/{name}")["Body"].read()


def in_folder_and_bucket(
    store: EventStore,
    s3: Any,
    tmp_path: Path,
    tool: str,
    args: dict[str, Any],
) -> tuple[dict, dict, str]:
    """`tool` tiled on the folder `tmp_path` (output `out.tif`), then tiled on the bucket alone (output `out.tif`
    there), the folder's inputs uploaded first; both results and the bucket call's id."""
    for path in tmp_path.glob("*.tif"):
        upload(s3, path, path.name)
    folder = call(store, settings_for(tmp_path, tiled=True), tool, **args, output="out.tif")[1]
    call_id, bucket = call(store, bucket_settings(), tool, **args, output="out.tif")
    return folder, bucket, call_id


def test_a_tiled_reprojection_into_the_bucket_is_the_folder_runs_file_and_leaves_no_part(
    fake_store: EventStore,
    s3: Any,
    tmp_path: Path,
    make_raster: RasterFactory,
    scratches: list[Path],
) -> None:
    make_raster(dtype="float32", size=SIZE, count=2, nodata=-9999)
    args = {"uri": "src.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"}
    scratches.clear()

    folder, bucket, call_id = in_folder_and_bucket(fake_store, s3, tmp_path, "raster_reproject", args)

    published = body(s3, "out.tif")
    assert published == (tmp_path / "out.tif").read_bytes()
    assert bucket["output"]["uri"] == f"{ROOT}/out.tif" and bucket["output"]["sha256"] == folder["output"]["sha256"]
    tiles = [e for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.fanned_out"]
    assert tiles and tiles[0].data.tiles == 9 and tiles[0].data.folder == f"{ROOT}/.geogate/tiles/{call_id}"
    assert listed(s3) == [f"{PREFIX}/out.tif", f"{PREFIX}/src.tif"]  # no part, no record, no upload left
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    assert len(scratches) >= 1 + 9 + 1  # the plan, each tile, the fan-in: each in a scratch folder of its own
    assert not any(p.exists() for p in scratches)


@pytest.mark.parametrize("tool", ["raster_calc", "raster_terrain", "raster_mosaic"])
def test_a_tiled_windowed_call_into_the_bucket_is_the_folder_runs_file(
    fake_store: EventStore,
    s3: Any,
    tmp_path: Path,
    make_raster: RasterFactory,
    tool: str,
) -> None:
    data = np.random.default_rng(5).normal(400, 60, (1, *SIZE)).astype("float32")
    make_raster("dem.tif", data=data, nodata=-9999, crs="EPSG:4326")
    make_raster("lift.tif", data=data + 5, nodata=-9999, crs="EPSG:4326")
    args: dict[str, Any] = {
        "raster_calc": {"inputs": {"d": "dem.tif"}, "expression": "d * 2 - 100", "compression": "deflate"},
        "raster_terrain": {"uri": "dem.tif", "product": "hillshade", "edges": "compute"},
        "raster_mosaic": {"inputs": ["dem.tif", "lift.tif"], "method": "mean", "resampling": "nearest"},
    }[tool]

    _, _, call_id = in_folder_and_bucket(fake_store, s3, tmp_path, tool, args)

    assert body(s3, "out.tif") == (tmp_path / "out.tif").read_bytes()
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert listed(s3) == [f"{PREFIX}/dem.tif", f"{PREFIX}/lift.tif", f"{PREFIX}/out.tif"]


def test_a_tiled_conversion_into_a_cog_in_the_bucket_is_the_folder_runs_file(
    fake_store: EventStore,
    s3: Any,
    tmp_path: Path,
    make_raster: RasterFactory,
) -> None:
    make_raster(dtype="int16", size=SIZE, count=3, nodata=-1)
    args = {"uri": "src.tif", "driver": "COG", "compression": "deflate"}

    _, _, call_id = in_folder_and_bucket(fake_store, s3, tmp_path, "raster_convert", args)

    assert body(s3, "out.tif") == (tmp_path / "out.tif").read_bytes()
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert not [k for k in listed(s3) if k.startswith(PARTS_PREFIX)]


def planned(store: EventStore, s3: Any, make_raster: RasterFactory) -> tuple[Settings, str]:
    """A tiled reprojection into the bucket, planned: its 9 tiles wait in the queue."""
    upload(s3, make_raster(dtype="float32", size=SIZE), "src.tif")
    settings, call_id = bucket_settings(), new_id()
    args = {"uri": "src.tif", "output": "out.tif", "dst_crs": "EPSG:3857", "resampling": "nearest"}
    event = request_event(TOOLS["raster_reproject"], args, call_id=call_id, actor="tester")
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, settings, "host:1", encode(event))
    return settings, call_id


def cancel(store: EventStore, call_id: str) -> None:
    store.append(make_event(call_aggregate(call_id), ToolCancelRequested(call_id=call_id)), keys.cancel_key(call_id))


def test_a_tiled_call_cancelled_after_some_tiles_put_their_parts_leaves_no_part_and_no_object(
    fake_store: EventStore,
    s3: Any,
    tmp_path: Path,
    make_raster: RasterFactory,
) -> None:
    settings, call_id = planned(fake_store, s3, make_raster)

    assert drain_queue(fake_store, settings, limit=3) == 3  # three tiles put their parts
    assert len([k for k in listed(s3) if k.startswith(PARTS_PREFIX)]) == 3
    cancel(fake_store, call_id)
    drain_queue(fake_store, settings)  # the other tiles, refused, then the fan-in

    assert fake_store.call_state(call_id).error_code == "cancelled"
    assert listed(s3) == [f"{PREFIX}/src.tif"]
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_the_retention_pass_removes_the_parts_an_ended_call_left_in_the_bucket(
    fake_store: EventStore,
    s3: Any,
) -> None:
    unknown, young = new_id(), new_id()
    for call_id in (unknown, young):
        s3.put_object(Bucket=BUCKET, Key=f"{PARTS_PREFIX}tiles/{call_id}/tile-0.npy", Body=b"part")
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/kept.tif", Body=b"data")
    later = datetime.now(UTC).timestamp() + GRACE_S * 2

    assert sweep_objects(fake_store, ROOT) == []  # every part is younger than the grace
    removed = sweep_objects(fake_store, ROOT, now=later)

    assert sorted(removed) == sorted(f"{ROOT}/.geogate/tiles/{c}" for c in (unknown, young))
    assert listed(s3) == [f"{PREFIX}/kept.tif"]


def fan_in_job(settings: Settings) -> JobContext:
    """A job's context on the bucket alone: `object_roots` gives it a fresh mirror."""
    return JobContext(call_id="c1", roots=[], settings=settings)


def test_a_fan_in_run_again_after_its_upload_takes_the_object_as_its_own(s3: Any) -> None:
    """A fan-in that died after the completion of the upload, before its outcome landed: the next one, in a
    scratch of its own, finds the record beside the parts and the object's digest, and publishes nothing again."""
    settings, side = bucket_settings(), 256
    windows = [TileWindow(col_off=i * side, row_off=0, width=side, height=side) for i in range(2)]
    profile = {"width": 2 * side, "height": side, "count": 1, "dtype": "uint16", "crs": "EPSG:32633"}
    profile |= {"transform": rasterio.transform.from_origin(500000, 4100000, 10, 10), "nodata": 0}
    profile |= {"blockxsize": side, "blockysize": side}
    ctx = fan_in_job(settings)
    with object_roots(ctx), confinement(ctx.roots):
        plan = stage(parts_folder(ctx.roots[0], "c1"), profile, windows)
        for index, window in enumerate(windows):
            write_window(str(plan["staging"]), np.full((1, side, side), index + 7, "uint16"), window, index, ctx)
    tiles = [TileResult(index=i, window=w) for i, w in enumerate(windows)]
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/other.tif", Body=b"not this call's")

    digests = []
    for _ in range(2):
        ctx = fan_in_job(settings)
        with object_roots(ctx), confinement(ctx.roots):
            staging = staged(plan, tiles)
            digests.append(publish(staging, assembly_target("out.tif", staging, ctx, overwrite=False), ctx))
            with pytest.raises(JobFailed, match="exists"):
                assembly_target("other.tif", staging, ctx, overwrite=False)
        if not digests[1:]:
            etag = s3.head_object(Bucket=BUCKET, Key=f"{PREFIX}/out.tif")["ETag"]

    assert digests[0] == digests[1] == hashlib.sha256(body(s3, "out.tif")).hexdigest()
    assert s3.head_object(Bucket=BUCKET, Key=f"{PREFIX}/out.tif")["ETag"] == etag  # not uploaded again
    with rasterio.open(io.BytesIO(body(s3, "out.tif"))) as out:
        assert out.read(1)[0, 0] == 7 and out.read(1)[0, side] == 8


@pytest.mark.parametrize("part", ["pickled", "wrong_shape"])
def test_a_part_that_is_not_its_windows_array_fails_the_call_and_leaves_nothing(
    fake_store: EventStore, s3: Any, tmp_path: Path, make_raster: RasterFactory, part: str
) -> None:
    """A part object is read as an array without running anything in it (no pickles) and checked against its
    window: anything else fails the call, with no output and no part left."""
    settings, call_id = planned(fake_store, s3, make_raster)
    assert drain_queue(fake_store, settings, limit=9) == 9  # every tile; the fan-in waits in the queue
    hostile = io.BytesIO()
    value = np.array([{"a": 1}], dtype=object) if part == "pickled" else np.zeros((1, 3, 3), "float32")
    np.save(hostile, value, allow_pickle=True)
    s3.put_object(Bucket=BUCKET, Key=f"{PARTS_PREFIX}tiles/{call_id}/tile-0.npy", Body=hostile.getvalue())

    drain_queue(fake_store, settings)

    state = fake_store.call_state(call_id)
    assert (state.status, state.error_code) == ("failed", "tiles.invalid_part")
    assert "tile-0.npy" in state.error_message and "Traceback" not in state.error_message
    assert listed(s3) == [f"{PREFIX}/src.tif"]
