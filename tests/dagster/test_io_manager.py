"""UbunyeIOManager with pandas: storage layout, one record per asset and partition, the receipt.

Each test materialises a small asset graph in process and reads back what the IO manager left:
the Parquet files, the run records in ``.ubunye/lineage`` and the materialisation metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import dagster as dg
import pandas as pd
import pytest

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.receipts import subjects
from ubunye_dagster.receipts.identity import (
    asset_for_record,
    identity_for_asset,
    record_run_id,
    split_record_run_id,
)
from ubunye_dagster.receipts.records import config_hash_of
from ubunye_rows import fingerprint
from ubunye_rows.evidence import code_hash, environment, environment_hash

#: The oldest supported Dagster runs this whole module (the smoke set, .ci/run).
pytestmark = pytest.mark.smoke

HERE = Path(__file__).resolve().parent


def io_manager(root: Path, **settings) -> UbunyeIOManager:
    return UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root), **settings)
    )


def run(
    assets, root: Path, *, instance=None, resources=None, **kwargs
) -> dg.ExecuteInProcessResult:
    resources = {"io_manager": io_manager(root), **(resources or {})}
    return dg.materialize(assets, resources=resources, instance=instance, **kwargs)


def record_of(root: Path, task_path: str, run_id: str):
    return LineageStore.for_usecase_dir(root).load(task_path, run_id)


def metadata_of(result: dg.ExecuteInProcessResult, key: str) -> dict:
    events = result.asset_materializations_for_node(key)
    assert len(events) == 1, events
    return {name: getattr(v, "value", v) for name, v in events[0].metadata.items()}


ORDERS = pd.DataFrame(
    {
        "order_id": [1, 2, 3, 4],
        "customer": ["ana", "bo", None, "dee"],
        "amount": [10.5, float("nan"), 3.25, 7.0],
        "placed": pd.to_datetime(
            [
                "2024-03-10 01:30:00",
                "2024-03-10 02:30:00",
                "2024-03-11 00:00:00",
                "2024-03-12 23:59:59",
            ]
        ),
    }
)


@dg.asset(group_name="sales")
def orders() -> pd.DataFrame:
    return ORDERS.copy()


@dg.asset(group_name="sales")
def order_totals(orders: pd.DataFrame) -> pd.DataFrame:
    return orders.groupby("customer", dropna=False, as_index=False)["amount"].sum()


def test_an_asset_is_stored_as_parquet_under_its_key_and_loads_back(tmp_path):
    result = run([orders, order_totals], tmp_path)

    assert result.success
    stored = pd.read_parquet(tmp_path / "data" / "orders.parquet")
    pd.testing.assert_frame_equal(stored, ORDERS)
    assert (tmp_path / "data" / "order_totals.parquet").is_file()


def test_each_materialisation_leaves_one_record_per_asset_per_run(tmp_path):
    result = run([orders, order_totals], tmp_path)

    store = LineageStore.for_usecase_dir(tmp_path)
    for task_path in ("dagster/sales/orders", "dagster/sales/order_totals"):
        runs = store.list_runs(task_path)
        assert [r.run_id for r in runs] == [result.run_id]
        assert runs[0].status == "success"


def test_the_record_carries_the_evidence_of_adr_006(tmp_path):
    result = run([orders, order_totals], tmp_path)

    record = record_of(tmp_path, "dagster/sales/order_totals", result.run_id)
    assert (record.usecase, record.package, record.task_name) == (
        "dagster",
        "sales",
        "order_totals",
    )
    assert record.record_version == 2
    assert record.engine_version.startswith("ubunye-dagster ")
    assert record.backend == "pandas"
    assert record.code_hash == code_hash(HERE)
    assert record.environment == json.loads(json.dumps(environment()))
    assert record.environment_hash == environment_hash(environment())
    assert record.config_hash == config_hash_of(None)
    assert record.started_at <= record.ended_at
    assert record.duration_sec >= 0
    assert record.variables["dagster_run_id"] == result.run_id
    assert record.variables["asset_key"] == "order_totals"
    [output] = record.outputs
    assert output.hash_method == "rows-v1"
    assert output.hash_basis == "materialised"
    assert output.hash_seconds >= 0
    assert output.location == str(tmp_path / "data" / "order_totals.parquet")
    steps = [(t["step"], t.get("input") or t.get("output")) for t in record.timings]
    assert steps == [
        ("Reader:pandas-parquet", "orders"),
        ("Transform:order_totals", None),
        ("Writer:pandas-parquet", "order_totals"),
    ]
    assert all(t["seconds"] >= 0 for t in record.timings)


def test_the_output_digest_is_the_digest_of_the_frame_the_asset_returned(tmp_path):
    result = run([orders], tmp_path)

    [output] = record_of(tmp_path, "dagster/sales/orders", result.run_id).outputs
    expected = fingerprint(ORDERS)
    assert (output.data_hash, output.schema_hash, output.row_count) == (
        expected.data_hash,
        expected.schema_hash,
        4,
    )


def test_an_input_is_hashed_as_loaded_and_matches_what_upstream_wrote(tmp_path):
    result = run([orders, order_totals], tmp_path)

    [written] = record_of(tmp_path, "dagster/sales/orders", result.run_id).outputs
    [read] = record_of(tmp_path, "dagster/sales/order_totals", result.run_id).inputs
    assert read.name == "orders"
    assert read.direction == "input"
    assert (read.data_hash, read.row_count) == (written.data_hash, 4)
    assert read.source_note.startswith("verified")


def noted_lookups(instance, monkeypatch) -> list[str]:
    """The asset keys the instance is asked for materialisations of, from now on."""
    asked: list[str] = []
    fetch = instance.fetch_materializations

    def fetch_and_note(records_filter, *args, **kwargs):
        asked.append(records_filter.asset_key.to_user_string())
        return fetch(records_filter, *args, **kwargs)

    monkeypatch.setattr(instance, "fetch_materializations", fetch_and_note)
    return asked


def test_a_read_takes_its_upstreams_receipt_from_the_step_of_its_own_run_that_wrote_it(
    tmp_path, monkeypatch
):
    with dg.instance_for_test() as instance:
        asked = noted_lookups(instance, monkeypatch)
        result = run([orders, order_totals], tmp_path, instance=instance)

    [written] = record_of(tmp_path, "dagster/sales/orders", result.run_id).outputs
    [read] = record_of(tmp_path, "dagster/sales/order_totals", result.run_id).inputs
    assert (read.data_hash, read.source_note[:8]) == (written.data_hash, "verified")
    # The summaries' predecessors come from one query for the whole run; the read asks nothing.
    assert asked == []


@dg.asset(group_name="sales", name="orders")
def fewer_orders() -> pd.DataFrame:
    return ORDERS.iloc[:2].copy()


def test_a_read_of_an_upstream_this_process_wrote_in_an_earlier_run_asks_the_event_log_nothing(
    tmp_path, monkeypatch
):
    with dg.instance_for_test() as instance:
        run([orders, order_totals], tmp_path, instance=instance, selection=[orders])
        asked = noted_lookups(instance, monkeypatch)
        result = run([orders, order_totals], tmp_path, instance=instance, selection=[order_totals])

    [read] = record_of(tmp_path, "dagster/sales/order_totals", result.run_id).inputs
    assert (read.row_count, read.hash_basis, read.source_note[:8]) == (
        4,
        "stored-bytes",
        "verified",
    )
    assert "orders" not in asked


def test_a_materialisation_made_elsewhere_after_this_processs_write_is_read_from_the_event_log(
    tmp_path, monkeypatch
):
    from ubunye_dagster.receipts import materialisations

    with dg.instance_for_test() as instance:
        run([orders, order_totals], tmp_path, instance=instance, selection=[orders])
        elsewhere = run(
            [fewer_orders, order_totals], tmp_path, instance=instance, selection=[fewer_orders]
        )
        materialisations._WRITTEN.forget(elsewhere.run_id)  # as if another process had written it
        asked = noted_lookups(instance, monkeypatch)
        result = run([orders, order_totals], tmp_path, instance=instance, selection=[order_totals])

    # Dagster's latest is that run's, not the one this process remembers: the event log is asked.
    assert result.success
    [read] = record_of(tmp_path, "dagster/sales/order_totals", result.run_id).inputs
    assert (read.row_count, read.hash_basis, read.source_note[:8]) == (
        2,
        "stored-bytes",
        "verified",
    )
    assert "orders" in asked


def assert_each_record_starts_at_its_step_start(
    instance: dg.DagsterInstance, run_id: str, root: Path
) -> None:
    """Each asset's record of the run starts when the event log says its step started."""
    from ubunye_core.records.times import required_instant

    starts = {
        record.event_log_entry.step_key: record.event_log_entry.timestamp
        for record in instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.STEP_START
        ).records
    }
    for step, task in (("orders", "sales/orders"), ("order_totals", "sales/order_totals")):
        record = record_of(root, f"dagster/{task}", run_id)
        assert abs(required_instant(record.started_at).timestamp() - starts[step]) < 1e-3


