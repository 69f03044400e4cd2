"""``on_content_change()``: an asset is requested when it is missing, when its code version
changed, or when an upstream's data version (its rows-v1 digest) changed since it was last
handled; never because an upstream was written or observed again with the same rows. Evaluated
with Dagster's own ``evaluate_automation_conditions``, tick by tick, on a source observed by its
rows, ``clean`` (the source's non-negative amounts) and ``totals`` (per region)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_dagster import UbunyeResource, with_ubunye
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.automation import on_content_change
from ubunye_dagster.automation.adopt import ASSETS_PER_SENSOR, CONTENT_SENSOR, content_sensors
from ubunye_rows import code_hash

SOURCE = dg.AssetKey(["raw", "orders"])
CLEAN = dg.AssetKey("clean")
TOTALS = dg.AssetKey("totals")
ORDERS = pd.DataFrame({"region": ["north", "south", "north"], "amount": [10, 5, 7]})


def graph(path: Path, totals_version: str | None = None) -> list[dg.AssetsDefinition]:
    @dg.asset(key=CLEAN, deps=[SOURCE])
    def clean() -> pd.DataFrame:
        orders = pd.read_parquet(path)
        return orders[orders["amount"] >= 0].reset_index(drop=True)

    @dg.asset(key=TOTALS, code_version=totals_version)
    def totals(clean: pd.DataFrame) -> pd.DataFrame:
        return clean.groupby("region", as_index=False)["amount"].sum()

    return [clean, totals]


def definitions(tmp_path: Path, totals_version: str | None = "v1") -> dg.Definitions:
    path = tmp_path / "orders.parquet"
    return with_ubunye(
        dg.Definitions(assets=[dg.AssetSpec(SOURCE), *graph(path, totals_version)]),
        observe={"raw/orders": {"path": str(path)}},
        automation=on_content_change(),
        usecase_dir=str(tmp_path),
        base_path=str(tmp_path / "data"),
    )


class Ticks:
    """Dagster's automation evaluated tick by tick over one instance, and the runs between."""

    def __init__(
        self,
        defs: dg.Definitions,
        instance: dg.DagsterInstance,
        watched: tuple[dg.AssetKey, ...] = (CLEAN, TOTALS),
    ):
        self.defs = defs
        self.instance = instance
        self.watched = watched
        self.cursor = None

    def requested(self) -> set[dg.AssetKey]:
        """The ``watched`` assets the next tick requests."""
        # A copy each time: Dagster 1.10 refuses to merge a Definitions it has resolved.
        result = dg.evaluate_automation_conditions(
            defs=dg.Definitions.merge(self.defs), instance=self.instance, cursor=self.cursor
        )
        self.cursor = result.cursor
        return {key for key in self.watched if result.get_num_requested(key)}

    def run(self, *keys: dg.AssetKey, succeeds: bool = True, partition: str | None = None) -> None:
        """Execute ``keys`` (observations or materialisations, of ``partition``) in one run,
        which ``succeeds``."""
        job = dg.define_asset_job("tick_run", selection=list(keys))
        runnable = dg.Definitions.merge(self.defs, dg.Definitions(jobs=[job]))
        job_def = runnable.resolve_job_def("tick_run")
        result = job_def.execute_in_process(
            instance=self.instance, raise_on_error=False, partition_key=partition
        )
        assert result.success is succeeds


@pytest.fixture
def ticks(tmp_path):
    ORDERS.to_parquet(tmp_path / "orders.parquet", index=False)
    with dg.instance_for_test() as instance:
        ticking = Ticks(definitions(tmp_path), instance)
        ticking.run(SOURCE)
        assert ticking.requested() == {CLEAN, TOTALS}
        ticking.run(CLEAN, TOTALS)
        assert ticking.requested() == set()
        yield ticking


def write_orders(tmp_path: Path, orders: pd.DataFrame) -> None:
    orders.to_parquet(tmp_path / "orders.parquet", index=False)


@pytest.mark.smoke
def test_missing_assets_are_requested_and_then_nothing_until_something_changes(ticks):
    assert ticks.requested() == set()


def test_a_source_rewritten_with_the_same_rows_requests_nothing(ticks, tmp_path):
    write_orders(tmp_path, ORDERS.iloc[::-1])
    ticks.run(SOURCE)

    assert ticks.requested() == set()


