"""The driver allow-list holds in rasterio's GDAL and in pyogrio's, each a GDAL of its own."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyogrio
import pyogrio.errors
import pytest
import rasterio
from rasterio.errors import RasterioIOError

import workers.gdal  # noqa: F401  (the import restricts the drivers)
from workers.gdal.drivers import (
    RASTER_DRIVERS,
    RASTER_INPUTS,
    RASTER_OUTPUTS,
    SQLITE_CACHE_MB,
    VECTOR_DRIVERS,
    VECTOR_OUTPUTS,
)


def _mrf(folder: Path, secret: Path) -> Path:
    (folder / "esc.idx").write_bytes(b"\0" * 7 + b"\0" + b"\0" * 7 + b"\x10")  # one tile: offset 0, 16 bytes
    path = folder / "esc.mrf"
    path.write_text(
        '<MRF_META><Raster><Size x="4" y="4" c="1"/><PageSize x="4" y="4" c="1"/><Compression>NONE</Compression>'
        f"<DataType>Byte</DataType><DataFile>{secret}</DataFile><IndexFile>esc.idx</IndexFile></Raster></MRF_META>"
    )
    return path


def _pds(folder: Path, secret: Path) -> Path:
    path = folder / "env.lbl"
    up = "../" * len(folder.parts)
    path.write_text(
        f'PDS_VERSION_ID = PDS3\n^IMAGE = ("{up}{str(secret).lstrip("/")}", 1)\nOBJECT = IMAGE\n  LINES = 1\n'
        "  LINE_SAMPLES = 16\n  SAMPLE_TYPE = UNSIGNED_INTEGER\n  SAMPLE_BITS = 8\n  BANDS = 1\n"
        "END_OBJECT = IMAGE\nEND\n"
    )
    return path


def _gdalg(folder: Path, outside: Path) -> Path:
    path = folder / "pipe.gdalg.json"
    pipeline = f"gdal vector pipeline ! read {outside} ! write --output-format stream streamed_dataset"
    path.write_text(json.dumps({"type": "gdal_streamed_alg", "command_line": pipeline}))
    return path


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """An MRF and a PDS label reading a secret file, a GDALG pipeline reading a GeoJSON: all outside `ws/`."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_bytes(b"canary-0123456789")
    layer = outside / "zones.geojson"
    layer.write_text('{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":7},'
                     '"geometry":{"type":"Point","coordinates":[1,2]}}]}')  # fmt: skip
    return {"mrf": _mrf(workspace, secret), "pds": _pds(workspace, secret), "gdalg": _gdalg(workspace, layer)}


def test_every_driver_left_registered_is_on_the_allow_lists() -> None:
    with rasterio.Env() as env:
        raster = set(env.drivers())

    assert raster <= RASTER_DRIVERS and set(RASTER_INPUTS) <= raster
    assert set(pyogrio.list_drivers()) <= VECTOR_DRIVERS
    assert {"GPKG", "ESRI Shapefile", "GeoJSON", "FlatGeobuf"} <= set(pyogrio.list_drivers(write=True))
    assert set(RASTER_OUTPUTS) <= raster and set(VECTOR_OUTPUTS) >= {"GPKG", "GeoJSON"}


@pytest.mark.parametrize("kind", ["mrf", "pds", "gdalg"])
def test_neither_gdal_opens_a_format_that_reads_other_files(hostile: dict[str, Path], kind: str) -> None:
    with pytest.raises(RasterioIOError):
        rasterio.open(hostile[kind]).close()
    with pytest.raises(pyogrio.errors.DataSourceError):
        pyogrio.read_info(hostile[kind])


_UNRESTRICTED = """
import sys, rasterio, pyogrio
with rasterio.open(sys.argv[1]) as mrf, rasterio.open(sys.argv[2]) as pds:
    leaked = mrf.read(1).tobytes() + pds.read(1).tobytes()
found = pyogrio.read_info(sys.argv[3])["features"] if pyogrio.__gdal_version__ >= (3, 11, 0) else 1
print(b"canary" in leaked and found == 1)
"""


def test_the_same_files_leak_through_gdal_without_the_allow_list(hostile: dict[str, Path]) -> None:
    """The control: in a process that never imported `workers.gdal`, these files do read outside."""
    argv = [sys.executable, "-c", _UNRESTRICTED, *(str(hostile[k]) for k in ("mrf", "pds", "gdalg"))]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)

    assert done.stdout.strip() == "True", done.stderr


def test_pyogrios_gdal_gets_the_sqlite_page_cache_unless_the_environment_sets_one() -> None:
    probe = "import workers.gdal, pyogrio; print(pyogrio.get_gdal_config_option('OGR_SQLITE_CACHE'))"
    env = {k: v for k, v in os.environ.items() if k != "OGR_SQLITE_CACHE"}

    def run(extra: dict[str, str]) -> str:
        done = subprocess.run([sys.executable, "-c", probe], env=env | extra, capture_output=True, text=True)
        return done.stdout.strip()

    assert run({}) == str(SQLITE_CACHE_MB)
    assert run({"OGR_SQLITE_CACHE": "16"}) == "16"


def test_a_workers_geopackage_writes_keep_no_journal_and_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    probe = (
        "import workers.gdal, pyogrio, geopandas as gpd, shapely, sys\n"
        "from pathlib import Path\n"
        "from workers.jobkit.files import atomic_output\n"
        "option = pyogrio.get_gdal_config_option\n"
        "print(option('OGR_SQLITE_JOURNAL'), option('OGR_SQLITE_SYNCHRONOUS'))\n"
        "points = shapely.points([(i, i) for i in range(1000)])\n"
        "frame = gpd.GeoDataFrame({'n': range(1000)}, geometry=points, crs=3857)\n"
        "target = Path(sys.argv[1]) / 'out.gpkg'\n"
        "with atomic_output(target) as tmp:\n"
        "    pyogrio.write_dataframe(frame, tmp, layer='out')\n"
        "print(len(pyogrio.read_dataframe(target)), sorted(p.name for p in target.parent.iterdir()))\n"
        "try:\n"
        "    with atomic_output(Path(sys.argv[1]) / 'failed.gpkg') as tmp:\n"
        "        pyogrio.write_dataframe(frame, tmp, layer='out')\n"
        "        raise RuntimeError\n"
        "except RuntimeError:\n"
        "    print(sorted(p.name for p in target.parent.iterdir()))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OGR_SQLITE")}
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], env=env, capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
    # pyogrio reads a setting of OFF back as False
    assert done.stdout.splitlines() == ["False False", "1000 ['out.gpkg']", "['out.gpkg']"]
