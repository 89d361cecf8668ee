"""`python -m workers --queues gdal,sandbox`: the worker role's entry point (what `geogate worker` runs)."""

import argparse
import sys

from geogate.objects import check_workspaces
from geogate.settings import SettingsError, process_settings
from schemas import routes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="geogate worker", description="Run a Geogate Celery worker.")
    parser.add_argument("--queues", default=",".join(routes.QUEUES), help="comma-separated queues to consume")
    parser.add_argument("--concurrency", type=int, default=1, help="pool processes")
    parser.add_argument("--pool", default="prefork", choices=["prefork", "solo", "threads"])
    parser.add_argument("--name", default=None, help="worker node name (celery -n)")
    parser.add_argument("--loglevel", default=None)
    ns = parser.parse_args(argv)
    unknown = sorted(set(ns.queues.split(",")) - set(routes.QUEUES))
    if unknown:
        parser.error(f"--queues: unknown queue(s) {', '.join(unknown)}; expected some of {', '.join(routes.QUEUES)}")
    from workers.app import (
        configure,
        hold_lease,
        limit_pool_processes_memory,
        pool_processes_die_with_the_node,
        settle_memory_when_started,
    )
    from workers.run.heap import keep_freed_memory
    from workers.sandbox import SandboxUnavailable
    from workers.sandbox.isolation import config_for, require_interpreter

    try:  # a settings error (a bad value, no Redis URL) ends the role with its message, as `geogate` does
        settings = process_settings()
        check_workspaces(settings.workspaces)
        keep_freed_memory()
        app = configure(settings)
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None
    try:  # a handler must be able to run wherever a call lands, in place or on the sandbox queue
        require_interpreter(config_for(settings.security))
    except SandboxUnavailable as exc:
        raise SystemExit(f"geogate worker refuses to start: {exc.message}") from None
    pool_processes_die_with_the_node()
    limit_pool_processes_memory(settings)
    hold_lease(settings, ns.queues.split(","), ns.pool, ns.concurrency)
    settle_memory_when_started()
    args = ["worker", "-Q", ns.queues, "-c", str(ns.concurrency), "-P", ns.pool, "--without-gossip"]
    args += ["--without-mingle", "--without-heartbeat", "-l", ns.loglevel or settings.log_level]
    if ns.name:
        args += ["-n", ns.name]
    app.worker_main(args)


if __name__ == "__main__":
    main(sys.argv[1:])
