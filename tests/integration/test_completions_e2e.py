"""`completion/complete` over HTTP: workspace files from the catalog job, CRS codes, resampling methods."""

import httpx
import pytest

from tests.integration.conftest import Stack
from tests.mcp_http import frame, headers, parse

pytestmark = pytest.mark.integration


def complete(stack: Stack, ref: dict[str, str], name: str, value: str) -> list[str]:
    body = frame("completion/complete", {"ref": ref, "argument": {"name": name, "value": value}})
    reply = parse(httpx.post(stack.url, json=body, headers=headers("completion/complete"), timeout=60))
    return reply.result["completion"]["values"]


def test_a_metadata_template_completes_workspace_files_by_what_was_typed(stack: Stack) -> None:
    ref = {"type": "ref/resource", "uri": "metadata://{+file}/raster"}
    assert complete(stack, ref, "file", "de") == ["dem.tif"]
    assert "points.gpkg" in complete(stack, ref, "file", "")
    assert complete(stack, ref, "file", "zz") == []


def test_prompt_arguments_complete_crs_codes_and_resampling_methods(stack: Stack) -> None:
    crs = complete(stack, {"type": "ref/prompt", "name": "justify_crs_selection"}, "dst_crs", "EPSG:3263")
    assert "EPSG:32633" in crs and all(v.startswith("EPSG:3263") for v in crs)
    methods = complete(stack, {"type": "ref/prompt", "name": "justify_resampling_method"}, "method", "bi")
    assert methods == ["bilinear"]
