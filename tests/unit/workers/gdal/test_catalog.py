"""Jobs `catalog_scan` and `dataset_format`: what the catalog and metadata resources read, on generated files."""

from pathlib import Path

import geopandas as gpd
import pytest
import shapely

from schemas.tools.catalog import CatalogScanArgs, DatasetFormatArgs
from tests.unit.workers.gdal.conftest import RasterFactory, VectorFactory
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.catalog import catalog_scan, dataset_format


@pytest.fixture
def workspace(tmp_path: Path, make_raster: RasterFactory, make_vector: VectorFactory) -> Path:
    make_raster("dem.tif", crs="EPSG:32633")
    make_raster("wgs.tif", crs="EPSG:4326")
    (tmp_path / "sub").mkdir()
    make_vector("sub/parcels.gpkg", crs="EPSG:4326")
    make_vector("roads.geojson", crs="EPSG:4326", driver="GeoJSON")
    (tmp_path / "notes.txt").write_text("not geodata")
    (tmp_path / ".hidden.tif").write_bytes(b"partial")
    return tmp_path


def scan(ctx: JobContext, **args: object) -> dict[str, dict]:
    result = catalog_scan(CatalogScanArgs.model_validate(args), ctx)
    return {e.relative: e.model_dump() for e in result.entries}


def test_the_catalog_lists_rasters_and_vectors_with_driver_and_crs_and_skips_hidden_files(
    workspace: Path, ctx: JobContext
) -> None:
    entries = scan(ctx)

    assert sorted(entries) == ["dem.tif", "roads.geojson", "sub/parcels.gpkg", "wgs.tif"]
    assert (entries["dem.tif"]["kind"], entries["dem.tif"]["driver"], entries["dem.tif"]["crs"]) == (
        "raster",
        "GTiff",
        "EPSG:32633",
    )
    assert entries["sub/parcels.gpkg"]["kind"] == "vector" and entries["sub/parcels.gpkg"]["driver"] == "GPKG"
    assert ".hidden.tif" in scan(ctx, include_hidden=True)


def test_kind_subpath_extensions_and_limit_narrow_the_listing(workspace: Path, ctx: JobContext) -> None:
    assert sorted(scan(ctx, kind="raster")) == ["dem.tif", "wgs.tif"]
    assert sorted(scan(ctx, kind="vector", subpath="sub")) == ["sub/parcels.gpkg"]
    assert sorted(scan(ctx, extensions=[".geojson"])) == ["roads.geojson"]
    result = catalog_scan(CatalogScanArgs(limit=2), ctx)
    assert result.total == 2 and result.truncated


def test_the_crs_filter_compares_crss_not_strings(workspace: Path, ctx: JobContext) -> None:
    wkt_4326 = 'GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]]'  # noqa: E501
    assert sorted(scan(ctx, crs=wkt_4326)) == ["roads.geojson", "sub/parcels.gpkg", "wgs.tif"]
    assert sorted(scan(ctx, crs="EPSG:32633")) == ["dem.tif"]


def test_a_subpath_outside_the_workspace_or_a_file_is_refused_naming_subpath(workspace: Path, ctx: JobContext) -> None:
    for subpath, code in (("/etc", "path.outside_workspace"), ("dem.tif", "path.not_a_folder")):
        with pytest.raises(JobFailed) as caught:
            scan(ctx, subpath=subpath)
        assert (caught.value.code, caught.value.field) == (code, "subpath")


def test_dataset_format_tells_raster_from_vector(workspace: Path, ctx: JobContext) -> None:
    raster = dataset_format(DatasetFormatArgs(uri="dem.tif"), ctx)
    vector = dataset_format(DatasetFormatArgs(uri="sub/parcels.gpkg"), ctx)

    assert (raster.kind, raster.driver, raster.crs) == ("raster", "GTiff", "EPSG:32633")
    assert (raster.width, raster.height, raster.count) == (96, 64, 1)
    assert (vector.kind, vector.driver, vector.layers) == ("vector", "GPKG", ["parcels"])


def test_dataset_format_of_a_text_file_is_a_clear_error_naming_uri(workspace: Path, ctx: JobContext) -> None:
    with pytest.raises(JobFailed) as caught:
        dataset_format(DatasetFormatArgs(uri="notes.txt"), ctx)
    assert (caught.value.code, caught.value.field) == ("gdal.not_geospatial", "uri")


def test_links_that_lead_outside_the_workspace_are_skipped_and_links_inside_are_listed(
    workspace: Path, ctx: JobContext, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 14: the catalog never stats or opens what an escaping link points at."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.tif").write_bytes((workspace / "dem.tif").read_bytes())
    (workspace / "escape.tif").symlink_to(outside / "secret.tif")
    (workspace / "alias.tif").symlink_to(workspace / "wgs.tif")
    (workspace / "broken.tif").symlink_to(workspace / "nowhere.tif")

    entries = scan(ctx, details=True)

    assert "escape.tif" not in entries and "broken.tif" not in entries
    assert entries["alias.tif"]["crs"] == "EPSG:4326"


def test_a_geoparquet_file_is_catalogued_and_described_as_a_vector(tmp_path: Path, ctx: JobContext) -> None:
    frame = gpd.GeoDataFrame({"id": [1]}, geometry=[shapely.Point(500_000, 5_540_000)], crs="EPSG:32633")
    frame.to_parquet(tmp_path / "wells.parquet")

    entries = scan(ctx, details=True)
    found = dataset_format(DatasetFormatArgs(uri="wells.parquet"), ctx)

    entry = entries["wells.parquet"]
    assert (entry["kind"], entry["driver"], entry["crs"]) == ("vector", "Parquet", "EPSG:32633")
    assert (found.kind, found.driver, found.crs, found.layers) == ("vector", "Parquet", "EPSG:32633", ["wells"])
