"""`workflow://{state_id}`: the transcript of a guided workflow run, read from its projection."""

from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ResourceError

from schemas.transcript import TranscriptView, render_transcript

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


def register(server: "MCPServer", runtime: "Gateway") -> None:
    @server.resource(
        "workflow://{state_id}",
        name="workflow_transcript",
        title="Workflow transcript",
        description="Every instruction and reply of a guided workflow run, in order (state_id from its answers).",
        mime_type="text/markdown",
    )
    async def transcript(state_id: str) -> str:
        assert runtime.store is not None
        keys, redis = runtime.store.live, runtime.store.redis
        fields = await redis.hgetall(keys.workflow(state_id))
        entries = await redis.lrange(keys.transcript(state_id), 0, -1)
        view = TranscriptView.from_redis(fields, entries)
        if view is None:
            raise ResourceError(f"no workflow run {state_id!r}")
        return render_transcript(view)
