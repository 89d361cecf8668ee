"""`GET /metrics`: Prometheus text from the log's metrics projection, queue depths and stream lengths.

Everything shown is read from Redis, so every gateway replica reports the same cluster-wide figures.
"""

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from gateway.ops.figures import callers_error, histograms
from geogate.calls.keys import celery_queue_keys
from geogate.calls.projections.ops import BUCKETS_MS
from geogate.eventlog.keys import all_categories
from schemas import routes

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Snapshot(Collector):
    """Metric families built from values read beforehand (collectors are synchronous, Redis reads are not)."""

    def __init__(
        self,
        counters: dict[str, int],
        queues: dict[str, int],
        streams: dict[str, int],
        waiting: int,
        ops: dict[str, int] | None = None,
    ):
        self.counters, self.queues, self.streams, self.waiting = counters, queues, streams, waiting
        self.ops = ops or {}

    def collect(self) -> Iterator[Metric]:
        events = CounterMetricFamily("geogate_events", "Events appended to the log, by type", labels=["type"])
        failures = CounterMetricFamily(
            "geogate_tool_failures",
            "tool.failed events, by code; caller: true for an error of the caller's making, not a failure",
            labels=["code", "caller"],
        )
        seconds = CounterMetricFamily("geogate_job_seconds", "Job run time of finished calls", labels=["outcome"])
        for field, value in self.counters.items():
            kind, _, label = field.partition(":")
            if kind == "events":
                events.add_metric([label], value)
            elif kind == "failed":
                failures.add_metric([label, "true" if callers_error(label) else "false"], value)
            elif kind == "duration_us_sum":
                seconds.add_metric([label.removeprefix("tool.")], value / 1e6)
        yield from (events, failures, seconds)
        yield _gauge("geogate_queue_depth", "Messages waiting in a worker queue", "queue", self.queues)
        yield _gauge("geogate_stream_length", "Entries in an event-log stream", "stream", self.streams)
        yield GaugeMetricFamily("geogate_waiting_calls", "Calls this gateway process is waiting on", self.waiting)
        yield stage_histograms(self.ops)


def stage_histograms(ops: dict[str, int]) -> HistogramMetricFamily:
    """Latency per tool and stage (queue, run, handler, answer) from the ops summary's fixed buckets."""
    family = HistogramMetricFamily(
        "geogate_call_stage_seconds", "Duration of each stage of a tool call, from the log", labels=["tool", "stage"]
    )
    bounds = [f"{ms / 1000:g}" for ms in BUCKETS_MS] + ["+Inf"]
    for (tool, stage), (buckets, sum_us) in sorted(histograms(ops).items()):
        cumulative, running = [], 0
        for bound, count in zip(bounds, buckets, strict=True):
            running += count
            cumulative.append((bound, running))
        family.add_metric([tool, stage], cumulative, sum_us / 1e6)
    return family


def _gauge(name: str, text: str, label: str, values: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, text, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


async def snapshot(runtime: "Gateway") -> Snapshot:
    assert runtime.store is not None and runtime.reader is not None
    store = runtime.store
    pipe = store.redis.pipeline(transaction=False)
    pipe.hgetall(store.live.metrics())
    pipe.hgetall(store.live.ops_totals())
    lists = [(queue, key) for queue in routes.QUEUES for key in celery_queue_keys(queue)]  # calls and tiles
    for _queue, key in lists:
        pipe.llen(key)
    for category in all_categories():
        pipe.xlen(store.keys.stream(category))
    raw, ops, *sizes = await pipe.execute()
    counters = {k.decode(): int(float(v)) for k, v in raw.items()}
    queues = dict.fromkeys(routes.QUEUES, 0)
    for (queue, _key), depth in zip(lists, sizes[: len(lists)], strict=True):
        queues[queue] += int(depth)
    streams = dict(zip(all_categories(), sizes[len(lists) :], strict=True))
    totals = {k.decode(): int(v) for k, v in ops.items()}
    return Snapshot(counters, queues, streams, runtime.reader.watching, totals)


def register(server: "MCPServer", runtime: "Gateway") -> None:
    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(_: Request) -> Response:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(await snapshot(runtime))
        return Response(generate_latest(registry), media_type=CONTENT_TYPE)
