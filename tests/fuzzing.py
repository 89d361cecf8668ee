"""Fuzzing the running gateway over real HTTP (issue 14): hostile tool arguments for every tool, raw JSON-RPC frames.

What must hold after every case: no HTTP 500 and no dropped connection, every error about the input names the
field, and `ping` is still answered. `Tally` counts what came back, for the README.
"""

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import strategies as st

from gateway.server import input_schema
from schemas.tools import TOOLS
from tests.mcp_http import call_tool, headers, parse

HUGE_INTS = st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -(10**30), 2**1024])
HUGE_FLOATS = st.sampled_from([1e308, -1e308, 5e-324, 1.7976931348623157e308])
TEXT = st.text(max_size=40) | st.sampled_from(["", "\x00", "../../etc/passwd", "/etc/shadow", "é" * 200])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | HUGE_INTS
    | st.floats(allow_nan=False, allow_infinity=False)
    | HUGE_FLOATS
    | TEXT
)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12
)

INPUT_CODES = ("args.", "path.", "crs.", "band.", "layer.", "driver.", "option.", "output.", "handler.")
"""Error codes about the caller's input: these must name the field they are about."""


def deep(depth: int) -> str:
    """A JSON value nested `depth` arrays deep, as text (too deep for a naive recursive parser)."""
    return "[" * depth + "]" * depth


PATHS = st.sampled_from(["dem.tif", "points.gpkg", "missing.tif", "out/x.tif", "fuzz.tif", "fuzz.gpkg"])


def _plausible(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that mostly fit one property's schema (enums, types, bounds), so calls get past validation too."""
    if "$ref" in schema:
        return _plausible(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, depth + 1)
    if "enum" in schema or "const" in schema:
        return st.sampled_from(schema.get("enum", [schema.get("const")]))
    options = schema.get("anyOf") or schema.get("oneOf")
    if options and depth < 4:
        return st.one_of([_plausible(option, defs, depth + 1) for option in options])
    kind = schema.get("type")
    if isinstance(kind, list):  # a nullable field, published as [type, "null"]
        kind = next((k for k in kind if k != "null"), None)
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -5), max_value=min(schema.get("maximum", 5000), 5000))
    if kind == "number":
        return st.floats(min_value=schema.get("minimum", -1e3), max_value=schema.get("maximum", 1e3))
    if kind == "boolean":
        return st.booleans()
    if kind == "array" and depth < 4:
        return st.lists(_plausible(schema.get("items", {}), defs, depth + 1), max_size=4)
    if kind == "object" and depth < 4:
        props = schema.get("properties", {})
        return st.fixed_dictionaries({}, optional={k: _plausible(v, defs, depth + 1) for k, v in props.items()})
    return PATHS | TEXT if kind in (None, "string") else JSON_VALUES


def _valid_ish(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    defs, props = schema.get("$defs", {}), schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = {k: _plausible(v, defs) for k, v in props.items()}
    return st.fixed_dictionaries(
        {k: s for k, s in fields.items() if k in required},
        optional={k: s for k, s in fields.items() if k not in required},
    )


def _tool_arguments(name: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = input_schema(TOOLS[name])
    properties = list(schema.get("properties", {}))
    valid = _valid_ish(schema).filter(lambda a: name != "ping" or a.get("delay_ms", 0) <= 50)
    mutated = st.builds(
        _mutate,
        valid,
        st.sampled_from([*properties, "unknown_field", "__proto__", ""]),
        JSON_VALUES | st.just(json.loads(deep(60))),
        st.booleans(),
    )
    return valid | mutated | st.dictionaries(TEXT, JSON_VALUES, max_size=4)


def _mutate(arguments: dict[str, Any], key: str, value: Any, drop: bool) -> dict[str, Any]:
    out = dict(arguments)
    if drop and key in out:
        del out[key]
    else:
        out[key] = value
    return out


TOOL_CASES = st.sampled_from(sorted(TOOLS)).flatmap(lambda name: st.tuples(st.just(name), _tool_arguments(name)))
"""A tool name and arguments for it: schema-valid, one field wrong, or anything at all."""


def _frame_object() -> st.SearchStrategy[Any]:
    methods = st.sampled_from(["tools/call", "tools/list", "resources/read", "prompts/get", "ping", "initialize"])
    method = methods | TEXT | SCALARS
    optional = {"name": SCALARS | st.sampled_from(sorted(TOOLS)), "arguments": JSON_VALUES, "uri": SCALARS}
    params = st.fixed_dictionaries({}, optional={**optional, "_meta": JSON_VALUES}) | JSON_VALUES
    return st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.just("2.0") | SCALARS,
            "id": st.integers() | TEXT | SCALARS | HUGE_INTS,
            "method": method,
            "params": params,
        },
    )


