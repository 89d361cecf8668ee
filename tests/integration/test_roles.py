"""The roles and commands: stdio gateway, call timeout, `geogate events tail`, and `geogate dev` shutdown."""

import asyncio
import json
import os
import signal
import subprocess
import sys

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.integration.conftest import Stack, start_gateway, stop
from tests.support import alive, descendants, free_port, wait_for, wait_for_log

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_stdio_gateway_serves_the_same_tools(stack: Stack) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "geogate.cli", "gateway", "--stdio"], env=stack.env
    )
    async with Client(params) as client:
        result = await client.call_tool("raster_info", {"uri": "dem.tif"})

    assert not result.is_error and result.structured_content["width"] == 64


async def test_a_call_that_outlives_its_timeout_gets_an_error_naming_the_call_id(stack: Stack) -> None:
    port = free_port()
    gateway = start_gateway({**stack.env, "GEOGATE_PORT": str(port), "GEOGATE_CALL_TIMEOUT_S": "0.5"}, port)
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            result = await client.call_tool("ping", {"delay_ms": 3000})
    finally:
        stop(gateway)

    error = result.structured_content["error"]
    assert result.is_error and error["code"] == "call.timeout" and error["call_id"] in result.content[0].text


def test_events_tail_prints_json_lines_filtered_by_type(stack: Stack) -> None:
    wait_for_log(stack.store(), lambda: stack.store().redis.xlen("geogate:log:calls") > 0, what="calls in the log")
    done = subprocess.run(
        [sys.executable, "-m", "geogate.cli", "events", "tail", "--json", "-n", "50", "--type", "tool.s*"],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and lines
    assert {line["data"]["type"] for line in lines} <= {"tool.started", "tool.succeeded"}
    assert all(line["aggregate"].startswith("call:") and line["entry_id"] for line in lines)


def test_dev_mode_serves_is_found_by_other_commands_and_stops_every_child_on_sigterm(tmp_path) -> None:
    """`make run` in one terminal; `geogate status` and `geogate events tail` in another, no variables set."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GEOGATE_REDIS_URL", "GEOGATE_DATA_DIR")}
    env |= {"GEOGATE_PORT": str(port), "XDG_STATE_HOME": str(tmp_path / "state")}  # the default data dir there
    proc = subprocess.Popen(
        [sys.executable, "-m", "geogate.cli", "dev", "--workers", "1"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: _health(port), what="geogate dev to serve", timeout_s=60)
        children = descendants(proc.pid)
        assert children, "dev mode started no child processes"
        _other_terminal_finds_it(tmp_path, port)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not list((tmp_path / "state").glob("geogate/*/run.json"))
        assert not (tmp_path / ".geogate").exists()  # nothing of dev's state in the workspace
        wait_for(lambda: not any(alive(pid) for pid in children), what="every child to exit")
    finally:
        if proc.poll() is None:  # a failed assertion: let dev stop its children (a SIGKILL would orphan them)
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    assert b"/mcp" in proc.stdout.read()


def _other_terminal_finds_it(cwd, port: int) -> None:
    bare = {k: v for k, v in os.environ.items() if not k.startswith("GEOGATE_") and k not in ("REDIS_URL",)}
    bare["XDG_STATE_HOME"] = str(cwd / "state")
    asyncio.run(_ping(f"http://127.0.0.1:{port}/mcp"))
    geogate = [sys.executable, "-m", "geogate.cli"]
    tail = subprocess.run([*geogate, "events", "tail", "-n", "3"], env=bare, cwd=cwd, capture_output=True, text=True)
    assert tail.returncode == 0, tail.stderr
    assert "tool.succeeded" in tail.stdout and "(queue " in tail.stdout  # a finished call with its stage durations
    [run] = (cwd / "state").glob("geogate/*/run.json")
    recorded = json.loads(run.read_text())["redis_url"]
    assert f"using Redis {recorded}" in tail.stderr
    status = subprocess.run([*geogate, "status", "--window", "5m"], env=bare, cwd=cwd, capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert "ping" in status.stdout and "Queues" in status.stdout and "Workers" in status.stdout


async def _ping(url: str) -> None:
    async with Client(url) as client:
        assert not (await client.call_tool("ping", {"queue": "gdal"})).is_error


def _health(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()["ok"] is True
    except (httpx.HTTPError, ValueError):
        return False


async def test_metrics_are_read_from_the_log_and_count_what_the_calls_did(stack: Stack) -> None:
    async with Client(stack.url) as client:
        await client.call_tool("ping", {})
        await client.call_tool("raster_info", {"uri": "missing.tif"})
    metrics_url = stack.url.removesuffix("/mcp") + "/metrics"

    text = httpx.get(metrics_url, timeout=10).text

    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"}
    assert samples['geogate_events_total{type="tool.succeeded"}'] >= 1
    assert samples['geogate_tool_failures_total{caller="true",code="path.not_found"}'] >= 1
    assert samples['geogate_stream_length{stream="calls"}'] >= 6
    assert 'geogate_queue_depth{queue="gdal"}' in samples
