"""The analysis tools on GeoParquet layers: read and written through pyarrow, compared with geopandas computed here;
the feature bound taken from the footer before any feature is read; broken and plain Parquet inputs refused naming
the argument."""

import json
import struct
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyarrow.parquet as pq
import pytest

from schemas.tools.overlay import VectorDissolveArgs, VectorJoinArgs, VectorOverlayArgs
from tests.unit.workers.vector.conftest import UTM, at, bounded, parcels, zones
from tests.unit.workers.vector.test_overlay import same_features
from workers.gdal.geoparquet import describe, read_frame
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.overlay import vector_dissolve, vector_join, vector_overlay


def parquet(root: Path, name: str, layer: tuple[list, dict]) -> gpd.GeoDataFrame:
    frame = gpd.GeoDataFrame(layer[1], geometry=layer[0], crs=UTM)
    frame.to_parquet(root / name)
    return frame


def test_overlay_reads_geoparquet_and_writes_geoparquet_1_1_as_geopandas_computes_it(ctx: JobContext) -> None:
    root = ctx.roots[0]
    first, second = parquet(root, "parcels.parquet", parcels()), parquet(root, "zones.parquet", zones())

    result = vector_overlay(VectorOverlayArgs(uri="parcels.parquet", other="zones.parquet", output="out.parquet"), ctx)

    a = first.rename(columns={"id": "id_1", "name": "name_1"})
    b = second.rename(columns={"id": "id_2", "name": "name_2"})
    wanted = gpd.overlay(a, b, how="intersection", keep_geom_type=True)
    written = gpd.read_parquet(root / "out.parquet")
    same_features(written, wanted)
    assert (result.output.driver, result.feature_count, written.crs) == ("Parquet", len(wanted), UTM)
    geo = json.loads(pq.read_metadata(root / "out.parquet").metadata[b"geo"])
    assert geo["version"] == "1.1.0" and "covering" in geo["columns"]["geometry"]
    assert not [p.name for p in root.iterdir() if ".partial" in p.name]


def test_dissolve_and_join_take_a_geoparquet_layer_beside_a_geopackage(ctx: JobContext) -> None:
    root = ctx.roots[0]
    points = [at(10, 10), at(120, 50), at(220, 20), at(900, 900)]
    wells = parquet(root, "wells.parquet", (points, {"depth": [5.0, 7.0, 9.0, 11.0]}))
    districts = parquet(root, "parcels.parquet", parcels())
    districts.to_file(root / "parcels.gpkg")

    vector_join(VectorJoinArgs(uri="wells.parquet", other="parcels.gpkg", output="joined.parquet"), ctx)
    vector_dissolve(VectorDissolveArgs(uri="parcels.parquet", output="all.gpkg"), ctx)

    joined = gpd.read_parquet(root / "joined.parquet")
    wanted = gpd.sjoin(wells, districts, how="inner", predicate="intersects")
    assert sorted(joined["depth"]) == sorted(wanted["depth"]) and sorted(joined["name"]) == sorted(wanted["name"])
    merged = gpd.read_file(root / "all.gpkg").geometry.iloc[0]
    assert merged.symmetric_difference(districts.union_all()).area == pytest.approx(0, abs=1e-6)


def test_a_bbox_read_of_a_written_output_uses_its_covering_column(ctx: JobContext) -> None:
    """The partitioned tools read parts of a layer by box: an output of these tools can be read so."""
    root = ctx.roots[0]
    parquet(root, "parcels.parquet", parcels())
    vector_dissolve(VectorDissolveArgs(uri="parcels.parquet", output="d.parquet", by=["name"]), ctx)

    box = (at(190, 0).x, at(0, 0).y, at(260, 0).x, at(0, 60).y)
    part = read_frame(root / "d.parquet", bbox=box)

    assert describe(root / "d.parquet").covering
    assert sorted(part["name"]) == ["b"]


def spoiled(path: Path) -> None:
    """Overwrite the data between the header and the footer: the footer still reads, a feature does not."""
    data = bytearray(path.read_bytes())
    footer = struct.unpack("<I", data[-8:-4])[0]
    data[4 : len(data) - 8 - footer] = b"\xff" * (len(data) - 12 - footer)
    path.write_bytes(bytes(data))


def test_the_feature_bound_is_refused_from_the_footer_before_a_feature_is_read(tmp_path: Path) -> None:
    parquet(tmp_path, "parcels.parquet", parcels())
    parquet(tmp_path, "zones.parquet", zones())
    spoiled(tmp_path / "parcels.parquet")
    args = VectorOverlayArgs(uri="parcels.parquet", other="zones.parquet", output="out.parquet")

    with pytest.raises(JobFailed) as refused:
        vector_overlay(args, bounded(tmp_path, features=1))
    with pytest.raises(JobFailed) as read:  # the control: its features cannot be read
        vector_overlay(args, bounded(tmp_path, features=100))

    assert (refused.value.code, refused.value.field) == ("limit.features", "uri")
    assert (read.value.code, read.value.field) == ("gdal.corrupt", "uri")


def test_a_corrupt_or_plain_parquet_layer_is_refused_naming_its_argument(ctx: JobContext) -> None:
    root = ctx.roots[0]
    parquet(root, "parcels.parquet", parcels())
    (root / "broken.parquet").write_bytes(b"PAR1" + b"\0" * 64)
    pd.DataFrame({"id": [1, 2]}).to_parquet(root / "table.parquet")

    failures = {}
    for other in ("broken.parquet", "table.parquet"):
        with pytest.raises(JobFailed) as failed:
            vector_overlay(VectorOverlayArgs(uri="parcels.parquet", other=other, output="out.parquet"), ctx)
        failures[other] = (failed.value.code, failed.value.field)

    assert failures == {"broken.parquet": ("gdal.corrupt", "other"), "table.parquet": ("layer.no_geometry", "other")}
    assert sorted(p.name for p in root.iterdir()) == ["broken.parquet", "parcels.parquet", "table.parquet"]
