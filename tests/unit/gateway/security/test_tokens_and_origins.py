"""The tokens file, the static verifier and the Host/Origin matcher (issue 14)."""

import hashlib
from pathlib import Path

import pytest

from gateway.security.origin import matches
from gateway.security.tokens import ClientLimits, StaticTokenVerifier, TokensFileError, load_tokens

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text)
    return path


async def test_plain_and_digest_tokens_verify_to_their_client_and_scopes(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"second-token").hexdigest()
    path = _file(tmp_path, f"# comment\nalice first-token read,write rate=5\n\nbob sha256:{digest} llm concurrency=2\n")
    verifier = StaticTokenVerifier(load_tokens(path))

    alice, bob = await verifier.verify_token("first-token"), await verifier.verify_token("second-token")

    assert (alice.client_id, alice.scopes) == ("alice", ["read", "write"])
    assert (bob.client_id, bob.scopes) == ("bob", ["llm"])
    assert await verifier.verify_token("third-token") is None
    assert verifier.limits("alice") == ClientLimits(rate_per_minute=5)
    assert verifier.limits("bob") == ClientLimits(max_concurrent=2)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("alice token\n", "line 1"),
        ("alice token read,delete\n", "unknown scope"),
        ("alice sha256:abc read\n", "64 hex"),
        ("alice token read burst=3\n", "rate=N"),
        ("alice same read\nbob same read\n", "already another client's"),
        ("# nobody\n", "no clients"),
    ],
)
def test_a_bad_tokens_file_is_refused_naming_the_line(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(TokensFileError) as refused:
        load_tokens(_file(tmp_path, text))

    assert says in str(refused.value)


@pytest.mark.parametrize(
    ("value", "allowed", "ok"),
    [
        ("127.0.0.1:8000", ["127.0.0.1:*"], True),
        ("localhost", ["localhost:*"], True),
        ("localhost.evil.com:80", ["localhost:*"], False),
        ("http://localhost:5173", ["http://localhost:*"], True),
        ("http://localhost:5173.evil.com", ["http://localhost:*"], False),
        ("https://app.example.com", ["https://app.example.com"], True),
        ("null", ["http://localhost:*"], False),
    ],
)
def test_hosts_and_origins_match_exactly_or_by_port_wildcard(value: str, allowed: list[str], ok: bool) -> None:
    assert matches(value, allowed) is ok


def test_the_shipped_example_tokens_file_is_valid() -> None:
    example = Path(__file__).resolve().parents[4] / "deploy" / "tokens.example"

    clients = load_tokens(example)

    assert {c.client_id for c in clients.values()} == {"analyst", "ops"}
