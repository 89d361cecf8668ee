"""GLM key/value pairs: exact string values, JSON values typed by the schema, tolerated missing closers."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds


def glm(name: str, *pairs: tuple[str, str], sep: str = "\n") -> str:
    body = "".join(f"<arg_key>{k}</arg_key>{sep}<arg_value>{v}</arg_value>{sep}" for k, v in pairs)
    return f"<tool_call>{name}{sep}{body}</tool_call>"


def test_newline_and_compact_layouts_give_the_same_call() -> None:
    expected = [("raster_info", {"uri": "a.tif", "band": 3})]
    assert calls(glm("raster_info", ("uri", "a.tif"), ("band", "3"))) == expected
    assert calls(glm("raster_info", ("uri", "a.tif"), ("band", "3"), sep="")) == expected


def test_string_values_are_exact_and_others_follow_the_schema() -> None:
    text = glm("raster_stats", ("uri", " spaced name.tif\n"), ("bands", "[1, 2]"), ("approx", "True"))
    assert calls(text) == [("raster_stats", {"uri": " spaced name.tif\n", "bands": [1, 2], "approx": True})]


def test_end_tags_inside_a_value_are_text() -> None:
    content = "a </arg_value> b </tool_call> c"
    assert calls(glm("write_file", ("path", "p"), ("content", content))) == [
        ("write_file", {"path": "p", "content": content})
    ]


def test_a_value_left_open_ends_at_the_next_key() -> None:
    text = (
        "<tool_call>search_catalog<arg_key>query</arg_key><arg_value>rivers"
        "<arg_key>limit</arg_key><arg_value>5</arg_value></tool_call>"
    )
    assert calls(text) == [("search_catalog", {"query": "rivers", "limit": 5})]


def test_a_call_without_arguments_and_json_arguments_after_the_name() -> None:
    assert calls("<tool_call>workspace_summary</tool_call>") == [("workspace_summary", {})]
    assert calls('<tool_call>raster_info {"uri": "a.tif"}</tool_call>') == [("raster_info", {"uri": "a.tif"})]
    assert extract("<tool_call>workspace_summary</tool_call>").format == "glm"


def test_cut_off_and_malformed_calls() -> None:
    assert kinds("<tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>a.t") == ["truncated"]
    assert kinds("<tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>a.tif</arg_value>\n</tool_ca") == [
        "truncated"
    ]
    assert kinds("<tool_call>raster_info\n<arg_key>uri</arg_key>\nuri=a.tif\n</tool_call>") == ["invalid_markup"]


def test_call_markers_and_keys_written_inside_a_value_stay_in_it() -> None:
    for content in (
        "wrap it in <tool_call> and </tool_call>",
        "keys go in <arg_key>name</arg_key> tags",
        "x </tool_call> y <tool_call> z",
        "<tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>",
    ):
        assert calls(glm("write_file", ("path", "p"), ("content", content))) == [
            ("write_file", {"path": "p", "content": content})
        ]
