"""Where tables live and how to connect to them: a DuckDB file or PostgreSQL (hashed in the
database), or any other database through a connection factory (its rows streamed to the kernel).

``with_receipts(inner, warehouse=Warehouse(kind="postgres", connection="postgresql://..."))``
says it; dagster-duckdb's IO managers say it themselves (their ``database`` setting). A
warehouse's receipts hash the stored table (or partition slice) where it is, after the inner IO
manager has written it, and again when it is read.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, SecretStr

from ubunye_dagster.receipts.masking import mask_error
from ubunye_dagster.strict_fields import StrictSettings

#: dagster-duckdb retries a locked database file (10 times, backing off from 0.1 s); a
#: receipt's connection does the same.
DUCKDB_LOCK_RETRIES = 10


class WarehouseConnectionError(ConnectionError):
    """The warehouse a receipt hashes in could not be reached."""


@contextlib.contextmanager
def connected(opened: Callable[[], Any], kind: str) -> Iterator[Any]:
    """The connection ``opened()`` gives, closed after the block; a WarehouseConnectionError
    naming the ``kind`` of warehouse (credentials masked) when it cannot be opened."""
    try:
        connection = opened()
    except Exception as exc:
        raise WarehouseConnectionError(
            f"cannot connect to the {kind} warehouse: {mask_error(exc)}"
        ) from None
    try:
        yield connection
    finally:
        connection.close()


class Warehouse(StrictSettings):
    """A database that holds a wrapped IO manager's tables, and how to connect to it."""

    kind: Literal["duckdb", "postgres"] = Field(
        description="The database: 'duckdb' (a DuckDB file) or 'postgres' (PostgreSQL)."
    )
    connection: SecretStr = Field(
        description="DuckDB: the database file. PostgreSQL: a libpq connection string or "
        "postgresql:// URL (kept secret: never shown in records, errors or logs)."
    )
    duckdb_config: dict[str, Any] = Field(
        default_factory=dict,
        description="DuckDB only: the connection's config, as duckdb takes it.",
    )

    def connect(self) -> contextlib.AbstractContextManager[Any]:
        """A DBAPI connection to the warehouse, closed after the block; a
        WarehouseConnectionError (credentials masked) when it cannot be opened."""
        return connected(self._opened, self.kind)

    def _opened(self) -> Any:
        target = self.connection.get_secret_value()
        if self.kind == "postgres":
            import psycopg2

            return psycopg2.connect(target)
        import duckdb

        attempt = 1
        while True:
            try:  # another step's process may hold the file for a moment
                return duckdb.connect(target, read_only=False, config=dict(self.duckdb_config))
            except duckdb.IOException:
                if attempt == DUCKDB_LOCK_RETRIES:
                    raise
                time.sleep(0.1 * 2 ** (attempt - 1))
                attempt += 1


@dataclass(frozen=True)
class StreamedWarehouse:
    """Any other database, reached through ``connect`` (a factory of DB-API connections: ADBC,
    or a driver with its own Arrow fetch such as Snowflake's or Databricks'): its rows are
    streamed to the kernel as Arrow batches, one batch in memory at a time. ``kind`` names it in
    receipts (``snowflake:<table>``)."""

    connect_with: Callable[[], Any]
    kind: str = "database"

    def connect(self) -> contextlib.AbstractContextManager[Any]:
        """A connection from the factory, closed after the block; a WarehouseConnectionError
        (credentials masked) when the factory fails."""
        return connected(self.connect_with, self.kind)


#: Every place tables can be hashed in.
AnyWarehouse = Warehouse | StreamedWarehouse


def as_warehouse(value: AnyWarehouse | Mapping[str, Any] | None) -> AnyWarehouse | None:
    """``with_receipts``' ``warehouse=`` setting as a warehouse (a mapping is validated)."""
    if value is None or isinstance(value, Warehouse | StreamedWarehouse):
        return value
    return Warehouse.model_validate(value)
