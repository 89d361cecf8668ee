"""`ping` timed through the SDK client (Streamable HTTP) from this process, in blocks interleaved across servers."""

import time

from mcp import Client


async def timed_calls(url: str, calls: int, warmup: int = 50) -> list[float]:
    """Milliseconds of each of `calls` sequential `ping` calls to `url`, after `warmup` untimed ones."""
    samples = []
    async with Client(url) as client:
        for n in range(warmup + calls):
            began = time.perf_counter()
            result = await client.call_tool("ping", {})
            elapsed = (time.perf_counter() - began) * 1000
            if result.is_error:
                raise SystemExit(f"ping failed: {result.content}")
            if n >= warmup:
                samples.append(elapsed)
    return samples


async def interleaved(urls: dict[str, str], calls: int, rounds: int = 5) -> dict[str, list[float]]:
    """Alternate blocks of calls on each server (the order turning each round) so that noise hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in urls}
    for n in range(rounds):
        for name in urls if n % 2 == 0 else reversed(urls):
            samples[name] += await timed_calls(urls[name], calls // rounds)
    return samples
