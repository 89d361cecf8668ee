"""Read tickets for the interactive map: what lets an MCP App's frame, which holds no bearer token, read the tiles
and layers of one `map_image` call when authentication is on.

A ticket names the client it was issued to, the workspace paths it may read (the call's layers) and when it
expires; it is signed (HMAC-SHA256) with a key every gateway on the log shares, created once in Redis (SET NX), as
the `requestState` key is. It is sent in the `X-Geogate-Map-Ticket` header, never in a URL, and admits only `GET
/tiles/…` and `GET /maps/layer` of its own paths: the `read` scope, narrowed to those files.
"""

import base64
import hashlib
import hmac
import json
import secrets
import time

import redis.asyncio as aredis

from geogate.calls.keys import Keys

HEADER = "x-geogate-map-ticket"
TTL_S = 8 * 3600
"""How long a ticket reads its map: a working day's conversation; the host shows the picture after that."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Tickets:
    """Issue and check tickets with the shared key (read from Redis once per instance)."""

    def __init__(self, client: aredis.Redis, keys: Keys) -> None:
        self.client, self.keys = client, keys
        self._key: bytes | None = None

    async def key(self) -> bytes:
        if self._key is None:
            name = self.keys.map_ticket_secret()
            await self.client.set(name, secrets.token_hex(32), nx=True)
            stored = await self.client.get(name)
            assert stored, f"Redis holds no {name}"
            self._key = stored if isinstance(stored, bytes) else str(stored).encode()
        return self._key

    async def issue(self, client_id: str, paths: list[str], now: float | None = None) -> str:
        """A ticket for `client_id` to read `paths` for `TTL_S` from `now`."""
        expires = int((time.time() if now is None else now) + TTL_S)
        body = json.dumps({"c": client_id, "p": sorted(set(paths)), "e": expires}, separators=(",", ":")).encode()
        return f"{_b64(body)}.{_b64(await self._sign(body))}"

    async def holder(self, ticket: str, path: str, now: float | None = None) -> str | None:
        """The client a valid, unexpired `ticket` naming `path` was issued to; None for any other ticket."""
        body_text, _, signature = ticket.partition(".")
        try:
            body, given = _unb64(body_text), _unb64(signature)
        except ValueError:
            return None
        if not hmac.compare_digest(given, await self._sign(body)):
            return None
        claims = json.loads(body)
        live = claims["e"] > (time.time() if now is None else now)
        return str(claims["c"]) if live and path in claims["p"] else None

    async def _sign(self, body: bytes) -> bytes:
        return hmac.new(await self.key(), body, hashlib.sha256).digest()
