"""Issue 14 over real HTTP: a VRT reading outside the workspace, a folder swapped for a link, escaping links in
the catalog. Each is refused with an error naming the field, and nothing outside is read."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import Stack
from tests.mcp_http import call_tool, read_resource

pytestmark = pytest.mark.integration


@pytest.fixture
def outside(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the workspace's raster in a folder outside every root."""
    folder = tmp_path_factory.mktemp("outside")
    shutil.copy(stack.workspace / "dem.tif", folder / "secret.tif")
    return folder


@pytest.fixture(autouse=True)
def tidy(stack: Stack) -> Iterator[None]:
    """Remove what a test planted in the session's shared workspace."""
    before = set(stack.workspace.iterdir())
    yield
    for path in set(stack.workspace.iterdir()) - before:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def _vrt(source: str, relative: bool) -> str:
    return (
        '<VRTDataset rasterXSize="64" rasterYSize="32"><VRTRasterBand dataType="Float32" band="1"><SimpleSource>'
        f'<SourceFilename relativeToVRT="{int(relative)}">{source}</SourceFilename><SourceBand>1</SourceBand>'
        "</SimpleSource></VRTRasterBand></VRTDataset>"
    )


def _error(reply: object) -> dict:
    result = reply.result  # type: ignore[attr-defined]
    assert result["isError"] is True
    return result["structuredContent"]["error"]


def test_a_vrt_reading_outside_the_workspace_is_refused(stack: Stack, outside: Path, http: httpx.Client) -> None:
    (stack.workspace / "evil.vrt").write_text(_vrt(str(outside / "secret.tif"), relative=False))
    (stack.workspace / "sneaky.tif").write_text(_vrt(f"../{outside.name}/secret.tif", relative=True))
    (stack.workspace / "fine.vrt").write_text(_vrt("dem.tif", relative=True))

    evil = call_tool(http, stack.url, "raster_info", {"uri": "evil.vrt"})
    sneaky = call_tool(http, stack.url, "raster_stats", {"uri": "sneaky.tif"})
    fine = call_tool(http, stack.url, "raster_info", {"uri": "fine.vrt"})

    for reply in (evil, sneaky):
        error = _error(reply)
        assert error["code"] == "path.outside_workspace" and error["field"] == "uri"
        assert "outside the workspace" in error["message"]
    assert fine.result["structuredContent"]["driver"] == "VRT"


def test_a_folder_swapped_for_a_link_outside_is_refused(stack: Stack, outside: Path, http: httpx.Client) -> None:
    folder = stack.workspace / "swap"
    folder.mkdir()
    shutil.copy(stack.workspace / "dem.tif", folder / "secret.tif")
    before = call_tool(http, stack.url, "raster_info", {"uri": "swap/secret.tif"})
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)

    after = call_tool(http, stack.url, "raster_info", {"uri": "swap/secret.tif"})
    written = call_tool(http, stack.url, "raster_convert", {"uri": "dem.tif", "output": "swap/copy.tif"})

    assert before.result["structuredContent"]["width"] == 64
    assert _error(after)["code"] == "path.outside_workspace" and _error(after)["field"] == "uri"
    assert _error(written)["code"] == "path.outside_workspace" and _error(written)["field"] == "output"
    assert not (outside / "copy.tif").exists()


def test_the_catalog_skips_links_that_lead_outside(stack: Stack, outside: Path, http: httpx.Client) -> None:
    (stack.workspace / "escape.tif").symlink_to(outside / "secret.tif")

    reply = read_resource(http, stack.url, "catalog://workspace/raster")

    listed = {e["relative"] for e in json.loads(reply.result["contents"][0]["text"])["entries"]}
    assert "dem.tif" in listed and "escape.tif" not in listed
