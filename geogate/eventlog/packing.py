"""Redis commands packed by hiredis in C, for the sync and the asyncio clients alike.

redis-py packs commands in Python on its asyncio connections even when hiredis is installed (redis/redis-py#4176;
its sync connections use hiredis, after a Python pass over the arguments). A `ping`'s `tool.requested` append
carries 55 arguments (the event's fields, the projections' operations, its queue message): on a slow 2-core machine
redis-py packs it in 69 µs on an asyncio connection and in 22 µs on a sync one; `hiredis.pack_command` on the whole
tuple, as here, in 9–12 µs.

The two clients pack in different places: an asyncio connection through its `pack_command`, a sync one through the
packer object it builds at construction (`_command_packer`, used by `send_command` and by pipelines alike; its
`pack_command` is only a wrapper). Both are replaced here.
"""

from functools import cache
from typing import Any, Protocol, TypeVar

import hiredis
from redis.asyncio.connection import ConnectionPool as AsyncPool
from redis.connection import ConnectionPool

C = TypeVar("C", bound=type)


class Packer(Protocol):
    def pack(self, *args: Any) -> list[bytes]: ...


def hiredis_packed(args: tuple[Any, ...]) -> list[bytes] | None:
    """The command in one piece, packed by hiredis; None when redis-py must pack it: a command name of several words
    (`"CONFIG GET"`, which it splits) or an argument hiredis does not take (it takes str, bytes, int and float), which
    redis-py then encodes or refuses with its `DataError`."""
    head = args[0]
    if (isinstance(head, str) and " " in head) or (isinstance(head, bytes) and b" " in head):
        return None
    try:
        return [hiredis.pack_command(args)]
    except TypeError:
        return None


class HiredisPacker:
    """A sync connection's packer: hiredis first, else the packer redis-py chose."""

    def __init__(self, fallback: Packer) -> None:
        self.fallback = fallback

    def pack(self, *args: Any) -> list[bytes]:
        return hiredis_packed(args) or self.fallback.pack(*args)


class HiredisPacking:
    """A connection mix-in: commands packed through `hiredis.pack_command`, else redis-py's own way."""

    def pack_command(self, *args: Any) -> list[bytes]:
        return hiredis_packed(args) or super().pack_command(*args)  # type: ignore[misc]

    def _construct_command_packer(self, packer: Packer | None) -> Packer:
        """Sync connections only: what `send_command`, `pack_command` and pipelines pack with."""
        return HiredisPacker(super()._construct_command_packer(packer))  # type: ignore[misc]


@cache
def packed(connection_class: C) -> C:
    """`connection_class` with `HiredisPacking` in front (one subclass per class: TCP, TLS, Unix socket)."""
    return type(connection_class.__name__, (HiredisPacking, connection_class), {})  # type: ignore[return-value]


def pack_with_hiredis(pool: ConnectionPool | AsyncPool) -> None:
    """Make `pool`'s new connections pack with hiredis, whatever connection class its URL chose."""
    if not issubclass(pool.connection_class, HiredisPacking):
        pool.connection_class = packed(pool.connection_class)
