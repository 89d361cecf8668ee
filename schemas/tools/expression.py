"""The band-math expression of `raster_calc`: parsed with `ast`, checked against an allow-list, never evaluated here.

Grammar (a subset of Python's expression syntax):

- a band of an input: `name[k]` (1-based band `k` of the raster given as input `name`); a bare `name` is band 1 of a
  one-band input;
- numbers (`0.5`, `10`, `1e-3`) and `True`/`False`; arithmetic on numbers alone is computed here, in float64, and
  refused when it has no finite value (`1 / 0`, `10.0 ** 400`);
- arithmetic `+ - * / ** %`, unary `-` and `+`; comparisons `< <= > >= == !=` (one operator each: `a < b < c` is
  refused, write `(a < b) & (b < c)`); logic on comparisons with `&`, `|`, `~`;
- the element-wise functions of `FUNCTIONS`, e.g. `where(a[1] > 0, a[1], 0)`, `sqrt(x)`, `minimum(x, y)`.

Nothing else: no attributes, calls of other names, lambdas, comprehensions, strings, subscripts of anything but an
input, or reductions (`sum`, `max`: a pixel's value must depend on that pixel alone, so tiles give the whole
result). A refusal names the column (1-based) where the offending part starts.
"""

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

FUNCTIONS: dict[str, int] = {
    "where": 3,
    **dict.fromkeys(("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh"), 1),
    **dict.fromkeys(("arcsinh", "arccosh", "arctanh", "exp", "expm1", "log", "log10", "log1p", "log2"), 1),
    **dict.fromkeys(("sqrt", "abs", "floor", "ceil", "trunc", "sign", "isnan", "isfinite", "isinf"), 1),
    **dict.fromkeys(("arctan2", "hypot", "minimum", "maximum", "fmod", "copysign"), 2),
}
"""Element-wise functions (numexpr's, all of them per pixel) and how many arguments each takes."""

_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.Mod: "%", ast.BitAnd: "&",
    ast.BitOr: "|",
}  # fmt: skip
_FOLDED: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.Mod: operator.mod,
}  # fmt: skip
"""Arithmetic computed on two numbers at parse time (numexpr would compute it in Python, unbounded and unguarded)."""
_INT64 = 2**63
_UNARY: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
_COMPARE: dict[type[ast.cmpop], str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}  # fmt: skip
_HINTS: dict[type[ast.AST], str] = {
    ast.BoolOp: "use & and | instead of 'and'/'or'",
    ast.IfExp: "use where(condition, then, else)",
    ast.Attribute: "attributes are not allowed",
    ast.Lambda: "lambdas are not allowed",
}

MAX_LENGTH = 2000
MAX_NODES = 400
MAX_BANDS = 32
"""Distinct bands one expression may read (numexpr takes at most that many arrays at once, with room to spare)."""


class ExpressionError(ValueError):
    """An expression that does not parse or leaves the grammar; `column` is 1-based."""

    def __init__(self, column: int, message: str) -> None:
        super().__init__(f"column {column}: {message}")
        self.column = column


@dataclass(frozen=True)
class Band:
    """One band the expression reads: input `name`, 1-based `band`; `variable` is its name in the evaluated text."""

    name: str
    band: int
    variable: str


@dataclass(frozen=True)
class Parsed:
    """A checked expression: the bands it reads and the text numexpr evaluates (bands renamed `v0`, `v1`, …)."""

    source: str
    bands: tuple[Band, ...]
    text: str


def parse(source: str, inputs: set[str]) -> Parsed:
    """Check `source` against the grammar with the given input names.

    Raises:
        ExpressionError: a syntax error or a part outside the grammar, with its column.
    """
    if len(source) > MAX_LENGTH:
        raise ExpressionError(MAX_LENGTH + 1, f"the expression is longer than {MAX_LENGTH} characters")
    indent = len(source) - len(source.lstrip())
    try:
        tree = ast.parse(source.lstrip(), mode="eval")
    except SyntaxError as exc:
        if not exc.offset:  # Python gives no column when the text ends too early ("a +")
            raise ExpressionError(len(source) + 1, "the expression ends too early") from exc
        raise ExpressionError(indent + exc.offset, f"syntax error: {exc.msg}") from exc
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ExpressionError(1, f"the expression has more than {MAX_NODES} parts")
    checker = _Checker(inputs)
    rewritten = checker.visit(tree.body)
    if not checker.bands:
        raise ExpressionError(1, f"the expression reads no input (inputs: {', '.join(sorted(inputs))})")
    bands = tuple(checker.bands.values())
    return Parsed(source, bands, ast.unparse(rewritten))


def _column(node: ast.AST) -> int:
    return getattr(node, "col_offset", 0) + 1


