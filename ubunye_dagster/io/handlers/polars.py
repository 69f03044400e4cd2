"""polars DataFrames (a LazyFrame is collected once): written through their Arrow table."""

from __future__ import annotations

from typing import Any

from ubunye_dagster.io.handlers import arrow_files
from ubunye_dagster.io.handlers.arrow_backed import ArrowBackedHandler
from ubunye_dagster.io.handlers.base import type_is


def _is_lazy(cls: Any) -> bool:
    return cls is not None and type_is(cls, "polars", ("LazyFrame",))


class PolarsHandler(ArrowBackedHandler):
    """polars DataFrames and LazyFrames; an input annotated ``LazyFrame`` loads lazy."""

    kind = backend = "polars"
    type_names = ("DataFrame", "LazyFrame")

    def to_arrow(self, obj: Any) -> Any:
        return (obj.collect() if _is_lazy(type(obj)) else obj).to_arrow()

    def from_arrow(self, table: Any, as_type: type | None) -> Any:
        import polars as pl

        frame = pl.from_arrow(arrow_files.without_index_columns(table))
        return frame.lazy() if _is_lazy(as_type) else frame
