"""Which calls preflight asks a justification for follows one rule, written in docs/preflight.md with an example of a
justification that the refusal carries too."""

import json
import re
from pathlib import Path

import fakeredis
import pytest

from gateway.preflight.gate import Gate
from gateway.preflight.persist import persist
from geogate.calls.keys import Keys
from geogate.calls.store import AsyncEventStore
from geogate.settings import Settings
from schemas.ids import new_id
from schemas.preflight.justification import EXAMPLE, Justification, PersistItem
from schemas.preflight.keys import needed_for
from schemas.tools import TOOLS
from schemas.tools.raster import Resampling

DOC = Path(__file__).resolve().parents[3] / "docs" / "preflight.md"
CHOICES = {"dst_crs"}
"""Arguments that choose a CRS to reproject into."""

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def documented_gates() -> dict[str, set[str]]:
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section("What needs a justification"), re.MULTILINE)
    return {tool: set(re.findall(r"`(\w+)`", gated)) for tool, gated in rows}


def gated(name: str) -> set[str]:
    return {arg for spec in TOOLS[name].preflight for arg in spec.args.values()}


def test_every_tool_argument_that_chooses_a_crs_or_a_warp_resampling_is_justified() -> None:
    for name, spec in TOOLS.items():
        for arg, info in spec.args.model_fields.items():
            warp_method = info.annotation is Resampling and arg == "resampling"
            if arg in CHOICES or warp_method:
                assert arg in gated(name), f"{name}.{arg} chooses how the data is transformed: it needs preflight"


def test_the_documented_table_is_what_the_specs_declare() -> None:
    documented = documented_gates()
    declared = {name: gated(name) for name, spec in TOOLS.items() if spec.preflight}
    assert {tool: args for tool, args in documented.items() if args} == declared
    assert {"zonal_stats", "vector_clip"} <= {tool for tool, args in documented.items() if not args}


def test_the_documented_example_is_a_valid_justification_and_the_one_the_refusal_carries() -> None:
    block = re.search(r"```json\n(.*?)```", section("A justification"), re.DOTALL)
    assert block is not None
    example = json.loads(block.group(1))
    Justification.model_validate(example)
    assert example == EXAMPLE


async def test_a_refused_call_shows_an_example_that_persists_as_it_is() -> None:
    server = fakeredis.FakeServer()
    store = AsyncEventStore(fakeredis.FakeAsyncRedis(server=server), Keys(f"t{new_id()[-6:]}"))
    gate = Gate(store, Settings(redis_url="redis://x"))
    spec = TOOLS["vector_reproject"]
    needed = needed_for(spec, {"dst_crs": "EPSG:3035"})

    refusal = await gate.hint(spec, await gate.missing(needed, "alice"), "alice")

    example = refusal.structured_content["preflight"]["example"]
    assert json.dumps(example) in refusal.content[0].text
    assert all(key in refusal.content[0].text for key in ("intent", "alternatives", "choice", "confidence"))
    item = PersistItem(hash=needed[0].hash, domain="crs_datum", justification=example)
    assert await persist(gate, [item], actor="alice") == []
    assert await gate.missing(needed, "alice") == []
