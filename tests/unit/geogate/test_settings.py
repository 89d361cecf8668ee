"""One settings tree (issue 33): every variable keeps its name, comma lists are parsed by pydantic, errors name the
variable, and a process reads its settings once."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from geogate import settings as settings_module
from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import LLMSettings, Settings, SettingsError, process_settings, read_settings
from geogate.state_dir import default_data_dir
from schemas.codec import encode
from schemas.events import ToolSucceeded
from schemas.ids import call_aggregate, new_id
from schemas.tools.llm import JUSTIFY_CHOICE
from tests.llm_server import ScriptedServer, scripted_server, text
from workers.run import runner
from workers.tools import load_all

VARIABLES: dict[str, tuple[str, str, Any]] = {
    "REDIS_URL": ("redis_url", "redis://a.example:6380/1", "redis://a.example:6380/1"),
    "GEOGATE_REDIS_URL": ("redis_url", "redis://b.example:6381/2", "redis://b.example:6381/2"),
    "GEOGATE_HOST": ("host", "0.0.0.0", "0.0.0.0"),
    "GEOGATE_PORT": ("port", "8123", 8123),
    "GEOGATE_WORKSPACES": ("workspaces", "/data/a:/data/b", "/data/a:/data/b"),
    "GEOGATE_PREFIX": ("prefix", "gg", "gg"),
    "GEOGATE_REDIS_MAX_CONNECTIONS": ("redis_max_connections", "16", 16),
    "GEOGATE_CALL_TIMEOUT_S": ("call_timeout_s", "12.5", 12.5),
    "GEOGATE_DEDUPE_TTL_S": ("dedupe_ttl_s", "3600", 3600),
    "GEOGATE_INLINE_RESULT_MAX_BYTES": ("inline_result_max_bytes", "1000", 1000),
    "GEOGATE_BLOB_TTL_S": ("blob_ttl_s", "60", 60),
    "GEOGATE_JOB_TIME_LIMIT_S": ("job_time_limit_s", "100", 100),
    "GEOGATE_VISIBILITY_TIMEOUT_S": ("visibility_timeout_s", "200", 200),
    "GEOGATE_HEARTBEAT_S": ("heartbeat_s", "1.5", 1.5),
    "GEOGATE_LEASE_TTL_S": ("lease_ttl_s", "9", 9.0),
    "GEOGATE_MAX_ATTEMPTS": ("max_attempts", "5", 5),
    "GEOGATE_JOB_MEMORY_MB": ("job_memory_mb", "2048", 2048),
    "GEOGATE_WORKER_USER": ("worker_user", "geo", "geo"),
    "GEOGATE_TILE_MIN_PIXELS": ("tile_min_pixels", "65536", 65536),
    "GEOGATE_TILE_POLYGONIZE_MIN_PIXELS": ("tile_polygonize_min_pixels", "65536", 65536),
    "GEOGATE_VECTOR_PARTITION_FEATURES": ("vector_partition_features", "5000", 5000),
    "GEOGATE_TILE_SIZE": ("tile_size", "512", 512),
    "GEOGATE_REMOTE_HOSTS": ("remote_hosts", "a.example, b.example:8443", ["a.example", "b.example:8443"]),
    "GEOGATE_REMOTE_TIMEOUT_S": ("remote_timeout_s", "12", 12),
    "GEOGATE_REMOTE_MAX_RETRY": ("remote_max_retry", "4", 4),
    "GEOGATE_REDIS_APPENDFSYNC": ("redis_appendfsync", "always", "always"),
    "GEOGATE_DATA_DIR": ("data_dir", "/var/geogate", Path("/var/geogate")),
    "GEOGATE_LOG_LEVEL": ("log_level", "DEBUG", "DEBUG"),
    "GEOGATE_JUSTIFICATION_TTL_S": ("justification_ttl_s", '{"crs_datum": 60}', {"crs_datum": 60.0}),
    "GEOGATE_JUSTIFICATION_DEFAULT_TTL_S": ("justification_default_ttl_s", "120", 120.0),
    "GEOGATE_PREFLIGHT_SERVER_LLM": ("preflight_server_llm", "1", True),
    "GEOGATE_ADMIN_ACTORS": ("admin_actors", "alice, bob", ["alice", "bob"]),
    "GEOGATE_WORKFLOWS_DIR": ("workflows_dir", "/etc/flows", Path("/etc/flows")),
    "GEOGATE_WORKFLOW_TTL_S": ("workflow_ttl_s", "30", 30.0),
    "GEOGATE_TASK_AFTER_S": ("task_after_s", "1", 1.0),
    "GEOGATE_TASK_POLL_INTERVAL_MS": ("task_poll_interval_ms", "250", 250),
    "GEOGATE_FAULT_PAUSE_AT": ("fault_pause_at", "fan_in.publish", "fan_in.publish"),
    "GEOGATE_TASK_TTL_S": ("task_ttl_s", "600", 600),
    "GEOGATE_EXTRA_TOOLS": ("extra_tools", "some.module", "some.module"),
    "GEOGATE_TOOLSETS": ("toolsets", "raster, workflows", ["raster", "workflows"]),
    "GEOGATE_RETENTION_MAX_AGE_S": ("retention.max_age_s", "3600", 3600),
    "GEOGATE_RETENTION_MAXLEN": ("retention.maxlen", "1000", 1000),
    "GEOGATE_RETENTION_FINISHED_TTL_S": ("retention.finished_ttl_s", str(8 * 86400), 8 * 86400),
    "GEOGATE_RETENTION_INTERVAL_S": ("retention.interval_s", "5", 5.0),
    "GEOGATE_RETENTION_CONSUMER_STALE_S": ("retention.consumer_stale_s", "50", 50.0),
    "GEOGATE_AUTH_TOKENS_FILE": ("security.auth_tokens_file", "/etc/tokens", Path("/etc/tokens")),
    "GEOGATE_AUTH_JWKS_FILE": ("security.auth_jwks_file", "/etc/jwks.json", Path("/etc/jwks.json")),
    "GEOGATE_AUTH_JWKS_URL": ("security.auth_jwks_url", "https://id.example/jwks", "https://id.example/jwks"),
    "GEOGATE_AUTH_ISSUER": ("security.auth_issuer", "https://id.example", "https://id.example"),
    "GEOGATE_AUTH_AUDIENCE": ("security.auth_audience", "geogate", "geogate"),
    "GEOGATE_AUTH_RESOURCE_URL": ("security.auth_resource_url", "https://g.example/mcp", "https://g.example/mcp"),
    "GEOGATE_AUTH_ALGORITHMS": ("security.auth_algorithms", "RS256,ES256", ["RS256", "ES256"]),
    "GEOGATE_AUTH_LEEWAY_S": ("security.auth_leeway_s", "5", 5.0),
    "GEOGATE_REQUEST_STATE_KEYS_FILE": ("security.request_state_keys_file", "/etc/keys", Path("/etc/keys")),
    "GEOGATE_ALLOW_UNAUTHENTICATED": ("security.allow_unauthenticated", "true", True),
    "GEOGATE_RATE_LIMIT_PER_MINUTE": ("security.rate_limit_per_minute", "60", 60),
    "GEOGATE_MAX_CONCURRENT_CALLS": ("security.max_concurrent_calls", "4", 4),
    "GEOGATE_MAX_REQUEST_BYTES": ("security.max_request_bytes", "2048", 2048),
    "GEOGATE_HANDLER_MAX_SCRIPT_BYTES": ("security.handler_max_script_bytes", "100", 100),
    "GEOGATE_ALLOWED_HOSTS": ("security.allowed_hosts", "geo.example, 10.0.0.5:*", ["geo.example", "10.0.0.5:*"]),
    "GEOGATE_ALLOWED_ORIGINS": ("security.allowed_origins", "https://app.example", ["https://app.example"]),
    "GEOGATE_SANDBOX_ALLOW_WEAK": ("security.sandbox_allow_weak", "yes", True),
    "GEOGATE_SANDBOX_PYTHON": ("security.sandbox_python", "/usr/bin/python3", Path("/usr/bin/python3")),
    "GEOGATE_LLM_PROVIDER": ("llm.provider", "anthropic", "anthropic"),
    "GEOGATE_LLM_BASE_URL": ("llm.base_url", "https://api.example/v1", "https://api.example/v1"),
    "GEOGATE_LLM_API_KEY": ("llm.api_key", "sk-test-issue33", SecretStr("sk-test-issue33")),
    "GEOGATE_LLM_MODEL": ("llm.model", "gpt-4o-mini", "gpt-4o-mini"),
    "GEOGATE_LLM_NATIVE_TOOLS": ("llm.native_tools", "false", False),
    "GEOGATE_LLM_TEMPLATE": ("llm.template", "hermes", "hermes"),
    "GEOGATE_LLM_PROMPT_FORMAT": ("llm.prompt_format", "native", "native"),
    "GEOGATE_LLM_TIMEOUT_S": ("llm.timeout_s", "30", 30.0),
    "GEOGATE_LLM_BACKOFF_RETRIES": ("llm.backoff_retries", "1", 1),
    "GEOGATE_LLM_RATE_LIMIT_PER_MINUTE": ("llm.rate_limit_per_minute", "5", 5),
    "GEOGATE_LLM_BLOCKED_TOOLS": ("llm.blocked_tools", " *_delete, raster_convert ,", ["*_delete", "raster_convert"]),
    "GEOGATE_LLM_MAX_ATTEMPTS": ("llm.max_attempts", "2", 2),
    "GEOGATE_LLM_MAX_TURNS": ("llm.max_turns", "2", 2),
    "GEOGATE_LLM_MAX_TOOL_CALLS": ("llm.max_tool_calls", "3", 3),
    "GEOGATE_LLM_MAX_TOTAL_TOKENS": ("llm.max_total_tokens", "1000", 1000),
    "GEOGATE_LLM_TOOL_TIMEOUT_S": ("llm.tool_timeout_s", "9", 9.0),
    "GEOGATE_LIMIT_TILES": ("limits.tiles", "64", 64),
    "GEOGATE_LIMIT_OUTPUT_BYTES": ("limits.output_bytes", "1073741824", 1 << 30),
    "GEOGATE_LIMIT_FEATURES": ("limits.features", "1000", 1000),
    "GEOGATE_LIMIT_ZONES": ("limits.zones", "50", 50),
    "GEOGATE_LIMIT_RESULT_BYTES": ("limits.result_bytes", "1048576", 1 << 20),
    "GEOGATE_LIMIT_STAC_ITEMS": ("limits.stac_items", "50", 50),
    "GEOGATE_STAC_CATALOGS": ("stac.catalogs", "stac.example, 127.0.0.1:8081", ["stac.example", "127.0.0.1:8081"]),
    "GEOGATE_STAC_TIMEOUT_S": ("stac.timeout_s", "5", 5.0),
    "GEOGATE_STAC_RETRIES": ("stac.retries", "1", 1),
    "GEOGATE_STAC_BACKOFF_S": ("stac.backoff_s", "0.1", 0.1),
}
"""Every variable the four settings classes read before they became one tree (`GEOGATE_CONFORMANCE` aside: the
conformance fixtures left the product, issue 33), with the field it sets, a value and what the field then holds."""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("GEOGATE_") or name == "REDIS_URL":
            monkeypatch.delenv(name)
    return monkeypatch


def at(settings: Settings, path: str) -> Any:
    value: Any = settings
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("variable", sorted(VARIABLES))
def test_each_variable_still_sets_its_field(clean_env: pytest.MonkeyPatch, variable: str) -> None:
    path, given, expected = VARIABLES[variable]
    before = at(read_settings(), path)

    clean_env.setenv(variable, given)
    after = at(read_settings(), path)

    assert after == expected and after != before


def test_the_table_covers_every_field_of_the_tree() -> None:
    """A field added later gets a row here, so its variable's name is pinned too."""
    sections = {"retention", "security", "llm", "limits", "stac"}
    fields = {name for name in Settings.model_fields if name not in sections}
    for section in sections:
        fields |= {f"{section}.{name}" for name in type(at(Settings(), section)).model_fields}
    assert fields == {path for path, _, _ in VARIABLES.values()}


