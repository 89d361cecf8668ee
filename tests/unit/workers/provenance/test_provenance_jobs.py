"""Jobs leave their files on `tool.succeeded` (inputs with the sha256 they read, outputs as written, the worker's
versions), and the `provenance` job turns the log back into the lineage of a file (issue 49's record)."""

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolSucceeded
from schemas.ids import call_aggregate, new_id
from schemas.tools import SPECS
from workers.jobkit.confine import confinement
from workers.jobkit.digests import inputs_read, outputs_of, sha256_of
from workers.jobkit.files import resolve_in_workspace
from workers.run import runner
from workers.tools import load_all

load_all()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(store: EventStore, settings: Settings, tool: str, **args: object) -> ToolSucceeded:
    spec = SPECS[tool]
    call_id = new_id()
    event = request_event(spec, spec.args.model_validate(args).model_dump(mode="json"), call_id=call_id, actor="t")
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, settings, "host:1", encode(event))
    outcome = store.read_aggregate(call_aggregate(call_id))[-1]
    assert outcome.type == "tool.succeeded", outcome.data
    return outcome.payload(ToolSucceeded)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    profile = {"driver": "GTiff", "width": 16, "height": 8, "count": 1, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(tmp_path / "dem.tif", "w", transform=from_origin(500000, 4100000, 30, 30), **profile) as dst:
        dst.write(np.arange(128, dtype="float32").reshape(1, 8, 16))
    return Settings(redis_url="redis://unused", workspaces=str(tmp_path))


def test_a_digest_is_the_files_sha256_and_a_rewrite_of_the_same_size_is_digested_again(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 1000)
    first = sha256_of(path)
    stat = path.stat()
    path.write_bytes(b"y" * 1000)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))

    assert first == (hashlib.sha256(b"x" * 1000).hexdigest(), 1000)
    assert sha256_of(path) == (hashlib.sha256(b"y" * 1000).hexdigest(), 1000)


def test_inputs_named_in_a_confinement_are_noted_once_with_their_role_and_outputs_only_as_file_refs(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.tif").write_bytes(b"a")
    with confinement([tmp_path]):
        resolve_in_workspace("a.tif", [tmp_path], field="mask")
        resolve_in_workspace("a.tif", [tmp_path], field="uri")
        resolve_in_workspace("new.tif", [tmp_path], field="output", must_exist=False)
        noted = inputs_read()
    result = {
        "output": {"uri": "file:///w/o.tif", "path": "/w/o.tif", "size": 3, "sha256": "ab", "driver": "GTiff"},
        "steps": [{"path": "/w/x.tif", "size": 1, "sha256": "cd"}],
    }

    assert [(n.path, n.role, n.sha256) for n in noted] == [(str(tmp_path / "a.tif"), "mask", _sha(tmp_path / "a.tif"))]
    assert [(o.path, o.role) for o in outputs_of(result)] == [("/w/o.tif", "output")]


def test_a_succeeded_call_carries_what_it_read_and_wrote_and_the_workers_versions(
    fake_store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    done = _run(fake_store, settings, "raster_convert", uri="dem.tif", output="dem_copy.tif")

    assert [(i.path, i.sha256, i.role) for i in done.inputs] == [
        (str(tmp_path / "dem.tif"), _sha(tmp_path / "dem.tif"), "uri")
    ]
    assert [(o.path, o.sha256) for o in done.outputs] == [
        (str(tmp_path / "dem_copy.tif"), _sha(tmp_path / "dem_copy.tif"))
    ]
    assert done.versions["gdal"] == rasterio.__gdal_version__ and "proj" in done.versions


def test_a_read_only_call_carries_no_versions_when_it_reads_no_file(fake_store: EventStore, settings: Settings) -> None:
    done = _run(fake_store, settings, "ping")

    assert done.inputs == [] and done.outputs == [] and done.versions == {}


def test_the_provenance_job_names_every_step_and_input_and_writes_prov_json_beside_the_file(
    fake_store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    first = _run(fake_store, settings, "raster_convert", uri="dem.tif", output="a.tif")
    second = _run(fake_store, settings, "raster_convert", uri="a.tif", output="b.tif", compression="deflate")

    record = _run(fake_store, settings, "provenance", path="b.tif", write_beside=True).result

    assert isinstance(record, dict)
    assert [s["call_id"] for s in record["steps"]] == [first.call_id, second.call_id]
    assert {i["path"] for s in record["steps"] for i in s["inputs"]} == {
        str(tmp_path / "dem.tif"),
        str(tmp_path / "a.tif"),
    }
    assert record["drift"] == [] and record["written"] == str(tmp_path / "b.tif.prov.json")
    beside = json.loads((tmp_path / "b.tif.prov.json").read_text())
    assert beside == record["prov"] and f"call:{second.call_id}" in beside["activity"]


def test_the_provenance_job_reports_a_changed_input_as_drift(
    fake_store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    _run(fake_store, settings, "raster_convert", uri="dem.tif", output="a.tif")
    before = _sha(tmp_path / "dem.tif")
    with rasterio.open(tmp_path / "dem.tif", "r+") as dst:
        dst.write(np.zeros((1, 8, 16), dtype="float32"))

    record = _run(fake_store, settings, "provenance", path="a.tif").result

    assert isinstance(record, dict)
    assert [(d["path"], d["recorded"], d["current"]) for d in record["drift"]] == [
        (str(tmp_path / "dem.tif"), before, _sha(tmp_path / "dem.tif"))
    ]
