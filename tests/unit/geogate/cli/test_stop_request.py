"""`geogate.cli.dev.StopRequest`: how `geogate dev` takes Ctrl-C, SIGTERM and SIGHUP.

Seen before: SIGTERM raised KeyboardInterrupt from the handler, which landed in a weakref callback of the import
system ("Exception ignored in: <function _get_module_lock.<locals>.cb>") and was dropped; `geogate dev` served on.
Each case runs in an interpreter of its own (it sets signal handlers) and prints what it saw.
"""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import default_signals

ROOT = Path(__file__).resolve().parents[4]

PRELUDE = """
import os, signal, subprocess, sys, threading, weakref
from geogate.cli.dev import StopRequest
stop = StopRequest()
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


def test_a_stop_ends_the_wait_for_a_gateway_that_runs_on() -> None:
    """The gateway is stopped after the wait, with its grace (`Children.stop`), not by the wait itself."""
    script = """
gateway = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
print(stop.wait(gateway), gateway.poll())
gateway.kill()
"""
    assert run(script) == ["None", "None"]


def test_a_gateway_that_ends_by_itself_ends_the_wait_with_its_status() -> None:
    """Its port in use, say: `geogate dev` then stops the rest and exits with that status."""
    script = """
gateway = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
print(stop.wait(gateway), stop.requested)
"""
    assert run(script) == ["3", "False"]


def test_a_sighup_ignored_at_the_start_stays_ignored() -> None:
    """`nohup geogate dev`: SIGHUP was ignored before it started, and the terminal closing must not stop it."""
    script = """
signal.signal(signal.SIGHUP, signal.SIG_IGN)
stop = StopRequest()
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
