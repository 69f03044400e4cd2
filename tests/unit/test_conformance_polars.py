"""polars frames, eager and lazy, give the reference's digest on every golden vector."""

from __future__ import annotations

from typing import Any

import pytest

from ubunye_rows.testing.backend_conformance import RowsV1Conformance

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pl = pytest.importorskip("polars")


class TestPolarsFrames(RowsV1Conformance):
    engine = "polars"

    def to_frame(self, table: Any) -> Any:
        return pl.from_arrow(table)


class TestPolarsLazyFrames(RowsV1Conformance):
    engine = "polars"

    def to_frame(self, table: Any) -> Any:
        return pl.from_arrow(table).lazy()
