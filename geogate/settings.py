"""Every setting of Geogate in one tree: `Settings` and its sections, from `GEOGATE_*` variables.

Read once per process, at its entry point (`process_settings()`: `geogate …`, `python -m workers`), and passed down:
`build_server(settings)`, `EventStore.from_settings(settings)`, a job's `ctx.settings`. Tests build
`Settings(redis_url=…)` directly. Each section reads its own variables (`env_prefix`): `GEOGATE_RETENTION_*`,
`GEOGATE_AUTH_*` etc. (`security`), `GEOGATE_LLM_*`, `GEOGATE_LIMIT_*`, `GEOGATE_STAC_*`; the rest on `Settings`.

SettingsError
└── raised by `read_settings` and `require_redis_url`; the CLI turns it into a message and exit status 1
"""

import functools
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from geogate.eventlog.redaction import register_secret
from geogate.state_dir import default_data_dir

if TYPE_CHECKING:
    from geogate.calls.keys import Keys


class SettingsError(ValueError):
    """A setting is missing or unusable; the message names its variable (`GEOGATE_TILE_SIZE: …`)."""


def _comma_separated(value: object) -> object:
    """`a, b,,c` → `["a", "b", "c"]` (the one parser of comma lists); a list passes through."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_separated)]
"""A list given as one comma-separated variable (`GEOGATE_ALLOWED_HOSTS=a.example,b.example`), not as JSON."""

DEFAULT_TOOLSETS = ("core", "raster", "vector", "analysis", "previews", "preflight", "llm", "maps", "provenance")
"""What a GIS agent needs; workflows and admin are one setting away (`GEOGATE_TOOLSETS`)."""

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
JWT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the gateway on this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class RetentionPolicy(BaseSettings):
    """How much of the log to keep. Trimming never passes a registered consumer's checkpoint."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_RETENTION_", extra="ignore")

    max_age_s: int | None = None
    """Drop events older than this (exact `XTRIM MINID`). None keeps everything."""
    maxlen: int | None = None
    """Keep the newest this many events per stream (exact: `XTRIM MINID`, never past a live consumer's checkpoint).
    None keeps everything."""
    finished_ttl_s: int | None = 7 * 86400
    """How long a finished call's status, result reference and event index stay readable (`calls://…`, a retry's
    answer). None keeps them for ever. Must cover `GEOGATE_DEDUPE_TTL_S`, the window in which a retry attaches."""
    interval_s: float = 60.0
    """How often a worker node's reaper applies this policy (trim, after a snapshot) by itself."""
    consumer_stale_s: float = 300.0
    """A log consumer (a gateway's outcome reader) silent for this long no longer holds trimming back."""


