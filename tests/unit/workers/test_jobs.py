"""A job runs confined: Geogate's own state is no path a tool may read or write, wherever it lies."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from geogate.settings import Settings
from schemas.tools.raster import RasterConvertArgs, RasterInfoArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster import raster_convert, raster_info


def _raster(path: Path) -> None:
    profile = {"driver": "GTiff", "width": 4, "height": 4, "count": 1, "dtype": "uint8", "crs": "EPSG:4326"}
    with rasterio.open(path, "w", transform=from_origin(0, 4, 1, 1), **profile) as dst:
        dst.write(np.ones((1, 4, 4), dtype="uint8"))


@pytest.mark.parametrize("folder", ["state", ".geogate/tiles/c1"])
def test_the_data_directory_and_a_roots_parts_folder_are_refused_as_inputs_and_outputs(
    tmp_path: Path, folder: str
) -> None:
    (tmp_path / folder).mkdir(parents=True)
    _raster(tmp_path / folder / "part.tif")
    _raster(tmp_path / "dem.tif")
    ctx = JobContext("c", [tmp_path], settings=Settings(data_dir=tmp_path / "state"))

    with pytest.raises(JobFailed) as read:
        raster_info(RasterInfoArgs(uri=f"{folder}/part.tif"), ctx)
    with pytest.raises(JobFailed) as written:
        raster_convert(RasterConvertArgs(uri="dem.tif", output=f"{folder}/aof.tif", overwrite=True), ctx)

    assert (read.value.code, read.value.field) == ("path.outside_workspace", "uri")
    assert (written.value.code, written.value.field) == ("path.outside_workspace", "output")
    assert not (tmp_path / folder / "aof.tif").exists()
