"""Previews fit one image block without shrinking in silence: the asked size is kept as a JPEG when the PNG is too
large, a picture is drawn smaller only when no encoding fits, and the result and its summary say what was given up."""

import base64
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import shapely
from rasterio.io import MemoryFile

from schemas.content import MAX_BLOCK_CHARS, ImageBlock
from schemas.tools.previews import RasterPreviewArgs, VectorPreviewArgs
from workers.jobkit.context import JobContext
from workers.tools.previews import raster_preview, vector_preview

pytestmark = [
    pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning"),
    pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning"),
]

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]


def relief(height: int = 900, width: int = 1200) -> np.ndarray:
    """A smooth terrain: sine ridges over a tilted plane (detailed enough that its 1024-px PNG is over a block)."""
    y, x = np.mgrid[0:height, 0:width].astype("float64")
    z = 400 + 0.25 * x + 120 * np.sin(x / 90 + np.sin(y / 140)) * np.cos(y / 110)
    return (z + 12 * np.sin(x / 23 + 2 * np.cos(y / 47)) * np.sin(y / 31)).astype("float32")


def decoded(block: ImageBlock, driver: str) -> np.ndarray:
    with MemoryFile(base64.b64decode(block.data)) as mem, mem.open() as picture:
        assert picture.driver == driver
        return picture.read()


def test_a_detailed_raster_keeps_the_asked_size_as_a_jpeg_and_says_so(
    make_raster: RasterFactory, ctx: JobContext
) -> None:
    make_raster(data=relief(), crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", max_size=1024), ctx)

    block = result.blocks()[0]
    assert (result.width, result.height, result.asked_size) == (1024, 768, 1024)
    assert (result.format, result.mime_type, block.mime_type) == ("jpeg", "image/jpeg", "image/jpeg")
    assert len(block.data) <= MAX_BLOCK_CHARS and result.image_bytes == len(base64.b64decode(block.data))
    assert decoded(block, "JPEG").shape == (3, 768, 1024)
    assert result.quality is not None and f"quality {result.quality}" in (result.reduction or "")
    assert re.search(r"the PNG was \d+ KB, over the \d+ KB an image block holds", result.reduction or "")
    assert result.reduction in result.summary()


def test_noise_is_drawn_smaller_and_the_result_says_from_what(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(data=np.random.default_rng(7).normal(0, 1, (900, 1200)).astype("float32"), crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", max_size=1024), ctx)

    assert max(result.width, result.height) < 1024
    assert (result.reduction or "").startswith(f"asked 1024 px, returned {result.width}×{result.height}: the ")
    assert "of 1024×768 was" in (result.reduction or "") and result.reduction in result.summary()
    assert len(result.blocks()[0].data) <= MAX_BLOCK_CHARS


def test_png_only_is_drawn_smaller_and_says_so(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(data=relief(), crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", max_size=1024, format="png"), ctx)

    assert result.format == "png" and result.width < 1024 and result.quality is None
    assert (result.reduction or "").startswith(f"asked 1024 px, returned {result.width}×{result.height}: the PNG")
    assert decoded(result.blocks()[0], "PNG").shape[1:] == (result.height, result.width)


def test_a_picture_that_fits_is_a_png_and_reports_no_reduction(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(size=(40, 60), crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", max_size=1024), ctx)

    assert (result.format, result.reduction, result.asked_size, result.width) == ("png", None, 1024, 60)
    assert "png" in result.summary().lower() and ";" not in result.summary()


def test_jpeg_shows_nodata_white(make_raster: RasterFactory, ctx: JobContext) -> None:
    data = np.full((30, 40), 5.0, dtype="float32")
    data[:, :20] = -9999.0
    make_raster(data=data, nodata=-9999.0, crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", format="jpeg", colormap="gray"), ctx)

    picture = decoded(result.blocks()[0], "JPEG")
    assert result.format == "jpeg" and result.quality == 90 and result.reduction is None
    assert (picture[:, :, :15] >= 250).all()


def test_a_busy_layer_is_drawn_smaller_as_a_png_and_says_so(make_vector: VectorFactory, ctx: JobContext) -> None:
    """Line art: no JPEG of the full size fits and each is larger than the PNG, so the PNG is drawn smaller."""
    rng = np.random.default_rng(3)
    centres = rng.uniform(0, 1, (4000, 2))
    make_vector("busy.gpkg", [shapely.Point(x, y).buffer(0.004, quad_segs=2) for x, y in centres])

    result = vector_preview(VectorPreviewArgs(uri="busy.gpkg", max_size=1024), ctx)

    assert result.format == "png" and max(result.width, result.height) < 1024
    assert (result.reduction or "").startswith(f"asked 1024 px, returned {result.width}×{result.height}: the PNG")
    assert result.reduction in result.summary() and len(result.blocks()[0].data) <= MAX_BLOCK_CHARS
