"""The XYZ tile cache in Redis: rendered PNGs by digest (path, file version, z/x/y, style), bounded by a TTL and by
a count of the most recently used tiles."""

import time
from dataclasses import dataclass

import redis.asyncio as aredis

from geogate.calls.keys import Keys

CACHE_TTL_S = 3600
"""A cached tile expires an hour after its last use."""
CACHE_MAX_TILES = 4096
"""At most this many tiles are kept (at a typical 10–60 KB, under 250 MB); the least recently used go first."""


@dataclass(frozen=True)
class TileCache:
    """Get and put tiles; an empty value is a tile outside its raster, cached like any other."""

    client: aredis.Redis
    keys: Keys
    ttl_s: int = CACHE_TTL_S
    max_tiles: int = CACHE_MAX_TILES

    async def get(self, digest: str) -> bytes | None:
        """The tile's PNG (b"" for an empty tile), None when not cached; a hit counts as a use."""
        key = self.keys.xyz_tile(digest)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(key)
            pipe.expire(key, self.ttl_s)
            value, _ = await pipe.execute()
        if value is None:
            return None
        await self.client.zadd(self.keys.xyz_index(), {digest: time.time()})
        return bytes(value)

    async def put(self, digest: str, png: bytes) -> None:
        """Keep a rendered tile, then drop the least recently used beyond `max_tiles`."""
        index = self.keys.xyz_index()
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.set(self.keys.xyz_tile(digest), png, ex=self.ttl_s)
            pipe.zadd(index, {digest: time.time()})
            pipe.zcard(index)
            *_, count = await pipe.execute()
        if count > self.max_tiles:
            await self._evict(count - self.max_tiles)

    async def _evict(self, excess: int) -> None:
        oldest = await self.client.zpopmin(self.keys.xyz_index(), excess)
        if oldest:
            await self.client.delete(*(self.keys.xyz_tile(_text(digest)) for digest, _ in oldest))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
