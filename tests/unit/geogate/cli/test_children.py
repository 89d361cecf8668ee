"""`Children`: what `geogate dev` and the benches start ends with them, in order when they stop, by the kernel when
they are killed outright (Linux parent-death signal)."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from geogate.cli.dev import Children
from tests.processes import still_running, tree
from tests.support import wait_for

ROOT = Path(__file__).resolve().parents[4]

# A parent that starts one worker-like child and one service-like child that records the signal it gets.
PARENT = """
import sys, time
from geogate.cli.dev import Children
children = Children()
children.spawn([sys.executable, "-c", "import time; time.sleep(600)"], {})
children.spawn([sys.executable, "-c", sys.argv[1], sys.argv[2]], {}, service=True)
print("ready", flush=True)
time.sleep(600)
"""
# Records which signal ended it, once it is ready to receive one.
SERVICE = """
import os, signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *_: (out.write_text("SIGTERM"), os._exit(0)))
Path(str(out) + ".ready").touch()
time.sleep(600)
"""


def test_a_parent_killed_outright_takes_its_workers_down_and_lets_its_services_stop_cleanly(tmp_path: Path) -> None:
    record = tmp_path / "service-got"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, SERVICE, str(record)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        wait_for(lambda: Path(f"{record}.ready").exists(), what="the service's signal handler")
        started = tree(parent.pid)
        assert len(started) == 2, started

        parent.kill()
        parent.wait(timeout=10)
        wait_for(lambda: not still_running(started), what="both children to end")
    finally:
        if parent.poll() is None:
            parent.kill()
    assert record.read_text() == "SIGTERM"  # Redis writes its append-only file out; a worker just dies


def test_a_stop_ends_the_workers_before_the_services_they_need(tmp_path: Path) -> None:
    record, children = tmp_path / "worker-alive-at-service-stop", Children()
    worker = children.spawn([sys.executable, "-c", "import time; time.sleep(600)"], {})
    checks = f"""
import os, signal, time
from pathlib import Path
def stopped(*_):
    try:
        os.kill({worker.pid}, 0)
        alive = "yes"
    except ProcessLookupError:
        alive = "no"
    Path({str(record)!r}).write_text(alive)
    os._exit(0)
signal.signal(signal.SIGTERM, stopped)
Path({str(record)!r} + ".ready").touch()
time.sleep(600)
"""
    service = children.spawn([sys.executable, "-c", checks], {}, service=True)
    wait_for(lambda: Path(f"{record}.ready").exists(), what="the service's signal handler")

    children.stop()

    assert record.read_text() == "no"
    assert worker.returncode == -signal.SIGTERM and service.returncode == 0


def test_children_are_started_from_the_main_thread_only() -> None:
    """The parent-death signal follows the thread that forked: a child started elsewhere dies with that thread."""
    children, errors = Children(), []

    def start() -> None:
        try:
            children.spawn([sys.executable, "-c", "pass"], dict(os.environ))
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()

    assert len(errors) == 1 and "main thread" in str(errors[0])
    assert children.procs == []


def test_a_front_that_ignores_its_stop_is_killed_after_its_own_grace(tmp_path: Path) -> None:
    """`geogate dev`'s gateway stops first, within `STOP_GRACE_S`; one whose shutdown hangs is killed, and the rest
    stop after it."""
    ready, children = tmp_path / "ready", Children()
    hangs = "import signal, sys, time, pathlib; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    hangs += "pathlib.Path(sys.argv[1]).touch(); time.sleep(600)"
    front = children.spawn([sys.executable, "-c", hangs, str(ready)], {}, front=True)
    worker = children.spawn([sys.executable, "-c", "import time; time.sleep(600)"], {})
    wait_for(ready.exists, what="the front's signal handler")
    assert children.stop(grace_s=5.0, front_grace_s=0.3) is False
    assert front.returncode == -signal.SIGKILL
    assert worker.returncode == -signal.SIGTERM
