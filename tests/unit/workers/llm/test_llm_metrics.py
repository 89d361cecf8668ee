"""Metrics over attempt records (seed 001 "metrics to track")."""

from schemas.events.llm import LLMAttempted
from workers.llm import attempt_stats


def attempt(
    conv: str, turn: int, n: int, outcome: str, model: str = "m1", kind: str | None = None, fmt: str | None = None
) -> LLMAttempted:
    errors = [{"kind": kind, "message": "x"}] if kind and outcome == "invalid" else []
    fields = {"conversation_id": conv, "turn": turn, "attempt": n, "model": model, "provider": "openai", "format": fmt}
    return LLMAttempted.model_validate(
        fields
        | {"temperature": 0.7, "prompt_tokens": 10, "completion_tokens": 5, "outcome": outcome}
        | {"error_kind": kind, "errors": errors}
    )


def test_stats_by_model_retries_error_kinds_and_tokens() -> None:
    records = [
        attempt("a", 1, 1, "invalid", kind="unknown_tool"),
        attempt("a", 1, 2, "calls"),
        attempt("a", 2, 1, "answer"),
        attempt("b", 1, 1, "provider_error", model="m2", kind="llm.http_429"),
        attempt("b", 1, 1, "invalid", model="m2", kind="wrong_type"),
        attempt("b", 1, 2, "invalid", model="m2", kind="wrong_type"),
        attempt("b", 1, 3, "invalid", model="m2", kind="unknown_tool"),
    ]
    stats = attempt_stats(records)

    assert stats.by_model["m1"].first_attempt_success_rate == 0.5
    assert stats.by_model["m1"].mean_retries == 0.5
    assert stats.by_model["m2"].first_attempt_success_rate == 0.0
    assert stats.by_model["m2"].mean_retries == 2.0
    assert stats.error_kinds == [("unknown_tool", 2), ("wrong_type", 2)]
    assert stats.provider_errors == 1
    assert stats.tokens_per_conversation == {"a": 45, "b": 60}
    assert stats.mean_retries == 1.0


def test_no_attempts_give_empty_stats() -> None:
    assert attempt_stats([]).by_model == {}


def test_first_attempt_success_by_format_of_the_first_attempt() -> None:
    records = [
        attempt("a", 1, 1, "invalid", kind="truncated", fmt="qwen3_xml"),
        attempt("a", 1, 2, "calls", fmt="hermes"),
        attempt("a", 2, 1, "calls", fmt="qwen3_xml"),
        attempt("b", 1, 1, "answer", model="m2", fmt="text"),
        attempt("c", 1, 1, "answer", model="m2"),  # recorded before formats were
    ]
    stats = attempt_stats(records)

    assert set(stats.by_format) == {"qwen3_xml", "text", "unknown"}
    assert stats.by_format["qwen3_xml"].turns == 2
    assert stats.by_format["qwen3_xml"].first_attempt_success_rate == 0.5
    assert stats.by_format["qwen3_xml"].mean_retries == 0.5
    assert stats.by_format["text"].first_attempt_success_rate == 1.0


def test_old_attempt_events_without_format_or_reasoning_still_decode() -> None:
    old = {"conversation_id": "a", "turn": 1, "attempt": 1, "model": "m", "provider": "p", "temperature": 0.7}
    record = LLMAttempted.model_validate(old | {"outcome": "answer"})
    assert (record.format, record.reasoning) == (None, "")
