"""Persisting justifications: every item validated field by field first, then all appended (or none)."""

from collections.abc import Sequence
from typing import Literal

from gateway.preflight.gate import Gate
from geogate.calls import keys
from geogate.calls.publish import new_event
from schemas.events.justification import JustificationPersisted, justification_aggregate
from schemas.preflight.answers import justification_errors
from schemas.preflight.justification import Justification, PersistItem
from schemas.validation import FieldError

Source = Literal["client", "sampling", "server_llm"]


async def check(gate: Gate, items: Sequence[PersistItem], prefix: str = "") -> list[FieldError]:
    """Everything wrong with `items`: unknown hashes, wrong domains, invalid justifications."""
    errors: list[FieldError] = []
    states = await gate.states([item.hash for item in items])
    for n, (item, state) in enumerate(zip(items, states, strict=True)):
        at = f"{prefix}{n}." if prefix else ""
        if state is None:
            errors.append(FieldError(f"{at}hash", "not a hash this server issued in a preflight hint", item.hash))
        elif state.domain != item.domain:
            errors.append(FieldError(f"{at}domain", f"this hash is for domain {state.domain!r}", item.domain))
        errors += justification_errors(item.justification, f"{at}justification.")
    return errors


async def persist(
    gate: Gate, items: Sequence[PersistItem], *, actor: str, source: Source = "client", prefix: str = ""
) -> list[FieldError]:
    """Validate all `items`; append `justification.persisted` for each only if all are valid.

    Returns the field errors (nothing was persisted when there are any).
    """
    errors = await check(gate, items, prefix)
    if errors:
        return errors
    for item, state in zip(items, await gate.states([i.hash for i in items]), strict=True):
        assert state is not None
        data = JustificationPersisted(
            hash=item.hash,
            domain=item.domain,
            prompt=state.prompt,
            prompt_args=state.prompt_args,
            justification=Justification.model_validate(item.justification).model_dump(mode="json"),
            source=source,
        )
        event = new_event(justification_aggregate(item.hash), data, actor=actor)
        await gate.store.append(event, keys.justification_persisted_key(item.hash, event.id))
    return []
