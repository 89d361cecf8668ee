"""The tools as documented are the tools as defined: the README's table, the protocol page's table, and the guide
pages name exactly the published tools (the definitions in `schemas/tools/`) and the gateway's own."""

import re
from pathlib import Path

import pytest

from gateway.preflight.surface import PreflightTools
from gateway.resources_gdal import reference_text
from schemas.tools import TOOLS, ToolSpec, analysis, previews, raster_ops

ROOT = Path(__file__).resolve().parents[2]
GATEWAY_TOOLS = {tool.name for tool in PreflightTools(None).tools()}  # type: ignore[arg-type]


def _specs(*modules: object) -> list[ToolSpec]:
    return [value for module in modules for value in vars(module).values() if isinstance(value, ToolSpec)]


def _table_tools(path: Path, heading: str) -> set[str]:
    """The tool names in the first column of the table under `heading`."""
    text = path.read_text().split(heading, 1)[1]
    rows = re.findall(r"^\| ([^|]+) \|", text.split("\n\n", 2)[1], flags=re.M)
    return {name for row in rows for name in re.findall(r"`([A-Za-z_.]+)`", row)}


def test_the_readme_table_names_every_published_tool_and_nothing_else() -> None:
    assert _table_tools(ROOT / "README.md", "## Tools") == set(TOOLS) | GATEWAY_TOOLS


def test_the_protocol_page_names_every_published_tool_and_nothing_else() -> None:
    assert _table_tools(ROOT / "docs" / "protocol.md", "## Tools") == set(TOOLS) | GATEWAY_TOOLS


@pytest.mark.parametrize(
    ("page", "specs"),
    [("gis-raster.md", _specs(raster_ops)), ("gis-more.md", _specs(analysis, previews))],
)
def test_each_guide_has_a_section_for_each_tool_of_its_concept(page: str, specs: list[ToolSpec]) -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "docs" / page).read_text(), flags=re.M)
    for spec in specs:
        assert any(re.search(rf"\b{spec.name}\b", heading) for heading in headings), spec.name


@pytest.mark.parametrize("spec", _specs(raster_ops), ids=lambda spec: spec.name)
def test_the_raster_operations_reference_has_a_section_for_each_raster_operation(spec: ToolSpec) -> None:
    section = reference_text("reference://raster/operations", spec.name)
    assert section.count("\n## ") == 1 and f"`{spec.name}`" in section
