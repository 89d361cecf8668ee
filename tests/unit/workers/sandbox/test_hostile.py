"""Hostile handlers (issue 5 acceptance): each is contained with a clear code, and the sandbox serves the next call.

Every case runs twice: with all layers (namespaces, rlimits, seccomp, audit hook) and with the audit hook off,
which shows the kernel layers hold on their own.
"""

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from schemas.result_handlers import HandlerLimits, HandlerOutcome
from workers.sandbox import PythonSandbox, SandboxConfig

SECRET = "hunter2-do-not-leak"
SANDBOX_ENV = {"PWD", "LC_CTYPE"}  # set by bwrap's --chdir and by CPython's locale coercion, nothing else
TIGHT = HandlerLimits(cpu_seconds=1, wall_seconds=20, memory_mb=128)
Expect = Callable[[HandlerOutcome], bool]


def code(*codes: str) -> Expect:
    return lambda outcome: outcome.error is not None and outcome.error.code in codes


def failed_quietly(outcome: HandlerOutcome) -> bool:
    """Kernel-only mode: libc calls like system() report failure as a return value instead of raising."""
    return outcome.ok and isinstance(outcome.value, int) and outcome.value != 0


@dataclass(frozen=True)
class Case:
    id: str
    script: str
    layered: Expect
    kernel: Expect | None = None
    limits: HandlerLimits = field(default=TIGHT)

    def expect(self, audit: bool) -> Expect:
        return self.layered if audit or self.kernel is None else self.kernel


CASES = [
    Case("fork_bomb", "import os\nwhile True:\n    os.fork()", code("handler.forbidden")),
    Case("infinite_loop", "while True:\n    pass", code("handler.timeout")),
    Case(
        "sleep_forever",
        "import time\ntime.sleep(3600)",
        code("handler.timeout"),
        limits=TIGHT.model_copy(update={"wall_seconds": 0.5}),
    ),
    Case("memory_bomb_at_once", "x = bytearray(16 * 1024**3)", code("handler.memory_limit")),
    Case("memory_bomb_growing", "a = []\nwhile True:\n    a.append(bytearray(1024**2))", code("handler.memory_limit")),
    Case("socket", "import socket\nsocket.create_connection(('10.0.0.1', 80), timeout=1)", code("handler.forbidden")),
    Case("raw_socket_via_import", "__import__('_socket').socket()", code("handler.forbidden")),
    Case("read_etc_passwd", "open('/etc/passwd').read()", code("handler.forbidden")),
    Case("read_workspace", "open({workspace!r} + '/secret.txt').read()", code("handler.forbidden")),
    Case("list_workspace", "import os\nos.listdir({workspace!r})", code("handler.forbidden")),
    Case("write_file", "open('/usr/lib/pwned', 'w').write('x')", code("handler.forbidden")),
    Case("write_tmp", "open('/tmp/pwned', 'w').write('x')", code("handler.forbidden")),
    Case("subprocess", "import subprocess\nsubprocess.run(['id'])", code("handler.forbidden")),
    Case("os_system", "import os\nos.system('id')", code("handler.forbidden"), failed_quietly),
    Case("os_exec", "import os\nos.execv('/usr/bin/id', ['id'])", code("handler.forbidden")),
    Case(
        "ctypes_libc_system",
        "import ctypes\nctypes.CDLL(None).system(b'id')",
        code("handler.forbidden"),
        failed_quietly,
    ),
    Case("ctypes_segfault", "import ctypes\nctypes.string_at(0)", code("handler.forbidden"), code("handler.crashed")),
    Case("kill_parent", "import os\nos.kill(os.getppid(), 9)", code("handler.forbidden")),
    Case("kill_namespace_init", "import os\nos.kill(1, 9)", code("handler.forbidden")),
    Case("environment", "import os\ndict(os.environ)", lambda o: o.ok and set(o.value) <= SANDBOX_ENV),
    Case(
        "proc_environ",
        "open('/proc/1/environ').read()",
        code("handler.forbidden"),
        lambda o: SECRET not in o.model_dump_json(),
    ),
    Case(
        "subclasses_to_os_system",
        "w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\n"
        "w.__init__.__globals__['system']('id')",
        code("handler.forbidden"),
        failed_quietly,
    ),
    Case(
        "subclasses_to_file_io",
        "seen, todo = [], [().__class__.__base__]\n"
        "while todo:\n"
        "    c = todo.pop()\n"
        "    seen.append(c)\n"
        "    todo.extend(type.__subclasses__(c))\n"
        "f = [c for c in seen if c.__name__ == 'FileIO'][0]\n"
        "f('/etc/shadow').read()",
        code("handler.forbidden"),
    ),
    Case(
        "builtins_import_subprocess", "__builtins__.__import__('subprocess').getoutput('id')", code("handler.forbidden")
    ),
    Case("huge_output", "'x' * 10_000_000", code("handler.output_too_large")),
    Case(
        "forged_frame_on_every_fd",
        "import os, contextlib\nfor fd in range(3, 64):\n    with contextlib.suppress(OSError):\n"
        "        os.write(fd, b'\\xff\\xff\\xff\\xff')",
        code("handler.output_too_large", "handler.crashed"),
    ),
    Case("exit_without_report", "import os\nos._exit(0)", code("handler.crashed")),
    Case("infinite_recursion", "def f():\n    return f()\nf()", code("handler.exception")),
]


@pytest.fixture(scope="module", params=[True, False], ids=["layered", "kernel-only"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[PythonSandbox]:
    os.environ["GEOGATE_TEST_SECRET"] = SECRET  # in the host env before the server starts: must not reach it
    box = PythonSandbox(SandboxConfig(audit_hook=request.param))
    yield box
    box.close()
    os.environ.pop("GEOGATE_TEST_SECRET", None)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "secret.txt").write_text(SECRET)
    root.chmod(0o755)
    (root / "secret.txt").chmod(0o644)
    return root


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_hostile_handler_is_contained_and_the_sandbox_serves_the_next_call(
    sandbox: PythonSandbox, workspace: Path, case: Case
) -> None:
    """Issue 5: contained with a clear error code, no secret leaks, the same server answers the next handler."""
    sandbox.run("None", None)
    server = sandbox.server_pid

    outcome = sandbox.run(case.script.format(workspace=str(workspace)), {"x": 1}, limits=case.limits)

    assert case.expect(sandbox.config.audit_hook)(outcome), outcome
    assert SECRET not in json.dumps(outcome.model_dump(mode="json"))
    assert not Path("/tmp/pwned").exists() and not Path("/usr/lib/pwned").exists()
    assert sandbox.run("tool_output['x'] + 1", {"x": 1}).value == 2
    assert sandbox.server_pid == server, "the server itself must survive every handler"


def test_a_killed_server_is_restarted_for_the_next_call() -> None:
    """The host restarts a sandbox server that died between calls (e.g. killed by an operator or the OOM killer)."""
    box = PythonSandbox()
    try:
        box.run("None", None)
        first = box.server_pid
        assert first is not None
        os.killpg(first, 9)
        os.waitid(os.P_PID, first, os.WEXITED | os.WNOWAIT)  # dead, but left for the sandbox to reap

        assert box.run("40 + 2", None).value == 42
        assert box.server_pid not in (None, first)
    finally:
        box.close()
