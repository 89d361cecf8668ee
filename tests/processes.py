"""The machine's processes read from /proc (Linux): who started whom, in which session, and whether a pid is still
the same process (its start time tells a reused pid apart)."""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    session: int
    start: int
    """Clock ticks from boot to this process's start (`/proc/<pid>/stat` field 22)."""
    command: str


def snapshot() -> dict[int, Proc]:
    """Every live process (zombies excluded: they are dead, only not yet reaped)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (proc := _read(int(entry.name))) is not None:
            table[proc.pid] = proc
    return table


def tree(pid: int) -> list[Proc]:
    """Every live descendant of `pid`."""
    table = snapshot()
    found, frontier = [], [pid]
    while frontier:
        here = frontier.pop()
        kids = [proc for proc in table.values() if proc.ppid == here]
        found += kids
        frontier += [kid.pid for kid in kids]
    return found


def children(pid: int) -> list[int]:
    """Pids of `pid`'s live children, read from the kernel's own lists (fast enough to poll a fork as it happens)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(kid) for kid in task.read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def still_running(procs: list[Proc]) -> list[Proc]:
    """Those of `procs` still alive: the same pid with the same start time."""
    table = snapshot()
    return [proc for proc in procs if (now := table.get(proc.pid)) is not None and now.start == proc.start]


def in_sessions(sessions: set[int]) -> list[Proc]:
    """Live processes in any of `sessions`, wherever they were reparented (what a late fork would leave behind)."""
    return [proc for proc in snapshot().values() if proc.session in sessions]


def _read(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the name in parentheses may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return Proc(pid=pid, ppid=int(fields[1]), session=int(fields[3]), start=int(fields[19]), command=command)
