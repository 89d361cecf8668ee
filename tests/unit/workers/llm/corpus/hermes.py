"""Qwen2.5 / Qwen3 / Hermes: `<tool_call>{json}</tool_call>` (Qwen3 chat template, thinking and not)."""

from tests.unit.workers.llm.corpus import Sample

SAMPLES = [
    Sample(
        "hermes-single",
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "dem.tif"}}\n</tool_call>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "hermes-think-then-call",
        "<think>\nThe user wants the CRS of the DEM. raster_info reports it, band 1 is enough.\n</think>\n\n"
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "data/dem.tif", "band": 1}}\n</tool_call>',
        (("raster_info", {"uri": "data/dem.tif", "band": 1}),),
    ),
    Sample(
        "hermes-orphan-think-close",
        "Okay, the question is about the extent, so I need the metadata first.\n</think>\n\n"
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "ortho.tif"}}\n</tool_call><|im_end|>',
        (("raster_info", {"uri": "ortho.tif"}),),
    ),
    Sample(
        "hermes-parallel",
        "I'll read both rasters.\n"
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "a.tif"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "raster_stats", "arguments": {"uri": "a.tif", "bands": [1, 2], "approx": true}}\n'
        "</tool_call>",
        (
            ("raster_info", {"uri": "a.tif"}),
            ("raster_stats", {"uri": "a.tif", "bands": [1, 2], "approx": True}),
        ),
    ),
    Sample(
        "hermes-end-tag-inside-content",
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "NOTES.md", "content": '
        '"Wrap each call in <tool_call> and </tool_call>.\\nOne call per block."}}\n</tool_call>',
        (
            (
                "write_file",
                {"path": "NOTES.md", "content": "Wrap each call in <tool_call> and </tool_call>.\nOne call per block."},
            ),
        ),
    ),
    Sample(
        "hermes-braces-in-strings",
        '<tool_call>\n{"name": "search_catalog", "arguments": {"query": "name = \\"{river}\\" AND note ~ \'}\'", '
        '"limit": 5}}\n</tool_call>',
        (("search_catalog", {"query": "name = \"{river}\" AND note ~ '}'", "limit": 5}),),
    ),
    Sample(
        "hermes-call-inside-think-only",
        "<think>\nI could run <tool_call>\n"
        '{"name": "raster_info", "arguments": {"uri": "dem.tif"}}\n</tool_call> but the user already gave '
        "the CRS.\n</think>\n\nThe file is in EPSG:4326, as you said.",
        (),
        "reasoning",
    ),
    Sample(
        "hermes-think-call-differs",
        '<think>\nMaybe <tool_call>{"name": "raster_info", "arguments": {"uri": "old.tif"}}</tool_call>? '
        "No, the user means the new file.\n</think>\n"
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "new.tif"}}\n</tool_call>',
        (("raster_info", {"uri": "new.tif"}),),
    ),
    Sample(
        "hermes-truncated",
        '<tool_call>\n{"name": "raster_reproject", "arguments": {"uri": "dem.tif", "dst_crs": "EPSG:3857"',
        (),
        "truncated",
    ),
    Sample(
        "hermes-truncated-second",
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "a.tif"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "b.t',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    Sample(
        "hermes-no-end-tag",
        'Checking.\n<tool_call>\n{"name": "raster_info", "arguments": {"uri": "dem.tif"}}',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "hermes-string-arguments",
        '<tool_call>\n{"name": "vector_buffer", "arguments": "{\\"uri\\": \\"roads.gpkg\\", \\"distance\\": 25.5}"}'
        "\n</tool_call>",
        (("vector_buffer", {"uri": "roads.gpkg", "distance": 25.5}),),
    ),
    Sample(
        "hermes-not-json",
        "<tool_call>\nraster_info(uri='dem.tif')\n</tool_call>",
        (),
        "malformed",
    ),
    Sample(
        "hermes-unicode-and-nested",
        '<tool_call>\n{"name": "raster_reproject", "arguments": {"uri": "höhenmodell_zürich.tif", '
        '"dst_crs": "EPSG:2056", "resampling": "cubic", "options": {"tiled": false}}}\n</tool_call>',
        (
            (
                "raster_reproject",
                {
                    "uri": "höhenmodell_zürich.tif",
                    "dst_crs": "EPSG:2056",
                    "resampling": "cubic",
                    "options": {"tiled": False},
                },
            ),
        ),
    ),
    Sample(
        "hermes-plain-answer",
        "<think>\nThe tool result says EPSG:32632.\n</think>\n\nThe raster uses UTM zone 32N (EPSG:32632).",
    ),
]

SAMPLES += [
    # issue 30: cut off in the second call; markup that yields no call is an error
    Sample(
        "hermes-cut-in-second-after-end-tag-in-string",
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "t.md", "content": "</tool_call><tool_call>"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "raster_info", "arguments": {"uri": "a.tif", "band": ',
        (("write_file", {"path": "t.md", "content": "</tool_call><tool_call>"}),),
        "truncated",
    ),
    Sample(
        "hermes-cut-in-third",
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "a.tif"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "b.tif"}}\n</tool_call>\n<tool_call>\n{"na',
        (("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})),
        "truncated",
    ),
    Sample(
        "hermes-tag-without-call",
        "I'll look it up.\n<tool_call>\nraster_info for dem.tif please",
        (),
        "malformed",
    ),
    Sample(
        "hermes-after-a-stray-mistral-marker",
        "Mistral models would write [TOOL_CALLS] here; I use the tag.\n"
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "dem.tif"}}\n</tool_call>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
]
