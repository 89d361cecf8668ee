"""Text-carried values are typed by the tool's JSON Schema; strings stay exact; failures stay text."""

from typing import Any

import pytest

from workers.llm.coerce import coerce_params, coerce_text

ROOT: dict[str, Any] = {"$defs": {"Mode": {"enum": [1, 2, "auto"]}, "Flag": {"type": "boolean"}}}


@pytest.mark.parametrize(
    ("text", "schema", "expected"),
    [
        ("3", {"type": "integer"}, 3),
        ("3", {"type": "string"}, "3"),
        (" 3 \n", {"type": "integer"}, 3),
        ("-2.5", {"type": "number"}, -2.5),
        ("7", {"type": "number"}, 7),
        ("True", {"type": "boolean"}, True),
        ("false", {"$ref": "#/$defs/Flag"}, False),
        ("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),
        ("None", {"type": ["integer", "null"]}, None),
        ("null", {"type": ["string", "null"]}, None),
        ("\nnull\n", {"anyOf": [{"type": "string"}, {"type": "null"}]}, None),
        ("null", {"type": "string"}, "null"),
        ("None", {"type": ["string", "null"]}, "None"),
        ("4", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, 4),
        ("2", {"$ref": "#/$defs/Mode"}, 2),
        ("auto", {"$ref": "#/$defs/Mode"}, "auto"),
        ('{"a": [1, "x"]}', {"type": "object"}, {"a": [1, "x"]}),
        ("{'a': (1, None)}", {"type": "object"}, {"a": [1, None]}),
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ("  keep  spaces\n", {"type": "string"}, "  keep  spaces\n"),
        ("[1, 2]", {}, [1, 2]),
        ("plain", {}, "plain"),
        ("12", {"description": "no type"}, 12),
        ("three", {"type": "integer"}, "three"),
        ("[1, 2", {"type": "array"}, "[1, 2"),
        ("{1, 2}", {"type": "array"}, "{1, 2}"),
        ("nan", {"type": "number"}, "nan"),
        ("x", {"$ref": "#/$defs/Missing"}, "x"),
    ],
)
def test_coerce_text(text: str, schema: dict[str, Any], expected: Any) -> None:
    assert coerce_text(text, schema, ROOT) == expected


def test_only_textual_arguments_are_coerced() -> None:
    schema = {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    assert coerce_params(schema, {"a": "1", "b": "2", "c": "3"}, ["a", "c"]) == {"a": 1, "b": "2", "c": 3}
