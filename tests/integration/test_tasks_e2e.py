"""The tasks extension on the real stack: tasks outlive the gateway that accepted them and the worker that ran them.

A private Redis, one worker (its own process group) and two gateway processes: A accepts calls (a short threshold,
so a `ping` held for 30 s becomes a task), B answers `tasks/get` for them from the same projection. An MRTR retry
(no task) reaches a gateway other than the one that sealed its `requestState`. Each fault test
ends by checking the log: one outcome per call and `geogate replay --check` clean.
"""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from gateway.results import META_KEY
from geogate.calls.keys import Keys
from geogate.calls.projections.call_state import CallState
from geogate.calls.store import EventStore
from schemas.ids import call_aggregate
from tests.conformance_suite import FIXTURES
from tests.integration.conftest import start_gateway, start_worker, stop
from tests.mcp_http import frame, headers, parse
from tests.support import free_port, redis_server, wait_for_log

pytestmark = pytest.mark.integration

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
"""A client that declared the tasks extension and forms (`confirm_delete` asks for a confirmation)."""


@dataclass
class TaskStack:
    env: dict[str, str]
    workspace: Path
    worker: subprocess.Popen[bytes]
    accepting: subprocess.Popen[bytes]
    url_a: str
    url_b: str

    def store(self) -> EventStore:
        import redis

        return EventStore(redis.Redis.from_url(self.env["REDIS_URL"]), Keys("geogate"))


def rpc(url: str, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """One stateless 2026-07-28 request from a client that declared the tasks extension; the JSON-RPC message."""
    body = frame(method, {**params, "_meta": {"io.modelcontextprotocol/clientCapabilities": TASKS}})
    reply = parse(httpx.post(url, json=body, headers=headers(method, name), timeout=60))
    assert isinstance(reply.message, dict), reply
    return reply.message


def create(url: str, tool: str, arguments: dict[str, Any]) -> str:
    result = rpc(url, "tools/call", {"name": tool, "arguments": arguments}, tool)["result"]
    # a fast worker may already have asked for input when the handle is built
    assert result["resultType"] == "task" and result["status"] in ("working", "input_required"), result
    assert result["ttlMs"] > 0 and result["pollIntervalMs"] > 0
    return str(result["taskId"])


def get(url: str, task_id: str) -> dict[str, Any]:
    return rpc(url, "tasks/get", {"taskId": task_id}, task_id)["result"]


def outcome(stack: TaskStack, call_id: str, timeout_s: float) -> CallState:
    store = stack.store()
    wait_for_log(
        store, lambda: (s := store.call_state(call_id)) is not None and s.terminal, what="outcome", timeout_s=timeout_s
    )
    state = store.call_state(call_id)
    assert state is not None
    return state


def assert_log_clean(stack: TaskStack, call_id: str) -> list[str]:
    types = [e.type for e in stack.store().read_aggregate(call_aggregate(call_id))]
    assert types.count("tool.requested") == 1
    assert types.count("tool.succeeded") + types.count("tool.failed") == 1, types
    check = subprocess.run(
        [sys.executable, "-m", "geogate.cli", "replay", "--check"], env=stack.env, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    return types


@pytest.fixture(scope="module")
def task_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TaskStack]:
    workdir = tmp_path_factory.mktemp("tasks")
    workspace = workdir / "workspace"
    workspace.mkdir()
    with redis_server(workdir) as redis_url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "GEOGATE_WORKSPACES": str(workspace),
            "GEOGATE_HEARTBEAT_S": "0.5",
            "GEOGATE_LEASE_TTL_S": "3",
            "GEOGATE_VISIBILITY_TIMEOUT_S": "120",
            "GEOGATE_EXTRA_TOOLS": FIXTURES,  # the workers run the fixtures' jobs (`confirm_delete`, …)
        }
        port_a, port_b = free_port(), free_port()
        worker = start_worker(env, concurrency=2)
        accepting = start_gateway({**env, "GEOGATE_TASK_AFTER_S": "1"}, port_a)
        reading = start_gateway({**env, "GEOGATE_TASK_AFTER_S": "1"}, port_b)
        stack = TaskStack(
            env, workspace, worker, accepting, f"http://127.0.0.1:{port_a}/mcp", f"http://127.0.0.1:{port_b}/mcp"
        )
        try:
            yield stack
        finally:
            for proc in (stack.accepting, reading, stack.worker):
                stop(proc)


