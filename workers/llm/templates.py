"""Per-model prompt templates for prompt-based tool calling, as data: the loop never branches on the model."""

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


TEMPLATES: dict[str, PromptTemplate] = {
    "generic": PromptTemplate(
        name="generic",
        tools_intro="You can use these tools:",
        tool_line="- {name}: {description}\n  Parameters (JSON Schema): {schema}",
        call_format=(
            "To use a tool, output EXACTLY this JSON on its own line, and nothing else on that line:\n"
            '{{"tool": "tool_name", "params": {{"param1": "value1"}}}}\n'
            "USE the tool, do not describe it. You may output several such lines to call several tools at once. "
            "When you have what you need, answer in plain text without any JSON."
        ),
        results_intro="Tool results (use only this data in your answer):",
    ),
    "llama3": PromptTemplate(
        name="llama3",
        tools_intro="You have access to the following functions. Use them when needed to answer the user.",
        tool_line='{{"name": "{name}", "description": "{description}", "parameters": {schema}}}',
        call_format=(
            "To call a function, respond with a JSON object of the form "
            '{{"name": "function_name", "parameters": {{"arg": "value"}}}} and nothing else. '
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
            '```json\n{{"tool": "function_name", "params": {{"arg": "value"}}}}\n```\n'
            "When you are done calling functions, answer in plain prose."
        ),
        results_intro="Function return values:",
    ),
}
