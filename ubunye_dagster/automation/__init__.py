"""Receipts that save work: sources observed by their rows, and assets run only when the
content they read changed (``on_content_change``)."""

from __future__ import annotations

from ubunye_dagster.automation.conditions import on_content_change
from ubunye_dagster.automation.observe import observed_source
from ubunye_dagster.automation.sources import (
    MissingSourceError,
    ParquetSource,
    SparkTableSource,
    TableSource,
)

__all__ = [
    "MissingSourceError",
    "ParquetSource",
    "SparkTableSource",
    "TableSource",
    "observed_source",
    "on_content_change",
]
