"""Mistral: `[TOOL_CALLS] [{"name", "arguments"}]` (v3–v7) and `[TOOL_CALLS]NAME[ARGS]{…}` (v11+, v13 `[CALL_ID]`)."""

from tests.unit.workers.llm.corpus import Sample

SAMPLES = [
    Sample(
        "mistral-array",
        '[TOOL_CALLS] [{"name": "raster_info", "arguments": {"uri": "dem.tif"}}]</s>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "mistral-array-two-with-ids",
        '[TOOL_CALLS][{"name": "raster_info", "arguments": {"uri": "a.tif"}, "id": "a1B2c3D4e"}, '
        '{"name": "raster_info", "arguments": {"uri": "b.tif", "band": 2}, "id": "f5G6h7I8j"}]',
        (("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif", "band": 2})),
    ),
    Sample(
        "mistral-v11",
        '[TOOL_CALLS]raster_info[ARGS]{"uri": "dem.tif"}',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "mistral-v11-two",
        '[TOOL_CALLS]raster_info[ARGS]{"uri": "dem.tif"}[TOOL_CALLS]raster_stats[ARGS]{"uri": "dem.tif", '
        '"percentiles": [10, 90]}',
        (("raster_info", {"uri": "dem.tif"}), ("raster_stats", {"uri": "dem.tif", "percentiles": [10, 90]})),
    ),
    Sample(
        "mistral-v13-call-id",
        '[TOOL_CALLS]vector_buffer[CALL_ID]k9L8m7N6o[ARGS]{"uri": "rivers.shp", "distance": 100, "segments": 8}</s>',
        (("vector_buffer", {"uri": "rivers.shp", "distance": 100, "segments": 8}),),
    ),
    Sample(
        "mistral-marker-inside-argument",
        '[TOOL_CALLS]write_file[ARGS]{"path": "parser.md", "content": "Calls start with [TOOL_CALLS] and '
        'arguments follow [ARGS]."}',
        (
            (
                "write_file",
                {"path": "parser.md", "content": "Calls start with [TOOL_CALLS] and arguments follow [ARGS]."},
            ),
        ),
    ),
    Sample(
        "mistral-array-marker-inside-argument",
        '[TOOL_CALLS] [{"name": "write_file", "arguments": {"path": "x.txt", "content": "[TOOL_CALLS] [{}]"}}]',
        (("write_file", {"path": "x.txt", "content": "[TOOL_CALLS] [{}]"}),),
    ),
    Sample(
        "magistral-think-then-call",
        "[THINK]The user wants the statistics of band 1 only. Approximate is fine.[/THINK]"
        '[TOOL_CALLS]raster_stats[ARGS]{"uri": "ndvi.tif", "bands": [1], "approx": true}',
        (("raster_stats", {"uri": "ndvi.tif", "bands": [1], "approx": True}),),
    ),
    Sample(
        "magistral-call-in-think-only",
        '[THINK]First idea: [TOOL_CALLS]raster_info[ARGS]{"uri": "dem.tif"} - not needed, the result is above.'
        "[/THINK]The DEM's resolution is 25 m.",
        (),
        "reasoning",
    ),
    Sample(
        "mistral-prose-then-call",
        'Let me check the metadata first.[TOOL_CALLS]raster_info[ARGS]{"uri": "scan.tif"}',
        (("raster_info", {"uri": "scan.tif"}),),
    ),
    Sample(
        "mistral-v11-truncated",
        '[TOOL_CALLS]raster_reproject[ARGS]{"uri": "dem.tif", "dst_crs": "EPSG:',
        (),
        "truncated",
    ),
    Sample(
        "mistral-array-truncated",
        '[TOOL_CALLS] [{"name": "raster_info", "arguments": {"uri": "a.tif"}}, {"name": "raster_info", "argu',
        (),
        "truncated",
    ),
    Sample(
        "mistral-args-not-json",
        "[TOOL_CALLS]raster_info[ARGS]uri=dem.tif",
        (),
        "malformed",
    ),
    Sample(
        "mistral-empty-arguments",
        "[TOOL_CALLS]workspace_summary[ARGS]{}",
        (("workspace_summary", {}),),
    ),
]

SAMPLES += [
    # issue 30: cut off in the second call
    Sample(
        "mistral-cut-in-second",
        '[TOOL_CALLS]raster_info[ARGS]{"uri": "a.tif"}[TOOL_CALLS]raster_stats[ARGS]{"uri": "a.tif", "bands": [1',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    Sample(
        "mistral-cut-in-second-marker-in-first",
        '[TOOL_CALLS]write_file[ARGS]{"path": "m.md", "content": "[TOOL_CALLS]x[ARGS]{}"}[TOOL_CALLS]raster_in',
        (("write_file", {"path": "m.md", "content": "[TOOL_CALLS]x[ARGS]{}"}),),
        "truncated",
    ),
]
