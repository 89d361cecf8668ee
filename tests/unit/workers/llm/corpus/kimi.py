"""Kimi K2 section markers and the newer XTML syntax (`<|open|>call tool="…"<|sep|>…<|close|>call<|sep|>`)."""

from tests.unit.workers.llm.corpus import Sample

K2_ONE = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_info:0<|tool_call_argument_begin|>"
    '{"uri": "dem.tif"}<|tool_call_end|><|tool_calls_section_end|>'
)

SAMPLES = [
    Sample("kimi-k2-single", K2_ONE, (("raster_info", {"uri": "dem.tif"}),)),
    Sample(
        "kimi-k2-two",
        "I'll look at both layers.<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.raster_info:0"
        '<|tool_call_argument_begin|>{"uri": "a.tif"}<|tool_call_end|>\n<|tool_call_begin|>functions.vector_buffer:1'
        '<|tool_call_argument_begin|>{"uri": "b.gpkg", "distance": 5}<|tool_call_end|>\n<|tool_calls_section_end|>',
        (("raster_info", {"uri": "a.tif"}), ("vector_buffer", {"uri": "b.gpkg", "distance": 5})),
    ),
    Sample(
        "kimi-k2-no-prefix",
        "<|tool_calls_section_begin|><|tool_call_begin|>search_catalog:0<|tool_call_argument_begin|>"
        '{"query": "glaciers", "limit": 2}<|tool_call_end|><|tool_calls_section_end|>',
        (("search_catalog", {"query": "glaciers", "limit": 2}),),
    ),
    Sample(
        "kimi-k2-end-marker-inside-argument",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>"
        '{"path": "k.md", "content": "ends with <|tool_call_end|> then <|tool_calls_section_end|>"}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        (("write_file", {"path": "k.md", "content": "ends with <|tool_call_end|> then <|tool_calls_section_end|>"}),),
    ),
    Sample(
        "kimi-k2-thinking",
        "<think>The buffer needs 20 segments for smooth curves.</think>"
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.vector_buffer:0<|tool_call_argument_begin|>"
        '{"uri": "lakes.shp", "distance": 30, "segments": 20}<|tool_call_end|><|tool_calls_section_end|>',
        (("vector_buffer", {"uri": "lakes.shp", "distance": 30, "segments": 20}),),
    ),
    Sample(
        "kimi-k2-truncated",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_info:0<|tool_call_argument_begin|>"
        '{"uri": "dem',
        (),
        "truncated",
    ),
    Sample(
        "kimi-k2-section-only",
        "Let me check.<|tool_calls_section_begin|>",
        (),
        "truncated",
    ),
    Sample(
        "kimi-k2-call-in-think-only",
        f"<think>One option: {K2_ONE}. But the CRS is already known.</think>It is EPSG:4326.",
        (),
        "reasoning",
    ),
    Sample(
        "kimi-xtml-single",
        "<|close|>response<|sep|><|open|>tools<|sep|>"
        '<|open|>call tool="raster_info" index="1"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>dem.tif<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>",
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "kimi-xtml-typed",
        "Computing statistics.<|close|>response<|sep|><|open|>tools<|sep|>"
        '<|open|>call tool="raster_stats" index="1"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>ndvi.tif<|close|>argument<|sep|>'
        '<|open|>argument key="bands" type="array"<|sep|>[2, 3]<|close|>argument<|sep|>'
        '<|open|>argument key="approx" type="boolean"<|sep|>true<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        (("raster_stats", {"uri": "ndvi.tif", "bands": [2, 3], "approx": True}),),
    ),
    Sample(
        "kimi-xtml-two-calls",
        "<|open|>tools<|sep|>"
        '<|open|>call tool="raster_info" index="1"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>a.tif<|close|>argument<|sep|><|close|>call<|sep|>'
        '<|open|>call tool="vector_buffer" index="2"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>b.gpkg<|close|>argument<|sep|>'
        '<|open|>argument key="layer" type="string"<|sep|>3<|close|>argument<|sep|>'
        '<|open|>argument key="distance" type="number"<|sep|>3<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        (("raster_info", {"uri": "a.tif"}), ("vector_buffer", {"uri": "b.gpkg", "layer": "3", "distance": 3})),
    ),
    Sample(
        "kimi-xtml-think",
        "<|open|>think<|sep|>A tiled output is better for large rasters.<|close|>think<|sep|>"
        "<|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>"
        '<|open|>call tool="raster_reproject" index="1"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>dem.tif<|close|>argument<|sep|>'
        '<|open|>argument key="dst_crs" type="string"<|sep|>EPSG:3857<|close|>argument<|sep|>'
        '<|open|>argument key="options" type="object"<|sep|>{"tiled": true}<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        (("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:3857", "options": {"tiled": True}}),),
    ),
    Sample(
        "kimi-xtml-multiline-and-untyped",
        "<|open|>tools<|sep|>"
        '<|open|>call tool="write_file" index="1"<|sep|>'
        '<|open|>argument key="path" type="string"<|sep|>notes.txt<|close|>argument<|sep|>'
        '<|open|>argument key="content" type="string"<|sep|>line 1\nline 2\n<|close|>argument<|sep|>'
        "<|close|>call<|sep|>"
        '<|open|>call tool="raster_info" index="2"<|sep|>'
        '<|open|>argument key="uri"<|sep|>dem.tif<|close|>argument<|sep|>'
        '<|open|>argument key="band"<|sep|>4<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        (
            ("write_file", {"path": "notes.txt", "content": "line 1\nline 2\n"}),
            ("raster_info", {"uri": "dem.tif", "band": 4}),
        ),
    ),
    Sample(
        "kimi-xtml-json-block",
        "<|open|>tools<|sep|>"
        '<|open|>call tool="search_catalog" index="1"<|sep|>'
        '<|open|>json type="object"<|sep|>{"query": "soil", "limit": 1}<|close|>json<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        (("search_catalog", {"query": "soil", "limit": 1}),),
    ),
    Sample(
        "kimi-xtml-truncated",
        "<|open|>tools<|sep|>"
        '<|open|>call tool="raster_info" index="1"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>dem.tif<|close|>argument<|sep|>',
        (),
        "truncated",
    ),
]


