"""`raster_calc`'s expression grammar: what the allow-list takes, what it refuses and the column it names, and the
field error the arguments model gives (the gateway refuses a bad expression before anything is queued)."""

import pytest
from pydantic import ValidationError

from schemas.tools.expression import MAX_BANDS, ExpressionError, parse
from schemas.tools.raster_ops import RasterCalcArgs


def test_band_reads_become_variables_once_each_and_the_text_keeps_the_arithmetic() -> None:
    parsed = parse("(s[4] - s[3]) / (s[4] + s[3]) * where(m > 0, 1, 0)", {"s", "m"})

    assert [(b.name, b.band, b.variable) for b in parsed.bands] == [("s", 4, "v0"), ("s", 3, "v1"), ("m", 1, "v2")]
    assert parsed.text == "(v0 - v1) / (v0 + v1) * where(v2 > 0, 1, 0)"


@pytest.mark.parametrize(
    ("source", "column", "words"),
    [
        ("a + __import__('os')", 5, "not an allowed function"),
        ("a.real", 1, "attributes"),
        ("a +", 4, "ends too early"),
        ("a $ 2", 3, "syntax error"),
        ("  a + b.c", 7, "attributes"),
        ("a + x", 5, "'x' is not an input"),
        ("sum(a)", 1, "not an allowed function"),
        ("a < 1 < 2", 1, "chained comparisons"),
        ("a > 1 and a < 2", 1, "use & and |"),
        ("a if a > 0 else 0", 1, "where("),
        ("a + 'text'", 5, "str constants"),
        ("a[1.5]", 3, "whole number"),
        ("a[0]", 1, "numbered from 1"),
        ("sqrt(a, a)", 1, "takes 1 argument"),
        ("where(a > 0, a)", 1, "takes 3 argument"),
        ("sqrt(x=a)", 8, "keyword"),
        ("(lambda: a)()", 1, "not an allowed function"),
        ("[a for a in b]", 1, "ListComp"),
        ("a @ a", 1, "MatMult"),
        ("not a", 1, "'not' is not allowed"),
        ("a(1)", 1, "not an allowed function"),
        ("sqrt", 1, "is a function"),
    ],
)
def test_a_refused_expression_names_the_column_of_the_offending_part(source: str, column: int, words: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse(source, {"a", "b"})

    assert caught.value.column == column
    assert str(caught.value).startswith(f"column {column}: ")
    assert words in str(caught.value)


def test_an_expression_that_reads_no_band_is_refused() -> None:
    with pytest.raises(ExpressionError):
        parse("1 + 2", {"a"})


def test_too_many_bands_is_refused_at_the_first_band_past_the_limit() -> None:
    source = " + ".join(f"a[{k}]" for k in range(1, MAX_BANDS + 2))

    with pytest.raises(ExpressionError) as caught:
        parse(source, {"a"})

    assert caught.value.column == source.index(f"a[{MAX_BANDS + 1}]") + 1


def test_the_arguments_model_reports_a_bad_expression_on_the_expression_field() -> None:
    with pytest.raises(ValidationError) as caught:
        RasterCalcArgs.model_validate({"inputs": {"a": "x.tif"}, "expression": "a[1] + b[1]", "output": "o.tif"})

    (error,) = caught.value.errors()
    assert error["loc"] == ("expression",)
    assert "column 8" in error["msg"] and "'b' is not an input" in error["msg"]


def test_input_names_must_be_identifiers() -> None:
    with pytest.raises(ValidationError) as caught:
        RasterCalcArgs.model_validate({"inputs": {"1x": "x.tif"}, "expression": "a", "output": "o.tif"})

    assert caught.value.errors()[0]["loc"][0] == "inputs"


@pytest.mark.parametrize(("dtype", "nodata"), [("uint8", -1.0), ("int16", 0.5), ("uint16", float("nan"))])
def test_an_integer_output_needs_a_nodata_its_type_holds(dtype: str, nodata: float) -> None:
    with pytest.raises(ValidationError) as caught:
        RasterCalcArgs.model_validate(
            {"inputs": {"a": "x.tif"}, "expression": "a", "output": "o.tif", "dtype": dtype, "nodata": nodata}
        )

    (error,) = caught.value.errors()
    assert error["loc"] == ("nodata",) and dtype in error["msg"]


@pytest.mark.parametrize(
    ("source", "column", "words"),
    [
        ("a ** 1e308 ** 1e308", 6, "has no finite value"),
        ("True / False + a", 1, "has no finite value"),
        ("a + 5 % 0", 5, "has no finite value"),
        ("a + 1" + "0" * 400, 5, "has no finite value"),
        ("a + 9 ** 9 ** 9", 5, "has no finite value"),  # computed as an integer, this would run for minutes
        ("a * 1e308 * 10 - 1e308 * 10", 18, "has no finite value"),
        ("a + (-8) ** 0.5", 5, "is not a real number"),
    ],
)
def test_arithmetic_on_numbers_alone_without_a_finite_value_is_refused_at_its_column(
    source: str, column: int, words: str
) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse(source, {"a"})

    assert caught.value.column == column and words in str(caught.value)


def test_arithmetic_on_numbers_alone_is_computed_and_long_integers_become_floats() -> None:
    assert parse("a * 2 ** 3 - -(1 / 4)", {"a"}).text == "v0 * 8.0 - -0.25"
    assert parse("where(a > 0, " + "9" * 300 + ", 0)", {"a"}).text == "where(v0 > 0, 1e+300, 0)"
    assert parse("a + 9223372036854775807", {"a"}).text == "v0 + 9223372036854775807"  # still a C long


def test_the_arguments_model_refuses_an_overflowing_expression_on_the_expression_field() -> None:
    with pytest.raises(ValidationError) as caught:
        RasterCalcArgs.model_validate({"inputs": {"a": "x.tif"}, "expression": "True / False + a", "output": "o.tif"})

    assert [e["loc"] for e in caught.value.errors()] == [("expression",)]
