"""Geogate's shared runtime, used by the gateway and the workers alike (docs/layout.md).

- `geogate.settings`: the settings of every role, read once at an entry point and passed down;
- `geogate.eventlog`: the event store (append, read, project, replay, retain), handed the read models it keeps;
- `geogate.calls`: the calls' read models (projections, publishing, fan-in, the ops feed) and the store given them;
- `geogate.queue`: the Celery plumbing both sides share (configuration, the outbox message, kombu's unacked hash);
- `geogate.process`: process plumbing (die with the parent, freeze the start-up heap).

The domain lives in `schemas/` (the contract), `gateway/` and `workers/`; of it, only the read models every role
shares live here, in `geogate.calls`, apart from the store.
"""
