"""Qwen3-Coder / Qwen3.5 XML: `<tool_call><function=NAME><parameter=KEY>\nVALUE\n</parameter></function>…`."""

from tests.unit.workers.llm.corpus import Sample

C_SOURCE = '#include <stdio.h>\n\nint main(void) {\n    printf("%d\\n", 42);\n    return 0;\n}\n'

SAMPLES = [
    Sample(
        "qwen-xml-single",
        "<tool_call>\n<function=raster_info>\n<parameter=uri>\ndem.tif\n</parameter>\n<parameter=band>\n2\n"
        "</parameter>\n</function>\n</tool_call>",
        (("raster_info", {"uri": "dem.tif", "band": 2}),),
    ),
    Sample(
        "qwen-xml-code-keeps-newlines",
        "I'll write the program.\n\n<tool_call>\n<function=write_file>\n<parameter=path>\nmain.c\n</parameter>\n"
        f"<parameter=content>\n{C_SOURCE}\n</parameter>\n</function>\n</tool_call>",
        (("write_file", {"path": "main.c", "content": C_SOURCE}),),
    ),
    Sample(
        "qwen-xml-indented-value",
        "<tool_call>\n<function=write_file>\n<parameter=path>\nconfig.yaml\n</parameter>\n<parameter=content>\n"
        "  crs: EPSG:4326\n  tiles:\n    - a.tif\n</parameter>\n</function>\n</tool_call>",
        (("write_file", {"path": "config.yaml", "content": "  crs: EPSG:4326\n  tiles:\n    - a.tif"}),),
    ),
    Sample(
        "qwen-xml-markers-inside-value",
        "<tool_call>\n<function=write_file>\n<parameter=path>\nPROMPT.md\n</parameter>\n<parameter=content>\n"
        "Calls look like <function=name> ... </function> inside </tool_call> tags.\n</parameter>\n</function>\n"
        "</tool_call>",
        (
            (
                "write_file",
                {
                    "path": "PROMPT.md",
                    "content": "Calls look like <function=name> ... </function> inside </tool_call> tags.",
                },
            ),
        ),
    ),
    Sample(
        "qwen-xml-schema-types",
        "<tool_call>\n<function=vector_buffer>\n<parameter=uri>\nparcels.gpkg\n</parameter>\n<parameter=layer>\n3\n"
        "</parameter>\n<parameter=distance>\n12.5\n</parameter>\n<parameter=segments>\n3\n</parameter>\n</function>\n"
        "</tool_call>",
        (("vector_buffer", {"uri": "parcels.gpkg", "layer": "3", "distance": 12.5, "segments": 3}),),
    ),
    Sample(
        "qwen-xml-object-array-bool",
        "<tool_call>\n<function=raster_stats>\n<parameter=uri>\nndvi.tif\n</parameter>\n<parameter=bands>\n[1, 3]\n"
        "</parameter>\n<parameter=approx>\nfalse\n</parameter>\n<parameter=percentiles>\n[5, 50, 95.5]\n"
        "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=raster_reproject>\n<parameter=uri>\n"
        "ndvi.tif\n</parameter>\n<parameter=dst_crs>\nEPSG:3857\n</parameter>\n<parameter=resampling>\nbilinear\n"
        '</parameter>\n<parameter=options>\n{"tiled": true}\n</parameter>\n</function>\n</tool_call>',
        (
            ("raster_stats", {"uri": "ndvi.tif", "bands": [1, 3], "approx": False, "percentiles": [5, 50, 95.5]}),
            (
                "raster_reproject",
                {"uri": "ndvi.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear", "options": {"tiled": True}},
            ),
        ),
    ),
    Sample(
        "qwen-xml-missing-parameter-close",
        "<tool_call>\n<function=raster_info>\n<parameter=uri>\nroads.tif\n<parameter=band>\n1\n</parameter>\n"
        "</function>\n</tool_call>",
        (("raster_info", {"uri": "roads.tif", "band": 1}),),
    ),
    Sample(
        "qwen-xml-last-parameter-unclosed",
        "<tool_call>\n<function=search_catalog>\n<parameter=query>\nflood extent 2021\n<parameter=limit>\n10\n"
        "</function>\n</tool_call>",
        (("search_catalog", {"query": "flood extent 2021", "limit": 10}),),
    ),
    Sample(
        "qwen-xml-bare-function",
        "<function=raster_info>\n<parameter=uri>\ns2_B04.jp2\n</parameter>\n</function>",
        (("raster_info", {"uri": "s2_B04.jp2"}),),
    ),
    Sample(
        "qwen-xml-truncated-value",
        "<tool_call>\n<function=write_file>\n<parameter=path>\nmain.c\n</parameter>\n<parameter=content>\n"
        "#include <stdio.h>\n\nint main(void) {\n",
        (),
        "truncated",
    ),
    Sample(
        "qwen-xml-truncated-before-function-close",
        "<tool_call>\n<function=raster_info>\n<parameter=uri>\ndem.tif\n</parameter>\n",
        (),
        "truncated",
    ),
    Sample(
        "qwen-xml-think-only",
        "<think>\nA call would be <tool_call>\n<function=raster_info>\n<parameter=uri>\ndem.tif\n</parameter>\n"
        "</function>\n</tool_call> but I already know the answer.\n</think>\n\nIt is a 30 m DEM.",
        (),
        "reasoning",
    ),
    Sample(
        "qwen-xml-null-and-empty",
        "<tool_call>\n<function=search_catalog>\n<parameter=query>\nwetlands\n</parameter>\n<parameter=limit>\nnull\n"
        "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=workspace_summary>\n</function>\n</tool_call>",
        (("search_catalog", {"query": "wetlands", "limit": None}), ("workspace_summary", {})),
    ),
    Sample(
        "qwen-xml-garbage-in-function",
        "<tool_call>\n<function=raster_info>\nuri = dem.tif\n</function>\n</tool_call>",
        (),
        "malformed",
    ),
]


