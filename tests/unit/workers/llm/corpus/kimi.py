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