def test_a_30_second_job_is_a_task_polled_to_completion_through_a_second_gateway_after_the_first_is_killed(
    task_stack: TaskStack,
) -> None:
    task_id = create(task_stack.url_a, "ping", {"delay_ms": 30_000})  # past the 1 s threshold: a task
    working = get(task_stack.url_b, task_id)  # another replica knows it at once
    assert working["status"] == "working" and working["taskId"] == task_id and "result" not in working

    task_stack.accepting.kill()  # SIGKILL the gateway that accepted the call
    task_stack.accepting.wait()

    state = outcome(task_stack, task_id, timeout_s=120)
    done = get(task_stack.url_b, task_id)
    assert state.status == "succeeded" and done["status"] == "completed"
    assert done["result"]["structuredContent"]["pong"] is True and done["result"]["isError"] is False
    assert done["lastUpdatedAt"] >= done["createdAt"]
    assert_log_clean(task_stack, task_id)


def test_tasks_get_needs_the_extension_the_task_id_and_a_matching_mcp_name(task_stack: TaskStack) -> None:
    unknown = rpc(task_stack.url_b, "tasks/get", {"taskId": "no-such-task"}, "no-such-task")
    assert unknown["error"]["code"] == -32602
    mismatch = rpc(task_stack.url_b, "tasks/get", {"taskId": "no-such-task"}, "another-name")
    assert mismatch["error"]["code"] == -32020
    plain = frame("tasks/get", {"taskId": "no-such-task"})  # no tasks extension declared
    undeclared = parse(httpx.post(task_stack.url_b, json=plain, headers=headers("tasks/get", "no-such-task")))
    assert undeclared.message["error"]["code"] == -32021


def write_large_raster(path: Path) -> None:
    rng = np.random.default_rng(7)
    data = rng.random((1, 4096, 4096), dtype="float32")  # noise: deflate works hard on every strip
    profile = {
        "driver": "GTiff",
        "width": 4096,
        "height": 4096,
        "count": 1,
        "dtype": "float32",
        "crs": "EPSG:32633",
        "transform": from_origin(500000, 4200000, 10, 10),
    }
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data)


def test_tasks_cancel_mid_job_leaves_no_output_file_and_a_cancelled_task(task_stack: TaskStack) -> None:
    write_large_raster(task_stack.workspace / "big.tif")
    args = {"uri": "big.tif", "output": "big_copy.tif", "compression": "deflate", "blockxsize": 256, "blockysize": 256}
    task_id = create(task_stack.url_b, "raster_convert", args)  # a long tool: a task at once
    store = task_stack.store()
    started = lambda: any(e.type == "tool.progress" for e in store.read_aggregate(call_aggregate(task_id)))  # noqa: E731
    wait_for_log(store, started, what="first progress of the convert", timeout_s=60)

    # The worker holds still while the cancel lands (one request, well under the 3 s lease), so that on a loaded
    # machine the short job cannot end before its cancel does.
    os.killpg(task_stack.worker.pid, signal.SIGSTOP)
    try:
        ack = rpc(task_stack.url_b, "tasks/cancel", {"taskId": task_id}, task_id)["result"]
    finally:
        os.killpg(task_stack.worker.pid, signal.SIGCONT)
    assert ack == {"resultType": "complete", **({"_meta": ack["_meta"]} if "_meta" in ack else {})}

    state = outcome(task_stack, task_id, timeout_s=60)
    assert state.status == "failed" and state.error_code == "cancelled", state
    assert get(task_stack.url_b, task_id)["status"] == "cancelled"
    leftovers = sorted(p.name for p in task_stack.workspace.iterdir() if p.name != "big.tif")
    assert leftovers == []  # neither the output nor a temporary file
    assert_log_clean(task_stack, task_id)


def test_a_task_whose_worker_process_group_is_sigkilled_completes_through_redispatch(task_stack: TaskStack) -> None:
    task_id = create(task_stack.url_b, "ping", {"delay_ms": 4000})
    store = task_stack.store()
    running = lambda: (s := store.call_state(task_id)) is not None and s.status == "running"  # noqa: E731
    wait_for_log(store, running, what="start", timeout_s=90)

    os.killpg(task_stack.worker.pid, signal.SIGKILL)  # the worker's whole process group
    task_stack.worker.wait()
    task_stack.worker = start_worker(task_stack.env, concurrency=2)  # a replacement node; the reaper re-dispatches

    state = outcome(task_stack, task_id, timeout_s=120)
    done = get(task_stack.url_b, task_id)
    assert state.status == "succeeded" and done["status"] == "completed"
    assert done["result"]["structuredContent"]["pong"] is True
    types = assert_log_clean(task_stack, task_id)
    assert "tool.redispatched" in types


