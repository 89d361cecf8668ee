"""`GEOGATE_ADMIN_ACTORS` means something once clients are verified (issue 14)."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from gateway.identity import caller, is_admin
from geogate.settings import Settings


@contextmanager
def verified(client_id: str, *scopes: str) -> Iterator[None]:
    """What the SDK's AuthContextMiddleware sets for a request with a verified token."""
    reset = auth_context_var.set(AuthenticatedUser(AccessToken(token="t", client_id=client_id, scopes=list(scopes))))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


@pytest.mark.parametrize(
    ("listed", "client", "scopes", "admin"),
    [
        ("", "ops", ("admin",), True),
        ("", "ops", ("read",), False),
        ("ops", "ops", ("admin",), True),
        ("ops", "eve", ("admin",), False),  # the list narrows the scope to named clients
        ("eve", "eve", ("read",), False),  # being listed is not enough without the scope
    ],
)
def test_with_auth_admin_needs_the_scope_and_a_listed_id_when_there_is_a_list(
    listed: str, client: str, scopes: tuple[str, ...], admin: bool
) -> None:
    with verified(client, *scopes):
        assert caller() == client
        assert is_admin(Settings(redis_url="redis://unused", admin_actors=listed), client) is admin


def test_without_auth_only_the_listed_ids_are_admins() -> None:
    assert caller() == "anonymous"
    assert is_admin(Settings(redis_url="redis://unused", admin_actors="anonymous"), "anonymous")
    assert not is_admin(Settings(redis_url="redis://unused"), "anonymous")