class SecuritySettings(BaseSettings):
    """Who may call, how much, from which origins, and how strong the handler sandbox must be."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_", extra="ignore")

    auth_tokens_file: Path | None = None
    """Static bearer tokens: lines `client_id token scope[,scope…] [rate=N] [concurrency=N]`."""
    auth_jwks_file: Path | None = None
    """OAuth resource-server mode: the authorization server's JWKS (a JSON file)…"""
    auth_jwks_url: str | None = None
    """…or the URL it is served at (fetched and cached)."""
    auth_issuer: str | None = None
    """The `iss` every JWT must carry (and the authorization server named in the protected-resource metadata)."""
    auth_audience: str | None = None
    """The `aud` every JWT must carry; defaults to the resource URL."""
    auth_resource_url: str | None = None
    """This gateway's MCP endpoint as clients reach it (`https://geo.example.com/mcp`); default from host and port."""
    auth_algorithms: CommaList = Field(default_factory=lambda: list(JWT_ALGORITHMS))
    auth_leeway_s: float = Field(default=30.0, ge=0)
    request_state_keys_file: Path | None = None
    """Keys sealing MCP's `requestState`, one a line (the first seals, each unseals); default: one kept in Redis."""
    allow_unauthenticated: bool = False
    """Serve a non-loopback address without authentication (the gateway refuses to start otherwise)."""
    rate_limit_per_minute: int = Field(default=0, ge=0)
    """Tool calls and resource reads per client per minute (0: no limit); per-client overrides in the tokens file."""
    max_concurrent_calls: int = Field(default=0, ge=0)
    """Calls in progress per client (0: no limit); per-client overrides in the tokens file."""
    max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    handler_max_script_bytes: int = Field(default=65536, ge=16)
    """Largest result-handler script (UTF-8 bytes) the gateway accepts."""
    allowed_hosts: CommaList = Field(default_factory=list)
    """Comma-separated `Host` values (`geo.example.com`, `10.0.0.5:*`); loopback names when bound to loopback."""
    allowed_origins: CommaList = Field(default_factory=list)
    """Comma-separated browser `Origin`s (`https://app.example.com`); loopback origins when bound to loopback."""
    sandbox_allow_weak: bool = False
    """Run Python handlers without bubblewrap or without seccomp (refused otherwise)."""
    sandbox_python: Path | None = None
    """The sandbox's Python (whole standard library, checked at start); default: the worker's own if under /usr,
    else /usr/bin/python3."""

    @property
    def jwt_enabled(self) -> bool:
        return self.auth_jwks_file is not None or bool(self.auth_jwks_url)

    @property
    def auth_enabled(self) -> bool:
        return self.auth_tokens_file is not None or self.jwt_enabled

    def hosts(self, bind: str) -> list[str]:
        """Allowed `Host` headers; empty means any (a non-loopback bind with no list)."""
        if self.allowed_hosts:
            return list(self.allowed_hosts)
        return ["127.0.0.1:*", "localhost:*", "[::1]:*"] if is_loopback(bind) else []

    def origins(self, bind: str) -> list[str]:
        """Allowed `Origin` headers (a request without one is not from a browser page and passes)."""
        if self.allowed_origins:
            return list(self.allowed_origins)
        return ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] if is_loopback(bind) else []

    def algorithms(self) -> list[str]:
        return list(self.auth_algorithms)


class LimitSettings(BaseSettings):
    """Bounds on one tool call (`GEOGATE_LIMIT_*`): refused before work where metadata tells, else stopped when
    passed, nothing written; the error names the argument and the variable. Descriptions state the bounds."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_LIMIT_", extra="ignore")

    tiles: int = Field(default=1024, ge=1)
    """Windows of `GEOGATE_TILE_SIZE` in one call's grid, tiled or whole (a tile: ~3 events and a queue message)."""
    output_bytes: int = Field(default=2 << 30, ge=1 << 20)
    """Bytes of the raster one call writes (uncompressed), whole or by tiles; for `raster_stats`, of the bands it
    reads. 2 GiB: polygonize and contours hold a whole band, which must fit a laptop beside everything else."""
    features: int = Field(default=200_000, ge=1)
    """Polygons (`raster_polygonize`) or lines (`raster_contours`) one call makes; counted as they are traced, all
    held in memory until written; and each input and output layer of the vector analysis tools (`vector_join` …)."""
    zones: int = Field(default=10_000, ge=1)
    """Zones (features of `zones`) one `zonal_stats` call measures; they run on one worker, one after another."""
    result_bytes: int = Field(default=16 << 20, ge=64 * 1024)
    """Bytes of one call's structured result (its JSON); larger results go to the blob store, never in an event."""
    stac_items: int = Field(default=500, ge=1)
    """Items one `stac_search` call returns, over all the pages it reads."""


class StacSettings(BaseSettings):
    """STAC API catalogs `stac_search` may query (`GEOGATE_STAC_*`), and how it retries transient failures."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_STAC_", extra="ignore")

    catalogs: CommaList = Field(default_factory=list)
    """Hosts (`name` or `name:port`) of the STAC APIs searched, comma-separated; empty: no search."""
    timeout_s: float = Field(default=20.0, gt=0, le=600)
    retries: int = Field(default=3, ge=0, le=10)
    """Retries of one request on a timeout, a refused connection, 429 or 5xx, with exponential backoff."""
    backoff_s: float = Field(default=0.5, ge=0, le=60)
    """The first retry's delay; each next one doubles it (capped at 30 s)."""


