"""The issue 32 part B tools as a surface: a job each, honest hints, descriptions, workspace scoping of `uri`."""

from pathlib import Path

import pytest

from schemas.tools import TOOLS, ToolSpec, analysis, previews
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools import load_all

MINIMAL: dict[str, dict[str, object]] = {
    "zonal_stats": {"zones": "z.gpkg"},
    "raster_polygonize": {"output": "o.gpkg"},
    "vector_rasterize": {"output": "o.tif", "burn_value": 1, "resolution": [1, 1]},
    "raster_contours": {"output": "o.gpkg", "interval": 10},
    "cog_validate": {},
    "raster_preview": {},
    "vector_preview": {},
}
SPECS = [spec for module in (analysis, previews) for spec in vars(module).values() if isinstance(spec, ToolSpec)]
NAMES = [spec.name for spec in SPECS]


def test_every_tool_is_published_with_a_job() -> None:
    assert sorted(MINIMAL) == sorted(NAMES)
    jobs = load_all()
    for name in NAMES:
        assert TOOLS[name] is next(s for s in SPECS if s.name == name) and name in jobs


@pytest.mark.parametrize("name", NAMES)
def test_hints_and_descriptions_are_honest(name: str) -> None:
    spec = TOOLS[name]
    fields = spec.args.model_fields
    writes = "output" in fields and fields["output"].is_required()
    assert spec.hints.destructive is writes and ("overwrite" in fields) is ("output" in fields)
    assert spec.hints.read_only is ("output" not in fields)
    assert "Use it" in spec.description and spec.args.model_json_schema()["required"][0] == "uri"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("uri", ["../escape.tif", "/etc/hostname"])
def test_a_source_outside_the_workspace_is_refused_naming_uri(tmp_path: Path, name: str, uri: str) -> None:
    args = TOOLS[name].args.model_validate({"uri": uri, **MINIMAL[name]})

    with pytest.raises(JobFailed) as failed:
        load_all()[name](args, JobContext(call_id="c", roots=[tmp_path]))

    assert (failed.value.code, failed.value.field) == ("path.outside_workspace", "uri")
