"""Who is calling: the authenticated client id, or `anonymous` when the gateway runs without auth."""

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context

from geogate.settings import Settings
from schemas.scopes import ADMIN


def caller(ctx: Context | None = None) -> str:
    """The actor recorded on events (the OAuth client id when a token was verified)."""
    token = get_access_token()
    return token.client_id if token is not None else "anonymous"


def is_admin(settings: Settings, actor: str) -> bool:
    """Whether the caller may administer (revoke justifications, read any call's raw output).

    With authentication, the token must carry the `admin` scope and, when `GEOGATE_ADMIN_ACTORS` lists client ids,
    the client must be one of them. Without authentication only the listed ids count (e.g. `anonymous`).
    """
    token = get_access_token()
    if token is None:
        return settings.is_admin(actor)
    listed = set(settings.admin_actors)
    return ADMIN in token.scopes and (not listed or actor in listed)
