"""Plans (`plan_run`) through the real lifecycle (`run_call`) on a fakeredis log: validated whole before any step
runs, steps as child calls enqueued as their references succeed, one outcome for the plan."""

import hashlib
from pathlib import Path

import pytest
import rasterio

from geogate.calls import keys
from geogate.calls.lineage import writer_of
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolCancelRequested, ToolRequested
from schemas.events.justification import justification_aggregate
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from schemas.tools.plans import step_call_id
from tests.support import drain_queue
from tests.unit.workers.gdal.conftest import RasterFactory
from workers.run import runner
from workers.tools import load_all

load_all()


def settings_for(root: Path) -> Settings:
    return Settings(redis_url="redis://unused", workspaces=str(root))


def publish(store: EventStore, tool: str, args: dict) -> tuple[str, bytes]:
    valid = TOOLS[tool].args.model_validate(args).model_dump(mode="json")
    call_id = new_id()
    event = request_event(TOOLS[tool], valid, call_id=call_id, actor="tester")
    store.append(event, keys.requested_key(call_id))
    return call_id, encode(event)


def call(store: EventStore, settings: Settings, tool: str, args: dict) -> tuple[str, object]:
    """Publish `tool`, run it and everything it enqueues; its call id and final state."""
    call_id, encoded = publish(store, tool, args)
    runner.run_call(store, settings, "host:p", encoded)
    drain_queue(store, settings)
    state = store.call_state(call_id)
    assert state is not None and state.terminal, state
    return call_id, state


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def three_steps(prefix: str) -> list[dict]:
    return [
        {"id": "clip", "tool": "raster_clip", "args": {"uri": "dem.tif", "output": f"{prefix}c.tif", "bounds": BOUNDS}},
        {
            "id": "slope",
            "tool": "raster_terrain",
            "args": {"uri": {"$ref": "clip.output.path"}, "output": f"{prefix}s.tif", "product": "slope"},
        },
        {"id": "stats", "tool": "raster_stats", "args": {"uri": {"$ref": "slope.output.path"}}},
    ]


BOUNDS = [10.5, 48.5, 11.5, 49.5]


@pytest.fixture
def dem(make_raster: RasterFactory) -> Path:
    return make_raster("dem.tif", size=(64, 96))


def test_a_plan_makes_the_same_files_as_its_calls_made_by_hand(fake_store: EventStore, dem: Path) -> None:
    settings = settings_for(dem.parent)
    call_id, state = call(fake_store, settings, "plan_run", {"steps": three_steps("p")})
    assert state.status == "succeeded", (state.error_code, state.error_message)

    call(fake_store, settings, "raster_clip", {"uri": "dem.tif", "output": "hc.tif", "bounds": BOUNDS})
    call(fake_store, settings, "raster_terrain", {"uri": "hc.tif", "output": "hs.tif", "product": "slope"})
    _, by_hand = call(fake_store, settings, "raster_stats", {"uri": "hs.tif"})

    root = dem.parent
    assert sha(root / "pc.tif") == sha(root / "hc.tif")
    assert sha(root / "ps.tif") == sha(root / "hs.tif")
    steps = {s["id"]: s for s in state.result["steps"]}
    assert [s["call_id"] for s in state.result["steps"]] == [step_call_id(call_id, i) for i in range(3)]
    hand = fake_store.value_of(by_hand.result, by_hand.output_ref)
    assert steps["stats"]["result"]["band_stats"] == hand["band_stats"]
    assert steps["slope"]["result"]["output"]["sha256"] == sha(root / "ps.tif")
    written = writer_of(fake_store, str((root / "ps.tif").resolve()))  # a step's files have their provenance
    assert written is not None and written["call"] == step_call_id(call_id, 1)


def test_every_problem_is_refused_at_once_before_any_step_runs(fake_store: EventStore, dem: Path) -> None:
    steps = three_steps("x")
    steps[2]["args"]["uri"] = {"$ref": "slop.output.path"}  # no such step
    hillshade = {"uri": "dem.tif", "output": "xh.tif", "product": "hillshade", "band": 3}  # dem.tif has one band
    steps.insert(1, {"id": "shade", "tool": "raster_terrain", "args": hillshade})
    steps.append({"id": "zones", "tool": "zonal_stats", "args": {"uri": "missing.tif", "zones": "z.gpkg"}})

    call_id, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": steps})

    assert state.status == "failed" and state.error_code == "plan.invalid"
    events = fake_store.read_aggregate(call_aggregate(call_id))
    problems = next(e for e in events if e.type == "tool.failed").data.details["problems"]
    named = {(p["step"], p["argument"], p["code"]) for p in problems}
    assert ("shade", "band", "band.not_found") in named
    assert ("stats", "uri", "plan.bad_reference") in named
    assert ("zones", "uri", "path.not_found") in named
    assert ("zones", "zones", "path.not_found") in named
    assert fake_store.call_state(step_call_id(call_id, 0)) is None  # nothing ran
    assert not (dem.parent / "xc.tif").exists()


def test_a_dry_run_validates_and_estimates_without_running(fake_store: EventStore, dem: Path) -> None:
    _, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": three_steps("d"), "dry_run": True})

    assert state.status == "succeeded"
    assert state.result["estimate"] == 3 and [s["status"] for s in state.result["steps"]] == ["pending"] * 3
    assert not (dem.parent / "dc.tif").exists()


def test_a_failing_step_fails_the_plan_naming_it(fake_store: EventStore, dem: Path) -> None:
    steps = three_steps("f")
    (dem.parent / "fc.tif").write_bytes(b"taken")  # the clip's output exists: known only when the clip runs

    call_id, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": steps})

    assert state.status == "failed"
    assert "step 'clip' (raster_clip) failed" in state.error_message
    assert fake_store.call_state(step_call_id(call_id, 1)) is None  # its dependants never ran


