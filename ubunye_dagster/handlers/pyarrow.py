"""pyarrow Tables (and record batches): written as they are."""

from __future__ import annotations

from typing import Any

from ubunye_dagster.handlers import arrow_files
from ubunye_dagster.handlers.base import FrameHandler, LoadedFrame, StagedWrite, type_is
from ubunye_dagster.handlers.pandas import ArrowStagedWrite, load_arrow


class PyArrowHandler(FrameHandler):
    """pyarrow Tables; a RecordBatch is written as a one-batch table."""

    kind = "pyarrow"
    backend = "pyarrow"

    def accepts_type(self, cls: type) -> bool:
        return type_is(cls, "pyarrow", ("Table", "RecordBatch"))

    def stage(self, obj: Any, path: Any, context: Any) -> StagedWrite:
        import pyarrow as pa

        table = pa.Table.from_batches([obj]) if isinstance(obj, pa.RecordBatch) else obj
        return ArrowStagedWrite(table, path, writer=self.kind)

    def load(self, path: Any, context: Any, as_type: type | None = None) -> LoadedFrame:
        return load_arrow(path, arrow_files.without_index_columns)
