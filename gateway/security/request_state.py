"""The key that seals MCP's multi-round-trip `requestState`, shared by every gateway on the same log.

The SDK seals `requestState` (AES-256-GCM) under a key of one process unless told otherwise, so a client's retry
that reaches another replica, or the same gateway after a restart, was refused as "Invalid or expired
requestState". The key is one of the deployment's: from `GEOGATE_REQUEST_STATE_KEYS_FILE` (one key a line, the
first seals and every one unseals, for rotation), or else a random key created once in Redis beside the log (whoever
can read that key can already rewrite the log, so it adds no one who can forge a state).
"""

import secrets
from pathlib import Path

import redis
from mcp.server.mcpserver import RequestStateSecurity

from geogate.eventlog.redaction import redact_text, register_secret
from geogate.eventlog.store import sync_client
from geogate.settings import Settings, SettingsError

MIN_KEY_CHARS = 32
"""The SDK derives the AES key from each secret with HKDF; it asks for at least 32 bytes of it."""


class RequestStateKeysError(ValueError):
    """The keys file cannot be used; the message names the file and the line."""


def request_state_security(settings: Settings) -> RequestStateSecurity:
    """The SDK policy sealing `requestState` under the deployment's shared keys.

    Raises:
        SettingsError: the keys file cannot be used, or Redis cannot be reached to read the shared key.
    """
    path = settings.security.request_state_keys_file
    try:
        keys = read_keys(path) if path is not None else [shared_key(settings)]
    except redis.RedisError as exc:
        said = f"Redis at {settings.redis_url} cannot be used, and a gateway needs it to start: {exc}"
        raise SettingsError(redact_text(said)) from None  # no password of the URL on the terminal
    except (RequestStateKeysError, OSError) as exc:
        raise SettingsError(f"requestState keys: {exc}") from None
    for key in keys:
        register_secret(key)
    return RequestStateSecurity(keys=keys)


def read_keys(path: Path) -> list[str]:
    """The keys of a keys file: one a line, `#` comments and blank lines skipped, the sealing key first.

    Raises:
        RequestStateKeysError: no key, or a key shorter than `MIN_KEY_CHARS`.
        OSError: the file cannot be read.
    """
    keys: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        key = line.split("#", 1)[0].strip()
        if not key:
            continue
        if len(key) < MIN_KEY_CHARS:
            raise RequestStateKeysError(f"{path} line {number}: a key needs at least {MIN_KEY_CHARS} characters")
        keys.append(key)
    if not keys:
        raise RequestStateKeysError(f"{path} holds no key")
    return keys


def shared_key(settings: Settings) -> str:
    """The deployment's key kept in Redis, created by the first gateway that asks (SET NX: every one gets the same)."""
    client = sync_client(settings.require_redis_url())
    try:
        name = settings.keys().request_state_secret()
        client.set(name, secrets.token_hex(32), nx=True)
        key = client.get(name)
    finally:
        client.close()
    if not key:
        raise RequestStateKeysError(f"Redis holds no {name}")
    return key.decode() if isinstance(key, bytes) else str(key)
