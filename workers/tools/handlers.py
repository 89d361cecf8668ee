"""The result handler's internal job (`schemas/tools/handlers.py`): runs a call's handler in the sandbox."""

from schemas.tools.handlers import RUN_RESULT_HANDLER, RunResultHandlerArgs, RunResultHandlerResult
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.sandbox import job as sandbox_job


@job(RUN_RESULT_HANDLER, own_lifecycle=True)
def run_result_handler(args: RunResultHandlerArgs, ctx: JobContext) -> RunResultHandlerResult:
    """Run the handler of call `args.call_id` and append its events; a redelivery after the outcome does nothing."""
    return sandbox_job.run_result_handler(args, ctx)
