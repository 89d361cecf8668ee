"""The conformance suite's fixtures whose job asks the client mid-call (sampling, elicitation, roots).

The job appends `tool.input_requested` and waits for the answers (`workers.inputs.ask`); the gateway relays the
questions to a client that waits for the call (MRTR `input_required` on 2026-07-28, a request over the session on
2025-11-25) and records each answer as `tool.input_provided`. These jobs run on the `llm` queue's thread pool: like
`ask`, they wait on someone else, not on the CPU, so an unanswered question does not hold a GDAL process.
"""

from pydantic import Field

from schemas import tasks
from schemas.events.tool import ClientCapability
from schemas.tools.base import Hints, ToolArgs, ToolSpec
from schemas.tools.conformance.calls import Reply
from schemas.tools.conformance.tasks import NoArgs

ANSWER_WINDOW_S = 10.0
"""How long a fixture's job waits for its answers: the suite's client answers at once or never (it leaves a few
MRTR questions unanswered on purpose, and each holds a worker thread until then)."""


class PromptArgs(ToolArgs):
    prompt: str = Field(min_length=1, max_length=2000)
    """Sent to the client's model as the user message."""


class MessageArgs(ToolArgs):
    message: str = Field(min_length=1, max_length=2000)
    """Shown to the user with the form."""


def _asking(
    name: str, description: str, needs: frozenset[ClientCapability] = frozenset(), args: type[ToolArgs] = NoArgs
) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=name.removeprefix("test_").replace("_", " ").capitalize() + " (conformance fixture)",
        description=description,
        queue=tasks.LLM,
        args=args,
        result=Reply,
        hints=Hints(read_only=True),
        timeout_s=ANSWER_WINDOW_S + 30.0,
        client_needs=needs,
    )


SAMPLING = frozenset[ClientCapability]({"sampling"})
ELICITATION = frozenset[ClientCapability]({"elicitation"})
ROOTS = frozenset[ClientCapability]({"roots"})

SAMPLE = _asking("test_sampling", "Asks the client's model to answer `prompt`, then quotes it.", SAMPLING, PromptArgs)
FORM = _asking(
    "test_elicitation",
    "Asks the user for a username and an e-mail address, then reports the answer.",
    ELICITATION,
    MessageArgs,
)
DEFAULTS_FORM = _asking(
    "test_elicitation_sep1034_defaults", "Asks for a form whose fields all carry defaults (SEP-1034).", ELICITATION
)
ENUMS_FORM = _asking(
    "test_elicitation_sep1330_enums", "Asks for a form with every enum style of SEP-1330.", ELICITATION
)
NAME = _asking("test_input_required_result_elicitation", "Asks the user's name, then greets them.", ELICITATION)
CAPITAL = _asking(
    "test_input_required_result_sampling", "Asks the client's model a question, then quotes it.", SAMPLING
)
ROOTS_COUNT = _asking("test_input_required_result_list_roots", "Asks the client for its roots and counts them.", ROOTS)
CONFIRM = _asking(
    "test_input_required_result_request_state", "Asks for a confirmation; answers state-ok once it has it.", ELICITATION
)
ALL_AT_ONCE = _asking(
    "test_input_required_result_multiple_inputs",
    "Asks a form, a model question and the roots at once.",
    SAMPLING | ELICITATION | ROOTS,
)
TWO_ROUNDS = _asking(
    "test_input_required_result_multi_round", "Asks a name, then (a second round) a colour.", ELICITATION
)
SEALED = _asking(
    "test_input_required_result_tampered_state",
    "Asks for a confirmation; a retry whose requestState was altered is refused.",
    ELICITATION,
)
WHAT_YOU_CAN = _asking(
    "test_input_required_result_capabilities", "Asks only what the client declared it can answer (sampling, forms)."
)
NAME_THEN_TASK = _asking(
    "test_tool_with_task",
    "Asks the user's name first (synchronously), then works as a task; needs the tasks extension.",
    ELICITATION,
)

ASKING_SPECS: tuple[ToolSpec, ...] = (
    SAMPLE,
    FORM,
    DEFAULTS_FORM,
    ENUMS_FORM,
    NAME,
    CAPITAL,
    ROOTS_COUNT,
    CONFIRM,
    ALL_AT_ONCE,
    TWO_ROUNDS,
    SEALED,
    WHAT_YOU_CAN,
    NAME_THEN_TASK,
)