class Connection(BaseModel):
    """The LLM provider connection, declared once: `LLMSettings` reads it from `GEOGATE_LLM_*`, a request's
    `workers.llm.config.LLMConfig` carries it."""

    provider: Literal["openai", "anthropic"] = "openai"
    """`openai`: every OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp, LM Studio)."""
    base_url: str = "http://127.0.0.1:11434/v1"
    """Up to and including the version segment: `https://api.openai.com/v1`, `https://api.anthropic.com`."""
    api_key: SecretStr | None = None
    model: str = "llama3.1:8b"
    native_tools: bool | None = None
    """Force native tool calling on or off; None asks the capability table."""
    template: str | None = None
    """Force a prompt template (`generic`, `llama3`, `code`, `hermes`, …); None asks the capability table."""
    prompt_format: Literal["generic", "native"] = "generic"
    """Prompt-based calling asks for the table's template (`generic`: JSON any model can write) or, where the
    table knows it, for the format the model was trained on (`native`)."""
    timeout_s: float = Field(default=120.0, gt=0)


class LLMSettings(BaseSettings, Connection):
    """The LLM host: provider connection (`GEOGATE_LLM_*`) and limits a request may lower, never raise."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_LLM_", extra="ignore")

    backoff_retries: int = Field(default=4, ge=0)
    rate_limit_per_minute: int = Field(default=30, ge=1)
    """`ask` requests per client (actor) per minute, counted in Redis."""
    blocked_tools: CommaList = Field(default_factory=list)
    """Comma-separated fnmatch patterns (`*_delete,raster_convert`): never offered, never run."""
    max_attempts: int = Field(default=3, ge=1)
    max_turns: int = Field(default=4, ge=1)
    max_tool_calls: int = Field(default=8, ge=0)
    max_total_tokens: int = Field(default=60_000, ge=256)
    tool_timeout_s: float = Field(default=120.0, gt=0)
    """Longest the loop waits for one tool call it made."""

    def model_post_init(self, context: object) -> None:
        register_secret(self.api_key.get_secret_value() if self.api_key else None)  # never in the log


class Settings(BaseSettings):
    """Every knob of Geogate. Tests build `Settings(redis_url=…)` directly."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_", extra="ignore", populate_by_name=True)

    redis_url: str | None = Field(default=None, validation_alias=AliasChoices("GEOGATE_REDIS_URL", "REDIS_URL"))
    """Redis for the log, projections and the Celery broker. None in `geogate dev` starts a private one."""
    host: str = "127.0.0.1"
    port: int = 8000
    workspaces: str = "."
    """Colon-separated roots that tools may read and write under."""
    prefix: str = "geogate"
    """Prefix of every Redis key Geogate owns (not the Celery queues)."""
    redis_max_connections: int = 64
    """Connections each gateway process may open to Redis; further calls wait for one."""
    call_timeout_s: float = 300.0
    """Longest a client waits for a call before getting an error naming the call id."""
    dedupe_ttl_s: int = 7 * 86400
    inline_result_max_bytes: int = 256 * 1024
    """Results larger than this go to the blob store and the event holds a reference."""
    blob_ttl_s: int = 86400
    job_time_limit_s: int = 900
    visibility_timeout_s: int = 1200
    """Celery/Redis redelivery timeout, above `job_time_limit_s`; a dead worker's calls are re-dispatched by leases."""
    heartbeat_s: float = Field(default=2.0, gt=0)
    """How often each worker node renews its liveness lease (and the reaper looks for lapsed ones)."""
    lease_ttl_s: float = Field(default=6.0, gt=0)
    """A lease not renewed this long (at least twice `heartbeat_s`) lapses: its node's running calls re-dispatch."""
    max_attempts: int = Field(default=3, ge=1)
    """Starts of one call before it fails with `call.attempts_exhausted` (a job that kills its worker every time)."""
    job_memory_mb: int = Field(default=4096, ge=0)
    """Address space of each prefork worker pool process, libraries included (`RLIMIT_AS`; 0: no limit). A job that
    needs more fails with `job.out_of_memory` and the process goes on; what normal jobs take: docs/workers.md."""
    worker_user: str | None = None
    """The user `geogate dev` runs its workers as when started as root; unset: the first workspace root's owner
    unless root, else `nobody` (`geogate.cli.dev_user`). The gateway and Redis keep the user who started it."""
    tile_min_pixels: int = Field(default=16 * 1024 * 1024, ge=65_536, le=1 << 40)
    """A tiled call whose grid (output pixels, or the source's for statistics) is at least this large runs as
    tiles across the workers."""
    tile_size: int = Field(default=2048, ge=256, le=16_384, multiple_of=256)
    """Side of a tile in pixels (rounded down to a multiple of the output's block size; docs/tiles.md)."""
    vector_partition_features: int = Field(default=100_000, ge=100)
    """An overlay or join of at least this many features runs as partitions of about as many (docs/gis-vector.md)."""
    tile_polygonize_min_pixels: int = Field(default=1 << 40, ge=65_536, le=1 << 40)
    """`raster_polygonize` runs as tiles from this many pixels; by default never (docs/tiles.md says why)."""
    remote_hosts: CommaList = Field(default_factory=list)
    """Hosts (`name` or `name:port`) whose `https://` (and `http://`) rasters tools may read by HTTP range requests
    (GDAL `/vsicurl/`), comma-separated. Empty: no remote reads. Outputs always stay in the workspace."""
    remote_timeout_s: int = Field(default=30, ge=1, le=600)
    """GDAL_HTTP_TIMEOUT of a remote read (GDAL_HTTP_CONNECTTIMEOUT is a third of it)."""
    remote_max_retry: int = Field(default=2, ge=0, le=10)
    """GDAL_HTTP_MAX_RETRY of a remote read (on 429/502/503/504 answers)."""
    redis_appendfsync: Literal["everysec", "always"] = "everysec"
    """fsync of `geogate dev`'s Redis AOF: `everysec` loses at most ~1 s on a power loss, `always` nothing, at
    about a third of the write rate."""
    data_dir: Path = Field(default_factory=default_data_dir)
    """Where `geogate dev` keeps Redis data, logs and `run.json`, outside the workspace; tools never touch it."""
    log_level: str = "INFO"
    justification_ttl_s: dict[str, float] = Field(default_factory=dict)
    """Time to live per domain (JSON, e.g. `{"crs_datum": 2592000}`); others use the default below."""
    justification_default_ttl_s: float = 30 * 86400.0
    preflight_server_llm: bool = False
    """For clients that cannot sample: ask the server-side model (the LLM host's settings) for justifications."""
    admin_actors: CommaList = Field(default_factory=list)
    """Comma-separated client ids allowed to revoke justifications over MCP (the CLI always can)."""
    workflows_dir: Path | None = None
    """An extra folder of workflow definitions (YAML) beside the shipped ones."""
    workflow_ttl_s: float = 86400.0
    """A workflow run untouched for this long expires."""
    task_after_s: float = Field(default=10.0, ge=0)
    """A tasks-extension client's call waits this long, then answers with a task handle (long tools: at once)."""
    task_poll_interval_ms: int = Field(default=500, ge=1)
    """The `pollIntervalMs` a task handle suggests."""
    task_ttl_s: int = Field(default=86400, ge=1)
    """The `ttlMs` of a task: how long `tasks/get` answers for it after it was created."""
    fault_pause_at: str | None = None
    """A step (`workers.run.faults`) where a worker SIGSTOPs itself, for fault tests; unset in normal runs."""
    toolsets: CommaList = Field(default_factory=lambda: list(DEFAULT_TOOLSETS))
    """Comma-separated toolsets published (`schemas.tools.toolsets`; `all`); others are neither listed nor called."""
    extra_tools: str | None = None
    """A module adding tools beside Geogate's own (`schemas.tools.extra`), loaded at start-up; tests use it."""
    retention: RetentionPolicy = Field(default_factory=RetentionPolicy)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    """Authentication, limits, allowed hosts and origins, sandbox strength."""
    llm: LLMSettings = Field(default_factory=LLMSettings)
    """The LLM host (`ask`, server-side justifications): provider connection and the loop's limits."""
    limits: LimitSettings = Field(default_factory=LimitSettings)
    """Bounds on one call: tiles, output bytes, features, zones, result size (`GEOGATE_LIMIT_*`)."""
    stac: StacSettings = Field(default_factory=StacSettings)

    @model_validator(mode="after")
    def _lease_outlives_beats(self) -> "Settings":
        if self.lease_ttl_s < 2 * self.heartbeat_s:
            raise ValueError(
                f"lease_ttl_s ({self.lease_ttl_s:g}) must be at least twice heartbeat_s ({self.heartbeat_s:g}), "
                "or one late heartbeat re-dispatches live work"
            )
        kept = self.retention.finished_ttl_s
        if kept is not None and kept < self.dedupe_ttl_s:
            raise ValueError(
                f"retention.finished_ttl_s ({kept}) must be at least dedupe_ttl_s ({self.dedupe_ttl_s}): a retry "
                "that attaches to a finished call reads its answer from the projection"
            )
        return self

    @classmethod
    def defaults(cls) -> "Settings":
        """Every field at its default, sections included, without reading the environment (nor their factories)."""
        sections = {
            "retention": RetentionPolicy,
            "security": SecuritySettings,
            "llm": LLMSettings,
            "limits": LimitSettings,
            "stac": StacSettings,
        }
        return cls.model_construct(**{name: section.model_construct() for name, section in sections.items()})

    def keys(self) -> "Keys":
        """The key names of this deployment, with the retention of finished calls."""
        from geogate.calls.keys import Keys

        return Keys(self.prefix, self.retention.finished_ttl_s)

    def workspace_roots(self) -> list[Path]:
        """The folder roots, resolved (links followed) and de-duplicated, in order (`s3://` ones: `geogate.objects`)."""
        roots: list[Path] = []
        for part in self.workspaces.replace("://", "\0").split(":"):
            if part.strip() and "\0" not in part:
                root = Path(part.strip()).expanduser().resolve()
                if root not in roots:
                    roots.append(root)
        return roots

    def justification_ttl(self, domain: str) -> float:
        return self.justification_ttl_s.get(domain, self.justification_default_ttl_s)

    def is_admin(self, actor: str) -> bool:
        return actor in self.admin_actors

    def require_redis_url(self) -> str:
        """Raises: SettingsError: no Redis URL is set."""
        if not self.redis_url:
            raise SettingsError("REDIS_URL (or GEOGATE_REDIS_URL) is not set; `geogate dev` starts everything locally")
        return self.redis_url


