"""Running workflows against the event store: read the fold, compute the next events, append them with a version check.

Every event is appended with `Expect(version == previous)` and the dedupe key `workflow:<state_id>:v<version>`, so
one version is ever written once: of two replies to the same step exactly one lands, the other is refused with
`workflow.version_conflict`. A reply and its advance are two appends; if a worker dies between them, the next call
on the run finishes the advance first (it is a pure function of the log).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import JsonValue

from geogate.calls import keys
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from geogate.eventlog.store import AppendResult
from schemas.events import (
    Event,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.events.workflow import workflow_aggregate
from schemas.ids import new_id
from schemas.tools.workflows import NextAction, WorkflowAnswer, WorkflowInfo, WorkflowList
from workers.jobkit.errors import JobFailed
from workers.workflows import engine
from workers.workflows.definitions import Workflow
from workers.workflows.state import WorkflowState, apply, fold

DEFAULT_TTL_S = 24 * 3600.0
"""How long a run may sit idle before it expires (overridden by the `workflow_ttl_s` setting)."""

WorkflowEventData = WorkflowStarted | WorkflowThoughtSubmitted | WorkflowAdvanced | WorkflowCompleted | WorkflowExpired


class VersionConflict(JobFailed):
    """Another call changed the run first (a duplicate, stale or concurrent reply)."""

    def __init__(self, state_id: str, expected: int, current: str | None = None) -> None:
        now = f"; it is now at version {current}" if current else ""
        message = (
            f"workflow run {state_id} is no longer at version {expected}{now}: another call answered this step. "
            f"Call get_workflow_state(state_id={state_id!r}) and follow its next_action."
        )
        super().__init__("workflow.version_conflict", message, field="version")


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class WorkflowService:
    """The workflow tools over one store and one set of definitions. `clock` is injectable for expiry tests."""

    store: EventStore
    definitions: Mapping[str, Workflow]
    ttl_s: float = DEFAULT_TTL_S
    clock: Callable[[], datetime] = field(default=_utcnow)
    actor: str = "system"
    trace_id: str = ""

    def catalogue(self) -> WorkflowList:
        """Every workflow that can be started, with the call that starts it."""
        return WorkflowList(workflows=[_info(w) for w in sorted(self.definitions.values(), key=lambda w: w.id)])

    def start(self, workflow_id: str, inputs: dict[str, JsonValue], call_id: str) -> WorkflowAnswer:
        """Start a run of `workflow_id`. The run's id derives from `call_id`, so a redelivered call starts nothing new.

        Raises:
            JobFailed: unknown workflow, missing or unknown input.
        """
        workflow = self._workflow(workflow_id, field="workflow")
        state_id = f"wf_{call_id}"
        event = self._event(engine.start_event(workflow, state_id, inputs, self.clock(), self.ttl_s))
        state = apply(None, event)
        if not self._write(None, event).new or state is None:
            return self.show(state_id)  # acks_late redelivery: the run already exists
        return engine.answer(workflow, state)

    def reply(
        self, state_id: str, text: str, *, call_id: str, version: int | None = None, choice: str | None = None
    ) -> WorkflowAnswer:
        """Answer the current step (`submitThought`/`continueWorkflow`) and move the run on.

        Raises:
            VersionConflict: `version` is stale, or another call answered this step first.
            JobFailed: unknown, completed or expired run; a reply of the wrong format; a missing choice.
        """
        state = self._active(state_id)
        if state.pending is not None:
            pending = state.pending
            state = self._finish(state)
            if pending.call_id == call_id:
                return self._answer(state)  # a redelivered call: its reply landed, finish and answer
            raise VersionConflict(state_id, pending.version - 1, str(state.version))
        if version is not None and version != state.version:
            raise VersionConflict(state_id, version, str(state.version))
        submitted = engine.reply_event(self._workflow_of(state), state, text, choice, call_id)
        return self._answer(self._finish(self._append(state, submitted)))

    def show(self, state_id: str) -> WorkflowAnswer:
        """Where the run stands (an idle run past its time is marked expired first)."""
        return self._answer(self._touched(state_id))

    def _answer(self, state: WorkflowState) -> WorkflowAnswer:
        return engine.answer(self.definitions.get(state.workflow), state)

    def _workflow(self, workflow_id: str, field: str = "state_id") -> Workflow:
        workflow = self.definitions.get(workflow_id)
        if workflow is None:
            known = ", ".join(sorted(self.definitions))
            raise JobFailed("workflow.unknown_workflow", f"no workflow {workflow_id!r} (known: {known})", field=field)
        return workflow

    def _workflow_of(self, state: WorkflowState) -> Workflow:
        workflow = self._workflow(state.workflow)
        step = state.pending.step if state.pending else state.step
        if step not in workflow.steps:
            message = f"workflow {workflow.id!r} no longer has step {step!r} (the definition changed)"
            raise JobFailed("workflow.definition_missing", message, field="state_id")
        return workflow

    def _load(self, state_id: str) -> WorkflowState:
        state = fold(self.store.read_aggregate(workflow_aggregate(state_id)))
        if state is None:
            raise JobFailed("workflow.unknown_state", f"no workflow run {state_id!r}", field="state_id")
        return state

    def _touched(self, state_id: str) -> WorkflowState:
        state = self._load(state_id)
        expired = engine.expiry_event(state, self.clock())
        if expired is None:
            return state
        try:
            return self._append(state, expired)
        except VersionConflict:
            return self._load(state_id)  # someone moved it meanwhile; their state stands

    def _active(self, state_id: str) -> WorkflowState:
        state = self._touched(state_id)
        if state.status != "active":
            message = f"workflow run {state_id} has {state.status}; start a new one to continue"
            raise JobFailed(f"workflow.{state.status}", message, field="state_id")
        return state

    def _finish(self, state: WorkflowState) -> WorkflowState:
        advance = engine.advance_event(self._workflow_of(state), state, self.clock())
        try:
            return self._append(state, advance)
        except VersionConflict:
            return self._load(state.state_id)  # a concurrent call finished the same advance

    def _append(self, state: WorkflowState, data: WorkflowEventData) -> WorkflowState:
        event = self._event(data)
        result = self._write(state, event)
        if not result.new:
            raise VersionConflict(state.state_id, state.version, result.entry_id if result.refused else None)
        after = apply(state, event)
        assert after is not None
        return after

    def _event(self, data: WorkflowEventData) -> Event:
        aggregate = workflow_aggregate(data.state_id)
        return Event(
            id=new_id(), aggregate=aggregate, ts=self.clock(), trace_id=self.trace_id, actor=self.actor, data=data
        )

    def _write(self, state: WorkflowState | None, event: Event) -> AppendResult:
        data = event.payload(WorkflowEventData)
        current = "" if state is None else str(state.version)
        expect = Expect(self.store.live.workflow(data.state_id), "version", "in", (current,))
        return self.store.append(event, keys.workflow_version_key(data.state_id, data.version), expect=expect)


def _info(workflow: Workflow) -> WorkflowInfo:
    inputs: dict[str, JsonValue] = {name: f"<{what}>" for name, what in workflow.spec.inputs.items()}
    start = NextAction.of("start_workflow", {"workflow": workflow.id, "inputs": inputs})
    if workflow.id == "chain_of_thought":
        start = NextAction.of("startChainOfThought", {"problem": inputs.get("problem", "<the problem>")})
    return WorkflowInfo(
        id=workflow.id,
        description=workflow.spec.description,
        inputs=dict(workflow.spec.inputs),
        steps=list(workflow.steps),
        start=start,
    )
