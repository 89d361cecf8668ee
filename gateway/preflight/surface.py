"""What preflight adds to the MCP surface: the prompts, persist/revoke tools, and `justification://{hash}`."""

import json
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from gateway.compact import compact_schema, example_line, shallow_schema
from gateway.identity import caller, is_admin
from gateway.preflight.gate import Gate
from gateway.preflight.persist import persist
from gateway.rawtool import raw_tool
from gateway.results import error_result, invalid
from geogate.calls import keys
from geogate.calls.publish import new_event
from schemas.events.justification import JustificationRevoked, justification_aggregate
from schemas.preflight.justification import Persisted, PersistItem, PersistMany
from schemas.preflight.prompts import PROMPTS, PromptTemplate
from schemas.validation import ArgumentsInvalid, FieldError

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


class RevokeArgs(BaseModel):
    model_config = {"extra": "forbid"}

    hash: str = Field(pattern=r"^(sha256:)?[0-9a-f]{64}$")
    reason: str = Field(default="revoked by an administrator", max_length=500)


class Revoked(BaseModel):
    hash: str
    revoked: bool


def _prompt(template: PromptTemplate) -> Prompt:
    return Prompt(
        name=template.name,
        title=template.title,
        description=f"Ask for a 4-key JSON justification ({template.domain}) before a consequential GDAL call.",
        arguments=[PromptArgument(name=a, required=True) for a in template.arguments],
        fn=lambda **kwargs: template.render(kwargs),
    )


def _parse(model: type[BaseModel], arguments: dict[str, Any], tool: str) -> Any:
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        errors = [FieldError(".".join(map(str, e["loc"])), e["msg"], e.get("input")) for e in exc.errors()]
        raise ArgumentsInvalid(tool, errors) from exc


def _ok(value: BaseModel) -> CallToolResult:
    body = value.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body)


class PreflightTools:
    """The persist and revoke tools: gateway-local, since their work is one append each (no queue hop)."""

    def __init__(self, runtime: "Gateway") -> None:
        self.runtime = runtime

    def gate(self) -> Gate:
        assert self.runtime.store is not None, "gateway not started"
        return Gate(self.runtime.store, self.runtime.settings)

    async def persist_one(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        return await self._persist(PersistItem, arguments, ctx, "persist_justification")

    async def persist_many(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        return await self._persist(PersistMany, arguments, ctx, "persist_justifications")

    async def _persist(self, model: type[BaseModel], arguments: dict[str, Any], ctx: Context, tool: str):
        try:
            parsed = _parse(model, arguments, tool)
        except ArgumentsInvalid as exc:
            return invalid(exc)
        items, prefix = (parsed.items, "items.") if isinstance(parsed, PersistMany) else ([parsed], "")
        errors = await persist(self.gate(), items, actor=caller(ctx), prefix=prefix)
        if errors:
            return invalid(ArgumentsInvalid(tool, errors))
        return _ok(Persisted(persisted=[i.hash for i in items], message="persisted; retry the gated call now"))

    async def revoke(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        actor = caller(ctx)
        if not is_admin(self.runtime.settings, actor):
            return error_result(f"{actor} may not revoke justifications", {"code": "auth.forbidden"})
        try:
            args = _parse(RevokeArgs, arguments, "revoke_justification")
        except ArgumentsInvalid as exc:
            return invalid(exc)
        digest = args.hash.removeprefix("sha256:")
        data = JustificationRevoked(hash=digest, reason=args.reason)
        event = new_event(justification_aggregate(digest), data, actor=actor)
        await self.gate().store.append(event, keys.justification_revoked_key(digest, event.id))
        return _ok(Revoked(hash=digest, revoked=True))

    def tools(self) -> list[Tool]:
        writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
        revokes = ToolAnnotations(destructive_hint=True, idempotent_hint=True)
        table = [
            (
                "persist_justification",
                "Persist a justification",
                PERSIST_ONE,
                PersistItem,
                Persisted,
                writes,
                self.persist_one,
            ),
            (
                "persist_justifications",
                "Persist several justifications",
                PERSIST_MANY,
                PersistMany,
                Persisted,
                writes,
                self.persist_many,
            ),
            (
                "revoke_justification",
                "Revoke a justification (admin)",
                REVOKE,
                RevokeArgs,
                Revoked,
                revokes,
                self.revoke,
            ),
        ]
        return [
            raw_tool(
                name=name,
                title=title,
                description=text + example_line(EXAMPLES[name]),
                input_schema=compact_schema(args.model_json_schema()),
                result=result,
                output_schema=shallow_schema(result.model_json_schema()),
                annotations=hints,
                handler=handler,
            )
            for name, title, text, args, result, hints, handler in table
        ]


PERSIST_ONE = "Store one 4-key JSON justification for a hash from a preflight hint, then retry the call."
PERSIST_MANY = "Store every justification a preflight hint asked for in one call (all or none), then retry the call."
REVOKE = "Withdraw a cached justification; calls that need it are gated again. Administrators only."

_HASH = "sha256:" + "3f" * 32
_JUSTIFICATION = {
    "intent": "Web map tiles of the DEM",
    "alternatives": [{"method": "EPSG:4326", "why_not": "not the tiles' CRS"}],
    "choice": {"method": "EPSG:3857", "rationale": "what web maps use", "tradeoffs": "areas distorted"},
    "confidence": "high",
}
EXAMPLES: dict[str, tuple[dict[str, Any], ...]] = {
    "persist_justification": ({"hash": _HASH, "domain": "crs_datum", "justification": _JUSTIFICATION},),
    "persist_justifications": ({"items": [{"hash": _HASH, "domain": "crs_datum", "justification": _JUSTIFICATION}]},),
    "revoke_justification": ({"hash": _HASH, "reason": "the tiles moved to EPSG:3035"},),
}
"""Example arguments of each tool above (a test validates them against its argument model)."""


def tools(runtime: "Gateway") -> list[Tool]:
    """The preflight tools (persist, revoke) for the server's tool list."""
    return PreflightTools(runtime).tools()


def register(server: "MCPServer", runtime: "Gateway") -> None:
    for template in PROMPTS.values():
        server.add_prompt(_prompt(template))

    @server.resource(
        "justification://{digest}",
        name="justification",
        title="A justification",
        description="A justification: who gave it and when, its status, and the calls that used it.",
        mime_type="application/json",
    )
    async def show(digest: str) -> str:
        assert runtime.store is not None
        gate = Gate(runtime.store, runtime.settings)
        state = (await gate.states([digest.removeprefix("sha256:")]))[0]
        if state is None:
            raise ResourceError(f"no justification {digest!r}")
        calls = sorted(
            c.decode() for c in await runtime.store.redis.smembers(runtime.store.live.justification_calls(state.hash))
        )
        return json.dumps({**state.model_dump(), "used_by_calls": calls}, indent=2)
