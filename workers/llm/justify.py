"""The `justify_choice` job: the server-side model answers a justification prompt (one retry with the errors)."""

import anyio

from geogate.settings import LLMSettings, process_settings
from schemas.preflight.answers import parse_answer
from schemas.preflight.prompts import PROMPTS
from schemas.tools.llm import JustifyArgs, JustifyResult
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.llm.config import config_for
from workers.llm.errors import ProviderError
from workers.llm.providers import build_provider, http_client
from workers.llm.providers.base import Message

SYSTEM = "You justify geospatial processing choices for an audit log. Answer with the requested JSON only."


def justify_choice(args: JustifyArgs, ctx: JobContext) -> JustifyResult:
    """Ask the configured model; its answer must validate as a 4-key justification.

    Raises:
        JobFailed: `justify.unknown_prompt`, `justify.invalid` (two invalid answers), `llm.provider_error`.
    """
    template = PROMPTS.get(args.prompt)
    if template is None or template.domain != args.domain:
        raise JobFailed("justify.unknown_prompt", f"no {args.domain} prompt named {args.prompt!r}", field="prompt")
    settings = ctx.settings or process_settings()  # the runner passes the worker's; a bare call reads them once
    return anyio.run(_ask, template.render(args.prompt_args), settings.llm)


async def _ask(prompt: str, llm: LLMSettings) -> JustifyResult:
    config = config_for(llm)
    errors: list[str] = []
    async with http_client(config) as client:
        provider = build_provider(config, client)
        for attempt in (1, 2):
            text = prompt if not errors else f"{prompt}\n\nYour previous answer was rejected: {'; '.join(errors)}."
            try:
                reply = await provider.complete(
                    [Message(role="system", content=SYSTEM), Message(role="user", content=text)],
                    temperature=0.2,
                    max_tokens=1024,
                )
            except ProviderError as exc:
                raise JobFailed(
                    "llm.provider_error", f"the model server failed: {exc.message}", retryable=True
                ) from exc
            value, errors = parse_answer(reply.text)
            if value is not None:
                return JustifyResult(justification=value, model=provider.model, attempts=attempt)
    raise JobFailed("justify.invalid", "the server-side model gave no valid justification: " + "; ".join(errors))
