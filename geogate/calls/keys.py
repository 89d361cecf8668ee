"""The calls' Redis keys: the read models' keys under a projection namespace, the run machinery's keys (leases,
locks, rate windows, held arguments) under the deployment prefix, and every dedupe-key builder. No other module
spells a key; the store's own keys are `geogate.eventlog.keys`, which these extend.
"""

from dataclasses import dataclass

from geogate.eventlog.keys import LogKeys, Namespace
from schemas.ids import CallId
from schemas.routes import CALL_PRIORITY, PRIORITY_SEP, PRIORITY_STEPS

CALLS = "calls"
"""The calls stream's category: the one the outcome readers tail (`gateway/outcomes.py`, `workers/run/outcomes.py`)."""
LLM = "llm"
"""The conversations' stream category (the chat routes follow an `ask`'s trace on it)."""


@dataclass(frozen=True)
class ProjectionKeys(Namespace):
    """The read models' keys under one namespace (the live one, a replay's scratch one, the snapshot)."""

    def call(self, call_id: CallId) -> str:
        return f"{self.base}:call:{call_id}"

    def metrics(self) -> str:
        return f"{self.base}:metrics"

    def running(self) -> str:
        """Hash `run → JSON {lease, worker, attempt, started_at}` of the runs a worker holds right now.

        A run is a call id (the tool's job) or `handler:<call id>` (its result handler)."""
        return f"{self.base}:running"

    def handler(self, call_id: CallId) -> str:
        """Hash: the state of a call's result-handler run."""
        return self.key("handler", call_id)

    def tiles(self, call_id: CallId) -> str:
        """Hash `tile index → state` (queued, running, redispatched, done, failed) of a tiled call's tiles."""
        return self.key("tiles", call_id)

    def writers(self) -> str:
        """Hash `real path → JSON {call, sha256, size, at}`: the call that last wrote each file (provenance)."""
        return self.key("writers")

    def justification(self, digest: str) -> str:
        """Hash: one cached justification (status, the justification, when it was persisted)."""
        return self.key("justification", digest)

    def justification_calls(self, digest: str) -> str:
        """Set of the calls a justification let through."""
        return self.key("justification", digest, "calls")

    def justification_pattern(self) -> str:
        """SCAN pattern of every justification hash (and its `calls` lists, which callers skip)."""
        return self.key("justification", "*")

    def workflow(self, state_id: str) -> str:
        """Hash: a guided workflow's current state."""
        return self.key("workflow", state_id)

    def transcript(self, state_id: str) -> str:
        """List: a workflow's steps as they happened (its transcript)."""
        return self.key("workflow", state_id, "transcript")

    def ops_cursor(self) -> str:
        """Hash: the ops summary's position in each stream (`stream → last absorbed entry id`) and its event count."""
        return self.key("ops", "cursor")

    def ops_totals(self) -> str:
        """Hash of the ops summary's counters and latency-histogram buckets since the log began."""
        return self.key("ops", "totals")

    def ops_slot(self, slot: int) -> str:
        """The counters of one time slot (`slot` = epoch seconds // the slot length), histograms aside."""
        return self.key("ops", "slot", str(slot))

    def ops_hist_slot(self, slot: int) -> str:
        """The latency-histogram buckets of one time slot."""
        return self.key("ops", "hslot", str(slot))

    def ops_pending(self) -> str:
        """Hash `call id → what the ops fold remembers of an unfinished call` (tool, request time, worker)."""
        return self.key("ops", "pending")

    def ops_workers(self) -> str:
        """Hash `worker → epoch microseconds of its last event`."""
        return self.key("ops", "workers")

    def ops_traces(self) -> str:
        """Hash `trace id → the aggregates with events in that trace` (space-separated, sorted): one key, not one
        per trace, so replay compares and swaps it at once."""
        return self.key("ops", "traces")


