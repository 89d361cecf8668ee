"""A cell's part is GeoParquet's table in an Arrow file: the same WKB, fields and `geo` metadata geopandas writes for
the same features, 2D points encoded straight from their coordinates."""

import json

import geopandas as gpd
import numpy as np
import pyarrow.parquet as pq
import pytest
import shapely

from workers.vector.assemble import part_table


def frame(geometries: list[shapely.Geometry]) -> gpd.GeoDataFrame:
    n = len(geometries)
    fields = {"n": np.arange(n), "w": np.linspace(0, 1, n), "name": [f"f{i}" for i in range(n)]}
    return gpd.GeoDataFrame(fields, geometry=geometries, crs="EPSG:4326")


CASES = {
    "points": [shapely.Point(1.5, -2.25), shapely.Point(1e6, 3e-7), shapely.Point(-180, 90)],
    "points-z": [shapely.Point(1, 2, 3), shapely.Point(4, 5, 6)],
    "mixed": [shapely.Point(1, 2), shapely.box(0, 0, 1, 1), shapely.LineString([(0, 0), (1, 1)])],
    "polygons": [shapely.box(0, 0, 1, 1).difference(shapely.box(0.2, 0.2, 0.4, 0.4)), shapely.box(5, 5, 6, 7)],
}


@pytest.mark.parametrize("covering", [False, True], ids=["plain", "covering"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_part_is_what_geopandas_writes_for_the_same_features(tmp_path, case: str, covering: bool) -> None:
    features = frame(CASES[case])
    features.to_parquet(tmp_path / "geopandas.parquet", schema_version="1.1.0", write_covering_bbox=covering)
    expected = pq.read_table(tmp_path / "geopandas.parquet")

    table = part_table(features, covering)

    assert table.column_names == expected.column_names
    assert table["geometry"].to_pylist() == shapely.to_wkb(features.geometry.values.to_numpy(), flavor="iso").tolist()
    for name in expected.column_names:
        assert table[name].to_pylist() == expected[name].to_pylist(), name
    geo, wanted = json.loads(table.schema.metadata[b"geo"]), json.loads(expected.schema.metadata[b"geo"])
    wanted.pop("creator")
    assert geo == wanted
    pq.write_table(table, tmp_path / "part.parquet")
    back = gpd.read_parquet(tmp_path / "part.parquet")
    assert back.crs == features.crs and shapely.equals_exact(back.geometry.values, features.geometry.values).all()
