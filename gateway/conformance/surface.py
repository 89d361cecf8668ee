# ruff: noqa: C901 - ported from the suite's reference fixture server (one register per family), kept close to it for diffing
"""Conformance fixtures: `test://` resources, `test_*` prompts, resource subscriptions."""

import base64
import json
import logging
from typing import TYPE_CHECKING

from mcp.server import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

from gateway.conformance.content import TEST_IMAGE_BASE64

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

logger = logging.getLogger(__name__)


def register(server: "MCPServer", runtime: "Gateway") -> None:
    resource_subscriptions: set[str] = set()
    watched_resource_content = "Watched resource content"

    # Resources
    @server.resource("test://static-text")
    def static_text_resource() -> str:
        """A static text resource for testing"""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary")
    def static_binary_resource() -> bytes:
        """A static binary resource (image) for testing"""
        return base64.b64decode(TEST_IMAGE_BASE64)

    @server.resource("test://template/{id}/data")
    def template_resource(id: str) -> str:
        """A resource template with parameter substitution"""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource("test://watched-resource")
    def watched_resource() -> str:
        """A resource that can be subscribed to for updates"""
        return watched_resource_content

    # Prompts
    @server.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """A simple prompt without arguments"""
        return [UserMessage(role="user", content=TextContent(type="text", text="This is a simple prompt for testing."))]

    @server.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """A prompt with required arguments"""
        return [
            UserMessage(
                role="user",
                content=TextContent(type="text", text=f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
            )
        ]

    @server.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        """A prompt that includes an embedded resource"""
        return [
            UserMessage(
                role="user",
                content=EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri=resourceUri,
                        mime_type="text/plain",
                        text="Embedded resource content for testing.",
                    ),
                ),
            ),
            UserMessage(
                role="user", content=TextContent(type="text", text="Please process the embedded resource above.")
            ),
        ]

    @server.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """A prompt that includes image content"""
        return [
            UserMessage(role="user", content=ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")),
            UserMessage(role="user", content=TextContent(type="text", text="Please analyze the image above.")),
        ]

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
        """Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)"""
        responses = ctx.input_responses
        if responses and "user_context" in responses:
            answer = responses["user_context"]
            text = answer.content.get("context", "?") if isinstance(answer, ElicitResult) and answer.content else "?"
            return [
                UserMessage(role="user", content=TextContent(type="text", text=f"Use the following context: {text}"))
            ]
        return InputRequiredResult(
            input_requests={
                "user_context": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message="What context should the prompt use?",
                        requested_schema={
                            "type": "object",
                            "properties": {"context": {"type": "string"}},
                            "required": ["context"],
                        },
                    )
                )
            }
        )

    # Custom request handlers
    # TODO(felix): Add public APIs to MCPServer for subscribe_resource, unsubscribe_resource,
    # and set_logging_level to avoid accessing protected _lowlevel_server attribute.
    async def handle_subscribe(ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
        """Handle resource subscription"""
        resource_subscriptions.add(str(params.uri))
        logger.info(f"Subscribed to resource: {params.uri}")
        return EmptyResult()

    async def handle_unsubscribe(ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
        """Handle resource unsubscription"""
        resource_subscriptions.discard(str(params.uri))
        logger.info(f"Unsubscribed from resource: {params.uri}")
        return EmptyResult()

    server._lowlevel_server.add_request_handler(  # pyright: ignore[reportPrivateUsage]
        "resources/subscribe", SubscribeRequestParams, handle_subscribe
    )
    server._lowlevel_server.add_request_handler(  # pyright: ignore[reportPrivateUsage]
        "resources/unsubscribe", UnsubscribeRequestParams, handle_unsubscribe
    )
