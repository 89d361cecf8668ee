"""What a job is written with: the helpers every family's jobs import, none of the run machinery.

- `context.py`: what a job sees (its call, the workspace roots, the store, progress that cancels).
- `errors.py`: the errors a job raises, which the runner turns into `tool.failed`.
- `files.py`, `confine.py`: workspace paths checked and outputs written atomically; files opened as they were checked.
- `limits.py`: the bounds of one call (`GEOGATE_LIMIT_*`).
- `inputs.py`: a job asking its client (`ask_client`) and telling it (`tell`) through the log.
"""
