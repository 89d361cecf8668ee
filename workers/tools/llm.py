"""The language model's jobs (`schemas/tools/llm.py`): `ask`, and `justify_choice`, internal to the preflight gate."""

from schemas.tools.llm import ASK, JUSTIFY_CHOICE, AskArgs, AskResult, JustifyArgs, JustifyResult
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.llm import job as llm_job
from workers.llm import justify


@job(ASK)
def ask(args: AskArgs, ctx: JobContext) -> AskResult:
    """Answer `args.question` with the registry's tools; the X-ray is rebuilt from the events afterwards."""
    return llm_job.ask(args, ctx)


@job(JUSTIFY_CHOICE)
def justify_choice(args: JustifyArgs, ctx: JobContext) -> JustifyResult:
    """Ask the configured model; its answer must validate as a 4-key justification."""
    return justify.justify_choice(args, ctx)
