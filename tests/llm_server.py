"""A scripted OpenAI-compatible (and Anthropic Messages) chat server for tests: replays replies, records requests."""

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Reply = dict[str, Any]


def text(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, finish: str = "stop") -> Reply:
    """A scripted reply with text content."""
    return {"content": content, "usage": [prompt_tokens, completion_tokens], "finish_reason": finish}


def native(*calls: tuple[str, Any], content: str = "") -> Reply:
    """A scripted reply with native tool calls `(name, arguments)`; dict arguments are sent as JSON text."""
    return {"content": content, "tool_calls": list(calls)}


def failure(status: int, *, retry_after: float | None = None) -> Reply:
    """A scripted HTTP error."""
    return {"status": status, "retry_after": retry_after}


def raw(body: dict[str, Any]) -> Reply:
    """A scripted reply body sent as-is (Anthropic replies, odd shapes)."""
    return {"raw": body}


class Script:
    """The replies still to play and every request body received, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []

    def load(self, replies: Sequence[Reply]) -> None:
        """Replace the script and forget earlier requests."""
        with self._lock:
            self.replies, self.requests = list(replies), []

    @property
    def temperatures(self) -> list[float]:
        """The temperature of every request received."""
        return [r["temperature"] for r in self.requests]

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Record `body` and play the next reply: (status, JSON body, headers)."""
        with self._lock:
            self.requests.append(body)
            reply = self.replies.pop(0) if self.replies else {"status": 400, "error": "script exhausted"}
        return _render(reply)


def _render(reply: Reply) -> tuple[int, dict[str, Any], dict[str, str]]:
    if "raw" in reply:
        return 200, reply["raw"], {}
    if "status" in reply:
        headers = {"retry-after": str(reply["retry_after"])} if reply.get("retry_after") is not None else {}
        return reply["status"], {"error": {"message": reply.get("error", "scripted failure")}}, headers
    prompt, completion = reply.get("usage", [10, 5])
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content", "")}
    if reply.get("tool_calls"):
        message["tool_calls"] = [_call(i, name, args) for i, (name, args) in enumerate(reply["tool_calls"])]
    choice = {"index": 0, "message": message, "finish_reason": reply.get("finish_reason", "stop")}
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return 200, {"id": "chatcmpl-test", "object": "chat.completion", "choices": [choice], "usage": usage}, {}


def _call(index: int, name: str, args: Any) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": arguments}}


def build_app(script: Script) -> Starlette:
    """The ASGI app: `POST /v1/chat/completions` and `POST /v1/messages` both play `script`."""

    async def complete(request: Request) -> JSONResponse:
        status, body, headers = script.respond(await request.json())
        return JSONResponse(body, status_code=status, headers=headers)

    routes = [Route(path, complete, methods=["POST"]) for path in ("/v1/chat/completions", "/v1/messages")]
    return Starlette(routes=routes)


def mock_transport(script: Script) -> httpx.MockTransport:
    """The same script, in process (no sockets): for benchmarks and quick provider tests."""

    def handle(request: httpx.Request) -> httpx.Response:
        status, body, headers = script.respond(json.loads(request.content))
        return httpx.Response(status, json=body, headers=headers)

    return httpx.MockTransport(handle)


class ScriptedServer:
    """A uvicorn server on 127.0.0.1 and a free port, in a thread, playing one `Script`."""

    def __init__(self) -> None:
        self.script = Script()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)  # connections queue until uvicorn accepts them: no start-up wait needed
        port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        config = uvicorn.Config(build_app(self.script), log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


@contextmanager
def scripted_server() -> Iterator[ScriptedServer]:
    """A running `ScriptedServer`, stopped on exit."""
    server = ScriptedServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
