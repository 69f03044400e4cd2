"""The one way a relation in a database is hashed: in the database where a dialect writes rows-v1
(DuckDB, PostgreSQL), else streamed to the kernel as Arrow batches. A failure is an honest hash
error (no data hash, no row count), credentials masked; never a raised error."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ubunye_dagster.receipts.masking import mask_text
from ubunye_dagster.warehouse.settings import AnyWarehouse, Warehouse
from ubunye_rows import Fingerprint
from ubunye_rows.hashing.fingerprint import failed_fingerprint
from ubunye_rows.sql import fingerprint_duckdb, fingerprint_postgres, fingerprint_streamed
from ubunye_rows.sql.relations import relation_sql

#: The databases whose dialect writes rows-v1 in SQL, by kind.
IN_DATABASE = {"duckdb": fingerprint_duckdb, "postgres": fingerprint_postgres}


def hash_relation(
    connection: Any, kind: str | None, relation: str, where: str | None = None
) -> Fingerprint:
    """rows-v1 of ``relation`` (its rows where the SQL predicate ``where`` holds) on
    ``connection``: in the database for a ``kind`` with a dialect, else streamed (raises what
    the database or the stream raises; :func:`hash_in_warehouse` turns it into a hash error)."""
    in_database = IN_DATABASE.get(kind or "")
    if in_database is not None:
        return in_database(connection, relation, where=where)
    if where is None:
        return fingerprint_streamed(connection, relation)
    return fingerprint_streamed(
        connection, query=f"SELECT * FROM {relation_sql(relation)} WHERE {where}"
    )


@dataclass(frozen=True)
class StoredSlice:
    """The rows a receipt covers: a relation, and the predicate selecting a partition's rows."""

    relation: str
    where: str | None = None


@dataclass(frozen=True)
class StoredRows:
    """What the warehouse holds for one slice: its rows-v1, and its schema pairs when known."""

    fingerprint: Fingerprint
    schema_pairs: list[tuple[str, str]] | None = None


def hash_in_warehouse(warehouse: AnyWarehouse, table: StoredSlice) -> StoredRows:
    """rows-v1 of ``table``'s rows computed where ``warehouse`` keeps them; never raises."""
    kind = warehouse.kind if isinstance(warehouse, Warehouse) else None
    try:
        with warehouse.connect() as connection:
            fingerprint = hash_relation(connection, kind, table.relation, table.where)
    except Exception as exc:
        return StoredRows(failed(exc))
    sketch = fingerprint.sketch  # its schema: the stored columns' rows-v1 types, by name
    return StoredRows(fingerprint, [tuple(pair) for pair in sketch.schema] if sketch else None)


def failed(error: BaseException) -> Fingerprint:
    """The fingerprint of a hash that failed: its error, credentials masked."""
    found = failed_fingerprint(None, error)
    return replace(found, error=mask_text(found.error or ""))
