"""Where an observed source's rows are, and rows-v1 of them hashed there.

A source is a Parquet file or folder (a local path or an fsspec URL such as ``s3://``), hashed
with the kernel, a table in a DuckDB or PostgreSQL warehouse, hashed in the database, or a Spark
table, hashed on the cluster. Hashing never raises: a source that cannot be read is a step with
its ``hash_error`` and no data hash.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import Field

from ubunye_core.materialisations.stored import read_stored
from ubunye_core.records.model import StepRecord
from ubunye_dagster.receipts.masking import mask_error
from ubunye_dagster.strict_fields import StrictSettings
from ubunye_dagster.warehouse.relations import StoredSlice, hash_in_warehouse
from ubunye_dagster.warehouse.settings import Warehouse
from ubunye_rows import fingerprint

#: How an observation's step says where its data hash came from: the rows as they are stored.
OBSERVED_BASIS = "recomputed"


class MissingSourceError(ValueError):
    """An observed source is known, when the definitions load, not to exist."""


class _Source(StrictSettings):
    cron: str | None = Field(
        default=None,
        description="When the automation daemon observes the source (a cron schedule, UTC); "
        "none: only when asked (a schedule, a sensor, the UI's Observe).",
    )

    @property
    def resource_keys(self) -> set[str]:
        """The resources its observation needs besides ``ubunye``."""
        return set()


class ParquetSource(_Source):
    """A Parquet file, or a folder of part files, at a local path or an fsspec URL."""

    path: str = Field(description="The file or folder: a local path or a URL (s3://...).")
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for a URL (credentials, endpoint)."
    )

    @property
    def kind(self) -> str:
        return "parquet"

    @property
    def location(self) -> str:
        return self.path

    def refuse_missing(self, asset: str) -> None:
        """MissingSourceError naming ``asset`` when its local path does not exist (a URL's
        store is only asked when it is observed)."""
        if "://" in self.path and not self.path.startswith("file://"):
            return
        local = Path(self.path.removeprefix("file://"))
        if not local.exists():
            raise MissingSourceError(
                f"observed source {asset}: no Parquet file or folder at {local.resolve()}"
            )

    def hashed_step(self, name: str, resources: Any = None) -> StepRecord:
        """rows-v1 of the rows stored at ``path`` as the output step ``name``."""
        started = time.perf_counter()
        try:
            stored = read_stored(self.path, storage_options=self.storage_options)
            fp = fingerprint(stored.view)
        except Exception as error:  # whatever the store's client raises: credentials, endpoint
            return _unhashed(name, self, mask_error(error))
        return _hashed(name, self, fp, started)


class TableSource(_Source):
    """A table (or view) in a DuckDB or PostgreSQL warehouse."""

    table: str = Field(description="The relation as the database names it: schema.table.")
    warehouse: Warehouse = Field(description="The database holding it, and how to connect.")

    @property
    def kind(self) -> str:
        return self.warehouse.kind

    @property
    def location(self) -> str:
        return f"{self.warehouse.kind}:{self.table}"

    def refuse_missing(self, asset: str) -> None:
        """MissingSourceError naming ``asset`` when its DuckDB file does not exist (a table is
        only looked up when it is observed: opening the file at load would contend with its
        writers)."""
        if self.warehouse.kind != "duckdb":
            return
        database = self.warehouse.connection.get_secret_value()
        if database == ":memory:" or "://" in database or database.startswith("md:"):
            return
        if not Path(database).exists():
            raise MissingSourceError(
                f"observed source {asset}: no DuckDB database file at {Path(database).resolve()}"
                f" (table {self.table})"
            )

    def hashed_step(self, name: str, resources: Any = None) -> StepRecord:
        """rows-v1 of the table computed in its warehouse, as the output step ``name``."""
        started = time.perf_counter()
        stored = hash_in_warehouse(self.warehouse, StoredSlice(self.table))
        if stored.fingerprint.data_hash is None:
            return _unhashed(name, self, stored.fingerprint.error or "no data hash")
        return _hashed(name, self, stored.fingerprint, started)


class SparkTableSource(_Source):
    """A table (or view) of a Spark catalog, hashed on the cluster in one aggregation, as the
    IO manager hashes a Spark DataFrame."""

    spark_table: str = Field(description="The table as Spark names it: [catalog.]schema.table.")
    spark_resource: str | None = Field(
        default=None,
        description="The key of a dagster-pyspark PySparkResource whose session reads the table; "
        "none: the active Spark session (or a new local one).",
    )

    @property
    def kind(self) -> str:
        return "spark"

    @property
    def location(self) -> str:
        return f"spark:{self.spark_table}"

    @property
    def resource_keys(self) -> set[str]:
        """The PySparkResource's key, when the table is read through one."""
        return {self.spark_resource} if self.spark_resource else set()

    def refuse_missing(self, asset: str) -> None:
        """Nothing: a table is only looked up when it is observed (a session is not started for
        the definitions to load)."""

    def hashed_step(self, name: str, resources: Any = None) -> StepRecord:
        """rows-v1 of the table computed on the cluster, as the output step ``name``; the session
        is ``spark_resource``'s among ``resources``, else the active one."""
        started = time.perf_counter()
        try:
            rows = self._session(resources).table(self.spark_table)
            fp = fingerprint(rows)
        except Exception as error:  # whatever Spark raises: a missing table, a lost cluster
            return _unhashed(name, self, mask_error(error))
        return _hashed(name, self, fp, started)

    def _session(self, resources: Any) -> Any:
        if self.spark_resource:
            return getattr(resources, self.spark_resource).spark_session
        from pyspark.sql import SparkSession

        return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


#: Every kind of source: a Parquet path, a warehouse table or a Spark table.
Source = ParquetSource | TableSource | SparkTableSource


def as_source(value: Source | dict[str, Any]) -> Source:
    """A source from itself or its settings (``path``: Parquet, ``table``: a warehouse table,
    ``spark_table``: a Spark table)."""
    if isinstance(value, (ParquetSource, TableSource, SparkTableSource)):
        return value
    if not isinstance(value, dict):
        raise TypeError(
            f"a source is a ParquetSource, a TableSource, a SparkTableSource or their settings, "
            f"not {type(value).__name__}"
        )
    if "table" in value:
        return TableSource.model_validate(value)
    if "spark_table" in value:
        return SparkTableSource.model_validate(value)
    if "path" in value:
        return ParquetSource.model_validate(value)
    raise ValueError(
        f"a source's settings name a 'path' (Parquet), a 'table' (with its 'warehouse') or a "
        f"'spark_table'; got {sorted(value)}"
    )


def _unhashed(name: str, source: Source, error: str) -> StepRecord:
    return StepRecord(
        name=name,
        direction="output",
        format=source.kind,
        location=source.location,
        hash_error=error,
    )


def _hashed(name: str, source: Source, fp: Any, started: float) -> StepRecord:
    return StepRecord.from_fingerprint(
        fp,
        name=name,
        direction="output",
        format=source.kind,
        location=source.location,
        hash_seconds=round(time.perf_counter() - started, 6),
        hash_basis=OBSERVED_BASIS,
    )
