"""The vector analysis tools through the real stack with the SDK client: an overlay of two layers in different
CRSs, written by a worker and described in the structured result."""

import geopandas as gpd
import pyogrio
import pytest
import shapely
from mcp import Client

from tests.integration.conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_an_overlay_through_a_worker_reprojects_the_second_layer(stack: Stack) -> None:
    left = gpd.GeoDataFrame({"name": ["a"]}, geometry=[shapely.box(500_000, 5_540_000, 500_100, 5_540_100)], crs=32633)
    right = gpd.GeoDataFrame({"name": ["b"]}, geometry=[shapely.box(500_050, 5_540_050, 500_200, 5_540_200)], crs=32633)
    left.to_file(stack.workspace / "overlay_left.gpkg")
    right.to_crs(4326).to_file(stack.workspace / "overlay_right.geojson")

    async with Client(stack.url) as client:
        result = await client.call_tool(
            "vector_overlay",
            {"uri": "overlay_left.gpkg", "other": "overlay_right.geojson", "output": "overlay_out.gpkg"},
        )

    assert not result.is_error, result.content
    got = result.structured_content
    assert (got["feature_count"], got["input_feature_counts"], got["how"]) == (1, [1, 1], "intersection")
    assert got["reprojected"] == [{"input": "other", "from_crs": "EPSG:4326", "to_crs": "EPSG:32633"}]
    written = pyogrio.read_dataframe(stack.workspace / "overlay_out.gpkg")
    assert written.columns.tolist() == ["name_1", "name_2", "geometry"]
    assert written.area[0] == pytest.approx(50 * 50, rel=1e-6)
