"""`<tool_call>` blocks: Hermes JSON read to its real end, and routing of each block to its family."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds
from workers.llm.formats import parse_reply

CALL = '{"name": "raster_info", "arguments": {"uri": "a.tif"}}'


def test_the_json_is_read_to_the_decoders_end_not_to_the_first_end_tag() -> None:
    content = 'x </tool_call> y <tool_call>{"name": "raster_info"} z'
    text = f'<tool_call>\n{{"name": "write_file", "arguments": {{"path": "p", "content": "{content}"}}}}\n</tool_call>'
    assert calls(text) == [("write_file", {"path": "p", "content": content})]


def test_prose_around_the_blocks_is_the_content() -> None:
    parsed = parse_reply(f"Checking both.\n<tool_call>\n{CALL}\n</tool_call>\nthen\n<tool_call>{CALL}</tool_call>")
    assert parsed.format == "hermes" and len(parsed.calls) == 2
    assert parsed.content == "Checking both.\n\nthen"


def test_fenced_json_and_two_objects_in_one_tag_are_read() -> None:
    text = (
        f'<tool_call>\n```json\n{CALL}\n```\n{{"name": "raster_info", "arguments": {{"uri": "b.tif"}}}}\n</tool_call>'
    )
    assert calls(text) == [("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})]


def test_identical_blocks_are_two_calls_but_an_echoed_json_call_is_one() -> None:
    assert len(calls(f"<tool_call>{CALL}</tool_call><tool_call>{CALL}</tool_call>")) == 2
    assert len(calls(f"I will send {CALL} now:\n{CALL}")) == 1


def test_json_without_a_name_inside_the_tag_is_an_error() -> None:
    assert kinds('<tool_call>{"uri": "a.tif"}</tool_call>') == ["invalid_arguments"]


def test_a_closed_tag_without_a_call_is_malformed_and_a_prose_mention_is_content() -> None:
    assert kinds("<tool_call>\nplease run raster_info on a.tif\n</tool_call>") == ["invalid_markup"]
    found = extract("Wrap each call in <tool_call> tags, like this.")
    assert found.calls == [] and found.errors == []
    assert found.content == "Wrap each call in <tool_call> tags, like this."


def test_blocks_of_other_families_in_the_same_reply_are_routed_to_them() -> None:
    xml = "<tool_call>\n<function=raster_info>\n<parameter=uri>\nx.tif\n</parameter>\n</function>\n</tool_call>"
    glm = "<tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>y.tif</arg_value>\n</tool_call>"
    found = extract(f"{xml}\n<tool_call>{CALL}</tool_call>\n{glm}")
    assert found.format == "qwen3_xml"
    assert [c.params["uri"] for c in found.calls] == ["x.tif", "a.tif", "y.tif"]


def test_a_reply_cut_off_in_its_second_call_keeps_the_first_and_reports_the_cut() -> None:
    found = extract(f'<tool_call>{CALL}</tool_call>\n<tool_call>\n{{"name": "raster_info", "argu')
    assert [(c.tool, c.params) for c in found.calls] == [("raster_info", {"uri": "a.tif"})]
    assert [e.kind for e in found.errors] == ["truncated"]
    assert kinds("<tool_call>\n") == ["truncated"]
    assert kinds("<tool_call>\n<functi") == ["truncated"]


def test_a_tag_opening_a_line_with_no_call_is_an_error_and_one_in_a_sentence_is_content() -> None:
    assert kinds("Sure.\n<tool_call>\nraster_info on a.tif please") == ["invalid_markup"]
    assert kinds("See <tool_call> in the docs.") == []


def test_a_stray_marker_of_another_family_first_does_not_hide_the_call() -> None:
    found = extract(f"Mistral would write [TOOL_CALLS] after this.\n<tool_call>{CALL}</tool_call>")
    assert [c.params for c in found.calls] == [{"uri": "a.tif"}] and found.errors == []
