"""GeoParquet through pyarrow for the vector tools: the footer read first, bbox reads, GeoParquet 1.1 outputs, every
layer-writing tool reading and writing `.parquet`, and hostile or broken files refused naming `uri`."""

import io
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyogrio
import pytest
import shapely
from pydantic import BaseModel

from schemas.tools.vector import (
    VectorBufferArgs,
    VectorClipArgs,
    VectorConvertArgs,
    VectorGeometryArgs,
    VectorInfoArgs,
    VectorMeasureArgs,
    VectorReprojectArgs,
    VectorSimplifyArgs,
)
from workers.gdal import geoparquet
from workers.jobkit.confine import confinement
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools import vector

UTM = "EPSG:32633"


def parcels(n: int = 12) -> gpd.GeoDataFrame:
    """Squares in a row, every third a multipolygon, with an integer, a text (one missing) and a float field."""
    geoms: list[shapely.Geometry] = []
    for i in range(n):
        square = shapely.box(500_000 + 100 * i, 5_540_000, 500_080 + 100 * i, 5_540_080)
        geoms.append(
            shapely.MultiPolygon([square, shapely.affinity.translate(square, 0, 200)]) if i % 3 == 0 else square
        )
    names = [f"p{i}" if i != 4 else None for i in range(n)]
    return gpd.GeoDataFrame(
        {"id": np.arange(n), "name": names, "area": [g.area for g in geoms]}, geometry=geoms, crs=UTM
    )


def same(written: gpd.GeoDataFrame, wanted: gpd.GeoDataFrame) -> None:
    """Equal attributes (as text) and geometries, in order."""
    keys = [c for c in wanted.columns if c != wanted.geometry.name]
    assert [c for c in written.columns if c != written.geometry.name] == keys
    assert written[keys].astype(str).reset_index(drop=True).equals(wanted[keys].astype(str).reset_index(drop=True))
    assert shapely.equals(written.geometry.values.to_numpy(), wanted.geometry.values.to_numpy()).all()


def test_describe_reads_what_the_footer_says_before_any_feature(tmp_path: Path) -> None:
    frame = parcels()
    frame.to_parquet(tmp_path / "p.parquet", schema_version="1.1.0", write_covering_bbox=True)

    found = geoparquet.describe(tmp_path / "p.parquet")

    assert (found.layer, found.features, found.geometry_column, found.crs) == ("p", 12, "geometry", UTM)
    assert found.geometry_type == "MultiPolygon" and found.covering  # Polygon with MultiPolygon: GDAL's rule
    assert found.fields == ["id", "name", "area"]  # neither the geometry nor the bbox covering column
    assert found.bounds == pytest.approx(list(frame.total_bounds))


@pytest.mark.parametrize("covering", [True, False], ids=["covering", "no-covering"])
def test_a_bbox_read_keeps_the_features_whose_bounds_meet_the_box(tmp_path: Path, covering: bool) -> None:
    frame = parcels(40)
    frame.to_parquet(tmp_path / "p.parquet", schema_version="1.1.0", write_covering_bbox=covering, row_group_size=7)
    box = (500_850.0, 5_540_050.0, 501_930.0, 5_540_060.0)

    read = geoparquet.read_frame(tmp_path / "p.parquet", bbox=box)

    wanted = frame[frame.geometry.envelope.intersects(shapely.box(*box))]
    assert 0 < len(wanted) < len(frame)
    same(read, wanted)


def test_vector_info_describes_a_geoparquet_layer(tmp_path: Path) -> None:
    parcels().to_parquet(tmp_path / "p.geoparquet")
    ctx = JobContext(call_id="c", roots=[tmp_path])

    info = vector.vector_info(VectorInfoArgs(uri="p.geoparquet"), ctx)

    assert (info.driver, info.layer, info.layers, info.feature_count, info.crs) == ("Parquet", "p", ["p"], 12, UTM)
    assert info.geometry_type == "MultiPolygon" and [f.name for f in info.fields] == ["id", "name", "area"]
    assert info.bounds == pytest.approx(list(parcels().total_bounds))
    with pytest.raises(JobFailed) as failed:
        vector.vector_info(VectorInfoArgs(uri="p.geoparquet", layer="other"), ctx)
    assert (failed.value.code, failed.value.field) == ("layer.not_found", "layer")


