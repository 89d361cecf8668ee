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

SAMPLES += [
    # issue 30: replies that begin inside a header the engine prefilled, recipients in the channel header
    Sample(
        "harmony-prefilled-recipient",
        ' to=functions.raster_info<|channel|>commentary <|constrain|>json<|message|>{"uri": "dem.tif"}<|call|>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "harmony-prefilled-constrain-after-channel",
        " to=functions.raster_stats<|channel|>commentary<|constrain|>json<|message|>"
        '{"uri": "ndvi.tif", "percentiles": [5, 95]}<|call|>',
        (("raster_stats", {"uri": "ndvi.tif", "percentiles": [5, 95]}),),
    ),
    Sample(
        "harmony-prefilled-bare-json",
        ' to=functions.search_catalog<|channel|>commentary json<|message|>{"query": "flood extent", "limit": 5}'
        "<|call|>",
        (("search_catalog", {"query": "flood extent", "limit": 5}),),
    ),
    Sample(
        "harmony-prefilled-channel-too",
        'commentary to=functions.vector_buffer <|constrain|>json<|message|>{"uri": "wells.gpkg", "distance": 50}'
        "<|call|>",
        (("vector_buffer", {"uri": "wells.gpkg", "distance": 50}),),
    ),
    Sample(
        "harmony-recipient-in-analysis-header",
        "<|channel|>analysis<|message|>Need it in UTM 32N first.<|end|>"
        "<|start|>assistant<|channel|>analysis to=functions.raster_reproject <|constrain|>json<|message|>"
        '{"uri": "dem.tif", "dst_crs": "EPSG:32632"}<|call|>',
        (("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:32632"}),),
    ),
    Sample(
        "harmony-constrain-glued-to-recipient",
        "<|start|>assistant<|channel|>commentary to=functions.raster_info<|constrain|>json<|message|>"
        '{"uri": "ortho.tif", "band": 3}<|call|>',
        (("raster_info", {"uri": "ortho.tif", "band": 3}),),
    ),
    Sample(
        "harmony-prefilled-markers-in-argument",
        " to=functions.write_file<|channel|>commentary <|constrain|>json<|message|>"
        '{"path": "h.md", "content": "a header: to=functions.x<|channel|>commentary<|message|> ends with <|call|>"}'
        "<|call|>",
        (
            (
                "write_file",
                {
                    "path": "h.md",
                    "content": "a header: to=functions.x<|channel|>commentary<|message|> ends with <|call|>",
                },
            ),
        ),
    ),
    Sample(
        "harmony-prefilled-truncated",
        ' to=functions.raster_info<|channel|>commentary <|constrain|>json<|message|>{"uri": "dem',
        (),
        "truncated",
    ),
    Sample(
        "harmony-prefilled-builtin-on-analysis",
        ' to=browser.search<|channel|>analysis<|message|>{"query": "EPSG:32632"}<|call|>'
        "<|start|>assistant<|channel|>final<|message|>UTM zone 32N.<|return|>",
        (),
        "reasoning",
    ),
    # issue 30: cut off in the second call
    Sample(
        "harmony-cut-in-second-call",
        '<|channel|>commentary to=functions.raster_info <|constrain|>json<|message|>{"uri": "a.tif"}<|call|>'
        "<|start|>assistant<|channel|>commentary to=functions.raster_stats <|constrain|>json<|message|>"
        '{"uri": "a.tif", "ban',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    # issue 30: a call header that names no recipient is an error
    Sample(
        "harmony-constrain-without-recipient",
        '<|channel|>commentary <|constrain|>json<|message|>{"uri": "dem.tif"}<|call|>',
        (),
        "malformed",
    ),
]
