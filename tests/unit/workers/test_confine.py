"""Issue 14: files are opened as they were checked (pinned folders), and VRTs cannot read outside the roots."""

import os
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import rasterio
import shapely
from rasterio.transform import from_origin

from workers.gdal.errors import open_raster
from workers.gdal.vector_io import read_layer
from workers.jobkit.confine import check_files, check_vrt, confinement, pinned, shown_paths
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace


def _raster(path: Path, value: int) -> Path:
    profile = {"driver": "GTiff", "width": 4, "height": 4, "count": 1, "dtype": "uint8", "crs": "EPSG:4326"}
    with rasterio.open(path, "w", transform=from_origin(0, 4, 1, 1), **profile) as dst:
        dst.write(np.full((1, 4, 4), value, dtype="uint8"))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with `data/dem.tif` (ones) and, outside it, `secret/dem.tif` (sevens)."""
    workspace, outside = tmp_path / "ws", tmp_path / "secret"
    (workspace / "data").mkdir(parents=True)
    outside.mkdir()
    _raster(workspace / "data" / "dem.tif", 1)
    _raster(outside / "dem.tif", 7)
    return workspace, outside


def _swap_for_link(folder: Path, target: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(target, target_is_directory=True)


def test_a_folder_swapped_for_a_link_between_check_and_open_is_refused(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    real = resolve_in_workspace("data/dem.tif", [workspace])
    _swap_for_link(workspace / "data", outside)  # the race: after the check, before GDAL opens

    with confinement([workspace]), pytest.raises(JobFailed) as refused, open_raster(real):
        pass

    assert refused.value.code == "path.outside_workspace" and refused.value.field == "uri"


def test_a_file_swapped_for_a_link_after_the_check_is_refused(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    real = resolve_in_workspace("data/dem.tif", [workspace])
    real.unlink()
    real.symlink_to(outside / "dem.tif")

    with confinement([workspace]), pytest.raises(JobFailed) as refused:
        pinned(real)

    assert refused.value.code == "path.outside_workspace"


def test_a_swap_after_the_folder_is_pinned_still_reads_the_checked_file(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    real = resolve_in_workspace("data/dem.tif", [workspace])

    with confinement([workspace]):
        name = pinned(real)
        _swap_for_link(workspace / "data", outside)
        with rasterio.open(name) as src:
            values = set(src.read(1).ravel().tolist())

    assert name.startswith("/proc/self/fd/") and values == {1}  # never the sevens outside


def test_descriptors_are_closed_when_the_job_ends(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    before = set(os.listdir("/proc/self/fd"))

    with confinement([workspace]):
        pinned(workspace / "data" / "dem.tif")
        pinned(workspace / "data" / "other.tif")  # same folder: one descriptor

    assert set(os.listdir("/proc/self/fd")) == before


def _vrt(path: Path, source: str, relative: bool = False, extra: str = "") -> Path:
    flag = "1" if relative else "0"
    path.write_text(
        '<VRTDataset rasterXSize="4" rasterYSize="4"><VRTRasterBand dataType="Byte" band="1">'
        f'<SimpleSource><SourceFilename relativeToVRT="{flag}">{source}</SourceFilename>'
        f"<SourceBand>1</SourceBand></SimpleSource>{extra}</VRTRasterBand></VRTDataset>"
    )
    return path


@pytest.mark.parametrize(
    ("source", "relative"),
    [
        ("ABSOLUTE_OUTSIDE", False),
        ("../../secret/dem.tif", True),
        ("/vsicurl/http://127.0.0.1:1/x.tif", False),
        ("NETCDF:/etc/x.nc:var", False),
        ("vrt:///etc/hostname", False),
    ],
)
def test_a_vrt_whose_source_is_outside_or_not_a_plain_file_is_refused(
    tree: tuple[Path, Path], source: str, relative: bool
) -> None:
    workspace, outside = tree
    text = str(outside / "dem.tif") if source == "ABSOLUTE_OUTSIDE" else source
    vrt = _vrt(workspace / "data" / "evil.vrt", text, relative)

    with confinement([workspace]), pytest.raises(JobFailed) as refused, open_raster(vrt):
        pass

    assert refused.value.code == "path.outside_workspace" and "evil.vrt" in refused.value.message


def test_a_vrt_disguised_as_a_tif_and_nested_vrts_are_checked_too(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    inner = _vrt(workspace / "data" / "inner.tif", str(outside / "dem.tif"))  # VRT content, .tif name
    outer = _vrt(workspace / "data" / "outer.vrt", "inner.tif", relative=True)

    with pytest.raises(JobFailed) as direct:
        check_vrt(inner, [workspace])
    with pytest.raises(JobFailed) as nested:
        check_vrt(outer, [workspace])

    assert direct.value.code == nested.value.code == "path.outside_workspace"


def test_a_vrt_with_a_python_pixel_function_is_refused(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    vrt = _vrt(workspace / "data" / "py.vrt", "dem.tif", True, "<PixelFunctionLanguage>Python</PixelFunctionLanguage>")

    with pytest.raises(JobFailed) as refused:
        check_vrt(vrt, [workspace])

    assert "Python" in refused.value.message


def test_a_vrt_over_workspace_files_opens_and_reads(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    vrt = _vrt(workspace / "data" / "good.vrt", "dem.tif", relative=True)

    with confinement([workspace]), open_raster(vrt) as src:
        values = set(src.read(1).ravel().tolist())

    assert values == {1}


def test_xml_bombs_in_a_vrt_are_refused_not_expanded(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    bomb = workspace / "data" / "bomb.vrt"
    bomb.write_text(
        '<?xml version="1.0"?><!DOCTYPE VRTDataset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
        "<VRTDataset><VRTRasterBand><SimpleSource><SourceFilename>&b;</SourceFilename></SimpleSource>"
        "</VRTRasterBand></VRTDataset>"
    )

    with pytest.raises(JobFailed) as refused:
        check_vrt(bomb, [workspace])

    assert refused.value.code == "gdal.corrupt"


def test_outside_a_confinement_the_checked_path_is_used_as_is(tree: tuple[Path, Path]) -> None:
    workspace, _ = tree
    real = workspace / "data" / "dem.tif"

    assert pinned(real) == str(real)


def _layer(path: Path, driver: str = "ESRI Shapefile") -> Path:
    wkb = np.array([shapely.to_wkb(shapely.box(0, 0, 1, 1))], dtype=object)
    pyogrio.raw.write(path, wkb, [np.array([1])], ["zone"], driver=driver, geometry_type="Polygon", crs="EPSG:4326")
    return path


def test_a_sidecar_linked_outside_is_refused_before_gdal_reads_it(tree: tuple[Path, Path]) -> None:
    """A `.ovr` or a Shapefile's `.dbf` that is a link to a file outside: GDAL would follow it."""
    workspace, outside = tree
    (workspace / "data" / "dem.tif.ovr").symlink_to(outside / "dem.tif")
    shp = _layer(workspace / "data" / "zones.shp")
    _layer(outside / "zones.shp")
    (workspace / "data" / "zones.dbf").unlink()
    (workspace / "data" / "zones.dbf").symlink_to(outside / "zones.dbf")

    with confinement([workspace]), pytest.raises(JobFailed) as raster, open_raster(workspace / "data" / "dem.tif"):
        pass
    with confinement([workspace]), pytest.raises(JobFailed) as vector:
        read_layer(shp, None, JobContext("c", [workspace]), field="zones")

    assert (raster.value.code, raster.value.field) == ("path.outside_workspace", "uri")
    assert (vector.value.code, vector.value.field) == ("path.outside_workspace", "zones")
    assert "'zones.dbf'" in vector.value.message and str(outside) not in vector.value.message


