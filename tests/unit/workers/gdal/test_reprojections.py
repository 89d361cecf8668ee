"""Every input a tool moves into another CRS is said in its result (`reprojected`: the argument, from which CRS to
which) and at the end of its summary; and `zonal_stats` returns only the statistics asked for."""

from collections.abc import Callable
from pathlib import Path

import pytest
import shapely
from pyproj import Transformer

from schemas.tools.analysis import VectorRasterizeArgs, ZonalStatsArgs
from schemas.tools.raster_ops import RasterClipArgs
from schemas.tools.vector import VectorClipArgs
from workers.jobkit.context import JobContext
from workers.tools.analysis import vector_rasterize, zonal_stats
from workers.tools.raster_ops import raster_clip
from workers.tools.vector import vector_clip

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]
TO_UTM = Transformer.from_crs("EPSG:4326", "EPSG:32633", always_xy=True)
TO_WGS84 = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
UTM_BOX = (501_000.0, 5_535_000.0, 505_000.0, 5_539_000.0)
"""Inside the 32633 test raster (500 000–509 600 east, 5 533 600–5 540 000 north)."""


def wgs84_box() -> shapely.Polygon:
    return shapely.box(*TO_WGS84.transform_bounds(*UTM_BOX))


def said(result: object) -> list[dict[str, str]]:
    return [move.model_dump() for move in result.reprojected]  # type: ignore[attr-defined]


UTM_FROM_WGS84 = {"from_crs": "EPSG:4326", "to_crs": "EPSG:32633"}


def test_zonal_stats_says_the_zones_were_reprojected(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_raster(crs="EPSG:32633")
    make_vector("zones.gpkg", [wgs84_box()])

    result = zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", stats=["mean"]), ctx)

    assert said(result) == [{"input": "zones", **UTM_FROM_WGS84}]
    assert result.summary().endswith("; zones reprojected from EPSG:4326 to EPSG:32633")


def test_zonal_stats_in_the_rasters_crs_reprojects_nothing(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_raster(crs="EPSG:32633")
    make_vector("zones.gpkg", [shapely.box(*UTM_BOX)], crs="EPSG:32633")

    result = zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", stats=["mean"]), ctx)

    assert result.reprojected == [] and "reprojected" not in result.summary()


def test_zonal_stats_returns_only_the_statistics_asked_for(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_raster(crs="EPSG:32633")
    outside = shapely.box(600_000, 5_000_000, 600_100, 5_000_100)
    make_vector("zones.gpkg", [shapely.box(*UTM_BOX), outside], crs="EPSG:32633")

    result = zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", stats=["mean", "count"]), ctx)

    inside, missed = result.model_dump(mode="json")["features"]
    assert set(inside) == set(missed) == {"id", "mean", "count"}
    assert inside["mean"] is not None and missed == {"id": 1, "mean": None, "count": 0.0}


def test_vector_clip_says_the_mask_was_reprojected(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("roads.gpkg", [shapely.box(*UTM_BOX).buffer(500)], crs="EPSG:32633")
    make_vector("mask.gpkg", [wgs84_box()])

    result = vector_clip(VectorClipArgs(uri="roads.gpkg", output="clipped.gpkg", mask="mask.gpkg"), ctx)

    assert said(result) == [{"input": "mask", **UTM_FROM_WGS84}]
    assert result.summary().endswith("; mask reprojected from EPSG:4326 to EPSG:32633")


def test_raster_clip_says_the_mask_or_the_bounds_were_reprojected(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_raster(crs="EPSG:32633")
    make_vector("mask.gpkg", [wgs84_box()])
    box = list(TO_WGS84.transform_bounds(*UTM_BOX))

    by_mask = raster_clip(RasterClipArgs(uri="src.tif", output="a.tif", mask="mask.gpkg"), ctx)
    by_box = raster_clip(RasterClipArgs(uri="src.tif", output="b.tif", bounds=box, bounds_crs="EPSG:4326"), ctx)
    in_place = raster_clip(RasterClipArgs(uri="src.tif", output="c.tif", bounds=list(UTM_BOX)), ctx)

    assert said(by_mask) == [{"input": "mask", **UTM_FROM_WGS84}]
    assert said(by_box) == [{"input": "bounds", **UTM_FROM_WGS84}]
    assert in_place.reprojected == []
    assert by_mask.summary().endswith("; mask reprojected from EPSG:4326 to EPSG:32633")


def test_vector_rasterize_says_the_layer_was_reprojected_onto_like(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_raster("grid.tif", crs="EPSG:32633")
    make_vector("fields.gpkg", [wgs84_box()])

    result = vector_rasterize(
        VectorRasterizeArgs(uri="fields.gpkg", output="burnt.tif", like="grid.tif", burn_value=1), ctx
    )

    assert said(result) == [{"input": "uri", **UTM_FROM_WGS84}] and result.burned_pixels > 0
    assert result.summary().endswith("; uri reprojected from EPSG:4326 to EPSG:32633")
