"""OAuth resource-server mode: JWT access tokens verified against the authorization server's JWKS (PyJWT).

Signature (asymmetric algorithms only), expiry, issuer and audience are checked. The client id is the token's
`client_id` claim (RFC 9068), else `azp`, else `sub`; scopes come from `scope` (space-separated) or `scp`.
"""

import json
from pathlib import Path
from typing import Any

import anyio.to_thread
import jwt
from mcp.server.auth.provider import AccessToken, TokenVerifier

JWKS_CACHE_S = 300


class JwksError(ValueError):
    """The JWKS cannot be read."""


class JwtVerifier(TokenVerifier):
    """Verifies JWTs against keys from a JWKS file or URL."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        algorithms: list[str],
        jwks_file: Path | None = None,
        jwks_url: str | None = None,
        leeway_s: float = 30.0,
    ) -> None:
        self.issuer, self.audience, self.leeway_s = issuer, audience, leeway_s
        self.algorithms = [a for a in algorithms if not a.upper().startswith("HS") and a.lower() != "none"]
        self._keys = _read_jwks(jwks_file) if jwks_file is not None else None
        self._client = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=JWKS_CACHE_S) if jwks_url else None

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = await self._signing_key(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except (jwt.PyJWTError, JwksError, KeyError, ValueError):
            return None
        return _access_token(token, claims)

    async def _signing_key(self, token: str) -> jwt.PyJWK:
        kid = jwt.get_unverified_header(token).get("kid")
        if self._client is not None:
            return await anyio.to_thread.run_sync(self._client.get_signing_key_from_jwt, token)
        assert self._keys is not None
        if kid is None:
            if len(self._keys.keys) != 1:
                raise JwksError("the token names no key (kid) and the JWKS holds several")
            return self._keys.keys[0]
        return self._keys[kid]


def _read_jwks(path: Path) -> jwt.PyJWKSet:
    try:
        return jwt.PyJWKSet.from_json(path.read_text())
    except (OSError, json.JSONDecodeError, jwt.PyJWKSetError) as exc:
        raise JwksError(f"{path}: not a readable JWKS ({exc})") from exc


def _access_token(token: str, claims: dict[str, Any]) -> AccessToken | None:
    client_id = claims.get("client_id") or claims.get("azp") or claims.get("sub")
    if not isinstance(client_id, str) or not client_id:
        return None
    scope = claims.get("scope", claims.get("scp", []))
    scopes = scope.split() if isinstance(scope, str) else [str(s) for s in scope if isinstance(s, str)]
    audience = claims.get("aud")
    return AccessToken(
        token=token,
        client_id=client_id,
        scopes=scopes,
        expires_at=int(claims["exp"]),
        resource=audience if isinstance(audience, str) else None,
        subject=claims.get("sub") if isinstance(claims.get("sub"), str) else None,
        claims={"iss": claims.get("iss")},
    )
