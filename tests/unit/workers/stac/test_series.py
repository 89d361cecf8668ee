"""`stac_zonal_series` against the real STAC API over the Sentinel-2-like fixture: each zone's mean and count per
date equal to NumPy's over the day's scenes (read directly from the fixture's files, the first in the result's
order on top, clouds and nodata left out), and bad zones named."""

from pathlib import Path

import geopandas
import numpy as np
import pytest
import shapely
from affine import Affine

from schemas.tools.stac import StacZonalSeriesArgs
from tests.stac.catalog import SentinelCatalog
from tests.stac.scenes import COLLECTION, DATES
from tests.unit.workers.stac.test_composite import CLOUDS, settings_for, warped
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.stac.series import zonal_series

ZONES = {
    "overlap": (608_400.0, 5_151_200.0, 609_600.0, 5_153_200.0),  # under the three tiles
    "west": (600_800.0, 5_157_000.0, 602_400.0, 5_159_000.0),  # tile 0 only, over its water
    "east": (615_000.0, 5_155_000.0, 617_000.0, 5_157_000.0),  # tile 1 only
}


def series_args(catalog: SentinelCatalog, zones: str, **extra: object) -> StacZonalSeriesArgs:
    search = {"catalog": catalog.api, "collections": [COLLECTION], "bbox": [16.2, 46.4, 16.6, 46.6]}
    args = {
        "search": search,
        "asset": "B08",
        "zones": zones,
        "id_field": "name",
        "mask": {"asset": "SCL", "drop": CLOUDS},
    }
    return StacZonalSeriesArgs.model_validate(args | extra)


def expected(catalog: SentinelCatalog, box: tuple[float, ...], items: list[str]) -> tuple[float | None, float]:
    """The zone's mean and count of valid pixels on the day's mosaic of `items` (the first on top)."""
    shape = (round((box[3] - box[1]) / 40), round((box[2] - box[0]) / 40))
    grid = {"dst_transform": Affine(40, 0, box[0], 0, -40, box[3]), "dst_crs": "EPSG:32633"}
    folders = {scene.id: scene.folder for scene in catalog.scenes}
    mosaic = np.full(shape, np.nan)
    for item in reversed(items):
        values, scl = (warped(folders[item] / f"{band}.tif", shape, grid) for band in ("B08", "SCL"))
        mosaic = np.where((values != 0) & (scl != 0) & ~np.isin(scl, CLOUDS), values, mosaic)
    count = float(np.count_nonzero(~np.isnan(mosaic)))
    return (float(np.nanmean(mosaic)) if count else None), count


def test_each_zones_mean_and_count_per_date_equal_numpys(catalog: SentinelCatalog, tmp_path: Path) -> None:
    shapes = [shapely.box(*box) for box in ZONES.values()]
    geopandas.GeoDataFrame({"name": list(ZONES)}, geometry=shapes, crs="EPSG:32633").to_file(tmp_path / "z.gpkg")
    ctx = JobContext(call_id="s", roots=[tmp_path], settings=settings_for(catalog, tmp_path))

    result = zonal_series(series_args(catalog, "z.gpkg"), ctx)

    assert result.dates == [date[:10] for date in DATES] and result.crs == "EPSG:32633"
    assert [(row.id, row.date) for row in result.rows] == [(z, d) for d in result.dates for z in ZONES]
    for row in result.rows:
        assert len(row.items) == 3 and all(item.endswith(row.date.replace("-", "")) for item in row.items)
        mean, count = expected(catalog, ZONES[str(row.id)], row.items)
        assert row.count == pytest.approx(count, abs=1e-6), row
        assert (row.mean is None) == (mean is None) and (mean is None or row.mean == pytest.approx(mean, rel=1e-6))
    full = {name: (box[2] - box[0]) * (box[3] - box[1]) / 1600 for name, box in ZONES.items()}
    assert any(row.count < full[str(row.id)] / 2 for row in result.rows)  # a zone mostly under a cloud that day
    assert any(row.count == full[str(row.id)] for row in result.rows)


def test_zones_of_points_are_refused_naming_zones(catalog: SentinelCatalog, tmp_path: Path) -> None:
    points = geopandas.GeoDataFrame({"name": ["p"]}, geometry=[shapely.Point(608_500, 5_152_000)], crs="EPSG:32633")
    points.to_file(tmp_path / "p.gpkg")
    ctx = JobContext(call_id="p", roots=[tmp_path], settings=settings_for(catalog, tmp_path))

    with pytest.raises(JobFailed) as failed:
        zonal_series(series_args(catalog, "p.gpkg"), ctx)

    assert (failed.value.code, failed.value.field) == ("geometry.unsupported", "zones")
