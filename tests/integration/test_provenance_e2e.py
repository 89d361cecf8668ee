"""Provenance through the real stack with the SDK client (issue 49): clip → reproject → statistics, the record of
the last output names every input and step, a re-run writes the same sha256, and a changed input shows as drift."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import rasterio
from mcp import Client
from rasterio.transform import from_origin

from tests.integration.conftest import Stack
from tests.support import justify

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    profile = {"driver": "GTiff", "width": 64, "height": 32, "count": 1, "dtype": "float32", "crs": "EPSG:32633"}
    path = folder / "src.tif"
    with rasterio.open(path, "w", transform=from_origin(500000, 4100000, 30, 30), nodata=-9999.0, **profile) as dst:
        dst.write(np.arange(64 * 32, dtype="float32").reshape(1, 32, 64))
    return path


async def _call(client: Client, tool: str, args: dict[str, object]) -> dict:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content or {}


async def test_the_record_of_a_chain_names_every_step_a_rerun_matches_and_an_edit_is_drift(stack: Stack) -> None:
    src = _source(stack.workspace / "prov")
    bounds = [500000 + 300, 4100000 - 600, 500000 + 1500, 4100000 - 60]
    async with Client(stack.url, sampling_callback=justify) as client:
        await _call(client, "raster_clip", {"uri": "prov/src.tif", "output": "prov/clip.tif", "bounds": bounds})
        warp_args = {"uri": "prov/clip.tif", "output": "prov/warp.tif", "dst_crs": "EPSG:3857", "resampling": "nearest"}
        await _call(client, "raster_reproject", warp_args)
        await _call(client, "raster_stats", {"uri": "prov/warp.tif"})
        record = await _call(client, "provenance", {"path": "prov/warp.tif", "write_beside": True})
        resource = await client.read_resource("provenance://prov/warp.tif")
        again = await _call(client, "rerun", {"path": "prov/warp.tif", "folder": "prov/again"})
        src.write_bytes(src.read_bytes()[:-4] + b"\0\0\0\1")
        drifted = await _call(client, "provenance", {"path": "prov/warp.tif"})

    clip, warp = (stack.workspace / "prov" / name for name in ("clip.tif", "warp.tif"))
    assert [s["tool"] for s in record["steps"]] == ["raster_clip", "raster_reproject"]
    inputs = {(i["path"], i["sha256"]) for s in record["steps"] for i in s["inputs"]}
    assert {p for p, _ in inputs} == {str(src), str(clip)} and (str(clip), _sha(clip)) in inputs
    assert record["steps"][1]["outputs"][0]["sha256"] == _sha(warp) and record["drift"] == []
    assert record["steps"][1]["versions"]["gdal"] == rasterio.__gdal_version__
    assert f"file:{warp}#{_sha(warp)[:16]}" in record["prov"]["entity"]
    assert json.loads((stack.workspace / "prov" / "warp.tif.prov.json").read_text()) == record["prov"]
    assert json.loads(resource.contents[0].text)["steps"] == record["steps"]
    assert again["same"] and [c["same"] for c in again["calls"]] == [True, True]
    assert _sha(stack.workspace / "prov" / "again" / "warp.tif") == _sha(warp)
    assert [(d["path"], d["role"], d["current"]) for d in drifted["drift"]] == [(str(src), "input", _sha(src))]