def _raw_frames() -> st.SearchStrategy[bytes]:
    as_json = _frame_object().map(lambda f: json.dumps(f).encode())
    batch = st.lists(_frame_object(), max_size=4).map(lambda f: json.dumps(f).encode())
    odd = st.sampled_from(
        [
            b"",
            b"{",
            b"null",
            b"[]",
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{"delay_ms":1e999}}}',
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{"queue":"\xff\xfe"}}}',
            b'{"jsonrpc":"2.0","id":1,"method":"ping\xc3\x28"}',
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{"queue":"\\ud800"}}}',
            deep(100_000).encode(),
            ('{"a":' * 5000 + "1" + "}" * 5000).encode(),
        ]
    )
    garbage = st.binary(max_size=200)
    return as_json | batch | odd | garbage


FRAME_CASES = st.tuples(_raw_frames(), st.sampled_from(["modern", "legacy", "bare"]))
"""Raw bytes for /mcp and which headers go with them (2026-07-28, a legacy POST without a session, none)."""


@dataclass
class Tally:
    """What the fuzzer saw: cases run, HTTP statuses, error codes, and any case that broke a rule."""

    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    broken: list[str] = field(default_factory=list)

    def line(self) -> str:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items()))
        return f"{self.cases} cases; HTTP {statuses}; {len(self.codes)} distinct error codes; {len(self.broken)} broken"


def _unnamed(error: dict[str, Any]) -> bool:
    """An input error that names no field."""
    code = str(error.get("code", ""))
    if not code.startswith(INPUT_CODES):
        return False
    listed = error.get("errors")
    if isinstance(listed, list) and listed:
        return not all(isinstance(e, dict) and e.get("field") for e in listed)
    return not error.get("field")


def check_tool_reply(name: str, arguments: dict[str, Any], reply: Any, tally: Tally) -> str | None:
    """Record one tool case; what broke a rule (a 500, a non-JSON-RPC answer, an input error naming no field)."""
    tally.cases += 1
    tally.statuses[reply.status] += 1
    problem = None
    if reply.status >= 500 or not isinstance(reply.message, dict):
        problem = f"{name} {arguments!r:.300}: HTTP {reply.status} {reply.message!r:.200}"
    elif isinstance(reply.message.get("error"), dict):
        problem = _jsonrpc_error(reply.message["error"], tally)
    else:
        content = (reply.message.get("result") or {}).get("structuredContent") or {}
        error = content.get("error") if isinstance(content, dict) else None
        if isinstance(error, dict):
            tally.codes[str(error.get("code"))] += 1
            if _unnamed(error) or error.get("code") in CRASHES:
                problem = f"{name} {arguments!r:.300}: error names no field or is a crash: {error!r:.300}"
    if problem:
        tally.broken.append(problem)
    return problem


NAMED_MEMBERS = (
    "body",
    "jsonrpc",
    "'id'",
    "method",
    "params",
    "name",
    "uri",
    "arguments",
    "_meta",
    "header",
    "session",
)
CRASHES = ("job.crashed", "handler.crashed")
"""A job that crashed on its input is a bug the fuzzer found, whatever the error says."""


def _jsonrpc_error(error: dict[str, Any], tally: Tally) -> str | None:
    """A JSON-RPC error must say which member (or header) is at fault, in `data.field` or its message."""
    tally.codes[f"jsonrpc:{error.get('code')}"] += 1
    data, message = error.get("data"), str(error.get("message", ""))
    if (isinstance(data, dict) and data.get("field")) or any(m in message for m in NAMED_MEMBERS):
        return None
    return f"JSON-RPC error names no member: {error!r:.300}"


def send_frame(client: httpx.Client, url: str, body: bytes, style: str) -> Any:
    """POST raw `body` to /mcp with the headers of `style`."""
    if style == "modern":
        sent = headers("tools/call", "ping")
    elif style == "legacy":
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    else:
        sent = {}
    return parse(client.post(url, content=body, headers=sent))


def check_frame_reply(body: bytes, reply: Any, tally: Tally) -> str | None:
    """Record one frame case; what broke a rule (a 500, a JSON-RPC error naming no member)."""
    tally.cases += 1
    tally.statuses[reply.status] += 1
    problem = None
    if reply.status >= 500:
        problem = f"frame {body[:200]!r}: HTTP {reply.status} {reply.message!r:.200}"
    elif isinstance(reply.message, dict) and isinstance(reply.message.get("error"), dict):
        problem = _jsonrpc_error(reply.message["error"], tally)
        problem = f"frame {body[:200]!r}: {problem}" if problem else None
    if problem:
        tally.broken.append(problem)
    return problem


def pong(client: httpx.Client, url: str) -> bool:
    """The gateway still answers `ping` through a worker."""
    reply = call_tool(client, url, "ping", {})
    return reply.status == 200 and isinstance(reply.message, dict) and reply.result["structuredContent"]["pong"] is True
