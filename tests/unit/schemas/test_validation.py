"""Gateway validation: known aliases accepted and reported, every bad field named, nothing else let through."""

import pytest

from schemas.tools import TOOLS
from schemas.validation import ArgumentsInvalid, validate


def test_a_known_alias_is_renamed_and_reported() -> None:
    valid = validate(TOOLS["raster_info"], {"path": "dem.tif"})
    assert valid.args["uri"] == "dem.tif" and valid.aliases_used == {"path": "uri"}


def test_the_canonical_name_wins_over_an_alias_given_with_it() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        validate(TOOLS["raster_info"], {"uri": "a.tif", "path": "b.tif"})
    assert [e.field for e in info.value.errors] == ["path"]


def test_every_invalid_field_is_listed_with_its_reason() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        validate(TOOLS["ping"], {"queue": "nope", "delay_ms": -1, "colour": "red"})
    errors = {e.field: e.reason for e in info.value.errors}
    assert set(errors) == {"queue", "delay_ms", "colour"} and errors["colour"] == "unknown argument"


def test_defaults_are_filled_in_before_publishing() -> None:
    assert validate(TOOLS["ping"], {}).args == {"queue": "gdal", "delay_ms": 0}


def test_an_unknown_argument_close_to_a_known_one_is_suggested() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        validate(TOOLS["raster_convert"], {"uri": "a.tif", "output": "b.tif", "compress": "deflate"})
    errors = {e.field: e.reason for e in info.value.errors}
    assert errors["compress"] == "unknown argument; did you mean 'compression'?"
    assert "did you mean 'compression'" in str(info.value)


def test_an_unknown_argument_like_no_known_one_suggests_nothing() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        validate(TOOLS["ping"], {"colour": "red"})
    assert {e.field: e.reason for e in info.value.errors} == {"colour": "unknown argument"}
