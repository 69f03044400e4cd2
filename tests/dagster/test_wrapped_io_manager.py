"""Receipts for any IO manager: ``with_receipts(inner)`` around a real DuckDB file (through
dagster-duckdb-pandas) and around a user-written ``UPathIOManager``, partitions included.

What goes to the inner IO manager is hashed before it is stored (DuckDB's: the table it stored,
in DuckDB, ``tests/dagster/test_wrapped_io_manager_warehouse.py``); what it loads is hashed after
it is loaded and held against the digest recorded when it was written. The data stays where the
inner IO manager puts it.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from upath import UPath

from ubunye_core.store import LineageStore
from ubunye_dagster import SAME_INPUTS, UbunyeResource, UnverifiedReadError, with_receipts
from ubunye_dagster.drift.sensor import DriftCursor, judge_pending_materialisations
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_rows import fingerprint, fingerprint_arrow

#: The oldest supported Dagster runs this whole module (the smoke set, .ci/run).
pytestmark = pytest.mark.smoke

ORDERS = pd.DataFrame({"order_id": [1, 2, 3], "region": ["north", "south", "north"]})
ORDERS["amount"] = [10.5, 3.25, 7.0]
DAYS = dg.DailyPartitionsDefinition(start_date="2026-01-01", end_date="2026-01-03")


@dg.asset(metadata={"ubunye/expectations": [{"not_null": "order_id"}]})
def orders() -> pd.DataFrame:
    return ORDERS


@dg.asset
def by_region(orders: pd.DataFrame) -> pd.DataFrame:
    return orders.groupby("region", as_index=False)["amount"].sum()


@dg.asset(partitions_def=DAYS, metadata={"partition_expr": "day"})
def daily(context) -> pd.DataFrame:
    return day_rows(context.partition_key)


def day_rows(day: str) -> pd.DataFrame:
    """The rows of one day: DuckDB selects a day's partition by a timestamp column."""
    return pd.DataFrame({"day": pd.to_datetime([day, day]), "sold": [int(day[-2:]), 1]})


