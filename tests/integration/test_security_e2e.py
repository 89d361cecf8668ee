"""Issue 14 over real HTTP: tokens, scopes, per-client limits across two gateways, Origin/Host, body and script
size, secrets kept out of the log, and identity (idempotency keys and raw outputs per client)."""

import hashlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from geogate.calls.store import EventStore
from schemas.events.security import CallRejected, client_aggregate
from tests.integration.conftest import Stack, start_gateway, stop
from tests.mcp_http import call_tool, frame, headers, read_resource
from tests.support import free_port, wait_for_key, wait_for_log

pytestmark = pytest.mark.integration

TOKENS = {
    "alice": "alice-token-4d1f8a0c9e",
    "bob": "bob-token-77aa01f3",
    "carol": "carol-token-c0ffee99",
    "ratey": "ratey-token-5150aa",
    "solo": "solo-token-0b0e1e",
}
SCRIPT_LIMIT = 2048
BODY_LIMIT = 65536


@dataclass
class Secured:
    urls: list[str]
    base: list[str]
    stack: Stack

    def store(self) -> EventStore:
        return self.stack.store()


def tokens_file(path: Path) -> Path:
    bob_digest = hashlib.sha256(TOKENS["bob"].encode()).hexdigest()
    path.write_text(
        "# client token scopes [overrides]\n"
        f"alice {TOKENS['alice']} read,write,llm\n"
        f"bob sha256:{bob_digest} read   # the file need not hold bob's secret\n"
        f"carol {TOKENS['carol']} read,write,llm,admin\n"
        f"ratey {TOKENS['ratey']} read rate=3\n"
        f"solo {TOKENS['solo']} read concurrency=1\n"
    )
    return path


