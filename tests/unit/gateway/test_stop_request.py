"""`gateway.dev.StopRequest`: how `geogate dev` takes Ctrl-C, SIGTERM and SIGHUP.

Seen before: SIGTERM raised KeyboardInterrupt from the handler, which landed in a weakref callback of the import
system ("Exception ignored in: <function _get_module_lock.<locals>.cb>") and was dropped; `geogate dev` served on.
Each case runs in an interpreter of its own (it sets signal handlers) and prints what it saw; `overdue` prints
"overdue" and exits.
"""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import default_signals

ROOT = Path(__file__).resolve().parents[3]

PRELUDE = """
import os, signal, threading, weakref
import uvicorn
from gateway.dev import StopRequest
def overdue():
    print("overdue", flush=True)
    os._exit(0)
stop = StopRequest(overdue=overdue)
"""


def run(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        preexec_fn=default_signals,
    )
    assert "Exception ignored" not in done.stderr, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_that_lands_in_a_callback_is_not_lost(sig: signal.Signals) -> None:
    script = f"""
class Thing: pass
thing = Thing()
ref = weakref.ref(thing, lambda _: signal.raise_signal({int(sig)}))  # the handler runs inside the callback
del thing
print(stop.requested)
"""
    assert run(script) == ["True"]


def test_a_stop_asked_for_before_the_server_exists_ends_it_once_it_has_started() -> None:
    script = """
signal.raise_signal(signal.SIGTERM)
server = uvicorn.Server(uvicorn.Config(app=None))
print(server.should_exit)
stop.attach(server)
print(server.should_exit)
"""
    assert run(script) == ["False", "True"]


def test_a_stop_asked_for_while_it_serves_ends_the_server() -> None:
    script = """
server = uvicorn.Server(uvicorn.Config(app=None))
stop.attach(server)
print(server.should_exit)
signal.raise_signal(signal.SIGHUP)
print(server.should_exit)
"""
    assert run(script) == ["False", "True"]


def test_a_sighup_ignored_at_the_start_stays_ignored() -> None:
    """`nohup geogate dev`: SIGHUP was ignored before it started, and the terminal closing must not stop it."""
    script = """
signal.signal(signal.SIGHUP, signal.SIG_IGN)
stop = StopRequest(overdue=overdue)
signal.raise_signal(signal.SIGHUP)
print(stop.requested)
signal.raise_signal(signal.SIGTERM)
print(stop.requested)
"""
    assert run(script) == ["False", "True"]


def test_a_second_signal_raises_keyboard_interrupt_at_once() -> None:
    script = """
signal.raise_signal(signal.SIGTERM)
try:
    signal.raise_signal(signal.SIGINT)
except KeyboardInterrupt:
    print("interrupted")
"""
    assert run(script) == ["interrupted"]


@pytest.mark.parametrize(("ended", "seen"), [(False, "overdue"), (True, "went_on")], ids=["hung", "ended"])
def test_a_stop_not_ended_within_its_grace_stops_the_rest_without_the_gateway(ended: bool, seen: str) -> None:
    script = f"""
stop = StopRequest(overdue=overdue, grace_s=0.2)
signal.raise_signal(signal.SIGTERM)
if {ended}:
    stop.ended()  # the server stopped in time: the rest of the stop is run_dev's
    for watch in [t for t in threading.enumerate() if t.name == "geogate-stop-watch"]:
        watch.join()  # the watch has ended, and not through `overdue`
else:
    threading.Event().wait(30)  # a gateway whose shutdown hangs: `overdue` ends it
print("went_on")
"""
    assert run(script) == [seen]
