"""Hostile files inside the workspace, over real HTTP, Redis and Celery workers: formats that name other files (MRF,
PDS, GDALG), sidecars that lead outside (a `.ovr` that is a VRT or a link, a linked `.dbf`) and outputs into the
data directory are refused with an error naming the field. A canary sits in a file outside the workspace and in
the worker's environment; no output in the workspace and nothing in Redis holds it afterwards."""

import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyogrio.raw
import pytest
import rasterio
import redis
import shapely
from rasterio.errors import NotGeoreferencedWarning, RasterioIOError
from rasterio.transform import from_origin

from tests.integration.conftest import start_gateway, start_worker, stop, write_rasters
from tests.mcp_http import call_tool
from tests.support import free_port, redis_server

pytestmark = pytest.mark.integration

CANARY = "canary-5d0c2f7e91ab"
"""In the worker's environment, as its LLM key (a secret the log redacts)."""
FILE_CANARY = "canary-file-93b1e4"
"""In the files outside the workspace (no secret the log knows of)."""
CANARIES = (CANARY.encode(), FILE_CANARY.encode())


@dataclass
class Hostile:
    url: str
    redis_url: str
    workspace: Path
    outside: Path
    data_dir: Path


def _outside(folder: Path) -> None:
    """A secret text file, a raster whose pixels spell the canary, zones whose ids do, and a GeoPackage of them."""
    folder.mkdir()
    (folder / "secret.txt").write_text(FILE_CANARY * 4)
    pixels = np.frombuffer((FILE_CANARY * 8).encode()[:64], dtype="uint8").reshape(1, 8, 8)
    profile = {"driver": "GTiff", "width": 8, "height": 8, "count": 1, "dtype": "uint8", "crs": "EPSG:32633"}
    with rasterio.open(folder / "secret.tif", "w", transform=from_origin(500000, 4100000, 240, 120), **profile) as d:
        d.write(pixels)
    box = shapely.to_wkb(np.array([shapely.box(500000, 4099040, 501920, 4100000)]))
    for name, driver in (("zones.shp", "ESRI Shapefile"), ("zones.gpkg", "GPKG")):
        pyogrio.raw.write(
            folder / name, box, [np.array([FILE_CANARY])], ["zone"], driver=driver, geometry_type="Polygon",
            crs="EPSG:32633",
        )  # fmt: skip


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    """A Redis, a worker and a gateway of their own: the worker's environment holds the canary as its LLM key, and
    the data directory is a folder inside the workspace, as `.geogate` was by default."""
    base = tmp_path_factory.mktemp("hostile")
    workspace, outside = base / "workspace", base / "outside"
    workspace.mkdir()
    write_rasters(workspace)
    _outside(outside)
    data_dir = workspace / "state"
    data_dir.mkdir()
    (data_dir / "run.json").write_text("{}")
    with redis_server(tmp_path_factory.mktemp("hostile-redis")) as redis_url:
        port = free_port()
        env = {
            "GEOGATE_LLM_API_KEY": CANARY,  # first, so it is in the first bytes of the worker's /proc/self/environ
            **{k: v for k, v in os.environ.items() if k != "GEOGATE_LLM_API_KEY"},
            "REDIS_URL": redis_url,
            "GEOGATE_WORKSPACES": str(workspace),
            "GEOGATE_PORT": str(port),
            "GEOGATE_DATA_DIR": str(data_dir),
        }
        worker = start_worker(env)
        gateway = start_gateway(env, port)
        try:
            yield Hostile(f"http://127.0.0.1:{port}/mcp", redis_url, workspace, outside, data_dir)
        finally:
            stop(gateway)
            stop(worker)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60) as client:
        yield client