def test_a_reference_that_does_not_resolve_at_run_time_fails_its_step_and_the_plan(
    fake_store: EventStore, dem: Path
) -> None:
    # a result's list is not typed up front: its 8th band is looked for at run time, and is not there
    again = {"uri": {"$ref": "stats.band_stats.7.path"}, "output": "r2.tif", "product": "hillshade"}
    steps = [
        *three_steps("r")[:1],
        {"id": "stats", "tool": "raster_stats", "args": {"uri": "dem.tif", "bands": [1]}},
        {"id": "again", "tool": "raster_terrain", "after": ["stats"], "args": again},
    ]

    _, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": steps})

    assert state.status == "failed" and "step 'again' (raster_terrain) failed" in state.error_message
    assert state.error_code == "args.invalid" and "uri" in state.error_message


def test_a_cancelled_plan_runs_no_further_step(fake_store: EventStore, dem: Path) -> None:
    settings = settings_for(dem.parent)
    call_id, encoded = publish(fake_store, "plan_run", {"steps": three_steps("k")})
    runner.run_call(fake_store, settings, "host:p", encoded)  # fans out: the clip step is queued
    requested = fake_store.read_aggregate(call_aggregate(call_id))[0]
    cancel = requested.model_copy(update={"id": new_id(), "data": ToolCancelRequested(call_id=call_id, reason="test")})
    fake_store.append(cancel, f"call:{call_id}:cancel")
    drain_queue(fake_store, settings)

    state = fake_store.call_state(call_id)
    assert state is not None and state.status == "failed" and state.error_code == "cancelled"
    assert fake_store.call_state(step_call_id(call_id, 1)) is None
    assert isinstance(requested.data, ToolRequested)


def test_a_plan_whose_steps_need_justifications_runs_no_step_and_issues_every_hash_it_names(
    fake_store: EventStore, dem: Path
) -> None:
    warp = {"uri": "dem.tif", "output": "w.tif", "dst_crs": "EPSG:3035", "resampling": "bilinear"}
    steps = [*three_steps("j")[:1], {"id": "warp", "tool": "raster_reproject", "args": warp}]

    call_id, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": steps})

    assert state.status == "failed" and state.error_code == "preflight.required"
    failed = next(e for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.failed")
    hashes = [item["hash"] for item in failed.data.details]
    assert len(hashes) == 2  # the CRS and the resampling, at once
    issued = [fake_store.redis.hget(fake_store.live.justification(h), "status") for h in hashes]
    assert issued == [b"pending", b"pending"]  # what persist_justifications accepts
    told = [[e.type for e in fake_store.read_aggregate(justification_aggregate(h))] for h in hashes]
    assert told == [["preflight.required"]] * 2  # once each, though the plan was validated twice (hand-off, job)
    assert fake_store.call_state(step_call_id(call_id, 0)) is None  # nothing ran, not even the ungated step


def test_a_clip_box_that_misses_its_raster_is_refused_before_any_step_naming_the_rasters_extent(
    fake_store: EventStore, dem: Path
) -> None:
    steps = three_steps("m")
    steps[0]["args"]["bounds"] = [50.0, 10.0, 51.0, 11.0]  # the DEM is in Europe, the box in the Sahara

    call_id, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": steps})

    assert state.status == "failed" and state.error_code == "plan.invalid"
    failed = next(e for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.failed")
    (problem,) = failed.data.details["problems"]
    assert (problem["step"], problem["argument"], problem["code"]) == ("clip", "bounds", "clip.no_overlap")
    with rasterio.open(dem) as src:
        assert problem["valid"] == pytest.approx(list(src.bounds))
    assert fake_store.call_state(step_call_id(call_id, 0)) is None


def test_a_justified_choice_given_by_reference_is_refused_naming_it(fake_store: EventStore, dem: Path) -> None:
    warp = {"uri": "dem.tif", "output": "r.tif", "dst_crs": {"$ref": "info.crs"}, "resampling": "nearest"}
    steps = [
        {"id": "info", "tool": "raster_info", "args": {"uri": "dem.tif"}},
        {"id": "warp", "tool": "raster_reproject", "args": warp},
    ]

    call_id, state = call(fake_store, settings_for(dem.parent), "plan_run", {"steps": steps})

    assert state.status == "failed" and state.error_code == "plan.invalid"
    failed = next(e for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.failed")
    named = [(p["step"], p["argument"], p["code"]) for p in failed.data.details["problems"]]
    assert named == [("warp", "dst_crs", "plan.justified_reference")]
    assert fake_store.call_state(step_call_id(call_id, 0)) is None


def test_a_reprojection_to_another_bodys_crs_is_refused_before_any_step_naming_what_would_do(
    fake_store: EventStore, dem: Path
) -> None:
    warp = {"uri": "dem.tif", "output": "mars.tif", "dst_crs": "IAU_2015:49900", "resampling": "nearest"}

    call_id, state = call(
        fake_store,
        settings_for(dem.parent),
        "plan_run",
        {"steps": [{"id": "warp", "tool": "raster_reproject", "args": warp}]},
    )

    assert state.status == "failed" and state.error_code == "plan.invalid"
    failed = next(e for e in fake_store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.failed")
    (problem,) = failed.data.details["problems"]
    assert (problem["step"], problem["argument"], problem["code"]) == ("warp", "dst_crs", "crs.no_transformation")
    assert problem["valid"] == ["EPSG:4326"]  # the DEM's own CRS, which is also its geodetic one
    assert fake_store.call_state(step_call_id(call_id, 0)) is None
