"""The conformance suite's plain tool fixtures: result shapes, progress, client log lines, errors, schema features.

Each is a small job on the `gdal` queue; what the suite checks about it is named in its description.
"""

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from schemas import tasks
from schemas.content import ContentBlock
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.conformance.tasks import NeverResult, NoArgs

READ_ONLY = Hints(read_only=True, idempotent=True)


class Reply(ToolResult):
    """A fixture's answer: one sentence, which is also the first text block of the result."""

    said: str

    def summary(self) -> str:
        return self.said


MediaKind = Literal["text", "image", "audio", "resource"]


class MediaReply(ToolResult):
    """Which kinds of content the job returned; the blocks themselves go in the result's `content`."""

    shown: list[MediaKind]
    _blocks: list[ContentBlock] = PrivateAttr(default_factory=list)

    @classmethod
    def of(cls, blocks: list[ContentBlock]) -> "MediaReply":
        reply = cls(shown=[block.type for block in blocks])
        reply._blocks = list(blocks)
        return reply

    def summary(self) -> str:
        return "returned " + ", ".join(self.shown)

    def blocks(self) -> list[ContentBlock]:
        return list(self._blocks)


def _fixture(name: str, description: str, args: type[ToolArgs] = NoArgs, result: type[ToolResult] = Reply) -> ToolSpec:
    title = name.removeprefix("test_").replace("_", " ").capitalize() + " (conformance fixture)"
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        queue=tasks.GDAL,
        args=args,
        result=result,
        hints=READ_ONLY,
        timeout_s=60.0,
    )


class GreetArgs(ToolArgs):
    name: str = Field(min_length=1, max_length=200)


class RegionArgs(ToolArgs):
    region: str = Field(default="", max_length=200, json_schema_extra={"x-mcp-header": "Region"})
    """Also sent as the `Mcp-Param-Region` HTTP header, which the server checks against this value (SEP-2243)."""


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"$anchor": "addressDef"})

    street: str = ""
    city: str = ""


class ContactArgs(ToolArgs):
    """A contact with a phone or an e-mail address; `contactMethod` says which one must be given."""

    DEFS_NAME: ClassVar[str] = "address"

    name: str = ""
    address: Address | None = None
    contactMethod: Literal["phone", "email"] | None = None  # the suite's property name (camelCase)
    phone: str = ""
    email: str = ""

    @model_validator(mode="after")
    def _reachable(self) -> "ContactArgs":
        needed = "phone" if self.contactMethod == "phone" else "email"
        if not (self.phone or self.email) or (self.contactMethod and not getattr(self, needed)):
            raise ValueError(f"give {needed if self.contactMethod else 'a phone or an email'}")
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's schema, with the draft named and the rules above as 2020-12 keywords (SEP-1613, SEP-2106)."""
        schema = super().model_json_schema(*args, **kwargs)
        defs = schema.pop("$defs", {})
        schema["$defs"] = {cls.DEFS_NAME: defs.pop(Address.__name__), **defs}
        schema["properties"]["address"] = {"anyOf": [{"$ref": f"#/$defs/{cls.DEFS_NAME}"}, {"type": "null"}]}
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["allOf"] = [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}]
        schema["if"] = {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]}
        schema["then"] = {"required": ["phone"]}
        schema["else"] = {"required": ["email"]}
        return schema


TEXT = _fixture("test_simple_text", "Answers with one text block.")
IMAGE = _fixture("test_image_content", "Answers with a small PNG image block.", result=MediaReply)
AUDIO = _fixture("test_audio_content", "Answers with a short WAV audio block (audio/wav).", result=MediaReply)
EMBEDDED = _fixture("test_embedded_resource", "Answers with an embedded text resource.", result=MediaReply)
MIXED = _fixture(
    "test_multiple_content_types", "Answers with text, an image and an embedded JSON resource.", result=MediaReply
)
FAILS = _fixture("test_error_handling", "Always ends with a tool error (isError) that says why.", result=NeverResult)
PROGRESS = _fixture("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 before it answers.")
LOGGING = _fixture("test_tool_with_logging", "Sends three log lines to the client while it runs.")
HELD = _fixture(
    "test_reconnection",
    "Holds the call for a moment with a log line before and after (SSE polling scenario; Geogate keeps the stream).",
)
GREET = _fixture("greet", "Says hello to `name` (always synchronous: never a task).", args=GreetArgs)
REGION = _fixture(
    "test_x_mcp_header", "Echoes `region`, which the client also sends as the Mcp-Param-Region header.", RegionArgs
)
CONTACT = _fixture(
    "json_schema_2020_12_tool", "Takes a contact whose input schema uses JSON Schema 2020-12 keywords.", ContactArgs
)
TOOLS_CHANGED = _fixture(
    "test_trigger_tool_change", "Announces a tool-list change to subscriptions/listen streams (the list is fixed)."
)
PROMPTS_CHANGED = _fixture(
    "test_trigger_prompt_change", "Announces a prompt-list change to subscriptions/listen streams (the list is fixed)."
)
NEEDS_SAMPLING = ToolSpec(
    name="test_missing_capability",
    title="Needs sampling (conformance fixture)",
    description="Runs only for a client that declared sampling; any other gets -32021 and no call is made.",
    queue=tasks.GDAL,
    args=NoArgs,
    result=Reply,
    hints=READ_ONLY,
    timeout_s=60.0,
    client_needs=frozenset({"sampling"}),
)

CALL_SPECS: tuple[ToolSpec, ...] = (
    TEXT,
    IMAGE,
    AUDIO,
    EMBEDDED,
    MIXED,
    FAILS,
    PROGRESS,
    LOGGING,
    HELD,
    GREET,
    REGION,
    CONTACT,
    TOOLS_CHANGED,
    PROMPTS_CHANGED,
    NEEDS_SAMPLING,
)
