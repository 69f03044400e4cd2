"""Arrow tables and record batches give the reference's digest on every golden vector."""

from __future__ import annotations

from typing import Any

import pytest

from ubunye_rows.testing.backend_conformance import RowsV1Conformance

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free


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
