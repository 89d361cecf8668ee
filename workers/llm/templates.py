"""Per-model prompt templates for prompt-based tool calling, as data: the loop never branches on the model.

`generic`, `llama3` and `code` ask for JSON, which every instruction-following model can write. The others
ask a model for the format it was trained on (prompt engineering per model); the extractor
reads each of them (`formats/`). `call_format` and `results_intro` are shown as written; `tool_line` is
formatted with `name`, `description` and `schema`.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptTemplate:
    """How tools are introduced, how a call must be written, and how results are handed back."""

    name: str
    tools_intro: str
    tool_line: str
    """Formatted with `name`, `description` and `schema` (the inputSchema as compact JSON)."""
    call_format: str
    results_intro: str


_JSON_LINE = (
    '{{"type": "function", "function": {{"name": "{name}", "description": "{description}", "parameters": {schema}}}}}'
)
_PLAIN_LINE = "- {name}: {description}\n  Parameters (JSON Schema): {schema}"
_ANSWER = "When you have what you need, answer in plain text without any tool call."
_RESULTS = "Tool results (use only this data in your answer):"


def _native(name: str, intro: str, call_format: str, tool_line: str = _JSON_LINE) -> PromptTemplate:
    return PromptTemplate(name, intro, tool_line, f"{call_format}\n{_ANSWER}", _RESULTS)


TEMPLATES: dict[str, PromptTemplate] = {
    "generic": PromptTemplate(
        name="generic",
        tools_intro="You can use these tools:",
        tool_line=_PLAIN_LINE,
        call_format=(
            "To use a tool, output EXACTLY this JSON on its own line, and nothing else on that line:\n"
            '{"tool": "tool_name", "params": {"param1": "value1"}}\n'
            "USE the tool, do not describe it. You may output several such lines to call several tools at once. "
            "When you have what you need, answer in plain text without any JSON."
        ),
        results_intro=_RESULTS,
    ),
    "llama3": PromptTemplate(
        name="llama3",
        tools_intro="You have access to the following functions. Use them when needed to answer the user.",
        tool_line='{{"name": "{name}", "description": "{description}", "parameters": {schema}}}',
        call_format=(
            "To call a function, respond with a JSON object of the form "
            '{"name": "function_name", "parameters": {"arg": "value"}} and nothing else. '
            "Do not use variables. When you have the results, answer the user in plain text."
        ),
        results_intro="Function results:",
    ),
    "code": PromptTemplate(
        name="code",
        tools_intro="The following functions are available (signatures as JSON Schema):",
        tool_line="function {name}(params: {schema})  // {description}",
        call_format=(
            "Output a JSON object representing the function call, in a ```json fenced block:\n"
            '```json\n{"tool": "function_name", "params": {"arg": "value"}}\n```\n'
            "When you are done calling functions, answer in plain prose."
        ),
        results_intro="Function return values:",
    ),
    "hermes": _native(
        "hermes",
        "# Tools\nYou may call one or more functions. Their signatures, one JSON object per line:",
        "For each call, write a JSON object with the function name and its arguments between tags:\n"
        '<tool_call>\n{"name": "function_name", "arguments": {"arg": "value"}}\n</tool_call>',
    ),
    "qwen3_coder": _native(
        "qwen3_coder",
        "# Tools\nYou have access to these functions (JSON Schema of their parameters):",
        "To call a function, write exactly:\n<tool_call>\n<function=function_name>\n<parameter=arg>\nvalue\n"
        "</parameter>\n</function>\n</tool_call>\nOne <parameter> per argument; lists and objects as JSON.",
        _PLAIN_LINE,
    ),
    "glm": _native(
        "glm",
        "# Tools\nYou may call one or more of these functions:",
        "To call a function, write its name and one key/value pair per argument:\n"
        "<tool_call>function_name\n<arg_key>arg</arg_key>\n<arg_value>value</arg_value>\n</tool_call>",
    ),
    "mistral": _native(
        "mistral",
        "[AVAILABLE_TOOLS] Functions you may call:",
        'To call functions, write [TOOL_CALLS] followed by a JSON list: [TOOL_CALLS][{"name": "function_name", '
        '"arguments": {"arg": "value"}}]',
    ),
    "pythonic": _native(
        "pythonic",
        "You can call these functions (JSON Schema of their parameters):",
        "To call functions, reply with only a Python list of calls with keyword arguments and literal values:\n"
        "[function_name(arg='value', count=2), other_function()]",
        _PLAIN_LINE,
    ),
    "deepseek": _native(
        "deepseek",
        "## Tools\nYou can call these functions:",
        "To call a function, write:\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function_name<｜tool▁sep｜>"
        '{"arg": "value"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    ),
    "dsml": _native(
        "dsml",
        "## Tools\nYou can call these functions:",
        'To call a function, write:\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="function_name">\n'
        '<｜DSML｜parameter name="arg" string="true">text value</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="count" string="false">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
        '</｜DSML｜function_calls>\nstring="false" values are JSON.',
    ),
    "kimi": _native(
        "kimi",
        "# Tools\nYou can call these functions:",
        "To call functions, write:\n<|tool_calls_section_begin|><|tool_call_begin|>functions.function_name:0"
        '<|tool_call_argument_begin|>{"arg": "value"}<|tool_call_end|><|tool_calls_section_end|>',
    ),
    "harmony": _native(
        "harmony",
        "# Tools\n## functions\nYou can call these functions:",
        "To call a function, write a commentary message to it with JSON arguments:\n"
        '<|start|>assistant<|channel|>commentary to=functions.function_name <|constrain|>json<|message|>{"arg": '
        '"value"}<|call|>',
    ),
    "gemma4": _native(
        "gemma4",
        "You can call these functions:",
        "To call a function, write:\n"
        '<|tool_call>call:function_name{arg:<|"|>text value<|"|>,count:2}<tool_call|>\n'
        'Strings go between <|"|> marks; numbers, true/false, lists and objects are written bare.',
    ),
}