def confirm_delete_task(stack: TaskStack, filename: str) -> str:
    """A `confirm_delete` task (a fixture, published by a gateway the fixtures were loaded into), once it asks."""
    port = free_port()
    fixtures = start_gateway(stack.env, port)
    try:
        task_id = create(f"http://127.0.0.1:{port}/mcp", "confirm_delete", {"filename": filename})
    finally:
        stop(fixtures)
    store = stack.store()
    asked = lambda: store.redis.hexists(store.live.call(task_id), "input:confirm")  # noqa: E731
    wait_for_log(store, asked, what="the job's input request", timeout_s=90)
    return task_id


def test_a_task_that_asks_for_input_is_answered_through_another_replica(task_stack: TaskStack) -> None:
    task_id = confirm_delete_task(task_stack, "old.tif")

    waiting = get(task_stack.url_b, task_id)
    assert waiting["status"] == "input_required"
    assert waiting["inputRequests"]["confirm"]["method"] == "elicitation/create"
    answer = {"confirm": {"action": "accept", "content": {"confirm": True}}, "unknown": {"ignored": True}}
    ack = rpc(task_stack.url_b, "tasks/update", {"taskId": task_id, "inputResponses": answer}, task_id)["result"]
    assert ack["resultType"] == "complete" and "status" not in ack

    state = outcome(task_stack, task_id, timeout_s=60)
    done = get(task_stack.url_b, task_id)
    assert state.status == "succeeded" and done["status"] == "completed" and "inputRequests" not in done
    assert done["result"]["structuredContent"] == {"filename": "old.tif", "deleted": True}
    types = assert_log_clean(task_stack, task_id)
    assert types.count("tool.input_requested") == 1 and types.count("tool.input_provided") == 1


def test_a_task_waiting_for_input_survives_its_worker_and_takes_the_answer_given_meanwhile(
    task_stack: TaskStack,
) -> None:
    task_id = confirm_delete_task(task_stack, "kept.tif")
    os.killpg(task_stack.worker.pid, signal.SIGKILL)  # the worker's whole process group, while the job waits
    task_stack.worker.wait()
    answer = {"confirm": {"action": "decline"}}
    rpc(task_stack.url_b, "tasks/update", {"taskId": task_id, "inputResponses": answer}, task_id)
    task_stack.worker = start_worker(task_stack.env, concurrency=2)

    state = outcome(task_stack, task_id, timeout_s=120)
    assert state.status == "succeeded"
    assert get(task_stack.url_b, task_id)["result"]["structuredContent"] == {"filename": "kept.tif", "deleted": False}
    types = assert_log_clean(task_stack, task_id)
    assert "tool.redispatched" in types and types.count("tool.started") == 2
    assert types.count("tool.input_requested") == 1  # the second attempt asked again: the same request, deduped


def test_an_mrtr_retry_continues_its_call_through_a_gateway_started_after_the_one_that_asked(
    task_stack: TaskStack,
) -> None:
    """No tasks here: the call's own `input_required` result, its sealed `requestState` taken to another process."""

    def call(port: int, params: dict[str, Any]) -> dict[str, Any]:
        forms = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
        tool = {"name": "test_input_required_result_elicitation", "arguments": {}, "_meta": forms}
        body = frame("tools/call", {**tool, **params})
        url = f"http://127.0.0.1:{port}/mcp"
        reply = parse(httpx.post(url, json=body, headers=headers("tools/call", tool["name"]), timeout=60))
        assert isinstance(reply.message, dict), reply
        return reply.message

    fixtures = task_stack.env
    asking_port = free_port()
    asking = start_gateway(fixtures, asking_port)
    try:
        first = call(asking_port, {})["result"]
    finally:
        stop(asking)  # the replica that sealed the state is gone before the retry
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["user_name"]

    other_port = free_port()
    other = start_gateway(fixtures, other_port)
    try:
        tampered = call(other_port, {"inputResponses": {}, "requestState": first["requestState"] + "x"})
        reply = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
        done = call(other_port, {"inputResponses": reply, "requestState": first["requestState"]})
    finally:
        stop(other)

    assert tampered["error"]["code"] == -32602  # shared keys still refuse a state nobody sealed
    assert done["result"]["content"][0]["text"] == "Hello, Ada!", done
    call_id = done["result"]["_meta"][META_KEY]["call_id"]
    types = assert_log_clean(task_stack, call_id)
    assert types.count("tool.input_provided") == 1
