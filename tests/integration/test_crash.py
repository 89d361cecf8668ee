"""Crash safety (docs/recovery.md): a worker SIGKILLed mid-job; the call still completes, once."""

import os
import signal

import anyio
import pytest
from mcp import Client

from schemas.ids import call_aggregate
from tests.integration.conftest import Stack
from tests.support import wait_for_log

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def started_pid(stack: Stack) -> tuple[str, int] | None:
    """The call id and worker pid of the newest started `ping` with a delay (from the log)."""
    store = stack.store()
    for stored in reversed(store.read("calls")[-50:]):
        if stored.event.type == "tool.started":
            call_id = stored.event.data.call_id
            state = store.call_state(call_id)
            if state is not None and not state.terminal:
                return call_id, int(stored.event.data.worker.rsplit(":", 1)[1])
    return None


async def test_a_job_whose_worker_is_sigkilled_completes_with_exactly_one_outcome(stack: Stack) -> None:
    outcome = {}

    async def call() -> None:
        async with Client(stack.url) as client:
            outcome["result"] = await client.call_tool("ping", {"delay_ms": 1500})

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.to_thread.run_sync(
            lambda: wait_for_log(stack.store(), lambda: started_pid(stack) is not None, what="job start")
        )
        call_id, pid = started_pid(stack)
        os.kill(pid, signal.SIGKILL)  # the pool process running the job

    result = outcome["result"]
    assert not result.is_error and result.meta["io.geogate/call"]["call_id"] == call_id
    types = [e.type for e in stack.store().read_aggregate(call_aggregate(call_id))]
    assert types.count("tool.succeeded") == 1 and types.count("tool.failed") == 0
    assert types.count("tool.started") == 2  # the killed attempt and the redelivered one
    assert result.structured_content["worker"] != f"{os.uname().nodename}:{pid}"
