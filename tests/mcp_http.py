"""Raw MCP 2026-07-28 requests over HTTP for tests that look at status codes and headers (auth, limits, fuzzing)."""

import json
from dataclasses import dataclass
from typing import Any

import httpx

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


@dataclass
class Reply:
    """One HTTP answer: status, headers, and the JSON-RPC message it carried (from JSON or the SSE stream)."""

    status: int
    headers: httpx.Headers
    message: Any

    @property
    def result(self) -> dict[str, Any]:
        assert isinstance(self.message, dict) and "result" in self.message, self.message
        return self.message["result"]


def headers(method: str, name: str | None = None, token: str | None = None) -> dict[str, str]:
    out = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        out["Mcp-Name"] = name
    if token is not None:
        out["Authorization"] = f"Bearer {token}"
    return out


def frame(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    """A JSON-RPC request with the 2026-07-28 `_meta` envelope."""
    params = dict(params or {})
    params["_meta"] = {**META, **(params.get("_meta") or {})}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def parse(response: httpx.Response) -> Reply:
    """The reply's JSON-RPC message: the body, or the last `data:` of an SSE stream; raw text when neither."""
    kind = response.headers.get("content-type", "")
    text = response.text
    if kind.startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    try:
        message = json.loads(text) if text else None
    except ValueError:
        message = text
    return Reply(response.status_code, response.headers, message)


def call_tool(
    client: httpx.Client, url: str, name: str, arguments: dict[str, Any], token: str | None = None, **extra: Any
) -> Reply:
    """`tools/call` as one stateless request."""
    body = json.dumps(frame("tools/call", {"name": name, "arguments": arguments, **extra})).encode()  # \u-escaped
    return parse(client.post(url, content=body, headers=headers("tools/call", name, token)))


def read_resource(client: httpx.Client, url: str, uri: str, token: str | None = None) -> Reply:
    body = frame("resources/read", {"uri": uri})
    return parse(client.post(url, json=body, headers=headers("resources/read", uri, token)))
