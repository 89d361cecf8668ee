"""Plans: several tool calls run as one durable call (`plan_run`), validated whole before any step runs.

A plan is a list of steps, each a tool call with an id. An argument (at any depth) may be a reference to an earlier
step's result, `{"$ref": "<step>.<field>[.<field>…]"}` (e.g. `{"$ref": "clip.output.path"}`), replaced by that
value when the step is enqueued; `after` orders a step behind others it takes nothing from. A step may refer only to
steps listed before it, so a plan is a DAG by construction. Steps run as child calls of the plan's call, id
`<plan call id>.<index>` (the step's position), each as soon as every step it depends on has succeeded; independent
steps run at once (docs/plans.md).
"""

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas import routes
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec

TOOLSET = "plans"
REF = "$ref"
"""The key of a reference: `{"$ref": "<step>.<path into its result>"}`."""
MAX_STEPS = 32


class PlanStep(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    """Unique in the plan; references name it."""
    tool: str
    args: dict[str, JsonValue] = Field(default_factory=dict)
    """The tool's arguments; any value may be `{"$ref": "<step>.<path>"}`."""
    after: list[str] = Field(default_factory=list)
    """Earlier steps this one waits for without a reference."""


class PlanArgs(ToolArgs):
    model_config = ConfigDict(use_attribute_docstrings=True)

    steps: list[PlanStep] = Field(min_length=1, max_length=MAX_STEPS)
    dry_run: bool = False
    """Only validate and estimate; run nothing."""


class Problem(BaseModel):
    """Why a plan cannot run, naming the step and the argument (`""` when the step as a whole is wrong)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: str
    argument: str
    code: str
    message: str
    valid: JsonValue = None
    """What would be valid there, when it is known (band numbers, step ids, result fields)."""


class StepOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    tool: str
    call_id: str
    status: Literal["succeeded", "failed", "pending"]
    result: dict[str, JsonValue] | None = None
    """The step's result (its outputs carry their sha256); the log holds each output's provenance."""


class PlanResult(ToolResult):
    wrote: ClassVar[bool] = False  # each step's own outcome names the files it wrote
    steps: list[StepOutcome]
    estimate: int
    """Calls the plan makes: one per step, a tiled step's tiles counted."""
    dry_run: bool = False
    required: list[dict[str, JsonValue]] = Field(default_factory=list)
    """Preflight justifications the steps still need (dry run), all at once."""

    def summary(self) -> str:
        if self.dry_run:
            needs = f"; needs {len(self.required)} justification(s)" if self.required else ""
            return f"plan valid: {len(self.steps)} step(s), about {self.estimate} call(s){needs}"
        return "plan done: " + ", ".join(f"{s.id} ({s.tool})" for s in self.steps)


def step_call_id(plan_call_id: str, index: int) -> str:
    """The child call of step `index` (its position) of plan call `plan_call_id`: derived, so keyed appends hold."""
    return f"{plan_call_id}.{index}"


PLAN_RUN = ToolSpec(
    name="plan_run",
    title="Run a plan of tool calls",
    description=(
        "Several tool calls as one durable call. Steps (id, tool, args) may use an earlier step's result as an "
        'argument: {"$ref": "<step>.<field>.<field>"}. Validated whole first (every error at once, naming step '
        "and argument); then each step runs once its references succeeded. dry_run: validate and estimate only."
    ),
    queue=routes.GDAL,
    args=PlanArgs,
    result=PlanResult,
    hints=Hints(),
    timeout_s=3600.0,
    runs_long=True,
    toolset=TOOLSET,
    examples=(
        {
            "steps": [
                {
                    "id": "clip",
                    "tool": "raster_clip",
                    "args": {"uri": "dem.tif", "output": "c.tif", "mask": "a.gpkg"},
                },
                {
                    "id": "slope",
                    "tool": "raster_terrain",
                    "args": {"uri": {"$ref": "clip.output.path"}, "output": "slope.tif", "product": "slope"},
                },
            ],
            "dry_run": True,
        },
    ),
    example_result={
        "steps": [
            {"id": "clip", "tool": "raster_clip", "call_id": "01JD8Z6Q3V.0", "status": "pending"},
            {"id": "slope", "tool": "raster_terrain", "call_id": "01JD8Z6Q3V.1", "status": "pending"},
        ],
        "estimate": 2,
        "dry_run": True,
    },
)


class AdvanceArgs(ToolArgs):
    call_id: str
    """The plan call one of whose steps just ended."""


class AdvanceResult(ToolResult):
    call_id: str
    enqueued: list[str]
    """The steps this run appended (none when another run had, or the plan has ended)."""


PLAN_ADVANCE = ToolSpec(
    name="plans.advance",
    title="Advance a plan",
    description="Internal: enqueue the steps of a plan whose dependencies have all succeeded.",
    queue=routes.GDAL,
    args=AdvanceArgs,
    result=AdvanceResult,
    hints=Hints(idempotent=True),
    timeout_s=300.0,
    internal=True,
)
