"""The `test://` resources the conformance suite reads, and resource subscriptions (2025-11-25).

What the suite checks: a text resource and a binary one each come back with a URI, a MIME type and their text or
blob; a template's parameter shows up in what it returns; subscribing and unsubscribing are acknowledged.
"""

import json
from typing import TYPE_CHECKING, Any

from mcp.server import ServerRequestContext
from mcp.types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from schemas.content import solid_png

if TYPE_CHECKING:
    from mcp.server import MCPServer

SWATCH_RGB = (46, 139, 87)
"""The colour of the fixtures' image (a sea-green swatch)."""


class Subscriptions:
    """Which fixture URIs a client asked to follow. The fixtures never change, so no update is ever sent."""

    def __init__(self) -> None:
        self.uris: set[str] = set()

    async def subscribe(self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
        self.uris.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
        self.uris.discard(str(params.uri))
        return EmptyResult()


def register(server: "MCPServer") -> None:
    """Declare the fixture resources and the subscription handlers on `server`."""

    @server.resource("test://static-text", name="fixture_text", description="A fixed text.", mime_type="text/plain")
    def fixed_text() -> str:
        return "Geogate serves this fixed text for the MCP conformance suite."

    @server.resource("test://static-binary", name="fixture_swatch", description="A PNG swatch.", mime_type="image/png")
    def swatch() -> bytes:
        return solid_png(4, 4, SWATCH_RGB)

    @server.resource(
        "test://template/{id}/data",
        name="fixture_record",
        description="A JSON record built from the `id` in its URI.",
        mime_type="application/json",
    )
    def record(id: str) -> str:  # the template's parameter name
        return json.dumps({"id": id, "uri": f"test://template/{id}/data", "served_by": "geogate"})

    @server.resource(
        "test://watched-resource", name="fixture_watched", description="A text one may subscribe to; it never changes."
    )
    def watched() -> str:
        return "Subscribe to me: I will not change."

    follows = Subscriptions()
    # MCPServer has no public hook for these two requests (2025-11-25 only); the low-level server does.
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, follows.subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, follows.unsubscribe)
