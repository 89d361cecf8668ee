"""What the security layer adds to a call's path, step by step, each against a baseline measured in the same run.

Redaction of an event (baseline: msgpack-encoding the same event, which every append does), the frame check
(baseline: `json.loads` of the body, which the SDK does anyway), token verification, and the per-client limits
(one Lua call to take the slot and one ZREM to give it back; baseline: a Redis PING round trip).
Usage: python bench/security.py [--n 2000]
"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import jwt as pyjwt
from _stack import percentile
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from redis.asyncio import Redis

from gateway.security.frames import check_body
from gateway.security.jwt_verifier import JwtVerifier
from gateway.security.tokens import StaticTokenVerifier, load_tokens
from geogate.calls.keys import CALLS, Keys
from geogate.calls.publish import follow, request_event
from geogate.cli.dev import Children, start_redis
from geogate.eventlog.redaction import redact_event
from geogate.ratelimit import Limiter, Limits
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolSucceeded
from schemas.tools import TOOLS

FRAME = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "raster_info", "arguments": {"uri": "dem.tif"}, "_meta": {"progressToken": 1}},
    }
).encode()


def timed(fn: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1e6)
    return samples


async def atimed(fn: Callable[[], Awaitable[object]], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - began) * 1e6)
    return samples


def row(name: str, ours: list[float], base: list[float] | None = None) -> str:
    p50, p99 = statistics.median(ours), percentile(ours, 99)
    ratio = f"  {p50 / statistics.median(base):.2f}x baseline p50 {statistics.median(base):.1f} us" if base else ""
    return f"{name:<44} p50 {p50:8.1f} us  p99 {p99:8.1f} us{ratio}"


def events() -> tuple[object, object]:
    requested = request_event(TOOLS["raster_info"], {"uri": "dem.tif"}, call_id="c1", actor="alice")
    result = {
        "path": "/data/dem.tif",
        "driver": "GTiff",
        "bands": [{"index": i, "dtype": "float32"} for i in range(20)],
    }
    return requested, follow(requested, ToolSucceeded(call_id="c1", result=result, text="GTiff 64x32"))


async def limits(n: int) -> list[str]:
    children = Children()
    try:
        redis = Redis.from_url(
            start_redis(Settings(data_dir=Path(tempfile.mkdtemp(prefix="geogate-bench-"))), children)
        )
        limiter = Limiter(redis, Keys("bench"), CALLS, stale_s=360)
        rules = Limits(per_minute=10**9, concurrent=64)

        async def slot() -> None:
            await limiter.release("alice", await limiter.acquire("alice", rules))

        base = await atimed(redis.ping, n)
        lines = [row("limits: take + give back a slot (2 round trips)", await atimed(slot, n), base)]
        await redis.aclose()
        return lines
    finally:
        children.stop()


ISSUER = "https://auth.example.test"


def es256_token(jwks_file: Path, audience: str) -> str:
    """A token for `audience` signed with a new EC key, whose public half goes to `jwks_file` as a one-key JWKS."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    jwks_file.write_text(json.dumps({"keys": [{**public, "kid": "bench", "alg": "ES256", "use": "sig"}]}))
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": audience, "sub": "user-1", "client_id": "agent-7", "scope": "read"}
    return pyjwt.encode({**claims, "iat": now, "exp": now + 600}, key, algorithm="ES256", headers={"kid": "bench"})


async def verifiers(n: int, folder: Path) -> list[str]:
    (folder / "tokens").write_text("alice a-long-enough-token read,write\n")
    static = StaticTokenVerifier(load_tokens(folder / "tokens"))
    audience = "http://127.0.0.1:8000/mcp"
    token = es256_token(folder / "jwks.json", audience)
    jwt = JwtVerifier(issuer=ISSUER, audience=audience, algorithms=["ES256"], jwks_file=folder / "jwks.json")
    return [
        row("static token verify", await atimed(lambda: static.verify_token("a-long-enough-token"), n)),
        row("JWT verify (ES256, JWKS file)", await atimed(lambda: jwt.verify_token(token), n)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    requested, succeeded = events()
    print(row("redact tool.requested", timed(lambda: redact_event(requested), n), timed(lambda: encode(requested), n)))
    print(
        row(
            "redact tool.succeeded (20 bands)",
            timed(lambda: redact_event(succeeded), n),
            timed(lambda: encode(succeeded), n),
        )
    )
    print(
        row(
            "frame check of a tools/call body", timed(lambda: check_body(FRAME), n), timed(lambda: json.loads(FRAME), n)
        )
    )
    for line in asyncio.run(verifiers(n, Path(tempfile.mkdtemp(prefix="geogate-bench-")))):
        print(line)
    for line in asyncio.run(limits(n)):
        print(line)


if __name__ == "__main__":
    main()
