"""Preflight keys: which justifications a call needs, keyed by sha256 over domain, prompt hash and normalised args.

Pure and shared: the gateway gates client calls with it, and `eventlog.calls` gates calls made by workers.
"""

import functools
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue, ValidationError
from pyproj import CRS
from pyproj.exceptions import CRSError

from eventlog.errors import EventLogError
from eventlog.preflight_prompts import PROMPTS
from eventlog.projections.justifications import JustificationState, justification_key
from eventlog.publish import new_event
from schemas.events import Event
from schemas.events.justification import PreflightRequired, justification_aggregate
from schemas.reflection import Justification, ReflectionSpec
from schemas.tools import ToolSpec
from schemas.validation import FieldError

if TYPE_CHECKING:
    from eventlog.store import EventStore


@functools.lru_cache(maxsize=1024)
def normalise_crs(value: str) -> str:
    """`EPSG:3857`, `epsg:3857` and the WKT of 3857 all give `EPSG:3857`; a CRS with no code gives its WKT2."""
    try:
        crs = CRS.from_user_input(value)
    except CRSError:
        return str(value).strip()
    code = crs.to_authority(min_confidence=90)
    return f"{code[0]}:{code[1]}".upper() if code else crs.to_wkt("WKT2_2019")


def normalise(domain: str, value: Any) -> Any:
    if value is None:
        return "unknown"
    if domain == "crs_datum":
        return normalise_crs(str(value))
    return str(value).strip().casefold()


def prompt_args(spec: ReflectionSpec, tool_args: dict[str, Any]) -> dict[str, Any]:
    """The prompt's arguments taken from the tool's (validated) arguments, normalised."""
    return {name: normalise(spec.domain, tool_args.get(source)) for name, source in spec.args.items()}


def cache_key(domain: str, prompt: str, args: dict[str, Any]) -> str:
    """Shared across tools: a CRS justified for rasters also unlocks vectors."""
    material = {"domain": domain, "prompt_hash": PROMPTS[prompt].template_hash, "args": args}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Needed:
    """One justification a call needs: which prompt, with which arguments, under which cache key."""

    domain: str
    prompt: str
    prompt_args: dict[str, Any]
    hash: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        return PROMPTS[self.prompt].messages(self.prompt_args)

    def as_hint(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "prompt": self.prompt,
            "prompt_args": self.prompt_args,
            "hash": self.hash,
            "messages": self.messages,
        }


def needed_for(spec: ToolSpec, args: dict[str, Any]) -> list[Needed]:
    """Every justification `spec` declares, keyed from the call's validated arguments (pure)."""
    found = []
    for reflection in spec.reflection:
        pargs = prompt_args(reflection, args)
        digest = cache_key(reflection.domain, reflection.prompt, pargs)
        found.append(Needed(reflection.domain, reflection.prompt, pargs, digest))
    return found


def required_events(spec: ToolSpec, missing: list[Needed], actor: str) -> list[tuple[Event, str]]:
    """`preflight.required` for each missing item, with its dedupe key: the hashes this server issues."""
    request = f"{time.time_ns()}"
    out = []
    for item in missing:
        data = PreflightRequired(
            hash=item.hash, domain=item.domain, prompt=item.prompt, prompt_args=item.prompt_args, tool=spec.name
        )
        out.append(
            (
                new_event(justification_aggregate(item.hash), data, actor=actor),
                f"justification:{item.hash}:required:{request}",
            )
        )
    return out


class PreflightMissing(EventLogError):
    """A gated tool was called without the justifications it needs; `required` lists them (hint shape)."""

    code = "preflight.required"

    def __init__(self, tool: str, missing: list[Needed]) -> None:
        domains = ", ".join(item.domain for item in missing)
        super().__init__(f"{tool} needs justification(s) before it runs: {domains}")
        self.tool = tool
        self.required = [item.as_hint() for item in missing]


def missing_now(store: "EventStore", needed: list[Needed], ttl_for: Callable[[str], float]) -> list[Needed]:
    """The needed justifications not valid in the cache right now (synchronous twin of the gateway's gate)."""
    pipe = store.redis.pipeline(transaction=False)
    for item in needed:
        pipe.hgetall(justification_key(store.live, item.hash))
    now = time.time()
    states = [JustificationState.from_hash(n.hash, raw) for n, raw in zip(needed, pipe.execute(), strict=True)]
    return [n for n, s in zip(needed, states, strict=True) if s is None or not s.valid(now, ttl_for(n.domain))]


def enforce(
    store: "EventStore", spec: ToolSpec, args: dict[str, Any], actor: str, ttl_for: Callable[[str], float]
) -> list[str]:
    """Gate a call made by a worker: the hashes that justify it, or `PreflightMissing` (hashes issued first).

    Raises:
        PreflightMissing: some justification is absent, revoked or expired.
    """
    needed = needed_for(spec, args)
    missing = missing_now(store, needed, ttl_for) if needed else []
    if missing:
        for event, key in required_events(spec, missing, actor):
            store.append(event, key)
        raise PreflightMissing(spec.name, missing)
    return [item.hash for item in needed]


def justification_errors(raw: object, prefix: str) -> list[FieldError]:
    """Field-level problems of a 4-key justification (`[]` when it is valid)."""
    try:
        Justification.model_validate(raw)
    except ValidationError as exc:
        return [
            FieldError(prefix + ".".join(str(p) for p in err["loc"]), err["msg"], err.get("input"))
            for err in exc.errors()
        ]
    return []


def parse_answer(text: str) -> tuple[dict[str, JsonValue] | None, list[str]]:
    """A model's answer to a justification prompt: the JSON object, or what is wrong with it."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, [f"not valid JSON ({exc.msg} at line {exc.lineno})"]
    problems = [f"{e.field}: {e.reason}" for e in justification_errors(value, "")]
    return (value, []) if not problems else (None, problems)
