"""Who is calling: the authenticated client id, or `anonymous` when the gateway runs without auth."""

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context


def caller(ctx: Context | None = None) -> str:
    """The actor recorded on events (the OAuth client id when a token was verified)."""
    token = get_access_token()
    return token.client_id if token is not None else "anonymous"