def test_each_record_starts_when_dagster_started_its_step(tmp_path):
    with dg.instance_for_test() as instance:
        result = run([orders, order_totals], tmp_path, instance=instance)
        assert_each_record_starts_at_its_step_start(instance, result.run_id, tmp_path)


def test_no_step_asks_the_event_log_when_it_started_the_io_manager_heard_it(tmp_path, monkeypatch):
    with dg.instance_for_test() as instance:
        asked: list = []
        read_run = instance.get_records_for_run

        def read_and_note(run_id, *args, **kwargs):
            asked.append(kwargs.get("of_type"))
            return read_run(run_id, *args, **kwargs)

        monkeypatch.setattr(instance, "get_records_for_run", read_and_note)
        result = run([orders, order_totals], tmp_path, instance=instance)
        monkeypatch.undo()
        assert_each_record_starts_at_its_step_start(instance, result.run_id, tmp_path)
    # The run's resources were set up in this process before its steps started.
    assert dg.DagsterEventType.STEP_START not in asked


def test_every_materialisation_shows_the_receipt_as_metadata(tmp_path):

    result = run([orders, order_totals], tmp_path)

    record = record_of(tmp_path, "dagster/sales/order_totals", result.run_id)
    meta = metadata_of(result, "order_totals")
    [output] = record.outputs
    assert meta["ubunye/data_hash"] == output.data_hash
    assert meta["ubunye/schema_hash"] == output.schema_hash
    assert meta["dagster/row_count"] == output.row_count
    assert meta["ubunye/hash_method"] == "rows-v1"
    assert meta["ubunye/hash_seconds"] == output.hash_seconds
    assert meta["ubunye/code_hash"] == record.code_hash
    assert meta["ubunye/environment_hash"] == record.environment_hash
    assert meta["ubunye/task_path"] == "dagster/sales/order_totals"
    assert meta["ubunye/run_id"] == result.run_id
    assert Path(meta["ubunye/record_path"]).is_file()
    assert meta["dagster/uri"] == output.location
    assert [c.name for c in meta["dagster/column_schema"].columns] == ["customer", "amount"]
    assert [c.type for c in meta["dagster/column_schema"].columns] == ["string", "float64"]
    assert meta["ubunye/inputs"] == {
        "orders": {
            "asset_key": "orders",
            "data_hash": record.inputs[0].data_hash,
            "row_count": 4,
            "hash_error": None,
        }
    }
    assert "ubunye/hash_error" not in meta
    assert "ubunye/partition" not in meta


