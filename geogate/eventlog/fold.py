"""Projection ops applied in process, as `_append.lua` applies them, over many events at a time; each changed key is
then written once, pipelined.

Replay and the snapshot a trim takes fold thousands of events per round trip here instead of one script call per
event. The ops come from the same projectors as the live path (the store's `Projectors.ops`); only their
application is done twice, once in Lua for the live append (atomic with the XADD) and once below, and
`tests/unit/geogate/eventlog/test_fold.py` checks that both leave the same keys over random event sequences.

Keys are held in memory from the batch that first touches them; after `changes` only the last batch's keys stay held,
and a key held no longer is read back from Redis when an event touches it again (the fold is the only writer of its
namespace, so what it wrote is what it reads).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from geogate.eventlog.append import ENTRY_ID, Arg, Expect, Op
from geogate.eventlog.errors import EventLogError
from geogate.eventlog.keys import Namespace
from geogate.eventlog.projectors import OpsFor
from geogate.eventlog.store import StoredEvent

WRITE_CHUNK = 20_000
"""Arguments per script call when writing (Lua's `unpack` takes up to 8,000 at once: one command stays below)."""
FIELDS_PER_COMMAND = 1000
"""A big hash or list is written in commands of at most this many fields or items."""

WRITE = """
local a = 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[a])
  redis.call(ARGV[a + 1], KEYS[k], unpack(ARGV, a + 2, a + 1 + n))
  a = a + 2 + n
end
return #KEYS
"""
"""Many one-key writes in one script call: KEYS[k] is the key of the k-th command, ARGV holds per command its
argument count, its name and its arguments.

Measured reason for a script over a redis-py pipeline: at 20,000 events a pipeline of the changed keys' writes spent
2.0 s of a 3.3 s flush in redis-py (a Python `execute_command`, pack and reply parse per command); one EVALSHA per
chunk is packed by hiredis in C and answers once."""

Command = tuple[Any, ...]
"""(name, key, *args): a write to one key."""


class UnfoldableOp(EventLogError):
    """A projector emitted an op this fold does not apply (none does today: the property test runs them all)."""

    code = "replay.unfoldable_op"


@dataclass
class Held:
    """One key as the fold holds it: its type, content and absolute expiry (ms), as Redis would."""

    kind: str
    value: Any
    """dict[bytes, bytes] for a hash, list[bytes] for a list, set[bytes] for a set."""
    expire_at: int | None = None


def as_bytes(value: Arg) -> bytes:
    """An op argument as Redis stores it (hiredis packs str as UTF-8, numbers as their repr)."""
    kind = type(value)
    if kind is str:
        return value.encode()  # type: ignore[union-attr]
    return value if kind is bytes else repr(value).encode()  # type: ignore[return-value]


def one_key_each(commands: list[Command]) -> list[Command]:
    """`commands` with each DEL of several keys split into one DEL per key (the shape `write_all` takes)."""
    out: list[Command] = []
    for command in commands:
        out += [("DEL", key) for key in command[1:]] if command[0] == "DEL" else [command]
    return out


def write_all(client: redis.Redis, commands: list[Command]) -> None:
    """Run one-key write commands in order, chunked into calls of the `WRITE` script."""
    script = client.register_script(WRITE)
    keys: list[Any] = []
    args: list[Any] = []
    for name, key, *rest in commands:
        keys.append(key)
        args += [len(rest), name, *rest]
        if len(args) >= WRITE_CHUNK:
            script(keys=keys, args=args)
            keys, args = [], []
    if keys:
        script(keys=keys, args=args)


@dataclass
class Keyspace:
    """The projection keys under `target` being folded, with the keys Redis already holds there (`stored`)."""

    client: redis.Redis
    target: Namespace
    ops_for: OpsFor
    """The projection writes of an event (the store's `Projectors.ops`)."""
    stored: set[str] = field(default_factory=set)
    held: dict[str, Held | None] = field(default_factory=dict)
    """Key → its content, or None for a key known absent (deleted, emptied, or expired)."""
    dirty: set[str] = field(default_factory=set)
    now_ms: int = 0

    @classmethod
    def over(cls, client: redis.Redis, target: Namespace, ops_for: OpsFor) -> "Keyspace":
        """A keyspace over what `target` holds now (a snapshot copied there, or nothing), folding `ops_for`."""
        stored = {k.decode() for k in client.scan_iter(match=target.pattern(), count=1000)}
        return cls(client, target, ops_for, stored)

    def fold(self, events: Sequence[StoredEvent]) -> None:
        """Apply `events`' projection ops, in order, to the held keys (loading those Redis holds first)."""
        planned = [(s, self.ops_for(s.event, self.target)) for s in events]
        wanted = {self.target.index(s.event.aggregate) for s in events}
        wanted.update(op.key for _, ops in planned for op in ops)
        wanted.update(op.when.key for _, ops in planned for op in ops if op.when is not None)
        self._load([k for k in wanted if k not in self.held and k in self.stored])
        seconds, micros = self.client.time()
        self.now_ms = int(seconds) * 1000 + int(micros) // 1000
        for stored, ops in planned:
            entry = stored.entry_id.encode()
            self._push(self.target.index(stored.event.aggregate), [entry], right=True)
            for op in ops:
                self.apply(op, entry)

    def apply(self, op: Op, entry: bytes) -> None:
        """One op, as `apply_ops` in `_append.lua` runs it (`\\0id` arguments become the entry id)."""
        args = [a.encode() if type(a) is str else as_bytes(a) for a in op.args]
        if ENTRY_ID in op.args:
            args = [entry if a == ENTRY_ID else b for a, b in zip(op.args, args, strict=True)]
        if op.when is not None and not self._holds(op.when):
            return
        name = op.name
        if name in ("HSET", "HSETNX", "HSETIF", "HINCRBY", "HDEL"):
            self._hash_op(name, op.key, args)
        elif name in ("RPUSH", "LPUSH"):
            self._push(op.key, args, right=name == "RPUSH")
        elif name in ("SADD", "SREM"):
            self._set_op(name, op.key, args)
        elif name == "DEL":
            self._drop(op.key)
        elif name in ("PEXPIREAT", "PEXPIRE"):
            at = int(args[0]) + (self.now_ms if name == "PEXPIRE" else 0)
            self._expire(op.key, at)
        else:
            raise UnfoldableOp(f"replay cannot fold op {name} on {op.key}; apply it in _append.lua only")

    def changes(self) -> list[Command]:
        """The commands that write every changed key (delete, rewrite whole, expiry), for `write_all`; from here
        the fold counts them as written, so they must run before a key not held is read back (`_load`) again.

        Only the keys changed since the last `changes` stay held, so a key read back was last changed at least one
        call of `changes` before the last: a caller that writes each call's commands while the next batch folds
        (as `geogate.eventlog.replay.Fold` does) must have finished the one before."""
        commands: list[Command] = []
        for key in self.dirty:
            held = self.held[key]
            if key in self.stored:
                commands.append(("DEL", key))
            if held is None:
                self.stored.discard(key)
            else:
                commands += _writes(key, held)
                self.stored.add(key)
        # only the keys this batch changed stay held: the rest are in Redis and read back if touched again
        self.held = {k: self.held[k] for k in self.dirty}
        self.dirty = set()
        return commands

    def _get(self, key: str) -> Held | None:
        held = self.held.get(key)
        if held is not None and held.expire_at is not None and held.expire_at <= self.now_ms:
            self._drop(key)  # lapsed: Redis would no longer have it
            return None
        return held

    def _make(self, key: str, kind: str, empty: Any) -> Held:
        held = self._get(key)
        if held is None:
            held = self.held[key] = Held(kind, empty)
        elif held.kind != kind:
            raise UnfoldableOp(f"{key} holds a {held.kind}, an op wants a {kind} (WRONGTYPE in Redis)")
        self.dirty.add(key)
        return held

    def _drop(self, key: str) -> None:
        self.held[key] = None
        self.dirty.add(key)

    def _hash_op(self, name: str, key: str, args: list[bytes]) -> None:
        if name == "HDEL":
            held = self._get(key)
            if held is not None:
                for f in args:
                    held.value.pop(f, None)
                self.dirty.add(key)
                if not held.value:
                    self._drop(key)  # Redis deletes an emptied hash, expiry and all
            return
        if name == "HSETIF":
            held = self._get(key)
            current = held.value.get(args[0], b"") if held is not None and held.kind == "hash" else b""
            forbidden = int(args[1])
            if current in args[2 : 2 + forbidden] or len(args) <= 2 + forbidden:
                return
            args = args[2 + forbidden :]
            name = "HSET"
        value = self._make(key, "hash", {}).value
        if name == "HSET":
            value.update(zip(args[::2], args[1::2], strict=True))
        elif name == "HSETNX":
            value.setdefault(args[0], args[1])
        else:  # HINCRBY
            value[args[0]] = str(int(value.get(args[0], b"0")) + int(args[1])).encode()

    def _push(self, key: str, values: list[bytes], *, right: bool) -> None:
        items = self._make(key, "list", []).value
        if right:
            items.extend(values)
        else:
            items[:0] = reversed(values)

    def _set_op(self, name: str, key: str, members: list[bytes]) -> None:
        if name == "SADD":
            self._make(key, "set", set()).value.update(members)
            return
        held = self._get(key)
        if held is not None:
            held.value.difference_update(members)
            self.dirty.add(key)
            if not held.value:
                self._drop(key)

    def _expire(self, key: str, at_ms: int) -> None:
        held = self._get(key)
        if held is None:
            return
        if at_ms <= self.now_ms:
            self._drop(key)  # an expiry in the past deletes the key at once
        else:
            held.expire_at = at_ms
            self.dirty.add(key)

    def _holds(self, e: Expect) -> bool:
        """`holds` of `_append.lua`."""
        held = self._get(e.key)
        fields = held.value if held is not None and held.kind == "hash" else {}
        current = fields.get(e.field.encode(), b"")
        values = [as_bytes(v) for v in e.values]
        if e.kind == "lt":
            return _number(current) < float(values[0])
        if e.kind == "same":
            return current != b"" and current == fields.get(values[0], b"")
        found = current in values
        return not found if e.kind == "not_in" else found

    def _load(self, keys: list[str]) -> None:
        """Read back keys Redis holds that are not held here (pipelined: their types, then content and expiry)."""
        if not keys:
            return
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        kinds = [k.decode() if isinstance(k, bytes) else str(k) for k in pipe.execute()]
        readers = {"hash": pipe.hgetall, "list": lambda k: pipe.lrange(k, 0, -1), "set": pipe.smembers}
        found = [(key, kind) for key, kind in zip(keys, kinds, strict=True) if kind in readers]
        for key, kind in found:
            readers[kind](key)
            pipe.pexpiretime(key)
        replies = pipe.execute()
        for key in keys:
            self.held[key] = None
        for (key, kind), value, expire in zip(found, replies[::2], replies[1::2], strict=True):
            content = {"hash": dict, "list": list, "set": set}[kind](value)
            self.held[key] = Held(kind, content, None if expire < 0 else int(expire))
        for key, kind in zip(keys, kinds, strict=True):
            if kind == "none":
                self.stored.discard(key)
            elif kind not in readers:
                raise UnfoldableOp(f"{key} is a {kind}; replay folds hashes, lists and sets")


def _writes(key: str, held: Held) -> list[Command]:
    """The commands that make `key` hold `held` (from nothing)."""
    if held.kind == "hash":
        name, step, items = "HSET", 2 * FIELDS_PER_COMMAND, [x for pair in held.value.items() for x in pair]
    else:
        name, step, items = _ADD[held.kind], FIELDS_PER_COMMAND, list(held.value)
    commands: list[Command] = [(name, key, *items[i : i + step]) for i in range(0, len(items), step)]
    if held.expire_at is not None:
        commands.append(("PEXPIREAT", key, held.expire_at))
    return commands


_ADD = {"list": "RPUSH", "set": "SADD"}


def _number(raw: bytes) -> float:
    try:
        return float(raw)
    except ValueError:
        return 0.0
