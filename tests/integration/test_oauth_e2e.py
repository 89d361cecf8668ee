"""OAuth resource-server mode over real HTTP: JWTs against a JWKS URL, protected-resource metadata, the SDK client
with a bearer token, and the token's client id as the actor of every event (issue 14)."""

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import Stack, start_gateway, stop
from tests.jwt_support import ISSUER, Signer, jwks_server
from tests.mcp_http import call_tool
from tests.support import free_port

pytestmark = pytest.mark.integration


@dataclass
class OAuthGateway:
    url: str
    base: str
    signer: Signer
    stack: Stack


@pytest.fixture(scope="module")
def oauth(stack: Stack) -> Iterator[OAuthGateway]:
    signer = Signer()
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with jwks_server(signer) as jwks_url:
        env = {
            **stack.env,
            "GEOGATE_AUTH_JWKS_URL": jwks_url,
            "GEOGATE_AUTH_ISSUER": ISSUER,
            "GEOGATE_AUTH_RESOURCE_URL": url,
        }
        gateway = start_gateway(env, port)
        try:
            yield OAuthGateway(url, f"http://127.0.0.1:{port}", signer, stack)
        finally:
            stop(gateway)


def test_protected_resource_metadata_names_the_issuer_and_the_scopes(oauth: OAuthGateway) -> None:
    metadata = httpx.get(f"{oauth.base}/.well-known/oauth-protected-resource/mcp").json()

    assert metadata["resource"] == oauth.url
    assert [a.rstrip("/") for a in metadata["authorization_servers"]] == [ISSUER]
    assert metadata["scopes_supported"] == ["read", "write", "llm", "admin"]


def test_a_missing_or_expired_token_gets_401_pointing_at_the_metadata(oauth: OAuthGateway) -> None:
    expired = oauth.signer.token(oauth.url, exp=int(time.time()) - 600)
    foreign = oauth.signer.token("http://elsewhere/mcp")
    with httpx.Client(timeout=30) as http:
        replies = [call_tool(http, oauth.url, "ping", {}, token=t) for t in (None, expired, foreign)]

    for reply in replies:
        assert reply.status == 401
        assert 'resource_metadata="' in reply.headers["www-authenticate"]
        assert "/.well-known/oauth-protected-resource/mcp" in reply.headers["www-authenticate"]


def test_a_read_token_cannot_write(oauth: OAuthGateway) -> None:
    token = oauth.signer.token(oauth.url, scope="read")
    args = {"uri": "points.gpkg", "output": "buffered.gpkg", "distance": 1}
    with httpx.Client(timeout=30) as http:
        reply = call_tool(http, oauth.url, "vector_buffer", args, token=token)

    assert reply.status == 403 and 'scope="write"' in reply.headers["www-authenticate"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_calls_with_a_jwt_and_the_client_id_is_the_actor(oauth: OAuthGateway, mode: str) -> None:
    token = oauth.signer.token(oauth.url, client_id="agent-7", scope="read")
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(oauth.url, http_client=http), mode=mode) as client,
    ):
        result = await client.call_tool("raster_info", {"uri": "dem.tif"})

    assert not result.is_error and result.structured_content["width"] == 64
    call_id = result.meta["io.geogate/call"]["call_id"]
    assert {e.actor for e in oauth.stack.store().read_aggregate(f"call:{call_id}")} == {"agent-7"}
