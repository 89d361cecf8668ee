"""Security settings (`GEOGATE_AUTH_*`, limits, allowed hosts and origins, sandbox strength), read with `Settings`."""

import ipaddress
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the gateway on this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class SecuritySettings(BaseSettings):
    """Who may call, how much, from which origins, and how strong the handler sandbox must be."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_", extra="ignore")

    auth_tokens_file: Path | None = None
    """Static bearer tokens: lines `client_id token scope[,scope…] [rate=N] [concurrency=N]`."""
    auth_jwks_file: Path | None = None
    """OAuth resource-server mode: the authorization server's JWKS (a JSON file)…"""
    auth_jwks_url: str | None = None
    """…or the URL it is served at (fetched and cached)."""
    auth_issuer: str | None = None
    """The `iss` every JWT must carry (and the authorization server named in the protected-resource metadata)."""
    auth_audience: str | None = None
    """The `aud` every JWT must carry; defaults to the resource URL."""
    auth_resource_url: str | None = None
    """This gateway's MCP endpoint as clients reach it (`https://geo.example.com/mcp`); default from host and port."""
    auth_algorithms: str = "RS256,RS384,RS512,PS256,PS384,PS512,ES256,ES384,ES512,EdDSA"
    auth_leeway_s: float = Field(default=30.0, ge=0)
    request_state_keys_file: Path | None = None
    """Keys sealing MCP's multi-round-trip `requestState`, one a line (the first seals, each unseals: rotation); by
    default one random key kept in Redis, shared by every gateway on the log."""
    allow_unauthenticated: bool = False
    """Serve a non-loopback address without authentication (the gateway refuses to start otherwise)."""
    rate_limit_per_minute: int = Field(default=0, ge=0)
    """Tool calls and resource reads per client per minute (0: no limit); per-client overrides in the tokens file."""
    max_concurrent_calls: int = Field(default=0, ge=0)
    """Calls in progress per client (0: no limit); per-client overrides in the tokens file."""
    max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    handler_max_script_bytes: int = Field(default=65536, ge=16)
    """Largest result-handler script (UTF-8 bytes) the gateway accepts."""
    allowed_hosts: str = ""
    """Comma-separated `Host` values (`geo.example.com`, `10.0.0.5:*`); loopback names when bound to loopback."""
    allowed_origins: str = ""
    """Comma-separated browser `Origin`s (`https://app.example.com`); loopback origins when bound to loopback."""
    sandbox_allow_weak: bool = False
    """Run Python handlers without bubblewrap or without seccomp (refused otherwise)."""

    @property
    def jwt_enabled(self) -> bool:
        return self.auth_jwks_file is not None or bool(self.auth_jwks_url)

    @property
    def auth_enabled(self) -> bool:
        return self.auth_tokens_file is not None or self.jwt_enabled

    def hosts(self, bind: str) -> list[str]:
        """Allowed `Host` headers; empty means any (a non-loopback bind with no list)."""
        if self.allowed_hosts.strip():
            return _csv(self.allowed_hosts)
        return ["127.0.0.1:*", "localhost:*", "[::1]:*"] if is_loopback(bind) else []

    def origins(self, bind: str) -> list[str]:
        """Allowed `Origin` headers (a request without one is not from a browser page and passes)."""
        if self.allowed_origins.strip():
            return _csv(self.allowed_origins)
        return ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] if is_loopback(bind) else []

    def algorithms(self) -> list[str]:
        return _csv(self.auth_algorithms)
