"""Reference documents: every resampling method and compression the tools accept is documented, filters work."""

import typing

import pytest
from mcp.server.mcpserver.exceptions import ResourceError

from gateway import reference
from gateway.resources_gdal import reference_text, summarise
from schemas.tools.raster import Compression, Resampling


def test_every_resampling_method_the_tools_accept_has_a_guide_section() -> None:
    keys = {s.key for s in reference.load("resampling").sections}
    assert keys == {m.value for m in Resampling}


def test_every_compression_the_tools_accept_has_a_section() -> None:
    keys = {s.key for s in reference.load("compression").sections}
    assert keys == set(typing.get_args(Compression))


def test_a_filter_selects_sections_by_key_or_tag_and_all_is_the_whole_document() -> None:
    categorical = reference_text("reference://resampling/guide", "categorical")
    assert "## nearest" in categorical and "## mode" in categorical and "## bilinear" not in categorical
    assert reference_text("reference://glossary/geospatial").count("\n## ") == len(reference.load("glossary").sections)
    index = reference_text("reference://resampling/available", "aggregation")
    assert "- **average**" in index and "nearest" not in index


def test_an_unknown_filter_is_an_error_listing_the_accepted_words() -> None:
    with pytest.raises(ResourceError, match=r"one of: .*utm"):
        reference_text("reference://crs/common", "martian")


def test_the_summary_counts_by_kind_driver_and_crs() -> None:
    entry = {"relative": "a.tif", "path": "/w/a.tif", "kind": "raster", "size": 10, "driver": "GTiff", "error": None}
    scan = {
        "roots": ["/w"],
        "truncated": False,
        "entries": [entry | {"crs": "EPSG:4326"}, entry | {"relative": "b.tif", "crs": None, "error": "bad"}],
    }
    summary = summarise(scan)
    assert summary["by_crs"] == {"EPSG:4326": 1, "none": 1} and summary["unreadable"] == ["b.tif"]
    assert (summary["total"], summary["total_bytes"], summary["by_kind"]) == (2, 20, {"raster": 2})


def test_the_calc_guide_lists_exactly_the_functions_the_grammar_allows() -> None:
    """The guide and the allow-list cannot drift apart: every function named in backticks is allowed, and every
    allowed function is named."""
    import re

    from schemas.tools.expression import FUNCTIONS

    text = reference_text("reference://raster/operations", "calc")
    listed = text.split("functions:", 1)[1].split("Nothing else", 1)[0]
    named = {n.split("(")[0] for n in re.findall(r"`([a-z0-9]+(?:\([^`]*\))?)`", listed)}
    assert named == set(FUNCTIONS)
