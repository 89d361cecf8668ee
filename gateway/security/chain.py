"""Static tokens and JWTs side by side: the first verifier that accepts a token wins."""

from collections.abc import Sequence

from mcp.server.auth.provider import AccessToken, TokenVerifier


class ChainVerifier(TokenVerifier):
    def __init__(self, verifiers: Sequence[TokenVerifier]) -> None:
        self.verifiers = list(verifiers)

    async def verify_token(self, token: str) -> AccessToken | None:
        for verifier in self.verifiers:
            if (found := await verifier.verify_token(token)) is not None:
                return found
        return None
