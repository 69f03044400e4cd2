"""Relations hashed where they are stored: rows-v1 of a dbt relation, computed in the warehouse.

Each adapter type has its way in: DuckDB through the profile's database file, opened read only
once dbt has exited (dbt holds the file while it runs); Spark through this process's
SparkSession, which reads the tables of the metastore dbt writes to (a Thrift server's, a shared
Hive metastore, a Databricks catalog) and hashes them on the cluster; every other adapter through
the dbt adapter's own connections (the profile's credentials and settings), one per thread, while
dbt is still running: PostgreSQL hashes in the database, any other streams the relation's rows to
the kernel through its driver's Arrow fetch (``ubunye_dagster.warehouse.relations``).

A hash that cannot be computed is the step's ``hash_error`` (``"<Type>: <message>"``), never a
raised error: a receipt does not fail a build.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ubunye_core.records.model import StepRecord
from ubunye_dagster.receipts.masking import mask_error
from ubunye_dagster.warehouse.relations import hash_relation
from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.spark import fingerprint_spark

#: How the database file is opened: read only, as dagster-dbt's in-process adapter opens it (DuckDB
#: refuses a second configuration of one file in a process).
READ_ONLY = {"access_mode": "READ_ONLY"}


def database_path(adapter: Any, project_dir: Path) -> str:
    """The DuckDB database the dbt ``adapter``'s profile names (a relative path is the
    project's, as for dbt)."""
    path = str(adapter.config.credentials.path)
    if path == ":memory:" or "://" in path or path.startswith("md:"):
        return path
    return str((project_dir / path).resolve())


@dataclass(frozen=True)
class Unreachable:
    """No way into the warehouse, and why (``"<Type>: <message>"``): each step's hash error."""

    reason: str


@dataclass
class DuckDBFile:
    """The profile's DuckDB file, read only, once dbt has exited and let go of it."""

    adapter: Any
    project_dir: Path
    #: The open connection while the receipts are made (``open`` sets it).
    connection: Any = None

    #: dbt holds the file while it writes: its relations are hashed after dbt exits.
    reads_while_dbt_runs = False

    @contextlib.contextmanager
    def open(self) -> Iterator[DuckDBFile]:
        """This file connected for the block, closed after: no connection of this process is
        left holding the file for the next build."""
        import duckdb

        self.connection = duckdb.connect(
            database_path(self.adapter, self.project_dir), config=READ_ONLY
        )
        try:
            yield self
        finally:
            self.connection.close()
            self.connection = None

    def fingerprint(self, relation: str) -> Fingerprint:
        """rows-v1 of ``relation``, computed in DuckDB."""
        return hash_relation(self.connection, "duckdb", relation)


@dataclass
class AdapterConnections:
    """A server warehouse reached through the dbt adapter's own connections: the profile's
    credentials and connection settings, one named connection per hashing thread."""

    adapter: Any
    #: The adapter type: hashed in the database where it has a dialect (``postgres``), else
    #: streamed.
    kind: str

    #: A server takes readers while dbt writes: a node is hashed as soon as dbt reports it.
    reads_while_dbt_runs = True

    @contextlib.contextmanager
    def open(self) -> Iterator[AdapterConnections]:
        """Nothing to hold across relations: each hash acquires and releases its connection."""
        yield self

    def fingerprint(self, relation: str) -> Fingerprint:
        """rows-v1 of ``relation``, computed in the warehouse on this thread's connection."""
        with self.adapter.connection_named(f"ubunye_receipt_{threading.get_ident()}"):
            handle = self.adapter.connections.get_thread_connection().handle
            return hash_relation(handle, self.kind, relation)


@dataclass
class SparkSessionTables:
    """The dbt project's Spark tables read by name through this process's SparkSession (which
    must share dbt's metastore), each hashed on the cluster: one aggregation, the kernel on the
    executors, as the IO manager hashes a Spark DataFrame."""

    session: Any
    #: A Thrift server or a metastore service takes readers while dbt writes; dbt's ``session``
    #: method holds its Spark, and an embedded metastore, until it exits.
    reads_while_dbt_runs: bool = True

    @contextlib.contextmanager
    def open(self) -> Iterator[SparkSessionTables]:
        """Nothing to hold across relations: the session is this process's."""
        yield self

    def fingerprint(self, relation: str) -> Fingerprint:
        """rows-v1 of the table ``relation`` (``schema.table``), computed by Spark."""
        # dbt rewrote the table from another session: this one's cached file listing is stale.
        self.session.catalog.refreshTable(relation)
        return fingerprint_spark(self.session.table(relation))


Warehouse = DuckDBFile | AdapterConnections | SparkSessionTables


def _duckdb(invocation: Any) -> DuckDBFile:
    return DuckDBFile(invocation.adapter, Path(invocation.project_dir))


def _spark(invocation: Any) -> SparkSessionTables:
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    try:
        session = SparkSession.active()
    except PySparkRuntimeError:
        raise RuntimeError(
            "no SparkSession is running in this process to read the dbt project's Spark tables: "
            "start one that reaches dbt's metastore (a dagster-pyspark resource, "
            "SparkSession.builder.getOrCreate()) before the dbt build"
        ) from None
    method = str(getattr(invocation.adapter.config.credentials, "method", ""))
    return SparkSessionTables(session, reads_while_dbt_runs=method != "session")


#: The adapter types reached otherwise than through the adapter's own connections.
WAREHOUSES: dict[str, Callable[[Any], Warehouse]] = {"duckdb": _duckdb, "spark": _spark}


def warehouse_of(invocation: Any, adapter_type: str) -> Warehouse | Unreachable:
    """How the dbt ``invocation``'s relations are reached for hashing, or why they cannot be."""
    if not adapter_type:
        return Unreachable("ValueError: the dbt project's profile names no adapter type")
    if invocation.adapter is None:
        return Unreachable("ValueError: the dbt invocation has no adapter to reach the warehouse")
    if adapter_type not in WAREHOUSES:
        return AdapterConnections(invocation.adapter, adapter_type)
    try:
        return WAREHOUSES[adapter_type](invocation)
    except Exception as error:  # no way in (no Spark here, its library missing): each step says so
        return Unreachable(mask_error(error))


def hashed_step(
    warehouse: Warehouse | Unreachable,
    relation: str | None,
    *,
    name: str,
    direction: str,
    format: str,
) -> StepRecord:
    """The step ``name`` of ``relation`` hashed with rows-v1 in the warehouse; its hash error
    says why when it cannot be (unreachable, no relation, a type rows-v1 has no name for)."""
    started = time.perf_counter()
    unhashed = {"name": name, "direction": direction, "format": format, "location": relation or ""}
    if isinstance(warehouse, Unreachable):
        return StepRecord(**unhashed, hash_error=warehouse.reason)
    try:
        if relation is None:
            raise ValueError("the node is not a relation in the warehouse (an ephemeral model)")
        fp = warehouse.fingerprint(relation)
    except Exception as error:
        return StepRecord(**unhashed, hash_error=mask_error(error))
    return StepRecord.from_fingerprint(
        fp,
        name=name,
        direction=direction,  # type: ignore[arg-type]
        format=format,
        location=relation,
        hash_seconds=round(time.perf_counter() - started, 6),
        hash_basis="materialised",
    )
