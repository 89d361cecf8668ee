"""The run machinery of a worker node: how a tool call runs, ends and is recovered; no job lives here.

- `runner.py`: a call's run, started → job → succeeded | failed, with what the families declare around it
  (`workers.jobs`: what takes a call instead of its job, what follows its outcome); `lifecycle.py`: the fenced
  start and end every run shares (a call's job, a result handler, a tiled call's fan-in).
- `lease.py`, `reaper.py`, `retention.py`: the node's liveness lease and heartbeat, the re-dispatch of runs whose
  node died, the retention thread.
- `heap.py`, `memory.py`, `oom.py`: malloc settings, the per-process address-space limit, pool processes the OOM
  killer ended.
- `outcomes.py`, `calling.py`: the process's one reader of the calls stream, and tool calls made by a job.
- `faults.py`: named pause points for fault tests; `probe.py`: whether a user can run a worker in given folders.
"""
