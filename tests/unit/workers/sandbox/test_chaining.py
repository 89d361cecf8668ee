"""Chaining (issue 5): `tools.<name>(**args)` inside a handler, enforced on the host with a fake callback."""

from collections.abc import Iterator
from typing import Any

import pytest

from schemas.result_handlers import HandlerLimits, ResultHandler
from workers.jobkit.errors import JobFailed
from workers.sandbox import PythonSandbox, ToolBridge, run_handler

RASTER_INFO = {
    "type": "object",
    "description": "Describe a raster.",
    "properties": {"uri": {"type": "string"}, "band": {"type": "integer"}, "result_handler": {"type": "object"}},
    "required": ["uri"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[PythonSandbox]:
    box = PythonSandbox()
    yield box
    box.close()


class FakeTools:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, args: dict[str, Any]) -> Any:
        self.calls.append((name, args))
        if args.get("uri") == "broken.tif":
            raise JobFailed("gdal.open_failed", "cannot open broken.tif")
        return {"uri": args["uri"], "width": 10, "band": args.get("band")}


def run(sandbox: PythonSandbox, script: str, fake: FakeTools, budget: int = 8) -> Any:
    limits = HandlerLimits(max_tool_calls=budget)
    return run_handler(
        ResultHandler(script=script), None, limits=limits, call_tool=fake, tool_schemas={"raster_info": RASTER_INFO},
        sandbox=sandbox,
    )  # fmt: skip


def test_handler_calls_an_allowed_tool_through_the_host_callback(sandbox: PythonSandbox) -> None:
    fake = FakeTools()
    outcome = run(sandbox, "tools.raster_info(uri='a.tif', band=2)['width']", fake)

    assert outcome.value == 10 and outcome.tool_calls == 1
    assert fake.calls == [("raster_info", {"uri": "a.tif", "band": 2})]


def test_wrapper_signature_follows_the_argument_schema(sandbox: PythonSandbox) -> None:
    outcome = run(sandbox, "import inspect\nstr(inspect.signature(tools.raster_info))", FakeTools())

    assert outcome.value == "(*, uri, band=None)"  # result_handler is never offered to a chained call


def test_wrong_keyword_is_a_clear_error_inside_the_handler(sandbox: PythonSandbox) -> None:
    fake = FakeTools()
    outcome = run(sandbox, "tools.raster_info(url='a.tif')", fake)

    assert outcome.error is not None and outcome.error.code == "handler.exception"
    assert outcome.error.exc_type == "TypeError" and "url" in outcome.error.message and "uri" in outcome.error.message
    assert fake.calls == []


def test_a_forged_call_to_a_tool_outside_the_allow_list_is_refused_by_the_host(sandbox: PythonSandbox) -> None:
    """A handler can dig the pipe out of a wrapper and ask for any name; the host's allow-list decides."""
    script = (
        "cells = tools['raster_info'].__closure__\n"
        "channel = [c.cell_contents for c in cells if hasattr(c.cell_contents, 'call')][0]\n"
        "try:\n"
        "    channel.call('raster_reproject', {'uri': 'x.tif', 'dst_crs': 'EPSG:3857'})\n"
        "except Exception as e:\n"
        "    result = e.code"
    )
    fake = FakeTools()
    outcome = run(sandbox, script, fake)

    assert outcome.value == "tool.not_allowed" and fake.calls == []


def test_host_refuses_names_not_in_the_allow_list() -> None:
    bridge = ToolBridge(FakeTools(), {"raster_info": RASTER_INFO})

    assert bridge.handle("raster_reproject", {"uri": "a.tif"})["code"] == "tool.not_allowed"


def test_host_validates_arguments_against_the_schema() -> None:
    bridge = ToolBridge(FakeTools(), {"raster_info": RASTER_INFO})

    assert bridge.handle("raster_info", {"uri": 3})["code"] == "tool.invalid_arguments"
    assert bridge.handle("raster_info", {"uri": "a", "result_handler": {}})["code"] == "tool.invalid_arguments"
    assert bridge.used == 0


def test_call_budget_is_enforced_per_run(sandbox: PythonSandbox) -> None:
    script = "n = 0\nfor i in range(5):\n    tools.raster_info(uri='a.tif')\n    n += 1\nn"
    fake = FakeTools()
    outcome = run(sandbox, script, fake, budget=3)

    assert outcome.error is not None and outcome.error.code == "handler.tool_error"
    assert "tool.budget_exhausted" in outcome.error.message and outcome.error.line == 3
    assert len(fake.calls) == 3


def test_tool_failure_surfaces_its_code_and_can_be_caught(sandbox: PythonSandbox) -> None:
    script = "try:\n    tools.raster_info(uri='broken.tif')\nexcept Exception as e:\n    result = e.code"

    assert run(sandbox, script, FakeTools()).value == "gdal.open_failed"


def test_without_a_callback_no_tool_is_callable(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("tools.raster_info(uri='a')", None)

    assert outcome.error is not None and outcome.error.code == "handler.exception"
    assert outcome.error.exc_type == "AttributeError"
