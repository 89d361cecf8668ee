"""Processes that die with their parent (Linux `PR_SET_PDEATHSIG`), without the race that arming it alone leaves.

The kernel sends the parent-death signal only for a death after the child armed it: a parent killed between the fork
and the arming sends nothing, ever, and the child runs on as an orphan. So a child arms it, then checks that its
parent is still the process that forked it (read before the fork); if not, it exits at once.
"""

import ctypes
import functools
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """In a child of `parent` (its pid, read before the fork): get `sig` when `parent` dies, or exit now if it
    already has. No-op off Linux."""
    if not sys.platform.startswith("linux"):
        return
    _prctl()(_PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent:
        os._exit(128 + sig)


def dies_with_this_process(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A `preexec_fn` after which the child gets `sig` when this process dies.

    An orderly stop is `geogate.cli.dev.Children.stop` (SIGTERM, a grace, then SIGKILL); this covers the rest (a
    SIGKILLed bench or `geogate dev`), when nothing is left to follow a SIGTERM with a SIGKILL. A worker gets SIGKILL,
    as if its node died (leases recover its calls; its pool processes die with it, `workers.app`); a service (Redis)
    gets SIGTERM, so that it writes its append-only file out before it exits. Pass it to `subprocess.run` too (wrk,
    pip) so that nothing a bench starts outlives it.
    """
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()
    _prctl()  # resolved here: the child of a threaded parent must not dlopen
    return functools.partial(die_with_parent, parent, sig)


@functools.cache
def _prctl() -> Callable[[int, int], int]:
    return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
