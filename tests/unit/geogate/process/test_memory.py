"""`settle_memory`: start-up garbage is freed, and what is alive leaves the collector's full passes."""

import gc
import weakref

from geogate.process.memory import settle_memory


class Node:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_garbage_is_freed_and_the_live_heap_frozen() -> None:
    was_enabled = gc.isenabled()
    gc.disable()  # no automatic pass may free the garbage before settle_memory does
    kept = Node()
    garbage = Node()
    freed = weakref.ref(garbage)
    del garbage
    frozen_before = gc.get_freeze_count()
    try:
        settle_memory()
        assert freed() is None, "unreachable objects were frozen for the life of the process instead of freed"
        assert gc.get_freeze_count() > frozen_before
        assert not any(obj is kept for obj in gc.get_objects()), "a live object is still walked by full collections"
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
