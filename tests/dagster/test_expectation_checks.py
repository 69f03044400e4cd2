"""Expectations are Dagster asset checks: declared from the assets, one per rule, evaluated in the
materialising run, with failed/total counts; a broken ``fail`` rule is a failed blocking check.

Every test runs on a real (temporary) Dagster instance and reads the check evaluations back from
its event log.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_dagster import UbunyeIOManager, UbunyeResource, build_expectation_checks
from ubunye_dagster.checks.expectation_checks import expectation_check_specs
from ubunye_dagster.checks.expectations import ExpectationError

#: The oldest supported Dagster runs this whole module (the smoke set, .ci/run).
pytestmark = pytest.mark.smoke

RULES = [
    {"not_null": "order_id"},
    {"unique": "customer", "severity": "warn"},
    {"between": {"column": "amount", "min": 0}, "name": "amount_not_negative"},
]
ROWS = {"amount": [10.0, 3.5, 7.25]}


@dg.asset(metadata={"ubunye/expectations": RULES})
def orders() -> pd.DataFrame:
    return pd.DataFrame(
        {"order_id": [1, 2, 3], "customer": ["ana", "ana", "bo"], "amount": ROWS["amount"]}
    )


@dg.asset
def order_total(orders: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [orders["amount"].sum()]})


@dg.asset
def unchecked() -> pd.DataFrame:
    return pd.DataFrame({"x": [1]})


@pytest.fixture
def instance(tmp_path):
    (tmp_path / "dagster_home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster_home")) as instance:
        yield instance


def materialise(root: Path, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    assets = [orders, order_total, unchecked]
    manager = UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )
    return dg.materialize(
        [*assets, *build_expectation_checks(assets)],
        resources={"io_manager": manager},
        instance=instance,
        raise_on_error=False,
    )


def evaluations(instance: dg.DagsterInstance, run_id: str) -> dict[str, dg.AssetCheckEvaluation]:
    """The check evaluations of one run, read back from the instance's event log, by check name."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ).records
    found = {}
    for record in records:
        evaluation = record.event_log_entry.dagster_event.asset_check_evaluation_data
        found[evaluation.check_name] = evaluation
    return found


def test_every_rule_is_one_check_named_by_the_rule():
    specs = {spec.name: spec for spec in expectation_check_specs([orders, unchecked])}

    assert set(specs) == {"order_id_not_null", "customer_unique", "amount_not_negative"}
    assert all(spec.asset_key == orders.key for spec in specs.values())
    assert specs["order_id_not_null"].blocking and specs["amount_not_negative"].blocking
    assert not specs["customer_unique"].blocking


def test_the_checks_are_evaluated_in_the_materialising_run_with_their_counts(tmp_path, instance):
    ROWS["amount"] = [10.0, 3.5, 7.25]
    result = materialise(tmp_path, instance)

    found = evaluations(instance, result.run_id)
    assert result.success
    assert set(found) == {"order_id_not_null", "customer_unique", "amount_not_negative"}
    assert found["order_id_not_null"].passed
    counts = {k: v.value for k, v in found["order_id_not_null"].metadata.items()}
    assert (counts["failed"], counts["total"]) == (0, 3)


def test_a_broken_warn_rule_is_a_failed_warn_check_and_the_data_is_written(tmp_path, instance):
    ROWS["amount"] = [10.0, 3.5, 7.25]
    result = materialise(tmp_path, instance)

    unique = evaluations(instance, result.run_id)["customer_unique"]
    assert not unique.passed
    assert unique.severity == dg.AssetCheckSeverity.WARN
    assert unique.metadata["failed"].value == 2 and unique.metadata["total"].value == 3
    assert result.output_for_node("order_total")["total"].tolist() == [20.75]


def test_a_broken_fail_rule_is_a_failed_blocking_check_and_downstream_does_not_run(
    tmp_path, instance
):
    ROWS["amount"] = [10.0, -3.5, 7.25]
    result = materialise(tmp_path, instance)

    check = evaluations(instance, result.run_id)["amount_not_negative"]
    assert not result.success
    assert not check.passed and check.blocking
    assert check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["failed"].value == 1 and check.metadata["total"].value == 3
    assert not (tmp_path / "data" / "orders.parquet").exists()  # the write was refused
    assert not result.asset_materializations_for_node("order_total")  # downstream did not run
    assert result.asset_materializations_for_node("unchecked")  # other assets still ran


def test_a_rule_name_dagster_cannot_take_is_an_error_naming_the_rule():
    @dg.asset(metadata={"ubunye/expectations": [{"not_null": "id", "name": "id is set"}]})
    def badly_named() -> pd.DataFrame:
        return pd.DataFrame({"id": [1]})

    with pytest.raises(ExpectationError, match=r"rule name 'id is set'.*'id_is_set'"):
        build_expectation_checks([badly_named])


def test_assets_without_rules_declare_no_checks():
    assert build_expectation_checks([unchecked, order_total]) == []


DAYS = dg.DailyPartitionsDefinition(start_date="2026-01-01", end_date="2026-01-03")


@dg.asset(partitions_def=DAYS, metadata={"ubunye/expectations": [{"row_count": {"min": 2}}]})
def daily_orders(context) -> pd.DataFrame:
    rows = 2 if context.partition_key == "2026-01-01" else 1
    return pd.DataFrame({"day": [context.partition_key] * rows})


def test_checks_judge_the_runs_partition_and_an_unpartitioned_asset_in_that_run(tmp_path, instance):
    ROWS["amount"] = [10.0, 3.5, 7.25]
    assets = [orders, daily_orders]
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    runs = {
        day: dg.materialize(
            [*assets, *build_expectation_checks(assets)],
            resources={"io_manager": manager},
            instance=instance,
            partition_key=day,
            raise_on_error=False,
        )
        for day in ("2026-01-01", "2026-01-02")
    }

    first = evaluations(instance, runs["2026-01-01"].run_id)
    second = evaluations(instance, runs["2026-01-02"].run_id)
    assert first["row_count"].passed and first["order_id_not_null"].passed
    assert not second["row_count"].passed  # one row on the second day
    assert second["order_id_not_null"].passed
    assert second["order_id_not_null"].metadata["ubunye/run_id"].value == runs["2026-01-02"].run_id
