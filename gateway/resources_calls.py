"""`calls://{call_id}/raw`: a call's raw tool output (what its handler saw), from the projection and blob store."""

import json
from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ResourceError

from gateway.identity import caller, is_admin
from geogate.eventlog.errors import BlobMissing
from schemas.tools.handlers import RAW_URI_TEMPLATE

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Declare the raw-output resource template on `server`."""

    @server.resource(
        RAW_URI_TEMPLATE,
        name="call_raw_output",
        title="Raw output of a call",
        description=(
            "The tool's full output before its result_handler ran (JSON), kept for a limited time so a failed "
            "handler can be fixed and re-run without running the tool again. Only the calling client (or an "
            "administrator) may read it."
        ),
        mime_type="application/json",
    )
    async def raw_output(call_id: str) -> str:
        return await read_raw(runtime, call_id)


async def read_raw(runtime: "Gateway", call_id: str) -> str:
    """The raw output of `call_id` as JSON text.

    Raises:
        ResourceError: no such call for this client, the call has no output, or the output has expired.
    """
    assert runtime.store is not None, "gateway not started"
    state = await runtime.store.call_state(call_id)
    actor = caller()
    if state is None or (state.actor != actor and not is_admin(runtime.settings, actor)):  # as good as absent
        raise ResourceError(f"no call {call_id!r}")
    if state.status != "succeeded":
        raise ResourceError(f"call {call_id} has no output (status: {state.status})")
    if state.output_ref is None:
        return json.dumps(state.result, separators=(",", ":"))
    try:
        return (await runtime.store.get_blob(state.output_ref)).decode()
    except BlobMissing as exc:
        raise ResourceError(f"the raw output of call {call_id} has expired (blob {state.output_ref.uri})") from exc
