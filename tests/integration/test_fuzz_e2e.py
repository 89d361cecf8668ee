"""Fuzzing the running gateway over real HTTP (issue 14). CI runs a short pass; `make fuzz` runs 10,000 cases.

`GEOGATE_FUZZ_EXAMPLES` sets the cases per kind (tool arguments, raw frames); `GEOGATE_FUZZ_REPORT` names a file
that gets one line per kind with the counts.
"""

import os
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzzing import FRAME_CASES, TOOL_CASES, Tally, check_frame_reply, check_tool_reply, pong, send_frame
from tests.integration.conftest import Stack
from tests.llm_server import ScriptedServer
from tests.mcp_http import call_tool

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("GEOGATE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _report(kind: str, tally: Tally) -> None:
    print(f"fuzz {kind}: {tally.line()}")
    if target := os.environ.get("GEOGATE_FUZZ_REPORT"):
        with Path(target).open("a") as out:
            codes = ", ".join(f"{c}: {n}" for c, n in tally.codes.most_common(12))
            out.write(f"{kind}: {tally.line()}\n  error codes: {codes}\n")


def test_hostile_tool_arguments_for_every_tool_get_field_errors_and_ping_still_answers(
    stack: Stack, llm_server: ScriptedServer
) -> None:
    llm_server.script.load([])  # `ask` calls that validate reach a model that refuses them at once
    tally = Tally()
    with httpx.Client(timeout=120) as client:

        @FUZZ
        @given(TOOL_CASES)
        def case(tool_case: tuple[str, dict]) -> None:
            name, arguments = tool_case
            problem = check_tool_reply(name, arguments, call_tool(client, stack.url, name, arguments), tally)
            assert problem is None, problem
            assert pong(client, stack.url), f"no pong after {name} {arguments!r:.200}"

        case()
    _report("tool arguments", tally)
    assert tally.cases >= EXAMPLES


def test_raw_json_rpc_frames_never_get_a_500_and_ping_still_answers(stack: Stack) -> None:
    tally = Tally()
    with httpx.Client(timeout=120) as client:

        @FUZZ
        @given(FRAME_CASES)
        def case(frame_case: tuple[bytes, str]) -> None:
            body, style = frame_case
            problem = check_frame_reply(body, send_frame(client, stack.url, body, style), tally)
            assert problem is None, problem
            assert pong(client, stack.url), f"no pong after {body[:200]!r}"

        case()
        assert call_tool(client, stack.url, "ping", {}).status == 200
    _report("JSON-RPC frames", tally)
    assert tally.cases >= EXAMPLES
