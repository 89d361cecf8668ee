"""What reflection adds to the MCP surface: the prompts, persist/revoke tools, and `justification://{hash}`."""

import json
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from eventlog.projections.justifications import used_by_key
from eventlog.publish import new_event
from gateway.identity import caller
from gateway.rawtool import raw_tool
from gateway.reflection.gate import Gate
from gateway.reflection.persist import persist
from gateway.reflection.prompts import PROMPTS, PromptTemplate
from gateway.results import error_result, invalid
from schemas.events.justification import JustificationRevoked, justification_aggregate
from schemas.reflection import Persisted, PersistItem, PersistMany
from schemas.validation import ArgumentsInvalid, FieldError

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.calls import Gateway


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


def _done(items: list[PersistItem]) -> CallToolResult:
    value = Persisted(persisted=[i.hash for i in items], message="persisted; retry the gated call now")
    body = value.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body)


def tools(runtime: "Gateway") -> list[Tool]:
    """The persist and revoke tools (gateway-local: their work is one append, no queue hop)."""

    async def persist_items(items: list[PersistItem], ctx: Context, tool: str, prefix: str) -> CallToolResult:
        assert runtime.store is not None
        errors = await persist(Gate(runtime.store, runtime.settings), items, actor=caller(ctx), prefix=prefix)
        return invalid(ArgumentsInvalid(tool, errors)) if errors else _done(items)

    async def persist_one(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            item = _parse(PersistItem, arguments, "persist_justification")
        except ArgumentsInvalid as exc:
            return invalid(exc)
        return await persist_items([item], ctx, "persist_justification", "")

    async def persist_many(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            many = _parse(PersistMany, arguments, "persist_justifications")
        except ArgumentsInvalid as exc:
            return invalid(exc)
        return await persist_items(many.items, ctx, "persist_justifications", "items.")

    async def revoke(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        actor = caller(ctx)
        if not runtime.settings.is_admin(actor):
            return error_result(f"{actor} may not revoke justifications", {"code": "auth.forbidden"})
        try:
            args = _parse(RevokeArgs, arguments, "revoke_justification")
        except ArgumentsInvalid as exc:
            return invalid(exc)
        digest = args.hash.removeprefix("sha256:")
        assert runtime.store is not None
        event = new_event(
            justification_aggregate(digest), JustificationRevoked(hash=digest, reason=args.reason), actor=actor
        )
        await runtime.store.append(event, f"justification:{digest}:revoked:{event.id}")
        body = Revoked(hash=digest, revoked=True).model_dump()
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body)

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
    return [
        raw_tool(
            name="persist_justification",
            title="Persist a justification",
            description="Store one 4-key JSON justification for a hash from a preflight hint, then retry the call.",
            input_schema=PersistItem.model_json_schema(),
            result=Persisted,
            annotations=writes,
            handler=persist_one,
        ),
        raw_tool(
            name="persist_justifications",
            title="Persist several justifications",
            description="Store every justification a preflight hint asked for in one call (all or none), then retry.",
            input_schema=PersistMany.model_json_schema(),
            result=Persisted,
            annotations=writes,
            handler=persist_many,
        ),
        raw_tool(
            name="revoke_justification",
            title="Revoke a justification (admin)",
            description="Withdraw a cached justification; calls that need it are gated again. Administrators only.",
            input_schema=RevokeArgs.model_json_schema(),
            result=Revoked,
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
            handler=revoke,
        ),
    ]


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
            c.decode() for c in await runtime.store.redis.smembers(used_by_key(runtime.store.live, state.hash))
        )
        return json.dumps({**state.model_dump(), "used_by_calls": calls}, indent=2)
