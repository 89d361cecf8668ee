"""Which client may be asked what, and which retries continue a call (`gateway.input_relay`)."""

import json
from types import SimpleNamespace

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ClientCapabilities, ElicitationCapability, SamplingCapability

from gateway.input_relay import STATE_KEY, declared, require, resumed
from tests.conformance.fixtures.specs.asking import ALL_AT_ONCE
from tests.conformance.fixtures.specs.calls import TEXT


def request(**caps: object) -> SimpleNamespace:
    """What `gateway.input_relay` reads of the SDK's request context: the capabilities the client declared."""
    return SimpleNamespace(client_capabilities=ClientCapabilities(**caps))


def test_a_tool_needing_what_the_client_did_not_declare_is_refused_with_32021_naming_it() -> None:
    ctx = request(sampling=SamplingCapability())

    with pytest.raises(MCPError) as refused:
        require(ALL_AT_ONCE, ctx)  # needs sampling, elicitation and roots

    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}, "roots": {}}}


def test_a_tool_needing_nothing_runs_for_any_client_and_the_call_records_what_it_may_ask() -> None:
    require(TEXT, None)
    assert declared(request(sampling=SamplingCapability(), elicitation=ElicitationCapability())) == [
        "sampling",
        "elicitation",
    ]
    assert declared(None) == []


def test_only_a_state_naming_a_call_resumes_it() -> None:
    ours = SimpleNamespace(request_state=json.dumps({STATE_KEY: "c1", "timeout_s": 60, "handled": False}))
    preflight = SimpleNamespace(request_state=json.dumps({"round": 1}))  # the preflight gate's own MRTR rounds

    assert resumed(ours) is not None and resumed(ours).call_id == "c1"  # type: ignore[union-attr]
    assert resumed(preflight) is None and resumed(SimpleNamespace(request_state=None)) is None
