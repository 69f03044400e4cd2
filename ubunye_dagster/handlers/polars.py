"""polars DataFrames (a LazyFrame is collected once): written through their Arrow table."""

from __future__ import annotations

from typing import Any

from ubunye_dagster.handlers import arrow_files
from ubunye_dagster.handlers.base import FrameHandler, LoadedFrame, StagedWrite, type_is
from ubunye_dagster.handlers.pandas import ArrowStagedWrite, load_arrow


class PolarsHandler(FrameHandler):
    """polars DataFrames and LazyFrames."""

    kind = "polars"
    backend = "polars"

    def accepts_type(self, cls: type) -> bool:
        return type_is(cls, "polars", ("DataFrame", "LazyFrame"))

    def stage(self, obj: Any, path: Any, context: Any) -> StagedWrite:
        frame = obj.collect() if type_is(type(obj), "polars", ("LazyFrame",)) else obj
        return ArrowStagedWrite(frame.to_arrow(), path, writer=self.kind)

    def load(self, path: Any, context: Any, as_type: type | None = None) -> LoadedFrame:
        lazy = as_type is not None and type_is(as_type, "polars", ("LazyFrame",))

        def to_polars(table: Any) -> Any:
            import polars as pl

            frame = pl.from_arrow(arrow_files.without_index_columns(table))
            return frame.lazy() if lazy else frame

        return load_arrow(path, to_polars)
