"""Preflight pieces without HTTP: keys, prompts, the gate's cache reads and hint, persisting."""

import json

import fakeredis
import pytest
from pyproj import CRS

from gateway.preflight.gate import Gate
from gateway.preflight.persist import persist
from geogate.calls.keys import Keys
from geogate.calls.store import AsyncEventStore, EventStore
from geogate.eventlog.replay import replay
from geogate.settings import Settings
from schemas.ids import new_id
from schemas.preflight.answers import parse_answer
from schemas.preflight.justification import PersistItem
from schemas.preflight.keys import cache_key, needed_for, normalise_crs
from schemas.preflight.prompts import PROMPTS
from schemas.tools import TOOLS

pytestmark = pytest.mark.anyio

GOOD = {
    "intent": "equal-area statistics over Europe",
    "alternatives": [{"method": "EPSG:3857", "why_not": "distorts areas"}],
    "choice": {"method": "EPSG:3035", "rationale": "LAEA Europe", "tradeoffs": "shapes bend at the edges"},
    "confidence": "high",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def stores() -> tuple[Gate, EventStore]:
    server = fakeredis.FakeServer()
    keys = Keys(f"t{new_id()[-6:]}")
    gate = Gate(AsyncEventStore(fakeredis.FakeAsyncRedis(server=server), keys), Settings(redis_url="redis://x"))
    return gate, EventStore(fakeredis.FakeRedis(server=server), keys)


def test_three_spellings_of_one_crs_give_one_key() -> None:
    spellings = ["EPSG:3857", "epsg:3857", CRS.from_epsg(3857).to_wkt()]
    assert {normalise_crs(s) for s in spellings} == {"EPSG:3857"}
    keys = {cache_key("crs_datum", "justify_crs_selection", {"dst_crs": normalise_crs(s)}) for s in spellings}
    assert len(keys) == 1


def test_resampling_names_are_case_folded_and_keys_are_shared_across_tools() -> None:
    raster = needed_for(TOOLS["raster_reproject"], {"dst_crs": "EPSG:3035", "resampling": "Bilinear"})
    vector = needed_for(TOOLS["vector_reproject"], {"dst_crs": "epsg:3035"})
    assert raster[1].prompt_args == {"method": "bilinear"}
    assert raster[0].hash == vector[0].hash


def test_editing_a_prompt_changes_its_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache_key("resampling", "justify_resampling_method", {"method": "nearest"})
    template = PROMPTS["justify_resampling_method"]
    monkeypatch.setitem(PROMPTS, template.name, type(template)(**{**template.__dict__, "text": template.text + "!"}))
    assert cache_key("resampling", "justify_resampling_method", {"method": "nearest"}) != before


def test_every_prompt_stays_under_300_tokens() -> None:
    for template in PROMPTS.values():
        rendered = template.render({a: "EPSG:4326" for a in template.arguments})
        assert len(rendered.split()) * 4 / 3 < 300, template.name  # ~0.75 words per token


async def test_a_miss_lists_every_missing_justification_and_records_them(stores) -> None:
    gate, sync = stores
    spec = TOOLS["raster_reproject"]
    needed = needed_for(spec, {"dst_crs": "EPSG:3035", "resampling": "cubic"})

    result = await gate.hint(spec, await gate.missing(needed, "alice"), "alice")

    required = result.structured_content["preflight"]["required"]
    assert result.is_error and [r["domain"] for r in required] == ["crs_datum", "resampling"]
    assert "EPSG:3035" in required[0]["messages"][0]["content"]["text"]
    assert [e.event.type for e in sync.read("justifications")] == ["preflight.required"] * 2


async def test_persisting_validates_every_field_and_persists_nothing_on_any_error(stores) -> None:
    gate, _sync = stores
    spec = TOOLS["raster_reproject"]
    needed = needed_for(spec, {"dst_crs": "EPSG:3035", "resampling": "cubic"})
    await gate.hint(spec, needed, "alice")
    bad = {**GOOD, "confidence": "certain"}
    items = [
        PersistItem(hash=needed[0].hash, domain="crs_datum", justification=GOOD),
        PersistItem(hash=needed[1].hash, domain="crs_datum", justification=bad),
        PersistItem(hash="0" * 64, domain="resampling", justification=GOOD),
    ]

    errors = await persist(gate, items, actor="alice", prefix="items.")

    assert {e.field for e in errors} == {"items.1.domain", "items.1.justification.confidence", "items.2.hash"}
    assert await gate.missing(needed, "alice") == needed


async def test_a_persisted_justification_passes_until_revoked_or_expired(stores) -> None:
    gate, sync = stores
    spec = TOOLS["vector_reproject"]
    needed = needed_for(spec, {"dst_crs": "EPSG:3035"})
    await gate.hint(spec, needed, "alice")
    assert (
        await persist(gate, [PersistItem(hash=needed[0].hash, domain="crs_datum", justification=GOOD)], actor="alice")
        == []
    )
    assert await gate.missing(needed, "alice") == []

    gate.settings = gate.settings.model_copy(update={"justification_ttl_s": {"crs_datum": 0.0}})
    assert await gate.missing(needed, "alice") == needed
    assert sync.read("justifications")[-1].event.type == "justification.expired"


def test_model_answers_are_parsed_from_fenced_json_or_rejected_with_reasons() -> None:
    value, problems = parse_answer("```json\n" + json.dumps(GOOD) + "\n```")
    assert value == GOOD and problems == []
    value, problems = parse_answer(json.dumps({**GOOD, "confidence": "sure"}))
    assert value is None and problems[0].startswith("confidence:")
    assert parse_answer("I think EPSG:3035")[0] is None


async def test_replay_rebuilds_the_justification_cache_exactly(stores) -> None:
    gate, sync = stores
    spec = TOOLS["raster_reproject"]
    for crs in ("EPSG:3035", "EPSG:32633", "EPSG:4326"):
        needed = needed_for(spec, {"dst_crs": crs, "resampling": "nearest"})
        await gate.hint(spec, needed, "bob")
        items = [PersistItem(hash=n.hash, domain=n.domain, justification=GOOD) for n in needed]
        assert await persist(gate, items, actor="bob") == []
    report = replay(sync)

    assert report.identical and report.events == 12
