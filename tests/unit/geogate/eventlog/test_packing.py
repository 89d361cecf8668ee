"""Commands packed by hiredis (`geogate.eventlog.packing`): the same bytes as redis-py's packing, on both clients."""

import asyncio

import pytest
import redis
import redis.asyncio as aredis
from redis.asyncio.connection import Connection as AsyncConnection
from redis.asyncio.connection import UnixDomainSocketConnection as AsyncUnixConnection
from redis.connection import Connection, HiredisRespSerializer, PythonRespSerializer

from geogate.calls.store import AsyncEventStore
from geogate.eventlog.packing import HiredisPacker, HiredisPacking, pack_with_hiredis, packed
from geogate.eventlog.store import async_client, sync_client
from geogate.settings import Settings

ARGS = ("EVALSHA", "3a3b", 2, "stream", "dédupe", b"\x93\xa5bytes\x00", -7, 2**70, 0.1, 1e20, 1 / 3, "")


def python_packing(*args: object) -> bytes:
    return b"".join(PythonRespSerializer(6000, Connection().encoder.encode).pack(*args))


def packing(connection_class: type) -> Connection | AsyncConnection:
    """A connection packing as the store's clients make theirs pack: a sync one given the packer, an asyncio one
    of the packing class."""
    return Connection(command_packer=HiredisPacker()) if connection_class is Connection else packed(connection_class)()


@pytest.mark.parametrize("connection_class", [Connection, AsyncConnection])
def test_a_command_is_packed_as_redis_py_packs_it_but_in_one_piece(connection_class: type) -> None:
    connection = packing(connection_class)
    assert b"".join(connection.pack_command(*ARGS)) == python_packing(*ARGS)
    big = ("SET", "key", b"x" * 10_000)  # redis-py's Python packing sends a value this big as a piece of its own
    assert len(AsyncConnection().pack_command(*big)) > 1
    assert connection.pack_command(*big) == [python_packing(*big)]


@pytest.mark.parametrize("connection_class", [Connection, AsyncConnection])
def test_what_hiredis_does_not_take_goes_redis_pys_way(connection_class: type) -> None:
    connection = packing(connection_class)
    assert connection.pack_command("CONFIG GET", "maxmemory") == connection_class().pack_command(
        "CONFIG GET", "maxmemory"
    )
    for bad in (None, True):  # redis-py's error, whichever way it packs (its sync connections use hiredis too)
        with pytest.raises(redis.DataError):
            connection.pack_command("SET", "key", bad)


def test_the_clients_pack_with_hiredis_and_talk_to_a_real_redis(redis_url: str) -> None:
    client = sync_client(redis_url)
    assert isinstance(client.connection_pool.connection_kwargs["command_packer"], HiredisPacker)
    assert client.eval("return ARGV", 0, *ARGS[3:]) == [b"stream", "dédupe".encode(), *python_values()]
    assert client.config_get("maxmemory") == {"maxmemory": "0"}

    async def round_trip() -> tuple[list[bytes], list[bytes]]:
        one, store = async_client(redis_url), AsyncEventStore.from_settings(Settings(redis_url=redis_url))
        for c in (one, store.redis):
            assert issubclass(c.connection_pool.connection_class, HiredisPacking)
        try:
            return await one.eval("return ARGV", 0, *ARGS[3:]), await store.redis.eval("return ARGV", 0, *ARGS[3:])
        finally:
            await one.aclose()
            await store.redis.aclose()

    first, second = asyncio.run(round_trip())
    assert first == second == [b"stream", "dédupe".encode(), *python_values()]


def test_the_sync_client_sends_and_pipelines_with_hiredis(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync connection packs in `send_command` and in pipelines through its packer object, not `pack_command`:
    redis-py's own packer (a Python pass over the arguments) runs only for what hiredis does not take."""
    slow: list[tuple[object, ...]] = []
    own = HiredisRespSerializer.pack

    def counted(self: HiredisRespSerializer, *args: object) -> list[bytes]:
        slow.append(args)
        return own(self, *args)

    monkeypatch.setattr(HiredisRespSerializer, "pack", counted)
    client = sync_client(redis_url)
    assert client.eval("return ARGV", 0, *ARGS[3:]) == [b"stream", "dédupe".encode(), *python_values()]
    with client.pipeline() as pipe:
        assert pipe.set("packing:k", b"v").get("packing:k").delete("packing:k").execute() == [True, b"v", 1]
    assert slow == []
    assert client.config_get("maxmemory") == {"maxmemory": "0"}
    assert slow == [("CONFIG GET", "maxmemory")]


def python_values() -> list[bytes]:
    return [b"\x93\xa5bytes\x00", b"-7", str(2**70).encode(), b"0.1", b"1e+20", repr(1 / 3).encode(), b""]


def test_a_pool_keeps_the_connection_class_its_url_chose() -> None:
    pool = aredis.ConnectionPool.from_url("unix:///tmp/redis.sock")
    pack_with_hiredis(pool)
    pack_with_hiredis(pool)
    assert issubclass(pool.connection_class, AsyncUnixConnection)
    assert pool.connection_class.__mro__[1:3] == (HiredisPacking, AsyncUnixConnection)
