"""Gemma 4 `<|tool_call>call:NAME{key:<|"|>text<|"|>,…}<tool_call|>` and FunctionGemma's `<escape>` form."""

from tests.unit.workers.llm.corpus import Sample

Q = '<|"|>'

SAMPLES = [
    Sample(
        "gemma-single",
        f"<|tool_call>call:raster_info{{uri:{Q}dem.tif{Q}}}<tool_call|>",
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "gemma-number",
        f"<|tool_call>call:raster_info{{band:2,uri:{Q}dem.tif{Q}}}<tool_call|>",
        (("raster_info", {"uri": "dem.tif", "band": 2}),),
    ),
    Sample(
        "gemma-object-bool",
        f"<|tool_call>call:raster_reproject{{dst_crs:{Q}EPSG:3857{Q},options:{{tiled:true}},"
        f"resampling:{Q}nearest{Q},uri:{Q}landcover.tif{Q}}}<tool_call|>",
        (
            (
                "raster_reproject",
                {"uri": "landcover.tif", "dst_crs": "EPSG:3857", "resampling": "nearest", "options": {"tiled": True}},
            ),
        ),
    ),
    Sample(
        "gemma-arrays",
        f"<|tool_call>call:raster_stats{{approx:false,bands:[1,2,3],percentiles:[2.5,97.5],uri:{Q}s2.tif{Q}}}"
        "<tool_call|>",
        (("raster_stats", {"uri": "s2.tif", "bands": [1, 2, 3], "approx": False, "percentiles": [2.5, 97.5]}),),
    ),
    Sample(
        "gemma-string-with-markup",
        f"<|tool_call>call:write_file{{content:{Q}if (a) {{ b, c }} <tool_call|> [x]\nnext line{Q},"
        f"path:{Q}odd.txt{Q}}}<tool_call|>",
        (("write_file", {"path": "odd.txt", "content": "if (a) { b, c } <tool_call|> [x]\nnext line"}),),
    ),
    Sample(
        "gemma-thinking-then-call",
        "<|channel>thought\nThe user wants a 10 m buffer.<channel|>"
        f"<|tool_call>call:vector_buffer{{distance:10,uri:{Q}paths.gpkg{Q}}}<tool_call|>",
        (("vector_buffer", {"uri": "paths.gpkg", "distance": 10}),),
    ),
    Sample(
        "gemma-call-in-thought-only",
        f"<|channel>thought\nMaybe <|tool_call>call:raster_info{{uri:{Q}dem.tif{Q}}}<tool_call|>, "
        "no: the answer is known.<channel|>The DEM covers the whole canton.",
        (),
        "reasoning",
    ),
    Sample(
        "gemma-two-calls",
        f"<|tool_call>call:raster_info{{uri:{Q}a.tif{Q}}}<tool_call|><|tool_call>call:raster_info"
        f"{{uri:{Q}b.tif{Q}}}<tool_call|>",
        (("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})),
    ),
    Sample(
        "gemma-string-vs-integer",
        f"<|tool_call>call:vector_buffer{{distance:0.5,layer:{Q}3{Q},segments:3,uri:{Q}p.gpkg{Q}}}<tool_call|>",
        (("vector_buffer", {"uri": "p.gpkg", "layer": "3", "distance": 0.5, "segments": 3}),),
    ),
    Sample(
        "gemma-no-arguments",
        "Let me list the workspace first.\n<|tool_call>call:workspace_summary{}<tool_call|>",
        (("workspace_summary", {}),),
    ),
    Sample(
        "gemma-nested-list-of-strings",
        f"<|tool_call>call:search_catalog{{bbox:[-10,35.5,5,44],limit:null,query:{Q}olive groves{Q}}}<tool_call|>",
        (("search_catalog", {"query": "olive groves", "bbox": [-10, 35.5, 5, 44], "limit": None}),),
    ),
    Sample(
        "functiongemma",
        "<start_function_call>call:raster_info{uri:<escape>dem.tif<escape>}<end_function_call>",
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "gemma-truncated-in-string",
        f"<|tool_call>call:write_file{{content:{Q}partial text",
        (),
        "truncated",
    ),
    Sample(
        "gemma-truncated-after-brace",
        "<|tool_call>call:raster_info{",
        (),
        "truncated",
    ),
    Sample(
        "gemma-missing-call-prefix",
        f"<|tool_call>raster_info({Q}dem.tif{Q})<tool_call|>",
        (),
        "malformed",
    ),
]

SAMPLES += [
    # issue 30: cut off in the second call; markup that yields no call is an error
    Sample(
        "gemma-cut-in-second",
        f"<|tool_call>call:raster_info{{uri:{Q}a.tif{Q}}}<tool_call|><|tool_call>call:raster_stats{{uri:{Q}a.t",
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    Sample(
        "gemma-cut-in-second-end-marker-in-first",
        f"<|tool_call>call:write_file{{path:{Q}g.md{Q},content:{Q}ends with <tool_call|>{Q}}}<tool_call|>"
        "<|tool_call>call:raster_info{band:",
        (("write_file", {"path": "g.md", "content": "ends with <tool_call|>"}),),
        "truncated",
    ),
    Sample(
        "gemma-python-syntax-inside-markers",
        '<|tool_call>raster_info(uri="dem.tif")<tool_call|>',
        (),
        "malformed",
    ),
]
