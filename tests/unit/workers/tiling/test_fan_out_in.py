"""Fan-out and fan-in on the log (issue 29), through the real lifecycle on a fakeredis log: each tile is a call
appended once, the fan-in is pushed once whatever the redeliveries, a failed tile fails the parent by name, and a
replay rebuilds the parent's tile state from the events alone."""

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rasterio
from affine import Affine

from geogate.calls import keys
from geogate.calls.keys import celery_queue_key, celery_queue_keys
from geogate.calls.publish import enqueue_op, request_event
from geogate.calls.store import EventStore
from geogate.eventlog.replay import replay
from geogate.queue.message import envelope_args
from geogate.queue.unacked import UNACKED, UNACKED_INDEX
from geogate.settings import Settings
from schemas.codec import decode, encode
from schemas.events import Event, ToolCancelRequested, ToolFailed, ToolRequested, ToolStarted
from schemas.ids import call_aggregate, new_id
from schemas.routes import tile_priority
from schemas.tools import TOOLS
from schemas.tools.tiling import TileArgs, tile_call_id, tile_of
from tests.support import drain_queue, make_event
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import JOBS, Finished
from workers.run import runner
from workers.run.reaper import Reaper
from workers.tiling.declare import TILERS
from workers.tiling.fan_out import fan_out
from workers.tiling.grid import PARTS
from workers.tools import load_all

load_all()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    data = np.arange(700 * 600, dtype="float32").reshape(1, 700, 600)
    profile = {"driver": "GTiff", "width": 600, "height": 700, "count": 1, "dtype": "float32", "crs": "EPSG:4326"}
    with rasterio.open(tmp_path / "src.tif", "w", transform=Affine(0.01, 0, 10, 0, -0.01, 50), **profile) as dst:
        dst.write(data)
    return Settings(redis_url="redis://unused", workspaces=str(tmp_path), tile_min_pixels=65_536, tile_size=256)


def publish(store: EventStore) -> Event:
    call_id = new_id()
    event = request_event(TOOLS["raster_stats"], {"uri": "src.tif"}, call_id=call_id, actor="tester", trace_id="t1")
    store.append(event, keys.requested_key(call_id))
    return event


def queued(store: EventStore) -> list[Event]:
    """The queue's messages in the order workers take them: list by list (calls, then tiles), each from the right."""
    raws = [raw for key in celery_queue_keys("gdal") for raw in reversed(store.redis.lrange(key, 0, -1))]
    return [decode(envelope_args(json.loads(raw))[0]) for raw in raws]  # type: ignore[index, arg-type]