daily = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-05")


@dg.asset(partitions_def=daily)
def readings(context) -> pd.DataFrame:
    day = context.partition_key
    return pd.DataFrame({"day": [day, day], "value": [1.0, 2.0]})


@dg.asset(partitions_def=daily)
def smoothed(readings: pd.DataFrame) -> pd.DataFrame:
    return readings.assign(value=readings["value"] / 2)


def test_a_daily_partition_is_its_own_file_and_its_own_record(tmp_path):
    result = run([readings, smoothed], tmp_path, partition_key="2024-01-02")

    assert (tmp_path / "data" / "readings" / "2024-01-02.parquet").is_file()
    run_id = f"{result.run_id}.2024-01-02"
    record = record_of(tmp_path, "dagster/default/smoothed", run_id)
    assert record.variables["partition_key"] == "2024-01-02"
    assert record.variables["time_window"] == {
        "start": "2024-01-02T00:00:00+00:00",
        "end": "2024-01-03T00:00:00+00:00",
    }
    [read] = record.inputs
    assert read.name == "readings"
    assert read.location == str(tmp_path / "data" / "readings" / "2024-01-02.parquet")
    meta = metadata_of(result, "smoothed")
    assert meta["ubunye/partition"] == "2024-01-02"
    assert meta["ubunye/run_id"] == run_id


