"""Llama 3.1–4: JSON `{"name", "parameters"}`, `<|python_tag|>`, `<function=…>{json}</function>`, and the
pythonic list `[f(a=1), g()]` (Llama 3.2/4 and BFCL prompting)."""

from tests.unit.workers.llm.corpus import Sample

SAMPLES = [
    Sample(
        "llama-json",
        '{"name": "raster_info", "parameters": {"uri": "dem.tif"}}',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "llama-json-type-function",
        '{"type": "function", "name": "search_catalog", "parameters": {"query": "lakes", "limit": 3}}<|eot_id|>',
        (("search_catalog", {"query": "lakes", "limit": 3}),),
    ),
    Sample(
        "llama-python-tag-json",
        '<|python_tag|>{"name": "raster_info", "parameters": {"uri": "dem.tif", "band": 1}}<|eom_id|>',
        (("raster_info", {"uri": "dem.tif", "band": 1}),),
    ),
    Sample(
        "llama-python-tag-two-json",
        '<|python_tag|>{"name": "raster_info", "parameters": {"uri": "a.tif"}}; '
        '{"name": "raster_info", "parameters": {"uri": "b.tif"}}<|eom_id|>',
        (("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})),
    ),
    Sample(
        "llama-function-tag",
        '<function=vector_buffer>{"uri": "coast.gpkg", "distance": 1000}</function><|eot_id|>',
        (("vector_buffer", {"uri": "coast.gpkg", "distance": 1000}),),
    ),
    Sample(
        "llama-pythonic",
        "[raster_info(uri='dem.tif', band=2)]",
        (("raster_info", {"uri": "dem.tif", "band": 2}),),
    ),
    Sample(
        "llama-pythonic-python-literals",
        '[raster_reproject(uri="dem.tif", dst_crs="EPSG:3857", options={\'tiled\': True}), '
        "search_catalog(query='roads', limit=None)]",
        (
            ("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:3857", "options": {"tiled": True}}),
            ("search_catalog", {"query": "roads", "limit": None}),
        ),
    ),
    Sample(
        "llama-pythonic-lists-and-no-args",
        "[raster_stats(uri='a.tif', bands=[1, 2], approx=False, percentiles=(5, 95.0)), workspace_summary()]",
        (
            ("raster_stats", {"uri": "a.tif", "bands": [1, 2], "approx": False, "percentiles": [5, 95.0]}),
            ("workspace_summary", {}),
        ),
    ),
    Sample(
        "llama4-python-start",
        '<|python_start|>[search_catalog(query="forest", bbox=[1.0, 2.0, 3.0, 4.0])]<|python_end|><|eom|>',
        (("search_catalog", {"query": "forest", "bbox": [1.0, 2.0, 3.0, 4.0]}),),
    ),
    Sample(
        "llama-pythonic-brackets-in-string",
        "[write_file(path='f.py', content='print(xs[0]) # ]) done\\n')]",
        (("write_file", {"path": "f.py", "content": "print(xs[0]) # ]) done\n"}),),
    ),
    Sample(
        "llama-pythonic-truncated",
        "[raster_info(uri='dem.tif'), raster_stats(uri='dem.tif', bands=[1,",
        (("raster_info", {"uri": "dem.tif"}),),
        "truncated",
    ),
    Sample(
        "llama-pythonic-positional",
        "[raster_info('dem.tif')]",
        (),
        "malformed",
    ),
    Sample(
        "llama-pythonic-not-literal",
        "[raster_info(uri=open('dem.tif').name)]",
        (),
        "malformed",
    ),
    Sample(
        "llama-json-truncated",
        '{"name": "raster_info", "parameters": {"uri": "de',
        (),
        "truncated",
    ),
    Sample(
        "llama-answer-with-data-json",
        'The metadata is {"crs": "EPSG:4326", "width": 1024}. The raster is in WGS 84.',
    ),
]

SAMPLES += [
    # issue 30: cut off in the second call
    Sample(
        "llama-python-tag-json-cut-in-second",
        '<|python_tag|>{"name": "raster_info", "parameters": {"uri": "a.tif"}}; '
        '{"name": "raster_stats", "parameters": {"uri": "a.t',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    Sample(
        "llama-pythonic-cut-in-third-string-with-bracket",
        "[write_file(path='b.txt', content='x), y]'), raster_info(uri='a.tif'), raster_stats(uri='a.tif', approx=Tr",
        (("write_file", {"path": "b.txt", "content": "x), y]"}), ("raster_info", {"uri": "a.tif"})),
        "truncated",
    ),
]
