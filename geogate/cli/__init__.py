"""The `geogate` command line and the local runner, beside the roles it starts: it imports only `geogate` and
`schemas`, and runs each role as its own package does (`python -m gateway`, `python -m workers`).

- `main.py`: the `geogate` command (`[project.scripts]`), `justifications.py` its `justifications` group.
- `dev.py`, `dev_user.py`, `local.py`: `geogate dev` (a private Redis, the workers and the gateway as children, the
  user its workers run as) and the record of a local run other commands from the same directory find.
- `replay_progress.py`: the progress `geogate replay` shows.
"""
