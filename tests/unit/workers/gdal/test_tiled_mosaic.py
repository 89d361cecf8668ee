"""Tiled and whole `raster_mosaic` calls write the same file, byte for byte: every overlap rule, inputs off the
output's tile grid with ragged edges, nodata holes across the seams, two bands, two dtypes, and an input in another
CRS warped on the way. Through the real lifecycle on a fakeredis log, as `test_tiled.py` runs the other tiled
tools."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from pyproj import Transformer

from geogate.calls.store import EventStore
from tests.unit.workers.gdal.test_tiled import both, digested, pixels, tile_types
from tests.unit.workers.gdal.test_tiled_analysis import same_file

LEFT, TOP, RES = 500_000.0, 5_540_000.0, 100.0
NODATA = -9999


def place(path: Path, data: np.ndarray, col_off: int, row_off: int, nodata: float | None = NODATA) -> None:
    """`data` (bands, rows, columns) on the EPSG:32633 grid, its top left `col_off`, `row_off` pixels in."""
    transform = Affine(RES, 0, LEFT + col_off * RES, 0, -RES, TOP - row_off * RES)
    profile = {"driver": "GTiff", "count": data.shape[0], "height": data.shape[1], "width": data.shape[2]}
    with rasterio.open(
        path, "w", crs="EPSG:32633", transform=transform, nodata=nodata, dtype=data.dtype, **profile
    ) as dst:
        dst.write(data)


def overlapping(root: Path, dtype: str) -> list[str]:
    """Three two-band rasters over a 601 × 733 union (3×3 tiles of 256, ragged), overlapping across the seams,
    each with a nodata hole that crosses one."""
    rng = np.random.default_rng(5)
    names = []
    for index, (col, row, width, height) in enumerate([(0, 0, 500, 450), (300, 150, 433, 451), (200, 240, 120, 90)]):
        data = (rng.normal(1000 * (index + 1), 300, (2, height, width))).astype(dtype)
        data[:, 240 - row % 240 : 270 - row % 240, 250 - col % 250 : 262 - col % 250] = NODATA
        place(root / f"m{index}.tif", data, col, row)
        names.append(f"m{index}.tif")
    return names


@pytest.mark.parametrize("dtype", ["float32", "int16"])
@pytest.mark.parametrize("method", ["first", "last", "min", "max", "mean"])
def test_a_tiled_mosaic_writes_the_whole_calls_file(
    fake_store: EventStore, tmp_path: Path, method: str, dtype: str
) -> None:
    inputs = overlapping(tmp_path, dtype)
    args = {"inputs": inputs, "resampling": "nearest", "method": method, "output": "out.tif"}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_mosaic", **args)

    assert same_file(whole, tiled) and digested(whole) and digested(tiled)
    assert {k: v for k, v in whole.items() if k != "output"} == {k: v for k, v in tiled.items() if k != "output"}
    assert (tiled["width"], tiled["height"]) == (733, 601)
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert not (tmp_path / ".geogate").exists()


@pytest.mark.parametrize("resampling", ["nearest", "bilinear"])
def test_a_tiled_mosaic_with_an_input_in_another_crs_writes_the_whole_calls_file(
    fake_store: EventStore, tmp_path: Path, resampling: str
) -> None:
    """The warped input's pixels come from its VRT's own blocks whichever window of the output reads them; what the
    warp leaves empty is the nodata asked for."""
    inputs = overlapping(tmp_path, "float32")
    to_web = Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True)
    (x0, x1), (y1, y0) = to_web.transform([LEFT + 10_000, LEFT + 60_000], [TOP - 5_000, TOP - 52_000])
    rows, cols = np.mgrid[0:380, 0:410]
    web = (np.sin(rows / 30.0) * np.cos(cols / 45.0) * 500).astype("float32")[np.newaxis].repeat(2, axis=0)
    profile = {"driver": "GTiff", "width": 410, "height": 380, "count": 2, "dtype": "float32", "crs": "EPSG:3857"}
    with rasterio.open(tmp_path / "web.tif", "w", transform=Affine((x1 - x0) / 410, 0, x0, 0, -(y1 - y0) / 380, y1),
                       **profile) as dst:  # fmt: skip
        dst.write(web)
    args = {"inputs": ["web.tif", *inputs][::-1], "resampling": resampling, "method": "max", "nodata": -5.5}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_mosaic", **args, output="out.tif")

    assert same_file(whole, tiled) and digested(whole) and digested(tiled)
    with rasterio.open(tiled["output"]["path"]) as out:
        assert out.nodata == -5.5 and (out.read(1) == -5.5).any()
    moved = {"input": f"inputs[{len(args['inputs']) - 1}]", "from_crs": "EPSG:3857", "to_crs": "EPSG:32633"}
    assert tiled["reprojected"] == whole["reprojected"] == [moved]
    assert "tool.fanned_out" in tile_types(fake_store, call_id)


def first_block(path: str) -> int:
    with rasterio.open(path) as src:
        return int(src.get_tag_item("BLOCK_OFFSET_0_0", "TIFF", bidx=1))


def test_a_compressed_tiled_mosaic_has_the_whole_ones_pixels_profile_and_blocks(
    fake_store: EventStore, tmp_path: Path
) -> None:
    """GDAL's copy of the staging file (the tiled output) writes the GDAL_NODATA tag's value before the GeoTIFF
    keys in the header, a file GDAL creates and writes (the whole output) after them: the header's bytes differ,
    every compressed block is the same bytes at the same offset."""
    inputs = overlapping(tmp_path, "int16")
    args = {"inputs": inputs, "resampling": "nearest", "method": "mean", "compression": "deflate", "output": "o.tif"}

    whole, tiled, _ = both(fake_store, tmp_path, "raster_mosaic", **args)

    (a, meta_a), (b, meta_b) = pixels(whole["output"]["path"]), pixels(tiled["output"]["path"])
    assert meta_a == meta_b and np.array_equal(a, b)
    with rasterio.open(whole["output"]["path"]) as one, rasterio.open(tiled["output"]["path"]) as other:
        assert one.profile == other.profile and other.compression.value == "DEFLATE"
    start = first_block(whole["output"]["path"])
    assert first_block(tiled["output"]["path"]) == start
    whole_bytes, tiled_bytes = Path(whole["output"]["path"]).read_bytes(), Path(tiled["output"]["path"]).read_bytes()
    assert whole_bytes[start:] == tiled_bytes[start:]
    assert digested(tiled)
