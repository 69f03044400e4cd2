"""Any other database, streamed: ``with_receipts(inner, warehouse=StreamedWarehouse(factory))``
hashes the stored table by streaming its rows to the kernel through the driver (ADBC's Arrow
fetch here, on a temporary PostgreSQL cluster), to the digest PostgreSQL computes in itself; a
plain DB-API driver is typed by the relation's columns; the record says which way each digest
was made; a column rows-v1 cannot name is an honest hash error naming it and its type."""

from __future__ import annotations

import sqlite3

import dagster as dg
import pyarrow as pa
import pytest
import test_wrapped_io_manager as wrapped
import test_wrapped_io_manager_warehouse_postgres as on_postgres
from postgres_cluster import postgres_available

from ubunye_dagster import StreamedWarehouse, UbunyeResource, with_receipts
from ubunye_dagster.warehouse.relations import StoredSlice, hash_in_warehouse
from ubunye_rows import fingerprint_arrow
from ubunye_rows.sql import stream

adbc = pytest.importorskip("adbc_driver_postgresql.dbapi")
psycopg2 = pytest.importorskip("psycopg2")
pytestmark = pytest.mark.skipif(
    not postgres_available(), reason="no PostgreSQL server binaries (Debian `postgresql`)"
)
# The fixtures: a temporary Dagster instance, a PostgreSQL cluster, a fresh schema name.
instance, cluster, schema = wrapped.instance, on_postgres.cluster, on_postgres.schema
record = wrapped.record


def streamed(root, dsn: str, schema: str) -> dict:
    manager = on_postgres.PostgresPandasIOManager(dsn=dsn, db_schema=schema)
    warehouse = StreamedWarehouse(lambda: adbc.connect(dsn), kind="postgres")
    ubunye = UbunyeResource(usecase_dir=str(root))
    return {"io_manager": with_receipts(manager, ubunye=ubunye, warehouse=warehouse)}


def test_a_warehouse_reached_by_a_connection_factory_is_streamed_to_the_in_database_digest(
    tmp_path, instance, cluster, schema
):
    in_database = dg.materialize(
        [on_postgres.orders],
        resources=on_postgres.resources(tmp_path / "a", cluster.url, schema),
        instance=instance,
    )
    by_stream = dg.materialize(
        [on_postgres.orders],
        resources=streamed(tmp_path / "b", cluster.url, schema),
        instance=instance,
    )

    (hashed_there,) = record(tmp_path / "a", "orders", in_database.run_id).outputs
    (hashed_here,) = record(tmp_path / "b", "orders", by_stream.run_id).outputs
    assert hashed_here.data_hash == hashed_there.data_hash is not None
    assert (hashed_there.hashed_in(), hashed_here.hashed_in()) == ("database", "stream")
    metadata = by_stream.asset_materializations_for_node("orders")[0].metadata
    assert metadata["ubunye/hashed_in"].value == "stream"


def test_a_streamed_partition_covers_only_its_slice(tmp_path, instance, cluster, schema):
    io = streamed(tmp_path, cluster.url, schema)
    runs = {
        key: dg.materialize(
            [on_postgres.regional], partition_key=key, resources=io, instance=instance
        )
        for key in ("north", "south")
    }

    for key, result in runs.items():
        (output,) = record(tmp_path, "regional", f"{result.run_id}.{key}").outputs
        query = f"select * from {schema}.regional where region = '{key}'"
        rows = on_postgres.rows_as_arrow(cluster.url, query, on_postgres.ORDERS_ARROW)
        assert output.data_hash == fingerprint_arrow(rows).data_hash
        assert output.hashed_in() == "stream"


def test_a_column_rows_v1_cannot_name_is_an_honest_hash_error_naming_it_and_its_type(
    cluster, schema
):
    with psycopg2.connect(cluster.url) as connection, connection.cursor() as cursor:
        cursor.execute(f"create schema {schema}")
        cursor.execute(f"create table {schema}.waits as select interval '3 days' as wait")
    connection.close()

    stored = hash_in_warehouse(
        StreamedWarehouse(lambda: adbc.connect(cluster.url), kind="postgres"),
        StoredSlice(f"{schema}.waits"),
    )

    assert stored.fingerprint.data_hash is None
    assert "column 'wait' of type month_day_nano_interval" in stored.fingerprint.error


def test_a_plain_db_api_driver_is_streamed_typed_by_the_relations_columns(monkeypatch):
    monkeypatch.setattr(stream, "BATCH_ROWS", 7)  # several batches, the last one short
    rows = [(i, f"x{i}" if i % 3 else None, i * 0.5) for i in range(30)]
    connection = sqlite3.connect(":memory:")
    connection.execute("create table t (a integer, b text, c real)")
    connection.executemany("insert into t values (?, ?, ?)", rows)
    columns = [("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())]

    found = stream.fingerprint_streamed(connection, "t", columns=columns)

    expected = pa.Table.from_pylist(
        [dict(zip("abc", row, strict=True)) for row in rows], schema=pa.schema(columns)
    )
    assert found.data_hash == fingerprint_arrow(expected).data_hash
    assert (found.row_count, found.hashed_in) == (30, "stream")


def test_a_driver_without_an_arrow_fetch_is_refused_without_the_relations_columns():
    connection = sqlite3.connect(":memory:")
    connection.execute("create table t (a integer)")

    with pytest.raises(TypeError, match=r"Cursor has no Arrow fetch .*give the relation's columns"):
        stream.fingerprint_streamed(connection, "t")
