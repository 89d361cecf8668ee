"""OAuth resource-server mode: JWTs checked for signature, expiry, issuer and audience against a JWKS (issue 14)."""

import json
import time
from pathlib import Path

import pytest

from gateway.security.jwt_verifier import JwtVerifier
from tests.jwt_support import ISSUER, Signer

pytestmark = pytest.mark.anyio
AUDIENCE = "http://127.0.0.1:8000/mcp"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def signer() -> Signer:
    return Signer()


@pytest.fixture
def verifier(signer: Signer, tmp_path: Path) -> JwtVerifier:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(signer.jwks))
    return JwtVerifier(issuer=ISSUER, audience=AUDIENCE, algorithms=["ES256", "RS256", "HS256"], jwks_file=jwks)


async def test_a_valid_token_gives_the_client_id_and_scopes(signer: Signer, verifier: JwtVerifier) -> None:
    found = await verifier.verify_token(signer.token(AUDIENCE, client_id="agent-7", scope="read llm"))

    assert found is not None and (found.client_id, found.scopes) == ("agent-7", ["read", "llm"])
    assert found.subject == "user-1" and found.resource == AUDIENCE


async def test_azp_or_sub_stand_in_for_a_missing_client_id(signer: Signer, verifier: JwtVerifier) -> None:
    azp = await verifier.verify_token(signer.token(AUDIENCE, client_id="", azp="cli-azp", scp=["write"]))

    assert azp is not None and azp.client_id == "cli-azp"


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": int(time.time()) - 3600},
        {"iss": "https://someone-else.test"},
        {"aud": "http://other-resource/mcp"},
    ],
    ids=["expired", "wrong-issuer", "wrong-audience"],
)
async def test_expired_foreign_or_misaddressed_tokens_are_refused(
    signer: Signer, verifier: JwtVerifier, claims: dict
) -> None:
    assert await verifier.verify_token(signer.token(AUDIENCE, **claims)) is None


async def test_a_token_signed_by_another_key_or_with_hs256_is_refused(verifier: JwtVerifier, signer: Signer) -> None:
    import jwt

    stranger = Signer().token(AUDIENCE)  # same kid, another key
    symmetric = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": time.time() + 60, "sub": "x"}, "k" * 32, "HS256")

    assert await verifier.verify_token(stranger) is None
    assert await verifier.verify_token(symmetric) is None
    assert await verifier.verify_token("not.a.jwt") is None
