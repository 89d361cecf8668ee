"""Chaining: the host side of `tools.<name>(...)` — allow-list, call budget and argument checks before the callback."""

import json
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

CallTool = Callable[[str, dict[str, Any]], Any]
"""Host callback: run tool `name` with `args` (through the event log) and return its JSON output."""
RESERVED_ARGS = frozenset({"result_handler", "_meta"})
"""Never forwarded from a handler: a chained call cannot carry a handler of its own."""


def _refuse(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message}


class ToolBridge:
    """Serves one handler run's tool calls. Everything a handler asks for is checked here, on the host.

    Args:
        call_tool: the callback that really runs a tool.
        schemas: allow-list, tool name -> JSON Schema of its arguments. The caller passes read-only tools only
            and leaves out the handler's own tool.
        budget: how many calls the run may make.
    """

    def __init__(self, call_tool: CallTool, schemas: Mapping[str, Mapping[str, Any]], budget: int = 8) -> None:
        self._call_tool = call_tool
        self._schemas = {name: dict(schema) for name, schema in schemas.items()}
        self._validators = {name: _validator(schema) for name, schema in self._schemas.items()}
        self.budget = budget
        self.used = 0

    def specs(self) -> dict[str, dict[str, Any]]:
        """What the sandbox needs to generate wrappers: parameter names, required ones, a description."""
        return {name: _spec(schema) for name, schema in self._schemas.items()}

    def handle(self, name: str, args: Any) -> dict[str, Any]:
        """Answer one `tools.<name>(**args)` request with `{"ok": true, "value": …}` or a refusal with a code."""
        refusal = self._check(name, args)
        if refusal is not None:
            return refusal
        self.used += 1
        try:
            value = self._call_tool(name, args)
        except Exception as exc:  # the callback's failure is the handler's ToolError, whatever it was
            return _refuse(str(getattr(exc, "code", "tool.failed")), str(exc) or type(exc).__name__)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return _refuse("tool.not_json", f"{name} returned a value that is not JSON: {exc}")
        return {"ok": True, "value": value}

    def _check(self, name: str, args: Any) -> dict[str, Any] | None:
        if name not in self._schemas:
            return _refuse("tool.not_allowed", f"{name!r} is not callable here; allowed: {sorted(self._schemas)}")
        if self.used >= self.budget:
            return _refuse("tool.budget_exhausted", f"this handler may make at most {self.budget} tool calls")
        if not isinstance(args, dict) or RESERVED_ARGS & args.keys():
            return _refuse("tool.invalid_arguments", f"arguments must be an object without {sorted(RESERVED_ARGS)}")
        errors = sorted(self._validators[name].iter_errors(args), key=lambda e: list(e.path))
        if errors:
            detail = "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5])
            return _refuse("tool.invalid_arguments", f"{name}: {detail}")
        return None


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"invalid argument schema: {exc.message}") from exc
    return Draft202012Validator(schema)


def _spec(schema: dict[str, Any]) -> dict[str, Any]:
    params = [p for p in schema.get("properties", {}) if p not in RESERVED_ARGS]
    required = [p for p in schema.get("required", []) if p in params]
    return {"params": params, "required": required, "description": schema.get("description", "")}
