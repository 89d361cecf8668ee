"""A long-running role's start-up objects kept out of the garbage collector's full passes."""

import gc


def settle_memory() -> None:
    """Collect what start-up left as garbage, then move every object still alive (modules, the MCP SDK's, pydantic's
    and Celery's tables) into the permanent generation, where full collections no longer walk it.

    Before, each role's heap was mostly such objects, and a full pass over them held a process for 60-200 ms (more
    at start-up); in a gateway serving calls, one came every few thousand `ping`s (`bench/ab.py`'s stalls). Garbage
    is collected first so that nothing unreachable is frozen for the life of the process.
    """
    gc.collect()
    gc.freeze()
