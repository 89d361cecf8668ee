"""The conformance fixtures are Geogate tools: each call is in the log, run by a worker, with one outcome.

A private Redis, one worker and a gateway with the fixtures as extra tools (`GEOGATE_EXTRA_TOOLS`); the SDK client in
both eras. A job that asks the client mid-call is answered over the session (2025-11-25) or by the client's MRTR
retry (2026-07-28), and the questions and answers are events of the call. The module ends with `geogate replay --check`.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, CreateMessageResult, ElicitResult, TextContent

from gateway.results import META_KEY
from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from schemas.ids import call_aggregate
from tests.conformance_suite import FIXTURES
from tests.integration.conftest import start_gateway, start_worker, stop
from tests.log_audit import audit
from tests.mcp_http import frame, headers, parse
from tests.support import free_port, redis_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MODES = ["auto", "legacy"]
"""`auto` negotiates 2026-07-28 (stateless, MRTR); `legacy` is 2025-11-25 (sessions)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class FixtureStack:
    url: str
    env: dict[str, str]

    def store(self) -> EventStore:
        return EventStore(redis.Redis.from_url(self.env["REDIS_URL"]), Keys("geogate"))

    def types(self, call_id: str) -> list[str]:
        return [e.type for e in self.store().read_aggregate(call_aggregate(call_id))]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureStack]:
    workdir = tmp_path_factory.mktemp("fixtures")
    (workdir / "workspace").mkdir()
    with redis_server(workdir) as redis_url:
        env = {**os.environ, "REDIS_URL": redis_url, "GEOGATE_WORKSPACES": str(workdir / "workspace")}
        env["GEOGATE_EXTRA_TOOLS"] = FIXTURES
        port = free_port()
        worker = start_worker(env, concurrency=2)
        gateway = start_gateway(env, port)
        try:
            yield FixtureStack(f"http://127.0.0.1:{port}/mcp", env)
        finally:
            stop(gateway)
            stop(worker)


def call_id(result: CallToolResult) -> str:
    return str((result.meta or {})[META_KEY]["call_id"])


def assert_one_job_run(stack: FixtureStack, result: CallToolResult) -> list[str]:
    """The call's events: requested first, started by a worker, exactly one outcome."""
    types = stack.types(call_id(result))
    assert types[0] == "tool.requested" and types.count("tool.requested") == 1, types
    assert "tool.started" in types, types
    assert types.count("tool.succeeded") + types.count("tool.failed") == 1, types
    return types


def text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_content_error_and_progress_fixtures_are_jobs_with_one_outcome_each(
    fixtures: FixtureStack, mode: str
) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(fixtures.url, mode=mode) as client:
        plain = await client.call_tool("test_simple_text", {})
        image = await client.call_tool("test_image_content", {})
        mixed = await client.call_tool("test_multiple_content_types", {})
        error = await client.call_tool("test_error_handling", {})
        stepped = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)

    assert not plain.is_error and "Plain text from Geogate worker" in text(plain)
    assert [(b.type, b.mime_type) for b in image.content if b.type == "image"] == [("image", "image/png")]
    assert {b.type for b in mixed.content} == {"text", "image", "resource"}
    assert error.is_error and "on purpose" in text(error)
    assert progress == [0, 50, 100]
    for result in (plain, image, mixed, error, stepped):
        assert_one_job_run(fixtures, result)
    assert "tool.progress" in fixtures.types(call_id(stepped))


@pytest.mark.parametrize("mode", MODES)
async def test_a_job_that_asks_twice_is_answered_in_both_eras_and_the_answers_are_in_the_log(
    fixtures: FixtureStack, mode: str
) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        field = next(iter(params.requested_schema["properties"]))
        return ElicitResult(action="accept", content={field: "Ada" if field == "name" else "teal"})

    async with Client(fixtures.url, mode=mode, elicitation_callback=answer) as client:
        result = await client.call_tool("test_input_required_result_multi_round", {})

    assert text(result).startswith("Ada likes teal.")
    assert [m.split(":")[0] for m in asked] == ["Step 1", "Step 2"]
    types = assert_one_job_run(fixtures, result)
    assert types.count("tool.input_requested") == 2 and types.count("tool.input_provided") == 2


@pytest.mark.parametrize("mode", MODES)
async def test_sampling_and_log_lines_reach_the_client_from_the_worker(fixtures: FixtureStack, mode: str) -> None:
    lines: list[str] = []

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        said = TextContent(type="text", text=f"echo: {params.messages[0].content.text}")
        return CreateMessageResult(role="assistant", content=said, model="scripted", stop_reason="endTurn")

    async def log(params: Any) -> None:
        lines.append(str(params.data))

    async with Client(fixtures.url, mode=mode, sampling_callback=sample, logging_callback=log, log_level="info") as c:
        sampled = await c.call_tool("test_sampling", {"prompt": "name a projection"})
        logged = await c.call_tool("test_tool_with_logging", {})

    assert "echo: name a projection" in text(sampled)
    assert lines == [f"test_tool_with_logging: {step}" for step in ("started", "halfway", "done")]
    assert fixtures.types(call_id(logged)).count("tool.logged") == 3
    assert "tool.input_provided" in assert_one_job_run(fixtures, sampled)
    assert_one_job_run(fixtures, logged)


def test_an_mrtr_retry_with_a_tampered_state_is_refused_and_a_missing_answer_is_asked_again(
    fixtures: FixtureStack,
) -> None:
    def call(params: dict[str, Any]) -> dict[str, Any]:
        forms = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
        tool = {"name": "test_input_required_result_elicitation", "arguments": {}, "_meta": forms}
        body = frame("tools/call", {**tool, **params})
        reply = parse(httpx.post(fixtures.url, json=body, headers=headers("tools/call", body["params"]["name"])))
        assert isinstance(reply.message, dict), reply
        return reply.message

    first = call({})["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["user_name"]
    tampered = call({"inputResponses": {"other": {"action": "accept"}}, "requestState": first["requestState"] + "x"})
    assert tampered["error"]["code"] == -32602
    unanswered = call({"inputResponses": {"other": {"action": "accept"}}, "requestState": first["requestState"]})
    assert unanswered["result"]["resultType"] == "input_required"  # the same call asks again
    reply = {"user_name": {"action": "accept", "content": {"name": "Grace"}}}
    done = call({"inputResponses": reply, "requestState": unanswered["result"]["requestState"]})["result"]
    assert done["content"][0]["text"] == "Hello, Grace!"
    types = fixtures.types(done["_meta"][META_KEY]["call_id"])
    assert types.count("tool.requested") == 1 and types.count("tool.input_provided") == 1


async def test_a_tool_that_needs_sampling_is_refused_before_any_call_is_made(fixtures: FixtureStack) -> None:
    before = audit(fixtures.store()).calls["test_missing_capability"]
    async with Client(fixtures.url) as client:  # declares no sampling callback, hence no sampling capability
        with pytest.raises(MCPError) as refused:
            await client.call_tool("test_missing_capability", {})

    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"sampling": {}}}
    assert audit(fixtures.store()).calls["test_missing_capability"] == before == 0


def test_the_log_holds_one_outcome_per_fixture_call_and_replay_check_is_clean(fixtures: FixtureStack) -> None:
    """Runs after the tests above (file order): every call they made, read from the calls stream itself."""
    report = audit(fixtures.store())
    assert report.broken == {} and report.waiting == []
    assert report.total >= 14 and report.finished == report.calls
    check = subprocess.run(
        [sys.executable, "-m", "geogate.cli", "replay", "--check"], env=fixtures.env, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