@pytest.mark.smoke
def test_a_source_whose_rows_changed_requests_its_children_only(ticks, tmp_path):
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
    ticks.run(SOURCE)

    assert ticks.requested() == {CLEAN}


def test_a_source_that_cannot_be_read_requests_its_children_as_its_content_is_unknown(
    ticks, tmp_path
):
    (tmp_path / "orders.parquet").unlink()
    ticks.run(SOURCE)

    assert ticks.requested() == {CLEAN}


@pytest.mark.smoke
def test_a_child_rewritten_with_the_same_rows_requests_nothing_below_it(ticks, tmp_path):
    write_orders(tmp_path, pd.concat([ORDERS, pd.DataFrame({"region": ["east"], "amount": [-1]})]))
    ticks.run(SOURCE)
    assert ticks.requested() == {CLEAN}
    ticks.run(CLEAN)  # the negative amount is filtered out: clean's rows are as they were

    assert ticks.requested() == set()


def test_a_child_whose_rows_changed_requests_the_assets_below_it(ticks, tmp_path):
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
    ticks.run(SOURCE)
    assert ticks.requested() == {CLEAN}
    ticks.run(CLEAN)

    assert ticks.requested() == {TOTALS}


def test_an_asset_run_with_its_changed_upstream_is_not_requested_again(ticks, tmp_path):
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
    ticks.run(SOURCE)
    ticks.run(CLEAN, TOTALS)  # totals already read clean's new rows in the same run

    assert ticks.requested() == set()


def test_an_upstream_that_moved_while_its_reader_ran_requests_the_reader_again(ticks, tmp_path):
    ticks.run(CLEAN)  # read the source as last observed...
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
    ticks.run(SOURCE)  # ...which moved before the daemon's next tick saw the run end

    assert ticks.requested() == {CLEAN}


def test_a_failed_run_is_not_retried_until_an_upstream_moves_again(ticks, tmp_path):
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
    ticks.run(SOURCE)
    assert ticks.requested() == {CLEAN}
    (tmp_path / "orders.parquet").unlink()
    ticks.run(CLEAN, succeeds=False)
    assert ticks.requested() == set()
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 9]))
    ticks.run(SOURCE)

    assert ticks.requested() == {CLEAN}


def test_a_requested_asset_is_not_requested_again_on_the_next_tick(ticks, tmp_path):
    write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
    ticks.run(SOURCE)
    assert ticks.requested() == {CLEAN}

    assert ticks.requested() == set()


def test_a_partitioned_asset_is_requested_when_its_upstreams_data_version_moved(tmp_path):
    days = dg.DailyPartitionsDefinition(start_date="2026-01-01")
    path = tmp_path / "orders.parquet"

    @dg.asset(key="daily_orders", deps=[SOURCE], partitions_def=days)
    def daily_orders() -> pd.DataFrame:
        return pd.read_parquet(path)

    write_orders(tmp_path, ORDERS)
    defs = with_ubunye(
        dg.Definitions(assets=[dg.AssetSpec(SOURCE), daily_orders]),
        observe={"raw/orders": {"path": str(path)}},
        automation=on_content_change(),
        usecase_dir=str(tmp_path),
        base_path=str(tmp_path / "data"),
    )
    latest = days.get_last_partition_key()
    with dg.instance_for_test() as instance:
        ticking = Ticks(defs, instance, watched=(daily_orders.key,))
        ticking.run(SOURCE)
        assert ticking.requested() == {daily_orders.key}
        ticking.run(daily_orders.key, partition=latest)
        assert ticking.requested() == set()
        write_orders(tmp_path, ORDERS.assign(amount=[10, 5, 8]))
        ticking.run(SOURCE)

        assert ticking.requested() == {daily_orders.key}


def test_an_asset_whose_code_version_changed_is_requested(ticks, tmp_path):
    ticks.defs = definitions(tmp_path, totals_version="v2")

    assert ticks.requested() == {TOTALS}


@pytest.mark.smoke
def test_an_asset_declaring_no_code_version_gets_its_code_hash_as_its_code_version(tmp_path):
    ORDERS.to_parquet(tmp_path / "orders.parquet", index=False)
    nodes = definitions(tmp_path, totals_version=None).resolve_asset_graph()

    assert nodes.get(TOTALS).code_version == code_hash(Path(__file__).parent)
    assert nodes.get(CLEAN).automation_condition.get_label() == "on_content_change"


