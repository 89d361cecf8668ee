"""The ASGI app: the MCP endpoint at /mcp plus the routes of `gateway.surface`, behind `gateway.security`."""

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from eventlog.settings import Settings
from gateway.security.wiring import auth_setup, check_exposure, secure
from gateway.server import build_server

NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
"""`gateway.security.origin` checks Host and Origin on every route (the SDK's check covers /mcp only)."""


def build_app(settings: Settings) -> ASGIApp:
    """The gateway's ASGI app for uvicorn (Streamable HTTP at /mcp, both protocol eras).

    Raises:
        SystemExit: a non-loopback bind without authentication, or unusable auth settings.
    """
    check_exposure(settings)
    setup = auth_setup(settings)
    server, runtime = build_server(settings, auth=setup)
    app = server.streamable_http_app(
        host=settings.host,
        max_request_body_size=settings.security.max_request_bytes,
        transport_security=NO_SDK_HOST_CHECK,
    )
    return secure(app, settings, runtime, setup)
