"""Issue 32 part B tools through the real stack with the SDK client: a preview arrives as image content, zonal
statistics come back per feature."""

import base64
import json

import numpy as np
import pyogrio.raw
import pytest
import rasterio
import shapely
from mcp import Client
from mcp.types import ImageContent
from rasterio.io import MemoryFile

from tests.integration.conftest import Stack

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning"),  # the PNG read back
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_raster_preview_is_image_content_with_a_png_of_the_stated_size(stack: Stack, mode: str) -> None:
    async with Client(stack.url, mode=mode) as client:
        result = await client.call_tool("raster_preview", {"uri": "dem.tif", "max_size": 48, "colormap": "terrain"})

    assert not result.is_error, result.content
    images = [b for b in result.content if isinstance(b, ImageContent)]
    assert [b.mime_type for b in images] == ["image/png"]
    figures = result.structured_content
    with MemoryFile(base64.b64decode(images[0].data)) as mem, mem.open() as png:
        assert (png.driver, png.width, png.height) == ("PNG", figures["width"], figures["height"])
        assert png.count == 4  # RGBA: the colour ramp plus the nodata mask
    data = np.arange(64 * 32, dtype="float64")  # dem.tif's values (tests/integration/conftest.py)
    assert (figures["width"], figures["height"], figures["colormap"]) == (48, 24, "terrain")
    assert figures["stretch_min"][0] >= data.min() and figures["stretch_max"][0] <= data.max()
    assert figures["stretch_min"][0] < figures["stretch_max"][0]


async def test_metadata_resources_check_the_cog_layout_and_show_a_preview(stack: Stack) -> None:
    async with Client(stack.url) as client:
        listed = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        cog = json.loads((await client.read_resource("metadata://dem.tif/cog")).contents[0].text)
        picture = (await client.read_resource("metadata://dem.tif/preview?mode=hillshade&max_size=40")).contents[0]

    assert {"metadata://{+file}/cog", "metadata://{+file}/preview{?mode,max_size}"} <= listed
    # dem.tif is a 64×32 striped GeoTIFF: small enough that rio-cogeo finds no error, not tiled, no overviews
    assert (cog["valid"], cog["tiled"], cog["overviews"], cog["width"]) == (True, False, [], 64)
    assert picture.mime_type == "image/png"
    with MemoryFile(base64.b64decode(picture.blob)) as mem, mem.open() as png:
        assert (png.width, png.height) == (40, 20)


async def test_zonal_stats_per_feature_through_a_worker(stack: Stack) -> None:
    with rasterio.open(stack.workspace / "dem.tif") as src:
        data, transform = src.read(1).astype("float64"), src.transform
    # two zones on whole pixels: rows 2..9 x cols 4..13, rows 20..31 x cols 50..63
    boxes = [(4, 2, 14, 10), (50, 20, 64, 32)]
    zones = [shapely.box(*(transform * (c0, r1)), *(transform * (c1, r0))) for c0, r0, c1, r1 in boxes]
    wkb = np.array(shapely.to_wkb(zones), dtype=object)
    names = np.array(["north", "south"], dtype=object)
    pyogrio.raw.write(
        stack.workspace / "zones_e2e.gpkg", wkb, [names], ["name"], geometry_type="Polygon", crs="EPSG:32633"
    )

    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client(stack.url) as client:
        result = await client.call_tool(
            "zonal_stats",
            {"uri": "dem.tif", "zones": "zones_e2e.gpkg", "id_field": "name"},
            progress_callback=on_progress,
        )

    assert not result.is_error, result.content
    assert "zonal statistics: 2/2 zones" in progress
    features = result.structured_content["features"]
    for (c0, r0, c1, r1), got, name in zip(boxes, features, ["north", "south"], strict=True):
        block = data[r0:r1, c0:c1]
        assert got["id"] == name
        assert (got["count"], got["min"], got["max"]) == (block.size, block.min(), block.max())
        assert got["mean"] == pytest.approx(block.mean()) and got["std"] == pytest.approx(block.std())
