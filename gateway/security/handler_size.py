"""The result-handler script size limit (`GEOGATE_HANDLER_MAX_SCRIPT_BYTES`), checked before anything is appended."""

from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from gateway.results import invalid
from schemas.tools.handlers import HANDLER_ARG, HANDLER_META
from schemas.validation import ArgumentsInvalid, FieldError


def _meta(ctx: Context | None) -> dict[str, Any]:
    try:
        meta = ctx.request_context.meta if ctx is not None else None
    except ValueError:  # no request in progress
        return {}
    if meta is None:
        return {}
    return meta if isinstance(meta, dict) else meta.model_dump(by_alias=True, exclude_none=True)


def _script_bytes(handler: Any) -> int:
    script = handler.get("script") if isinstance(handler, dict) else None
    if isinstance(script, list):
        script = "\n".join(s for s in script if isinstance(s, str))
    return len(script.encode("utf-8", "surrogatepass")) if isinstance(script, str) else 0


def oversized_handler(tool: str, arguments: dict[str, Any], ctx: Context | None, limit: int) -> CallToolResult | None:
    """A field error naming the handler's `script` when it is over `limit` bytes, else None."""
    candidates = ((HANDLER_ARG, arguments.get(HANDLER_ARG)), (f"_meta.{HANDLER_META}", _meta(ctx).get(HANDLER_META)))
    for where, handler in candidates:
        size = _script_bytes(handler)
        if size > limit:
            reason = f"the script is {size} bytes; the limit is {limit} (GEOGATE_HANDLER_MAX_SCRIPT_BYTES)"
            return invalid(ArgumentsInvalid(tool, [FieldError(f"{where}.script", reason, None)]))
    return None
