"""The `result_handler` contract (schemas/result_handlers.py): accepted shapes and size caps."""

import pytest
from pydantic import ValidationError

from schemas.result_handlers import MAX_SCRIPT_CHARS, MAX_SCRIPT_LINES, HandlerLimits, ResultHandler


def test_script_lines_are_joined_with_newlines() -> None:
    assert ResultHandler(script=["a = 1", "a"]).source == "a = 1\na"


def test_language_defaults_to_python_and_is_closed() -> None:
    assert ResultHandler(script="1").language == "python"
    with pytest.raises(ValidationError):
        ResultHandler.model_validate({"language": "bash", "script": "id"})


@pytest.mark.parametrize(
    "script",
    ["", "   ", [], "x" * (MAX_SCRIPT_CHARS + 1), ["1"] * (MAX_SCRIPT_LINES + 1)],
    ids=["empty", "blank", "no-lines", "too-long", "too-many-lines"],
)
def test_empty_or_oversized_scripts_are_refused(script: str | list[str]) -> None:
    with pytest.raises(ValidationError):
        ResultHandler(script=script)


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError):
        ResultHandler.model_validate({"script": "1", "timeout": 99})


def test_limits_are_bounded() -> None:
    with pytest.raises(ValidationError):
        HandlerLimits(cpu_seconds=0)
    assert HandlerLimits().max_tool_calls == 8
