"""The requestState keys file: one key a line, the first seals, every one unseals; errors name the file and line."""

from pathlib import Path

import pytest
from mcp.server.request_state import InvalidRequestState

from gateway.security.request_state import (
    MIN_KEY_CHARS,
    RequestStateKeysError,
    read_keys,
    request_state_security,
    shared_key,
)
from geogate.cli import dev
from geogate.eventlog import store
from geogate.eventlog.redaction import MASK
from geogate.settings import Settings, SettingsError
from tests.support import free_port

NEW, OLD = "n" * 40, "o" * 40


def settings_with(path: Path) -> Settings:
    settings = Settings(redis_url="redis://unused")
    settings.security.request_state_keys_file = path
    return settings


def test_keys_are_read_in_order_skipping_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# rotation: the new key seals\n{NEW}\n\n{OLD}  # until one TTL has passed\n")

    assert read_keys(path) == [NEW, OLD]


@pytest.mark.parametrize(
    ("text", "says"),
    [("# nothing yet\n\n", "holds no key"), (f"{NEW}\nshort\n", "line 2: a key needs at least 32 characters")],
)
def test_an_unusable_keys_file_is_refused_naming_it(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "keys"
    path.write_text(text)

    with pytest.raises(RequestStateKeysError, match=says):
        read_keys(path)
    with pytest.raises(SettingsError, match=f"requestState keys: {path}"):
        request_state_security(settings_with(path))


def test_a_missing_keys_file_stops_the_gateway_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="absent"):
        request_state_security(settings_with(tmp_path / "absent"))


def test_a_state_sealed_by_one_gateway_opens_on_another_with_the_same_keys_and_not_with_others(
    tmp_path: Path,
) -> None:
    rotated, stranger = tmp_path / "rotated", tmp_path / "stranger"
    rotated.write_text(f"{NEW}\n{OLD}\n")
    stranger.write_text("s" * 40)
    old_only = tmp_path / "old"
    old_only.write_text(OLD)

    sealed = request_state_security(settings_with(old_only)).codec.seal(b"call c1")

    assert request_state_security(settings_with(rotated)).codec.unseal(sealed) == b"call c1"
    with pytest.raises(InvalidRequestState):
        request_state_security(settings_with(stranger)).codec.unseal(sealed)


def test_without_a_keys_file_every_gateway_on_the_log_gets_the_one_key_the_first_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)  # fakeredis' TCP server, as `geogate dev` falls back
    url = dev.start_redis(Settings(data_dir=tmp_path), dev.Children())
    first, second = Settings(redis_url=url), Settings(redis_url=url)

    key = shared_key(first)

    assert len(key) >= MIN_KEY_CHARS and shared_key(second) == key
    assert shared_key(Settings(redis_url=url, prefix="other")) != key  # another deployment on the same Redis
    sealed = request_state_security(first).codec.seal(b"call c1")
    assert request_state_security(second).codec.unseal(sealed) == b"call c1"


def test_a_gateway_whose_redis_is_down_stops_with_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "RECONNECT_RETRIES", 0)  # a gateway rides out a Redis restart first (~20 s)
    where = f"127.0.0.1:{free_port()}/0"  # nothing listens there

    with pytest.raises(SettingsError, match="cannot be used, and a gateway needs it to start: ") as stopped:
        request_state_security(Settings(redis_url=f"redis://geo:hunter2hunter2@{where}"))
    said = str(stopped.value)
    assert said.startswith(f"Redis at redis://geo:{MASK}@{where} ") and "hunter2" not in said
