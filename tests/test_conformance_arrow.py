"""Arrow tables and record batches give the reference's digest on every golden vector."""

from __future__ import annotations

from typing import Any

from ubunye_rows.testing.backend_conformance import RowsV1Conformance


class TestArrowTables(RowsV1Conformance):
    engine = "arrow"

    def to_frame(self, table: Any) -> Any:
        return table


class TestArrowRecordBatches(RowsV1Conformance):
    engine = "arrow"

    def to_frame(self, table: Any) -> Any:
        import pyarrow as pa

        batches = table.combine_chunks().to_batches()
        if not batches:  # no rows
            return pa.RecordBatch.from_pylist([], schema=table.schema)
        assert len(batches) == 1
        return batches[0]
