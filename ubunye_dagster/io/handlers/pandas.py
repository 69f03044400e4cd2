"""pandas frames: converted to Arrow once; that table is hashed, checked and written."""

from __future__ import annotations

from typing import Any

from ubunye_dagster.io.handlers.arrow_backed import ArrowBackedHandler
from ubunye_rows.hashing.frames import arrow_from_pandas


class PandasHandler(ArrowBackedHandler):
    """pandas DataFrames, stored as Parquet with pandas' own metadata (index, dtypes)."""

    kind = backend = "pandas"
    type_names = ("DataFrame",)

    def to_arrow(self, obj: Any) -> Any:
        # A named index is stored as columns (even a RangeIndex), as rows-v1 hashes it.
        keep_index = True if any(name is not None for name in obj.index.names) else None
        return arrow_from_pandas(obj, preserve_index=keep_index)

    def from_arrow(self, table: Any, as_type: type | None) -> Any:
        return table.to_pandas()
