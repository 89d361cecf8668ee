"""Gemma 4 and FunctionGemma: the argument grammar, quote tokens, thought channel."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds

Q = '<|"|>'


def test_values_of_every_type() -> None:
    text = (
        f"<|tool_call>call:raster_stats{{uri:{Q}a.tif{Q},bands:[1, 2],approx:true,percentiles:[-2.5e0,97]}}<tool_call|>"
    )
    assert calls(text) == [
        ("raster_stats", {"uri": "a.tif", "bands": [1, 2], "approx": True, "percentiles": [-2.5, 97]})
    ]


def test_strings_are_opaque_to_braces_commas_and_end_markers() -> None:
    content = "{a, b} ] <tool_call|> call:x{y:1}\n"
    text = f"<|tool_call>call:write_file{{path:{Q}p{Q},content:{Q}{content}{Q}}}<tool_call|>"
    assert calls(text) == [("write_file", {"path": "p", "content": content})]


def test_nested_objects_quoted_keys_and_bare_words_typed_by_schema() -> None:
    text = (
        f'<|tool_call>call:raster_reproject{{"uri":{Q}a{Q},dst_crs:{Q}EPSG:3857{Q},options:{{tiled:false}}}}'
        "<tool_call|>"
    )
    assert calls(text) == [("raster_reproject", {"uri": "a", "dst_crs": "EPSG:3857", "options": {"tiled": False}})]
    assert calls("<|tool_call>call:raster_info{uri:dem.tif}<tool_call|>") == [("raster_info", {"uri": "dem.tif"})]


def test_thought_channel_is_reasoning() -> None:
    found = extract(f"<|channel>thought\nhmm<channel|><|tool_call>call:raster_info{{uri:{Q}a{Q}}}<tool_call|>")
    assert found.reasoning == "hmm" and [c.params for c in found.calls] == [{"uri": "a"}]


def test_functiongemma_escape_tokens() -> None:
    assert calls("<start_function_call>call:raster_info{uri:<escape>a<escape>,band:2}<end_function_call>") == [
        ("raster_info", {"uri": "a", "band": 2})
    ]


def test_cut_off_and_malformed() -> None:
    for cut in (
        "<|tool_call>",
        "<|tool_call>call:raster_in",
        "<|tool_call>call:raster_info{ur",
        f"<|tool_call>call:raster_info{{uri:{Q}a",
        '<|tool_call>call:raster_info{uri:<|"',
    ):
        assert kinds(cut) == ["truncated"], cut
    assert kinds(f"<|tool_call>call:raster_info{{uri:{Q}a{Q} band:2}}<tool_call|>") == ["invalid_markup"]