def types(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


def test_a_large_call_fans_out_its_tiles_as_calls_of_its_own_and_gives_its_worker_back(
    fake_store: EventStore, settings: Settings
) -> None:
    parent = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", encode(parent))

    call_id = parent.payload(ToolRequested).call_id
    assert types(fake_store, call_id) == ["tool.requested", "tool.started", "tool.fanned_out"]
    tiles = queued(fake_store)
    # row-major, the order of a staging file's bytes: its digest follows the rows of tiles as they end
    assert [t.payload(ToolRequested).call_id for t in tiles] == [tile_call_id(call_id, i) for i in range(9)]
    corners = [(t.payload(ToolRequested).args["window"]["row_off"], t.payload(ToolRequested).args["window"]["col_off"])
               for t in tiles]  # fmt: skip
    assert corners == sorted(corners)
    assert {(t.actor, t.trace_id) for t in tiles} == {("tester", "t1")}
    started = fake_store.read_aggregate(call_aggregate(call_id))[1]
    assert {t.causation_id for t in tiles} == {started.id}
    assert call_id not in {k.decode() for k in fake_store.redis.hkeys(fake_store.live.running())}


def test_a_call_published_after_a_fan_out_is_taken_before_every_tile(
    fake_store: EventStore, settings: Settings
) -> None:
    """Fairness: tiles wait on their queue's tile list, which workers take from only when no call waits."""
    parent = publish(fake_store)
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    ping = request_event(TOOLS["ping"], {}, call_id=new_id(), actor="another client")
    fake_store.append(ping, keys.requested_key(ping.payload(ToolRequested).call_id), effects=[enqueue_op(ping)])

    order = [t.payload(ToolRequested).tool for t in queued(fake_store)]

    assert order == ["ping"] + ["raster_stats.tile"] * 9
    assert drain_queue(fake_store, settings, limit=1) == 1
    assert fake_store.call_state(ping.payload(ToolRequested).call_id).status == "succeeded"


def test_a_smaller_tiled_call_s_tiles_are_taken_before_a_larger_one_s_planned_earlier(
    fake_store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    """Fairness between tiled calls: a 9-tile call's tiles wait on a list taken before a 36-tile call's."""
    profile = {"driver": "GTiff", "width": 1536, "height": 1536, "count": 1, "dtype": "uint8", "crs": "EPSG:4326"}
    with rasterio.open(tmp_path / "large.tif", "w", transform=Affine(0.01, 0, 10, 0, -0.01, 50), **profile):
        pass
    large = request_event(TOOLS["raster_stats"], {"uri": "large.tif"}, call_id=new_id(), actor="one client")
    fake_store.append(large, keys.requested_key(large.payload(ToolRequested).call_id))
    runner.run_call(fake_store, settings, "host:1", encode(large))
    small = publish(fake_store)  # another client's, planned after
    runner.run_call(fake_store, settings, "host:1", encode(small))

    order = [tile_of(t.payload(ToolRequested).call_id)[0] for t in queued(fake_store)]  # type: ignore[index]

    ids = (small.payload(ToolRequested).call_id, large.payload(ToolRequested).call_id)
    assert order == [ids[0]] * 9 + [ids[1]] * 36


def test_planning_again_appends_no_tile_twice(fake_store: EventStore, settings: Settings) -> None:
    """A planner run again (its start is still current: a redelivery before the fan-out landed) adds nothing."""
    parent = publish(fake_store)
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    call_id = parent.payload(ToolRequested).call_id
    started = next(e for e in fake_store.read_aggregate(call_aggregate(call_id)) if isinstance(e.data, ToolStarted))
    fake_store.redis.hset(fake_store.live.call(call_id), "attempt", started.payload(ToolStarted).attempt)
    ctx = JobContext(call_id=call_id, roots=settings.workspace_roots(), settings=settings)
    plan = TILERS["raster_stats"].plan(TOOLS["raster_stats"].args.model_validate({"uri": "src.tif"}), ctx)

    assert fan_out(fake_store, parent, started, plan)

    assert len(queued(fake_store)) == 9
    assert all(types(fake_store, tile_call_id(call_id, i)) == ["tool.requested"] for i in range(9))
    assert types(fake_store, call_id).count("tool.fanned_out") == 1


def test_the_fan_in_is_pushed_once_whatever_the_redeliveries(fake_store: EventStore, settings: Settings) -> None:
    parent = publish(fake_store)
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    tiles = [encode(t) for t in queued(fake_store)]
    fake_store.redis.delete(*celery_queue_keys("gdal"))

    for payload in tiles + tiles:  # every tile delivered twice (acks_late redelivery)
        runner.run_call(fake_store, settings, "host:2", payload)

    pushed = queued(fake_store)
    assert [e.payload(ToolRequested).tool for e in pushed] == ["tiles.fan_in"]
    assert drain_queue(fake_store, settings) == 1
    call_id = parent.payload(ToolRequested).call_id
    assert types(fake_store, call_id)[-2:] == ["tool.fan_in_started", "tool.succeeded"]
    assert fake_store.call_state(call_id).result["total_pixels"] == 700 * 600
    progress = [
        e.data.progress for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.progress"
    ]
    assert progress == sorted(progress) and progress[-1] == 9


def test_a_failed_tile_fails_the_parent_naming_the_tile_its_window_and_the_cause(
    fake_store: EventStore, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = JOBS["raster_stats.tile"]

    def fourth_fails(args: TileArgs, ctx: object) -> object:
        if args.index == 4:
            raise JobFailed("gdal.corrupt", "uri: 'src.tif' could not be read: TIFFReadEncodedTile() failed")
        return job(args, ctx)  # type: ignore[arg-type]

    monkeypatch.setitem(JOBS, "raster_stats.tile", fourth_fails)
    parent = publish(fake_store)
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    drain_queue(fake_store, settings)

    call_id = parent.payload(ToolRequested).call_id
    failed = fake_store.read_aggregate(call_aggregate(call_id))[-1].payload(ToolFailed)
    assert failed.code == "gdal.corrupt" and failed.details["tile"] == 4
    assert failed.details["window"] == {"col_off": 256, "row_off": 256, "width": 256, "height": 256}
    assert "tile 4 (columns 256–511, rows 256–511)" in failed.message and "TIFFReadEncodedTile" in failed.message
    assert fake_store.call_state(call_id).cancel  # the other tiles were told to stop
    later = [fake_store.call_state(tile_call_id(call_id, i)) for i in range(5, 9)]
    assert {s.error_code for s in later} == {"cancelled"}
    assert not (tmp_path / PARTS / call_id).exists()


def parts_seen_at_outcomes(monkeypatch: pytest.MonkeyPatch, folder: Path) -> dict[str, bool]:
    """Whether `folder` exists as each call's outcome is about to land (a follow-up runs just before it lands)."""
    seen: dict[str, bool] = {}

    def watch(finished: Finished) -> None:
        seen[finished.requested.payload(ToolRequested).call_id] = folder.exists()

    monkeypatch.setattr(runner, "FOLLOW_UPS", [*runner.FOLLOW_UPS, watch])
    return seen


def cancel(store: EventStore, call_id: str) -> None:
    store.append(make_event(call_aggregate(call_id), ToolCancelRequested(call_id=call_id)), keys.cancel_key(call_id))


def test_a_cancelled_tiled_call_has_no_parts_left_when_its_outcome_lands(
    fake_store: EventStore, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = publish(fake_store)
    call_id = parent.payload(ToolRequested).call_id
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    assert (tmp_path / PARTS / call_id).is_dir()
    cancel(fake_store, call_id)
    seen = parts_seen_at_outcomes(monkeypatch, tmp_path / PARTS / call_id)

    drain_queue(fake_store, settings)  # the tiles, each stopped by the cancel, then the fan-in

    assert fake_store.call_state(call_id).error_code == "cancelled"
    assert seen[call_id] is False  # gone before the outcome, not after it
    assert not (tmp_path / ".geogate").exists()


def test_a_cancel_during_the_assembly_stops_it_before_the_output_is_published(
    fake_store: EventStore, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_id = new_id()
    args = {"uri": "src.tif", "output": "out.tif", "compression": "deflate", "blockxsize": 256, "blockysize": 256}
    event = request_event(TOOLS["raster_convert"], args, call_id=call_id, actor="tester")
    fake_store.append(event, keys.requested_key(call_id))
    tiled = TILERS["raster_convert"]

    def cancelled_while_assembling(*args: Any) -> Any:
        cancel(fake_store, call_id)  # lands once the fan-in has started, as the output is being written
        return tiled.assemble(*args)

    monkeypatch.setitem(TILERS, "raster_convert", replace(tiled, assemble=cancelled_while_assembling))
    seen = parts_seen_at_outcomes(monkeypatch, tmp_path / PARTS / call_id)

    runner.run_call(fake_store, settings, "host:1", encode(event))
    drain_queue(fake_store, settings)

    state = fake_store.call_state(call_id)
    assert types(fake_store, call_id)[-3:] == ["tool.fan_in_started", "tool.cancel_requested", "tool.failed"]
    assert state.error_code == "cancelled"
    assert seen[call_id] is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.tif"]  # no output, no temporary file, no parts


def test_an_assembly_that_runs_out_of_memory_fails_the_call_with_out_of_memory(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def past_the_cap(*args: Any) -> Any:
        return np.empty(1 << 62, dtype="uint8")  # as under RLIMIT_AS: the allocation fails where it is made

    monkeypatch.setitem(TILERS, "raster_stats", replace(TILERS["raster_stats"], assemble=past_the_cap))
    parent = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", encode(parent))
    drain_queue(fake_store, settings)

    state = fake_store.call_state(parent.payload(ToolRequested).call_id)
    assert (state.status, state.error_code) == ("failed", "job.out_of_memory")


def test_a_replay_rebuilds_the_parents_tile_state_from_the_log(fake_store: EventStore, settings: Settings) -> None:
    parent = publish(fake_store)
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    drain_queue(fake_store, settings)
    call_id = parent.payload(ToolRequested).call_id
    before = fake_store.hash_strings(fake_store.live.tiles(call_id))

    fake_store.redis.delete(fake_store.live.tiles(call_id))
    report = replay(fake_store)

    assert before == {str(i): "done" for i in range(9)}
    assert fake_store.hash_strings(fake_store.live.tiles(call_id)) == before
    assert report.missing_live == [fake_store.live.tiles(call_id)] or not report.identical


def test_a_fan_in_taken_by_a_node_that_died_before_its_start_is_pushed_again(
    fake_store: EventStore, settings: Settings
) -> None:
    parent = publish(fake_store)
    runner.run_call(fake_store, settings, "host:1", encode(parent))
    for tile in queued(fake_store):
        fake_store.redis.rpop(celery_queue_key("gdal", tile_priority(9)))
        runner.run_call(fake_store, settings, "host:2", encode(tile))
    taken = fake_store.redis.rpop(celery_queue_key("gdal"))  # the fan-in push, delivered to a node that then died
    fake_store.redis.hset(UNACKED, "tag-1", json.dumps([json.loads(taken), "gdal", "gdal"]))
    fake_store.redis.zadd(UNACKED_INDEX, {"tag-1": time.time() - settings.lease_ttl_s - 5})

    reaped = Reaper(fake_store, settings, owner="other-node").run_once()

    call_id = parent.payload(ToolRequested).call_id
    assert [(r.call_id, r.stage, r.action) for r in reaped] == [(call_id, "fan_in", "redispatched")]
    assert Reaper(fake_store, settings, owner="other-node").run_once() == []  # once per stranded push
    assert drain_queue(fake_store, settings) == 1
    assert types(fake_store, call_id)[-3:] == ["tool.redispatched", "tool.fan_in_started", "tool.succeeded"]


def test_a_tiled_calls_result_handler_runs_over_the_assembled_result(
    fake_store: EventStore, settings: Settings
) -> None:
    call_id = new_id()
    handler = {"language": "jmespath", "script": "band_stats[0].valid_count"}
    event = request_event(
        TOOLS["raster_stats"], {"uri": "src.tif"}, call_id=call_id, actor="tester", result_handler=handler
    )
    fake_store.append(event, keys.requested_key(call_id))

    runner.run_call(fake_store, settings, "host:1", encode(event))
    drain_queue(fake_store, settings)
    drain_queue(fake_store, settings, "sandbox")

    assert types(fake_store, call_id)[-1] == "handler.succeeded"
    handled = fake_store.hash_strings(fake_store.live.handler(call_id))
    assert json.loads(handled["value"]) == 700 * 600
