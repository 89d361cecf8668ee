"""gpt-oss harmony: analysis (reasoning), commentary with a recipient (calls), final (content)."""

from tests.unit.workers.llm.corpus import Sample

SAMPLES = [
    Sample(
        "harmony-analysis-then-call",
        "<|channel|>analysis<|message|>Need the raster's CRS; call raster_info.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.raster_info <|constrain|>json<|message|>"
        '{"uri":"dem.tif"}<|call|>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "harmony-builtin-recipient-in-analysis",
        "<|channel|>analysis to=browser.search code<|message|>"
        '{"query": "EPSG 2154 bounds"}<|call|><|start|>assistant<|channel|>final<|message|>France.<|return|>',
        (),
        "reasoning",
    ),
    Sample(
        "harmony-call-only",
        '<|channel|>commentary to=functions.raster_stats <|constrain|>json<|message|>{"uri": "a.tif", "bands": [1]}'
        "<|call|>",
        (("raster_stats", {"uri": "a.tif", "bands": [1]}),),
    ),
    Sample(
        "harmony-recipient-in-role",
        "<|start|>assistant to=functions.search_catalog<|channel|>commentary json<|message|>"
        '{"query": "railways", "limit": 10}<|call|>',
        (("search_catalog", {"query": "railways", "limit": 10}),),
    ),
    Sample(
        "harmony-final-looks-like-json",
        "<|channel|>analysis<|message|>The user wants the call as JSON text, not executed.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>"
        '{"name": "raster_info", "arguments": {"uri": "dem.tif"}}<|return|>',
    ),
    Sample(
        "harmony-call-in-analysis",
        "<|channel|>analysis<|message|>I could do "
        '{"name": "raster_info", "arguments": {"uri": "dem.tif"}} but the result is above.<|end|>'
        "<|start|>assistant<|channel|>final<|message|>The DEM is 30 m.<|return|>",
        (),
        "reasoning",
    ),
    Sample(
        "harmony-recipient-in-analysis",
        '<|channel|>analysis to=functions.raster_info <|constrain|>json<|message|>{"uri": "dem.tif"}<|call|>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "harmony-call-marker-inside-argument",
        "<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>"
        '{"path": "h.txt", "content": "a message ends with <|call|> or <|end|>"}<|call|>',
        (("write_file", {"path": "h.txt", "content": "a message ends with <|call|> or <|end|>"}),),
    ),
    Sample(
        "harmony-preamble-then-call",
        "<|channel|>analysis<|message|>Buffer the rivers.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>I'll buffer the rivers by 200 m.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.vector_buffer <|constrain|>json<|message|>"
        '{"uri": "rivers.gpkg", "distance": 200}<|call|>',
        (("vector_buffer", {"uri": "rivers.gpkg", "distance": 200}),),
    ),
    Sample(
        "harmony-truncated-arguments",
        "<|channel|>analysis<|message|>Reproject it.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.raster_reproject <|constrain|>json<|message|>"
        '{"uri": "dem.tif", "dst_crs": "EPSG:38',
        (),
        "truncated",
    ),
    Sample(
        "harmony-truncated-header",
        "<|channel|>analysis<|message|>Reproject it.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.raster_reproject",
        (),
        "truncated",
    ),
    Sample(
        "harmony-final-answer",
        "<|channel|>analysis<|message|>Result says EPSG:2154.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The layer is in Lambert-93 (EPSG:2154).<|return|>",
    ),
    Sample(
        "harmony-arguments-not-json",
        "<|channel|>commentary to=functions.raster_info <|constrain|>json<|message|>uri=dem.tif<|call|>",
        (),
        "malformed",
    ),
]
