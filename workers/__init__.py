"""Celery workers: one app, queues gdal/sandbox/llm/workflow; each task appends its outcome to the event log.

- `app.py`, `__main__.py`: the Celery app and the worker role's entry point (`python -m workers`).
- `run/`: the run machinery, how a call runs on a worker node: the runner and the run lifecycle, the node's lease,
  reaper and retention threads, memory and OOM handling, the reader of outcomes and tool calls made by jobs.
- `jobkit/`: what a job is written with: its context, its errors, workspace files and confinement, the limits of
  a call, and questions to the client.
- `jobs.py`, `registry.py`: the `job` decorator with its follow-up hooks, and the families a worker loads.
- the families, each a package of jobs: `gdal/`, `sandbox/`, `llm/`, `workflows/`, `tiling/`; and `ping.py`.
"""