def test_convert_gpkg_to_parquet_and_back_keeps_attributes_and_geometries(tmp_path: Path) -> None:
    """Inside a job's confinement, as the workers run it: files opened through pinned folder descriptors."""
    pyogrio.write_dataframe(parcels(), tmp_path / "src.gpkg")
    ctx = JobContext(call_id="c", roots=[tmp_path])

    with confinement(ctx.roots):
        there = vector.vector_convert(VectorConvertArgs(uri="src.gpkg", output="mid.parquet"), ctx)
        back = vector.vector_convert(VectorConvertArgs(uri="mid.parquet", output="back.gpkg"), ctx)

    assert (there.dst_driver, back.src_driver, there.feature_count, back.feature_count) == (
        "Parquet",
        "Parquet",
        12,
        12,
    )
    geo = json.loads(pq.read_metadata(tmp_path / "mid.parquet").metadata[b"geo"])
    assert geo["version"] == "1.1.0" and "covering" in geo["columns"]["geometry"]
    assert gpd.read_parquet(tmp_path / "mid.parquet").crs == UTM
    source = pyogrio.read_dataframe(tmp_path / "src.gpkg")
    same(pyogrio.read_dataframe(tmp_path / "back.gpkg"), source)
    assert not [p.name for p in tmp_path.iterdir() if ".partial" in p.name]


def test_the_driver_argument_names_geoparquet_whatever_the_extension(tmp_path: Path) -> None:
    parcels().to_parquet(tmp_path / "p.parquet")
    ctx = JobContext(call_id="c", roots=[tmp_path])

    result = vector.vector_convert(VectorConvertArgs(uri="p.parquet", output="p.data", driver="GeoParquet"), ctx)

    assert result.dst_driver == "Parquet"
    same(gpd.read_parquet(tmp_path / "p.data"), parcels())


def test_buffer_reads_and_writes_geoparquet_as_shapely_computes_it(tmp_path: Path) -> None:
    parcels().to_parquet(tmp_path / "p.parquet")
    ctx = JobContext(call_id="c", roots=[tmp_path])

    vector.vector_buffer(VectorBufferArgs(uri="p.parquet", output="b.parquet", distance=15, units="crs"), ctx)

    written = gpd.read_parquet(tmp_path / "b.parquet")
    wanted = shapely.buffer(parcels().geometry.values.to_numpy(), 15, quad_segs=16)  # the tool's default resolution
    assert all(g.symmetric_difference(w).area < 1e-6 for g, w in zip(written.geometry, wanted, strict=True))
    assert list(written["name"]) == list(parcels()["name"])


TOOLS: dict[str, tuple[Callable[[Any, JobContext], Any], type[BaseModel], dict[str, Any]]] = {
    "reproject": (vector.vector_reproject, VectorReprojectArgs, {"dst_crs": "EPSG:4326"}),
    "clip": (vector.vector_clip, VectorClipArgs, {"bounds": [500_150.0, 5_539_000.0, 500_770.0, 5_540_250.0]}),
    "buffer": (vector.vector_buffer, VectorBufferArgs, {"distance": 5}),
    "simplify": (vector.vector_simplify, VectorSimplifyArgs, {"tolerance": 1.0, "grid_size": 0.5}),
    "geometry": (vector.vector_geometry, VectorGeometryArgs, {"operation": "centroid"}),
    "measure": (vector.vector_measure, VectorMeasureArgs, {}),
}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_layer_writing_tool_reads_and_writes_geoparquet_as_it_does_a_geopackage(
    tmp_path: Path, tool: str
) -> None:
    run, args, extra = TOOLS[tool]
    parcels().to_parquet(tmp_path / "p.parquet")
    pyogrio.write_dataframe(parcels(), tmp_path / "p.gpkg")
    ctx = JobContext(call_id="c", roots=[tmp_path])

    from_parquet = run(args(uri="p.parquet", output="out.parquet", **extra), ctx)
    from_gpkg = run(args(uri="p.gpkg", output="out.gpkg", **extra), ctx)

    assert from_parquet.output.driver == "Parquet"
    assert from_parquet.feature_count == from_gpkg.feature_count > 0
    same(gpd.read_parquet(tmp_path / "out.parquet"), pyogrio.read_dataframe(tmp_path / "out.gpkg"))


@pytest.mark.parametrize("content", [b"", b"PAR1 not really", b"x" * 4096], ids=["empty", "magic-only", "noise"])
def test_a_file_that_is_not_parquet_fails_as_corrupt_naming_uri(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "bad.parquet").write_bytes(content)
    ctx = JobContext(call_id="c", roots=[tmp_path])

    for call in (
        lambda: vector.vector_info(VectorInfoArgs(uri="bad.parquet"), ctx),
        lambda: vector.vector_convert(VectorConvertArgs(uri="bad.parquet", output="o.gpkg"), ctx),
    ):
        with pytest.raises(JobFailed) as failed:
            call()
        assert (failed.value.code, failed.value.field) == ("gdal.corrupt", "uri")
        assert "Traceback" not in failed.value.message


