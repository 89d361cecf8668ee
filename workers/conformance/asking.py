"""Jobs of the fixtures that ask their client mid-call (`schemas.tools.conformance.asking`), through `ask`."""

import json
from typing import Any

from schemas.tools.conformance.asking import ANSWER_WINDOW_S, MessageArgs, PromptArgs
from schemas.tools.conformance.calls import Reply
from schemas.tools.conformance.tasks import NoArgs
from workers.conformance.questions import (
    Question,
    accepted,
    action,
    form,
    one_field,
    root_count,
    roots,
    sample,
    sampled_text,
)
from workers.conformance.tasks import work
from workers.context import JobContext
from workers.inputs import ask
from workers.jobs import job

DEFAULTED = {
    "name": {"type": "string", "description": "Your name", "default": "John Doe"},
    "age": {"type": "integer", "description": "Your age", "default": 30},
    "score": {"type": "number", "description": "Your score", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "description": "Verified?", "default": True},
}
"""SEP-1034: a default for every primitive type (the suite checks these exact values)."""


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


ENUM_STYLES: dict[str, dict[str, Any]] = {
    "untitledSingle": {"type": "string", "enum": ["raster", "vector", "table"]},
    "titledSingle": {"type": "string", "oneOf": _titled(("gtiff", "GeoTIFF"), ("cog", "Cloud-optimised GeoTIFF"))},
    "legacyEnum": {"type": "string", "enum": ["near", "bilinear"], "enumNames": ["Nearest", "Bilinear"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": _titled(("b1", "Band 1"), ("b2", "Band 2"))}},
}
"""SEP-1330: the five ways a form can offer choices."""


def _ask(ctx: JobContext, questions: dict[str, Question]) -> dict[str, Any]:
    return ask(ctx, questions, timeout_s=ANSWER_WINDOW_S)


def _form_reply(verb: str, answer: Any) -> Reply:
    return Reply(said=f"{verb}: action={action(answer)}, content={json.dumps(accepted(answer), sort_keys=True)}")


@job("test_sampling")
def sampling(args: PromptArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"reply": sample(args.prompt)})["reply"]
    return Reply(said=f"The client's model said: {sampled_text(answer)}")


@job("test_elicitation")
def contact_form(args: MessageArgs, ctx: JobContext) -> Reply:
    fields = {
        "username": {"type": "string", "description": "Your user name"},
        "email": {"type": "string", "description": "Your e-mail address"},
    }
    return _form_reply("The user answered", _ask(ctx, {"details": form(args.message, fields)})["details"])


@job("test_elicitation_sep1034_defaults")
def defaults_form(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"details": form("Check these details", DEFAULTED, required=[])})["details"]
    return _form_reply("Form answered", answer)


@job("test_elicitation_sep1330_enums")
def enums_form(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"choices": form("Pick your options", ENUM_STYLES, required=[])})["choices"]
    return _form_reply("Form answered", answer)


def _name(answer: Any) -> str:
    return str(accepted(answer).get("name") or "stranger")


@job("test_input_required_result_elicitation")
def greet_by_name(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"user_name": one_field("What is your name?", "name")})["user_name"]
    return Reply(said=f"Hello, {_name(answer)}!")


@job("test_input_required_result_sampling")
def capital(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"capital": sample("Which city is the capital of France?")})["capital"]
    return Reply(said=f"The client's model said: {sampled_text(answer)}")


@job("test_input_required_result_list_roots")
def count_roots(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"client_roots": roots()})["client_roots"]
    return Reply(said=f"The client has {root_count(answer)} root(s).")


@job("test_input_required_result_request_state")
def confirmed(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"confirm": one_field("Please confirm", "ok", "boolean")})["confirm"]
    return Reply(said=f"state-ok: the call resumed with the answer ({action(answer)})")


@job("test_input_required_result_multiple_inputs")
def all_at_once(args: NoArgs, ctx: JobContext) -> Reply:
    questions = {
        "user_name": one_field("What is your name?", "name"),
        "greeting": sample("Write a one-line greeting.", max_tokens=50),
        "client_roots": roots(),
    }
    answers = _ask(ctx, questions)
    return Reply(said=f"{_name(answers['user_name'])}, {root_count(answers['client_roots'])} root(s), all answered")


@job("test_input_required_result_multi_round")
def two_rounds(args: NoArgs, ctx: JobContext) -> Reply:
    name = _name(_ask(ctx, {"step1": one_field("Step 1: what is your name?", "name")})["step1"])
    colour = accepted(_ask(ctx, {"step2": one_field("Step 2: your favourite colour?", "color")})["step2"])
    return Reply(said=f"{name} likes {colour.get('color', 'no colour')}.")


@job("test_input_required_result_tampered_state")
def sealed(args: NoArgs, ctx: JobContext) -> Reply:
    answer = _ask(ctx, {"confirm": one_field("Please confirm", "ok", "boolean")})["confirm"]
    return Reply(said=f"confirmed ({action(answer)})")


@job("test_input_required_result_capabilities")
def what_you_can(args: NoArgs, ctx: JobContext) -> Reply:
    questions: dict[str, Question] = {}
    if "sampling" in ctx.client_capabilities:
        questions["hello"] = sample("Say hello.", max_tokens=50)
    if "elicitation" in ctx.client_capabilities:
        questions["name"] = one_field("What is your name?", "name")
    if not questions:
        return Reply(said="the client declared nothing this tool could ask")
    return Reply(said="answered: " + ", ".join(sorted(_ask(ctx, questions))))


@job("test_tool_with_task")
def name_then_task(args: NoArgs, ctx: JobContext) -> Reply:
    name = _name(_ask(ctx, {"user_name": one_field("What is your name?", "name")})["user_name"])
    work(0.5, ctx)
    return Reply(said=f"Hello, {name}! (worked 0.5 s as a task)")