def test_an_asset_declaring_a_code_version_and_a_condition_keeps_both(tmp_path):
    ORDERS.to_parquet(tmp_path / "orders.parquet", index=False)

    @dg.asset(code_version="v7", automation_condition=dg.AutomationCondition.eager())
    def own() -> int:
        return 1

    defs = with_ubunye(dg.Definitions(assets=[own]), automation=on_content_change())
    node = defs.resolve_asset_graph().get(dg.AssetKey("own"))

    assert (node.code_version, node.automation_condition.get_label()) == ("v7", "eager")


def test_assets_stored_without_receipts_get_no_condition(tmp_path):
    @dg.asset(io_manager_key="plain")
    def plain() -> int:
        return 1

    defs = with_ubunye(
        dg.Definitions(assets=[plain], resources={"plain": dg.FilesystemIOManager()}),
        automation=on_content_change(),
    )

    assert defs.resolve_asset_graph().get(dg.AssetKey("plain")).automation_condition is None


def test_an_asset_accounting_for_its_own_rows_counts_as_stored_with_receipts(tmp_path):
    @dg.asset(io_manager_key="plain")
    def exported(ubunye: UbunyeResource) -> None:
        return None

    defs = with_ubunye(
        dg.Definitions(assets=[exported], resources={"plain": dg.FilesystemIOManager()}),
        automation=on_content_change(),
    )
    node = defs.resolve_asset_graph().get(dg.AssetKey("exported"))

    assert node.automation_condition.get_label() == "on_content_change"


@pytest.mark.smoke
def test_the_assets_on_the_condition_get_an_automation_sensor_evaluated_with_the_definitions(
    tmp_path,
):
    write_orders(tmp_path, ORDERS)
    defs = definitions(tmp_path)
    sensor = defs.resolve_sensor_def(CONTENT_SENSOR)
    targeted = sensor.asset_selection.resolve(defs.resolve_asset_graph())

    assert internals.evaluated_in_user_code(sensor) is True
    assert targeted == {CLEAN, TOTALS}


def test_a_sensor_of_the_definitions_evaluated_with_them_keeps_the_assets(tmp_path):
    own = dg.AutomationConditionSensorDefinition(
        "own", target=dg.AssetSelection.all(), use_user_code_server=True
    )
    path = tmp_path / "orders.parquet"
    write_orders(tmp_path, ORDERS)
    defs = with_ubunye(
        dg.Definitions(assets=[dg.AssetSpec(SOURCE), *graph(path)], sensors=[own]),
        observe={"raw/orders": {"path": str(path)}},
        automation=on_content_change(),
        usecase_dir=str(tmp_path),
    )

    assert CONTENT_SENSOR not in {sensor.name for sensor in defs.sensors}


@pytest.mark.smoke
def test_a_daemon_evaluated_sensor_targeting_the_condition_is_refused_naming_it(tmp_path):
    daemon_side = dg.AutomationConditionSensorDefinition("nightly", target=[CLEAN])
    path = tmp_path / "orders.parquet"
    write_orders(tmp_path, ORDERS)

    with pytest.raises(ValueError, match=r"sensor nightly targets clean.*use_user_code_server"):
        with_ubunye(
            dg.Definitions(assets=[dg.AssetSpec(SOURCE), *graph(path)], sensors=[daemon_side]),
            observe={"raw/orders": {"path": str(path)}},
            automation=on_content_change(),
            usecase_dir=str(tmp_path),
        )


def test_more_assets_than_one_sensor_takes_are_spread_over_several(tmp_path):
    def on_the_condition(index: int) -> dg.AssetsDefinition:
        @dg.asset(name=f"asset_{index}", automation_condition=on_content_change())
        def made() -> int:
            return index

        return made

    assets = [on_the_condition(index) for index in range(ASSETS_PER_SENSOR + 1)]
    sensors = content_sensors(assets, [])
    targeted = [set(sensor.asset_selection.resolve(assets)) for sensor in sensors]

    assert [sensor.name for sensor in sensors] == [CONTENT_SENSOR, f"{CONTENT_SENSOR}_2"]
    assert [len(keys) for keys in targeted] == [ASSETS_PER_SENSOR, 1]
    assert set.union(*targeted) == {a.key for a in assets}
