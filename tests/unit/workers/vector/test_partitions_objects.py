"""A partitioned overlay or join whose layers and output are in a bucket (issue 47): the plan names the layers and
the call's prefix by URI, each cell puts its part whole as an object there, the fan-in gets them into
its own scratch and publishes the layer the folder run writes, and no part is left."""

from pathlib import Path
from typing import Any

import pytest

from geogate.calls.store import EventStore
from schemas.ids import call_aggregate
from tests.unit.workers import test_objects
from tests.unit.workers.gdal.test_tiled import call
from tests.unit.workers.test_objects import BUCKET, PREFIX, ROOT
from tests.unit.workers.test_objects import keys as listed
from tests.unit.workers.vector import test_partitions
from tests.unit.workers.vector.test_partitions import assert_same, read, settings

server, s3 = test_objects.server, test_objects.s3
"""moto's standalone server on a free port, and a client of it with the bucket made (and emptied after)."""
layers = test_partitions.layers
"""Two polygon layers and a point layer in a folder."""


@pytest.mark.parametrize(
    ("tool", "args", "suffix"),
    [
        ("vector_overlay", {"uri": "a.gpkg", "other": "b.gpkg", "how": "union"}, ".gpkg"),
        ("vector_join", {"uri": "a.gpkg", "other": "pts.gpkg", "predicate": "intersects"}, ".parquet"),
        ("vector_join", {"uri": "pts.gpkg", "other": "few.gpkg", "how": "left"}, ".gpkg"),  # runs of the points
    ],
    ids=["overlay", "join-cells", "join-runs"],
)
def test_a_partitioned_call_on_the_bucket_writes_the_folder_runs_layer(
    fake_store: EventStore,
    s3: Any,
    layers: Path,
    tool: str,
    args: dict,
    suffix: str,
) -> None:
    test_partitions.polygons(50.0, 2).iloc[::4].to_file(layers / "few.gpkg")
    for name in ("a.gpkg", "b.gpkg", "pts.gpkg", "few.gpkg"):
        s3.upload_file(str(layers / name), BUCKET, f"{PREFIX}/{name}")
    on_bucket = settings(layers, partitioned=True).model_copy(update={"workspaces": ROOT})

    folder = call(fake_store, settings(layers, partitioned=True), tool, **args, output=f"out{suffix}")[1]
    call_id, bucket = call(fake_store, on_bucket, tool, **args, output=f"out{suffix}")

    got = layers / f"got{suffix}"
    got.write_bytes(s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/out{suffix}")["Body"].read())
    assert_same(read(layers / f"out{suffix}"), read(got))
    assert bucket["feature_count"] == folder["feature_count"] > 0
    fanned = [e for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.fanned_out"]
    assert fanned and fanned[0].data.folder == f"{ROOT}/.geogate/tiles/{call_id}" and fanned[0].data.tiles > 1
    assert listed(s3) == sorted(f"{PREFIX}/{n}" for n in ("a.gpkg", "b.gpkg", "pts.gpkg", "few.gpkg", f"out{suffix}"))