SECTIONS: dict[str, type[BaseSettings]] = {
    "Settings": Settings,
    "RetentionPolicy": RetentionPolicy,
    "SecuritySettings": SecuritySettings,
    "LLMSettings": LLMSettings,
    "LimitSettings": LimitSettings,
    "StacSettings": StacSettings,
}
"""Each class of the tree by name, to name the variable behind a validation error (`ValidationError.title`)."""


def read_settings() -> Settings:
    """The settings from the environment, at an entry point (each call reads it anew: see `process_settings`).

    Raises: SettingsError: a setting is out of range; the message names its variable (`GEOGATE_TILE_SIZE: …`).
    """
    try:
        return Settings()
    except ValidationError as exc:
        model = SECTIONS.get(exc.title, Settings)
        lines = [f"{_variable(model, e['loc'])}: {e['msg']} (got {e.get('input')!r})" for e in exc.errors()]
        raise SettingsError("invalid settings:\n  " + "\n  ".join(lines)) from None


@functools.cache
def process_settings() -> Settings:
    """This process's settings: read from the environment on the first call, the same object after.

    Raises: SettingsError: as `read_settings`."""
    return read_settings()


def _variable(model: type[BaseSettings], loc: tuple[int | str, ...]) -> str:
    if not loc or loc[0] not in model.model_fields:
        return " ".join(str(part) for part in loc) or "settings"
    prefix = str(model.model_config.get("env_prefix", "GEOGATE_")).upper()
    return prefix + "_".join(str(part) for part in loc).upper()
