"""The pure half of an append: ops, expectations and the argument layout of `_append.lua` (no I/O here)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Literal

from schemas.codec import encode
from schemas.events import Event

ENTRY_ID = "\0id"
"""An op argument replaced by the new entry's stream id inside the script."""

ALLOWED_OPS = frozenset(
    {
        "HSET",
        "HSETNX",
        "HSETIF",
        "HINCRBY",
        "HINCRBYFLOAT",
        "HDEL",
        "SADD",
        "SREM",
        "ZADD",
        "ZREM",
        "RPUSH",
        "LPUSH",
        "DEL",
        "PEXPIRE",
        "PEXPIREAT",
    }
)

Arg = str | bytes | int | float

SCRIPT = files("geogate.eventlog").joinpath("_append.lua").read_text()


@dataclass(frozen=True)
class Expect:
    """Append only if field `field` of hash `key` is (`in`) or is not (`not_in`) one of `values` ("" = absent),
    or (`lt`) holds a number below `values[0]` (absent counts as 0), or (`same`) is present and equal to the
    field `values[0]` of the same hash."""

    key: str
    field: str
    kind: Literal["in", "not_in", "lt", "same"]
    values: tuple[str, ...]


@dataclass(frozen=True)
class Op:
    """One Redis write applied atomically with the append (a projection update or an effect such as LPUSH).

    With `when`, the write happens only if that holds once the ops before it have run: a fan-in's enqueue rides on
    every tile's outcome and fires on the one whose count completes the grid.
    """

    name: str
    key: str
    args: tuple[Arg, ...] = ()
    when: Expect | None = None

    def __post_init__(self) -> None:
        if self.name not in ALLOWED_OPS:
            raise ValueError(f"op {self.name!r} is not allowed in an append")


def hset_unless(key: str, guard: str, forbidden: Sequence[str], mapping: dict[str, Arg]) -> Op:
    """HSET `mapping` on `key` unless its `guard` field holds one of `forbidden` (e.g. a terminal status)."""
    flat: list[Arg] = [guard, len(forbidden), *forbidden]
    for k, v in mapping.items():
        flat += [k, v]
    return Op("HSETIF", key, tuple(flat))


def hset(key: str, mapping: dict[str, Arg]) -> Op:
    flat: list[Arg] = []
    for k, v in mapping.items():
        flat += [k, v]
    return Op("HSET", key, tuple(flat))


@dataclass(frozen=True)
class Readback:
    """A hash field returned after the append (e.g. the call's cancel flag, read in the same round trip)."""

    key: str
    field: str


@dataclass
class ScriptCall:
    """KEYS and ARGV for one run of the script."""

    keys: list[str] = field(default_factory=list)
    args: list[Arg] = field(default_factory=list)

    def key_no(self, key: str) -> int:
        if key not in self.keys:
            self.keys.append(key)
        return self.keys.index(key) + 1


def _expectation(call: ScriptCall, e: Expect) -> list[Arg]:
    return [call.key_no(e.key), e.field, e.kind, len(e.values), *e.values]


def stream_fields(event: Event, dedupe_key: str) -> list[Arg]:
    """The stream entry: type and aggregate as plain fields (XRANGE readers filter without decoding)."""
    return ["type", event.type, "aggregate", event.aggregate, "dedupe", dedupe_key, "event", encode(event)]


def script_call(
    *,
    mode: Literal["append", "project"],
    stream: str,
    dedupe: str,
    index: str,
    fields: list[Arg],
    ops: Sequence[Op],
    ttl: int = 0,
    entry_id: str = "*",
    dedupe_field: str = "",
    expect: Sequence[Expect] = (),
    readback: Readback | None = None,
) -> ScriptCall:
    """Lay out one script call. Pure, so sync and async stores share it. Expectations are checked in order.

    `dedupe_field`: the dedupe key is that field of the hash `dedupe` ("" = `dedupe` is a string key of its own)."""
    call = ScriptCall(keys=[stream, dedupe, index])
    call.args = [mode, ttl, entry_id, dedupe_field, len(fields) // 2, *fields, len(expect)]
    for e in expect:
        call.args += _expectation(call, e)
    call.args.append(len(ops))
    for op in ops:
        call.args += [op.name, call.key_no(op.key), len(op.args), *op.args]
        call.args += [0] if op.when is None else [1, *_expectation(call, op.when)]
    if readback is None:
        call.args += [0, ""]
    else:
        call.args += [call.key_no(readback.key), readback.field]
    return call
