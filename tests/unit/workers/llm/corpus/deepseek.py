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
