"""Completions: CRS codes from pyproj's database, resampling methods from the reference list."""

from gateway.completions import MAX_VALUES, complete_crs, complete_method, completion


def test_a_crs_code_prefix_completes_to_the_utm_codes() -> None:
    values = complete_crs("EPSG:32")
    assert "EPSG:32633" in values and "EPSG:32601" in values
    assert all(v.startswith("EPSG:32") for v in values)
    assert complete_crs("3263") == [v for v in values if v.startswith("EPSG:3263")]


def test_words_of_a_crs_name_complete_to_its_code() -> None:
    assert "EPSG:32633" in complete_crs("WGS 84 / UTM zone 33N")
    assert "EPSG:32733" not in complete_crs("WGS 84 / UTM zone 33N")


def test_resampling_methods_complete_by_prefix() -> None:
    assert complete_method("cu") == ["cubic", "cubic_spline"]
    assert complete_method("zz") == []


def test_a_completion_carries_at_most_100_values_and_says_there_are_more() -> None:
    many = complete_crs("")
    done = completion(many)
    assert len(done.values) == MAX_VALUES and done.total == len(many) and done.has_more