def test_an_overview_sidecar_that_is_a_vrt_of_an_outside_raster_is_refused(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    _vrt(workspace / "data" / "dem.tif.ovr", str(outside / "dem.tif"))

    with confinement([workspace]), pytest.raises(JobFailed) as refused, open_raster(workspace / "data" / "dem.tif"):
        pass

    assert refused.value.code == "path.outside_workspace" and str(outside) not in refused.value.message


def test_a_geopackage_journal_linked_outside_is_refused(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    gpkg = _layer(workspace / "data" / "zones.gpkg", "GPKG")
    (outside / "x-wal").write_bytes(b"")
    (workspace / "data" / "zones.gpkg-wal").symlink_to(outside / "x-wal")

    with confinement([workspace]), pytest.raises(JobFailed) as refused:
        pinned(gpkg)

    assert refused.value.code == "path.outside_workspace"


def test_sidecars_inside_the_workspace_are_read(tree: tuple[Path, Path]) -> None:
    """Overviews, world files and a Shapefile's own sidecars, links among workspace files included."""
    workspace, _ = tree
    with rasterio.open(workspace / "data" / "dem.tif", "r+") as dst:
        dst.build_overviews([2])
    (workspace / "data" / "dem.tfw").symlink_to(workspace / "data" / "dem.tif")  # a link that stays inside
    shp = _layer(workspace / "data" / "zones.shp")

    with confinement([workspace]):
        with open_raster(workspace / "data" / "dem.tif") as src:
            overviews = src.overviews(1)
        layer = read_layer(shp, None, JobContext("c", [workspace]))

    assert overviews == [2] and layer.columns[0].tolist() == [1]


def test_a_file_gdal_names_under_a_pinned_folder_is_resolved_by_the_kernel(tree: tuple[Path, Path]) -> None:
    """`/proc/self/fd/N/x` is where GDAL reads a pinned file: it is followed to the real folder, not trusted."""
    workspace, outside = tree
    (workspace / "data" / "leak.ovr").symlink_to(outside / "dem.tif")

    with confinement([workspace]):
        folder = Path(pinned(workspace / "data" / "dem.tif")).parent
        found = check_files([str(folder / "dem.tif"), str(folder / "leak.ovr")], [workspace])

    assert found == str(folder / "leak.ovr")
    assert check_files(["/proc/self/environ"], [workspace, Path("/proc")]) == "/proc/self/environ"


def test_paths_in_a_reserved_folder_are_refused_inside_a_job(tmp_path: Path) -> None:
    """The data directory (and each root's `.geogate`) is Geogate's own state even when it sits in a root."""
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "run.json").write_text("{}")

    with confinement([tmp_path], [tmp_path / "state"]), pytest.raises(JobFailed) as refused:
        resolve_in_workspace("state/run.json", [tmp_path])
    outside_a_job = resolve_in_workspace("state/run.json", [tmp_path])

    assert (refused.value.code, refused.value.field) == ("path.outside_workspace", "uri")
    assert outside_a_job == tmp_path / "state" / "run.json"


@pytest.mark.parametrize("neighbour", ["dem_rpc.txt", "DEM.TIF.OVR", "dem.gfs"])
def test_neighbours_named_with_an_underscore_or_in_another_case_are_checked_too(
    tree: tuple[Path, Path], neighbour: str
) -> None:
    workspace, outside = tree
    (workspace / "data" / neighbour).symlink_to(outside / "dem.tif")
    (workspace / "data" / "demo.tif").write_bytes(b"")  # another stem: no neighbour of dem.tif

    with confinement([workspace]), pytest.raises(JobFailed) as refused:
        pinned(workspace / "data" / "dem.tif")
    with confinement([workspace]):
        other = pinned(workspace / "data" / "demo.tif")

    assert refused.value.code == "path.outside_workspace" and other.endswith("/demo.tif")


def test_messages_show_pinned_files_by_their_workspace_names(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    with confinement([tmp_path]):
        source = pinned(tmp_path / "a" / "b" / "dem.hdr")
        temporary = pinned(tmp_path / ".out.geogate.01J.partial.tif")
        shown = shown_paths(f"ENVI: cannot read '{source}'; TIFFWrite:{temporary}: no space; /proc/self/fd/999/x.tif")

    assert source.startswith("/proc/self/fd/")
    assert shown == "ENVI: cannot read 'a/b/dem.hdr'; TIFFWrite:out.tif: no space; x.tif"
