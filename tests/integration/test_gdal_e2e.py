"""GDAL tools and resources end to end over real HTTP: reproject values, progress, cancel, SIGKILL, overwrite."""

import hashlib
import json
import os
import signal
from pathlib import Path

import anyio
import numpy as np
import pytest
import rasterio
from affine import Affine
from mcp import Client, MCPError
from rasterio.warp import transform_bounds

from geogate.calls.store import EventStore
from schemas.ids import call_aggregate
from tests.integration.conftest import Stack
from tests.support import justify, wait_for_log

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ERAS = ["auto", "legacy"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_square(path: Path, size: int) -> Path:
    """A `size`×`size` uint8 GeoTIFF in EPSG:4326 (tiled), with a pattern so the warp has work to do."""
    if not path.exists():
        rows, cols = np.mgrid[0:size, 0:size]
        data = ((rows * 7 + cols * 3) % 251).astype("uint8")[np.newaxis]
        profile = {"driver": "GTiff", "width": size, "height": size, "count": 1, "dtype": "uint8", "crs": "EPSG:4326"}
        profile |= {"transform": Affine(0.001, 0, 10.0, 0, -0.001, 50.0), "tiled": True, "blockxsize": 256}
        with rasterio.open(path, "w", blockysize=256, **profile) as dst:
            dst.write(data)
    return path


@pytest.fixture(scope="module")
def medium(stack: Stack) -> str:
    """4096² pixels: a bilinear warp to EPSG:3857 spans several 4 Mpx strips, so several progress events."""
    return write_square(stack.workspace / "medium.tif", 4096).name


@pytest.fixture(scope="module")
def large(stack: Stack) -> str:
    """6144² pixels: a lanczos warp takes seconds, long enough to kill its worker mid-job."""
    return write_square(stack.workspace / "large.tif", 6144).name


@pytest.fixture(scope="module")
def huge(stack: Stack) -> str:
    """8192² pixels: a lanczos warp takes several seconds, far longer than the client's 1 s read timeout."""
    return write_square(stack.workspace / "huge.tif", 8192).name


def client(stack: Stack, mode: str = "auto") -> Client:
    """The SDK client, able to answer the preflight gate by sampling."""
    return Client(stack.url, mode=mode, sampling_callback=justify)


def reproject_args(uri: str, output: str, **extra: object) -> dict[str, object]:
    return {"uri": uri, "output": output, "dst_crs": "EPSG:3857", "resampling": "lanczos", **extra}


def call_for_output(store: EventStore, output: str) -> str | None:
    """The call id of the newest `raster_reproject` request writing `output` (from the log)."""
    for stored in reversed(store.read("calls", count=None)):
        data = stored.event.data
        if stored.event.type == "tool.requested" and data.tool == "raster_reproject" and data.args["output"] == output:
            return data.call_id
    return None


def event_types(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


def partials(workspace: Path, output: str) -> list[Path]:
    """Temporary files `atomic_output` writes beside `output` (`.<stem>.<id>.partial<suffix>`)."""
    stem = Path(output).stem
    return sorted(workspace.glob(f".{stem}.*.partial*"))


@pytest.mark.parametrize("mode", ERAS)
async def test_reprojected_bounds_agree_with_transform_bounds_and_the_file(stack: Stack, mode: str) -> None:
    output = f"dem-4326-{mode}.tif"
    async with client(stack, mode) as session:
        args = {"uri": "dem.tif", "output": output, "dst_crs": "EPSG:4326", "resampling": "bilinear", "overwrite": True}
        result = await session.call_tool("raster_reproject", args)

    assert not result.is_error, result.content
    got = result.structured_content
    with rasterio.open(stack.workspace / "dem.tif") as src:
        expected = transform_bounds(src.crs, "EPSG:4326", *src.bounds)
    pixel = (got["transform"][0], -got["transform"][4])
    for side, (ours, theirs) in enumerate(zip(got["bounds"], expected, strict=True)):
        assert abs(ours - theirs) <= pixel[side % 2], (side, ours, theirs)
    with rasterio.open(stack.workspace / output) as dst:
        assert dst.crs.to_epsg() == 4326 and (dst.width, dst.height) == (got["width"], got["height"])
        assert np.allclose(list(dst.bounds), got["bounds"])
    assert hashlib.sha256((stack.workspace / output).read_bytes()).hexdigest() == got["output"]["sha256"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_reproject_reports_progress_strip_by_strip(stack: Stack, medium: str, mode: str) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with client(stack, mode) as session:
        args = reproject_args(medium, f"medium-{mode}.tif", resampling="bilinear", overwrite=True)
        result = await session.call_tool("raster_reproject", args, progress_callback=on_progress)

    assert not result.is_error, result.content
    strips = seen[-1][1]
    assert strips is not None and strips >= 3 and len(seen) >= 3
    assert [p for p, _ in seen] == sorted(p for p, _ in seen) and seen[-1][0] == strips


@pytest.mark.parametrize("mode", ERAS)
async def test_overwrite_false_refuses_an_existing_output_naming_output(stack: Stack, mode: str) -> None:
    (stack.workspace / "taken.tif").write_bytes(b"someone else's file")
    async with client(stack, mode) as session:
        result = await session.call_tool("raster_reproject", reproject_args("dem.tif", "taken.tif"))

    error = result.structured_content["error"]
    assert result.is_error and (error["code"], error["field"]) == ("output.exists", "output")
    assert "output" in result.content[0].text and "overwrite=true" in result.content[0].text
    assert (stack.workspace / "taken.tif").read_bytes() == b"someone else's file"


async def test_a_cancelled_reproject_leaves_no_file_at_the_output_path(stack: Stack, huge: str) -> None:
    store, output = stack.store(), "huge-cancelled.tif"
    async with client(stack) as session:
        with pytest.raises(MCPError):
            await session.call_tool("raster_reproject", reproject_args(huge, output), read_timeout_seconds=1.0)

    call_id = call_for_output(store, output)
    assert call_id is not None
    wait_for_log(store, lambda: store.call_state(call_id).terminal, what="the cancelled reproject to end")
    assert store.call_state(call_id).error_code == "cancelled"
    assert "tool.cancel_requested" in event_types(store, call_id)
    assert not (stack.workspace / output).exists() and partials(stack.workspace, output) == []


def started_worker_pid(store: EventStore, call_id: str) -> int | None:
    for event in store.read_aggregate(call_aggregate(call_id)):
        if event.type == "tool.started":
            return int(event.data.worker.rsplit(":", 1)[1])
    return None


async def test_a_sigkilled_reproject_leaves_no_file_and_ends_with_exactly_one_outcome(stack: Stack, large: str) -> None:
    store, output, outcome = stack.store(), "large-killed.tif", {}

    async def call() -> None:
        async with client(stack) as session:
            outcome["result"] = await session.call_tool("raster_reproject", reproject_args(large, output))

    def started() -> bool:
        call_id = call_for_output(store, output)
        return call_id is not None and started_worker_pid(store, call_id) is not None

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.to_thread.run_sync(lambda: wait_for_log(store, started, what="the reproject to start"))
        call_id = call_for_output(store, output)
        os.kill(started_worker_pid(store, call_id), signal.SIGKILL)  # the pool process running the warp
        assert not (stack.workspace / output).exists()

    types = event_types(store, call_id)
    assert types.count("tool.succeeded") + types.count("tool.failed") == 1, types
    result = outcome["result"]
    if types.count("tool.succeeded"):  # redelivered and finished: the file is the whole, final output
        digest = hashlib.sha256((stack.workspace / output).read_bytes()).hexdigest()
        assert not result.is_error and digest == result.structured_content["output"]["sha256"]
        assert types.count("tool.started") == 2 and partials(stack.workspace, output) == []
    else:
        assert result.is_error and not (stack.workspace / output).exists()


def body(read: object) -> str:
    return read.contents[0].text  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ERAS)
async def test_resources_list_and_read_catalog_metadata_and_reference(stack: Stack, mode: str) -> None:
    async with client(stack, mode) as session:
        listed = {str(r.uri) for r in (await session.list_resources()).resources}
        templates = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
        catalog = json.loads(body(await session.read_resource("catalog://workspace/all")))
        rasters = json.loads(body(await session.read_resource("catalog://workspace/raster?extensions=tif")))
        utm = json.loads(body(await session.read_resource("catalog://workspace/by-crs/32633")))
        summary = json.loads(body(await session.read_resource("catalog://workspace/summary")))
        fmt = json.loads(body(await session.read_resource("metadata://points.gpkg/format")))
        meta = json.loads(body(await session.read_resource("metadata://dem.tif/raster")))
        stats = json.loads(body(await session.read_resource("metadata://dem.tif/statistics")))
        glossary = body(await session.read_resource("reference://glossary/geospatial/nodata"))

    assert {"catalog://workspace/all", "catalog://workspace/summary", "reference://crs/common"} <= listed
    assert {"metadata://{+file}/raster", "reference://resampling/guide/{method}"} <= templates
    relative = {e["relative"]: e for e in catalog["entries"]}
    assert {"dem.tif", "points.gpkg"} <= set(relative) and relative["dem.tif"]["crs"] == "EPSG:32633"
    assert {e["kind"] for e in rasters["entries"]} == {"raster"} and "dem.tif" in {
        e["relative"] for e in utm["entries"]
    }
    assert summary["by_kind"]["vector"] >= 1 and summary["total"] == catalog["total"]
    assert (fmt["kind"], fmt["driver"], fmt["layers"]) == ("vector", "GPKG", ["points"])
    assert (meta["width"], meta["height"]) == (64, 32)
    data = np.arange(64 * 32, dtype="float32")
    assert stats["band_stats"][0]["mean"] == pytest.approx(float(data.mean()))
    assert glossary.startswith("# Geospatial glossary") and "## nodata" in glossary


async def test_a_resource_for_a_missing_file_is_an_error_naming_uri(stack: Stack) -> None:
    async with client(stack) as session:
        with pytest.raises(MCPError, match=r"uri: 'missing\.tif' does not exist"):
            await session.read_resource("metadata://missing.tif/raster")
