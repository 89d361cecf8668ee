"""`stac_composite` against a real STAC API (stac-fastapi on pgstac) over the Sentinel-2-like fixture, its COGs
read by range requests from the fixture's server: each composite equal to a reference the test computes itself
(the fixture's files read directly, warped onto the result's grid by `rasterio.warp.reproject`, masked and reduced
with NumPy), the ranges read fewer than the files, a tiled call equal to the whole one, and bad input named."""

import warnings
from pathlib import Path

import numpy as np
import pytest
import rasterio
import shapely
from affine import Affine
from rasterio.crs import CRS
from rasterio.enums import Resampling
from rasterio.warp import reproject
from rio_cogeo.cogeo import cog_validate

from geogate.calls.store import EventStore
from geogate.settings import Settings, StacSettings
from schemas.tools.stac import StacCompositeArgs
from schemas.tools.tiling import TileWindow
from tests.stac.catalog import SentinelCatalog
from tests.stac.scenes import COLLECTION
from tests.stac.servers import flaky_proxy, range_server
from tests.unit.workers.gdal.test_tiled import call, digested, tile_types
from tests.unit.workers.gdal.test_tiled_analysis import same_file
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled, JobFailed
from workers.stac import composite
from workers.stac.composite import Composite, stac_composite
from workers.stac.scenes import Grid, Scene

AREA = (16.382, 46.496, 16.46, 46.565)
"""Crosses the fixture's three tiles (UTM 33N x 606,050-612,000, y 5,150,050-5,157,990)."""
CLOUDS = [3, 8, 9, 10]
"""SCL classes dropped: cloud shadow, medium and high cloud probability, cirrus."""
REDUCE = {
    "median": lambda s: np.nanmedian(s, axis=0),
    "mean": lambda s: np.nanmean(s, axis=0),
    "min": lambda s: np.nanmin(s, axis=0),
    "max": lambda s: np.nanmax(s, axis=0),
    "count": lambda s: np.count_nonzero(~np.isnan(s), axis=0),
}


def settings_for(catalog: SentinelCatalog, root: Path, *, tiled: bool = False) -> Settings:
    return Settings(
        redis_url="redis://unused",
        workspaces=str(root),
        stac=StacSettings(catalogs=[catalog.api.removeprefix("http://")], backoff_s=0.01),
        remote_hosts=[catalog.cogs.authority],
        tile_min_pixels=65_536 if tiled else 1 << 40,
        tile_size=256,
    )


def composite_args(catalog: SentinelCatalog, **extra: object) -> dict:
    search = {"catalog": catalog.api, "collections": [COLLECTION], "bbox": list(AREA)}
    return {"search": search, "assets": ["B04", "B08"], "mask": {"asset": "SCL", "drop": CLOUDS}} | extra


