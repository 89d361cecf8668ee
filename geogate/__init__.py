"""Geogate's shared runtime, used by the gateway and the workers alike (docs/layout.md).

- `geogate.settings`: the settings of every role, read once at an entry point and passed down;
- `geogate.eventlog`: the event store (append, read, project, replay, retain);
- `geogate.queue`: the Celery plumbing both sides share (configuration, the outbox message, kombu's unacked hash);
- `geogate.process`: process plumbing (die with the parent, freeze the start-up heap).

Nothing of the domain lives here: that is `schemas/` (the contract), `gateway/` and `workers/`.
"""
