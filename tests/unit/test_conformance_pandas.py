"""pandas frames (Arrow-backed dtypes) give the reference's digest on every golden vector."""

from __future__ import annotations

from typing import Any

import pytest

from ubunye_rows.testing.backend_conformance import RowsV1Conformance

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pd = pytest.importorskip("pandas")


class TestPandasFrames(RowsV1Conformance):
    engine = "pandas"

    def to_frame(self, table: Any) -> Any:
        return table.to_pandas(types_mapper=pd.ArrowDtype)
