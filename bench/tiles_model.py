"""The cost model of a tiled call: what `docs/tiles.md` states and `bench/tiles.py` computes, one definition.

A tiled call on `n` worker processes takes

    T(n) = p + S_n(t_1 … t_k) + f + a

`p` planning and fan-out, `t_i` tile i's run, `f` the wait for the fan-in after the last tile, `a` the assembly, all
read off the log of a call whose tiles ran one at a time (one worker process: no tile slowed by another). `S_n` is
the makespan of the tiles handed in row-major order to whichever of the `n` workers is free first (what the queue
does): never less than max(W / n, t_max), never more than W / n + t_max, W = Σ t_i.

Beyond the machines measured, `simulate` adds the two things every worker shares: Redis, one core, spending `r`
seconds of its CPU on each tile call (its appends and its queue message, measured by the bench as Redis' CPU over a
tiled call divided by its tiles), and the shared storage the tiles write to at `B` bytes/s in all (each tile writes
`b` bytes). Both are modelled as single servers taken in turn: a tile waits for a worker, for Redis (`r`), computes
(`t_i`), then waits for the storage (`b / B`); its worker is free after the write. Adding workers stops helping where
one of the shared servers is busy all the time: at about n* = t / max(r, b / B) workers for tiles of `t` seconds.
"""

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TiledCall:
    """Where a tiled call's time went, in seconds, from a run whose tiles ran one at a time."""

    plan_s: float
    tiles_s: tuple[float, ...]
    """Each tile's run, in the order the tiles were queued (row-major)."""
    fan_in_wait_s: float
    assembly_s: float
    tile_bytes: float = 0.0
    """Bytes one tile writes (the staging file's size over the tiles)."""
    redis_s_per_tile: float = 0.0
    """Seconds of Redis' CPU one tile call costs."""

    @property
    def serial_s(self) -> float:
        return self.plan_s + self.fan_in_wait_s + self.assembly_s

    @property
    def work_s(self) -> float:
        return sum(self.tiles_s)


def makespan(durations: Iterable[float], workers: int) -> float:
    """`S_n`: jobs of `durations`, in order, each to the worker free first; when the last one ends."""
    free = [0.0] * max(1, workers)
    for duration in durations:
        heapq.heappush(free, heapq.heappop(free) + duration)
    return max(free)


def predict(call: TiledCall, workers: int) -> float:
    """`T(n)` of the docs' formula: the serial parts plus the tiles' makespan on `workers` processes."""
    return call.serial_s + makespan(call.tiles_s, workers)


def simulate(call: TiledCall, workers: int, storage_bytes_s: float | None = None) -> float:
    """`T(n)` with the shared Redis core and the shared storage (None: storage never waits), each serving in the order
    work reaches it: an event simulation of the tiles on `workers` processes."""
    write_s = call.tile_bytes / storage_bytes_s if storage_bytes_s else 0.0
    tiles = call.tiles_s
    events = [(0.0, n, "free") for n in range(min(max(1, workers), len(tiles)))]  # (time, order, what happens)
    taken, order, redis_free, storage_free, end = 0, len(events), 0.0, 0.0, 0.0
    while events:
        now, _, kind = heapq.heappop(events)
        order += 1
        if kind == "computed":
            storage_free = max(now, storage_free) + write_s
            heapq.heappush(events, (storage_free, order, "free"))
            continue
        end = max(end, now)
        if taken < len(tiles):  # a worker is free: it takes the next tile, which Redis serves first
            redis_free = max(now, redis_free) + call.redis_s_per_tile
            heapq.heappush(events, (redis_free + tiles[taken], order, "computed"))
            taken += 1
    return call.serial_s + end


def knee(call: TiledCall, storage_bytes_s: float | None = None, within: float = 0.05, most: int = 4096) -> int:
    """The fewest workers whose `simulate` time is within `within` of the time with one worker per tile."""
    best = simulate(call, min(most, len(call.tiles_s)), storage_bytes_s)
    for workers in _doubling(most):
        if simulate(call, workers, storage_bytes_s) <= best * (1 + within):
            return workers
    return most


def _doubling(most: int) -> Sequence[int]:
    out, n = [], 1
    while n < most:
        out.append(n)
        n *= 2
    return [*out, most]


def scaled(call: TiledCall, tiles: int) -> TiledCall:
    """The same call on a raster with `tiles` tiles of the same kind (its tiles' runs repeated in turn)."""
    runs = tuple(call.tiles_s[i % len(call.tiles_s)] for i in range(tiles))
    return TiledCall(
        call.plan_s * tiles / len(call.tiles_s), runs, call.fan_in_wait_s, call.assembly_s, call.tile_bytes,
        call.redis_s_per_tile,
    )  # fmt: skip
