"""Tiled and whole `raster_calc` and `raster_terrain` calls write the same file, byte for byte (issue 32): the same
windows computed by the same code, terrain's tiles each reading a one-pixel halo around their window. Rasters whose
sizes are not multiples of the tile, with nodata, in a geographic CRS; through the real lifecycle on a fakeredis
log, as `test_tiled.py` runs the other tiled tools."""

import subprocess
from pathlib import Path

import numpy as np
import pytest
import rasterio

from geogate.calls.store import EventStore
from tests.unit.workers.gdal.conftest import RasterFactory
from tests.unit.workers.gdal.test_tiled import SIZE, both, call, digested, settings_for, tile_types


def same_file(whole: dict, tiled: dict) -> bool:
    return Path(whole["output"]["path"]).read_bytes() == Path(tiled["output"]["path"]).read_bytes()


def test_a_tiled_band_math_call_writes_the_whole_calls_file(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    data = np.random.default_rng(11).integers(1, 4000, (2, *SIZE)).astype("uint16")
    data[0, 100:300, 200:260] = 0
    make_raster("s.tif", data=data, nodata=0, crs="EPSG:4326")
    make_raster("m.tif", data=np.random.default_rng(12).normal(0, 1, SIZE).astype("float32"), crs="EPSG:4326")
    args = {"inputs": {"s": "s.tif", "m": "m.tif"}, "expression": "where(m > 0, (s[2] - s[1]) / (s[2] + s[1]), -m)"}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_calc", **args, output="out.tif")

    assert same_file(whole, tiled) and digested(whole) and digested(tiled)
    assert whole["valid_pixels"] == tiled["valid_pixels"] == SIZE[0] * SIZE[1] - 200 * 60
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert not (tmp_path / ".geogate").exists()


@pytest.mark.parametrize("product", ["slope", "aspect", "hillshade"])
@pytest.mark.parametrize("edges", ["nodata", "compute"])
def test_a_tiled_terrain_call_writes_the_whole_calls_file(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory, product: str, edges: str
) -> None:
    rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
    dem = (np.sin(rows / 40.0) * np.cos(cols / 55.0) * 300 + rows * 0.7).astype("float32")
    dem[250:258, 250:262] = -32768  # a hole across a tile corner (tiles of 256)
    make_raster("dem.tif", data=dem, nodata=-32768, crs="EPSG:4326")
    args = {"uri": "dem.tif", "product": product, "edges": edges}

    whole, tiled, call_id = both(fake_store, tmp_path, "raster_terrain", **args, output="out.tif")

    assert same_file(whole, tiled) and digested(whole) and digested(tiled)
    assert whole["valid_pixels"] == tiled["valid_pixels"]
    assert "tool.fanned_out" in tile_types(fake_store, call_id)


def test_a_compressed_tiled_output_has_the_whole_outputs_pixels(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    make_raster("dem.tif", size=SIZE, crs="EPSG:32633")
    args = {"uri": "dem.tif", "product": "slope", "compression": "deflate"}

    whole, tiled, _ = both(fake_store, tmp_path, "raster_terrain", **args, output="out.tif")

    with rasterio.open(whole["output"]["path"]) as a, rasterio.open(tiled["output"]["path"]) as b:
        assert np.array_equal(a.read(), b.read()) and a.profile == b.profile
        assert b.compression is not None and b.compression.value == "DEFLATE"
    assert digested(tiled)


def test_tiles_read_a_halo_so_the_seams_equal_gdaldem(
    fake_store: EventStore, tmp_path: Path, make_raster: RasterFactory
) -> None:
    """The pixels along the tiles' seams need their neighbours from the next tile: equal to GDAL's own gdaldem over
    the whole raster at once (slope, square pixels; gdaldem computes in float32)."""
    dem = (np.random.default_rng(4).random(SIZE) * 200).astype("float32")
    make_raster("dem.tif", data=dem, crs="EPSG:32633")
    subprocess.run(["gdaldem", "slope", "dem.tif", "gdal.tif", "-q"], cwd=tmp_path, check=True, capture_output=True)

    call_id, tiled = call(fake_store, settings_for(tmp_path, tiled=True), "raster_terrain", uri="dem.tif",
                          output="ours.tif", product="slope")  # fmt: skip

    with rasterio.open(tmp_path / "gdal.tif") as theirs, rasterio.open(tiled["output"]["path"]) as ours:
        expected, got = theirs.read(1).astype("float64"), ours.read(1).astype("float64")
    assert np.array_equal(got == -9999, expected == -9999)
    np.testing.assert_allclose(got, expected, atol=1e-3)
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