def _refused(http: httpx.Client, hostile: Hostile, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = call_tool(http, hostile.url, tool, arguments)
    result = reply.result
    assert result["isError"] is True, f"{tool} answered {result}"
    error = result["structuredContent"]["error"]
    assert str(hostile.outside) not in error["message"] and not any(c.decode() in error["message"] for c in CANARIES)
    return error


def _vrt(source: Path) -> str:
    return (
        '<VRTDataset rasterXSize="8" rasterYSize="8"><SRS>EPSG:32633</SRS>'
        "<GeoTransform>500000, 240, 0, 4100000, 0, -120</GeoTransform>"
        '<VRTRasterBand dataType="Byte" band="1"><SimpleSource>'
        f'<SourceFilename relativeToVRT="0">{source}</SourceFilename><SourceBand>1</SourceBand>'
        "</SimpleSource></VRTRasterBand></VRTDataset>"
    )


def _mrf(hostile: Hostile) -> str:
    """An MRF whose data file is the secret outside (one 64-byte tile, uncompressed)."""
    (hostile.workspace / "esc.idx").write_bytes((0).to_bytes(8, "big") + (64).to_bytes(8, "big"))
    (hostile.workspace / "esc.mrf").write_text(
        '<MRF_META><Raster><Size x="64" y="1" c="1"/><PageSize x="64" y="1" c="1"/><Compression>NONE</Compression>'
        f"<DataType>Byte</DataType><DataFile>{hostile.outside / 'secret.txt'}</DataFile>"
        "<IndexFile>esc.idx</IndexFile></Raster></MRF_META>"
    )
    return "esc.mrf"


def _pds(hostile: Hostile) -> str:
    """A PDS label whose image is the reading process's environment (the canary comes first in the worker's)."""
    (hostile.workspace / "env.lbl").write_text(
        'PDS_VERSION_ID = PDS3\n^IMAGE = ("../../../../../../../../proc/self/environ", 1)\nOBJECT = IMAGE\n'
        "  LINES = 1\n  LINE_SAMPLES = 256\n  SAMPLE_TYPE = UNSIGNED_INTEGER\n  SAMPLE_BITS = 8\n  BANDS = 1\n"
        "END_OBJECT = IMAGE\nEND\n"
    )
    return "env.lbl"


@pytest.mark.parametrize("plant", [_mrf, _pds], ids=["mrf", "pds"])
def test_an_mrf_or_a_pds_label_reading_outside_is_not_a_format_a_tool_reads(
    hostile: Hostile, http: httpx.Client, plant: Callable[[Hostile], str]
) -> None:
    name = plant(hostile)
    output = f"{name.split('.')[0]}.tif"

    arguments = {"inputs": {"a": name}, "expression": "a", "output": output, "dtype": "uint8"}  # the bytes as read
    calc = _refused(http, hostile, "raster_calc", arguments)
    info = _refused(http, hostile, "raster_info", {"uri": name})

    assert (calc["code"], calc["field"]) == ("gdal.not_geospatial", "inputs.a")
    assert (info["code"], info["field"]) == ("gdal.not_geospatial", "uri")
    assert not (hostile.workspace / output).exists()


def test_a_gdalg_pipeline_reading_an_outside_layer_is_not_a_format_a_tool_reads(
    hostile: Hostile, http: httpx.Client
) -> None:
    pipeline = f"gdal vector pipeline ! read {hostile.outside / 'zones.gpkg'} ! write --output-format stream x"
    (hostile.workspace / "z.gdalg.json").write_text(json.dumps({"type": "gdal_streamed_alg", "command_line": pipeline}))

    info = _refused(http, hostile, "vector_info", {"uri": "z.gdalg.json"})
    converted = _refused(http, hostile, "vector_convert", {"uri": "z.gdalg.json", "output": "z.geojson"})
    zonal = _refused(http, hostile, "zonal_stats", {"uri": "dem.tif", "zones": "z.gdalg.json"})

    assert (info["code"], info["field"]) == ("gdal.not_geospatial", "uri")
    assert (converted["code"], converted["field"]) == ("gdal.not_geospatial", "uri")
    assert (zonal["code"], zonal["field"]) == ("gdal.not_geospatial", "zones")
    assert not (hostile.workspace / "z.geojson").exists()


def test_an_overview_that_is_a_vrt_of_an_outside_raster_or_a_link_to_one_is_refused(
    hostile: Hostile, http: httpx.Client
) -> None:
    ws = hostile.workspace
    for name in ("side.tif", "linked.tif"):
        shutil.copy(ws / "dem.tif", ws / name)
    (ws / "side.tif.ovr").write_text(_vrt(hostile.outside / "secret.tif"))
    (ws / "linked.tif.ovr").symlink_to(hostile.outside / "secret.tif")

    for name in ("side.tif", "linked.tif"):
        preview = _refused(http, hostile, "raster_preview", {"uri": name})
        calc = _refused(http, hostile, "raster_calc", {"inputs": {"a": name}, "expression": "a", "output": "c.tif"})
        assert (preview["code"], preview["field"]) == ("path.outside_workspace", "uri")
        assert (calc["code"], calc["field"]) == ("path.outside_workspace", "inputs.a")
    assert not call_tool(http, hostile.url, "raster_preview", {"uri": "dem.tif"}).result.get("isError")


def test_a_shapefile_whose_dbf_links_outside_is_refused(hostile: Hostile, http: httpx.Client) -> None:
    ws = hostile.workspace
    for suffix in (".shp", ".shx", ".prj"):
        shutil.copy(hostile.outside / f"zones{suffix}", ws / f"zones{suffix}")
    (ws / "zones.dbf").symlink_to(hostile.outside / "zones.dbf")

    zonal = _refused(http, hostile, "zonal_stats", {"uri": "dem.tif", "zones": "zones.shp", "id_field": "zone"})
    info = _refused(http, hostile, "vector_info", {"uri": "zones.shp"})
    converted = _refused(http, hostile, "vector_convert", {"uri": "zones.shp", "output": "zones.geojson"})

    assert (zonal["code"], zonal["field"]) == ("path.outside_workspace", "zones")
    assert (info["code"], info["field"]) == (converted["code"], converted["field"]) == ("path.outside_workspace", "uri")


def test_outputs_into_the_data_directory_or_a_roots_parts_folder_are_refused(
    hostile: Hostile, http: httpx.Client
) -> None:
    (hostile.workspace / ".geogate").mkdir(exist_ok=True)
    before = (hostile.data_dir / "run.json").read_bytes()

    for output in ("state/run.json", "state/ct.gpkg", ".geogate/x.tif"):
        arguments = {"uri": "dem.tif", "interval": 100.0, "output": output, "overwrite": True}
        contours = _refused(http, hostile, "raster_contours", arguments)
        convert = _refused(http, hostile, "raster_convert", {"uri": "dem.tif", "output": output, "overwrite": True})
        assert (contours["code"], contours["field"]) == (convert["code"], convert["field"])
        assert (contours["code"], contours["field"]) == ("path.outside_workspace", "output")
    read = _refused(http, hostile, "raster_info", {"uri": "state/run.json"})

    assert (read["code"], read["field"]) == ("path.outside_workspace", "uri")
    assert (hostile.data_dir / "run.json").read_bytes() == before
    assert sorted(p.name for p in hostile.data_dir.iterdir()) == ["run.json"]


def test_nothing_in_the_workspace_or_the_log_holds_the_canary(hostile: Hostile, http: httpx.Client) -> None:
    """Runs last in this module: every call above has ended, each refused, and left no trace of the canary."""
    ok = call_tool(http, hostile.url, "raster_calc", {"inputs": {"a": "dem.tif"}, "expression": "a", "output": "k.tif"})
    assert not ok.result.get("isError")

    written = [p for p in hostile.workspace.rglob("*") if p.is_file() and not p.is_symlink()]
    leaks = [p.name for p in written if any(c in p.read_bytes() + _pixels(p) for c in CANARIES)]
    held = _everything(redis.Redis.from_url(hostile.redis_url))

    assert "k.tif" in {p.name for p in written} and leaks == []
    assert b"raster_calc" in held and not any(c in held for c in CANARIES)


def _pixels(path: Path) -> bytes:
    """A GeoTIFF's pixels in row order (a tiled file splits its rows), nothing for any other file (this process's
    GDAL has every driver: the hostile inputs themselves are not to be opened here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)  # what the MRF and PDS leaks wrote has none
        try:
            with rasterio.open(path, driver="GTiff") as src:
                return src.read().tobytes()
        except RasterioIOError:
            return b""


def _everything(client: redis.Redis) -> bytes:
    """Every value Redis holds (streams, hashes, lists, sets, sorted sets, strings), joined."""
    out: list[bytes] = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        if kind == b"stream":
            out += [v for _id, fields in client.xrange(key) for kv in fields.items() for v in kv]
        elif kind == b"hash":
            out += [v for kv in client.hgetall(key).items() for v in kv]
        elif kind == b"list":
            out += client.lrange(key, 0, -1)
        elif kind == b"set":
            out += list(client.smembers(key))
        elif kind == b"zset":
            out += [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
        elif kind == b"string":
            out.append(client.get(key) or b"")
    return b"\n".join(out)