@dataclass(frozen=True)
class Keys(LogKeys):
    """Key builders for one deployment prefix: the store's, and those of the calls' read models and run machinery."""

    def projections(self, namespace: str = "p") -> ProjectionKeys:
        return ProjectionKeys(f"{self.prefix}:{namespace}", self.finished_ttl_s)

    def snapshot(self) -> ProjectionKeys:
        """The projections as they stood at the snapshot's positions (`geogate trim` takes one before trimming)."""
        return self.projections("snap")

    def rate(self, scope: str, subject: str, window: int) -> str:
        return f"{self.prefix}:rate:{scope}:{subject}:{window}"

    def lease(self, lease_id: str) -> str:
        """The liveness key of one worker node (a string with a TTL, renewed by its heartbeat)."""
        return f"{self.prefix}:lease:{lease_id}"

    def lease_pattern(self) -> str:
        return f"{self.prefix}:lease:*"

    def request_state_secret(self) -> str:
        """The key sealing MCP's `requestState` that every gateway on this log shares (`gateway.security`)."""
        return f"{self.prefix}:secret:request-state"

    def map_ticket_secret(self) -> str:
        """The key signing the interactive map's read tickets that every gateway on this log shares
        (`gateway.map_tickets`)."""
        return f"{self.prefix}:secret:map-ticket"

    def reaper_lock(self) -> str:
        """Held (with a TTL) by the one process whose reaper acts at a time."""
        return f"{self.prefix}:lock:reaper"

    def in_flight(self, client_id: str) -> str:
        """Sorted set of a client's calls in progress (member: slot id, score: start time in ms), for its limit."""
        return f"{self.prefix}:inflight:{client_id}"

    def held_args(self, call_id: CallId) -> str:
        """Hash `argument → JSON value` of a call's arguments that redaction masked in its events
        (`geogate.calls.held`); written with the call's request, deleted with its outcome."""
        return f"{self.prefix}:held:{call_id}"

    def client_scopes(self, client_id: str) -> str:
        """The scopes a client's token carries, kept for workers that call tools on its behalf (LLM host, handlers)."""
        return f"{self.prefix}:scopes:{client_id}"

    def xyz_tile(self, digest: str) -> str:
        """One rendered XYZ tile (PNG bytes; empty for a tile outside its raster), with a TTL (`gateway.xyz_cache`)."""
        return f"{self.prefix}:xyz:tile:{digest}"

    def xyz_index(self) -> str:
        """Sorted set of the cached tiles' digests by last use, so the cache keeps only the most recent ones."""
        return f"{self.prefix}:xyz:index"

    def xyz_reply(self, request_id: str) -> str:
        """The list a worker pushes one tile's answer on; the gateway waits on it (BLPOP) and it expires soon."""
        return f"{self.prefix}:xyz:reply:{request_id}"


def requested_key(call_id: CallId) -> str:
    return f"call:{call_id}:requested"


def started_key(call_id: CallId, attempt: str) -> str:
    return f"call:{call_id}:started:{attempt}"


def progress_key(call_id: CallId, attempt: str, seq: int) -> str:
    return f"call:{call_id}:progress:{attempt}:{seq}"


def logged_key(call_id: CallId, attempt: str, seq: int) -> str:
    """One client log line per attempt and sequence number (`tool.logged`)."""
    return f"call:{call_id}:logged:{attempt}:{seq}"


def outcome_key(call_id: CallId) -> str:
    """One outcome per call: `tool.succeeded` and `tool.failed` share it, so only the first lands."""
    return f"call:{call_id}:outcome"


def cancel_key(call_id: CallId) -> str:
    return f"call:{call_id}:cancel"


def redispatch_key(call_id: CallId, lost_attempt: str) -> str:
    """One re-dispatch per lost attempt, whichever reaper sees it first."""
    return f"call:{call_id}:redispatch:{lost_attempt}"


def handler_started_key(call_id: CallId, attempt: str) -> str:
    return f"call:{call_id}:handler:started:{attempt}"


