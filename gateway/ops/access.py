"""Who may read `/ops`: the single hook the authentication of the security issue plugs into."""

from starlette.requests import Request


def require_admin(request: Request) -> None:
    """Let the request through, or raise `starlette.exceptions.HTTPException(403)` once auth exists.

    Geogate has no authentication yet, so whoever reaches the gateway may read `/ops` (it binds to 127.0.0.1 by
    default). When auth is on, this must check that the request carries an admin identity.
    """
    return None