def reference(catalog: SentinelCatalog, output: str, bands: list[str], reducer: str, drop: list[int]) -> np.ndarray:
    """The composite computed here: every scene the area meets, each band warped (nearest) onto the output's grid,
    pixels dropped where the band or SCL is nodata (0) or SCL is in `drop`, reduced across the scenes in float64."""
    with rasterio.open(output) as out:
        grid = {"dst_transform": out.transform, "dst_crs": out.crs}
        shape = (out.height, out.width)
    area = shapely.box(*AREA)
    scenes = [s for s in catalog.scenes if s.footprint.intersects(area)]
    result = []
    for band in bands:
        stack = np.full((len(scenes), *shape), np.nan)
        for index, scene in enumerate(scenes):
            values, scl = (warped(scene.folder / f"{name}.tif", shape, grid) for name in (band, "SCL"))
            valid = (values != 0) & (scl != 0) & ~np.isin(scl, drop)
            stack[index] = np.where(valid, values, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # pixels no scene has a clear value for
            result.append(REDUCE[reducer](stack))
    return np.stack(result)


def warped(path: Path, shape: tuple[int, int], grid: dict) -> np.ndarray:
    with rasterio.open(path) as src:
        target = np.zeros(shape, dtype=src.dtypes[0])
        reproject(rasterio.band(src, 1), target, src_nodata=0, dst_nodata=0, resampling=Resampling.nearest, **grid)
    return target.astype("float64")


def test_a_median_over_three_tiles_equals_numpys_and_reads_only_ranges_of_the_files(
    catalog: SentinelCatalog, tmp_path: Path
) -> None:
    ctx = JobContext(call_id="c1", roots=[tmp_path], settings=settings_for(catalog, tmp_path))
    catalog.cogs.ranges.clear()
    catalog.cogs.whole.clear()

    result = stac_composite(StacCompositeArgs.model_validate(composite_args(catalog, output="median.tif")), ctx)

    want = reference(catalog, result.output.path, ["B04", "B08"], "median", CLOUDS)
    with rasterio.open(result.output.path) as out:
        got, profile = out.read(), out.profile
    assert np.isnan(got).sum() == np.isnan(want).sum() > 0  # some pixels are cloudy on both dates
    np.testing.assert_allclose(got, want.astype("float32"), rtol=1e-6, equal_nan=True)
    assert (profile["dtype"], profile["count"], result.crs) == ("float32", 2, "EPSG:32633")
    assert result.resolution == [40.0, 40.0] and len(result.items) == 6
    assert profile["compress"] == "deflate" and cog_validate(result.output.path, quiet=True)[0]
    read = {path: 0 for path, _, _ in catalog.cogs.ranges}
    for path, start, end in catalog.cogs.ranges:
        read[path] += end - start + 1
    sizes = {path: (catalog.cogs_root / path.lstrip("/")).stat().st_size for path in read}
    assert len(read) == 6 * 3  # B04, B08 and SCL of the six scenes, nothing else
    large = [path for path in read if sizes[path] > 32_768]  # GDAL's first read of a file takes 16 KB
    assert len(large) >= 6 and all(read[path] < sizes[path] * 0.8 for path in large), (read, sizes)
    assert sum(read.values()) < sum(sizes.values()) * 0.8
    assert catalog.cogs.whole == []  # no file was sent whole
    assert not [p for p in tmp_path.iterdir() if p.name != "median.tif"]


@pytest.mark.parametrize("reducer", ["mean", "min", "max", "count"])
def test_each_reducer_equals_numpys(catalog: SentinelCatalog, tmp_path: Path, reducer: str) -> None:
    ctx = JobContext(call_id="c2", roots=[tmp_path], settings=settings_for(catalog, tmp_path))
    args = composite_args(catalog, output="out.tif", reducer=reducer, assets=["B02"])

    result = stac_composite(StacCompositeArgs.model_validate(args), ctx)

    want = reference(catalog, result.output.path, ["B02"], reducer, CLOUDS)
    with rasterio.open(result.output.path) as out:
        got, nodata = out.read(), out.nodata
    if reducer == "count":
        assert nodata is None and got.dtype == np.uint16 and np.array_equal(got, want)
        assert set(np.unique(got)) == {0, 1, 2, 3, 4}  # up to two tiles on two dates overlap the area's pixels
    else:
        expected = np.where(np.isnan(want), nodata, want).astype(got.dtype)
        np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


def test_first_valid_takes_the_first_item_in_search_order_with_a_value(
    catalog: SentinelCatalog, tmp_path: Path
) -> None:
    ctx = JobContext(call_id="c3", roots=[tmp_path], settings=settings_for(catalog, tmp_path))
    args = composite_args(catalog, output="first.tif", reducer="first", assets=["B03"])
    args["search"]["sortby"] = ["properties.datetime"]

    result = stac_composite(StacCompositeArgs.model_validate(args), ctx)

    by_id = {scene.id: scene for scene in catalog.scenes}
    with rasterio.open(result.output.path) as out:
        got, grid = out.read(1), {"dst_transform": out.transform, "dst_crs": out.crs}
    want = np.zeros(got.shape)
    for scene_id in reversed(result.items):  # the earliest item written last wins
        values, scl = (warped(by_id[scene_id].folder / f"{b}.tif", got.shape, grid) for b in ("B03", "SCL"))
        valid = (values != 0) & (scl != 0) & ~np.isin(scl, CLOUDS)
        want = np.where(valid, values, want)
    assert result.items[0].endswith("20240605") and np.array_equal(got, want.astype("uint16"))
    assert got.dtype == np.uint16 and (got == 0).any() and (got != 0).any()


def test_a_tiled_composite_writes_the_whole_ones_pixels(
    catalog: SentinelCatalog, fake_store: EventStore, tmp_path: Path
) -> None:
    args = composite_args(catalog, resolution=20)  # 20 m: 307 × 390 pixels, 2 × 2 tiles of 256

    _, whole = call(fake_store, settings_for(catalog, tmp_path), "stac_composite", **args, output="whole.tif")
    call_id, tiled = call(
        fake_store, settings_for(catalog, tmp_path, tiled=True), "stac_composite", **args, output="tiled.tif"
    )

    assert same_file(whole, tiled)  # GDAL copied the same staged pixels into the same COG layout
    with rasterio.open(tiled["output"]["path"]) as b:
        assert (b.width, b.height, b.count, b.res) == (307, 390, 2, (20.0, 20.0))
        assert b.compression is not None and b.compression.value == "DEFLATE" and np.isnan(b.nodata)
    assert {k: v for k, v in whole.items() if k != "output"} == {k: v for k, v in tiled.items() if k != "output"}
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert digested(whole) and digested(tiled)
    assert not (tmp_path / ".geogate").exists()


def test_a_cancel_at_the_last_report_leaves_no_file(catalog: SentinelCatalog, tmp_path: Path) -> None:
    reports: list[float] = []
    counting = JobContext(
        call_id="n",
        roots=[tmp_path],
        settings=settings_for(catalog, tmp_path),
        sink=lambda p, t, m: bool(reports.append(p)),
    )
    stac_composite(StacCompositeArgs.model_validate(composite_args(catalog, output="n.tif")), counting)
    (tmp_path / "n.tif").unlink()
    seen: list[float] = []
    last = JobContext(
        call_id="c",
        roots=[tmp_path],
        settings=settings_for(catalog, tmp_path),
        sink=lambda p, t, m: bool(seen.append(p)) or len(seen) == len(reports),
    )

    with pytest.raises(JobCancelled):
        stac_composite(StacCompositeArgs.model_validate(composite_args(catalog, output="c.tif")), last)

    assert len(reports) > 6 and reports == sorted(reports)  # an item at a time, only ever upwards
    assert list(tmp_path.iterdir()) == []


def test_an_asset_server_that_sends_gdal_to_another_host_fails_the_call_and_leaves_nothing(
    catalog: SentinelCatalog, tmp_path: Path
) -> None:
    ctx = JobContext(call_id="r", roots=[tmp_path], settings=settings_for(catalog, tmp_path))
    with range_server(catalog.cogs_root) as elsewhere:
        catalog.cogs.redirect, catalog.cogs.redirected = elsewhere.url, "SCL.tif"  # the bands are read as ever
        try:
            with pytest.raises(JobFailed) as failed:
                stac_composite(StacCompositeArgs.model_validate(composite_args(catalog, output="r.tif")), ctx)
        finally:
            catalog.cogs.redirect = None

    assert (failed.value.code, failed.value.field) == ("remote.not_allowed", "assets")
    assert elsewhere.authority in failed.value.message and "GEOGATE_REMOTE_HOSTS" in failed.value.message
    assert elsewhere.ranges == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"assets": ["B99"]}, "stac.asset_missing", "assets"),
        ({"mask": {"asset": "QA", "drop": [1]}}, "stac.asset_missing", "mask"),
        ({"crs": "EPSG:3857"}, "resolution.required", "resolution"),
        ({"search": {"ids": ["nope"]}}, "stac.no_items", "search"),
        ({"search": {"limit": 5}}, "stac.too_many_items", "search"),
    ],
)
def test_bad_input_is_named(catalog: SentinelCatalog, tmp_path: Path, change: dict, code: str, field: str) -> None:
    ctx = JobContext(call_id="b", roots=[tmp_path], settings=settings_for(catalog, tmp_path))
    args = composite_args(catalog, output="bad.tif") | change
    args["search"] = composite_args(catalog)["search"] | change.get("search", {})

    with pytest.raises(JobFailed) as failed:
        stac_composite(StacCompositeArgs.model_validate(args), ctx)

    assert (failed.value.code, failed.value.field) == (code, field)
    assert list(tmp_path.iterdir()) == []


