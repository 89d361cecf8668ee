"""Typed settings, read once at an entry point (`geogate …`) and passed explicitly; env prefix `GEOGATE_`."""

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import AliasChoices, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from geogate.security_settings import SecuritySettings

if TYPE_CHECKING:
    from geogate.eventlog.streams import Keys


class RetentionPolicy(BaseSettings):
    """How much of the log to keep. Trimming never passes a registered consumer's checkpoint."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_RETENTION_", extra="ignore")

    max_age_s: int | None = None
    """Drop events older than this (exact `XTRIM MINID`). None keeps everything (the default)."""
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
    """Celery/Redis redelivery timeout; must exceed the longest job (`job_time_limit_s`). A dead worker's calls do
    not wait for it: leases (below) re-dispatch them within seconds."""
    heartbeat_s: float = Field(default=2.0, gt=0)
    """How often each worker node renews its liveness lease (and the reaper looks for lapsed ones)."""
    lease_ttl_s: float = Field(default=6.0, gt=0)
    """A lease not renewed for this long has lapsed: its node is taken for dead and its running calls are
    re-dispatched. At least twice `heartbeat_s`."""
    max_attempts: int = Field(default=3, ge=1)
    """Starts of one call before it fails with `call.attempts_exhausted` (a job that kills its worker every time)."""
    tile_min_pixels: int = Field(default=16 * 1024 * 1024, ge=65_536, le=1 << 40)
    """A tiled tool's call whose grid (output pixels, or the source's for statistics) is at least this large runs as
    tiles across the workers; smaller ones run whole on one worker."""
    tile_size: int = Field(default=2048, ge=256, le=16_384, multiple_of=256)
    """Side of a tile in pixels (rounded down to a multiple of the output's block size). 2048 by measurement: an
    8192² reprojection on 2 workers took 1.96 s in 2048² tiles, 2.31 s in 1024² ones (bench/tiles.py)."""
    redis_appendfsync: Literal["everysec", "always"] = "everysec"
    """fsync policy of the AOF of the Redis that `geogate dev` starts: `everysec` loses nothing when the process
    dies and at most ~1 s on a power loss; `always` loses nothing on a power loss either, at about a third of the
    write rate."""
    data_dir: Path = Path(".geogate")
    log_level: str = "INFO"
    justification_ttl_s: dict[str, float] = Field(default_factory=dict)
    """Time to live per domain (JSON, e.g. `{"crs_datum": 2592000}`); others use the default below."""
    justification_default_ttl_s: float = 30 * 86400.0
    preflight_server_llm: bool = False
    """For clients that cannot sample: ask the server-side model (the LLM host's settings) for justifications."""
    admin_actors: str = ""
    """Comma-separated client ids allowed to revoke justifications over MCP (the CLI always can)."""
    workflows_dir: Path | None = None
    """An extra folder of workflow definitions (YAML) beside the shipped ones."""
    workflow_ttl_s: float = 86400.0
    """A workflow run untouched for this long expires."""
    task_after_s: float = Field(default=10.0, ge=0)
    """A call from a client that declared the tasks extension waits this long for its outcome, then answers with a
    task handle (`resultType: "task"`); tools that run long (`gateway.tasks.policy`) answer with one at once."""
    task_poll_interval_ms: int = Field(default=500, ge=1)
    """The `pollIntervalMs` a task handle suggests."""
    task_ttl_s: int = Field(default=86400, ge=1)
    """The `ttlMs` of a task: how long `tasks/get` answers for it after it was created."""
    extra_tools: str | None = None
    """A module adding tools beside Geogate's own (`schemas.tools.extra`), loaded by the gateway and the workers at
    start-up; the test harness names its fixtures here. None in a normal run."""
    retention: RetentionPolicy = Field(default_factory=RetentionPolicy)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    """Authentication, limits, allowed hosts and origins, sandbox strength (issue 14)."""

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

    def keys(self) -> "Keys":
        """The key names of this deployment, with the retention of finished calls."""
        from geogate.eventlog.streams import Keys

        return Keys(self.prefix, self.retention.finished_ttl_s)

    def workspace_roots(self) -> list[Path]:
        """The workspace roots, resolved (symlinks followed) and de-duplicated, in order."""
        roots: list[Path] = []
        for part in self.workspaces.split(":"):
            if part.strip():
                root = Path(part.strip()).expanduser().resolve()
                if root not in roots:
                    roots.append(root)
        return roots

    def justification_ttl(self, domain: str) -> float:
        return self.justification_ttl_s.get(domain, self.justification_default_ttl_s)

    def is_admin(self, actor: str) -> bool:
        return actor in {a.strip() for a in self.admin_actors.split(",") if a.strip()}

    def require_redis_url(self) -> str:
        if not self.redis_url:
            raise SystemExit("REDIS_URL (or GEOGATE_REDIS_URL) is not set; `geogate dev` starts everything locally")
        return self.redis_url


def read_settings() -> Settings:
    """The settings from the environment, at an entry point.

    Raises:
        SystemExit: a setting is out of range; the message names its variable (`GEOGATE_TILE_SIZE: …`), no trace.
    """
    try:
        return Settings()
    except ValidationError as exc:
        lines = [f"{_variable(error['loc'])}: {error['msg']} (got {error.get('input')!r})" for error in exc.errors()]
        raise SystemExit("invalid settings:\n  " + "\n  ".join(lines)) from None


def _variable(loc: tuple[int | str, ...]) -> str:
    if not loc or loc[0] not in Settings.model_fields:
        return " ".join(str(part) for part in loc) or "settings"
    return "GEOGATE_" + "_".join(str(part) for part in loc).upper()
