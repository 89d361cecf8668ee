"""Raw tool-call formats open models emit when the serving engine does not parse them.

Exact markers supported (everything else falls through to the JSON object scan, which also covers
Hermes `<tool_call>{json}</tool_call>`, Llama 3.x JSON `{"name", "parameters"}`, `<|python_tag|>{json}`
and Mistral's old `[TOOL_CALLS] [{"name", "arguments"}]`):

- Qwen3 / Qwen3-Coder: `<function=NAME><parameter=KEY>VALUE</parameter>…</function>`
- Llama 3.1 custom functions: `<function=NAME>{json}</function>`
- GLM-4.5/4.6: `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>`
- DeepSeek V3/R1: `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + fenced JSON + `<｜tool▁call▁end｜>`;
  DeepSeek V3.1: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`
- Kimi K2: `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>`
- gpt-oss (harmony): `to=functions.NAME … <|message|>{json}<|call|>`
- Mistral (tokenizer v11+): `[TOOL_CALLS]NAME[ARGS]{json}` (optionally `[CALL_ID]id` before `[ARGS]`)
- Llama 3.x `<|python_tag|>NAME(k=v, …)` or `NAME.call(k=v)` (Python call syntax, literals only)
"""

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import JsonValue

_NAME = r"[A-Za-z_][\w.\-]*"
_END = r"(?P<end>{end}|\Z)"


@dataclass(frozen=True)
class RawCall:
    """A call found by a marker: the name, and arguments as parsed values or JSON text still to parse."""

    name: str
    arguments: JsonValue
    format: str


@dataclass
class MarkerScan:
    """What the markers yielded, which blocks were cut off, and the text left for the JSON scan."""

    calls: list[RawCall] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    rest: str = ""


def _pattern(body: str, end: str) -> re.Pattern[str]:
    return re.compile(body + _END.format(end=end), re.DOTALL)


_QWEN = _pattern(rf"<function=(?P<name>{_NAME})>(?P<body>.*?)", re.escape("</function>"))
_GLM = _pattern(rf"<tool_call>\s*(?P<name>{_NAME})\s*(?P<body>(?:<arg_key>.*?)?)", re.escape("</tool_call>"))
_DEEPSEEK = _pattern(
    rf"<｜tool▁call▁begin｜>(?:function<｜tool▁sep｜>(?P<name>{_NAME})|(?P<name2>{_NAME})<｜tool▁sep｜>)(?P<body>.*?)",
    re.escape("<｜tool▁call▁end｜>"),
)
_KIMI = _pattern(
    rf"<\|tool_call_begin\|>\s*(?:functions\.)?(?P<name>{_NAME})(?::\d+)?\s*<\|tool_call_argument_begin\|>(?P<body>.*?)",
    re.escape("<|tool_call_end|>"),
)
_HARMONY = _pattern(
    rf"to=functions\.(?P<name>{_NAME})[^\n]*?<\|message\|>(?P<body>.*?)",
    r"<\|call\|>|<\|end\|>|<\|return\|>",
)
_MISTRAL = _pattern(
    rf"\[TOOL_CALLS\]\s*(?P<name>{_NAME})\s*(?:\[CALL_ID\]\s*\w+\s*)?\[ARGS\](?P<body>.*?)",
    r"(?=\[TOOL_CALLS\])|</s>",
)
_PYTHON_TAG = _pattern(r"<\|python_tag\|>(?P<body>[^{\[].*?)", r"<\|eom_id\|>|<\|eot_id\|>")
_PARAM = re.compile(rf"<parameter=(?P<key>{_NAME})>(?P<value>.*?)</parameter>", re.DOTALL)
_GLM_ARG = re.compile(r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>", re.DOTALL)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(?P<inner>.*?)\s*```\s*$", re.DOTALL)


def _xml_params(pattern: re.Pattern[str]) -> Callable[[str], JsonValue]:
    def parse(body: str) -> JsonValue:
        if body.strip().startswith("{"):
            return body.strip()  # Llama 3.1 `<function=name>{json}</function>`
        return {m["key"].strip(): _scalar(m["value"]) for m in pattern.finditer(body)}

    return parse


def _json_body(body: str) -> JsonValue:
    fenced = _FENCE.match(body)
    return (fenced["inner"] if fenced else body).strip()


def _scalar(raw: str) -> JsonValue:
    """A parameter value as written: JSON when it parses (numbers, lists, objects), else the string."""
    value = raw.strip("\n")
    try:
        parsed: JsonValue = json.loads(value)
    except ValueError:
        return value
    return parsed


_MARKERS: tuple[tuple[str, re.Pattern[str], Callable[[str], JsonValue]], ...] = (
    ("qwen3", _QWEN, _xml_params(_PARAM)),
    ("glm", _GLM, _xml_params(_GLM_ARG)),
    ("deepseek", _DEEPSEEK, _json_body),
    ("kimi", _KIMI, _json_body),
    ("gpt-oss", _HARMONY, _json_body),
    ("mistral", _MISTRAL, _json_body),
)
"""Marker formats, tried in this order; each consumes its blocks so later scans do not see them again."""


def scan_markers(text: str) -> MarkerScan:
    """Find every marker-delimited call in `text`; blocks cut off by the end of the text are reported, not parsed."""
    scan = MarkerScan()
    for fmt, pattern, parse in _MARKERS:
        text = pattern.sub(lambda m, f=fmt, p=parse: _take(scan, f, m, p), text)
    text = _PYTHON_TAG.sub(lambda m: _take_python(scan, m), text)
    scan.rest = text
    return scan


def _take(scan: MarkerScan, fmt: str, match: re.Match[str], parse: Callable[[str], JsonValue]) -> str:
    name = match["name"] or match.groupdict().get("name2") or ""
    closed = bool(match["end"]) or fmt in _SELF_CLOSING
    if not closed and not match["body"].strip().startswith(("{", "```")):
        scan.truncated.append(f"{fmt} call to {name!r} was cut off before its end marker")
    else:
        scan.calls.append(RawCall(name, parse(match["body"]), fmt))
    return " " * (match.end() - match.start())


_SELF_CLOSING = frozenset({"mistral", "gpt-oss", "kimi", "deepseek"})
"""Formats whose end marker servers often strip: a complete JSON body is enough (its braces must balance)."""


def _take_python(scan: MarkerScan, match: re.Match[str]) -> str:
    body = match["body"].strip()
    try:
        calls = _python_calls(body)
    except (SyntaxError, ValueError):
        scan.malformed.append(f"<|python_tag|> call is not valid Python call syntax: {body[:80]!r}")
    else:
        scan.calls.extend(calls)
    return " " * (match.end() - match.start())


def _python_calls(body: str) -> list[RawCall]:
    """`name(k=v)`, `name.call(k=v)` or `[a(k=v), b()]` with literal arguments only."""
    tree = ast.parse(body, mode="eval").body
    nodes = tree.elts if isinstance(tree, ast.List) else [tree]
    return [_python_call(node) for node in nodes]


def _python_call(node: ast.expr) -> RawCall:
    if not isinstance(node, ast.Call) or node.args:
        raise ValueError("not a keyword-only call")
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "call":
        func = func.value
    name = ast.unparse(func)
    args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    return RawCall(name, args, "python_tag")