def test_a_window_larger_than_the_stack_budget_is_reduced_in_strips_with_the_same_pixels(
    catalog: SentinelCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(composite, "STACK_BYTES", 4 * 2 * 6 * 160 * 7)  # strips of about 7 rows of 154 columns
    reports: list[float] = []
    settings = settings_for(catalog, tmp_path)
    ctx = JobContext(call_id="s", roots=[tmp_path], settings=settings, sink=lambda p, t, m: bool(reports.append(p)))

    result = stac_composite(StacCompositeArgs.model_validate(composite_args(catalog, output="strips.tif")), ctx)

    want = reference(catalog, result.output.path, ["B04", "B08"], "median", CLOUDS)
    with rasterio.open(result.output.path) as out:
        np.testing.assert_allclose(out.read(), want.astype("float32"), rtol=1e-6, equal_nan=True)
    assert len(reports) > 6 * 20 and reports == sorted(reports)


def test_assets_without_nodata_count_only_where_they_cover_the_grid(tmp_path: Path) -> None:
    """A source without nodata is masked by its footprint (GDAL's alpha of the warp); workspace paths as hrefs."""
    for name, left in (("a.tif", 0.0), ("b.tif", 400.0)):
        profile = {"driver": "GTiff", "width": 20, "height": 10, "count": 1, "dtype": "uint16", "crs": "EPSG:32633"}
        with rasterio.open(tmp_path / name, "w", transform=Affine(40, 0, left, 0, -40, 400), **profile) as dst:
            dst.write(np.full((1, 10, 20), 7 if name == "a.tif" else 9, dtype="uint16"))
    grid = Grid(CRS.from_epsg(32633).to_wkt(), Affine(40, 0, 0, 0, -40, 400), 30, 10, "uint16", None)
    scenes = [Scene(name, [name], None, None) for name in ("a.tif", "b.tif")]
    ctx = JobContext(call_id="n", roots=[tmp_path])

    counted = Composite(scenes, grid, "count", [], "nearest", ctx)
    firsts = Composite(scenes, grid, "first", [], "nearest", ctx)
    try:
        count = counted.compute(TileWindow(col_off=0, row_off=0, width=30, height=10))[0]
        first = firsts.compute(TileWindow(col_off=0, row_off=0, width=30, height=10))[0]
    finally:
        counted.close()
        firsts.close()

    assert (count[:, :10] == 1).all() and (count[:, 10:20] == 2).all() and (count[:, 20:] == 1).all()
    assert (first[:, :20] == 7).all() and (first[:, 20:] == 9).all() and firsts.profile["nodata"] == 0


def test_a_search_whose_later_page_still_fails_is_no_composite_of_what_came(
    catalog: SentinelCatalog, tmp_path: Path
) -> None:
    with flaky_proxy(catalog.api, failures=0, fail_from=3) as flaky:  # the landing page (read twice), a first page
        settings = settings_for(catalog, tmp_path)
        stac = settings.stac.model_copy(update={"catalogs": [flaky.authority]})
        settings = settings.model_copy(update={"stac": stac})
        ctx = JobContext(call_id="f", roots=[tmp_path], settings=settings)
        args = composite_args(catalog, output="f.tif")
        args["search"] |= {"catalog": flaky.url, "page_size": 2}

        with pytest.raises(JobFailed) as failed:
            stac_composite(StacCompositeArgs.model_validate(args), ctx)

    assert (failed.value.code, failed.value.field, failed.value.retryable) == ("stac.unavailable", "search", True)
    assert flaky.failed and list(tmp_path.iterdir()) == []
