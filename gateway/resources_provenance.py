"""The `provenance://{path}` resource: a workspace file's lineage from the log, as the `provenance` tool gives it.

The record is built by the `provenance` job on a worker (it reads the log and digests files for drift), whether or
not the `provenance` toolset is published: a resource read is the gateway's own call.
"""

from typing import TYPE_CHECKING

from gateway.resources_gdal import JSON, dumps, run_job
from schemas.tools.provenance import PROVENANCE

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """`provenance://{+path}{?depth}`: the record of one workspace file."""

    @server.resource("provenance://{+path}{?depth}", name="provenance", mime_type=JSON)
    async def provenance(path: str, depth: int = 8) -> str:
        """Where a workspace file comes from: the calls that wrote it and its inputs (recursively), their
        parameters, workers, software versions and times, as W3C PROV-JSON, with the files changed since (drift)."""
        return dumps(await run_job(runtime, PROVENANCE, {"path": path, "depth": depth}))
