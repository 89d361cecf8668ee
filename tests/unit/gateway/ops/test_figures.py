"""Percentiles from fixed buckets, rows per tool, and the same histograms as Prometheus text."""

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gateway.metrics import Snapshot
from gateway.ops.figures import callers_error, figures, quantile
from geogate.calls.projections.ops import BUCKETS_MS, bucket_of, field_bucket, field_calls, field_error, field_sum


def buckets(*values_ms: float) -> list[int]:
    counts = [0] * (len(BUCKETS_MS) + 1)
    for value in values_ms:
        counts[bucket_of(value)] += 1
    return counts


def test_a_quantile_interpolates_inside_the_bucket_that_holds_its_rank() -> None:
    """Ten values in (5, 10]: the median is halfway through that bucket, as Prometheus' histogram_quantile."""
    assert quantile(0.5, buckets(*[7.0] * 10)) == 7.5
    assert quantile(0.5, buckets()) is None


def test_a_rank_past_the_last_bound_answers_the_last_bound() -> None:
    assert quantile(0.99, buckets(1.0, 10 * BUCKETS_MS[-1])) == BUCKETS_MS[-1]


def test_rows_per_tool_add_failures_by_code_across_tools() -> None:
    counters = {
        field_calls("ping", "succeeded"): 3,
        field_calls("ping", "failed"): 1,
        field_calls("raster_info", "failed"): 2,
        field_error("ping", "job.timeout"): 1,
        field_error("raster_info", "job.timeout"): 2,
        field_bucket("ping", "run", bucket_of(3.0)): 4,
        field_sum("ping", "run"): 12_000,
    }
    got = figures(counters, seconds=10)

    ping = got.tool("ping")
    assert ping is not None and (ping.finished, ping.error_rate, ping.per_s) == (4, 0.25, 0.4)
    assert ping.stages["run"].count == 4 and ping.stages["run"].mean_ms == 3.0
    assert [(e.name, e.count) for e in got.errors] == [("job.timeout", 3)]


def test_the_callers_errors_are_told_from_failures() -> None:
    counters = {
        field_calls("raster_convert", "succeeded"): 6,
        field_calls("raster_convert", "failed"): 4,
        field_error("raster_convert", "output.exists"): 1,
        field_error("raster_convert", "band.out_of_range"): 1,
        field_error("raster_convert", "path.not_found"): 1,
        field_error("raster_convert", "gdal.write_failed"): 1,
    }
    got = figures(counters, seconds=None)

    row = got.tool("raster_convert")
    assert row is not None and (row.failed, row.caller_errors, row.failures, row.error_rate) == (4, 3, 1, 0.1)
    assert (got.failed, got.caller_errors, got.failures) == (4, 3, 1)
    assert {e.name: e.caller for e in got.errors} == {
        "output.exists": True,
        "band.out_of_range": True,
        "path.not_found": True,
        "gdal.write_failed": False,
    }


@pytest.mark.parametrize(
    ("code", "callers"),
    [
        ("args.invalid", True),
        ("layer.not_found", True),
        ("workflow.unknown_state", True),
        ("crs.unknown", True),
        ("job.crashed", False),
        ("job.timeout", False),
        ("llm.provider_error", False),
        ("crs.transform_failed", False),
    ],
)
def test_an_error_code_is_the_callers_by_its_kind(code: str, callers: bool) -> None:
    assert callers_error(code) is callers


def test_metrics_expose_the_stage_histograms_in_seconds() -> None:
    ops = {field_bucket("ping", "answer", bucket_of(3.0)): 2, field_sum("ping", "answer"): 6000}
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Snapshot({}, {}, {}, 0, ops))
    text = generate_latest(registry).decode()

    assert 'geogate_call_stage_seconds_bucket{le="0.0025",stage="answer",tool="ping"} 0.0' in text
    assert 'geogate_call_stage_seconds_bucket{le="0.005",stage="answer",tool="ping"} 2.0' in text
    assert 'geogate_call_stage_seconds_bucket{le="+Inf",stage="answer",tool="ping"} 2.0' in text
    assert 'geogate_call_stage_seconds_sum{stage="answer",tool="ping"} 0.006' in text


def test_metrics_label_the_callers_errors_apart_from_failures() -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Snapshot({"failed:path.not_found": 2, "failed:job.crashed": 1}, {}, {}, 0))
    text = generate_latest(registry).decode()

    assert 'geogate_tool_failures_total{caller="true",code="path.not_found"} 2.0' in text
    assert 'geogate_tool_failures_total{caller="false",code="job.crashed"} 1.0' in text
