"""Job `cog_validate` (rio-cogeo), and Geogate's own COG outputs, whole and tiled, validate with no errors."""

from pathlib import Path

import numpy as np
import pytest
import rasterio

from geogate.calls.store import EventStore
from schemas.tools.previews import CogValidateArgs
from tests.unit.workers.gdal.conftest import RasterFactory
from tests.unit.workers.gdal.test_tiled import both, tile_types
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.previews import cog_validate

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"compression": "deflate", "overviews": [2, 4]},
        {"compression": "zstd", "blockxsize": 128, "blockysize": 128},
    ],
)
def test_raster_convert_to_cog_whole_and_tiled_is_a_valid_cog(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, options: dict
) -> None:
    """Issue 32: the fan-in's COG (GDAL's COG driver over the staging file) and the whole job's both pass rio-cogeo."""
    make_raster(dtype="int16", size=(601, 733), count=2, nodata=-7)

    whole, tiled, call_id = both(
        fake_store, tmp_path, "raster_convert", uri="src.tif", output="out.tif", driver="COG", **options
    )

    assert "tool.fanned_out" in tile_types(fake_store, call_id)  # the tiled path did run as tiles
    ctx = JobContext(call_id="check", roots=[tmp_path])
    block = options.get("blockxsize", 256)
    for result in (whole, tiled):
        report = cog_validate(CogValidateArgs(uri=result["output"]["path"]), ctx)
        assert (report.valid, report.errors) == (True, []), report
        assert (report.tiled, report.blocksize, report.width, report.height) == (True, [block, block], 733, 601)
        assert report.overviews and report.overviews[0] == 2  # the COG driver adds overviews down to one block
        assert report.compression == options.get("compression", "lzw")  # GDAL's COG driver compresses by default
    with rasterio.open(whole["output"]["path"]) as a, rasterio.open(tiled["output"]["path"]) as b:
        assert np.array_equal(a.read(), b.read())


def test_a_striped_geotiff_is_not_a_cog_and_says_why(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(size=(600, 700))  # rasterio's default GeoTIFF: strips, no overviews

    report = cog_validate(CogValidateArgs(uri="src.tif"), ctx)

    assert not report.valid and not report.tiled and report.overviews == []
    assert any("not tiled" in e for e in report.errors)
    assert any("overviews" in w for w in report.warnings)


def test_external_overviews_are_an_error(make_raster: RasterFactory, ctx: JobContext, tmp_path: Path) -> None:
    path = make_raster(size=(64, 64))
    half = make_raster("half.tif", size=(32, 32))
    half.rename(tmp_path / "src.tif.ovr")  # GDAL takes `<name>.ovr` beside a GeoTIFF for its overviews
    with rasterio.open(path) as src:
        assert src.overviews(1) == [2]

    report = cog_validate(CogValidateArgs(uri="src.tif"), ctx)

    assert not report.valid and any(".ovr" in e for e in report.errors)


def test_a_file_outside_the_workspace_or_not_a_raster_is_refused(ctx: JobContext, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a raster")
    with pytest.raises(JobFailed) as outside:
        cog_validate(CogValidateArgs(uri="/etc/hostname"), ctx)
    with pytest.raises(JobFailed) as text:
        cog_validate(CogValidateArgs(uri="notes.txt"), ctx)
    assert (outside.value.code, text.value.code) == ("path.outside_workspace", "gdal.not_geospatial")
