"""Python handler semantics (seed 003): injected `tool_output`, last expression or `result`, coded failures."""

import os
from collections.abc import Iterator

import pytest

from schemas.result_handlers import HandlerLimits, ResultHandler
from workers.sandbox import PythonSandbox, run_handler


@pytest.fixture(scope="module")
def sandbox() -> Iterator[PythonSandbox]:
    box = PythonSandbox()
    yield box
    box.close()


def test_seed_example_reduces_a_diff_to_three_counts(sandbox: PythonSandbox) -> None:
    """The seed's own handler, as a list of lines, over text output."""
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n+new\n-old\n+more\ndiff --git a/y b/y\n+y\n"
    script = [
        "summary = {'files_changed': 0, 'insertions': 0, 'deletions': 0}",
        "for line in tool_output.split('\\n'):",
        "    if line.startswith('---') or line.startswith('+++'):",
        "        continue",
        "    if line.startswith('diff --git'):",
        "        summary['files_changed'] += 1",
        "    elif line.startswith('+'):",
        "        summary['insertions'] += 1",
        "    elif line.startswith('-'):",
        "        summary['deletions'] += 1",
        "summary",
    ]
    outcome = run_handler(ResultHandler(script=script), diff, sandbox=sandbox)

    assert outcome.value == {"files_changed": 2, "insertions": 3, "deletions": 1}


def test_fifty_band_stats_shrink_to_three_fields_per_band(sandbox: PythonSandbox) -> None:
    """Issue 5 acceptance shape: keep three fields of raster_stats for 50 bands; far fewer bytes come back."""
    stats = {"bands": [{"band": i, "min": 0, "max": 255, "mean": i + 0.5, "std": 1.0, "histogram": list(range(256))}
                       for i in range(1, 51)]}  # fmt: skip
    outcome = sandbox.run("[{k: b[k] for k in ('band', 'mean', 'std')} for b in tool_output['bands']]", stats)

    assert outcome.value == [{"band": i, "mean": i + 0.5, "std": 1.0} for i in range(1, 51)]
    assert len(str(outcome.value)) * 20 < len(str(stats))


def test_result_variable_is_the_value_when_the_script_ends_with_a_statement(sandbox: PythonSandbox) -> None:
    assert sandbox.run("result = len(tool_output)\nfor _ in range(2):\n    pass", "abc").value == 3


def test_result_variable_wins_over_a_trailing_none_expression(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("result = {'n': 1}\nprint(result)", None)

    assert outcome.value == {"n": 1}
    assert outcome.stdout == "{'n': 1}\n"


def test_syntax_error_reports_its_line(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("x = 1\ny = (\nz = 3", None)

    assert outcome.error is not None and outcome.error.code == "handler.syntax_error"
    assert outcome.error.line == 2


def test_exception_reports_type_and_line(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("a = 1\nb = tool_output['missing']", {})

    assert outcome.error is not None
    assert (outcome.error.code, outcome.error.exc_type, outcome.error.line) == ("handler.exception", "KeyError", 2)


def test_result_that_is_not_json_is_a_clear_error(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("{1, 2}", None)

    assert outcome.error is not None and outcome.error.code == "handler.not_json"


def test_script_without_a_value_says_so(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("x = 1", None)

    assert outcome.error is not None and outcome.error.code == "handler.no_result"


def test_stdout_is_capped_and_the_rest_is_counted(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run(
        "for _ in range(1000):\n    print('x' * 99)\n1", None, limits=HandlerLimits(max_stdout_bytes=100)
    )

    assert outcome.value == 1
    assert outcome.stdout.startswith("x" * 99 + "\n") and "99900 more characters dropped" in outcome.stdout


def test_preloaded_stdlib_modules_are_importable(sandbox: PythonSandbox) -> None:
    script = "import json, re, statistics, collections\nstatistics.mean(json.loads(tool_output))"

    assert sandbox.run(script, "[1, 2, 3]").value == 2


def test_lazily_imported_stdlib_module_still_loads(sandbox: PythonSandbox) -> None:
    assert sandbox.run("import colorsys\ncolorsys.rgb_to_hsv(1, 0, 0)", None).value == [0.0, 1.0, 1.0]


def test_outcome_reports_the_isolation_level_in_force(sandbox: PythonSandbox) -> None:
    outcome = sandbox.run("1", None)

    assert outcome.isolation == sandbox.isolation == "bwrap"
    assert outcome.seccomp is True


def test_each_run_starts_from_fresh_globals(sandbox: PythonSandbox) -> None:
    sandbox.run("import json\njson.leak = 1\nleak = 2", None)

    assert sandbox.run("import json\n[hasattr(json, 'leak'), 'leak' in globals()]", None).value == [False, False]


def test_a_forked_worker_process_gets_its_own_server(sandbox: PythonSandbox) -> None:
    """Celery prefork: a child inherits the parent's sandbox object and must not share the parent's server."""
    sandbox.run("1", None)
    parent_server = sandbox.server_pid
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child
        ok = sandbox.run("6 * 7", None).value == 42 and sandbox.server_pid not in (None, parent_server)
        os.write(write_fd, b"1" if ok else b"0")
        sandbox.close()
        os._exit(0)
    os.close(write_fd)
    verdict = os.read(read_fd, 1)
    os.waitpid(pid, 0)

    assert verdict == b"1"
    assert sandbox.server_pid == parent_server and sandbox.run("2", None).value == 2


def test_the_hosts_own_work_runs_while_the_handler_runs_and_its_failure_leaves_a_working_sandbox(
    sandbox: PythonSandbox,
) -> None:
    """`meanwhile` is called once, before the run's reply is returned; if it raises, the run's reply is never read
    and the next run still gets its own answer, not the abandoned one."""
    order: list[str] = []
    doubling = ResultHandler(script="tool_output * 2")

    outcome = run_handler(doubling, 21, sandbox=sandbox, meanwhile=lambda: order.append("host"))
    order.append("reply")
    assert (outcome.value, order) == (42, ["host", "reply"])

    def fails() -> None:
        raise ConnectionError("redis went away")

    with pytest.raises(ConnectionError):
        run_handler(ResultHandler(script="tool_output + 1"), 1, sandbox=sandbox, meanwhile=fails)
    assert run_handler(ResultHandler(script="tool_output + 1"), 10, sandbox=sandbox).value == 11
