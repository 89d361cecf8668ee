# ruff: noqa: C901, SIM108 - ported from the suite's reference fixture server, kept close to it for diffing
"""Conformance fixtures: content shapes, logging, progress, sampling, elicitation, errors, list changes."""

import asyncio
import logging
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    ImageContent,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

logger = logging.getLogger(__name__)

TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="


NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def name_elicitation(message: str = "What is your name?") -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=NAME_SCHEMA))


def register(server: "MCPServer", runtime: "Gateway") -> None:
    # Tools
    @server.tool()
    def test_simple_text() -> str:
        """Tests simple text content response"""
        return "This is a simple text response for testing."

    @server.tool()
    def test_image_content() -> list[ImageContent]:
        """Tests image content response"""
        return [ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")]

    @server.tool()
    def test_audio_content() -> list[AudioContent]:
        """Tests audio content response"""
        return [AudioContent(type="audio", data=TEST_AUDIO_BASE64, mime_type="audio/wav")]

    @server.tool()
    def test_embedded_resource() -> list[EmbeddedResource]:
        """Tests embedded resource content response"""
        return [
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://embedded-resource",
                    mime_type="text/plain",
                    text="This is an embedded resource content.",
                ),
            )
        ]

    @server.tool()
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Tests response with multiple content types (text, image, resource)"""
        return [
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text='{"test": "data", "value": 123}',
                ),
            ),
        ]

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Tests tool that emits log messages during execution"""
        await ctx.info("Tool execution started")  # pyright: ignore[reportDeprecated]
        await asyncio.sleep(0.05)

        await ctx.info("Tool processing data")  # pyright: ignore[reportDeprecated]
        await asyncio.sleep(0.05)

        await ctx.info("Tool execution completed")  # pyright: ignore[reportDeprecated]
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Tests tool that reports progress notifications"""
        await ctx.report_progress(progress=0, total=100, message="Completed step 0 of 100")
        await asyncio.sleep(0.05)

        await ctx.report_progress(progress=50, total=100, message="Completed step 50 of 100")
        await asyncio.sleep(0.05)

        await ctx.report_progress(progress=100, total=100, message="Completed step 100 of 100")

        # Return progress token as string
        progress_token = (
            ctx.request_context.meta.get("progress_token") if ctx.request_context and ctx.request_context.meta else 0
        )
        return str(progress_token)

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Tests server-initiated sampling (LLM completion request)"""
        try:
            # Request sampling from client. Without related_request_id the request goes
            # to the standalone GET stream and is silently dropped if it is not open yet.
            result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
                messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )

            # Since we're not passing tools param, result.content is single content
            if result.content.type == "text":
                model_response = result.content.text
            else:
                model_response = "No response"

            return f"LLM response: {model_response}"
        except Exception as e:
            return f"Sampling not supported or error: {e!s}"

    class UserResponse(BaseModel):
        response: str = Field(description="User's response")

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Tests server-initiated elicitation (user input request)"""
        try:
            # Request user input from client
            result = await ctx.elicit(message=message, schema=UserResponse)

            # Type-safe discriminated union narrowing using action field
            if result.action == "accept":
                content = result.data.model_dump_json()
            else:  # decline or cancel
                content = "{}"

            return f"User response: action={result.action}, content={content}"
        except Exception as e:
            return f"Elicitation not supported or error: {e!s}"

    class SEP1034DefaultsSchema(BaseModel):
        """Schema for testing SEP-1034 elicitation with default values for all primitive types"""

        name: str = Field(default="John Doe", description="User name")
        age: int = Field(default=30, description="User age")
        score: float = Field(default=95.5, description="User score")
        status: str = Field(
            default="active",
            description="User status",
            json_schema_extra={"enum": ["active", "inactive", "pending"]},
        )
        verified: bool = Field(default=True, description="Verification status")

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Tests elicitation with default values for all primitive types (SEP-1034)"""
        try:
            # Request user input with defaults for all primitive types
            result = await ctx.elicit(message="Please provide user information", schema=SEP1034DefaultsSchema)

            # Type-safe discriminated union narrowing using action field
            if result.action == "accept":
                content = result.data.model_dump_json()
            else:  # decline or cancel
                content = "{}"

            return f"Elicitation result: action={result.action}, content={content}"
        except Exception as e:
            return f"Elicitation not supported or error: {e!s}"

    class EnumSchemasTestSchema(BaseModel):
        """Schema for testing enum schema variations (SEP-1330)"""

        untitledSingle: str = Field(
            description="Simple enum without titles", json_schema_extra={"enum": ["active", "inactive", "pending"]}
        )
        titledSingle: str = Field(
            description="Enum with titled options (oneOf)",
            json_schema_extra={
                "oneOf": [
                    {"const": "low", "title": "Low Priority"},
                    {"const": "medium", "title": "Medium Priority"},
                    {"const": "high", "title": "High Priority"},
                ]
            },
        )
        untitledMulti: list[str] = Field(
            description="Multi-select without titles",
            json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
        )
        titledMulti: list[str] = Field(
            description="Multi-select with titled options",
            json_schema_extra={
                "items": {
                    "anyOf": [
                        {"const": "feature", "title": "New Feature"},
                        {"const": "bug", "title": "Bug Fix"},
                        {"const": "docs", "title": "Documentation"},
                    ]
                }
            },
        )
        legacyEnum: str = Field(
            description="Legacy enum with enumNames",
            json_schema_extra={
                "enum": ["small", "medium", "large"],
                "enumNames": ["Small Size", "Medium Size", "Large Size"],
            },
        )

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Tests elicitation with enum schema variations per SEP-1330"""
        try:
            result = await ctx.elicit(
                message="Please select values using different enum schema types", schema=EnumSchemasTestSchema
            )

            if result.action == "accept":
                content = result.data.model_dump_json()
            else:
                content = "{}"

            return f"Elicitation completed: action={result.action}, content={content}"
        except Exception as e:
            return f"Elicitation not supported or error: {e!s}"

    @server.tool()
    def test_error_handling() -> str:
        """Tests error response handling"""
        raise RuntimeError("This tool intentionally returns an error for testing")

    @server.tool()
    def test_x_mcp_header(
        region: Annotated[
            str,
            Field(
                description="Mirrored into the Mcp-Param-Region header",
                json_schema_extra={"x-mcp-header": "Region"},
            ),
        ] = "<none>",
    ) -> str:
        """Tests SEP-2243 Mcp-Param-* server-side validation.

        Arms the http-custom-header-server-validation conformance scenario, which
        skips when no tool with an `x-mcp-header` annotation is found.
        """
        return f"region={region}"

    @server.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Tests that a handler-raised MISSING_REQUIRED_CLIENT_CAPABILITY surfaces as a top-level JSON-RPC error.

        Requires the client to declare the ``sampling`` capability. When absent, raises
        `MCPError` (which the tool dispatch re-raises rather than wrapping in
        ``CallToolResult.isError``) so the conformance harness observes a protocol-level
        error response with ``data.requiredCapabilities``.
        """
        capabilities = ctx.session.client_capabilities
        sampling_declared = capabilities is not None and capabilities.sampling is not None
        if not sampling_declared:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="This tool requires the client 'sampling' capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "Client declared sampling capability; proceeding."

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Tests SSE polling by closing stream mid-call (SEP-1699)"""
        await ctx.info("Before disconnect")  # pyright: ignore[reportDeprecated]

        await ctx.close_sse_stream()

        await asyncio.sleep(0.2)  # Wait for client to reconnect

        await ctx.info("After reconnect")  # pyright: ignore[reportDeprecated]
        return "Reconnection test completed"

    def _dynamic_tool() -> str:
        """A tool registered and removed by test_trigger_tool_change."""
        return "dynamic"

    def _dynamic_prompt() -> str:
        """A prompt registered and removed by test_trigger_prompt_change."""
        return "dynamic"

    @server.tool()
    async def test_trigger_tool_change(ctx: Context) -> str:
        """Mutates the tool list and announces it to subscriptions/listen streams (SEP-2575)"""
        server.add_tool(_dynamic_tool, name="test_dynamic_tool")
        server.remove_tool("test_dynamic_tool")
        await ctx.notify_tools_changed()
        return "tool list changed"

    @server.tool()
    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Mutates the prompt list and announces it to subscriptions/listen streams (SEP-2575)"""
        server.add_prompt(Prompt.from_function(_dynamic_prompt, name="test_dynamic_prompt", description="dynamic"))
        server.remove_prompt("test_dynamic_prompt")
        await ctx.notify_prompts_changed()
        return "prompt list changed"
