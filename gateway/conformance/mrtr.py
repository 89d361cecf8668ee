# ruff: noqa: C901 - ported from the suite's reference fixture server (one register per family), kept close to it for diffing
"""Conformance fixtures: MRTR (`input_required`) tools and the JSON Schema 2020-12 tool."""

import json
import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp.types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequest,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)

from gateway.conformance.content import name_elicitation as _name_elicitation

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

logger = logging.getLogger(__name__)


def register(server: "MCPServer", runtime: "Gateway") -> None:
    # SEP-2322 InputRequiredResult fixtures (multi-round-trip / ephemeral workflow)

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult with a single elicitation request"""
        responses = ctx.input_responses
        if responses and "user_name" in responses:
            answer = responses["user_name"]
            name = (
                answer.content.get("name", "stranger") if isinstance(answer, ElicitResult) and answer.content else "?"
            )
            return f"Hello, {name}!"
        return InputRequiredResult(input_requests={"user_name": _name_elicitation()})

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult with a single sampling request"""
        responses = ctx.input_responses
        if responses and "capital_question" in responses:
            answer = responses["capital_question"]
            text = (
                answer.content.text
                if isinstance(answer, CreateMessageResult) and answer.content.type == "text"
                else "?"
            )
            return f"Model said: {text}"
        return InputRequiredResult(
            input_requests={
                "capital_question": CreateMessageRequest(
                    params=CreateMessageRequestParams(
                        messages=[
                            SamplingMessage(
                                role="user", content=TextContent(type="text", text="What is the capital of France?")
                            )
                        ],
                        max_tokens=100,
                    )
                )
            }
        )

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult with a single roots/list request"""
        responses = ctx.input_responses
        if responses and "client_roots" in responses:
            answer = responses["client_roots"]
            count = len(answer.roots) if isinstance(answer, ListRootsResult) else 0
            return f"Client exposed {count} root(s)."
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
        """Tests requestState round-tripping in the InputRequiredResult flow"""
        responses = ctx.input_responses
        if responses and "confirm" in responses and ctx.request_state == "request-state-nonce":
            return "state-ok: confirmation received"
        confirm = ElicitRequest(
            params=ElicitRequestFormParams(
                message="Please confirm",
                requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            )
        )
        return InputRequiredResult(input_requests={"confirm": confirm}, request_state="request-state-nonce")

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
        """Tests InputRequiredResult carrying elicitation, sampling and roots requests together"""
        responses = ctx.input_responses
        if responses and {"user_name", "greeting", "client_roots"} <= responses.keys():
            return "All inputs received."
        return InputRequiredResult(
            input_requests={
                "user_name": _name_elicitation(),
                "greeting": CreateMessageRequest(
                    params=CreateMessageRequestParams(
                        messages=[
                            SamplingMessage(role="user", content=TextContent(type="text", text="Generate a greeting"))
                        ],
                        max_tokens=50,
                    )
                ),
                "client_roots": ListRootsRequest(),
            },
            request_state="multiple-inputs",
        )

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
        """Tests a three-round InputRequiredResult flow with evolving requestState"""
        state = json.loads(ctx.request_state) if ctx.request_state else {"round": 0}
        responses = ctx.input_responses or {}

        if state["round"] == 0:
            return InputRequiredResult(
                input_requests={"step1": _name_elicitation("Step 1: What is your name?")},
                request_state=json.dumps({"round": 1}),
            )

        if state["round"] == 1 and "step1" in responses:
            step1 = responses["step1"]
            name = step1.content.get("name") if isinstance(step1, ElicitResult) and step1.content else None
            color_schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
            return InputRequiredResult(
                input_requests={
                    "step2": ElicitRequest(
                        params=ElicitRequestFormParams(
                            message="Step 2: What is your favorite color?", requested_schema=color_schema
                        )
                    )
                },
                request_state=json.dumps({"round": 2, "name": name}),
            )

        if state["round"] == 2 and "step2" in responses:
            step2 = responses["step2"]
            color = step2.content.get("color") if isinstance(step2, ElicitResult) and step2.content else None
            return f"{state.get('name')} likes {color}."

        # Missing or out-of-order response: re-request from the start.
        return InputRequiredResult(
            input_requests={"step1": _name_elicitation("Step 1: What is your name?")},
            request_state=json.dumps({"round": 1}),
        )

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
        """Tests that the server rejects a tampered requestState echo.

        The handler stays plaintext; tamper rejection happens in the SDK's request-state boundary.
        """
        if ctx.request_state is None:
            confirm = ElicitRequest(
                params=ElicitRequestFormParams(
                    message="Please confirm",
                    requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                )
            )
            return InputRequiredResult(input_requests={"confirm": confirm}, request_state="round-1")
        return f"state-ok: {ctx.request_state}"

    @server.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> InputRequiredResult:
        """Tests that inputRequests only include methods the client declared support for"""
        caps = ctx.client_capabilities
        requests: dict[str, InputRequest] = {}
        if caps is None or caps.sampling is not None:
            requests["sample"] = CreateMessageRequest(
                params=CreateMessageRequestParams(
                    messages=[SamplingMessage(role="user", content=TextContent(type="text", text="Say hello"))],
                    max_tokens=50,
                )
            )
        if caps is None or caps.elicitation is not None:
            requests["ask"] = _name_elicitation()
        return InputRequiredResult(input_requests=requests, request_state="capability-gated")

    # SEP-1613 / SEP-2106 JSON Schema 2020-12 fixture: a tool whose inputSchema carries
    # the full set of 2020-12 keywords the conformance scenario asserts on.

    JSON_SCHEMA_2020_12_INPUT_SCHEMA: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }

    @server.tool(name="json_schema_2020_12_tool")
    def json_schema_2020_12_tool() -> str:
        """Tests JSON Schema 2020-12 keyword preservation in tools/list (inputSchema installed below)."""
        return "json_schema_2020_12_tool"

    # TODO(felix): replace with a public input_schema= override once MCPServer.tool() grows one.
    server._tool_manager._tools["json_schema_2020_12_tool"].parameters = (  # pyright: ignore[reportPrivateUsage]
        JSON_SCHEMA_2020_12_INPUT_SCHEMA
    )
