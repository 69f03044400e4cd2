"""``with_receipts`` around dagster-duckdb's IO manager hashes the stored table in DuckDB: the
receipt claims the rows the table holds (a partition's slice only), a read is hashed there too
and verified, and a hash that fails after the write is an honest ``hash_error``."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import test_wrapped_io_manager as wrapped
from warehouse_assets import EVENTS, STORED_EVENTS_SCHEMA, event_count, events

from ubunye_dagster import UbunyeResource, with_receipts
from ubunye_dagster.warehouse.settings import Warehouse
from ubunye_rows import fingerprint, fingerprint_arrow
from ubunye_rows.sql import fingerprint_duckdb

instance = wrapped.instance  # the fixture: a temporary Dagster instance
record = wrapped.record

duckdb = pytest.importorskip("duckdb")
duckdb_pandas = pytest.importorskip(
    "dagster_duckdb_pandas",
    reason="extra duckdb-pandas (dagster-duckdb-pandas pins pandas<3, so dev leaves it out)",
)

DAYS = dg.DailyPartitionsDefinition(start_date="2026-01-01", end_date="2026-01-03")


@dg.asset(partitions_def=DAYS, metadata={"partition_expr": "day"})
def daily(context) -> pd.DataFrame:
    return day_rows(context.partition_key)


@dg.asset(partitions_def=DAYS, metadata={"partition_expr": "day"})
def one_day(daily: pd.DataFrame) -> pd.DataFrame:
    return daily


def day_rows(day: str) -> pd.DataFrame:
    return pd.DataFrame({"day": pd.to_datetime([day, day]), "sold": [int(day[-2:]), 1]})


def duckdb_inner(root: Path) -> dg.ConfigurableIOManagerFactory:
    return duckdb_pandas.DuckDBPandasIOManager(
        database=str(root / "warehouse.duckdb"), schema="shop"
    )


def resources(root: Path, **settings) -> dict:
    ubunye = UbunyeResource(usecase_dir=str(root))
    return {"io_manager": with_receipts(duckdb_inner(root), ubunye=ubunye, **settings)}


def stored_arrow(root: Path, query: str):
    """The stored rows read through DuckDB's own Arrow export, for an independent digest."""
    with duckdb.connect(str(root / "warehouse.duckdb")) as db:
        return db.sql(query).to_arrow_table()


def test_the_receipt_is_the_stored_tables_digest_computed_in_duckdb(tmp_path, instance):
    result = dg.materialize([events], resources=resources(tmp_path), instance=instance)

    (output,) = record(tmp_path, "events", result.run_id).outputs
    with duckdb.connect(str(tmp_path / "warehouse.duckdb")) as db:
        in_database = fingerprint_duckdb(db, "shop.events")
    read_as_arrow = fingerprint_arrow(stored_arrow(tmp_path, "select * from shop.events"))
    assert output.data_hash == in_database.data_hash == read_as_arrow.data_hash
    assert output.schema_hash == in_database.schema_hash
    assert output.row_count == 2 and output.hash_error is None
    metadata = result.asset_materializations_for_node("events")[0].metadata
    assert metadata["ubunye/data_hash"].value == output.data_hash


def test_a_naive_pandas_datetime_is_claimed_as_the_timestamp_column_duckdb_stored(
    tmp_path, instance
):
    result = dg.materialize([events], resources=resources(tmp_path), instance=instance)

    (output,) = record(tmp_path, "events", result.run_id).outputs
    # In memory the frame hashes as `timestamp`; the table holds `timestamp_ntz`.
    assert output.data_hash != fingerprint(EVENTS).data_hash
    assert output.sketch["schema"] == STORED_EVENTS_SCHEMA


def test_a_read_is_hashed_in_duckdb_and_verified_where_pandas_types_differ(tmp_path, instance):
    result = dg.materialize([events, event_count], resources=resources(tmp_path), instance=instance)

    (read,) = record(tmp_path, "event_count", result.run_id).inputs
    (written,) = record(tmp_path, "events", result.run_id).outputs
    assert read.data_hash == written.data_hash
    assert read.hash_basis == "recomputed"  # the table, hashed again in the database
    assert read.source_note.startswith("verified")


