"""Provenance from the log: the `writers` projection (a pure fold replay rebuilds), the lineage it leads to, its
PROV-JSON shape and the drift of its files (DESIGN: "what every output remembers")."""

import hashlib
from pathlib import Path

from geogate.calls import keys
from geogate.calls.lineage import lineage, writer_of
from geogate.calls.prov_json import drift, entity_id, prov_document
from geogate.calls.store import EventStore
from geogate.eventlog.replay import replay
from schemas.events import FileDigest, ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


def _digest(path: Path) -> FileDigest:
    data = path.read_bytes()
    return FileDigest(path=str(path), sha256=hashlib.sha256(data).hexdigest(), size=len(data))


def _call(store: EventStore, tool: str, args: dict, inputs: list[FileDigest], outputs: list[FileDigest]) -> str:
    """A finished call as a worker leaves it in the log: requested, started, succeeded with its files."""
    call_id = new_id()
    aggregate = call_aggregate(call_id)
    requested = ToolRequested(call_id=call_id, tool=tool, queue="gdal", args=args, timeout_s=60.0)
    store.append(make_event(aggregate, requested), keys.requested_key(call_id))
    started = ToolStarted(call_id=call_id, worker="node-1:41", attempt="a1", queue_wait_ms=1.0)
    store.append(make_event(aggregate, started), keys.started_key(call_id, "a1"))
    done = ToolSucceeded(
        call_id=call_id,
        result={"dst_crs": "EPSG:3857"},
        worker="node-1:41",
        duration_ms=12.5,
        inputs=[i.model_copy(update={"role": "uri"}) for i in inputs],
        outputs=[o.model_copy(update={"role": "output"}) for o in outputs],
        versions={"gdal": "3.9.0", "geogate": "0.1.0"},
    )
    store.append(make_event(aggregate, done), keys.outcome_key(call_id))
    return call_id


def _files(tmp_path: Path, *names: str) -> list[Path]:
    paths = [tmp_path / name for name in names]
    for n, path in enumerate(paths):
        path.write_bytes(bytes([n]) * (100 + n))
    return paths


def test_a_call_that_wrote_a_file_is_its_writer_and_replay_rebuilds_the_same_projection(
    fake_store: EventStore, tmp_path: Path
) -> None:
    src, out = _files(tmp_path, "src.tif", "out.tif")
    call_id = _call(fake_store, "raster_clip", {"uri": "src.tif", "output": "out.tif"}, [_digest(src)], [_digest(out)])

    writer = writer_of(fake_store, str(out))

    assert writer is not None and writer["call"] == call_id and writer["sha256"] == _digest(out).sha256
    assert writer_of(fake_store, str(src)) is None
    assert replay(fake_store, swap=False).identical


def test_a_later_write_of_the_same_path_becomes_its_writer(fake_store: EventStore, tmp_path: Path) -> None:
    (out,) = _files(tmp_path, "out.tif")
    _call(fake_store, "raster_convert", {}, [], [_digest(out)])
    out.write_bytes(b"again")
    second = _call(fake_store, "raster_convert", {}, [], [_digest(out)])

    assert writer_of(fake_store, str(out))["call"] == second  # type: ignore[index]


def test_the_lineage_follows_each_input_to_the_call_that_wrote_it_dependencies_first(
    fake_store: EventStore, tmp_path: Path
) -> None:
    src, clipped, warped = _files(tmp_path, "src.tif", "clip.tif", "warp.tif")
    clip = _call(fake_store, "raster_clip", {"uri": "src.tif"}, [_digest(src)], [_digest(clipped)])
    warp = _call(fake_store, "raster_reproject", {"uri": "clip.tif"}, [_digest(clipped)], [_digest(warped)])

    steps = lineage(fake_store, str(warped), depth=8)

    assert [s.call_id for s in steps] == [clip, warp]
    assert [s.tool for s in steps] == ["raster_clip", "raster_reproject"]
    assert steps[1].args == {"uri": "clip.tif"} and steps[1].worker == "node-1:41"
    assert steps[1].versions["gdal"] == "3.9.0" and steps[1].decisions == {"dst_crs": "EPSG:3857"}
    assert [s.call_id for s in lineage(fake_store, str(warped), depth=0)] == [warp]


def test_the_lineage_stops_at_an_input_whose_writer_wrote_another_version(
    fake_store: EventStore, tmp_path: Path
) -> None:
    src, clipped, warped = _files(tmp_path, "src.tif", "clip.tif", "warp.tif")
    read_version = _digest(clipped)
    clipped.write_bytes(b"written again after the reprojection read it")
    _call(fake_store, "raster_clip", {}, [_digest(src)], [_digest(clipped)])
    warp = _call(fake_store, "raster_reproject", {}, [read_version], [_digest(warped)])

    assert [s.call_id for s in lineage(fake_store, str(warped), depth=8)] == [warp]


def test_prov_json_names_every_file_and_call_with_used_generated_and_derived_relations(
    fake_store: EventStore, tmp_path: Path
) -> None:
    src, clipped, warped = _files(tmp_path, "src.tif", "clip.tif", "warp.tif")
    clip = _call(fake_store, "raster_clip", {"uri": "src.tif"}, [_digest(src)], [_digest(clipped)])
    warp = _call(fake_store, "raster_reproject", {"uri": "clip.tif"}, [_digest(clipped)], [_digest(warped)])

    doc = prov_document(lineage(fake_store, str(warped), depth=8))

    files = {entity_id(_digest(p)) for p in (src, clipped, warped)}
    assert set(doc["entity"]) == files
    assert set(doc["activity"]) == {f"call:{clip}", f"call:{warp}"}
    assert {(u["prov:activity"], u["prov:entity"]) for u in doc["used"].values()} == {
        (f"call:{clip}", entity_id(_digest(src))),
        (f"call:{warp}", entity_id(_digest(clipped))),
    }
    assert {(g["prov:entity"], g["prov:activity"]) for g in doc["wasGeneratedBy"].values()} == {
        (entity_id(_digest(clipped)), f"call:{clip}"),
        (entity_id(_digest(warped)), f"call:{warp}"),
    }
    assert (entity_id(_digest(warped)), entity_id(_digest(clipped))) in {
        (d["prov:generatedEntity"], d["prov:usedEntity"]) for d in doc["wasDerivedFrom"].values()
    }
    assert doc["agent"]["worker:node-1:41"]["prov:type"] == "prov:SoftwareAgent"
    assert doc["entity"][entity_id(_digest(src))]["gg:sha256"] == _digest(src).sha256


def test_drift_names_a_changed_input_and_a_missing_output_with_their_current_digests(
    fake_store: EventStore, tmp_path: Path
) -> None:
    src, out = _files(tmp_path, "src.tif", "out.tif")
    recorded_src, recorded_out = _digest(src), _digest(out)
    _call(fake_store, "raster_clip", {}, [recorded_src], [recorded_out])
    steps = lineage(fake_store, str(out), depth=8)

    def now(path: str) -> str | None:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if Path(path).exists() else None

    assert drift(steps, now) == []
    src.write_bytes(b"edited")
    out.unlink()

    found = {(d.path, d.role, d.recorded, d.current) for d in drift(steps, now)}

    edited = hashlib.sha256(b"edited").hexdigest()
    assert found == {
        (str(src), "input", recorded_src.sha256, edited),
        (str(out), "output", recorded_out.sha256, None),
    }