@dg.asset(ins={"daily": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def all_days(daily) -> pd.DataFrame:
    frames = list(daily.values()) if isinstance(daily, dict) else [daily]
    return pd.concat(frames, ignore_index=True)


class JsonLinesIOManager(dg.UPathIOManager):
    """A user's own IO manager: one JSON-lines file per asset (and partition)."""

    extension = ".jsonl"

    def dump_to_path(self, context: dg.OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(obj.to_json(orient="records", lines=True, date_format="iso"))

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        frame = pd.read_json(path, orient="records", lines=True, dtype=False)
        if "day" in frame:
            frame["day"] = pd.to_datetime(frame["day"])
        return frame


def duckdb_io(root: Path) -> dg.IOManagerDefinition:
    """dagster-duckdb-pandas's IO manager on a DuckDB file under ``root``, with receipts."""
    module = pytest.importorskip(
        "dagster_duckdb_pandas",
        reason="extra duckdb-pandas (dagster-duckdb-pandas pins pandas<3, so dev leaves it out)",
    )
    inner = module.DuckDBPandasIOManager(database=str(root / "warehouse.duckdb"), schema="shop")
    return with_receipts(inner, ubunye=UbunyeResource(usecase_dir=str(root)))


def connect_duckdb(path: str):
    """A connection to the DuckDB file, to read or change it behind Dagster's back."""
    return pytest.importorskip("duckdb").connect(path)


def jsonl_io(root: Path) -> dg.IOManagerDefinition:
    inner = JsonLinesIOManager(base_path=UPath(root / "files"))
    return with_receipts(inner, ubunye=UbunyeResource(usecase_dir=str(root)))


def record(root: Path, task: str, run_id: str):
    return LineageStore.for_usecase_dir(root).load(f"dagster/default/{task}", run_id)


@pytest.fixture
def instance(tmp_path):
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        yield instance


def test_duckdb_stores_the_rows_and_the_receipt_holds_their_digest(tmp_path, instance):
    result = dg.materialize(
        [orders, by_region], resources={"io_manager": duckdb_io(tmp_path)}, instance=instance
    )

    with connect_duckdb(str(tmp_path / "warehouse.duckdb")) as db:
        stored = db.sql("select * from shop.orders order by order_id").df()
    written = record(tmp_path, "orders", result.run_id)
    (output,) = written.outputs
    assert stored["order_id"].tolist() == [1, 2, 3]
    assert output.data_hash == fingerprint(ORDERS).data_hash
    assert output.format == "DuckDBPandasIOManager"
    assert written.expectations[0]["passed"]
    metadata = result.asset_materializations_for_node("orders")[0].metadata
    # The location names the storage kind and the table on every supported Dagster (1.10's
    # DbIOManager logs no storage kind: the warehouse's is used).
    table = metadata["dagster/table_name"].value
    assert table == f"{tmp_path}/warehouse.duckdb.shop.orders"
    assert output.location == metadata["dagster/uri"].value == f"duckdb:{table}"
    assert metadata["ubunye/data_hash"].value == output.data_hash
    version = instance.get_latest_data_version_record(dg.AssetKey("orders"))
    assert version.asset_materialization.tags["dagster/data_version"] == output.data_hash


def test_a_duckdb_read_is_hashed_and_verified_against_the_write(tmp_path, instance):
    result = dg.materialize(
        [orders, by_region], resources={"io_manager": duckdb_io(tmp_path)}, instance=instance
    )

    (read,) = record(tmp_path, "by_region", result.run_id).inputs
    (written,) = record(tmp_path, "orders", result.run_id).outputs
    assert read.data_hash == fingerprint(ORDERS).data_hash
    assert read.source_note.startswith("verified")
    assert (read.format, read.location) == (written.format, written.location)


def test_a_table_changed_behind_dagsters_back_fails_the_reading_step(tmp_path, instance):
    resources = {"io_manager": duckdb_io(tmp_path)}
    dg.materialize([orders], resources=resources, instance=instance)
    with connect_duckdb(str(tmp_path / "warehouse.duckdb")) as db:
        db.sql("update shop.orders set amount = 99.0 where order_id = 2")

    result = dg.materialize(
        [orders, by_region],
        selection=[by_region],
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )

    assert not result.success
    cause = result.failure_data_for_node("by_region").error.cause
    assert cause.cls_name == UnverifiedReadError.__name__
    assert fingerprint(ORDERS).data_hash in cause.message


def test_a_broken_rule_keeps_the_object_from_the_inner_io_manager(tmp_path, instance):
    @dg.asset(name="orders", metadata={"ubunye/expectations": [{"row_count": {"min": 5}}]})
    def too_few() -> pd.DataFrame:
        return ORDERS

    result = dg.materialize(
        [too_few],
        resources={"io_manager": duckdb_io(tmp_path)},
        instance=instance,
        raise_on_error=False,
    )

    assert not result.success
    with connect_duckdb(str(tmp_path / "warehouse.duckdb")) as db:
        tables = db.sql("select table_name from information_schema.tables").fetchall()
    assert ("orders",) not in tables


def test_duckdb_partitions_each_get_a_receipt_and_a_single_partition_read_is_verified(
    tmp_path, instance
):
    resources = {"io_manager": duckdb_io(tmp_path)}
    runs = {
        day: dg.materialize([daily], partition_key=day, resources=resources, instance=instance)
        for day in ("2026-01-01", "2026-01-02")
    }

    for day, result in runs.items():
        run_id = f"{result.run_id}.{day}"
        (output,) = record(tmp_path, "daily", run_id).outputs
        # The receipt is the day's rows as DuckDB stored them (TIMESTAMP, a wall time).
        with connect_duckdb(str(tmp_path / "warehouse.duckdb")) as db:
            stored = db.sql(f"select * from shop.daily where day::date = '{day}'")
            assert output.data_hash == fingerprint_arrow(stored.to_arrow_table()).data_hash

    @dg.asset(partitions_def=DAYS, metadata={"partition_expr": "day"})
    def one_day(daily: pd.DataFrame) -> pd.DataFrame:
        return daily

    result = dg.materialize(
        [daily, one_day],
        selection=[one_day],
        partition_key="2026-01-02",
        resources=resources,
        instance=instance,
    )
    (read,) = record(tmp_path, "one_day", f"{result.run_id}.2026-01-02").inputs
    assert read.source_note.startswith("verified")


def test_several_duckdb_partitions_read_as_one_frame_are_hashed_but_not_verified(
    tmp_path, instance
):
    resources = {"io_manager": duckdb_io(tmp_path)}
    for day in ("2026-01-01", "2026-01-02"):
        dg.materialize([daily], partition_key=day, resources=resources, instance=instance)

    result = dg.materialize(
        [daily, all_days], selection=[all_days], resources=resources, instance=instance
    )

    (read,) = record(tmp_path, "all_days", result.run_id).inputs
    assert read.row_count == 4
    assert read.source_note.startswith("not verified: several partitions")


def test_a_user_written_upath_io_manager_gets_receipts_for_each_partition(tmp_path, instance):
    resources = {"io_manager": jsonl_io(tmp_path)}
    written = {}
    for day in ("2026-01-01", "2026-01-02"):
        result = dg.materialize([daily], partition_key=day, resources=resources, instance=instance)
        (output,) = record(tmp_path, "daily", f"{result.run_id}.{day}").outputs
        written[day] = output.data_hash
        assert Path(output.location) == tmp_path / "files" / "daily" / f"{day}.jsonl"

    result = dg.materialize(
        [daily, all_days], selection=[all_days], resources=resources, instance=instance
    )

    reads = {step.name: step for step in record(tmp_path, "all_days", result.run_id).inputs}
    assert set(reads) == {"daily[2026-01-01]", "daily[2026-01-02]"}
    for day, digest in written.items():
        assert reads[f"daily[{day}]"].data_hash == digest
        assert reads[f"daily[{day}]"].source_note.startswith("verified")
    lines = (tmp_path / "files" / "daily" / "2026-01-01.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"day": "2026-01-01T00:00:00.000", "sold": 1}


def test_a_user_written_upath_io_manager_unpartitioned_round_trip_is_verified(tmp_path, instance):
    result = dg.materialize(
        [orders, by_region], resources={"io_manager": jsonl_io(tmp_path)}, instance=instance
    )

    (output,) = record(tmp_path, "orders", result.run_id).outputs
    (read,) = record(tmp_path, "by_region", result.run_id).inputs
    assert output.data_hash == read.data_hash == fingerprint(ORDERS).data_hash
    assert read.source_note.startswith("verified")


def test_the_drift_sensor_judges_a_wrapped_io_managers_materialisations_the_same_way(
    tmp_path, instance
):
    rows = {"amount": [1.0, 2.0]}

    # Reads no asset, so it is a source: it declares itself deterministic to be judged strictly.
    @dg.asset(name="orders", metadata={"ubunye/deterministic": True})
    def drifting() -> pd.DataFrame:
        return pd.DataFrame({"order_id": [1, 2], "amount": rows["amount"]})

    resources = {"io_manager": jsonl_io(tmp_path)}
    for amounts in ([1.0, 2.0], [1.0, 2.0], [1.0, 2.5]):  # same code and inputs: the last drifts
        rows["amount"] = amounts
        dg.materialize([drifting], resources=resources, instance=instance)

    findings, _ = judge_pending_materialisations(
        instance, DriftCursor(), DriftSettings(), [dg.AssetKey("orders")]
    )

    judgements = [finding.judgement for finding in findings]
    assert [j.is_flagged() for j in judgements] == [False, False, True]
    assert judgements[-1].drift_reason == SAME_INPUTS