def _xtml(name: str, *args: str) -> str:
    call = f'<|open|>call tool="{name}" index="1"<|sep|>{"".join(args)}<|close|>call<|sep|>'
    return f"<|open|>tools<|sep|>{call}<|close|>tools<|sep|>"


def _arg(key: str, value: str, kind: str | None = "string") -> str:
    typed = f' type="{kind}"' if kind else ""
    return f'<|open|>argument key="{key}"{typed}<|sep|>{value}<|close|>argument<|sep|>'


SAMPLES += [
    # issue 30: control-marker text inside an XTML value
    Sample(
        "kimi-xtml-close-argument-in-value",
        _xtml(
            "write_file", _arg("path", "x.md"), _arg("content", "each value ends with <|close|>argument<|sep|> here")
        ),
        (("write_file", {"path": "x.md", "content": "each value ends with <|close|>argument<|sep|> here"}),),
    ),
    Sample(
        "kimi-xtml-close-call-in-value",
        _xtml(
            "write_file", _arg("path", "y.md"), _arg("content", "then <|close|>call<|sep|> and <|close|>tools<|sep|>.")
        ),
        (("write_file", {"path": "y.md", "content": "then <|close|>call<|sep|> and <|close|>tools<|sep|>."}),),
    ),
    Sample(
        "kimi-xtml-argument-example-in-value",
        _xtml(
            "write_file",
            _arg("path", "z.md"),
            _arg("content", 'e.g. <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'),
        ),
        (
            (
                "write_file",
                {
                    "path": "z.md",
                    "content": 'e.g. <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>',
                },
            ),
        ),
    ),
    Sample(
        "kimi-xtml-call-example-in-value",
        _xtml(
            "write_file",
            _arg("path", "w.md"),
            _arg("content", '<|open|>call tool="raster_info" index="1"<|sep|> opens a call.'),
        ),
        (
            (
                "write_file",
                {"path": "w.md", "content": '<|open|>call tool="raster_info" index="1"<|sep|> opens a call.'},
            ),
        ),
    ),
    # issue 30: XTML attribute values are escaped
    Sample(
        "kimi-xtml-escaped-key",
        _xtml("tag_feature", _arg("uri", "parcels.gpkg"), _arg("q&amp;a", "checked by R&D")),
        (("tag_feature", {"uri": "parcels.gpkg", "q&a": "checked by R&D"}),),
    ),
    Sample(
        "kimi-xtml-escaped-lt-typed",
        _xtml("tag_feature", _arg("uri", "p.gpkg"), _arg("a&lt;b", "true", "boolean")),
        (("tag_feature", {"uri": "p.gpkg", "a<b": True}),),
    ),
    Sample(
        "kimi-xtml-numeric-reference",
        _xtml("tag_feature", _arg("uri", "p.gpkg"), _arg("q&#38;a", "ok")),
        (("tag_feature", {"uri": "p.gpkg", "q&a": "ok"}),),
    ),
    Sample(
        "kimi-xtml-value-text-is-not-unescaped",
        _xtml("tag_feature", _arg("uri", "a&amp;b.gpkg"), _arg("q&amp;a", "&lt;none&gt;")),
        (("tag_feature", {"uri": "a&amp;b.gpkg", "q&a": "&lt;none&gt;"}),),
    ),
    # issue 30: cut off in the second call
    Sample(
        "kimi-k2-cut-in-second",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_info:0<|tool_call_argument_begin|>"
        '{"uri": "a.tif"}<|tool_call_end|><|tool_call_begin|>functions.raster_stats:1<|tool_call_argument_begin|>'
        '{"uri": "a.tif", "approx": tr',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    Sample(
        "kimi-xtml-cut-in-second",
        "<|open|>tools<|sep|>"
        '<|open|>call tool="raster_info" index="1"<|sep|>'
        '<|open|>argument key="uri" type="string"<|sep|>a.tif<|close|>argument<|sep|><|close|>call<|sep|>'
        '<|open|>call tool="raster_info" index="2"<|sep|><|open|>argument key="uri" type="string"<|sep|>b.t',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    # issue 30: markup that yields no call is an error
    Sample(
        "kimi-k2-arguments-not-json",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_info:0<|tool_call_argument_begin|>"
        "uri=dem.tif<|tool_call_end|><|tool_calls_section_end|>",
        (),
        "malformed",
    ),
    Sample(
        "kimi-xtml-call-without-arguments-markup",
        "<|open|>tools<|sep|><|open|>call raster_info<|sep|>uri=dem.tif<|close|>call<|sep|><|close|>tools<|sep|>",
        (),
        "malformed",
    ),
]
