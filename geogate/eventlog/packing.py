"""Redis commands packed by hiredis in C, for the sync and the asyncio clients alike.

redis-py packs commands in Python on its asyncio connections even when hiredis is installed, and on its sync ones
makes a Python pass over the arguments before hiredis packs them. An append carries dozens of arguments (the event's
fields, the projections' operations, its queue message); `hiredis.pack_command` on the whole tuple, as here, packs
them in one call in C.

The two clients pack in different places, and redis-py lets each be replaced through its public interface:
- a sync connection packs with the packer object it is given as `command_packer` (a connection argument, passed
  through the client's and the pool's keyword arguments; `send_command` and pipelines both use it): the sync
  clients are given a `HiredisPacker`;
- an asyncio connection takes no packer: it packs in its `pack_command` method, so its pool is given a connection
  class (`connection_class`, a pool attribute) whose `pack_command` packs with hiredis (`HiredisPacking`).
"""

from functools import cache
from typing import Any, TypeVar

import hiredis
from redis.asyncio.connection import ConnectionPool as AsyncPool
from redis.connection import HiredisRespSerializer

C = TypeVar("C", bound=type)


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
    """A sync connection's `command_packer`: hiredis first, else redis-py's own hiredis serializer (the packer it
    chooses itself when hiredis is installed), which splits a command name of several words and raises its
    `DataError` for what hiredis does not take."""

    def __init__(self) -> None:
        self.fallback = HiredisRespSerializer()

    def pack(self, *args: Any) -> list[bytes]:
        return hiredis_packed(args) or self.fallback.pack(*args)


def sync_packing() -> dict[str, Any]:
    """The client (or pool) keyword arguments that make a sync client's connections pack with hiredis."""
    return {"command_packer": HiredisPacker()}


class HiredisPacking:
    """An asyncio connection mix-in: commands packed through `hiredis.pack_command`, else redis-py's own way."""

    def pack_command(self, *args: Any) -> list[bytes]:
        return hiredis_packed(args) or super().pack_command(*args)  # type: ignore[misc]


@cache
def packed(connection_class: C) -> C:
    """`connection_class` with `HiredisPacking` in front (one subclass per class: TCP, TLS, Unix socket)."""
    return type(connection_class.__name__, (HiredisPacking, connection_class), {})  # type: ignore[return-value]


def pack_with_hiredis(pool: AsyncPool) -> None:
    """Make an asyncio `pool`'s new connections pack with hiredis, whatever connection class its URL chose."""
    if not issubclass(pool.connection_class, HiredisPacking):
        pool.connection_class = packed(pool.connection_class)
