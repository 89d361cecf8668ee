"""GLM-4.5 / 4.6 / 4.7: `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`."""

from tests.unit.workers.llm.corpus import Sample

END = "</tool_call>"

SAMPLES = [
    Sample(
        "glm-single",
        "<tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>dem.tif</arg_value>\n</tool_call>",
        (("raster_info", {"uri": "dem.tif"}),),
    ),
    Sample(
        "glm47-compact",
        "<tool_call>raster_info<arg_key>uri</arg_key><arg_value>dem.tif</arg_value><arg_key>band</arg_key>"
        "<arg_value>3</arg_value></tool_call>",
        (("raster_info", {"uri": "dem.tif", "band": 3}),),
    ),
    Sample(
        "glm-think-then-call",
        "<think>The user asks for a buffer of 50 m around the roads layer.</think>\n"
        "<tool_call>vector_buffer\n<arg_key>uri</arg_key>\n<arg_value>roads.gpkg</arg_value>\n"
        "<arg_key>distance</arg_key>\n<arg_value>50</arg_value>\n</tool_call>",
        (("vector_buffer", {"uri": "roads.gpkg", "distance": 50}),),
    ),
    Sample(
        "glm-schema-types",
        "<tool_call>vector_buffer\n<arg_key>uri</arg_key>\n<arg_value>parcels.gpkg</arg_value>\n"
        "<arg_key>layer</arg_key>\n<arg_value>3</arg_value>\n<arg_key>distance</arg_key>\n<arg_value>2.5</arg_value>\n"
        "<arg_key>segments</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
        (("vector_buffer", {"uri": "parcels.gpkg", "layer": "3", "distance": 2.5, "segments": 3}),),
    ),
    Sample(
        "glm-json-values",
        "<tool_call>raster_reproject\n<arg_key>uri</arg_key>\n<arg_value>dem.tif</arg_value>\n"
        "<arg_key>dst_crs</arg_key>\n<arg_value>EPSG:3035</arg_value>\n<arg_key>options</arg_key>\n"
        '<arg_value>{"tiled": true}</arg_value>\n</tool_call>\n'
        "<tool_call>raster_stats\n<arg_key>uri</arg_key>\n<arg_value>dem.tif</arg_value>\n<arg_key>bands</arg_key>\n"
        "<arg_value>[1, 2, 3]</arg_value>\n<arg_key>approx</arg_key>\n<arg_value>true</arg_value>\n</tool_call>",
        (
            ("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:3035", "options": {"tiled": True}}),
            ("raster_stats", {"uri": "dem.tif", "bands": [1, 2, 3], "approx": True}),
        ),
    ),
    Sample(
        "glm-end-tag-inside-value",
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>howto.txt</arg_value>\n<arg_key>content</arg_key>\n"
        "<arg_value>End every call with </tool_call> and every value with </arg_value>.</arg_value>\n</tool_call>",
        (
            (
                "write_file",
                {"path": "howto.txt", "content": "End every call with </tool_call> and every value with </arg_value>."},
            ),
        ),
    ),
    Sample(
        "glm-multiline-value",
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n<arg_key>content</arg_key>\n"
        "<arg_value>def f():\n    return 1\n</arg_value>\n</tool_call>",
        (("write_file", {"path": "a.py", "content": "def f():\n    return 1\n"}),),
    ),
    Sample(
        "glm-no-arguments",
        "Let me see what is in the workspace.\n<tool_call>workspace_summary\n</tool_call>",
        (("workspace_summary", {}),),
    ),
    Sample(
        "glm-missing-value-close",
        "<tool_call>search_catalog\n<arg_key>query</arg_key>\n<arg_value>land cover\n<arg_key>limit</arg_key>\n"
        "<arg_value>20</arg_value>\n</tool_call>",
        (("search_catalog", {"query": "land cover", "limit": 20}),),
    ),
    Sample(
        "glm-truncated-value",
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n<arg_key>content</arg_key>\n"
        "<arg_value>def f():\n",
        (),
        "truncated",
    ),
    Sample(
        "glm-truncated-after-key",
        "<tool_call>raster_info\n<arg_key>uri</arg_key>\n",
        (),
        "truncated",
    ),
    Sample(
        "glm-think-only",
        "<think>I might call <tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>dem.tif</arg_value>\n"
        "</tool_call> but the answer is in the previous result.</think>\nThe DEM covers 12 km².",
        (),
        "reasoning",
    ),
    Sample(
        "glm-bbox-array",
        "<tool_call>search_catalog\n<arg_key>query</arg_key>\n<arg_value>buildings</arg_value>\n<arg_key>bbox</arg_key>\n"
        "<arg_value>[5.9, 45.8, 10.5, 47.8]</arg_value>\n</tool_call><|observation|>",
        (("search_catalog", {"query": "buildings", "bbox": [5.9, 45.8, 10.5, 47.8]}),),
    ),
    Sample(
        "glm-value-outside-pair",
        "<tool_call>raster_info\nuri: dem.tif\n</tool_call>",
        (),
        "malformed",
    ),
]


def _glm(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in pairs)
    return f"<tool_call>{name}\n{body}{END}"


SAMPLES += [
    # issue 30: call markers and keys written inside an <arg_value>
    Sample(
        "glm-tool-call-tags-in-value",
        _glm("write_file", ("path", "glm.md"), ("content", "each call sits in <tool_call> … </tool_call>")),
        (("write_file", {"path": "glm.md", "content": "each call sits in <tool_call> … </tool_call>"}),),
    ),
    Sample(
        "glm-arg-key-in-value",
        _glm("write_file", ("path", "keys.md"), ("content", "name keys as <arg_key>uri</arg_key> first")),
        (("write_file", {"path": "keys.md", "content": "name keys as <arg_key>uri</arg_key> first"}),),
    ),
    Sample(
        "glm-whole-call-in-value",
        _glm(
            "write_file",
            ("path", "example.txt"),
            ("content", "<tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>a.tif</arg_value>\n</tool_call>"),
        ),
        (
            (
                "write_file",
                {
                    "path": "example.txt",
                    "content": "<tool_call>raster_info\n<arg_key>uri</arg_key>\n"
                    "<arg_value>a.tif</arg_value>\n</tool_call>",
                },
            ),
        ),
    ),
    Sample(
        "glm-end-tag-then-text-in-value",
        _glm("write_file", ("path", "t.txt"), ("content", "x </tool_call> y <tool_call> z")),
        (("write_file", {"path": "t.txt", "content": "x </tool_call> y <tool_call> z"}),),
    ),
    Sample(
        "glm-markers-in-value-then-second-call",
        _glm("write_file", ("path", "a.md"), ("content", "</arg_value> is the closer"))
        + "\n"
        + _glm("raster_info", ("uri", "a.tif")),
        (
            ("write_file", {"path": "a.md", "content": "</arg_value> is the closer"}),
            ("raster_info", {"uri": "a.tif"}),
        ),
    ),
    # issue 30: null where the schema allows null
    Sample(
        "glm-null-for-nullable-string",
        _glm("search_catalog", ("query", "null island"), ("collection", "null")),
        (("search_catalog", {"query": "null island", "collection": None}),),
    ),
    # issue 30: cut off in the second call
    Sample(
        "glm-cut-in-second",
        _glm("raster_info", ("uri", "a.tif")) + "\n<tool_call>raster_stats\n<arg_key>uri</arg_key>\n<arg_value>a.t",
        (("raster_info", {"uri": "a.tif"}),),
        "truncated",
    ),
]
