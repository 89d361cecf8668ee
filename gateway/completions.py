"""`completion/complete` (both eras) and `logging/setLevel` (2025-11-25).

- resource templates: `metadata://{file}/…` completes workspace files from the catalog job (through the log, like
  any resource read), `catalog://workspace/{kind}` the catalog kinds;
- prompts: an argument that takes a CRS completes from pyproj's CRS database (`EPSG:32` → the UTM codes), resampling
  methods from the reference list.
"""

import logging
from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from mcp.server import ServerRequestContext
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
)

from schemas.tools.catalog import CATALOG_SCAN
from schemas.tools.raster import Resampling

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

logger = logging.getLogger(__name__)

MAX_VALUES = 100
"""The most values one completion may carry (the spec's limit)."""
CRS_ARGUMENTS = frozenset({"dst_crs", "src_crs", "crs", "epsg"})
METHOD_PROMPTS = frozenset({"justify_resampling_method"})
CATALOG_KINDS = ("all", "raster", "vector")

Completer = Callable[[str, dict[str, str]], Awaitable[list[str]]]
EXTRA: dict[tuple[str, str], Completer] = {}
"""More completers by (prompt name or template URI, argument), for prompts and templates added beside ours."""


def completion(values: list[str]) -> Completion:
    return Completion(values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES)


@cache
def _crs_codes() -> tuple[tuple[str, str], ...]:
    """`(EPSG:<code>, name)` of every non-deprecated EPSG CRS, by code."""
    from pyproj.database import query_crs_info

    infos = [i for i in query_crs_info(auth_name="EPSG") if not i.deprecated]
    return tuple(sorted(((f"EPSG:{i.code}", i.name) for i in infos), key=lambda c: (len(c[0]), c[0])))


def complete_crs(typed: str) -> list[str]:
    """CRS codes for what was typed: a code prefix (`EPSG:32`, `326`) or words of the name (`UTM zone 33N`)."""
    text = typed.strip()
    code = text.upper().removeprefix("EPSG:")
    if code.isdigit() or not code:
        return [c for c, _ in _crs_codes() if c.removeprefix("EPSG:").startswith(code)]
    words = text.lower().split()
    return [c for c, name in _crs_codes() if all(w in name.lower() for w in words)]


def complete_method(typed: str) -> list[str]:
    return [m.value for m in Resampling if m.value.startswith(typed.strip().lower())]


def register(server: "MCPServer", runtime: "Gateway") -> None:
    async def workspace_files(typed: str) -> list[str]:
        result = await runtime.run(CATALOG_SCAN, {"kind": "all", "details": False, "limit": 5000})
        entries = result.structured_content.get("entries", []) if isinstance(result.structured_content, dict) else []
        return sorted(e["relative"] for e in entries if e["relative"].startswith(typed))

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        resolved = dict(context.arguments or {}) if context is not None else {}
        key = ref.name if isinstance(ref, PromptReference) else ref.uri
        if (extra := EXTRA.get((key, argument.name))) is not None:
            return completion(await extra(argument.value, resolved))
        if isinstance(ref, PromptReference):
            if argument.name in CRS_ARGUMENTS:
                return completion(complete_crs(argument.value))
            if ref.name in METHOD_PROMPTS and argument.name == "method":
                return completion(complete_method(argument.value))
            return completion([])
        if ref.uri.startswith("metadata://") and argument.name == "file":
            return completion(await workspace_files(argument.value))
        if ref.uri.startswith("catalog://") and argument.name == "kind":
            return completion([k for k in CATALOG_KINDS if k.startswith(argument.value)])
        return completion([])

    async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
        """Accepted, not applied: the only log lines a client gets are those a job addresses to it (`tool.logged`)."""
        logger.debug("client asked for log level %s", params.level)
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
