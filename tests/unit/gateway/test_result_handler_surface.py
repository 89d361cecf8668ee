"""Result handlers at the gateway (issue 5): schemas on every tool, validation, and the results clients get."""

import pytest
from jsonschema import Draft202012Validator
from mcp.types import ResourceLink

from gateway import results
from gateway.server import input_schema, output_schema
from schemas.call_plan import plan_call
from schemas.events import HandlerFailed, HandlerSucceeded, OutputRef
from schemas.tools import TOOLS
from schemas.validation import ArgumentsInvalid

RAW = OutputRef(uri="blob://sha256:ab", size=1234, sha256="ab")
PONG = {"pong": True, "worker": "w:1", "queue": "gdal", "queue_wait_ms": 0.5}


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_accepts_a_handler_and_admits_both_result_shapes(name: str) -> None:
    spec = TOOLS[name]
    assert "result_handler" in input_schema(spec)["properties"]
    schema = output_schema(spec)
    Draft202012Validator.check_schema(schema)
    assert not list(Draft202012Validator(schema).iter_errors({"result": [1, {"any": "json"}]}))


def test_the_output_schema_still_checks_plain_results() -> None:
    validator = Draft202012Validator(output_schema(TOOLS["ping"]))

    assert not list(validator.iter_errors(PONG))
    assert list(validator.iter_errors({**PONG, "result": 1})) and list(validator.iter_errors({}))


def test_argument_and_handler_errors_are_named_together() -> None:
    with pytest.raises(ArgumentsInvalid) as caught:
        plan_call(TOOLS["ping"], {"colour": 1, "result_handler": {"language": "lua", "script": "x"}}, handlers=True)

    assert {e.field for e in caught.value.errors} == {"colour", "result_handler.language"}


def test_a_handler_under_meta_is_accepted_and_the_argument_wins() -> None:
    meta = {"io.geogate/result_handler": {"language": "jmespath", "script": "pong"}}

    from_meta = plan_call(TOOLS["ping"], {}, meta["io.geogate/result_handler"], handlers=True).handler
    from_arg = plan_call(TOOLS["ping"], {"result_handler": {"script": "1"}}, from_meta, handlers=True).handler

    assert from_meta == {"language": "jmespath", "script": "pong"}
    assert from_arg == {"language": "python", "script": "1"}


def test_a_handled_result_carries_only_the_value_and_says_so_in_meta() -> None:
    data = HandlerSucceeded(
        call_id="C1", value=[1], value_bytes=3, raw=RAW, language="python", isolation="bwrap", duration_ms=2.5
    )

    result = results.handled("C1", data, [1])

    assert result.structured_content == {"result": [1]} and not result.is_error
    run = result.meta["io.geogate/result_handler"]
    assert (run["raw"]["size"], run["raw"]["uri"], run["duration_ms"]) == (1234, "calls://C1/raw", 2.5)


def test_a_failed_handler_is_a_tool_error_that_says_the_tool_succeeded_and_links_the_raw_output() -> None:
    data = HandlerFailed(call_id="C1", code="handler.syntax_error", message="bad", line=2, raw=RAW, language="python")

    result = results.handler_failed("C1", data)

    error = result.structured_content["error"]
    assert (
        result.is_error
        and error["tool_succeeded"] is True
        and (error["code"], error["line"])
        == (
            "handler.syntax_error",
            2,
        )
    )
    [link] = [c for c in result.content if isinstance(c, ResourceLink)]
    assert str(link.uri) == "calls://C1/raw" and link.size == 1234
