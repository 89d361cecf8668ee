"""Write a call the way each family's chat template renders it, for property tests.

`recognised` is where the text first shows the family's markup (a cut after it must give an error), and
`complete` where the call is whole (a cut before it must give no call).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Args = dict[str, Any]


@dataclass(frozen=True)
class Rendered:
    text: str
    recognised: int
    complete: int


def _json(args: Any) -> str:
    return json.dumps(args, ensure_ascii=False)


def _text(value: Any) -> str:
    """A value as text-carrying formats write it: strings raw, everything else as JSON."""
    return value if isinstance(value, str) else _json(value)


def hermes(name: str, args: Args) -> Rendered:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    head = "<tool_call>\n"
    return Rendered(f"{head}{body}\n</tool_call>", len("<tool_call>"), len(head) + len(body))


def qwen_xml(name: str, args: Args) -> Rendered:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else _json(v)}\n</parameter>\n" for k, v in args.items()
    )
    text = f"<tool_call>\n<function={name}>\n{params}</function>"
    return Rendered(text + "\n</tool_call>", len("<tool_call>"), len(text))


def glm(name: str, args: Args) -> Rendered:
    pairs = "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{v if isinstance(v, str) else _json(v)}</arg_value>\n"
        for k, v in args.items()
    )
    text = f"<tool_call>{name}\n{pairs}</tool_call>"
    return Rendered(text, len("<tool_call>") + 1, len(text))


def mistral(name: str, args: Args) -> Rendered:
    text = f"[TOOL_CALLS]{name}[ARGS]{_json(args)}"
    return Rendered(text, len("[TOOL_CALLS]"), len(text))


def mistral_array(name: str, args: Args) -> Rendered:
    text = "[TOOL_CALLS] " + json.dumps([{"name": name, "arguments": args}], ensure_ascii=False)
    return Rendered(text, len("[TOOL_CALLS]"), len(text))


def pythonic(name: str, args: Args) -> Rendered:
    head = f"[{name}("
    text = head + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")]"
    return Rendered(text, len(head), len(text))


def python_tag(name: str, args: Args) -> Rendered:
    body = json.dumps({"name": name, "parameters": args}, ensure_ascii=False)
    return Rendered(f"<|python_tag|>{body}<|eom_id|>", len("<|python_tag|>"), len("<|python_tag|>") + len(body))


def deepseek(name: str, args: Args) -> Rendered:
    head = f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>"
    body = _json(args)
    tail = "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    return Rendered(head + body + tail, len("<｜tool▁calls▁begin｜>"), len(head) + len(body))


def dsml(name: str, args: Args) -> Rendered:
    params = "".join(
        f'<｜DSML｜parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
        f"{v if isinstance(v, str) else _json(v)}</｜DSML｜parameter>\n"
        for k, v in args.items()
    )
    text = f'<｜DSML｜function_calls>\n<｜DSML｜invoke name="{name}">\n{params}</｜DSML｜invoke>'
    return Rendered(text + "\n</｜DSML｜function_calls>", len("<｜DSML｜function_calls>"), len(text))


def kimi(name: str, args: Args) -> Rendered:
    head = f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>"
    body = _json(args)
    text = head + body + "<|tool_call_end|><|tool_calls_section_end|>"
    return Rendered(text, len("<|tool_calls_section_begin|>"), len(head) + len(body))


def _xtml_type(value: Any) -> str:
    kinds = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return kinds.get(type(value), "null")


def xtml(name: str, args: Args) -> Rendered:
    parts = "".join(
        f'<|open|>argument key="{k}" type="{_xtml_type(v)}"<|sep|>'
        f"{v if isinstance(v, str) else _json(v)}<|close|>argument<|sep|>"
        for k, v in args.items()
    )
    text = f'<|open|>tools<|sep|><|open|>call tool="{name}" index="1"<|sep|>{parts}<|close|>call'
    return Rendered(text + "<|sep|><|close|>tools<|sep|>", len("<|open|>tools"), len(text))


def harmony(name: str, args: Args) -> Rendered:
    head = f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
    body = _json(args)
    return Rendered(head + body + "<|call|>", head.index("to=") + 4, len(head) + len(body))


def gemma(name: str, args: Args) -> Rendered:
    head = f"<|tool_call>call:{name}"
    body = "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in args.items()) + "}"
    return Rendered(head + body + "<tool_call|>", len("<|tool_call>"), len(head) + len(body))


def _gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    return json.dumps(value)


RENDERERS: dict[str, Callable[[str, Args], Rendered]] = {
    "hermes": hermes,
    "qwen3_xml": qwen_xml,
    "glm": glm,
    "mistral": mistral,
    "mistral_array": mistral_array,
    "pythonic": pythonic,
    "llama_python_tag": python_tag,
    "deepseek": deepseek,
    "deepseek_dsml": dsml,
    "kimi": kimi,
    "kimi_xtml": xtml,
    "harmony": harmony,
    "gemma": gemma,
}
JSON_CARRIED = ("hermes", "mistral", "mistral_array", "llama_python_tag", "deepseek", "kimi", "harmony")
"""Families whose arguments are JSON: any string value survives, markers and all."""
