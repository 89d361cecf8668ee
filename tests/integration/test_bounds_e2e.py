"""The huge inputs end to end (real Redis, Celery workers, the gateway over HTTP), at the default bounds: each is
refused or stopped with a `limit.*` error naming the argument and the `GEOGATE_LIMIT_*` variable to raise, nothing
lands at its output, and the same worker answers a `ping` right after.

The stack plans tiles from 65,536 pixels in windows of 256 (`GEOGATE_TILE_MIN_PIXELS`, `GEOGATE_TILE_SIZE`), so
the 1 × 100,000,000 raster that once planned 48,829 tiles goes through the tile planner.
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.huge_inputs import ORIGIN, checkerboard, layer, pixel, sparse_raster, square, zones
from tests.integration.conftest import start_gateway, start_worker, stop
from tests.support import free_port, justify, redis_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CALL_S = 120
"""Longest a refused call may take before the test fails (a loaded 2-core machine; most take well under 5 s)."""


@dataclass
class BoundsStack:
    url: str
    workspace: Path
    worker: str
    """`hostname:pid` of the one pool process, as it answered a `ping` before any huge call."""


async def ping(url: str) -> dict[str, Any]:
    async with Client(url) as client:
        with anyio.fail_after(30):
            pong = await client.call_tool("ping", {})
    assert not pong.is_error, pong.content
    return pong.structured_content


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def bounds_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoundsStack]:
    workdir = tmp_path_factory.mktemp("bounds")
    workspace = workdir / "workspace"
    workspace.mkdir()
    make_inputs(workspace)
    with redis_server(workdir) as redis_url:
        port = free_port()
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "GEOGATE_WORKSPACES": str(workspace),
            "GEOGATE_PORT": str(port),
            "GEOGATE_TILE_SIZE": "256",
            "GEOGATE_TILE_MIN_PIXELS": "65536",
        }
        env = {k: v for k, v in env.items() if not k.startswith("GEOGATE_LIMIT_")}  # the defaults, whatever the shell
        worker = start_worker(env, concurrency=1)  # one process: the ping after each call is answered by the same
        gateway = start_gateway(env, port)
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            yield BoundsStack(url, workspace, anyio.run(ping, url)["worker"])
        finally:
            stop(gateway)
            stop(worker)


def make_inputs(root: Path) -> None:
    """Every huge input, a few MB on disk in all."""
    left, top = ORIGIN
    sparse_raster(root / "thin.tif", 100_000_000, 1)
    sparse_raster(root / "sparse.tif", 60_000, 60_000)
    checkerboard(root / "board.tif", 1000)
    checkerboard(root / "board-f.tif", 1000, dtype="float32")
    pixel(root / "west.tif", left, top)
    pixel(root / "east.tif", left + 100_000.0, top - 100_000.0)
    layer(root / "area.gpkg", [square(100_000.0)])
    layer(root / "zones.gpkg", zones(20_000))


HUGE_CALLS: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "terrain-of-a-thin-raster": (
        "raster_terrain", {"uri": "thin.tif", "product": "slope", "output": "t.tif"}, "limit.tiles", "uri"),
    "rasterize-at-a-fine-resolution": (
        "vector_rasterize", {"uri": "area.gpkg", "output": "r.tif", "resolution": [1.0, 1.0], "burn_value": 1},
        "limit.output_bytes", "resolution"),
    "clip-of-a-sparse-raster": (
        "raster_clip", {"uri": "sparse.tif", "output": "c.tif", "mask": "area.gpkg"}, "limit.output_bytes", "mask"),
    "mosaic-of-far-apart-pixels": (
        "raster_mosaic", {"inputs": ["west.tif", "east.tif"], "output": "m.tif", "resampling": "nearest"},
        "limit.output_bytes", "inputs"),
    "polygonize-a-checkerboard": (
        "raster_polygonize", {"uri": "board.tif", "output": "p.gpkg"}, "limit.features", "uri"),
    "contours-of-a-checkerboard": (
        "raster_contours", {"uri": "board-f.tif", "output": "l.gpkg", "levels": [0.5]}, "limit.features", "levels"),
    "zonal-stats-of-many-zones": (
        "zonal_stats", {"uri": "board.tif", "zones": "zones.gpkg"}, "limit.zones", "zones"),
    "stats-of-a-sparse-raster": (
        "raster_stats", {"uri": "sparse.tif"}, "limit.output_bytes", "uri"),
}  # fmt: skip
"""Name → (tool, arguments, error code, the argument it names)."""


@pytest.mark.parametrize("name", sorted(HUGE_CALLS))
async def test_a_huge_input_is_refused_naming_its_argument_and_setting_and_the_worker_answers_after(
    bounds_stack: BoundsStack, name: str
) -> None:
    tool, args, code, field = HUGE_CALLS[name]
    before = sorted(p.name for p in bounds_stack.workspace.iterdir())

    async with Client(bounds_stack.url, sampling_callback=justify) as client:
        with anyio.fail_after(CALL_S):
            result = await client.call_tool(tool, args)
    pong = await ping(bounds_stack.url)

    error = result.structured_content["error"]
    assert result.is_error and (error["code"], error["field"]) == (code, field), error
    assert "GEOGATE_LIMIT_" + code.removeprefix("limit.").upper() in error["message"]
    assert sorted(p.name for p in bounds_stack.workspace.iterdir()) == before  # no output, no parts folder
    assert pong["worker"] == bounds_stack.worker  # the same pool process: the call did not take it down
