"""The benches' stacks run the code of the checkout they are asked to (`bench/ab.py --tree`).

`python -m` puts the working directory ahead of PYTHONPATH: a role that inherits this checkout's folder runs this
checkout's code whatever PYTHONPATH names, which made every A/B an A/A until the roles got the tree as their folder.
"""

import shutil
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from _stack import geogate_stack  # noqa: E402

MARK = "the other tree"


def _other_tree(at: Path) -> Path:
    """A copy of the roles' code whose gateway and worker both say they are the copy."""
    for package in ("geogate", "gateway", "schemas", "workers"):
        shutil.copytree(ROOT / package, at / package, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    ping = at / "workers" / "tools" / "core.py"
    ping.write_text(ping.read_text().replace("PingResult(worker=ctx.worker,", f"PingResult(worker={MARK!r},"))
    health = at / "gateway" / "health.py"
    marked = f'JSONResponse({{"tree": {MARK!r}, "ok": ok,'
    health.write_text(health.read_text().replace('JSONResponse({"ok": ok,', marked))
    return at


def test_a_stack_of_another_tree_runs_that_trees_gateway_and_workers(tmp_path: Path) -> None:
    async def ping(url: str) -> dict[str, object]:
        async with Client(url) as client:
            result = await client.call_tool("ping", {})
        assert not result.is_error
        return result.structured_content or {}

    tree = _other_tree(tmp_path / "other")
    assert (
        MARK in (tree / "workers" / "tools" / "core.py").read_text()
        and MARK in (tree / "gateway" / "health.py").read_text()
    )
    with geogate_stack(workers=1, tree=tree) as urls:
        health = httpx.get(urls[0].removesuffix("/mcp") + "/health", timeout=10).json()
        answer = anyio.run(ping, urls[0])
    assert health.get("tree") == MARK
    assert answer["worker"] == MARK
