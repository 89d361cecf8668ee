"""`geogate dev`: a private Redis, worker processes and the gateway as children of one command; Ctrl-C stops all."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from geogate.cli.dev_checks import check_can_start, with_default_workspace
from geogate.cli.dev_user import WorkerUser, worker_user
from geogate.cli.local import LocalRun, forget, record
from geogate.eventlog.append import SCRIPT
from geogate.objects import resolved_workspaces
from geogate.process.lifetime import dies_with_this_process
from geogate.settings import Settings
from schemas import routes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Children:
    """Child processes, each in its own process group so that a stop reaches their own children too."""

    front: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """What stops first, with a grace of its own (the gateway, which answers its clients while it stops)."""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    services: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """What the other children need while they stop (Redis): stopped after them."""

    def __post_init__(self) -> None:
        stop_on_signals()

    def spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        log: Path | None = None,
        *,
        service: bool = False,
        front: bool = False,
        cwd: Path | None = None,
        user: WorkerUser | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start a child in its own process group that dies with this process, however this process ends.

        Only from the main thread: the kernel's parent-death signal follows the thread that forked, so a child
        started from another thread would die when that thread ends. `cwd`: its working directory (default ours);
        `user`: who it runs as (default ours), with no supplementary group.
        """
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "Children.spawn runs on the main thread only: a child dies with the thread that forked it"
            )
        out = open(log, "ab") if log else None  # noqa: SIM115 - closed below, once the child has its copy
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
            start_new_session=True,
            preexec_fn=dies_with_this_process(signal.SIGTERM if service else signal.SIGKILL),  # after the uid change
            **({"user": user.uid, "group": user.gid, "extra_groups": []} if user else {}),
        )
        if out:
            out.close()  # the child holds its own copy
        (self.services if service else self.front if front else self.procs).append(proc)
        return proc

    def stop(self, grace_s: float = 10.0, front_grace_s: float | None = None) -> bool:
        """SIGTERM every group, wait up to `grace_s`, then SIGKILL what is left: no orphans.

        The front first (within `front_grace_s`), then workers, services last: a worker's warm shutdown gives up its
        lease in Redis, and with Redis gone it would retry its way through the whole grace period. False when the
        front had to be killed.
        """
        in_time = _stop_groups(self.front, grace_s if front_grace_s is None else front_grace_s)
        for tier in (self.procs, self.services):
            _stop_groups(tier, grace_s)
        return in_time


def _stop_groups(procs: list[subprocess.Popen[bytes]], grace_s: float) -> bool:
    """Stop `procs` (SIGTERM, up to `grace_s`, then SIGKILL); True when each ended within the grace."""
    for proc in reversed(procs):
        _signal_group(proc, signal.SIGTERM)
    deadline, in_time = time.monotonic() + grace_s, True
    for proc in reversed(procs):
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            in_time = False
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
    return in_time


def stop_on_signals() -> None:
    """Turn SIGTERM and SIGHUP into `SystemExit` where nothing else handles them, so that `finally` blocks stop
    the children (a bench stopped with `kill` or a closed terminal). Only the main thread can set handlers."""

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, leave)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def start_redis(settings: Settings, children: Children) -> str:
    """A private redis-server on a free port with its data in `data_dir/redis`; fakeredis when none is installed."""
    port, data_dir = free_port(), settings.data_dir
    binary = shutil.which("redis-server")
    if binary is None:
        return _start_fakeredis(port)
    store = data_dir / "redis"
    store.mkdir(parents=True, exist_ok=True)
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(store.resolve()),
        "--appendonly",
        "yes",
        "--appendfsync",
        settings.redis_appendfsync,
        "--save",
        "",
        "--maxmemory-policy",
        "noeviction",
        "--logfile",
        str((data_dir / "redis.log").resolve()),
    ]
    children.spawn(argv, dict(os.environ), service=True)
    url = f"redis://127.0.0.1:{port}/0"
    _wait_for_redis(url)
    return url


def _start_fakeredis(port: int) -> str:
    from fakeredis import TcpFakeServer

    server = TcpFakeServer(("127.0.0.1", port), server_type="redis")
    threading.Thread(target=server.serve_forever, daemon=True, name="fakeredis").start()
    print("redis-server not found: using fakeredis (slow; fine for trying things out)", file=sys.stderr)
    url = f"redis://127.0.0.1:{port}/0"
    # fakeredis' TCP server drops the connection after any error reply, NOSCRIPT included, which races the client's
    # reload of the script: load it once here, so no client ever meets NOSCRIPT.
    _wait_for_redis(url)
    redis.Redis.from_url(url).script_load(SCRIPT)
    return url


def _wait_for_redis(url: str, timeout_s: float = 10.0) -> None:
    client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    retrying = Retrying(
        retry=retry_if_exception_type((redis.ConnectionError, redis.TimeoutError)),  # not up yet, or loading a log
        stop=stop_after_delay(timeout_s),
        wait=wait_fixed(0.05),
        reraise=True,
    )
    try:
        retrying(client.ping)
    except (redis.ConnectionError, redis.TimeoutError):
        raise SystemExit(f"redis at {url} did not start; see redis.log in GEOGATE_DATA_DIR") from None