def test_a_table_changed_behind_dagsters_back_is_seen_by_the_hash_in_duckdb(tmp_path, instance):
    dg.materialize([events], resources=resources(tmp_path), instance=instance)
    with duckdb.connect(str(tmp_path / "warehouse.duckdb")) as db:
        db.sql("update shop.events set seen_at = seen_at + interval 1 second where event_id = 2")

    result = dg.materialize(
        [events, event_count],
        selection=[event_count],
        resources=resources(tmp_path),
        instance=instance,
        raise_on_error=False,
    )

    cause = result.failure_data_for_node("event_count").error.cause
    assert cause.cls_name == "UnverifiedReadError"


def test_a_partitions_receipt_covers_only_its_slice(tmp_path, instance):
    runs = {
        day: dg.materialize(
            [daily], partition_key=day, resources=resources(tmp_path), instance=instance
        )
        for day in ("2026-01-01", "2026-01-02")
    }

    whole = fingerprint_arrow(stored_arrow(tmp_path, "select * from shop.daily"))
    assert whole.row_count == 4
    for day, result in runs.items():
        (output,) = record(tmp_path, "daily", f"{result.run_id}.{day}").outputs
        day_slice = stored_arrow(tmp_path, f"select * from shop.daily where day::date = '{day}'")
        assert output.data_hash == fingerprint_arrow(day_slice).data_hash
        assert output.row_count == 2


def test_a_partition_read_is_hashed_in_duckdb_over_its_slice_and_verified(tmp_path, instance):
    for day in ("2026-01-01", "2026-01-02"):
        dg.materialize([daily], partition_key=day, resources=resources(tmp_path), instance=instance)

    result = dg.materialize(
        [daily, one_day],
        selection=[one_day],
        partition_key="2026-01-02",
        resources=resources(tmp_path),
        instance=instance,
    )

    (read,) = record(tmp_path, "one_day", f"{result.run_id}.2026-01-02").inputs
    assert read.row_count == 2
    assert (read.hash_basis, read.source_note[:8]) == ("recomputed", "verified")


def test_a_hash_that_fails_after_a_successful_write_is_an_honest_hash_error(tmp_path, instance):
    @dg.asset(name="waits")
    def waits() -> pd.DataFrame:  # DuckDB stores a timedelta as INTERVAL: no rows-v1 type
        return pd.DataFrame({"order_id": [1, 2], "wait": pd.to_timedelta([1, 2], unit="s")})

    result = dg.materialize([waits], resources=resources(tmp_path), instance=instance)

    written = record(tmp_path, "waits", result.run_id)
    (output,) = written.outputs
    assert written.status == "success"  # the rows are stored: nothing is lost
    assert (output.data_hash, output.row_count) == (None, None)
    assert output.hash_error.startswith("UnsupportedTypeError")
    assert stored_arrow(tmp_path, "select order_id from shop.waits").num_rows == 2
    metadata = result.asset_materializations_for_node("waits")[0].metadata
    assert metadata["ubunye/hash_error"].value == output.hash_error
    warnings = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert any("could not be hashed there" in message for message in warnings)
    assert "ubunye/data_hash" not in metadata


def test_a_table_missing_from_the_named_warehouse_is_an_honest_hash_error(tmp_path, instance):
    elsewhere = Warehouse(kind="duckdb", connection=str(tmp_path / "other.duckdb"))

    result = dg.materialize(
        [events], resources=resources(tmp_path, warehouse=elsewhere), instance=instance
    )

    (output,) = record(tmp_path, "events", result.run_id).outputs
    assert output.data_hash is None
    assert output.hash_error.startswith("CatalogException")
    assert "events" in output.hash_error


def test_a_read_dagster_records_no_materialisation_of_is_an_honest_hash_error(tmp_path, instance):
    dg.materialize([events], resources=resources(tmp_path), instance=instance)

    # Another (ephemeral) instance: the table is there, no materialisation of it is recorded.
    result = dg.materialize(
        [events, event_count], selection=[event_count], resources=resources(tmp_path)
    )

    (read,) = record(tmp_path, "event_count", result.run_id).inputs
    assert read.data_hash is None
    assert "Dagster (it records no materialisation of events) names no table" in read.hash_error
    assert read.source_note.startswith("not verified: the read could not be hashed")
