"""Job `zonal_stats`: figures against numpy over the same array, weighted by coverage fractions from shapely areas."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio
import pytest
import rasterio
import shapely
from affine import Affine
from pydantic import ValidationError

from schemas.tools.analysis import ZonalStatsArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.analysis import zonal_stats

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]
NODATA = -9999.0


def weights(polygon: shapely.Geometry, transform: Affine, shape: tuple[int, int]) -> np.ndarray:
    """Share of each pixel's area inside `polygon`, from shapely intersections (independent of exactextract)."""
    rows, cols = np.mgrid[0 : shape[0], 0 : shape[1]]
    left, top = transform * (cols, rows)
    right, bottom = transform * (cols + 1, rows + 1)
    boxes = shapely.box(left, bottom, right, top)
    return shapely.area(shapely.intersection(boxes, polygon)) / shapely.area(boxes)


def weighted_quantile(values: np.ndarray, ws: np.ndarray, q: float) -> float:
    """The weighted percentile that interpolates between ordered values at s_k = k·w_k + (n-1)·W_(k-1) (the
    definition exactextract documents for `median`/`quantile`), written out in numpy."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], ws[order]
    n, before = len(v), np.concatenate([[0.0], np.cumsum(w)[:-1]])
    s = np.arange(n) * w + (n - 1) * before
    s[0] = 0.0
    return float(np.interp(q * (n - 1) * np.sum(w), s, v))


def expected(data: np.ndarray, w: np.ndarray, nodata: float) -> dict[str, float]:
    keep = (w > 1e-9) & (data != nodata)  # not the slivers float noise leaves along shared pixel edges
    values, ws = data[keep].astype("float64"), w[keep]
    mean = np.sum(values * ws) / np.sum(ws)
    areas = {v: np.sum(ws[values == v]) for v in np.unique(values)}
    return {
        "count": np.sum(ws),
        "sum": np.sum(values * ws),
        "mean": mean,
        "min": values.min(),
        "max": values.max(),
        "std": np.sqrt(np.sum(ws * (values - mean) ** 2) / np.sum(ws)),
        "median": weighted_quantile(values, ws, 0.5),
        "majority": max(areas, key=lambda v: areas[v]),
    }


@pytest.fixture
def dem(make_raster: RasterFactory) -> tuple[np.ndarray, Affine]:
    """An odd-sized grid of distinct values in EPSG:4326 with a nodata block."""
    rng = np.random.default_rng(32)
    data = rng.normal(100.0, 20.0, (37, 53)).astype("float32")
    data[:5, :7] = NODATA
    path = make_raster(data=data, nodata=NODATA, crs="EPSG:4326")
    with rasterio.open(path) as src:
        return data, src.transform


def test_stats_per_polygon_agree_with_coverage_weighted_numpy(
    dem: tuple[np.ndarray, Affine], make_vector: VectorFactory, ctx: JobContext
) -> None:
    """Issue 32: partial pixels weigh by their covered share; nodata pixels count for nothing; geographic CRS."""
    data, transform = dem
    zones = [
        shapely.box(10.003, 49.81, 10.127, 49.957),  # cuts pixels, overlaps the nodata block
        shapely.Polygon([(10.2, 49.7), (10.45, 49.75), (10.3, 49.9)]),  # a triangle: every edge cuts pixels
        shapely.box(10.1, 49.65, 10.2, 49.75),  # on pixel edges: whole pixels only
    ]
    make_vector("zones.gpkg", zones)

    result = zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", id_field="name"), ctx)

    assert [f.id for f in result.features] == ["f0", "f1", "f2"]
    assert not result.reprojected
    for zone, got in zip(zones, result.features, strict=True):
        want = expected(data, weights(zone, transform, data.shape), NODATA)
        for name, value in want.items():
            if name == "majority":  # every value is distinct here: see the class raster's test
                continue
            assert getattr(got, name) == pytest.approx(value, rel=1e-6), name


def test_majority_is_the_value_covering_most_area(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext
) -> None:
    classes = np.ones((41, 29), dtype="uint8")
    classes[10:30, 5:12] = 3  # 140 pixels, partly outside the zone
    classes[12:20, 14:26] = 7  # 96 pixels, all inside
    classes[0:3, :] = 0  # nodata
    path = make_raster("classes.tif", data=classes, dtype="uint8", nodata=0, crs="EPSG:4326")
    with rasterio.open(path) as src:
        transform = src.transform
    zone = shapely.box(10.0805, 49.5, 10.2903, 49.8955)
    make_vector("zones.gpkg", [zone])

    got = zonal_stats(ZonalStatsArgs(uri="classes.tif", zones="zones.gpkg", stats=["majority", "count"]), ctx)

    want = expected(classes, weights(zone, transform, classes.shape), 0)
    assert (got.features[0].majority, got.features[0].count) == (want["majority"], pytest.approx(want["count"]))


def test_unweighted_counts_every_touched_pixel(
    dem: tuple[np.ndarray, Affine], make_vector: VectorFactory, ctx: JobContext
) -> None:
    data, transform = dem
    zone = shapely.box(10.0155, 49.8155, 10.0845, 49.8845)
    make_vector("zones.gpkg", [zone])

    got = zonal_stats(
        ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", coverage_weight="none", stats=["count", "mean"]), ctx
    ).features[0]

    touched = weights(zone, transform, data.shape) > 0
    values = data[touched & (data != NODATA)].astype("float64")
    assert (got.count, got.mean, got.min) == (pytest.approx(values.size), pytest.approx(values.mean()), None)


def test_zones_in_another_crs_are_reprojected(
    dem: tuple[np.ndarray, Affine], make_vector: VectorFactory, ctx: JobContext
) -> None:
    data, transform = dem
    zone = shapely.box(10.21, 49.71, 10.39, 49.83)
    from pyproj import Transformer

    to_mercator = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    make_vector("zones.gpkg", [shapely.box(*to_mercator.transform_bounds(*zone.bounds))], crs="EPSG:3857")

    result = zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", stats=["mean", "count"]), ctx)

    assert result.reprojected and result.zones_crs is not None and "3857" in result.zones_crs
    want = expected(data, weights(zone, transform, data.shape), NODATA)
    assert result.features[0].mean == pytest.approx(want["mean"], rel=1e-4)
    assert result.features[0].count == pytest.approx(want["count"], rel=1e-3)


def test_zone_outside_the_raster_or_on_nodata_has_no_figures(
    dem: tuple[np.ndarray, Affine], make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_vector("zones.gpkg", [shapely.box(20, 20, 21, 21), shapely.box(10.0, 49.96, 10.05, 50.0)])

    features = zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg"), ctx).features

    for f in features:
        assert (f.count, f.mean, f.majority) == (0.0, None, None)


def test_written_as_a_layer_with_the_zones_and_their_figures(
    dem: tuple[np.ndarray, Affine], make_vector: VectorFactory, ctx: JobContext, tmp_path: Path
) -> None:
    data, transform = dem
    zones = [shapely.box(10.203, 49.702, 10.297, 49.797), shapely.box(10.313, 49.714, 10.4, 49.8)]
    make_vector("zones.gpkg", zones)

    result = zonal_stats(
        ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", output="zs.gpkg", stats=["mean", "max"]), ctx
    )

    assert result.features == [] and result.output is not None
    _, _, wkb, columns = pyogrio.raw.read(tmp_path / "zs.gpkg")
    meta = pyogrio.read_info(tmp_path / "zs.gpkg")
    assert list(meta["fields"]) == ["id", "name", "zs_mean", "zs_max"]
    for zone, mean, top in zip(zones, columns[2], columns[3], strict=True):
        want = expected(data, weights(zone, transform, data.shape), NODATA)
        assert (mean, top) == (pytest.approx(want["mean"], rel=1e-6), want["max"])
    assert [g.equals(z) for g, z in zip(shapely.from_wkb(wkb), zones, strict=True)] == [True, True]
    assert not list(tmp_path.glob(".*partial*"))


def test_errors_name_the_field(dem: tuple[np.ndarray, Affine], make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("zones.gpkg")
    with pytest.raises(JobFailed) as bad_band:
        zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", band=2), ctx)
    with pytest.raises(JobFailed) as bad_id:
        zonal_stats(ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", id_field="nope"), ctx)
    with pytest.raises(JobFailed) as bad_zones:
        zonal_stats(ZonalStatsArgs(uri="src.tif", zones="missing.gpkg"), ctx)
    make_vector("points.gpkg", [shapely.Point(10.1, 49.9)])
    with pytest.raises(JobFailed) as points:
        zonal_stats(ZonalStatsArgs(uri="src.tif", zones="points.gpkg"), ctx)
    with pytest.raises(ValidationError) as bad_stat:
        ZonalStatsArgs(uri="src.tif", zones="zones.gpkg", stats=["mode"])
    assert (bad_band.value.field, bad_id.value.field, bad_zones.value.field) == ("band", "id_field", "zones")
    assert (points.value.code, points.value.field) == ("geometry.unsupported", "zones")
    assert bad_stat.value.errors()[0]["loc"][0] == "stats"


def test_a_zones_file_gdal_cannot_read_is_named_as_zones(dem: tuple[np.ndarray, Affine], ctx: JobContext) -> None:
    (ctx.roots[0] / "broken.gpkg").write_text("not a GeoPackage")

    with pytest.raises(JobFailed) as broken:
        zonal_stats(ZonalStatsArgs(uri="src.tif", zones="broken.gpkg"), ctx)
    with pytest.raises(JobFailed) as raster:
        zonal_stats(ZonalStatsArgs(uri="src.tif", zones="src.tif"), ctx)

    assert (broken.value.code, broken.value.field) == ("gdal.not_geospatial", "zones")
    assert broken.value.message.startswith("zones: 'broken.gpkg'")
    assert (raster.value.field, raster.value.message.split(":")[0]) == ("zones", "zones")
