"""gpt-oss harmony: channels decide what is reasoning, content and a call."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds

ANALYSIS = "<|channel|>analysis<|message|>think about {}<|end|>"
CALL = (
    '<|start|>assistant<|channel|>commentary to=functions.raster_info <|constrain|>json<|message|>{"uri": "a"}<|call|>'
)


def test_analysis_is_reasoning_and_a_recipient_outside_it_is_a_call() -> None:
    found = extract(ANALYSIS.format("it") + CALL)
    assert [(c.tool, c.params) for c in found.calls] == [("raster_info", {"uri": "a"})]
    assert found.reasoning == "think about it" and found.content == "" and found.format == "harmony"


def test_final_is_content_even_when_it_is_a_json_call() -> None:
    found = extract('<|channel|>final<|message|>{"tool": "raster_info", "params": {"uri": "a"}}<|return|>')
    assert found.calls == [] and found.errors == []
    assert found.content == '{"tool": "raster_info", "params": {"uri": "a"}}'


def test_nothing_written_in_an_analysis_message_is_a_call() -> None:
    text = ANALYSIS.format(CALL.replace("<|start|>", "")) + "<|start|>assistant<|channel|>final<|message|>ok<|return|>"
    found = extract(text)
    assert found.calls == [] and found.content == "ok"


def test_a_functions_recipient_on_analysis_is_a_call_and_a_built_in_tool_there_is_reasoning() -> None:
    assert calls('<|channel|>analysis to=functions.raster_info<|message|>{"uri": "a"}<|call|>') == [
        ("raster_info", {"uri": "a"})
    ]
    found = extract('<|channel|>analysis to=browser.search<|message|>{"query": "a"}<|call|>')
    assert found.calls == [] and found.errors == [] and found.reasoning == '{"query": "a"}'


def test_a_reply_that_begins_inside_a_prefilled_header_is_read_from_there() -> None:
    body = '<|message|>{"uri": "a"}<|call|>'
    for head in (
        " to=functions.raster_info<|channel|>commentary <|constrain|>json",
        " to=functions.raster_info<|channel|>commentary<|constrain|>json",
        " to=functions.raster_info<|channel|>commentary json",
        "commentary to=functions.raster_info <|constrain|>json",
    ):
        found = extract(head + body)
        assert [(c.tool, c.params) for c in found.calls] == [("raster_info", {"uri": "a"})], head
        assert found.errors == [] and found.content == "", head


def test_a_call_header_without_a_recipient_is_malformed() -> None:
    assert kinds('<|channel|>commentary <|constrain|>json<|message|>{"uri": "a"}<|call|>') == ["invalid_markup"]


def test_the_recipient_may_come_before_the_channel_and_a_preamble_is_content() -> None:
    text = (
        "<|channel|>commentary<|message|>Reading it now.<|end|>"
        "<|start|>assistant to=functions.raster_info<|channel|>commentary json"
        '<|message|>{"uri": "a", "band": 2}<|call|>'
    )
    found = extract(text)
    assert found.content == "Reading it now." and [c.params for c in found.calls] == [{"uri": "a", "band": 2}]


def test_arguments_hold_end_tokens() -> None:
    text = '<|channel|>commentary to=functions.write_file<|message|>{"path": "p", "content": "<|call|><|end|>"}<|call|>'
    assert calls(text) == [("write_file", {"path": "p", "content": "<|call|><|end|>"})]


def test_cut_off_in_reasoning_in_a_header_or_in_arguments() -> None:
    assert kinds("<|channel|>commentary to=functions.raster_info <|constrain|>js") == ["truncated"]
    assert kinds('<|channel|>commentary to=functions.raster_info<|message|>{"uri": "a') == ["truncated"]
    assert kinds("<|channel|>commentary to=functions.raster_info<|message|>uri=a<|call|>") == ["invalid_markup"]
