"""Everything the gateway serves beside the tools: resources, prompts and HTTP routes, registered in one list.

Each registrar is `register(server, runtime)`; it declares resources, prompts or `server.custom_route`s whose work,
when it needs GDAL or a sandbox, goes through `runtime.run(spec, args)` like any tool call.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway import (
    chat,
    completions,
    health,
    maps,
    metrics,
    resources_calls,
    resources_gdal,
    resources_provenance,
    resources_workflow,
    xyz,
)
from gateway.ops import routes as ops_routes
from gateway.preflight import surface as preflight_surface

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

Registrar = Callable[["MCPServer", "Gateway"], None]

REGISTRARS: list[Registrar] = [
    health.register,
    completions.register,
    metrics.register,
    chat.register,
    resources_workflow.register,
    resources_gdal.register,
    resources_calls.register,
    resources_provenance.register,
    preflight_surface.register,
    ops_routes.register,
    xyz.register,
    maps.register,
]