@pytest.fixture(scope="module")
def secured(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """Two gateway processes with static tokens on the session's Redis and workers (limits shared through Redis)."""
    env = {
        **stack.env,
        "GEOGATE_AUTH_TOKENS_FILE": str(tokens_file(tmp_path_factory.mktemp("auth") / "tokens")),
        "GEOGATE_HANDLER_MAX_SCRIPT_BYTES": str(SCRIPT_LIMIT),
        "GEOGATE_MAX_REQUEST_BYTES": str(BODY_LIMIT),
        "GEOGATE_ADMIN_ACTORS": "carol",
    }
    ports = [free_port(), free_port()]
    gateways = [start_gateway(env, port) for port in ports]
    try:
        base = [f"http://127.0.0.1:{port}" for port in ports]
        yield Secured([f"{b}/mcp" for b in base], base, stack)
    finally:
        for gateway in gateways:
            stop(gateway)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def _rejections(store: EventStore, client_id: str) -> list[CallRejected]:
    return [e.data for e in store.read_aggregate(client_aggregate(client_id)) if isinstance(e.data, CallRejected)]


def _requested_by(store: EventStore, actor: str) -> int:
    return sum(1 for e in store.read("calls") if e.event.type == "tool.requested" and e.event.actor == actor)


def test_no_token_and_a_wrong_token_get_401_with_www_authenticate(secured: Secured, http: httpx.Client) -> None:
    missing = call_tool(http, secured.urls[0], "ping", {})
    wrong = call_tool(http, secured.urls[0], "ping", {}, token="not-a-token")

    for reply in (missing, wrong):
        assert reply.status == 401
        assert reply.headers["www-authenticate"].startswith("Bearer ")
        assert 'error="invalid_token"' in reply.headers["www-authenticate"]


def test_a_token_without_the_scope_gets_403_naming_it_and_nothing_is_appended(
    secured: Secured, http: httpx.Client
) -> None:
    before = _requested_by(secured.store(), "bob")
    args = {"uri": "dem.tif", "output": "bob.tif"}

    reply = call_tool(http, secured.urls[0], "raster_convert", args, token=TOKENS["bob"])

    assert reply.status == 403
    challenge = reply.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="write"' in challenge
    assert reply.message["scope"] == "write"
    assert _requested_by(secured.store(), "bob") == before
    rejected = _rejections(secured.store(), "bob")
    assert rejected and rejected[-1].reason == "scope" and rejected[-1].needed_scope == "write"
    assert rejected[-1].target == "raster_convert"


def test_a_good_token_calls_and_its_client_id_is_the_actor_of_the_events(secured: Secured, http: httpx.Client) -> None:
    reply = call_tool(http, secured.urls[0], "raster_info", {"uri": "dem.tif"}, token=TOKENS["bob"])

    assert reply.status == 200 and not reply.result.get("isError")
    call_id = reply.result["_meta"]["io.geogate/call"]["call_id"]
    actors = {e.actor for e in secured.store().read_aggregate(f"call:{call_id}")}
    assert actors == {"bob"}


def test_the_rate_limit_is_shared_by_two_gateways_and_answers_429_with_retry_after(
    secured: Secured, http: httpx.Client
) -> None:
    token = TOKENS["ratey"]
    accepted = [
        call_tool(http, url, "ping", {}, token=token) for url in (secured.urls[0], secured.urls[1], secured.urls[0])
    ]
    refused = call_tool(http, secured.urls[1], "ping", {}, token=token)

    assert [r.status for r in accepted] == [200, 200, 200]
    assert refused.status == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert "retry after" in refused.message["error"]["message"]
    assert refused.message["error"]["data"]["limit"] == 3
    assert _requested_by(secured.store(), "ratey") == 3  # the refused call left nothing but call.rejected
    assert [r.reason for r in _rejections(secured.store(), "ratey")] == ["rate_limit"]


def test_calls_in_progress_are_limited_across_gateways(secured: Secured, http: httpx.Client) -> None:
    store = secured.store()
    slow: dict[str, object] = {}

    def hold() -> None:
        with httpx.Client(timeout=30) as own:
            slow["reply"] = call_tool(own, secured.urls[0], "ping", {"delay_ms": 1500}, token=TOKENS["solo"])

    runner = threading.Thread(target=hold)
    runner.start()
    wait_for_log(store, lambda: _started_by(store, "solo"), what="solo's first call started")
    refused = call_tool(http, secured.urls[1], "ping", {}, token=TOKENS["solo"])
    runner.join()
    # the slot is released once the first call's response has gone out, which the client may see first
    slots = store.keys.in_flight("solo")
    wait_for_key(store.redis, slots, lambda: store.redis.zcard(slots) == 0, what="solo's slot to be released")
    after = call_tool(http, secured.urls[1], "ping", {}, token=TOKENS["solo"])

    assert refused.status == 429 and refused.headers["retry-after"] == "1"
    assert refused.message["error"]["data"]["reason"] == "concurrency"
    assert slow["reply"].status == 200 and after.status == 200  # type: ignore[attr-defined]


def _started_by(store: EventStore, actor: str) -> bool:
    return any(e.event.type == "tool.started" and e.event.actor == actor for e in store.read("calls"))


def test_an_evil_origin_gets_403_and_an_evil_host_421_on_every_route(secured: Secured, http: httpx.Client) -> None:
    body = frame("tools/list")
    evil = {**headers("tools/list", token=TOKENS["alice"]), "Origin": "http://evil.example"}
    local = {**headers("tools/list", token=TOKENS["alice"]), "Origin": "http://localhost:5173"}

    assert http.post(secured.urls[0], json=body, headers=evil).status_code == 403
    assert http.post(f"{secured.base[0]}/api/chat", json={"question": "hi"}, headers=evil).status_code == 403
    assert http.post(secured.urls[0], json=body, headers={**local, "Host": "evil.example"}).status_code == 421
    assert http.post(secured.urls[0], json=body, headers=local).status_code == 200


def test_bodies_over_the_limit_get_413_and_long_handler_scripts_a_field_error(
    secured: Secured, http: httpx.Client
) -> None:
    big = frame("tools/call", {"name": "ping", "arguments": {"pad": "x" * (BODY_LIMIT + 1)}})
    script = "result = 1\n" + "#" * SCRIPT_LIMIT
    handler = {"result_handler": {"language": "python", "script": script}}

    too_big = http.post(secured.urls[0], json=big, headers=headers("tools/call", "ping", TOKENS["alice"]))
    long_script = call_tool(http, secured.urls[0], "ping", handler, token=TOKENS["alice"])

    assert too_big.status_code == 413
    error = long_script.result["structuredContent"]["error"]
    assert long_script.result["isError"] and error["errors"][0]["field"] == "result_handler.script"


def _every_value(store: EventStore) -> bytes:
    """Everything Redis holds, as raw bytes: streams, hashes, lists, sets, sorted sets and strings."""
    redis, out = store.redis, []
    for key in redis.scan_iter(count=1000):
        kind = redis.type(key).decode()
        if kind == "stream":
            out += [v for _id, fields in redis.xrange(key) for kv in fields.items() for v in kv]
        elif kind == "hash":
            out += [v for kv in redis.hgetall(key).items() for v in kv]
        elif kind == "list":
            out += redis.lrange(key, 0, -1)
        elif kind == "set":
            out += list(redis.smembers(key))
        elif kind == "zset":
            out += [m for m, _ in redis.zrange(key, 0, -1, withscores=True)]
        elif kind == "string":
            out.append(redis.get(key) or b"")
        out.append(key)
    return b"\n".join(out)


def test_a_key_in_the_arguments_never_reaches_the_log(secured: Secured, http: httpx.Client) -> None:
    key, password = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", "hunter2-correct-horse"
    script = (
        f"# api_key = {key}\n# curl -H 'Authorization: Bearer {TOKENS['alice']}' 'https://u:{password}@h/x'\n"
        "result = tool_output['pong']"
    )
    arguments = {"result_handler": {"language": "python", "script": script}}

    reply = call_tool(http, secured.urls[0], "ping", arguments, token=TOKENS["alice"])

    assert reply.status == 200 and reply.result["structuredContent"] == {"result": True}
    everything = _every_value(secured.store())
    for secret in (key, password, TOKENS["alice"]):
        assert secret.encode() not in everything
    assert b"[redacted]" in everything


def test_one_client_cannot_attach_to_or_read_another_clients_call(secured: Secured, http: httpx.Client) -> None:
    meta = {"_meta": {"io.geogate/idempotency-key": "same-key-for-both"}}
    handler = {"result_handler": {"language": "jmespath", "script": "pong"}}

    alice = call_tool(http, secured.urls[0], "ping", handler, token=TOKENS["alice"], **meta)
    bob = call_tool(http, secured.urls[1], "ping", handler, token=TOKENS["bob"], **meta)
    alice_again = call_tool(http, secured.urls[1], "ping", handler, token=TOKENS["alice"], **meta)

    ids = [r.result["_meta"]["io.geogate/call"]["call_id"] for r in (alice, bob, alice_again)]
    assert ids[0] != ids[1] and ids[0] == ids[2]  # bob's key is his own; alice's retry attaches to her call
    raw = f"calls://{ids[0]}/raw"
    by_bob = read_resource(http, secured.urls[0], raw, TOKENS["bob"])
    by_alice = read_resource(http, secured.urls[0], raw, TOKENS["alice"])
    by_admin = read_resource(http, secured.urls[0], raw, TOKENS["carol"])
    assert "error" in by_bob.message and "no call" in by_bob.message["error"]["message"]
    assert '"pong":true' in by_alice.result["contents"][0]["text"]
    assert '"pong":true' in by_admin.result["contents"][0]["text"]


def test_chat_and_metrics_are_behind_the_scopes(secured: Secured, http: httpx.Client) -> None:
    chat, metrics = f"{secured.base[0]}/api/chat", f"{secured.base[0]}/metrics"
    auth = {name: {"Authorization": f"Bearer {TOKENS[name]}"} for name in ("alice", "bob", "carol")}

    assert http.post(chat, json={"question": "hi"}).status_code == 401
    assert http.post(chat, json={"question": "hi"}, headers=auth["bob"]).status_code == 403
    assert http.post(chat, json={"nope": 1}, headers=auth["alice"]).status_code == 422  # through the guard
    assert http.get(metrics, headers=auth["bob"]).status_code == 403
    assert "geogate_events" in http.get(metrics, headers=auth["carol"]).text
    assert http.get(f"{secured.base[0]}/health").status_code == 200


def test_the_ops_pages_need_the_admin_scope(secured: Secured, http: httpx.Client) -> None:
    base = secured.base[0]
    admin, reader = ({"Authorization": f"Bearer {TOKENS[name]}"} for name in ("carol", "bob"))

    assert http.get(f"{base}/ops").status_code == 401
    assert http.get(f"{base}/ops/api/summary", headers=reader).status_code == 403
    assert http.get(f"{base}/ops/calls/none", headers=reader).status_code == 403
    assert http.get(f"{base}/ops/api/summary", headers=admin).status_code == 200


def test_revoking_needs_the_admin_scope(secured: Secured, http: httpx.Client) -> None:
    args = {"hash": "0" * 64}

    by_alice = call_tool(http, secured.urls[0], "revoke_justification", args, token=TOKENS["alice"])
    by_carol = call_tool(http, secured.urls[0], "revoke_justification", args, token=TOKENS["carol"])

    assert by_alice.status == 403 and 'scope="admin"' in by_alice.headers["www-authenticate"]
    assert by_carol.status == 200 and by_carol.result["structuredContent"] == {"hash": "0" * 64, "revoked": True}


def test_the_gateway_refuses_a_non_loopback_address_without_auth(stack: Stack) -> None:
    env = {k: v for k, v in stack.env.items() if not k.startswith("GEOGATE_AUTH")}
    argv = [sys.executable, "-m", "geogate.cli", "gateway", "--host", "0.0.0.0", "--port", str(free_port())]

    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode != 0
    assert "without authentication" in done.stderr and "GEOGATE_AUTH_TOKENS_FILE" in done.stderr