regions = dg.StaticPartitionsDefinition(["north", "south west"])


@dg.asset(partitions_def=regions)
def stores(context) -> pd.DataFrame:
    return pd.DataFrame({"region": [context.partition_key], "shops": [3]})


def test_a_static_partition_key_that_is_not_path_safe_is_encoded_reversibly(tmp_path):
    result = run([stores], tmp_path, partition_key="south west")

    assert (tmp_path / "data" / "stores" / "south%20west.parquet").is_file()
    run_id = record_run_id(result.run_id, "south west")
    assert run_id == f"{result.run_id}.south%20west"
    record = record_of(tmp_path, "dagster/default/stores", run_id)
    assert split_record_run_id(record.run_id) == (result.run_id, "south west")


grid = dg.MultiPartitionsDefinition(
    {"day": dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-03"),
     "region": dg.StaticPartitionsDefinition(["north", "south"])}
)  # fmt: skip


@dg.asset(partitions_def=grid)
def sales_grid(context) -> pd.DataFrame:
    key = context.partition_key.keys_by_dimension
    return pd.DataFrame({"day": [key["day"]], "region": [key["region"]], "sales": [5]})


def test_a_multi_partition_is_stored_by_dimension_and_recorded_with_each_key(tmp_path):
    key = dg.MultiPartitionKey({"day": "2024-01-02", "region": "south"})
    result = run([sales_grid], tmp_path, partition_key=key)

    assert (tmp_path / "data" / "sales_grid" / "2024-01-02" / "south.parquet").is_file()
    record = record_of(tmp_path, "dagster/default/sales_grid", record_run_id(result.run_id, key))
    assert record.variables["partition_key"] == "2024-01-02|south"
    assert record.variables["partition_dimensions"] == {"day": "2024-01-02", "region": "south"}
    assert record.outputs[0].row_count == 1


