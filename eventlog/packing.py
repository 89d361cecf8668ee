"""Redis commands packed by hiredis in C, for the sync and the asyncio clients alike.

redis-py packs commands in Python on its asyncio connections even when hiredis is installed (redis/redis-py#4176;
its sync connections use hiredis, after a Python pass over the arguments). A `ping`'s `tool.requested` append
carries 55 arguments (the event's fields, the projections' operations, its queue message): on a slow 2-core machine
redis-py packs it in 69 µs on an asyncio connection and in 22 µs on a sync one; `hiredis.pack_command` on the whole
tuple, as here, in 9–12 µs.
"""

from functools import cache
from typing import Any, TypeVar

import hiredis
from redis.asyncio.connection import ConnectionPool as AsyncPool
from redis.connection import ConnectionPool

C = TypeVar("C", bound=type)


class HiredisPacking:
    """A connection mix-in: `pack_command` through `hiredis.pack_command`, else redis-py's own way.

    redis-py's way stays for a command name of several words (`"CONFIG GET"`, which it splits) and for any argument
    hiredis does not take (it takes str, bytes, int and float): redis-py then encodes it or raises its `DataError`.
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        head = args[0]
        if (isinstance(head, str) and " " in head) or (isinstance(head, bytes) and b" " in head):
            return super().pack_command(*args)  # type: ignore[misc]
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            return super().pack_command(*args)  # type: ignore[misc]


@cache
def packed(connection_class: C) -> C:
    """`connection_class` with `HiredisPacking` in front (one subclass per class: TCP, TLS, Unix socket)."""
    return type(connection_class.__name__, (HiredisPacking, connection_class), {})  # type: ignore[return-value]


def pack_with_hiredis(pool: ConnectionPool | AsyncPool) -> None:
    """Make `pool`'s new connections pack with hiredis, whatever connection class its URL chose."""
    if not issubclass(pool.connection_class, HiredisPacking):
        pool.connection_class = packed(pool.connection_class)
