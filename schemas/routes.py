"""Celery's queues and routes (the name Celery gives the function a message runs, `<queue>.run_call`): the only place
they are spelled. The gateway enqueues by these names. In Geogate's code "task" means an MCP task (`gateway/tasks/`)."""

GDAL = "gdal"
SANDBOX = "sandbox"
LLM = "llm"
WORKFLOW = "workflow"

QUEUES: tuple[str, ...] = (GDAL, SANDBOX, LLM, WORKFLOW)


def run_call_route(queue: str) -> str:
    """The task that runs one tool call on `queue` (routed by the glob `<queue>.*`)."""
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; expected one of {', '.join(QUEUES)}")
    return f"{queue}.run_call"


RENDER_TILE = f"{GDAL}.render_tile"
"""The task that renders one XYZ map tile (`schemas.xyz`): a read on the gdal queue that the event log never sees."""
MAP_LAYER = f"{GDAL}.map_layer"
"""The task that reads one layer for the interactive map (`schemas.maplayer`): a read like a tile."""


PRIORITY_STEPS: tuple[int, ...] = (0, 3, 6, 9)
"""The priorities a queue has, one Redis list each; a worker takes from the first non-empty list in this order
(kombu's Redis transport: priority 0 goes first)."""
PRIORITY_SEP = "\x06\x16"
"""kombu's Redis transport keeps priority `n` of queue `q` in list `q<sep>n` (priority 0 in list `q`)."""
CALL_PRIORITY = 0
"""A client's call (and a tiled call's fan-in, a result handler's job): ahead of every tile on its queue."""
TILE_PRIORITY = 9
"""The tiles of the largest tiled calls: taken only when no call and no smaller call's tile waits on their queue, so
one client's thousands of tiles never hold another client's small call behind them."""
SMALL_TILED_CALL, MEDIUM_TILED_CALL = 16, 256
"""Tiles of a call with at most this many go at priority 3, then 6; of larger calls, at `TILE_PRIORITY`."""


def tile_priority(tiles: int) -> int:
    """The priority of the tiles of a call cut into `tiles` tiles (0: not known, the lowest)."""
    if 0 < tiles <= SMALL_TILED_CALL:
        return 3
    if 0 < tiles <= MEDIUM_TILED_CALL:
        return 6
    return TILE_PRIORITY