def handler_outcome_key(call_id: CallId) -> str:
    """One handler outcome per call: `handler.succeeded` and `handler.failed` share it."""
    return f"call:{call_id}:handler:outcome"


HANDLER_RUN = "handler:"
"""Prefix of a handler run's field in the running index (`ProjectionKeys.running`)."""


def handler_run(call_id: CallId) -> str:
    return f"{HANDLER_RUN}{call_id}"


FAN_IN_RUN = "fanin:"
"""Prefix of a tiled call's fan-in run in the running index."""


def fan_in_run(call_id: CallId) -> str:
    return f"{FAN_IN_RUN}{call_id}"


def fanned_out_key(call_id: CallId) -> str:
    """One fan-out per call: a planner that runs again appends neither its tiles nor this twice."""
    return f"call:{call_id}:fanned_out"


def fan_in_started_key(call_id: CallId, attempt: str) -> str:
    return f"call:{call_id}:fan_in:started:{attempt}"


def tiles_progress_key(call_id: CallId, done: int) -> str:
    """The parent's progress when its `done`th tile ended (one event per count, whichever tile reports it)."""
    return f"call:{call_id}:tiles_done:{done}"


def rejected_key(client_id: str, reason: str, second: int) -> str:
    """At most one `call.rejected` per client, reason and second: a client past its limit cannot flood the log."""
    return f"client:{client_id}:rejected:{reason}:{second}"


def justification_required_key(digest: str, request: str) -> str:
    """One `preflight.required` per hash and gate decision (`request` names the decision)."""
    return f"justification:{digest}:required:{request}"


def justification_expired_key(digest: str, persisted_ts: float) -> str:
    """One `justification.expired` per persisted justification, whichever gate sees it lapse first."""
    return f"justification:{digest}:expired:{persisted_ts!r}"


def justification_persisted_key(digest: str, event_id: str) -> str:
    return f"justification:{digest}:persisted:{event_id}"


def justification_revoked_key(digest: str, event_id: str) -> str:
    return f"justification:{digest}:revoked:{event_id}"


def workflow_version_key(state_id: str, version: int) -> str:
    """One event per workflow version: two writers of the same version cannot both land."""
    return f"workflow:{state_id}:v{version}"


def conversation_step_key(call_id: CallId, run: str, step: str) -> str:
    """One event per LLM run and step (`started`, `attempt:<turn>:<attempt>`, `finished`)."""
    return f"conversation:{call_id}:{run}:{step}"


def attempt_step(turn: int, attempt: int) -> str:
    """The step of one model attempt in `conversation_step_key`."""
    return f"attempt:{turn}:{attempt}"


def stranded_attempt(dispatch: int) -> str:
    """The `lost_attempt` a re-dispatch of a message delivered but never started names (dedupe per dispatch)."""
    return f"stranded-{dispatch}"


def celery_queue_key(queue: str, priority: int = CALL_PRIORITY) -> str:
    """The Redis list kombu's Redis transport reads for `queue` at `priority` (no global key prefix)."""
    if priority not in PRIORITY_STEPS:
        raise ValueError(f"priority {priority} is not one of {PRIORITY_STEPS}")
    return f"{queue}{PRIORITY_SEP}{priority}" if priority else queue


def celery_queue_keys(queue: str) -> list[str]:
    """Every list of `queue`, in the order a worker takes from them (the first non-empty one)."""
    return [celery_queue_key(queue, priority) for priority in PRIORITY_STEPS]


def input_request_key(call_id: CallId, key: str) -> str:
    """One input request per call and key (a re-dispatched job asking again appends nothing new)."""
    return f"call:{call_id}:input:{key}"


def input_answer_key(call_id: CallId, key: str) -> str:
    """One answer per input request: the first answer to a key wins (`tasks/update`, an MRTR retry, the session)."""
    return f"call:{call_id}:input:{key}:answer"


def outcome_reader(host: str, pid: int) -> str:
    """The checkpoint consumer name of one gateway process's outcome reader."""
    return f"outcomes:{host}:{pid}"