class _Checker:
    """Walks the tree node by node, refusing anything not allowed and renaming band reads to variables."""

    def __init__(self, inputs: set[str]) -> None:
        self.inputs = inputs
        self.bands: dict[tuple[str, int], Band] = {}

    def visit(self, node: ast.AST) -> ast.expr:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            hint = _HINTS.get(type(node), f"{type(node).__name__} is not allowed in an expression")
            raise ExpressionError(_column(node), hint)
        return method(node)

    def _band(self, node: ast.AST, name: str, band: int) -> ast.expr:
        if name not in self.inputs:
            known = ", ".join(sorted(self.inputs))
            raise ExpressionError(_column(node), f"{name!r} is not an input (inputs: {known})")
        if band < 1:
            raise ExpressionError(_column(node), f"bands are numbered from 1, not {band}")
        key = (name, band)
        if key not in self.bands:
            if len(self.bands) == MAX_BANDS:
                raise ExpressionError(_column(node), f"the expression reads more than {MAX_BANDS} bands")
            self.bands[key] = Band(name, band, f"v{len(self.bands)}")
        return ast.Name(id=self.bands[key].variable, ctx=ast.Load())

    def _Name(self, node: ast.Name) -> ast.expr:
        if node.id in FUNCTIONS:
            raise ExpressionError(_column(node), f"{node.id} is a function: call it, e.g. {node.id}(...)")
        return self._band(node, node.id, 1)

    def _Subscript(self, node: ast.Subscript) -> ast.expr:
        index = node.slice
        if not isinstance(node.value, ast.Name):
            raise ExpressionError(_column(node), "only an input can be indexed, as name[band]")
        if not (isinstance(index, ast.Constant) and type(index.value) is int):
            raise ExpressionError(_column(index), "a band is a whole number, as name[2]")
        return self._band(node, node.value.id, index.value)

    def _Constant(self, node: ast.Constant) -> ast.expr:
        value = node.value
        if type(value) not in (int, float, bool):
            raise ExpressionError(_column(node), f"{type(value).__name__} constants are not allowed")
        if type(value) is int and not -_INT64 <= value < _INT64:  # numexpr takes integers as C longs
            return ast.Constant(value=_finite(node, float, value))
        return ast.Constant(value=value)

    def _BinOp(self, node: ast.BinOp) -> ast.expr:
        if type(node.op) not in _BINARY:
            raise ExpressionError(_column(node), f"operator {type(node.op).__name__} is not allowed")
        left, right = self.visit(node.left), self.visit(node.right)
        fold = _FOLDED.get(type(node.op))
        if fold is not None and isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
            return ast.Constant(value=_finite(node, fold, float(left.value), float(right.value)))
        return ast.BinOp(left=left, op=node.op, right=right)

    def _UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        if type(node.op) not in _UNARY:
            raise ExpressionError(_column(node), "'not' is not allowed; use ~ on a comparison")
        operand = self.visit(node.operand)
        if isinstance(operand, ast.Constant) and isinstance(node.op, ast.USub | ast.UAdd):  # a signed number
            return ast.Constant(value=-operand.value if isinstance(node.op, ast.USub) else +operand.value)
        return ast.UnaryOp(op=node.op, operand=operand)

    def _Compare(self, node: ast.Compare) -> ast.expr:
        if len(node.ops) != 1:
            raise ExpressionError(_column(node), "chained comparisons are not allowed; write (a < b) & (b < c)")
        if type(node.ops[0]) not in _COMPARE:
            raise ExpressionError(_column(node), f"comparison {type(node.ops[0]).__name__} is not allowed")
        return ast.Compare(left=self.visit(node.left), ops=node.ops, comparators=[self.visit(node.comparators[0])])

    def _Call(self, node: ast.Call) -> ast.expr:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            shown = ast.unparse(node.func)
            raise ExpressionError(_column(node), f"{shown!r} is not an allowed function (allowed: {_names()})")
        if node.keywords:
            raise ExpressionError(_column(node.keywords[0].value), "functions take no keyword arguments")
        arity = FUNCTIONS[node.func.id]
        if len(node.args) != arity:
            raise ExpressionError(_column(node), f"{node.func.id} takes {arity} argument(s), not {len(node.args)}")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExpressionError(_column(node), "*arguments are not allowed")
        args = [self.visit(a) for a in node.args]
        return ast.Call(func=ast.Name(id=node.func.id, ctx=ast.Load()), args=args, keywords=[])


def _finite(node: ast.AST, compute: Callable[..., float], *values: float) -> float:
    """`compute(*values)` as a finite float64, or an error naming the part of the expression at `node`."""
    shown = ast.unparse(node)
    shown = shown if len(shown) <= 40 else f"{shown[:37]}..."
    try:
        value = compute(*values)
    except ArithmeticError as exc:  # 1 / 0, 10.0 ** 400, an integer beyond float64
        raise ExpressionError(_column(node), f"{shown!r} has no finite value ({exc})") from exc
    if isinstance(value, complex):  # (-8) ** 0.5
        raise ExpressionError(_column(node), f"{shown!r} is not a real number")
    if not math.isfinite(value):
        raise ExpressionError(_column(node), f"{shown!r} has no finite value")
    return float(value)


def _names() -> str:
    return ", ".join(sorted(FUNCTIONS))