def _xml(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


SAMPLES += [
    # issue 30: end tags and parameter tags written inside a value
    Sample(
        "qwen-xml-parameter-pair-in-value",
        _xml("write_file", ("path", "doc.md"), ("content", "pass it as <parameter=uri>\ndem.tif\n</parameter> below")),
        (("write_file", {"path": "doc.md", "content": "pass it as <parameter=uri>\ndem.tif\n</parameter> below"}),),
    ),
    Sample(
        "qwen-xml-function-end-in-value",
        _xml("write_file", ("path", "end.md"), ("content", "finish with\n</function>\n</tool_call>\nand stop.")),
        (("write_file", {"path": "end.md", "content": "finish with\n</function>\n</tool_call>\nand stop."}),),
    ),
    Sample(
        "qwen-xml-closer-then-text-in-value",
        _xml("write_file", ("path", "c.md"), ("content", "a </parameter> closes a value")),
        (("write_file", {"path": "c.md", "content": "a </parameter> closes a value"}),),
    ),
    Sample(
        "qwen-xml-whole-function-in-value",
        _xml(
            "write_file",
            ("path", "example.xml"),
            ("content", "<function=raster_info>\n<parameter=uri>\na.tif\n</parameter>\n</function>"),
        ),
        (
            (
                "write_file",
                {
                    "path": "example.xml",
                    "content": "<function=raster_info>\n<parameter=uri>\na.tif\n</parameter>\n</function>",
                },
            ),
        ),
    ),
    # issue 30: null is JSON null where the schema allows null
    Sample(
        "qwen-xml-null-for-nullable-string",
        _xml("search_catalog", ("query", "wetlands"), ("collection", "null")),
        (("search_catalog", {"query": "wetlands", "collection": None}),),
    ),
    Sample(
        "qwen-xml-null-for-nullable-integer",
        _xml("search_catalog", ("query", "wetlands"), ("limit", "null")),
        (("search_catalog", {"query": "wetlands", "limit": None}),),
    ),
    Sample(
        "qwen-xml-null-text-for-a-string",
        _xml("search_catalog", ("query", "null"), ("collection", "sentinel-2")),
        (("search_catalog", {"query": "null", "collection": "sentinel-2"}),),
    ),
    Sample(
        "qwen-xml-null-word-in-nullable-string",
        _xml("search_catalog", ("query", "x"), ("collection", "null island")),
        (("search_catalog", {"query": "x", "collection": "null island"}),),
    ),
    # issue 30: cut off in the second call
    Sample(
        "qwen-xml-cut-in-second",
        _xml("raster_info", ("uri", "a.tif")) + "\n<tool_call>\n<function=raster_stats>\n<parameter=uri>\na.t",
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
]
