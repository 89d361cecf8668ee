"""The first marker in the content picks the parser; a marker inside a JSON call's string does not count."""

import pytest

from workers.llm.formats import parse_reply, sniff


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('<tool_call>{"name": "a"}</tool_call>', "tool_call"),
        ("[TOOL_CALLS]a[ARGS]{}", "mistral"),
        ("<|channel|>final<|message|>hi", "harmony"),
        ("<|tool_call>call:a{}<tool_call|>", "gemma"),
        ("<|tool_calls_section_begin|><|tool_call_begin|>a:0<|tool_call_argument_begin|>{}", "kimi"),
        ('<|open|>tools<|sep|><|open|>call tool="a"<|sep|>', "kimi_xtml"),
        ("<｜tool▁calls▁begin｜>", "deepseek"),
        ('<｜DSML｜function_calls><｜DSML｜invoke name="a">', "deepseek_dsml"),
        ("<function=a></function>", "qwen3_xml"),
        ("<|python_tag|>a()", "llama_python_tag"),
        ("[a(b=1)]", "pythonic"),
        ('{"name": "a", "parameters": {}}', "json"),
        ("no call here", "json"),
    ],
)
def test_markers_select_the_family(text: str, fmt: str) -> None:
    assert sniff(text).name == fmt


def test_the_earliest_marker_wins() -> None:
    assert sniff('Use [TOOL_CALLS] later. <tool_call>{"name": "a"}</tool_call>').name == "mistral"
    assert sniff('<tool_call>{"name": "a", "arguments": {"x": "[TOOL_CALLS]"}}</tool_call>').name == "tool_call"


def test_a_marker_inside_a_json_call_is_an_argument() -> None:
    text = '{"tool": "write_file", "params": {"content": "<tool_call>{\\"name\\": \\"x\\"}</tool_call> [a(b=1)]"}}'
    parsed = parse_reply(text)
    assert parsed.format == "json" and len(parsed.calls) == 1


def test_end_of_turn_tokens_are_not_content() -> None:
    assert parse_reply("The answer is 4.<|im_end|>").content == "The answer is 4."
    assert parse_reply("Done.<|eot_id|>").content == "Done."
