"""LLM conversations keep no projection of their own but their event index, which expires with the conversation."""

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.registry import expire_finished, projector
from geogate.eventlog.append import Op
from schemas.events import Event


@projector("llm.conversation_finished")
def _finished(event: Event, keys: ProjectionKeys) -> list[Op]:
    return expire_finished(event, keys)
