"""A tiled composite written into a bucket (issue 47): its tiles put their windows as part objects, the fan-in
publishes the folder run's COG byte for byte, and no part is left under the call's prefix."""

from pathlib import Path
from typing import Any

from geogate.calls.store import EventStore
from tests.stac.catalog import SentinelCatalog
from tests.unit.workers import test_objects
from tests.unit.workers.gdal.test_tiled import call, tile_types
from tests.unit.workers.stac.test_composite import composite_args, settings_for
from tests.unit.workers.test_objects import BUCKET, PREFIX, ROOT
from tests.unit.workers.test_objects import keys as listed

server, s3 = test_objects.server, test_objects.s3
"""moto's standalone server on a free port, and a client of it with the bucket made (and emptied after)."""


def test_a_tiled_composite_into_the_bucket_is_the_folder_runs_cog(
    catalog: SentinelCatalog, fake_store: EventStore, s3: Any, tmp_path: Path
) -> None:
    args = composite_args(catalog, resolution=20)  # 2 × 2 tiles of 256
    in_folder = settings_for(catalog, tmp_path, tiled=True)
    on_bucket = in_folder.model_copy(update={"workspaces": ROOT})

    call(fake_store, in_folder, "stac_composite", **args, output="out.tif")
    call_id, result = call(fake_store, on_bucket, "stac_composite", **args, output="out.tif")

    published = s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/out.tif")["Body"].read()
    assert published == (tmp_path / "out.tif").read_bytes()
    assert result["output"]["uri"] == f"{ROOT}/out.tif"
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert listed(s3) == [f"{PREFIX}/out.tif"]
