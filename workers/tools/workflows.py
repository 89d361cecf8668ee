"""The workflow-queue jobs: `startChainOfThought`, `submitThought`, `continueWorkflow`, `start_workflow`,
`list_workflows`, `get_workflow_state`. Each builds a `WorkflowService` from its context and delegates."""

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from schemas.tools.workflows import (
    CONTINUE_WORKFLOW,
    GET_WORKFLOW_STATE,
    LIST_WORKFLOWS,
    START_CHAIN_OF_THOUGHT,
    START_WORKFLOW,
    SUBMIT_THOUGHT,
    ContinueWorkflowArgs,
    GetWorkflowStateArgs,
    ListWorkflowsArgs,
    StartChainOfThoughtArgs,
    StartWorkflowArgs,
    SubmitThoughtArgs,
    WorkflowAnswer,
    WorkflowList,
)
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import job
from workers.workflows.definitions import DefinitionError, Workflow
from workers.workflows.loader import load_definitions
from workers.workflows.service import DEFAULT_TTL_S, WorkflowService


@lru_cache(maxsize=8)
def definitions(extra_dir: Path | None = None) -> Mapping[str, Workflow]:
    """The shipped definitions plus those of `extra_dir`, loaded once per folder per process.

    Raises:
        JobFailed: `workflow.bad_definition`, naming the file and step.
    """
    try:
        return load_definitions(extra_dir)
    except DefinitionError as exc:
        raise JobFailed("workflow.bad_definition", str(exc)) from exc


def service_for(ctx: JobContext) -> WorkflowService:
    """The service for one job: the context's store, the configured definitions folder and idle time.

    Raises:
        JobFailed: the context has no store (a wiring error).
    """
    if ctx.store is None:
        raise JobFailed("workflow.no_store", "this worker has no event store configured")
    # `workflows_dir` (GEOGATE_WORKFLOWS_DIR) and `workflow_ttl_s` are optional Settings fields.
    extra = getattr(ctx.settings, "workflows_dir", None)
    ttl_s = float(getattr(ctx.settings, "workflow_ttl_s", None) or DEFAULT_TTL_S)
    return WorkflowService(
        ctx.store,
        definitions(Path(extra) if extra else None),
        ttl_s=ttl_s,
        actor=ctx.actor,
        trace_id=ctx.trace_id or ctx.call_id,
    )


@job(START_CHAIN_OF_THOUGHT)
def start_chain_of_thought(args: StartChainOfThoughtArgs, ctx: JobContext) -> WorkflowAnswer:
    """Start the `chain_of_thought` workflow on `args.problem` (docs/workflows.md)."""
    return service_for(ctx).start("chain_of_thought", {"problem": args.problem}, ctx.call_id)


@job(START_WORKFLOW)
def start_workflow(args: StartWorkflowArgs, ctx: JobContext) -> WorkflowAnswer:
    """Start any workflow by id with its inputs."""
    return service_for(ctx).start(args.workflow, dict(args.inputs), ctx.call_id)


@job(SUBMIT_THOUGHT)
def submit_thought(args: SubmitThoughtArgs, ctx: JobContext) -> WorkflowAnswer:
    """Reply to the current step with a thought; it is saved and the run moves on."""
    service = service_for(ctx)
    return service.reply(args.state_id, args.thought, call_id=ctx.call_id, version=args.version, choice=args.choice)


@job(CONTINUE_WORKFLOW)
def continue_workflow(args: ContinueWorkflowArgs, ctx: JobContext) -> WorkflowAnswer:
    """Acknowledge the current step and move the run on."""
    service = service_for(ctx)
    text, version, choice = args.acknowledgment, args.version, args.choice
    return service.reply(args.state_id, text, call_id=ctx.call_id, version=version, choice=choice)


@job(LIST_WORKFLOWS)
def list_workflows(args: ListWorkflowsArgs, ctx: JobContext) -> WorkflowList:
    """Every workflow that can be started."""
    return service_for(ctx).catalogue()


@job(GET_WORKFLOW_STATE)
def get_workflow_state(args: GetWorkflowStateArgs, ctx: JobContext) -> WorkflowAnswer:
    """Where a run stands and the next call to make."""
    return service_for(ctx).show(args.state_id)
