"""Metrics over `llm.attempt` payloads (docs/llm-host.md): first-attempt success by model and by call format, retries,
errors, tokens."""

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from schemas.chat import LLMStats, ModelStats
from schemas.events.llm import LLMAttempted

_SUCCESS = frozenset({"calls", "answer"})


def attempt_stats(attempts: Iterable[LLMAttempted]) -> LLMStats:
    """Fold attempt records into metrics; provider errors are counted apart and never as model mistakes.

    A turn is one `(conversation_id, turn)`. Its retries are its model attempts after the first.
    """
    turns: dict[tuple[str, int], list[LLMAttempted]] = defaultdict(list)
    tokens: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    provider_errors = 0
    for record in attempts:
        tokens[record.conversation_id] += record.prompt_tokens + record.completion_tokens
        if record.outcome == "provider_error":
            provider_errors += 1
            continue
        turns[(record.conversation_id, record.turn)].append(record)
        kinds.update(e.kind for e in record.errors)
    per_turn = [sorted(records, key=lambda r: r.attempt) for records in turns.values()]
    return LLMStats(
        by_model=_grouped(per_turn, lambda first: first.model),
        by_format=_grouped(per_turn, lambda first: first.format or "unknown"),
        mean_retries=_mean([len(t) - 1 for t in per_turn]),
        error_kinds=kinds.most_common(),
        provider_errors=provider_errors,
        tokens_per_conversation=dict(tokens),
        mean_tokens_per_conversation=_mean(list(tokens.values())),
    )


def _grouped(per_turn: list[list[LLMAttempted]], key: Callable[[LLMAttempted], str]) -> dict[str, ModelStats]:
    """Turns grouped by `key` of their first attempt: first-attempt success and retries per group."""
    grouped: dict[str, list[list[LLMAttempted]]] = defaultdict(list)
    for turn in per_turn:
        grouped[key(turn[0])].append(turn)
    return {
        name: ModelStats(
            turns=len(turns),
            first_attempt_success_rate=_mean([1.0 if t[0].outcome in _SUCCESS else 0.0 for t in turns]),
            mean_retries=_mean([len(t) - 1 for t in turns]),
        )
        for name, turns in sorted(grouped.items())
    }


def _mean(values: list[int] | list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0
