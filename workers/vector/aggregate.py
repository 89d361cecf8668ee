"""Aggregates of attribute fields over groups of features, as `vector_dissolve` and `vector_join` write them: one
column `<field>_<aggregate>` per field and aggregate."""

import json
from typing import Any

import pandas as pd

from workers.jobkit.errors import JobFailed

NUMERIC_ONLY = frozenset({"sum", "mean"})


def _as_json(values: pd.Series) -> str:
    """The group's values as a JSON array (empty values as null, dates and others as text)."""
    return json.dumps([None if _missing(v) else v for v in values.tolist()], default=str)


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def named(aggregates: dict[str, list[str]]) -> dict[str, tuple[str, Any]]:
    """pandas named aggregations for `aggregates`: `{"pop_sum": ("pop", "sum"), …}`."""
    return {
        f"{field}_{how}": (field, _as_json if how == "list" else how)
        for field, hows in aggregates.items()
        for how in dict.fromkeys(hows)
    }


def check_numeric(frame: pd.DataFrame, aggregates: dict[str, list[str]], arg: str) -> None:
    """Refuse a sum or mean of a field that does not hold numbers.

    Raises:
        JobFailed: `field.not_numeric`, on `arg`, naming the field and its type.
    """
    for field, hows in aggregates.items():
        wrong = NUMERIC_ONLY.intersection(hows)
        if wrong and not pd.api.types.is_numeric_dtype(frame[field]):
            raise JobFailed(
                "field.not_numeric",
                f"{arg}: {field!r} holds {frame[field].dtype} values, not numbers; {sorted(wrong)} need numbers",
                field=arg,
            )


def grouped(frame: pd.DataFrame, keys: list[str] | pd.Series, aggregates: dict[str, list[str]]) -> pd.DataFrame:
    """One row per group of `keys` (sorted, empty keys kept as a group of their own) with the aggregate columns."""
    groups = frame.groupby(keys, dropna=False, sort=True)
    if not aggregates:
        return groups.size().to_frame().iloc[:, :0]
    return groups.agg(**named(aggregates))
