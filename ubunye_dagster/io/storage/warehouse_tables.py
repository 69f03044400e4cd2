"""A wrapped IO manager's stored table, hashed in its warehouse: which table and slice its
output metadata states, and rows-v1 of exactly those rows, hashed where they are
(``ubunye_dagster.warehouse.relations``).

The table and the partition's predicate are what the inner IO manager itself reported: the
``Query`` every Dagster ``DbIOManager`` (dagster-duckdb, Snowflake, BigQuery...) logs,
``SELECT * FROM <schema>.<table> WHERE <partition predicate>``, so the receipt covers the rows
that IO manager's own predicate selects; else ``dagster/table_name`` for a whole table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ubunye_dagster.io.handlers.base import type_is
from ubunye_dagster.receipts.metadata import plain
from ubunye_dagster.warehouse.relations import StoredRows, StoredSlice, hash_in_warehouse
from ubunye_dagster.warehouse.settings import AnyWarehouse, Warehouse
from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.fingerprint import failed_fingerprint

#: The select statement Dagster's DbIOManager logs as the output's ``Query`` metadata.
_DB_IO_MANAGER_QUERY = re.compile(
    r"^SELECT .+? FROM (?P<relation>\S+)(?: WHERE\n(?P<where>.+))?$", re.S
)
TABLE_NAME = "dagster/table_name"
QUERY = "Query"


class UnstatedTableError(LookupError):
    """The inner IO manager's metadata does not say which table (or slice) holds the rows."""


def metadata_text(metadata: Mapping[str, Any], key: str) -> str | None:
    """The text of a metadata entry (its value, for a MetadataValue); None when absent."""
    value = metadata.get(key)
    return None if value is None else str(plain(value))


def stated_slice(
    metadata: Mapping[str, Any], warehouse: AnyWarehouse, *, partitioned: bool, stated_by: str
) -> StoredSlice:
    """The table and slice ``metadata`` states (``stated_by`` says whose it is, for errors);
    UnstatedTableError naming what is missing when it names no table, or no predicate for a
    partition."""
    query = metadata_text(metadata, QUERY)
    found = _DB_IO_MANAGER_QUERY.match(query) if query else None
    if found:
        table = StoredSlice(found["relation"], found["where"])
    else:
        table_name = metadata_text(metadata, TABLE_NAME)
        if not table_name:
            raise UnstatedTableError(
                f"{stated_by} names no table (neither '{QUERY}' as Dagster's DbIOManager logs "
                f"it nor '{TABLE_NAME}'), so the rows cannot be hashed in the {warehouse.kind} "
                "warehouse"
            )
        table = StoredSlice(_relation_in(table_name, warehouse))
    if partitioned and table.where is None:
        raise UnstatedTableError(
            f"{stated_by} names table {table.relation} but no partition predicate (a '{QUERY}' "
            "with a WHERE clause), so the partition's rows cannot be told apart in the "
            f"{warehouse.kind} warehouse"
        )
    return table


def _relation_in(table_name: str, warehouse: AnyWarehouse) -> str:
    """A ``dagster/table_name`` as the warehouse names it: dagster-duckdb prefixes the file."""
    if not isinstance(warehouse, Warehouse) or warehouse.kind != "duckdb":
        return table_name
    database = warehouse.connection.get_secret_value()
    if table_name.startswith(database + "."):
        return table_name[len(database) + 1 :]
    return table_name


def hash_stated_table(
    metadata: Mapping[str, Any], warehouse: AnyWarehouse, partitioned: bool, stated_by: str
) -> StoredRows:
    """rows-v1 of the slice ``metadata`` (``stated_by``'s) states, in ``warehouse``; never
    raises."""
    try:
        table = stated_slice(metadata, warehouse, partitioned=partitioned, stated_by=stated_by)
    except UnstatedTableError as exc:
        return StoredRows(failed_fingerprint(None, exc))
    return hash_in_warehouse(warehouse, table)


class StatedTable:
    """The rows of the table (or partition slice) an IO manager's metadata states, as a receipt
    describes them: hashed in the warehouse once, when first asked."""

    def __init__(
        self,
        metadata: Mapping[str, Any],
        warehouse: AnyWarehouse,
        partitioned: bool,
        stated_by: str,
    ):
        """The slice ``metadata`` (``stated_by``'s) states in ``warehouse``; ``partitioned``
        when it is one partition (its predicate must be stated)."""
        self.metadata = metadata
        self.warehouse = warehouse
        self.partitioned = partitioned
        self.stated_by = stated_by
        self._stored: StoredRows | None = None

    def fingerprint(self) -> Fingerprint:
        if self._stored is None:
            args = (self.metadata, self.warehouse, self.partitioned, self.stated_by)
            self._stored = hash_stated_table(*args)
        return self._stored.fingerprint

    def schema_pairs(self) -> list[tuple[str, str]]:
        """The stored columns' rows-v1 types, by name; LookupError before they are hashed."""
        if self._stored is None or self._stored.schema_pairs is None:
            raise LookupError(f"the {self.warehouse.kind} table's column types are not known")
        return self._stored.schema_pairs


def is_duckdb_io_manager(inner: Any) -> bool:
    """True for dagster-duckdb's Pythonic IO managers (DuckDBPandasIOManager and its siblings)."""
    return type_is(type(inner), "dagster_duckdb", ("DuckDBIOManager",))


def duckdb_warehouse(resource_config: Mapping[str, Any]) -> Warehouse:
    """The DuckDB file a dagster-duckdb IO manager's resolved config names, as it connects."""
    return Warehouse(
        kind="duckdb",
        connection=str(resource_config["database"]),
        duckdb_config=dict(resource_config.get("connection_config") or {}),
    )
