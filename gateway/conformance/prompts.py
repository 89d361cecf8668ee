"""The `test_*` prompts the conformance suite gets: plain, with arguments, with an embedded resource or an image,
and one that asks the user first (MRTR `input_required` on `prompts/get`).

What the suite checks: every message has a role and content; both arguments appear in the rendered text; one message
embeds a resource and one carries an image (data and MIME type); the asking prompt answers `input_required` with an
elicitation, then a complete result once the answer comes back.
"""

import base64
from typing import TYPE_CHECKING

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    TextContent,
    TextResourceContents,
)

from gateway.conformance.resources import SWATCH_RGB
from schemas.content import solid_png

if TYPE_CHECKING:
    from mcp.server import MCPServer

CONTEXT_KEY = "user_context"


def _say(text: str) -> UserMessage:
    return UserMessage(role="user", content=TextContent(type="text", text=text))


def _context_question() -> ElicitRequest:
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    return ElicitRequest(
        params=ElicitRequestFormParams(message="What should this prompt be about?", requested_schema=schema)
    )


def _answered_context(ctx: Context) -> str | None:
    answer = (ctx.input_responses or {}).get(CONTEXT_KEY)
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        return str(answer.content.get("context", ""))
    return None


def register(server: "MCPServer") -> None:
    """Declare the fixture prompts on `server`."""

    @server.prompt(name="test_simple_prompt", description="One user message, no arguments.")
    def plain() -> list[UserMessage]:
        return [_say("Summarise the rasters in this workspace: extent, CRS and resolution.")]

    @server.prompt(name="test_prompt_with_arguments", description="Renders both of its arguments into the message.")
    def with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        return [_say(f"Compare {arg1} with {arg2} and say which suits a slope analysis better.")]

    @server.prompt(name="test_prompt_with_embedded_resource", description="Embeds the resource at `resourceUri`.")
    def with_resource(resourceUri: str) -> list[UserMessage]:  # the suite's argument name
        note = TextResourceContents(uri=resourceUri, mime_type="text/plain", text="Band 1: elevation in metres.")
        return [UserMessage(role="user", content=EmbeddedResource(type="resource", resource=note)), _say("Use it.")]

    @server.prompt(name="test_prompt_with_image", description="Shows a colour swatch and asks about it.")
    def with_image() -> list[UserMessage]:
        data = base64.b64encode(solid_png(4, 4, SWATCH_RGB)).decode("ascii")
        image = ImageContent(type="image", data=data, mime_type="image/png")
        return [UserMessage(role="user", content=image), _say("Which land cover class would you map this colour to?")]

    @server.prompt(name="test_input_required_result_prompt", description="Asks the user what it is about, first.")
    async def asks_first(ctx: Context) -> list[UserMessage] | InputRequiredResult:
        context = _answered_context(ctx)
        if context is None:
            return InputRequiredResult(input_requests={CONTEXT_KEY: _context_question()})
        return [_say(f"Work on this: {context}")]
