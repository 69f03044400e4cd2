"""pyarrow Tables (and record batches): written as they are."""

from __future__ import annotations

from typing import Any

from ubunye_dagster.io.handlers import arrow_files
from ubunye_dagster.io.handlers.arrow_backed import ArrowBackedHandler


class PyArrowHandler(ArrowBackedHandler):
    """pyarrow Tables; a RecordBatch is written as a one-batch table."""

    kind = backend = "pyarrow"
    type_names = ("Table", "RecordBatch")

    def to_arrow(self, obj: Any) -> Any:
        import pyarrow as pa

        return pa.Table.from_batches([obj]) if isinstance(obj, pa.RecordBatch) else obj

    def from_arrow(self, table: Any, as_type: type | None) -> Any:
        return arrow_files.without_index_columns(table)
