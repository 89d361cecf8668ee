"""Who may read `/ops`: with authentication on, the security layer's guard admits only the `admin` scope to every
`/ops` route (`gateway.security.wiring.guarded_kind`); this hook is for checks a page needs beyond that."""

from starlette.requests import Request


def require_admin(request: Request) -> None:
    """Let the request through: the guard in front of the route has already required the admin scope when
    authentication is on; without it, whoever reaches the gateway (127.0.0.1 by default) may read `/ops`."""
    return None
