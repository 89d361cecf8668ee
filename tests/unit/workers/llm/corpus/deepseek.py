"""DeepSeek V3 / R1 and V3.1 markers, V3.2 DSML."""

from tests.unit.workers.llm.corpus import Sample

SAMPLES = [
    Sample(
        "deepseek-v3",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>raster_info\n```json\n"
        '{"uri": "dem.tif"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "deepseek-v3-two",
        "I'll get both.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>raster_info\n```json\n"
        '{"uri": "a.tif"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>raster_stats\n```json\n'
        '{"uri": "a.tif", "approx": true}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        (("raster_info", {"uri": "a.tif"}), ("raster_stats", {"uri": "a.tif", "approx": True})),
    ),
    Sample(
        "deepseek-v31",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{"uri": "dem.tif", "band": 1}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        (("raster_info", {"uri": "dem.tif", "band": 1}),),
    ),
    Sample(
        "deepseek-v31-thinking",
        "The user wants it in Web Mercator, bilinear is right for a DEM.</think>"
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>raster_reproject<｜tool▁sep｜>{"uri": "dem.tif", '
        '"dst_crs": "EPSG:3857", "resampling": "bilinear"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        (("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"}),),
    ),
    Sample(
        "deepseek-r1-think",
        "<think>\nNeed stats first.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function"
        '<｜tool▁sep｜>raster_stats\n```json\n{"uri": "ndvi.tif", "percentiles": [2, 98]}\n```'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        (("raster_stats", {"uri": "ndvi.tif", "percentiles": [2, 98]}),),
    ),
    Sample(
        "deepseek-end-marker-inside-argument",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{"path": "t.txt", "content": '
        '"a<｜tool▁call▁end｜>b<｜tool▁calls▁end｜>c"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        (("write_file", {"path": "t.txt", "content": "a<｜tool▁call▁end｜>b<｜tool▁calls▁end｜>c"}),),
    ),
    Sample(
        "deepseek-v31-truncated",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{"uri": "dem',
        (),
        "truncated",
    ),
    Sample(
        "deepseek-section-only",
        "Calling the tool now.<｜tool▁calls▁begin｜>",
        (),
        "truncated",
    ),
    Sample(
        "dsml-single",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.tif</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="band" string="false">2</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        (("raster_info", {"uri": "dem.tif", "band": 2}),),
    ),
    Sample(
        "dsml-string-flags",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="vector_buffer">\n'
        '<｜DSML｜parameter name="uri" string="true">parcels.gpkg</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="layer" string="true">3</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="distance" string="false">7.5</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="segments" string="false">3</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        (("vector_buffer", {"uri": "parcels.gpkg", "layer": "3", "distance": 7.5, "segments": 3}),),
    ),
    Sample(
        "dsml-json-values-and-two-invokes",
        "Reprojecting, then computing statistics.\n\n<｜DSML｜function_calls>\n"
        '<｜DSML｜invoke name="raster_reproject">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.tif</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="dst_crs" string="true">EPSG:25832</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="options" string="false">{"tiled": true}</｜DSML｜parameter>\n'
        '</｜DSML｜invoke>\n<｜DSML｜invoke name="raster_stats">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.tif</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="bands" string="false">[1]</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="approx" string="false">false</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        (
            ("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:25832", "options": {"tiled": True}}),
            ("raster_stats", {"uri": "dem.tif", "bands": [1], "approx": False}),
        ),
    ),
    Sample(
        "dsml-multiline-string",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_file">\n'
        '<｜DSML｜parameter name="path" string="true">run.sh</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="content" string="true">#!/bin/sh\ngdalinfo dem.tif\n</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        (("write_file", {"path": "run.sh", "content": "#!/bin/sh\ngdalinfo dem.tif\n"}),),
    ),
    Sample(
        "dsml-json-body",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="search_catalog">\n'
        '{"query": "orthophoto", "limit": 4}\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
        (("search_catalog", {"query": "orthophoto", "limit": 4}),),
    ),
    Sample(
        "dsml-thinking-then-call",
        'I should check the metadata.</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">lidar.tif</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        (("raster_info", {"uri": "lidar.tif"}),),
    ),
    Sample(
        "dsml-truncated",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.t',
        (),
        "truncated",
    ),
    Sample(
        "dsml-in-think-only",
        '<think>Option: <｜DSML｜function_calls>\n<｜DSML｜invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.tif</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls> - unnecessary.</think>The answer is 42 m.",
        (),
        "reasoning",
    ),
]

S, E = "<｜DSML｜ calls>\n", "</｜DSML｜ calls>"
"""The newest templates' spelling: a space after the second bar, in every tag."""


def _spaced(key: str, value: str, string: str = "true") -> str:
    return f'<｜DSML｜ parameter name="{key}" string="{string}">{value}</｜DSML｜ parameter>\n'


SAMPLES += [
    # issue 30: DSML with a space after the bars
    Sample(
        "dsml-spaced-single",
        f'{S}<｜DSML｜ invoke name="raster_info">\n{_spaced("uri", "dem.tif")}</｜DSML｜ invoke>\n{E}',
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "dsml-spaced-prose-and-two-invokes",
        "I'll read the metadata of both tiles.\n\n"
        f'{S}<｜DSML｜ invoke name="raster_info">\n{_spaced("uri", "n47e008.tif")}{_spaced("band", "1", "false")}'
        '</｜DSML｜ invoke>\n<｜DSML｜ invoke name="raster_info">\n'
        f"{_spaced('uri', 'n47e009.tif')}</｜DSML｜ invoke>\n{E}",
        (("raster_info", {"uri": "n47e008.tif", "band": 1}), ("raster_info", {"uri": "n47e009.tif"})),
    ),
    Sample(
        "dsml-spaced-json-values",
        f'{S}<｜DSML｜ invoke name="raster_reproject">\n{_spaced("uri", "dem.tif")}{_spaced("dst_crs", "EPSG:2056")}'
        f"{_spaced('options', '{' + chr(34) + 'tiled' + chr(34) + ': true}', 'false')}</｜DSML｜ invoke>\n{E}",
        (("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:2056", "options": {"tiled": True}}),),
    ),
    Sample(
        "dsml-spaced-after-thinking",
        "The user wants the first two bands only.</think>\n\n"
        f'{S}<｜DSML｜ invoke name="raster_stats">\n{_spaced("uri", "s2.tif")}{_spaced("bands", "[1, 2]", "false")}'
        f"{_spaced('approx', 'false', 'false')}</｜DSML｜ invoke>\n{E}",
        (("raster_stats", {"uri": "s2.tif", "bands": [1, 2], "approx": False}),),
    ),
    Sample(
        "dsml-spaced-untyped-by-schema",
        f'{S}<｜DSML｜ invoke name="vector_buffer">\n'
        '<｜DSML｜ parameter name="uri">roads.gpkg</｜DSML｜ parameter>\n'
        '<｜DSML｜ parameter name="layer">7</｜DSML｜ parameter>\n'
        '<｜DSML｜ parameter name="distance">12.5</｜DSML｜ parameter>\n'
        f"</｜DSML｜ invoke>\n{E}",
        (("vector_buffer", {"uri": "roads.gpkg", "layer": "7", "distance": 12.5}),),
    ),
    Sample(
        "dsml-spaced-ascii-bars",
        '<|DSML| calls>\n<|DSML| invoke name="search_catalog">\n'
        '<|DSML| parameter name="query" string="true">glacier outlines</|DSML| parameter>\n'
        '<|DSML| parameter name="limit" string="false">3</|DSML| parameter>\n'
        "</|DSML| invoke>\n</|DSML| calls>",
        (("search_catalog", {"query": "glacier outlines", "limit": 3}),),
    ),
    Sample(
        "dsml-spaced-end-tags-in-value",
        f'{S}<｜DSML｜ invoke name="write_file">\n{_spaced("path", "dsml.md")}'
        f"{_spaced('content', 'close with </｜DSML｜ parameter> and then </｜DSML｜ invoke>, in that order')}"
        f"</｜DSML｜ invoke>\n{E}",
        (
            (
                "write_file",
                {
                    "path": "dsml.md",
                    "content": "close with </｜DSML｜ parameter> and then </｜DSML｜ invoke>, in that order",
                },
            ),
        ),
    ),
    Sample(
        "dsml-spaced-whitespace-exact",
        f'{S}<｜DSML｜ invoke name="write_file">\n{_spaced("path", "w.txt")}'
        f"{_spaced('content', chr(10) + '  indented' + chr(10) + chr(10) + chr(9) + 'tab ')}</｜DSML｜ invoke>\n{E}",
        (("write_file", {"path": "w.txt", "content": "\n  indented\n\n\ttab "}),),
    ),
    Sample(
        "dsml-spacing-mixed-tag-by-tag",
        f'{S}<｜DSML｜ invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.tif</｜DSML｜ parameter>\n'
        '<｜DSML｜ parameter name="band" string="false">2</｜DSML｜parameter>\n'
        f"</｜DSML｜invoke>\n{E}",
        (("raster_info", {"uri": "dem.tif", "band": 2}),),
    ),
    Sample(
        "dsml-spaced-in-think-only",
        f'<think>I could run {S}<｜DSML｜ invoke name="raster_info">\n'
        f"{_spaced('uri', 'dem.tif')}</｜DSML｜ invoke>\n{E}"
        " but the header already says EPSG:4326.</think>It is in EPSG:4326.",
        (),
        "reasoning",
    ),
    Sample(
        "dsml-spaced-truncated",
        f'{S}<｜DSML｜ invoke name="raster_info">\n<｜DSML｜ parameter name="uri" string="true">dem.t',
        (),
        "truncated",
    ),
    # issue 30: self-closing invokes are calls without arguments
    Sample(
        "dsml-self-closing",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="workspace_summary"/>\n</｜DSML｜function_calls>',
        (("workspace_summary", {}),),
    ),
    Sample(
        "dsml-self-closing-spaced",
        f'Let me list the workspace first.\n\n{S}<｜DSML｜ invoke name="workspace_summary" />\n{E}',
        (("workspace_summary", {}),),
    ),
    Sample(
        "dsml-self-closing-then-invoke",
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="workspace_summary"/>\n<｜DSML｜invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">dem.tif</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
        (("workspace_summary", {}), ("raster_info", {"uri": "dem.tif"})),
    ),
    Sample(
        "dsml-invoke-then-self-closing",
        f'{S}<｜DSML｜ invoke name="raster_info">\n{_spaced("uri", "a.tif")}</｜DSML｜ invoke>\n'
        f'<｜DSML｜ invoke name="workspace_summary"/>\n{E}',
        (("raster_info", {"uri": "a.tif"}), ("workspace_summary", {})),
    ),
    Sample(
        "dsml-self-closing-plain-tags",
        '<function_calls>\n<invoke name="workspace_summary"/>\n</function_calls>',
        (("workspace_summary", {}),),
    ),
    Sample(
        "dsml-self-closing-missing-required",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="raster_info"/>\n</｜DSML｜function_calls>',
        (),
        "malformed",
    ),
    Sample(
        "dsml-self-closing-text-in-value",
        f'{S}<｜DSML｜ invoke name="write_file">\n{_spaced("path", "note.md")}'
        f"{_spaced('content', 'an empty call reads <｜DSML｜ invoke name=' + chr(34) + 'x' + chr(34) + '/>')}"
        f"</｜DSML｜ invoke>\n{E}",
        (("write_file", {"path": "note.md", "content": 'an empty call reads <｜DSML｜ invoke name="x"/>'}),),
    ),
    Sample(
        "dsml-self-closing-cut-before-bracket",
        f'{S}<｜DSML｜ invoke name="workspace_summary"/',
        (),
        "truncated",
    ),
    # issue 30: cut off in the second call: the first is a call
    Sample(
        "deepseek-v31-cut-in-second",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{"uri": "a.tif"}<｜tool▁call▁end｜>'
        '<｜tool▁call▁begin｜>raster_stats<｜tool▁sep｜>{"uri": "a.tif", "percentiles": [2, 9',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    Sample(
        "deepseek-cut-in-second-marker-in-first",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{"path": "m.txt", "content": '
        '"<｜tool▁call▁begin｜>x"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>',
        (("write_file", {"path": "m.txt", "content": "<｜tool▁call▁begin｜>x"}),),
        "truncated",
    ),
    Sample(
        "dsml-cut-in-second-invoke",
        f'{S}<｜DSML｜ invoke name="raster_info">\n{_spaced("uri", "a.tif")}</｜DSML｜ invoke>\n'
        '<｜DSML｜ invoke name="raster_stats">\n'
        '<｜DSML｜ parameter name="uri" string="true">a.tif</｜DSML｜ parameter>\n'
        '<｜DSML｜ parameter name="bands" string="false">[1,',
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
    # issue 30: markup that yields no call is an error, never an empty success
    Sample(
        "dsml-spaced-foreign-body",
        f'{S}<｜DSML｜ invoke name="raster_info"><uri>dem.tif</uri></｜DSML｜ invoke>\n{E}',
        (),
        "malformed",
    ),
    Sample(
        "dsml-spaced-section-without-invoke",
        f'{S}raster_info(uri="dem.tif")\n{E}',
        (),
        "malformed",
    ),
    Sample(
        "deepseek-section-without-call",
        "<｜tool▁calls▁begin｜>raster_info dem.tif<｜tool▁calls▁end｜>",
        (),
        "malformed",
    ),
]
