"""Python call syntax: Llama 3.2/4 and BFCL's `[f(a=1, b={'k': 'v'}), g()]`, Llama 4's `<|python_start|>…`.

Read with Python's own tokenizer (the real end of the list, strings included) and `ast`: only keyword
arguments with literal values (`True`, `None`, numbers, strings, lists, dicts, tuples) are accepted,
so nothing in the text is ever evaluated.
"""

import ast
import io
import re
import tokenize

from pydantic import JsonValue

from workers.llm.formats.base import Block, Parsed, RawCall, clip, malformed, scan_blocks, skip_marker, truncated

START = re.compile(r"(?m)(?:<\|python_start\|>|^)[ \t]*(?=\[\s*[A-Za-z_][\w.]*\s*\()")
_OPEN, _CLOSE = "([{", ")]}"


def parse(text: str) -> Parsed:
    """Every call list that starts a line of `text`."""
    return scan_blocks(text, START, _block, "pythonic")


def _block(text: str, match: re.Match[str]) -> Block:
    at = match.end()
    end = bracket_end(text, at)
    if end is None:
        return _cut_list(text, at)
    try:
        calls = python_calls(text[at:end])
    except (SyntaxError, ValueError) as exc:
        return Block(end, errors=[malformed(f"not a list of Python calls with literal arguments: {exc}")])
    return Block(skip_marker(text, end, "<|python_end|>"), calls)


def _cut_list(text: str, at: int) -> Block:
    """A list cut off by the end of the text: the calls complete before its last top-level comma, and the cut."""
    comma = _last_item_end(text, at)
    calls: list[RawCall] = []
    if comma is not None:
        try:
            calls = python_calls(text[at:comma] + "]")
        except (SyntaxError, ValueError):
            calls = []
    return Block(len(text), calls, [truncated("Python-syntax")])


def _last_item_end(text: str, pos: int) -> int | None:
    """Index of the last comma between the items of the list opened at `pos`, by Python's tokenizer."""
    source = text[pos:]
    starts = [0, *(i + 1 for i, ch in enumerate(source) if ch == "\n")]
    depth, comma = 0, None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.OP and token.string in _OPEN + _CLOSE:
                depth += 1 if token.string in _OPEN else -1
            elif token.type == tokenize.OP and token.string == "," and depth == 1:
                row, col = token.start
                comma = pos + starts[row - 1] + col
    except (tokenize.TokenError, SyntaxError):
        pass
    return comma


def bracket_end(text: str, pos: int) -> int | None:
    """Index just past the bracket that closes the one at `pos`, by Python's tokenizer; None if the text ends first."""
    source = text[pos:]
    starts = [0, *(i + 1 for i, ch in enumerate(source) if ch == "\n")]
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.OP or token.string not in _OPEN + _CLOSE:
                continue
            depth += 1 if token.string in _OPEN else -1
            if depth == 0:
                row, col = token.end
                return pos + starts[row - 1] + col
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def python_calls(source: str) -> list[RawCall]:
    """`name(k=v)`, `name.call(k=v)` or `[a(k=v), b()]`; raises ValueError/SyntaxError on anything else."""
    tree = ast.parse(source.strip(), mode="eval").body
    nodes = tree.elts if isinstance(tree, ast.List) else [tree]
    return [_call(node) for node in nodes]


def _call(node: ast.expr) -> RawCall:
    if not isinstance(node, ast.Call):
        raise ValueError(f"{clip(ast.unparse(node))} is not a function call")
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "call":
        func = func.value  # Llama 3.1 built-ins: brave_search.call(query=…)
    name = _dotted(func)
    if node.args or any(kw.arg is None for kw in node.keywords):
        raise ValueError(f"{name}(): name every argument (keyword arguments only)")
    return RawCall(name, {str(kw.arg): _literal(name, str(kw.arg), kw.value) for kw in node.keywords})


def _dotted(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{_dotted(func.value)}.{func.attr}"
    raise ValueError(f"{clip(ast.unparse(func))} is not a function name")


def _literal(name: str, key: str, node: ast.expr) -> JsonValue:
    try:
        value = ast.literal_eval(node)
    except ValueError as exc:
        raise ValueError(f"{name}(): argument {key!r} is not a literal: {clip(ast.unparse(node))}") from exc
    return _json(name, key, value)


def _json(name: str, key: str, value: object) -> JsonValue:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json(name, key, item) for item in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json(name, key, v) for k, v in value.items()}
    raise ValueError(f"{name}(): argument {key!r} has a value JSON cannot hold ({type(value).__name__})")