def test_a_comma_list_may_also_be_given_as_a_list() -> None:
    assert Settings(admin_actors=["alice"]).is_admin("alice")
    assert LLMSettings(blocked_tools="a,,b").blocked_tools == ["a", "b"]


@pytest.mark.parametrize(
    ("variable", "value"),
    [("GEOGATE_TILE_SIZE", "100"), ("GEOGATE_RETENTION_INTERVAL_S", "often"), ("GEOGATE_LLM_MAX_TURNS", "0")],
)
def test_a_bad_value_is_a_settings_error_naming_its_variable(
    clean_env: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    clean_env.setenv(variable, value)

    with pytest.raises(SettingsError) as bad:
        read_settings()

    assert f"{variable}: " in str(bad.value) and repr(value) in str(bad.value)


def test_a_missing_redis_url_is_a_settings_error_not_an_exit() -> None:
    with pytest.raises(SettingsError):
        Settings(redis_url=None).require_redis_url()


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["geogate.cli", "status", "--json"], "GEOGATE_TILE_SIZE: "),
        (["gateway", "--port", "1"], "GEOGATE_TILE_SIZE: "),
        (["workers", "--queues", "gdal"], "GEOGATE_TILE_SIZE: "),
        (["workers.llm", "stats"], "REDIS_URL (or GEOGATE_REDIS_URL) is not set"),
    ],
)
def test_an_entry_point_turns_a_settings_error_into_its_message_and_status_1(
    tmp_path: Path, command: list[str], said: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEOGATE_") and k != "REDIS_URL"}
    if said.startswith("GEOGATE_TILE_SIZE"):
        env["GEOGATE_TILE_SIZE"] = "100"
    done = subprocess.run([sys.executable, "-m", *command], env=env, cwd=tmp_path, capture_output=True, text=True)

    assert done.returncode == 1
    assert said in done.stderr and "Traceback" not in done.stderr


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How many times each class of the tree read the environment (its `__init__` ran)."""
    counts = {"Settings": 0, "LLMSettings": 0}
    for cls in (Settings, LLMSettings):
        original = cls.__init__

        def counting(self: Any, *args: Any, __original: Any = original, __name: str = cls.__name__, **kw: Any) -> None:
            counts[__name] += 1
            __original(self, *args, **kw)

        monkeypatch.setattr(cls, "__init__", counting)
    process_settings.cache_clear()
    yield counts
    process_settings.cache_clear()


GOOD = {
    "intent": "equal-area statistics over Europe",
    "alternatives": [{"method": "EPSG:3857", "why_not": "distorts areas"}],
    "choice": {"method": "EPSG:3035", "rationale": "LAEA Europe", "tradeoffs": "shapes bend at the edges"},
    "confidence": "high",
}


@pytest.fixture(scope="module")
def llm_server() -> Iterator[ScriptedServer]:
    with scripted_server() as server:
        yield server


def justify(store: EventStore, settings: Settings) -> str:
    args = {"domain": "crs_datum", "prompt": "justify_crs_selection", "prompt_args": {"dst_crs": "EPSG:3035"}}
    call_id = new_id()
    event = request_event(JUSTIFY_CHOICE, args, call_id=call_id, actor="tester")
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, settings, "host:1", encode(event))
    return call_id


def test_a_process_reads_its_settings_once_however_many_llm_jobs_it_runs(
    counted: dict[str, int], clean_env: pytest.MonkeyPatch, llm_server: ScriptedServer, fake_store: EventStore
) -> None:
    """Before the tree, every `ask` and `justify_choice` job built `LLMSettings()` from the environment again."""
    clean_env.setenv("GEOGATE_LLM_BASE_URL", llm_server.base_url)
    clean_env.setenv("GEOGATE_REDIS_URL", "redis://unused")
    load_all()
    llm_server.script.load([text(json.dumps(GOOD)), text(json.dumps(GOOD))])

    settings = process_settings()
    calls = [justify(fake_store, settings), justify(fake_store, process_settings())]

    for call_id in calls:
        outcome = fake_store.read_aggregate(call_aggregate(call_id))[-1]
        assert outcome.payload(ToolSucceeded).result["justification"] == GOOD
    assert counted == {"Settings": 1, "LLMSettings": 1}
    assert settings_module.process_settings() is settings


def test_defaults_read_no_variable(clean_env: pytest.MonkeyPatch) -> None:
    """What jobs built without settings fall back on (`workers.jobkit.context`): the fields' own defaults."""
    clean_env.setenv("GEOGATE_LLM_MODEL", "from-the-environment")
    clean_env.setenv("GEOGATE_RETENTION_INTERVAL_S", "1")

    defaults = Settings.defaults()

    assert defaults.llm.model == LLMSettings.model_fields["model"].default
    assert defaults.retention.interval_s == 60.0 and read_settings().retention.interval_s == 1.0


def test_the_default_data_dir_lies_outside_the_default_workspace_one_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`geogate dev` state (Redis AOF, run.json, logs) is not under `.`, the default workspace, and two project
    folders do not share it."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")

    here = Settings()

    assert here.data_dir.is_relative_to(tmp_path / "state" / "geogate")
    assert not any(here.data_dir.is_relative_to(root) for root in here.workspace_roots())
    assert default_data_dir(tmp_path / "b") != here.data_dir
