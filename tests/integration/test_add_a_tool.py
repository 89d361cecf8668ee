"""Adding a tool takes two files: a copy of the product packages gains only the definition and the job of
docs/add-a-tool.md, and that copy's gateway publishes the tool and a worker runs it, end to end over MCP."""

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from schemas.ids import call_aggregate
from tests.integration.conftest import Stack, start_gateway, start_worker, stop
from tests.support import free_port, redis_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "geogate", "gateway", "workers")
GUIDE = ROOT / "docs" / "add-a-tool.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def guide_files() -> dict[str, str]:
    """The files the guide says to write, by path, as its code blocks give them."""
    blocks = re.findall(r'```python title="([^"]+)"\n(.*?)```', GUIDE.read_text(), flags=re.S)
    return dict(blocks)


def files_under(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for package in PACKAGES
        for path in (root / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture
def product_copy(tmp_path: Path) -> Path:
    """The product packages copied into a folder of their own, with nothing added yet."""
    copy = tmp_path / "product"
    for package in PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture
def copy_stack(product_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """The copy with the guide's two files written into it, run as a gateway and a worker on a private Redis."""
    before = files_under(product_copy)
    new = guide_files()
    assert sorted(new) == ["schemas/tools/bbox.py", "workers/tools/bbox.py"]
    for relative, text in new.items():
        assert not (product_copy / relative).exists()
        (product_copy / relative).write_text(text)
    after = files_under(product_copy)
    assert {path for path in after if after[path] != before.get(path)} == set(new)  # nothing else edited

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with redis_server(tmp_path) as redis_url:
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(product_copy),
            "REDIS_URL": redis_url,
            "GEOGATE_WORKSPACES": str(workspace),
            "GEOGATE_PORT": str(port),
            "GEOGATE_DATA_DIR": str(tmp_path / "data"),
        }
        monkeypatch.chdir(product_copy)  # `python -m` puts the working folder first: the copy's packages run
        worker = start_worker(env, concurrency=1)
        try:
            gateway = start_gateway(env, port)
            try:
                yield Stack(redis_url, f"http://127.0.0.1:{port}/mcp", workspace, env, worker)
            finally:
                stop(gateway)
        finally:
            stop(worker)


async def test_a_tool_added_as_two_files_is_published_and_runs_end_to_end(copy_stack: Stack) -> None:
    async with Client(copy_stack.url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("bbox_centre", {"bounds": [10, 20, 30, 60]})

    listed = tools["bbox_centre"]
    assert listed.input_schema["required"] == ["bounds"] and listed.annotations.read_only_hint is True
    assert not result.is_error
    assert result.structured_content == {"x": 20.0, "y": 40.0}
    call_id = result.meta["io.geogate/call"]["call_id"]
    events = [event.type for event in copy_stack.store().read_aggregate(call_aggregate(call_id))]
    assert events == ["tool.requested", "tool.started", "tool.succeeded"]


def test_the_tool_is_not_in_the_product_itself() -> None:
    """The guide's files are written only into the copy."""
    assert not any((ROOT / relative).exists() for relative in guide_files())
