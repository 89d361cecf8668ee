"""The tool reference (docs/tools/*.md) and the toolsets list (docs/toolsets.md) are what `docs/tool_reference.py`
generates from the definitions: a changed tool regenerates them, and every tool has its section with an example."""

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from schemas.tools import TOOLS, TOOLSET
from schemas.tools.toolsets import GATEWAY_TOOLS, TOOLSETS

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "run `.venv/bin/python docs/tool_reference.py`"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    """`docs/tool_reference.py`, loaded when a test asks (the image's test run mounts `tests/` alone and only imports
    the test modules)."""
    spec = importlib.util.spec_from_file_location("tool_reference", ROOT / "docs" / "tool_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_is_one_committed_page_per_toolset_and_no_other() -> None:
    assert {path.name for path in (ROOT / "docs" / "tools").glob("*.md")} == {f"{name}.md" for name in TOOLSETS}


@pytest.mark.parametrize("name", sorted(TOOLSETS))
def test_each_committed_page_is_the_generated_one(name: str, generator: ModuleType) -> None:
    committed = (ROOT / "docs" / "tools" / f"{name}.md").read_text()

    assert committed == generator.pages()[f"{name}.md"], REGENERATE


def test_the_toolsets_page_lists_every_toolset_and_its_tools_as_generated(generator: ModuleType) -> None:
    page = (ROOT / "docs" / "toolsets.md").read_text()

    assert page == generator.with_list(page), REGENERATE
    listed = set(re.findall(r"\[`([A-Za-z_]+)`\]\(tools/[a-z]+\.md#", page))
    assert listed == set(TOOLS) | set(GATEWAY_TOOLS)


@pytest.mark.parametrize("name", sorted({**TOOLSET, **GATEWAY_TOOLS}))
def test_every_tool_has_a_section_with_arguments_errors_and_an_example_call(name: str) -> None:
    toolset = TOOLSET.get(name) or GATEWAY_TOOLS[name]
    page = (ROOT / "docs" / "tools" / f"{toolset}.md").read_text()
    section = page.split(f"## `{name}`\n", 1)[1].split("\n## ", 1)[0]

    for part in ("**Arguments**", "**Errors**", "**Example call**"):
        assert part in section, (name, part)


def test_every_file_tool_has_an_example_result_from_a_run_valid_for_its_tool(generator: ModuleType) -> None:
    ran = json.loads(generator.RESULTS.read_text())
    file_tools = {
        name
        for name, spec in TOOLS.items()
        if TOOLSET[name] not in generator.NOT_RUN and spec.example_result is None and not spec.internal
    }

    assert set(ran) == file_tools
    for name, result in ran.items():
        TOOLS[name].result.model_validate(result)


def test_every_toolset_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()

    assert all(f"tools/{name}.md" in nav for name in TOOLSETS) and "toolsets.md" in nav
