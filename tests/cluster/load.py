"""The chaos suite's client load and its checks of the log: every call answered, one outcome each, replay clean."""

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from geogate.calls.store import EventStore
from schemas.ids import call_aggregate, new_id

IDEMPOTENCY = "io.geogate/idempotency-key"
OUTCOMES = ("tool.succeeded", "tool.failed")


@dataclass
class Answer:
    """What one client saw: the call id, whether it is an error (and its code), when it came back, tries made."""

    key: str
    call_id: str = ""
    error: str | None = None
    at_ms: float = 0.0
    tries: int = 0
    faults: list[str] = field(default_factory=list)
    """What broke each try before the answer (exception type and seconds into the call), for the report."""


@dataclass
class Load:
    """`calls` tool calls, `concurrency` at a time, each with an idempotency key; a broken connection is retried
    with the same key through the next gateway (bounded), as a client behind a load balancer would."""

    gateways: Callable[[], list[str]]
    tool: str
    args: dict[str, Any]
    calls: int
    concurrency: int
    token: str | None = None
    """A bearer token, for gateways that authenticate (the compose cluster's)."""
    answers: list[Answer] = field(default_factory=list)

    async def run(self) -> list[Answer]:
        limit = anyio.Semaphore(self.concurrency)
        async with anyio.create_task_group() as group:
            for n in range(self.calls):
                group.start_soon(self._one, f"chaos-{new_id()}-{n}", limit)
        return self.answers

    async def _one(self, key: str, limit: anyio.Semaphore) -> None:
        async with limit:
            answer, started = Answer(key), time.time()
            for attempt in range(12):
                answer.tries = attempt + 1
                urls = self.gateways()
                try:
                    async with connect(urls[attempt % len(urls)], self.token) as client:
                        result = await client.call_tool(self.tool, self.args, meta={IDEMPOTENCY: key})
                except Exception as exc:  # the gateway died under the call (any transport error): retry, same key
                    answer.faults.append(f"{type(_first(exc)).__name__}@{time.time() - started:.1f}s")
                    await anyio.sleep(0.5)  # the client's own back-off before its retry, not a test wait
                    continue
                if not (result.meta or {}).get("io.geogate/call"):
                    raise AssertionError(f"an answer without its call: {result.content}")
                answer.call_id = result.meta["io.geogate/call"]["call_id"]
                error = (result.structured_content or {}).get("error") if result.is_error else None
                answer.error = error["code"] if isinstance(error, dict) else None
                break
            answer.at_ms = time.time() * 1000
            self.answers.append(answer)


def _first(exc: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what actually broke."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


@asynccontextmanager
async def connect(url: str, token: str | None = None, **options: Any) -> AsyncIterator[Client]:
    """The SDK client on `url`, sending `token` as a bearer token when given."""
    if token is None:
        async with Client(url, **options) as client:
            yield client
        return
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), **options) as client,
    ):
        yield client


def run_load(load: Load) -> list[Answer]:
    return anyio.run(load.run)


def during_faults(fault: Callable[[threading.Event], None], load: Load) -> list[Answer]:
    """Run `load` while `fault(done)` injects faults from a thread; `done` is set once the load has finished."""
    done = threading.Event()
    thread = threading.Thread(target=fault, args=(done,))
    thread.start()
    try:
        return run_load(load)
    finally:
        done.set()
        thread.join()


def outcomes_per_call(store: EventStore, call_ids: list[str]) -> Counter[str]:
    """How many outcome events each call has in the log (the invariant: exactly one)."""
    found: Counter[str] = Counter()
    for call_id in call_ids:
        types = [e.type for e in store.read_aggregate(call_aggregate(call_id))]
        found[call_id] = sum(types.count(t) for t in OUTCOMES)
    return found


def outcome_at_ms(store: EventStore, call_id: str) -> float:
    return _first_at_ms(store, call_id, OUTCOMES)


def requested_at_ms(store: EventStore, call_id: str) -> float:
    return _first_at_ms(store, call_id, ("tool.requested",))


def _first_at_ms(store: EventStore, call_id: str, types: tuple[str, ...]) -> float:
    event = next(e for e in store.read_aggregate(call_aggregate(call_id)) if e.type in types)
    return event.ts.timestamp() * 1000


def replay_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "geogate.cli", "replay", "--check"], env=env, capture_output=True, text=True, timeout=300
    )


def assert_log_is_whole(
    store: EventStore,
    env: dict[str, str],
    answers: list[Answer],
    calls: int,
    replay: Callable[[], subprocess.CompletedProcess[str]] | None = None,
) -> None:
    """Every call answered, exactly one outcome each in the log, one `tool.requested` each, replay identical
    (`geogate replay --check` here with `env`, or through `replay`: in a container, say)."""
    assert len(answers) == calls and all(a.call_id for a in answers), [a for a in answers if not a.call_id]
    call_ids = [a.call_id for a in answers]
    assert len(set(call_ids)) == calls
    per_call = outcomes_per_call(store, call_ids)
    assert set(per_call.values()) == {1}, {c: n for c, n in per_call.items() if n != 1}
    requested = {c: [e.type for e in store.read_aggregate(call_aggregate(c))].count("tool.requested") for c in call_ids}
    assert set(requested.values()) == {1}
    done = replay() if replay is not None else replay_check(env)
    assert done.returncode == 0, done.stdout + done.stderr
