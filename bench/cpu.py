"""CPU time per call of each role under load, read from /proc for every process this bench started.

Throughput on a 2-core machine is bounded by the CPU a call costs over all processes (the gateway, the Celery node's
consumer and its pool process, Redis), not by any one of them: this shows where that CPU goes.
"""

import os
from collections.abc import Callable
from typing import TypeVar

TICKS = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


def _stat(pid: int) -> tuple[int, float] | None:
    """The parent pid and user+system CPU seconds of `pid`; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants() -> dict[int, tuple[int, float]]:
    """Every live descendant of this process: pid → (parent pid, CPU seconds)."""
    table = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(int(p))) is not None}
    mine, frontier = {}, {os.getpid()}
    while frontier:
        found = {pid for pid, (ppid, _) in table.items() if ppid in frontier and pid not in mine}
        mine.update({pid: table[pid] for pid in found})
        frontier = found
    return mine


def role(pid: int, parents: dict[int, tuple[int, float]]) -> str:
    command = _cmdline(pid)
    parent = _cmdline(parents[pid][0]) if pid in parents else ""
    if "redis-server" in command:
        return "redis-server"
    if "-m gateway --port" in command:
        return "gateway"
    if "-m workers" in command or "celery -A" in command:
        named = command.split("--queues ")[1].split()[0] if "--queues " in command else "every queue"
        queues = "hop" if "celery -A" in command else named
        pooled = "-m workers" in parent or "celery -A" in parent
        return f"worker {queues}: " + ("pool process" if pooled else "consumer (main)")
    if "redis.asyncio" in command:
        return "hop server (MCPServer + LPUSH/XREAD)"
    if "MCPServer" in command:
        return "bare MCPServer"
    return command.split()[0].rsplit("/", 1)[-1] if command else "?"


def per_call(load: Callable[[], T], calls: Callable[[T], int]) -> tuple[T, dict[str, float]]:
    """Run `load`; return its result and each role's CPU milliseconds per call over it (roles under 0.02 omitted)."""
    before = descendants()
    result = load()
    after = descendants()
    n = max(1, calls(result))
    spent: dict[str, float] = {}
    for pid, (_, seconds) in after.items():
        used = seconds - before.get(pid, (0, 0.0))[1]
        if pid in before and used * 1000 / n >= 0.02:
            name = role(pid, after)
            spent[name] = spent.get(name, 0.0) + used * 1000 / n
    return result, dict(sorted(spent.items(), key=lambda kv: -kv[1]))


def show(label: str, spent: dict[str, float]) -> None:
    print(f"CPU per call, {label}: {sum(spent.values()):.2f} ms")
    for name, ms in spent.items():
        print(f"  {ms:6.3f} ms  {name}")