@dg.asset(deps=[], ins={"readings": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def all_readings(readings: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(readings.values(), ignore_index=True)


def test_several_upstream_partitions_load_as_a_dict_and_each_is_recorded(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"):
        assert run([readings], tmp_path, instance=instance, partition_key=day).success

    result = run([readings, all_readings], tmp_path, instance=instance, selection=[all_readings])

    record = record_of(tmp_path, "dagster/default/all_readings", result.run_id)
    days = [f"readings[2024-01-0{d}]" for d in range(1, 5)]
    # Each partition, then their digests combined under the input's own name.
    assert [step.name for step in record.inputs] == [*days, "readings"]
    assert all(step.row_count == 2 and step.data_hash for step in record.inputs[:4])
    assert record.inputs[4].row_count == 8
    assert record.outputs[0].row_count == 8
    assert set(metadata_of(result, "all_readings")["ubunye/inputs"]) == {
        step.name for step in record.inputs
    }


@dg.multi_asset(
    outs={
        "paid": dg.AssetOut(group_name="billing"),
        "unpaid": dg.AssetOut(group_name="billing"),
    },
    ins={"orders": dg.AssetIn(), "customers": dg.AssetIn()},
    internal_asset_deps={"paid": {dg.AssetKey("orders")}, "unpaid": {dg.AssetKey("customers")}},
)
def split_orders(orders: pd.DataFrame, customers: pd.DataFrame):
    yield dg.Output(orders[orders["amount"] > 5], output_name="paid")
    yield dg.Output(customers.head(1), output_name="unpaid")


@dg.asset
def customers() -> pd.DataFrame:
    return pd.DataFrame({"name": ["ana", "bo"]})


def test_a_multi_asset_leaves_one_record_per_asset_with_its_own_inputs(tmp_path):
    result = run([orders, customers, split_orders], tmp_path)

    paid = record_of(tmp_path, "dagster/billing/paid", result.run_id)
    unpaid = record_of(tmp_path, "dagster/billing/unpaid", result.run_id)
    assert [step.name for step in paid.inputs] == ["orders"]
    assert [step.name for step in unpaid.inputs] == ["customers"]
    assert paid.outputs[0].row_count == 2
    assert unpaid.outputs[0].row_count == 1
    assert (tmp_path / "data" / "paid.parquet").is_file()


@dg.asset
def report(orders: pd.DataFrame, customers: pd.DataFrame, order_totals: pd.DataFrame):
    return orders.merge(order_totals, on="customer", suffixes=("", "_total")).head(len(customers))


def test_every_input_of_a_step_is_recorded(tmp_path):
    result = run([orders, customers, order_totals, report], tmp_path)

    record = record_of(tmp_path, "dagster/default/report", result.run_id)
    assert sorted(step.name for step in record.inputs) == ["customers", "order_totals", "orders"]
    assert all(step.data_hash is not None for step in record.inputs)
    reads = [t["input"] for t in record.timings if t["step"].startswith("Reader:")]
    assert sorted(reads) == ["customers", "order_totals", "orders"]


class DictIOManager(dg.ConfigurableIOManager):
    """Keeps outputs in memory: an IO manager that is not Ubunye's."""

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        STASH[context.asset_key] = obj

    def load_input(self, context: dg.InputContext):
        return STASH[context.asset_key]


STASH: dict = {}


@dg.asset(io_manager_key="memory")
def lookup() -> pd.DataFrame:
    return pd.DataFrame({"customer": ["ana"], "tier": ["gold"]})


@dg.asset
def enriched(orders: pd.DataFrame, lookup: pd.DataFrame) -> pd.DataFrame:
    return orders.merge(lookup, on="customer", how="left")


def test_an_input_loaded_by_another_io_manager_is_recorded_without_hash_and_says_why(tmp_path):
    result = run([orders, lookup, enriched], tmp_path, resources={"memory": DictIOManager()})

    record = record_of(tmp_path, "dagster/default/enriched", result.run_id)
    other = record.step("lookup", "input")
    assert other.data_hash is None and other.row_count is None
    assert "'memory'" in other.hash_error and "not an UbunyeIOManager" in other.hash_error
    assert record.step("orders", "input").data_hash is not None
    inputs = metadata_of(result, "enriched")["ubunye/inputs"]
    assert inputs["lookup"] == {
        "asset_key": "lookup",
        "data_hash": None,
        "row_count": None,
        "hash_error": other.hash_error,
    }


def test_with_hash_inputs_off_inputs_are_recorded_without_hash_or_row_count(tmp_path):
    manager = io_manager(tmp_path, hash_inputs=False)
    result = dg.materialize([orders, order_totals], resources={"io_manager": manager})

    record = record_of(tmp_path, "dagster/sales/order_totals", result.run_id)
    [read] = record.inputs
    assert (read.data_hash, read.row_count, read.hash_error) == (None, None, None)
    assert "hash_inputs" in read.source_note
    assert record.outputs[0].data_hash is not None


def test_run_tags_are_recorded_with_secret_looking_values_masked(tmp_path):
    tags = {"team": "sales", "db_password": "hunter2", "source": "postgres://u:pw1@db/x"}
    result = run([orders], tmp_path, tags=tags)

    recorded = record_of(tmp_path, "dagster/sales/orders", result.run_id).variables["tags"]
    assert recorded["team"] == "sales"
    assert recorded["db_password"] == "***"
    assert recorded["source"] == "postgres://u:***@db/x"
    assert "hunter2" not in json.dumps(recorded) and "pw1" not in json.dumps(recorded)


@dg.asset(group_name="sales", config_schema={"factor": float})
def scaled_orders(context) -> pd.DataFrame:
    return ORDERS.assign(amount=ORDERS["amount"] * context.op_execution_context.op_config["factor"])


def test_config_hash_is_the_hash_of_the_assets_run_config(tmp_path):
    run_config = {"ops": {"scaled_orders": {"config": {"factor": 2.0}}}}
    result = run([scaled_orders], tmp_path, run_config=run_config)

    record = record_of(tmp_path, "dagster/sales/scaled_orders", result.run_id)
    assert record.config_hash == config_hash_of({"factor": 2.0})


def test_an_output_that_is_not_a_frame_fails_with_a_clear_error_and_an_error_record(tmp_path):
    @dg.asset
    def not_a_frame() -> list:
        return [1, 2, 3]

    result = run([not_a_frame], tmp_path, raise_on_error=False)

    [failure] = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert "cannot store a builtins.list" in error.to_string()
    record = record_of(tmp_path, "dagster/default/not_a_frame", result.run_id)
    assert record.status == "error" and "cannot store a builtins.list" in record.error
    assert record.outputs == []


def test_asset_identity_maps_to_a_record_and_back():
    identity = identity_for_asset(
        usecase="dagster",
        asset_key=["raw", "orders.v2"],
        group_name="sales",
        dagster_run_id="8c1d2e3f-0000-4000-8000-000000000000",
        partition_key="2024-01-31|north",
    )
    assert identity.task_path == "dagster/sales/raw.orders%2Ev2"
    assert identity.run_id == "8c1d2e3f-0000-4000-8000-000000000000.2024-01-31%7Cnorth"
    back = asset_for_record(identity.package, identity.task, identity.run_id)
    assert back.asset_key == ("raw", "orders.v2")
    assert back.group_name == "sales"
    assert back.dagster_run_id == "8c1d2e3f-0000-4000-8000-000000000000"
    assert back.partition_key == "2024-01-31|north"


def test_an_asset_without_a_group_is_filed_under_the_default_package():
    identity = identity_for_asset(
        usecase="dagster", asset_key=["x"], group_name=None, dagster_run_id="r1"
    )
    assert identity.task_path == "dagster/default/x"


def test_an_unsafe_usecase_is_refused_when_the_resource_is_built():
    with pytest.raises(ValueError, match="usecase must be"):
        UbunyeResource(usecase="../elsewhere")


@pytest.mark.parametrize("value", ["warning", "strict", ""])
def test_a_verify_reads_value_that_is_not_a_choice_is_refused_naming_the_choices(value):
    with pytest.raises(ValueError, match=r"(?s)verify_reads.*'fail', 'warn', 'off' or 'rows'"):
        UbunyeResource(verify_reads=value)


@dg.op
def make_numbers() -> pd.DataFrame:
    return pd.DataFrame({"n": [1, 2, 3]})


@dg.op
def add_one(numbers: pd.DataFrame) -> pd.DataFrame:
    return numbers + 1


@dg.graph
def numbers_graph():
    add_one(make_numbers())


@dg.asset(code_version="7")
def versioned() -> pd.DataFrame:
    return ORDERS.copy()


def test_the_assets_code_version_is_the_records_version(tmp_path):
    result = run([versioned, orders], tmp_path)

    record = record_of(tmp_path, "dagster/default/versioned", result.run_id)
    assert (record.model, record.version) == ("asset", "7")
    unversioned = record_of(tmp_path, "dagster/sales/orders", result.run_id)
    assert (unversioned.model, unversioned.version) == ("asset", "")


def test_op_outputs_are_stored_by_run_and_step_and_recorded_under_the_job(tmp_path):
    job = numbers_graph.to_job(
        name="numbers_job", resource_defs={"io_manager": io_manager(tmp_path)}
    )
    result = job.execute_in_process()

    assert (tmp_path / "data" / result.run_id / "add_one" / "result.parquet").is_file()
    record = record_of(tmp_path, "dagster/numbers_job/add_one.result", result.run_id)
    assert record.status == "success"
    assert record.model == "op"
    [read] = record.inputs
    assert (read.name, read.row_count) == ("numbers", 3)
    written = record_of(tmp_path, "dagster/numbers_job/make_numbers.result", result.run_id)
    assert read.data_hash == written.outputs[0].data_hash


def test_code_hash_covers_the_folder_named_in_asset_metadata_or_resource_config(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "transform.py").write_text("def f():\n    return 1\n")

    @dg.asset(metadata={"ubunye/code_folder": str(code)})
    def pinned() -> pd.DataFrame:
        return FRAME_SMALL

    @dg.asset
    def configured() -> pd.DataFrame:
        return FRAME_SMALL

    manager = io_manager(tmp_path, code_folder=str(code / "transform.py"))
    result = dg.materialize([pinned, configured], resources={"io_manager": manager})

    expected = code_hash(code)
    assert expected is not None
    assert record_of(tmp_path, "dagster/default/pinned", result.run_id).code_hash == expected
    assert record_of(tmp_path, "dagster/default/configured", result.run_id).code_hash == expected


FRAME_SMALL = pd.DataFrame({"x": [1]})


def test_a_relative_base_path_is_taken_from_the_working_directory_of_each_write(
    tmp_path, monkeypatch
):
    storage = UbunyeIOManager(base_path="data").storage()
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        assert storage.base().path == str(tmp_path / folder / "data")


def test_an_io_manager_given_no_settings_records_with_the_defaults_built_once(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    manager = UbunyeIOManager(base_path="data")
    assert manager.resource is manager.resource
    assert manager.resource.model_dump() == UbunyeResource().model_dump()
    assert manager.pipeline() is manager.pipeline()
    assert manager.pipeline().resource is manager.resource

    @dg.asset
    def defaulted() -> pd.DataFrame:
        return FRAME_SMALL

    result = dg.materialize([defaulted], resources={"io_manager": manager})
    record = record_of(tmp_path, "dagster/default/defaulted", result.run_id)
    assert record.outputs[0].data_hash == fingerprint(FRAME_SMALL).data_hash


def test_each_step_reads_the_subject_of_its_assets_record_from_dagster_once(tmp_path, monkeypatch):
    spy = mock.Mock(wraps=subjects.step_asset_subject)
    monkeypatch.setattr(subjects, "step_asset_subject", spy)

    @dg.asset
    def first() -> pd.DataFrame:
        return ORDERS

    @dg.asset
    def second(first: pd.DataFrame) -> pd.DataFrame:
        return first

    assert run([first, second], tmp_path).success
    assert run([first, second], tmp_path).success
    # Each run's step of ``second`` opens its record at the load and closes it at the write.
    read = sorted(call.args[1].to_user_string() for call in spy.call_args_list)
    assert read == ["first", "first", "second", "second"]
