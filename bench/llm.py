"""Micro-benchmark of the LLM host: loop overhead per turn with model time excluded, and extractor throughput."""

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.chat import ChatRequest
from workers.llm import Extraction, LLMConfig, LoopPolicy, build_provider, extract_calls, run_chat
from workers.llm.extract import extract_with_index
from workers.llm.validation import build_index

TOOLS: list[dict[str, Any]] = [
    {
        "name": f"tool_{i}",
        "description": f"Tool number {i}: reads a raster and reports metadata.",
        "inputSchema": {
            "type": "object",
            "properties": {"uri": {"type": "string"}, "band": {"type": "integer"}, "opts": {"type": "object"}},
            "required": ["uri"],
            "additionalProperties": False,
        },
    }
    for i in range(12)
]
CALL = '{"tool": "tool_3", "params": {"uri": "dem.tif", "band": 1, "opts": {"tiled": true}}}'
REPLIES = [
    f"I will read the metadata first.\n```json\n{CALL}\n```\nThen I will answer.",
    f"<tool_call>{json.dumps({'name': 'tool_1', 'arguments': {'uri': 'a.tif'}})}</tool_call>",
    "<function=tool_2><parameter=uri>b.tif</parameter><parameter=band>2</parameter></function>",
    '[TOOL_CALLS]tool_4[ARGS]{"uri": "c.tif"}',
    f"Two calls: {CALL} and {{'tool': 'tool_5', 'params': {{'uri': 'x.tif',}}}}",
    "The raster is in EPSG:4326 with 3 bands (source: file:///data/dem.tif). " * 4,
]


class FakeModel:
    """An in-process chat-completions server: a prompt-based call, then an answer. Its own time is measured."""

    def __init__(self) -> None:
        self.turn = 0
        self.model_s = 0.0

    def handle(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        content = CALL if self.turn % 2 == 0 else "dem.tif is EPSG:4326 (source: file:///data/dem.tif)."
        self.turn += 1
        body = {
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 400, "completion_tokens": 40},
        }
        json.loads(request.content)  # a real server decodes the request too; that is model-side time
        response = httpx.Response(200, json=body)
        self.model_s += time.perf_counter() - started
        return response


async def _call_tool(name: str, params: dict[str, Any]) -> tuple[Any, str, bool]:
    return {"uri": params["uri"], "crs": "EPSG:4326", "source": "file:///data/dem.tif"}, "", False


async def loop_overhead_ms(rounds: int) -> list[float]:
    """Per-turn host overhead of `rounds` two-turn conversations, model and tool time excluded."""
    model = FakeModel()
    config = LLMConfig(base_url="http://bench.invalid/v1", model="gemma3:4b")
    samples: list[float] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(model.handle)) as client:
        provider = build_provider(config, client)
        for _ in range(rounds):
            before_model, started = model.model_s, time.perf_counter()
            await run_chat(
                ChatRequest(message="What CRS is dem.tif in?"),
                provider=provider,
                tools=TOOLS,
                call_tool=_call_tool,
                policy=LoopPolicy(),
            )
            spent = time.perf_counter() - started - (model.model_s - before_model)
            samples.append(spent * 1000 / 2)
    return samples[rounds // 10 :]  # drop warm-up


def extractor_rates(rounds: int, extract: Callable[[str], Extraction]) -> tuple[list[float], int, float]:
    """Per-reply extraction latencies (µs), calls found, and the wall time of the whole run."""
    latencies: list[float] = []
    found = 0
    started = time.perf_counter()
    for _ in range(rounds):
        for reply in REPLIES:
            t0 = time.perf_counter()
            found += len(extract(reply).calls)
            latencies.append((time.perf_counter() - t0) * 1e6)
    return latencies, found, time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    overhead = anyio.run(loop_overhead_ms, 400)
    print(
        f"loop overhead per turn (model time excluded): median {statistics.median(overhead):.3f} ms, "
        f"p99 {_pct(overhead, 0.99):.3f} ms (target <= 5 ms)"
    )
    index = build_index(TOOLS)
    for label, extract in (
        ("extract_calls (index built per call)", lambda text: extract_calls(text, TOOLS)),
        ("extract_with_index (as the loop runs it)", lambda text: extract_with_index(text, index)),
    ):
        latencies, calls, wall = extractor_rates(500, extract)
        print(
            f"{label}: {calls / wall:,.0f} calls/s over {len(REPLIES)} reply shapes; per reply median "
            f"{statistics.median(latencies):.1f} us, p99 {_pct(latencies, 0.99):.1f} us"
        )


if __name__ == "__main__":
    main()
