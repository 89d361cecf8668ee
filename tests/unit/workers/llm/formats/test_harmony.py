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


def test_nothing_in_the_analysis_channel_is_a_call() -> None:
    text = ANALYSIS.format(CALL.replace("<|start|>", "")) + "<|start|>assistant<|channel|>final<|message|>ok<|return|>"
    found = extract(text)
    assert found.calls == [] and found.content == "ok"
    assert kinds('<|channel|>analysis to=functions.raster_info<|message|>{"uri": "a"}<|call|>') == []


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
