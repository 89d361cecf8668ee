"""JMESPath handlers (issue 5): in-process field picking with coded errors."""

import pytest

from schemas.result_handlers import HandlerLimits, ResultHandler
from workers.sandbox import HandlerFailed, run_handler, run_jmespath

STATS = {"bands": [{"band": i, "mean": i / 2, "std": 1.0, "histogram": [0] * 256} for i in range(1, 51)]}


def test_expression_picks_fields_from_structured_output() -> None:
    assert run_jmespath("bands[:2].{band: band, mean: mean}", STATS) == [
        {"band": 1, "mean": 0.5},
        {"band": 2, "mean": 1.0},
    ]


def test_bad_expression_is_a_syntax_error_with_a_column() -> None:
    with pytest.raises(HandlerFailed) as caught:
        run_jmespath("bands[.mean", STATS)

    assert caught.value.code == "handler.syntax_error" and caught.value.error.column is not None


def test_evaluation_error_is_a_handler_exception() -> None:
    with pytest.raises(HandlerFailed) as caught:
        run_jmespath("length(`1`)", STATS)

    assert caught.value.code == "handler.exception"


def test_oversized_selection_is_refused() -> None:
    with pytest.raises(HandlerFailed) as caught:
        run_jmespath("bands", STATS, HandlerLimits(max_output_bytes=1024))

    assert caught.value.code == "handler.output_too_large"


def test_run_handler_reports_jmespath_as_in_process() -> None:
    outcome = run_handler(ResultHandler(language="jmespath", script="bands[-1].band"), STATS)

    assert (outcome.value, outcome.isolation, outcome.language) == (50, "in-process", "jmespath")


def test_run_handler_turns_a_bad_expression_into_an_error_outcome() -> None:
    outcome = run_handler(ResultHandler(language="jmespath", script="bands[?"), STATS)

    assert outcome.error is not None and outcome.error.code == "handler.syntax_error" and not outcome.ok