def client_config(settings: Settings, redis_url: str) -> str:
    """Ready-to-paste MCP client configuration: the HTTP endpoint and the stdio command for desktop hosts."""
    http = {"mcpServers": {"geogate": {"url": f"http://{settings.host}:{settings.port}/mcp"}}}
    script = Path(sys.executable).parent / "geogate"
    command, args = (str(script), []) if script.exists() else (sys.executable, ["-m", "geogate.cli"])
    env = {"REDIS_URL": redis_url, "GEOGATE_WORKSPACES": ":".join(resolved_workspaces(settings.workspaces))}
    stdio = {"mcpServers": {"geogate": {"command": command, "args": [*args, "gateway", "--stdio"], "env": env}}}
    return f"Streamable HTTP:\n{json.dumps(http, indent=2)}\nstdio (desktop hosts):\n{json.dumps(stdio, indent=2)}"


def worker_pools(workers: int) -> list[tuple[str, list[str]]]:
    """The local worker pools: jobs that wait on other jobs never share a pool with the jobs they wait for.

    `ask` (llm) and result handlers (sandbox) call other tools and wait for them; on a shared pool, a few of them
    could hold every process while their own calls queue behind them.
    """
    gdal = [(f"gdal{n}", ["--queues", f"{routes.GDAL},{routes.WORKFLOW}"]) for n in range(workers)]
    return [
        *gdal,
        ("sandbox", ["--queues", routes.SANDBOX, "--concurrency", "2"]),
        ("llm", ["--queues", routes.LLM, "--pool", "threads", "--concurrency", "8"]),
    ]


STOP_GRACE_S = 15.0
"""How long `geogate dev` waits for its gateway to stop before it kills it and stops the rest."""


class StopRequest:
    """Ctrl-C, SIGTERM and SIGHUP stop `geogate dev` in order, asked for with a flag rather than raised.

    An exception raised from a signal handler lands wherever the main thread is, a weakref callback of the import
    system included, which prints "Exception ignored" and drops it: `geogate dev` then served on after its SIGTERM.
    The first signal sets `requested`, which `run_dev` waits for; a second one raises KeyboardInterrupt. A SIGHUP
    ignored when `geogate dev` starts stays ignored, so `nohup geogate dev` outlives its terminal (SIGINT and SIGTERM
    always stop it).
    """

    def __init__(self) -> None:
        self.requested = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            signal.signal(signal.SIGHUP, self._handle)

    def _handle(self, _signum: int, _frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt  # asked twice: stop waiting
        self.requested = True

    def wait(self, proc: subprocess.Popen[bytes], poll_s: float = 0.1) -> int | None:
        """Until a stop is asked for (None) or `proc` ends by itself (its exit status)."""
        while not self.requested:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return proc.wait(timeout=poll_s)
        return None


def run_dev(settings: Settings, workers: int) -> None:
    """Start everything, serve until Ctrl-C, SIGTERM or SIGHUP, then stop every child: the gateway (`python -m gateway`,
    given `STOP_GRACE_S`), then the workers, then Redis. A gateway that ends by itself (its port in use) ends the run
    with its exit status. Nothing is started or printed when the port is taken or another `geogate dev` uses the
    data directory (`dev_checks`)."""
    check_can_start(settings)
    settings = with_default_workspace(settings)
    children = Children()
    data_dir = settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    stop = StopRequest()
    ended: int | None = None
    try:
        url = settings.redis_url or start_redis(settings, children)
        settings = settings.model_copy(update={"redis_url": url})
        roots = ":".join(resolved_workspaces(settings.workspaces))
        env = {**os.environ, "REDIS_URL": url, "GEOGATE_WORKSPACES": roots, "GEOGATE_DATA_DIR": str(data_dir.resolve())}
        user = worker_user(settings, env)
        for name, argv in worker_pools(workers):
            command = [sys.executable, "-m", "workers", *argv, "--name", f"{name}@%h", "--loglevel", "WARNING"]
            own = user.environ(env) if user else env
            children.spawn(command, own, log=data_dir / f"worker-{name}.log", user=user)
        _announce(settings, url, workers, user)
        if not stop.requested:
            serving = ["--port", str(settings.port), "--host", settings.host]
            ended = stop.wait(children.spawn([sys.executable, "-m", "gateway", *serving], env, front=True))
    except KeyboardInterrupt:
        pass
    finally:
        forget(settings)
        if ended is None:
            print("stopping: the gateway, then the workers, then Redis", flush=True)
        if not children.stop(front_grace_s=STOP_GRACE_S):
            print(f"the gateway did not stop within {STOP_GRACE_S:.0f} s; it was killed", file=sys.stderr)
        print("Geogate stopped" if not ended else f"Geogate stopped: the gateway ended with status {ended}", flush=True)
    if ended:
        raise SystemExit(ended)


def _announce(settings: Settings, url: str, workers: int, user: WorkerUser | None = None) -> None:
    """Record where this run lives (other `geogate` commands from this directory find it) and print it."""
    base = f"http://{settings.host}:{settings.port}"
    run = LocalRun(redis_url=url, mcp_url=f"{base}/mcp", ops_url=f"{base}/ops", pid=os.getpid())
    recorded = record(settings, run)
    print(f"Geogate is up: MCP endpoint {run.mcp_url}  (Ctrl-C stops everything)")
    roots = ", ".join(resolved_workspaces(settings.workspaces))
    print(f"Workspace {roots}: tools read and write there only (GEOGATE_WORKSPACES sets others)")
    print(f"Ops dashboard {run.ops_url}; `geogate status` and `geogate events tail -f` from this directory find it")
    pools = ", ".join(n for n, _ in worker_pools(workers))
    print(f"Redis {url} (recorded in {recorded}); worker pools: {pools}" + (f", as {user.name}" if user else ""))
    print(f"Logs in {settings.data_dir}/")
    print(client_config(settings, url))
