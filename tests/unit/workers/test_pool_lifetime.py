"""`workers.app.pool_processes_die_with_the_node`: what a pool process does at `worker_process_init`.

Each case runs in a fresh interpreter of its own (it forks, and one case makes itself a child subreaper), which prints
what it saw. The whole node killed as its pool forks is tests/integration/test_no_orphans.py.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PRELUDE = """
import ctypes, os, signal, time
from celery.signals import worker_process_init
from workers.app import pool_processes_die_with_the_node
"""


def run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_the_solo_pool_sends_it_in_the_node_itself_which_keeps_running() -> None:
    script = """
pool_processes_die_with_the_node()
worker_process_init.send(sender="node")
print("running")
"""
    assert run(script) == "running"


def test_a_pool_process_whose_node_is_alive_goes_on() -> None:
    script = """
pool_processes_die_with_the_node()
kid = os.fork()
if kid == 0:
    worker_process_init.send(sender="pool")
    os._exit(7)
print(os.waitstatus_to_exitcode(os.waitpid(kid, 0)[1]))
"""
    assert run(script) == "7"


def test_a_pool_process_whose_node_died_before_the_signal_was_armed_exits() -> None:
    # this interpreter stands in for the machine's init: a subreaper, so the orphan comes to it and it can read how
    # the orphan ended. The node registers the check, forks its pool process, and dies before the process gets to
    # `worker_process_init`.
    script = """
ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
reaper = os.getpid()
node = os.fork()
if node == 0:
    pool_processes_die_with_the_node()
    pool = os.fork()
    if pool == 0:
        while os.getppid() != reaper:  # until the node has died and this process was handed on
            time.sleep(0.001)
        worker_process_init.send(sender="pool")
        os._exit(0)
    os._exit(0)
os.waitpid(node, 0)
pid, status = os.wait()
print(os.waitstatus_to_exitcode(status))
"""
    assert run(script) == str(128 + 9)
