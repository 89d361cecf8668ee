"""Putting security around the app: the SDK's auth (`TokenVerifier`, `AuthSettings`), guards on each route,
`Host`/`Origin` checks and the body-size limit; and the refusal to serve a non-loopback address without auth."""

from dataclasses import dataclass

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import RequestBodyLimitMiddleware
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp

from gateway.map_tickets import HEADER
from gateway.runtime import Gateway
from gateway.security.chain import ChainVerifier
from gateway.security.guard import Guard, Policy, RouteKind
from gateway.security.jwt_verifier import JwtVerifier
from gateway.security.origin import HostOriginCheck
from gateway.security.tokens import ClientLimits, StaticTokenVerifier, load_tokens
from geogate.settings import Settings, SettingsError, is_loopback
from schemas.scopes import ALL_SCOPES

MCP_PATH = "/mcp"
GUARDED: dict[str, RouteKind] = {
    MCP_PATH: "mcp",
    "/api/chat": "chat",
    "/api/chat/stream": "chat",
    "/metrics": "admin",
}
"""Routes behind a guard; `/health` and the protected-resource metadata stay open. Every `/ops` page is an admin
route too (`guarded_kind`); its static front-end libraries stay open."""
OPS_PREFIX = "/ops"
TILES_PREFIX = "/tiles/"
"""The XYZ map tiles (`gateway.xyz`): the `read` scope, like a resource read."""
MAP_LAYER = "/maps/layer"
"""A layer of the interactive map (`gateway.maps`): the `read` scope, like a tile."""
CROSS_ORIGIN = (TILES_PREFIX, "/maps/")
"""Routes an MCP App's frame (another origin, one `GEOGATE_ALLOWED_ORIGINS` admits) may read: answered with CORS
headers, and a preflight (a bearer token makes one) answered before the guard."""


def guarded_kind(path: str) -> RouteKind | None:
    if path in GUARDED:
        return GUARDED[path]
    if path.startswith(TILES_PREFIX) or path == MAP_LAYER:
        return "tiles"
    return "admin" if path == OPS_PREFIX or path.startswith(OPS_PREFIX + "/") else None


STALE_SLOT_MARGIN_S = 60.0


class InsecureBind(SettingsError):
    """Serving a non-loopback address without authentication was not explicitly allowed."""


@dataclass(frozen=True)
class AuthSetup:
    """The SDK's auth pieces for `MCPServer`, and what the guards need from them."""

    verifier: TokenVerifier
    settings: AuthSettings
    static: StaticTokenVerifier | None
    metadata_url: str | None
    resource_url: str


def resource_url(settings: Settings) -> str:
    configured = settings.security.auth_resource_url
    return configured or f"http://{settings.host}:{settings.port}{MCP_PATH}"


def auth_setup(settings: Settings) -> AuthSetup | None:
    """The verifiers the settings name (static tokens, JWTs, or both), None when authentication is off.

    Raises:
        SettingsError: the tokens file or the JWKS cannot be used, or JWT mode lacks `GEOGATE_AUTH_ISSUER`.
    """
    security = settings.security
    if not security.auth_enabled:
        return None
    resource = resource_url(settings)
    static = _static(settings)
    jwt = _jwt(settings, resource)
    verifiers: list[TokenVerifier] = [v for v in (static, jwt) if v is not None]
    verifier = verifiers[0] if len(verifiers) == 1 else ChainVerifier(verifiers)
    if jwt is None:  # static tokens only: no authorization server to advertise
        auth = AuthSettings(issuer_url=AnyHttpUrl(resource), resource_server_url=None)
        return AuthSetup(verifier, auth, static, None, resource)
    auth = AuthSettings(
        issuer_url=AnyHttpUrl(str(security.auth_issuer)),
        resource_server_url=AnyHttpUrl(resource),
        validate_token_resource=False,  # the JWT verifier checks the audience itself
    )
    metadata = str(build_resource_metadata_url(AnyHttpUrl(resource)))
    return AuthSetup(verifier, auth, static, metadata, resource)


