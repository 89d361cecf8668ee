"""Retry context (seed 001): all previous errors in order, guidance per kind, the tool schema again."""

from schemas.chat import ExtractionError
from tests.unit.workers.llm.samples import TOOLS
from workers.llm.config import LoopPolicy
from workers.llm.retry import GUIDANCE, retry_prompt
from workers.llm.templates import TEMPLATES


def test_retry_prompt_lists_every_attempt_guidance_and_schema() -> None:
    history = [
        [ExtractionError(kind="invalid_json", message="missing comma")],
        [
            ExtractionError(
                kind="unknown_tool", message="unknown tool 'rasterinfo'", tool="rasterinfo", suggestion="raster_info"
            )
        ],
    ]
    prompt = retry_prompt(history, TOOLS, TEMPLATES["generic"])

    assert prompt.index("Attempt 1: invalid_json") < prompt.index("Attempt 2: unknown_tool")
    assert GUIDANCE["invalid_json"] in prompt and GUIDANCE["unknown_tool"] in prompt
    assert '"required":["uri"]' in prompt and "raster_reproject" not in prompt


def test_every_error_kind_has_guidance() -> None:
    from typing import get_args

    from schemas.chat import ErrorKind

    assert set(get_args(ErrorKind)) == set(GUIDANCE)


def test_temperature_drops_per_attempt_and_stops_at_the_floor() -> None:
    policy = LoopPolicy(min_temperature=0.55)
    assert [policy.temperature_for(n) for n in (1, 2, 3)] == [0.7, 0.6, 0.55]
