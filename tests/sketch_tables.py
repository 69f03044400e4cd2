"""Random tables for the sketch and diff tests: nulls, NaN, duplicates, awkward text."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

SCHEMA = pa.schema(
    [("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string()), ("ok", pa.bool_())]
)

amounts = st.one_of(
    st.none(), st.just(float("nan")), st.floats(allow_nan=False, allow_infinity=True, width=64)
)
names = st.one_of(st.none(), st.text(max_size=6))
rows = st.tuples(
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    amounts,
    names,
    st.one_of(st.none(), st.booleans()),
)


def table_of(values: list[tuple]) -> pa.Table:
    """An Arrow table of ``values`` (tuples in SCHEMA's column order)."""
    columns = list(zip(*values, strict=True)) if values else [[] for _ in SCHEMA]
    return pa.table(
        [pa.array(list(c), f.type) for c, f in zip(columns, SCHEMA, strict=True)], schema=SCHEMA
    )


def as_engine(table: pa.Table, engine: str) -> Any:
    """``table`` as a pandas (nullable dtypes, so NaN stays apart from null), Arrow or polars
    frame."""
    if engine == "arrow":
        return table
    if engine == "pandas":
        import pandas as pd

        mapping = {
            pa.int64(): pd.Int64Dtype(),
            pa.float64(): pd.Float64Dtype(),
            pa.string(): pd.StringDtype(),
            pa.bool_(): pd.BooleanDtype(),
        }
        return table.to_pandas(types_mapper=mapping.get)
    if engine == "polars":
        import polars as pl

        return pl.from_arrow(table)
    raise ValueError(engine)


def comparable(value: Any) -> Any:
    """A value as the diff writes it (rows-v1's text for NaN and infinities)."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == float("-inf"):
        return "-Infinity"
    return value


def row_key(row: dict | tuple) -> tuple:
    """A row as a hashable tuple in SCHEMA's column order, values as the diff writes them."""
    values = [row[f.name] for f in SCHEMA] if isinstance(row, dict) else list(row)
    return tuple(comparable(v) for v in values)
