"""Static bearer tokens (`GEOGATE_AUTH_TOKENS_FILE`): parsing the file, and the SDK `TokenVerifier` over it.

One client a line: `client_id token scope[,scope…] [rate=N] [concurrency=N]`; `#` starts a comment. A token may be
written as `sha256:<hex>` (the digest of the token), so the file need not hold a secret.
"""

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken, TokenVerifier

from geogate.eventlog.redaction import register_secret
from schemas.scopes import ALL_SCOPES

DIGEST_PREFIX = "sha256:"
OVERRIDES = ("rate", "concurrency")


class TokensFileError(ValueError):
    """The tokens file cannot be used; the message names the line."""


@dataclass(frozen=True)
class ClientLimits:
    """Per-client overrides of the gateway's limits (None: the gateway's setting)."""

    rate_per_minute: int | None = None
    max_concurrent: int | None = None


@dataclass(frozen=True)
class StaticClient:
    """One line of the tokens file."""

    client_id: str
    digest: str
    scopes: tuple[str, ...]
    limits: ClientLimits


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_line(line: str, number: int) -> StaticClient | None:
    """One client from a line of the file, None for a blank or comment line.

    Raises:
        TokensFileError: too few fields, an unknown scope, a malformed digest or override.
    """
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    parts = text.split()
    if len(parts) < 3:
        raise TokensFileError(f"line {number}: expected `client_id token scope[,scope…]`, got {len(parts)} field(s)")
    client_id, token, scope_text, *extra = parts
    scopes = tuple(s for s in scope_text.split(",") if s)
    unknown = sorted(set(scopes) - set(ALL_SCOPES))
    if unknown:
        raise TokensFileError(f"line {number}: unknown scope(s) {unknown}; use {', '.join(ALL_SCOPES)}")
    return StaticClient(client_id, _digest(token, number), scopes, _limits(extra, number))


def _digest(token: str, number: int) -> str:
    if not token.startswith(DIGEST_PREFIX):
        register_secret(token)
        return digest_of(token)
    digest = token.removeprefix(DIGEST_PREFIX).lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise TokensFileError(f"line {number}: `sha256:` must be followed by 64 hex digits")
    return digest


def _limits(extra: list[str], number: int) -> ClientLimits:
    values: dict[str, int] = {}
    for item in extra:
        name, _, value = item.partition("=")
        if name not in OVERRIDES or not value.isdigit():
            raise TokensFileError(f"line {number}: {item!r} is not one of rate=N, concurrency=N")
        values[name] = int(value)
    return ClientLimits(values.get("rate"), values.get("concurrency"))


def load_tokens(path: Path) -> dict[str, StaticClient]:
    """Every client of the file, by token digest.

    Raises:
        TokensFileError: the file is missing or unreadable, a line is malformed, or two clients share a token.
    """
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise TokensFileError(f"{path}: {exc.strerror or exc}") from exc
    clients: dict[str, StaticClient] = {}
    for number, line in enumerate(lines, 1):
        client = parse_line(line, number)
        if client is None:
            continue
        if client.digest in clients and clients[client.digest].client_id != client.client_id:
            raise TokensFileError(f"line {number}: the token of {client.client_id!r} is already another client's")
        clients[client.digest] = client
    if not clients:
        raise TokensFileError(f"{path}: no clients")
    return clients


class StaticTokenVerifier(TokenVerifier):
    """Accepts the tokens of the file; the client id and scopes come from its line."""

    def __init__(self, clients: dict[str, StaticClient]) -> None:
        self.clients = clients

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = digest_of(token)
        client = self.clients.get(digest)
        if client is None or not hmac.compare_digest(client.digest, digest):
            return None
        return AccessToken(token=token, client_id=client.client_id, scopes=list(client.scopes))

    def limits(self, client_id: str) -> ClientLimits:
        """The overrides of `client_id` (its first line that has any)."""
        for client in self.clients.values():
            if client.client_id == client_id and client.limits != ClientLimits():
                return client.limits
        return ClientLimits()
