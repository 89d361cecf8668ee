"""`geogate justifications revoke|export`: the justification cache from the command line."""

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from geogate.calls import keys
from geogate.calls.projections.justifications import JustificationState
from geogate.calls.publish import new_event
from geogate.calls.store import EventStore
from geogate.settings import process_settings
from schemas.events.justification import JustificationRevoked, justification_aggregate

app = typer.Typer(help="Inspect, revoke and export justifications.", no_args_is_help=True)


def _store() -> EventStore:
    from geogate.cli.local import resolve

    return EventStore.from_settings(resolve(process_settings()))


def _states(store: EventStore) -> list[JustificationState]:
    prefix = store.live.justification("")
    found = []
    for key in store.redis.scan_iter(match=store.live.justification_pattern(), count=1000):
        name = key.decode().removeprefix(prefix)
        if ":" not in name and (state := JustificationState.from_hash(name, store.redis.hgetall(key))):
            found.append(state)
    return found


@app.command()
def revoke(
    digest: Annotated[str, typer.Argument(help="the justification's hash (with or without sha256:)")],
    reason: Annotated[str, typer.Option(help="why, for the log")] = "revoked from the command line",
) -> None:
    """Revoke a justification: calls that need it are gated again. Appends `justification.revoked`."""
    store, digest = _store(), digest.removeprefix("sha256:")
    if not store.redis.exists(store.live.justification(digest)):
        typer.echo(f"no justification {digest}", err=True)
        raise typer.Exit(1)
    actor = f"cli:{os.environ.get('USER', 'unknown')}"
    event = new_event(justification_aggregate(digest), JustificationRevoked(hash=digest, reason=reason), actor=actor)
    store.append(event, keys.justification_revoked_key(digest, event.id))
    typer.echo(f"revoked {digest}")


@app.command()
def export(directory: Annotated[Path, typer.Argument(help="where to write {domain}/sha256:{hash}.json")]) -> None:
    """Write every persisted justification as gdal-mcp-compatible files, for audits."""
    count = 0
    for state in _states(_store()):
        if state.status != "persisted" or state.justification is None:
            continue
        target = directory / state.domain / f"sha256:{state.hash}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".json.partial")
        body = {
            "hash": f"sha256:{state.hash}",
            "domain": state.domain,
            "prompt": state.prompt,
            "prompt_args": state.prompt_args,
            "justification": state.justification,
            "actor": state.actor,
            "timestamp": state.persisted_at,
            "source": state.source,
        }
        tmp.write_text(json.dumps(body, indent=2, sort_keys=True))
        tmp.replace(target)
        count += 1
    typer.echo(f"exported {count} justification(s) to {directory}")