def test_malformed_geoparquet_metadata_fails_as_corrupt_naming_uri(tmp_path: Path) -> None:
    table = pa.table({"id": [1], "geometry": [shapely.to_wkb(shapely.Point(0, 0))]})
    pq.write_table(table.replace_schema_metadata({b"geo": b'{"primary_column": "nowhere"}'}), tmp_path / "m.parquet")

    with pytest.raises(JobFailed) as failed:
        vector.vector_info(VectorInfoArgs(uri="m.parquet"), JobContext(call_id="c", roots=[tmp_path]))

    assert (failed.value.code, failed.value.field) == ("gdal.corrupt", "uri")


def test_a_parquet_table_without_geometry_is_a_table(tmp_path: Path) -> None:
    """A plain Parquet table is what a CSV is: described, copied, and refused by geometry tools naming `uri`."""
    pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", None]}).to_parquet(tmp_path / "t.parquet", index=False)
    ctx = JobContext(call_id="c", roots=[tmp_path])

    info = vector.vector_info(VectorInfoArgs(uri="t.parquet"), ctx)
    vector.vector_convert(VectorConvertArgs(uri="t.parquet", output="t.gpkg"), ctx)
    with pytest.raises(JobFailed) as failed:
        vector.vector_buffer(VectorBufferArgs(uri="t.parquet", output="b.parquet", distance=1), ctx)

    assert (info.geometry_type, info.feature_count, [f.name for f in info.fields]) == (None, 3, ["id", "name"])
    names = pyogrio.read_dataframe(tmp_path / "t.gpkg")["name"]
    assert list(names[:2]) == ["a", "b"] and pd.isna(names[2])
    assert (failed.value.code, failed.value.field) == ("layer.no_geometry", "uri")


def pointing_elsewhere(inside: Path, outside: Path) -> None:
    """Write at `inside` a GeoParquet file whose column chunks name `outside` as the file that holds their data (a
    `_metadata` summary's `file_path`), `outside` holding other values."""
    parcels(3).to_parquet(inside)
    other = parcels(3).assign(name=["secret-0", "secret-1", "secret-2"])
    other.to_parquet(outside)
    data = inside.read_bytes()
    length = struct.unpack("<I", data[-8:-4])[0]
    meta = pq.read_metadata(inside)
    meta.set_file_path(str(outside))
    footer = io.BytesIO()
    meta.write_metadata_file(footer)  # "PAR1" + the footer + its length + "PAR1"
    inside.write_bytes(data[: -(8 + length)] + footer.getvalue()[4:])


def test_a_file_whose_column_chunks_name_another_file_is_refused_before_its_data(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    pointing_elsewhere(workspace / "p.parquet", outside / "secret.parquet")
    assert pq.read_metadata(workspace / "p.parquet").row_group(0).column(0).file_path == str(outside / "secret.parquet")
    ctx = JobContext(call_id="c", roots=[workspace])

    for call in (
        lambda: vector.vector_info(VectorInfoArgs(uri="p.parquet"), ctx),
        lambda: vector.vector_convert(VectorConvertArgs(uri="p.parquet", output="o.gpkg"), ctx),
    ):
        with confinement(ctx.roots), pytest.raises(JobFailed) as refused:
            call()
        assert (refused.value.code, refused.value.field) == ("path.outside_workspace", "uri")
    assert sorted(p.name for p in workspace.iterdir()) == ["p.parquet"]


def test_a_folder_named_like_a_parquet_file_is_not_read_as_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "d.parquet").mkdir()
    parcels().to_parquet(tmp_path / "d.parquet" / "part-0.parquet")

    with pytest.raises(JobFailed) as refused:
        vector.vector_info(VectorInfoArgs(uri="d.parquet"), JobContext(call_id="c", roots=[tmp_path]))

    assert (refused.value.code, refused.value.field) == ("gdal.not_geospatial", "uri")


def test_arrow_only_columns_are_written_as_gdal_fields(tmp_path: Path) -> None:
    """Lists become JSON text, nullable integers floats with their gaps, times with a zone UTC times."""
    when = pd.to_datetime(["2024-01-01T12:00+02:00", "2024-01-02T00:00+00:00"], utc=True)
    frame = gpd.GeoDataFrame(
        {"tags": [[1, 2], [3]], "n": pd.array([1, None], dtype="Int64"), "when": when},
        geometry=[shapely.Point(0, 0), shapely.Point(1, 1)],
        crs=UTM,
    )
    frame.to_parquet(tmp_path / "t.parquet")

    vector.vector_convert(
        VectorConvertArgs(uri="t.parquet", output="t.gpkg"), JobContext(call_id="c", roots=[tmp_path])
    )

    written = pyogrio.read_dataframe(tmp_path / "t.gpkg")
    assert [json.loads(v) for v in written["tags"]] == [[1, 2], [3]]
    assert written["n"][0] == 1 and pd.isna(written["n"][1])
    assert list(pd.to_datetime(written["when"])) == list(when.tz_convert(None))