def _static(settings: Settings) -> StaticTokenVerifier | None:
    path = settings.security.auth_tokens_file
    if path is None:
        return None
    try:
        return StaticTokenVerifier(load_tokens(path))
    except ValueError as exc:
        raise SettingsError(f"GEOGATE_AUTH_TOKENS_FILE: {exc}") from exc


def _jwt(settings: Settings, resource: str) -> JwtVerifier | None:
    security = settings.security
    if not security.jwt_enabled:
        return None
    if not security.auth_issuer:
        raise SettingsError("GEOGATE_AUTH_ISSUER is required with GEOGATE_AUTH_JWKS_FILE or GEOGATE_AUTH_JWKS_URL")
    try:
        return JwtVerifier(
            issuer=security.auth_issuer,
            audience=security.auth_audience or resource,
            algorithms=security.algorithms(),
            jwks_file=security.auth_jwks_file,
            jwks_url=security.auth_jwks_url,
            leeway_s=security.auth_leeway_s,
        )
    except ValueError as exc:
        raise SettingsError(f"GEOGATE_AUTH_JWKS_FILE: {exc}") from exc


def check_exposure(settings: Settings) -> None:
    """Refuse to serve a non-loopback address without authentication unless explicitly allowed.

    Raises:
        InsecureBind: with the settings that fix it.
    """
    security = settings.security
    if is_loopback(settings.host) or security.auth_enabled or security.allow_unauthenticated:
        return
    raise InsecureBind(
        f"refusing to serve {settings.host}:{settings.port} without authentication: set GEOGATE_AUTH_TOKENS_FILE "
        "or GEOGATE_AUTH_JWKS_FILE/_URL (with GEOGATE_AUTH_ISSUER), or GEOGATE_ALLOW_UNAUTHENTICATED=1 to accept it"
    )


def secure(app: Starlette, settings: Settings, runtime: Gateway, setup: AuthSetup | None) -> ASGIApp:
    """Guards on the protected routes, the protected-resource metadata, then Host/Origin and body-size checks."""
    policy = Policy(
        security=settings.security,
        auth=setup is not None,
        overrides=setup.static.limits if setup and setup.static else (lambda _: ClientLimits()),
        metadata_url=setup.metadata_url if setup else None,
        stale_s=settings.call_timeout_s + STALE_SLOT_MARGIN_S,
    )
    for route in app.router.routes:
        if isinstance(route, Route) and (kind := guarded_kind(route.path)) is not None:
            route.app = Guard(route.app, policy, runtime, kind)
        if isinstance(route, Route) and route.path.startswith(CROSS_ORIGIN):
            route.app = cross_origin(route.app)
    if setup is not None and setup.metadata_url is not None:
        _advertise_scopes(app, setup)
    security = settings.security
    limited = RequestBodyLimitMiddleware(app, security.max_request_bytes)
    return HostOriginCheck(limited, security.hosts(settings.host), security.origins(settings.host))


def cross_origin(app: ASGIApp) -> ASGIApp:
    """CORS for a map route: any origin that passed `HostOriginCheck` in front may read it, with a bearer token."""
    return CORSMiddleware(
        app, allow_origins=["*"], allow_methods=["GET"], allow_headers=["Authorization", HEADER], max_age=600
    )


def _advertise_scopes(app: Starlette, setup: AuthSetup) -> None:
    """The SDK's protected-resource metadata, with the scopes a client may ask for (`scopes_supported`)."""
    routes = create_protected_resource_routes(
        resource_url=AnyHttpUrl(setup.resource_url),
        authorization_servers=[setup.settings.issuer_url],
        scopes_supported=list(ALL_SCOPES),
        resource_name="Geogate",
    )
    paths = {r.path for r in routes}
    app.router.routes[:] = routes + [r for r in app.router.routes if getattr(r, "path", None) not in paths]
