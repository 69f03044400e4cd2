"""``with_receipts(inner, warehouse=Warehouse(kind="postgres", ...))`` around a user's own
pandas -> PostgreSQL IO manager, on a temporary cluster: the receipt is the stored table's (or
partition slice's) digest computed in PostgreSQL, a read is hashed there and verified, and a
warehouse that cannot be reached is an honest ``hash_error`` that loses nothing."""

from __future__ import annotations

import uuid

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import test_wrapped_io_manager as wrapped
from postgres_cluster import postgres_available, postgres_cluster
from warehouse_assets import EVENTS, STORED_EVENTS_SCHEMA, event_count, events

from ubunye_dagster import UbunyeResource, Warehouse, with_receipts
from ubunye_rows import fingerprint, fingerprint_arrow
from ubunye_rows.sql import fingerprint_postgres

psycopg2 = pytest.importorskip("psycopg2")
pytestmark = pytest.mark.skipif(
    not postgres_available(), reason="no PostgreSQL server binaries (Debian `postgresql`)"
)
instance = wrapped.instance  # the fixture: a temporary Dagster instance
record = wrapped.record

ORDERS = pd.DataFrame({"order_id": [1, 2, 3], "region": ["north", "south", "north"]})
ORDERS["amount"] = [10.5, 3.25, 7.0]
ORDERS_ARROW = pa.schema(
    [("order_id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())]
)
#: The PostgreSQL column type for each pandas dtype kind the test frames use.
COLUMN_TYPES = {"i": "bigint", "f": "double precision", "O": "text", "M": "timestamp"}
REGIONS = dg.StaticPartitionsDefinition(["north", "south"])


class PostgresPandasIOManager(dg.ConfigurableIOManager):
    """A user's own IO manager: each asset the table ``<db_schema>.<asset name>``; a partition
    the rows whose ``partition_expr`` column holds its key. It states the table (and the
    partition's select) in its output metadata, as Dagster's DbIOManager does."""

    dsn: str
    db_schema: str
    states_table: bool = True

    def table(self, context: dg.OutputContext | dg.InputContext) -> str:
        return f"{self.db_schema}.{context.asset_key.path[-1]}"

    def partition_where(self, context, metadata) -> str | None:
        if not context.has_partition_key:
            return None
        return f"{metadata['partition_expr']} in ('{context.partition_key}')"

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        table, where = (
            self.table(context),
            self.partition_where(context, context.definition_metadata),
        )
        columns = ", ".join(f'"{name}" {COLUMN_TYPES[obj[name].dtype.kind]}' for name in obj)
        rows = [
            tuple(v.item() if isinstance(v, np.generic) else v for v in row)
            for row in obj.itertuples(index=False)
        ]
        with psycopg2.connect(self.dsn) as connection, connection.cursor() as cursor:
            cursor.execute(f"create schema if not exists {self.db_schema}")
            cursor.execute(f"create table if not exists {table} ({columns})")
            cursor.execute(f"delete from {table}" + (f" where {where}" if where else ""))
            cursor.executemany(
                f"insert into {table} values ({', '.join(['%s'] * len(obj.columns))})", rows
            )
        connection.close()
        if self.states_table:
            query = f"SELECT * FROM {table}" + (f" WHERE\n{where}" if where else "")
            context.add_output_metadata({"dagster/table_name": table, "Query": query})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        table = self.table(context)
        where = self.partition_where(context, context.upstream_output.definition_metadata)
        with psycopg2.connect(self.dsn) as connection, connection.cursor() as cursor:
            cursor.execute(f"select * from {table}" + (f" where {where}" if where else ""))
            frame = pd.DataFrame(cursor.fetchall(), columns=[c.name for c in cursor.description])
        connection.close()
        return frame


@dg.asset
def orders() -> pd.DataFrame:
    return ORDERS


@dg.asset(partitions_def=REGIONS, metadata={"partition_expr": "region"})
def regional(context) -> pd.DataFrame:
    return ORDERS[ORDERS["region"] == context.partition_key]


@pytest.fixture(scope="module")
def cluster():
    with postgres_cluster() as pg:
        yield pg


@pytest.fixture
def schema() -> str:
    return f"shop_{uuid.uuid4().hex[:8]}"


def resources(root, dsn: str, schema: str, *, connection: str | None = None, **inner) -> dict:
    manager = PostgresPandasIOManager(dsn=dsn, db_schema=schema, **inner)
    warehouse = Warehouse(kind="postgres", connection=connection or dsn)
    ubunye = UbunyeResource(usecase_dir=str(root))
    return {"io_manager": with_receipts(manager, ubunye=ubunye, warehouse=warehouse)}


def rows_as_arrow(dsn: str, query: str, schema: pa.Schema) -> pa.Table:
    """Rows read through psycopg2 into Arrow with the columns' known types: an independent
    digest of what PostgreSQL holds."""
    with psycopg2.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute(query)
        rows = [dict(zip(schema.names, row, strict=True)) for row in cursor.fetchall()]
    connection.close()
    return pa.Table.from_pylist(rows, schema=schema)


def test_the_receipt_is_the_stored_tables_digest_computed_in_postgres(
    tmp_path, instance, cluster, schema
):
    result = dg.materialize(
        [orders], resources=resources(tmp_path, cluster.url, schema), instance=instance
    )

    (output,) = record(tmp_path, "orders", result.run_id).outputs
    with psycopg2.connect(cluster.url) as connection:
        in_database = fingerprint_postgres(connection, f"{schema}.orders")
    connection.close()
    read_as_arrow = rows_as_arrow(cluster.url, f"select * from {schema}.orders", ORDERS_ARROW)
    assert output.data_hash == in_database.data_hash == fingerprint_arrow(read_as_arrow).data_hash
    assert output.data_hash == fingerprint(ORDERS).data_hash  # types PostgreSQL keeps as given
    assert output.location == f"postgres:{schema}.orders" and output.row_count == 3


def test_a_postgres_read_is_hashed_there_and_verified_where_pandas_types_differ(
    tmp_path, instance, cluster, schema
):
    result = dg.materialize(
        [events, event_count], resources=resources(tmp_path, cluster.url, schema), instance=instance
    )

    (written,) = record(tmp_path, "events", result.run_id).outputs
    (read,) = record(tmp_path, "event_count", result.run_id).inputs
    assert written.data_hash != fingerprint(EVENTS).data_hash  # claimed as stored: timestamp_ntz
    assert written.sketch["schema"] == STORED_EVENTS_SCHEMA
    assert read.data_hash == written.data_hash
    assert (read.hash_basis, read.source_note[:8]) == ("recomputed", "verified")


def test_a_postgres_partitions_receipt_covers_only_its_slice(tmp_path, instance, cluster, schema):
    io = resources(tmp_path, cluster.url, schema)
    runs = {
        key: dg.materialize([regional], partition_key=key, resources=io, instance=instance)
        for key in ("north", "south")
    }

    for key, result in runs.items():
        (output,) = record(tmp_path, "regional", f"{result.run_id}.{key}").outputs
        query = f"select * from {schema}.regional where region = '{key}'"
        assert (
            output.data_hash
            == fingerprint_arrow(rows_as_arrow(cluster.url, query, ORDERS_ARROW)).data_hash
        )
    assert output.row_count == 1


def test_an_unreachable_postgres_warehouse_is_an_honest_hash_error_and_the_write_stands(
    tmp_path, instance, cluster, schema
):
    unreachable = f"postgresql://postgres:hunter2@127.0.0.1:1/{cluster.dbname}"

    result = dg.materialize(
        [orders],
        resources=resources(tmp_path, cluster.url, schema, connection=unreachable),
        instance=instance,
    )

    written = record(tmp_path, "orders", result.run_id)
    (output,) = written.outputs
    assert written.status == "success"
    assert (output.data_hash, output.row_count) == (None, None)
    assert output.hash_error.startswith(
        "WarehouseConnectionError: cannot connect to the postgres warehouse"
    )
    assert "hunter2" not in output.hash_error
    assert rows_as_arrow(cluster.url, f"select * from {schema}.orders", ORDERS_ARROW).num_rows == 3


def test_a_table_the_metadata_does_not_name_is_an_honest_hash_error(
    tmp_path, instance, cluster, schema
):
    io = resources(tmp_path, cluster.url, schema, states_table=False)

    result = dg.materialize([orders], resources=io, instance=instance)

    (output,) = record(tmp_path, "orders", result.run_id).outputs
    assert output.data_hash is None
    assert "PostgresPandasIOManager's output metadata names no table" in output.hash_error
